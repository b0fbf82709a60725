"""replay_anatomy_diagnostic: its figures read from hand-built timelines and traces."""
import unittest

import replay_anatomy_diagnostic as diag


class PinCycles(unittest.TestCase):
    def test_cycles_run_end_to_end_inside_the_window(self):
        # pin_memory() calls ending at 10, 28, 46, 70 ms; the window 20-80 ms keeps the last three: cycles 18, 24 ms
        spans = [[0.000, 0.010], [0.018, 0.028], [0.036, 0.046], [0.060, 0.070]]
        got = diag.pin_cycles(spans, 0.020, 0.080)
        self.assertEqual(len(got), 2)
        self.assertAlmostEqual(got[0], 0.018)
        self.assertAlmostEqual(got[1], 0.024)
        # cv of 18 and 24: sd 3 over mean 21
        self.assertAlmostEqual(diag.cv(got), 3 / 21)

    def test_cv_needs_two_values(self):
        self.assertIsNone(diag.cv([0.02]))


class HandOuts(unittest.TestCase):
    def test_worker_intervals_become_batches_round_robin(self):
        # 2 workers: worker 0 gets batches 0, 2; worker 1 gets 1, 3
        start, done = diag.starts_by_batch({"0": [[0.0, 0.05], [0.10, 0.16]], "1": [[0.001, 0.07], [0.12, 0.15]]}, 2)
        self.assertEqual(start, {0: 0.0, 1: 0.001, 2: 0.10, 3: 0.12})
        self.assertEqual(done, {0: 0.05, 1: 0.07, 2: 0.16, 3: 0.15})
        # pairs (0,1): 1 ms apart, together; (1,2): 99 ms; (2,3): 20 ms -> 1 of 3
        self.assertAlmostEqual(diag.together_share(start, 0, 3), 1 / 3)
        # finished out of order: batch 3 before batch 2 -> 1 of 3 pairs
        self.assertAlmostEqual(diag.ooo_share(done, 0, 3), 1 / 3)
        # from batch 1 on: pairs (1,2), (2,3): none together, one out of order
        self.assertEqual(diag.together_share(start, 1, 3), 0.0)
        self.assertAlmostEqual(diag.ooo_share(done, 1, 3), 1 / 2)

    def test_no_pair_is_none(self):
        self.assertIsNone(diag.together_share({0: 0.0}, 0, 1))


class SimulatedTrace(unittest.TestCase):
    def test_the_trace_gives_the_same_figures(self):
        # two workers, four batches, a loop that returns batch b at 30 + 20 b ms; pin cycles 20, 20, 30 ms
        meta = [{"ph": "M", "name": "thread_name", "pid": 0, "tid": t, "args": {"name": n}}
                for t, n in ((1, "main thread (training loop)"), (2, "pin_memory thread"), (3, "worker 0"),
                             (4, "worker 1"))]
        work = [(3, 0, 0, 20), (4, 1, 1, 25), (3, 2, 20, 50), (4, 3, 21.5, 45)]  # (tid, batch, start ms, end ms)
        ev = meta + [{"ph": "X", "pid": 0, "tid": t, "name": "load+collate", "ts": a * 1e3, "dur": (z - a) * 1e3,
                      "args": {"batch": b}} for t, b, a, z in work]
        ev += [{"ph": "X", "pid": 0, "tid": 1, "name": "next(): the loader's own Python", "ts": (29.9 + 20 * b) * 1e3,
                "dur": 100.0, "args": {"batch": b}} for b in range(4)]
        ev += [{"ph": "X", "pid": 0, "tid": 2, "name": "pin_memory", "ts": (z - 10) * 1e3, "dur": 10e3,
                "args": {"batch": i}} for i, z in enumerate((30, 50, 70, 100))]
        got = diag.simulated_anatomy(ev, 1, 4)
        # from batch 1: pairs (1,2) started 19 ms apart, (2,3) 1.5 ms: half together; (2,3) finished out of order
        self.assertAlmostEqual(got["together"], 0.5)
        self.assertAlmostEqual(got["out_of_order"], 0.5)
        # window from batch 1's return (50 ms) to the last (90 ms): pin ends 50, 70 -> one cycle, no cv
        self.assertIsNone(got["pin_cycle_cv"])


if __name__ == "__main__":
    unittest.main()
