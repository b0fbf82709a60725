#!/usr/bin/env python3
"""step_regime_diagnostic.py's pure parts against hand calculations (plain Python, no pipeplan)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import step_regime_diagnostic as S  # noqa: E402


class StepRegimeTest(unittest.TestCase):
    def test_histogram_bins_are_half_open_with_an_open_last_bin(self):
        # 1.0 and 1.19 in [1,1.2); 1.2 in [1.2,1.4); 2.5 and 9 in the last; 0.9 (below the first edge) in the first
        self.assertEqual(S.histogram([1.0, 1.19, 1.2, 2.5, 9.0, 0.9]), [3, 1, 0, 0, 0, 0, 2])

    def test_pearson_by_hand(self):
        self.assertAlmostEqual(S.pearson([1, 2, 3], [2, 4, 6]), 1.0)
        self.assertAlmostEqual(S.pearson([1, 2, 3], [3, 2, 1]), -1.0)
        # a = 1,2,3,4; b = 1,3,2,4: cov 4.0, sa = sb = sqrt(5): r = 0.8
        self.assertAlmostEqual(S.pearson([1, 2, 3, 4], [1, 3, 2, 4]), 0.8)
        self.assertIsNone(S.pearson([1, 1], [1, 2]))
        self.assertIsNone(S.pearson([1], [1]))

    def test_same_regime_fraction(self):
        pairs = [(1.1, 1.2), (1.9, 1.7), (1.1, 1.8), (2.0, 1.3)]
        self.assertAlmostEqual(S.same_regime_fraction(pairs, 1.5), 0.5)
        self.assertIsNone(S.same_regime_fraction([], 1.5))

    def test_ratio_pairs_match_every_knob_and_skip_incomplete_rows(self):
        rows = [
            {"knobs": {"kind": "tensor_f32", "num_workers": 8}, "measured": {"step_p90_s": 0.02, "step_mean_s": 0.01},
             "pipeplan": {"step_p90_s": 0.03, "step_mean_s": 0.02}},
            {"knobs": {"kind": "image", "num_workers": 8}, "measured": {"step_p90_s": 1, "step_mean_s": 1},
             "pipeplan": {"step_p90_s": 1, "step_mean_s": 1}},
            {"knobs": {"kind": "tensor_f32", "num_workers": 8}, "measured": {"step_p90_s": None, "step_mean_s": 1},
             "pipeplan": {}},
        ]
        self.assertEqual(S.ratio_pairs(rows, {"kind": "tensor_f32", "num_workers": 8}), [(2.0, 1.5)])


if __name__ == "__main__":
    unittest.main()
