"""handoff_diagnostic: the loop's hand-off delay read from a hand-built timeline."""
import unittest

import handoff_diagnostic as diag


class HandoffDelays(unittest.TestCase):
    def test_a_waited_return_is_timed_from_the_last_pin_memory_end(self):
        # pin_memory() calls of 10 ms every 18 ms; the loop's next() calls, step 0 left out by skip:
        tl = {"skip": 1,
              "pin": [[0.000, 0.010], [0.018, 0.028], [0.036, 0.046], [0.054, 0.064]],
              "main": {"next_start": [0.000, 0.020, 0.036, 0.047],
                       "next_end": [0.011, 0.0354, 0.0362, 0.0712]}}
        got = diag.handoff_delays(tl)
        # step 1: blocked 20 -> 35.4 ms; pin_memory() ended at 28 ms inside it: delay 7.4 ms, next pin at 36: lead 0.6
        # step 2: called at 36 ms, the last pin end before its return (28 ms) came before it: in hand, left out
        # step 3: blocked 47 -> 71.2; the last pin end is 64 ms: delay 7.2 ms; no pin_memory() after it: no lead
        self.assertEqual(len(got["delay"]), 2)
        self.assertAlmostEqual(got["delay"][0], 0.0074)
        self.assertAlmostEqual(got["delay"][1], 0.0072)
        self.assertEqual(len(got["lead"]), 1)
        self.assertAlmostEqual(got["lead"][0], 0.0006)
        # gaps from the steady window's first return (35.4 ms) on: 46 -> 54 only
        self.assertEqual(len(got["gap"]), 1)
        self.assertAlmostEqual(got["gap"][0], 0.008)

    def test_the_loops_excess_is_waited_less_in_hand(self):
        # 3 waited steps (next() 5 ms) whose ops took 1.4 ms, 3 in hand (next() 0.1 ms) whose ops took 0.8 ms;
        # the first step is left out by skip (its ops 9 ms)
        ns, ne, la = [], [], []
        t = 0.0
        for i, (wait, ops) in enumerate([(0.005, 0.009)] + [(0.005, 0.0014), (0.0001, 0.0008)] * 3):
            ns.append(t); ne.append(t + wait); la.append(t + wait + ops)
            t += wait + ops + 0.001
        got = diag.loop_excess({"skip": 1, "main": {"next_start": ns, "next_end": ne, "launched": la}}, least=3)
        self.assertAlmostEqual(got["waited_s"], 0.0014)
        self.assertAlmostEqual(got["in_hand_s"], 0.0008)
        self.assertAlmostEqual(got["excess_s"], 0.0006)
        self.assertEqual((got["n_waited"], got["n_in_hand"]), (3, 3))
        self.assertIsNone(diag.loop_excess({"skip": 1, "main": {"next_start": ns, "next_end": ne, "launched": la}},
                                           least=4))

    def test_the_simulated_excess_reads_the_main_threads_spans(self):
        meta = [{"ph": "M", "name": "thread_name", "tid": 1, "args": {"name": "main thread (training loop)"}},
                {"ph": "M", "name": "thread_name", "tid": 2, "args": {"name": "pin_memory thread"}}]
        ev = list(meta)
        t = 0.0
        for step in range(10):   # even steps wait 5 ms then take 2 ms to the last launch; odd ones 1 ms, no wait
            wait = 5000.0 if step % 2 == 0 else 0.0
            ops = 2000.0 if step % 2 == 0 else 1000.0
            if wait:
                ev.append({"ph": "X", "tid": 1, "name": "wait for batch", "ts": t, "dur": wait, "args": {"batch": step}})
            ev.append({"ph": "X", "tid": 1, "name": "next(): the loader's own Python", "ts": t + wait, "dur": 200.0,
                       "args": {"batch": step}})
            ev.append({"ph": "X", "tid": 1, "name": "training step (python)", "ts": t + wait + 200.0,
                       "dur": ops, "args": {"batch": step}})
            ev.append({"ph": "X", "tid": 2, "name": "pin_memory", "ts": t, "dur": 100.0, "args": {"batch": step}})
            t += wait + 200.0 + ops
        got = diag.simulated_loop_excess(ev, skip_share=0.2, least=3)   # steps 2..9: 4 waited, 4 in hand
        self.assertAlmostEqual(got["waited_s"], 0.002)
        self.assertAlmostEqual(got["in_hand_s"], 0.001)
        self.assertAlmostEqual(got["excess_s"], 0.001)
        self.assertEqual((got["n_waited"], got["n_in_hand"]), (4, 4))
        self.assertIsNone(diag.simulated_loop_excess(meta))

    def test_the_turnaround_of_a_waited_return_then_one_in_hand(self):
        # returns: waited at 10 ms, in hand at 11.8 ms (gap 1.8), waited at 30, in hand at 31.6 (1.6), waited at 50,
        # waited at 70 (a gap of two waited returns does not count)
        ns = [0.005, 0.0117, 0.02, 0.0315, 0.04, 0.06]
        ne = [0.010, 0.0118, 0.03, 0.0316, 0.05, 0.07]
        got = diag.pair_turnaround({"skip": 0, "main": {"next_start": ns, "next_end": ne}}, least=2)
        self.assertAlmostEqual(got, (0.0018 + 0.0016) / 2)
        self.assertIsNone(diag.pair_turnaround({"skip": 0, "main": {"next_start": ns, "next_end": ne}}, least=3))
        meta = [{"ph": "M", "name": "thread_name", "tid": 1, "args": {"name": "main thread (training loop)"}}]
        ev = list(meta)
        for step, (t, wait) in enumerate([(0.0, 5000.0), (8000.0, 0.0), (20000.0, 5000.0), (27500.0, 0.0)]):
            if wait:
                ev.append({"ph": "X", "tid": 1, "name": "wait for batch", "ts": t, "dur": wait, "args": {"batch": step}})
            ev.append({"ph": "X", "tid": 1, "name": "next(): the loader's own Python", "ts": t + wait, "dur": 200.0,
                       "args": {"batch": step}})
        # returns at 5.2, 8.2, 25.2, 27.7 ms: pairs (0, 1) 3.0 ms and (2, 3) 2.5 ms
        self.assertAlmostEqual(diag.simulated_pair_turnaround(ev, skip_share=0.0, least=2), 0.00275)

    def test_the_paired_summary_takes_medians_of_the_cases(self):
        m = [{"waited_s": 0.0014, "in_hand_s": 0.0008}, {"waited_s": 0.0016, "in_hand_s": 0.0009},
             {"waited_s": 0.0015, "in_hand_s": 0.0010}]
        s = [{"waited_s": 0.0020, "in_hand_s": 0.0010}, {"waited_s": 0.0017, "in_hand_s": 0.0011},
             {"waited_s": 0.0030, "in_hand_s": 0.0012}]
        got = diag.paired_summary(list(zip(m, s)))
        # medians 1.50 / 2.00; differences 0.6, 0.1, 1.5 -> 0.60; in hand 0.90 / 1.10
        self.assertEqual(got, "3 cases: after a hand-off measured 1.50 / simulated 2.00 ms (median of the differences "
                              "0.60); in hand 0.90 / 1.10 ms")
        self.assertEqual(diag.paired_summary([]), "no case with both")

    def test_nothing_to_read(self):
        self.assertIsNone(diag.handoff_delays({}))
        self.assertIsNone(diag.handoff_delays({"pin": [[0, 1]], "main": {"next_start": [0], "next_end": [1]}}))

    def test_quantiles_nearest_rank_below(self):
        self.assertEqual(diag.quantiles([5, 1, 3, 2, 4], (0.0, 0.5, 1.0)), [1, 3, 5])
        self.assertIsNone(diag.quantiles([]))


if __name__ == "__main__":
    unittest.main()
