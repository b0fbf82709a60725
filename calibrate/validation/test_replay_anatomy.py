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


class InHandReturns(unittest.TestCase):
    def test_in_hand_returns_split_by_whether_the_batch_overtook(self):
        # batches 0-4; next() of 2, 3 and 4 returned at once (in hand); 2 finished before 1 (overtook it), 3 and 4
        # after their predecessors (in order: a cascade behind a late batch 1, or a slow loop)
        # (batch 1 waited; its turn, 0.01 -> 0.02, is the waited turns' median: 10 ms, the bar 11 ms)
        called = {0: 0.0, 1: 0.02, 2: 0.03, 3: 0.032, 4: 0.034}
        returned = {0: 0.01, 1: 0.029, 2: 0.0301, 3: 0.0321, 4: 0.0341}
        done = {0: 0.005, 1: 0.028, 2: 0.020, 3: 0.025, 4: 0.026}
        self.assertEqual(diag.in_hand_returns(called, returned, done, 0, 4),
                         {"overtook": 1, "in_order": 2, "behind_gil": 0})
        # from batch 2 on (its own return is the window's first, left out as it has no predecessor inside): 3, 4;
        # no waited return inside, so no bar and none behind the GIL
        self.assertEqual(diag.in_hand_returns(called, returned, done, 2, 4),
                         {"overtook": 0, "in_order": 2, "behind_gil": 0})

    def test_an_in_hand_return_after_a_long_turn_waited_behind_the_gil(self):
        # waited returns 1 and 2 turn 2 ms after the return before; batch 3 in hand but called 6 ms after batch 2's
        # return (over 2 + 1 ms): behind the GIL, whatever its order; batch 4 in hand after 1 ms: in order
        called = {0: 0.0, 1: 0.012, 2: 0.024, 3: 0.036, 4: 0.0371}
        returned = {0: 0.010, 1: 0.020, 2: 0.030, 3: 0.0361, 4: 0.0372}
        done = {0: 0.001, 1: 0.002, 2: 0.003, 3: 0.004, 4: 0.005}
        self.assertEqual(diag.in_hand_returns(called, returned, done, 0, 4),
                         {"overtook": 0, "in_order": 1, "behind_gil": 1})


class LongSync(unittest.TestCase):
    def test_the_share_over_the_waited_median_plus_a_millisecond(self):
        # waited syncs 4.4, 4.5, 4.6 ms: median 4.5, bar 5.5; in hand 4.6, 5.4, 6.0, 7.1 -> 2 of 4 over
        self.assertAlmostEqual(diag.long_sync_share([0.0046, 0.0054, 0.0060, 0.0071], [0.0044, 0.0045, 0.0046]), 0.5)
        self.assertIsNone(diag.long_sync_share([], [0.0045]))

    def test_syncs_split_by_whether_next_waited(self):
        tl = {"skip": 1, "main": {"next_start": [0.0, 0.010, 0.020], "next_end": [0.005, 0.0101, 0.028],
                                  "launched": [0.006, 0.011, 0.029], "synced": [0.010, 0.017, 0.033]}}
        in_hand, waited = diag.measured_syncs(tl)
        self.assertEqual(len(in_hand), 1)
        self.assertAlmostEqual(in_hand[0], 0.006)
        self.assertEqual(len(waited), 1)
        self.assertAlmostEqual(waited[0], 0.004)


class SimulatedTrace(unittest.TestCase):
    def test_the_trace_gives_the_same_figures(self):
        # two workers, four batches, a loop that returns batch b at 30 + 20 b ms; pin cycles 20, 20, 30 ms
        meta = [{"ph": "M", "name": "thread_name", "pid": 0, "tid": t, "args": {"name": n}}
                for t, n in ((1, "main thread (training loop)"), (2, "pin_memory thread"), (3, "worker 0"),
                             (4, "worker 1"))]
        work = [(3, 0, 0, 20), (4, 1, 1, 25), (3, 2, 20, 50), (4, 3, 21.5, 45)]  # (tid, batch, start ms, end ms)
        ev = meta + [{"ph": "X", "pid": 0, "tid": t, "name": "load+collate", "ts": a * 1e3, "dur": (z - a) * 1e3,
                      "args": {"batch": b}} for t, b, a, z in work]
        # the loop's own Python of next() right after each wait; batch 3's right after batch 2's return (in hand)
        ev += [{"ph": "X", "pid": 0, "tid": 1, "name": "next(): the loader's own Python", "ts": t * 1e3,
                "dur": 100.0, "args": {"batch": b}} for b, t in enumerate((29.9, 49.9, 69.9, 70.0))]
        ev += [{"ph": "X", "pid": 0, "tid": 2, "name": "pin_memory", "ts": (z - 10) * 1e3, "dur": 10e3,
                "args": {"batch": i}} for i, z in enumerate((30, 50, 70, 100))]
        # batch 3's next() found it in hand (no wait span) 0.1 ms after batch 2's return: it finished before batch 2,
        # so it overtook
        ev += [{"ph": "X", "pid": 0, "tid": 1, "name": "wait for batch", "ts": (20 * b + 20) * 1e3, "dur": 9.9e3,
                "args": {"batch": b}} for b in range(3)]
        got = diag.simulated_anatomy(ev, 1, 4)
        self.assertEqual(got["in_hand"], {"overtook": 1, "in_order": 0, "behind_gil": 0})
        # from batch 1: pairs (1,2) started 19 ms apart, (2,3) 1.5 ms: half together; (2,3) finished out of order
        self.assertAlmostEqual(got["together"], 0.5)
        self.assertAlmostEqual(got["out_of_order"], 0.5)
        # window from batch 1's return (49.9 ms) to the last (70 ms): pin ends 50, 70 -> one cycle, no cv
        self.assertIsNone(got["pin_cycle_cv"])


class MainArguments(unittest.TestCase):
    def test_a_put_share_outside_zero_to_one_is_refused_before_anything_runs(self):
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as ctx:
            diag.main(["some/results", "--put-share", "1.5", "--pipeplan", "/nonexistent/pipeplan"])
        self.assertEqual(ctx.exception.code, 2)
        self.assertIn("--put-share 1.5: expected a share in [0, 1]", err.getvalue())


if __name__ == "__main__":
    unittest.main()
