#!/usr/bin/env python3
"""recommend_check.py's pure parts against hand calculations (plain Python, no torch, no pipeplan)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recommend_check as R  # noqa: E402


class RecommendCheckTest(unittest.TestCase):
    def setUp(self):
        # run 11's A sweep, rounded: w8 measured twice (1,500 and 1,540)
        rows = [(0, 250), (2, 500), (4, 870), (8, 1500), (8, 1540), (12, 2060), (16, 2080), (24, 2080)]
        self.curve = R.measured_by_workers([{"knobs": {"num_workers": w}, "measured": {"samples_per_s": v}}
                                            for w, v in rows])

    def test_repeats_are_averaged(self):
        self.assertEqual(self.curve[8], 1520)
        self.assertEqual(sorted(self.curve), [0, 2, 4, 8, 12, 16, 24])

    def test_rate_between_and_beyond_the_measured_counts(self):
        self.assertEqual(R.rate_at(self.curve, 12), (2060, False))
        # 11 workers: three quarters of the way from 1,520 (w8) to 2,060 (w12): 1,925
        rate, extrapolated = R.rate_at(self.curve, 11)
        self.assertAlmostEqual(rate, 1520 + 0.75 * 540)
        self.assertFalse(extrapolated)
        # beyond the sweep: the largest count's rate, flagged
        self.assertEqual(R.rate_at(self.curve, 32), (2080, True))

    def test_knee_is_the_fewest_within_three_percent_of_the_best(self):
        # best 2,080; 3% below is 2,017.6: w12 (2,060) is the fewest above it, w8 (1,520) is not
        self.assertEqual(R.knee(self.curve), 12)
        self.assertEqual(R.knee(self.curve, within=0.30), 8)   # 1,456 and up



class PinVerdictTest(unittest.TestCase):
    def test_verdicts(self):
        self.assertEqual(R.pin_verdict(0.30, True), "right")      # pinning measured 30% faster, recommended
        self.assertEqual(R.pin_verdict(0.30, False), "wrong")
        self.assertEqual(R.pin_verdict(-0.12, False), "right")    # pinning measured slower, not recommended
        self.assertEqual(R.pin_verdict(-0.12, True), "wrong")
        self.assertEqual(R.pin_verdict(0.02, False), "tie")       # within 5%: either answer
        self.assertEqual(R.pin_verdict(-0.049, True), "tie")


if __name__ == "__main__":
    unittest.main()
