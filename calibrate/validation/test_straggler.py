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

    def test_waits_by_position_in_the_round(self):
        # 2 workers, skip 1: steps 1..4 wait 1, 4, 1, 4 s: position 1 (odd batches) 1 s, position 0 4 s
        start = [0.0, 10.0, 20.0, 30.0, 40.0]
        hand = [0.5, 11.0, 24.0, 31.0, 44.0]
        self.assertEqual(S.waits_by_position(start, hand, 2, 1), [4.0, 1.0])


if __name__ == "__main__":
    unittest.main()
