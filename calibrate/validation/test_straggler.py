#!/usr/bin/env python3
"""straggler_diagnostic.py's pure parts against hand calculations (plain Python, no pipeplan)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import straggler_diagnostic as S  # noqa: E402


class StragglerTest(unittest.TestCase):
    def test_worker_rhythm_by_hand(self):
        # batches of 2 s starting at 0, 3 and 7: idle 1 then 2 s (mean 1.5), period (7 - 0) / 2 = 3.5 s
        r = S.worker_rhythm([(0.0, 2.0), (3.0, 5.0), (7.0, 9.0)])
        self.assertAlmostEqual(r["batch_s"], 2.0)
        self.assertAlmostEqual(r["idle_s"], 1.5)
        self.assertAlmostEqual(r["period_s"], 3.5)
        self.assertIsNone(S.worker_rhythm([(0.0, 1.0)]))

    def test_round_limited_throughput(self):
        # run 54's factor-2 straggler: one 64-sample batch of its in every round of 8, every 175.1 ms: 2,924 samples/s
        self.assertAlmostEqual(S.round_limited_samples_per_s(0.1751, 8, 64), 8 * 64 / 0.1751)
        self.assertAlmostEqual(S.round_limited_samples_per_s(0.1751, 8, 64), 2924.0, delta=1.0)

    def test_handover_follows_the_round_robin(self):
        # 2 workers: worker 0's batches are steps 0, 2, 4; they end at 1, 3, 5 s and the loop has them at 1.5, 4, 7 s
        returns = [1.5, 2.0, 4.0, 4.5, 7.0, 7.5]
        self.assertAlmostEqual(S.handover_s([1.0, 3.0, 5.0], returns, 0, 2, 0), (0.5 + 1.0 + 2.0) / 3)
        self.assertAlmostEqual(S.handover_s([1.0, 3.0, 5.0], returns, 0, 2, 1), 1.5)     # step 0 left out
        self.assertIsNone(S.handover_s([1.0], returns, 0, 2, 1))

    def test_starved_period_by_hand(self):
        # run 54's factor-2 straggler: batch 143.7 ms, hand-over 206.0 ms, prefetch 2: (143.7 + 206.0) / 2 = 174.9 ms,
        # against its measured period of 175.1 ms
        self.assertAlmostEqual(S.starved_period_s(0.1437, 0.2060, 2), 0.17485)
        # a hand-over shorter than the batch leaves the batch as the period: it never waits for an index
        self.assertAlmostEqual(S.starved_period_s(0.1437, 0.1000, 2), 0.1437)
        # four index slots share a hand-over four times as long
        self.assertAlmostEqual(S.starved_period_s(0.1485, 0.5420, 4), (0.1485 + 0.5420) / 4)

    def test_receives_matched_first_in_first_out_and_split_by_the_spin(self):
        # factor 2: worker 0's batch (2.5, 4.5) spins from 3.5 on. Worker 1's batch ended at 1.9, before worker 0's
        # first (2.0), so the pin thread's first call (1.9-3.7) is worker 1's and worker 0's first receive runs from
        # 3.7 (inside that spin) to its call at 4.6: 0.9 s, ending 0.1 s after the spin. Worker 0's second batch
        # (end 4.5) is received from the previous call's end 4.8 to 5.0, outside the next batch's spin (6-7).
        workers = {"0": [(0.0, 2.0), (2.5, 4.5), (5.0, 7.0)], "1": [(0.0, 1.9)]}
        pins = [(1.9, 3.7), (4.6, 4.8), (5.0, 5.1)]
        r = S.receives_in_spin(workers, pins, 2.0, skip_batches=0)
        self.assertEqual(len(r["in_spin_s"]), 1)
        self.assertAlmostEqual(r["in_spin_s"][0], 0.9)
        self.assertAlmostEqual(r["after_spin_s"][0], 0.1)
        self.assertEqual(len(r["other_s"]), 1)
        self.assertAlmostEqual(r["other_s"][0], 0.2)
        self.assertIsNone(S.receives_in_spin(workers, pins, 1.0, skip_batches=0))   # no straggler, no spin

    def test_receives_split_by_the_worker_loading_its_next_batch(self):
        # the same timeline as above: worker 0's first receive (3.7-4.6) begins inside its next batch (2.5-4.5), its
        # second (4.8-5.0) before its third batch (5.0-7.0) starts; worker 1 has no next batch
        workers = {"0": [(0.0, 2.0), (2.5, 4.5), (5.0, 7.0)], "1": [(0.0, 1.9)]}
        pins = [(1.9, 3.7), (4.6, 4.8), (5.0, 5.1)]
        r = S.receives_while_loading(workers, pins, skip_batches=0)
        self.assertEqual(len(r["loading_s"]), 1)
        self.assertAlmostEqual(r["loading_s"][0], 0.9)
        self.assertEqual(len(r["other_s"]), 1)
        self.assertAlmostEqual(r["other_s"][0], 0.2)
        # the loading receive began at 3.7 s, 1.2 s into worker 0's next batch (2.5-4.5)
        self.assertEqual(len(r["loading_offset_s"]), 1)
        self.assertAlmostEqual(r["loading_offset_s"][0], 1.2)

    def test_receives_by_offset_groups_at_5_and_30_ms(self):
        r = {"loading_s": [0.004, 0.008, 0.009, 0.010], "loading_offset_s": [0.001, 0.005, 0.029, 0.031],
             "other_s": [0.003]}
        g = S.receives_by_offset(r)
        self.assertEqual(g, {"<5 ms": [0.004], "5-30 ms": [0.008, 0.009], ">30 ms": [0.010], "not loading": [0.003]})
        # nearest rank below: p50 of [8, 9] ms is 8, p90 is 8 (index int(0.9 * 1) = 0)
        self.assertEqual(S.quantile([0.009, 0.008], 0.5), 0.008)
        self.assertIn("5-30 ms: n=2 p50 8.0 p90 8.0 ms", S.receives_line("", g))

    def test_slot_cycle_by_hand(self):
        # worker 0's batches (88 ms) start at 0, 100, 258, 358 and 516 ms: gaps 100, 158, 100, 158, swinging 58 ms.
        # Its first batch (end 88) is received from 215 to its pin call's end 250 and handed over at 254.5; batch 2
        # starts at 258, after batch 1 ended (188): it sat idle for the index, which came 3.5 ms before it started.
        # Its second (end 188) is received 344-356 and handed over at 356.5; batch 3 starts at 358, after batch 2
        # ended (346): idle again, the index 1.5 ms before the start.
        w0 = [(0.000, 0.088), (0.100, 0.188), (0.258, 0.346), (0.358, 0.446), (0.516, 0.604)]
        received = [(0.215, 0.250), (0.344, 0.356), None, None, None]
        handed = [0.2545, 0.3565, None, None, None]
        c = S.slot_cycle(w0, received, handed, skip_batches=0)
        self.assertEqual([round(1e3 * x, 3) for x in c["gap_s"]], [100.0, 158.0, 100.0])
        self.assertEqual([round(1e3 * x, 3) for x in c["swing_s"]], [58.0, 58.0])
        # the line reads the swing over the window's halves: one swing each here, both 58 ms
        line = S.slot_cycle_line("measured", c)
        self.assertIn("swing between consecutive gaps 58.0 ms (window's halves 58.0 / 58.0", line)
        self.assertEqual(S.first_half([1, 2, 3]), [1])
        self.assertEqual(S.second_half([1, 2, 3]), [2, 3])
        self.assertEqual([round(1e3 * x, 3) for x in c["queue_s"]], [127.0, 156.0])
        self.assertEqual([round(1e3 * x, 3) for x in c["receive_pin_s"]], [35.0, 12.0])
        self.assertEqual([round(1e3 * x, 3) for x in c["handover_s"]], [4.5, 0.5])
        self.assertEqual([round(1e3 * x, 3) for x in c["index_s"]], [3.5, 1.5])
        self.assertEqual(c["busy"], [])
        # a next-but-one batch that starts right at its predecessor's end found its index waiting: counted busy
        w0_busy = [(0.0, 0.088), (0.088, 0.176), (0.176, 0.264)]
        c = S.slot_cycle(w0_busy, [(0.1, 0.12)] * 3, [0.125] * 3, skip_batches=0)
        self.assertEqual(c["busy"], [1.0])
        self.assertEqual(c["index_s"], [])

    def test_trace_slot_inputs_match_batches_to_their_steps(self):
        # out of order, batch 8 is pinned first and batch 0 second, so steps 0 and 1 return them; in order step j
        # returns batch j whatever the pin order
        meta = [{"ph": "M", "name": "thread_name", "tid": 3, "args": {"name": "pin_memory thread"}}]
        ev = meta + [
            {"ph": "X", "tid": 3, "name": "receive: the straggler's GIL (its fd sharer)", "ts": 1000, "dur": 500,
             "args": {"batch": 0}},
            {"ph": "X", "tid": 3, "name": "pin_memory", "ts": 1500, "dur": 1000, "args": {"batch": 0}},
            {"ph": "X", "tid": 3, "name": "pin_memory", "ts": 200, "dur": 700, "args": {"batch": 8}}]
        received, handed = S.trace_slot_inputs(ev, [0, 8], [0.001, 0.003, 0.009], in_order=False)
        self.assertEqual(received, [(0.001, 0.0025), (0.0002, 0.0009)])
        self.assertEqual(handed, [0.003, 0.001])
        _, handed = S.trace_slot_inputs(ev, [0, 8], [0.001, 0.003, 0.009], in_order=True)
        self.assertEqual(handed, [0.001, None])       # step 8 was never returned

    def test_waits_by_position_in_the_round(self):
        # 2 workers, skip 1: steps 1..4 wait 1, 4, 1, 4 s: position 1 (odd batches) 1 s, position 0 4 s
        start = [0.0, 10.0, 20.0, 30.0, 40.0]
        hand = [0.5, 11.0, 24.0, 31.0, 44.0]
        self.assertEqual(S.waits_by_position(start, hand, 2, 1), [4.0, 1.0])


if __name__ == "__main__":
    unittest.main()
