#!/usr/bin/env python3
"""step_regime_diagnostic.py's pure parts against hand calculations (plain Python, no pipeplan)."""
import math
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
        # a harness-made straggler or an out-of-order loader is left out
        for extra in ({"slow_worker_factor": 2.0}, {"in_order": False}):
            row = dict(rows[0], knobs=dict(rows[0]["knobs"], **extra))
            self.assertEqual(S.ratio_pairs([row], {"kind": "tensor_f32"}), [])
        self.assertTrue(S.plain_loader({"in_order": True, "slow_worker_factor": 1.0}))

    def test_overtaken_pairs_match_knobs_and_need_both_shares(self):
        rows = [
            {"knobs": {"kind": "tensor_f32"}, "measured": {"out_of_order_fraction": 0.2},
             "pipeplan": {"out_of_order_fraction": 0.1, "step_p90_s": 0.03, "step_mean_s": 0.02}},
            {"knobs": {"kind": "image"}, "measured": {"out_of_order_fraction": 0.2},
             "pipeplan": {"out_of_order_fraction": 0.1, "step_p90_s": 0.03, "step_mean_s": 0.02}},
            {"knobs": {"kind": "tensor_f32"}, "measured": {"out_of_order_fraction": None},
             "pipeplan": {"out_of_order_fraction": 0.1, "step_p90_s": 0.03, "step_mean_s": 0.02}},
        ]
        self.assertEqual(S.overtaken_pairs(rows, {"kind": "tensor_f32"}), [(0.2, 0.1, 1.5)])

    def test_batch_spans_follow_the_in_order_round_robin(self):
        workers = {"0": [[0, 1], [4, 5]], "1": [[0, 2], [4, 6], [9, 9.5]]}
        # batch 0 = worker 0's first, 1 = worker 1's first, 2 = worker 0's second ...; worker 1's third has no pair
        self.assertEqual(S.batch_spans(workers, 2), [(0, 1), (0, 2), (4, 5), (4, 6)])

    def test_overtaken_fraction_by_hand(self):
        # ends 1, 3, 2, 4: batch 1 (end 3) finished after batch 2 (end 2): one of the three pairs
        spans = [(0, 1), (0, 3), (0, 2), (0, 4)]
        self.assertAlmostEqual(S.overtaken_fraction(spans, 0, 4), 1 / 3)
        self.assertAlmostEqual(S.overtaken_fraction(spans, 2, 4), 0.0)
        self.assertIsNone(S.overtaken_fraction(spans, 3, 4))

    def test_worker_spread_splits_a_slow_worker_from_the_wander(self):
        # two workers, worker 0 always 2 s, worker 1 alternating 3 and 5 s: means 2 and 4 (sd about 3: 1);
        # about their worker's mean worker 0's four batches are off by 0, worker 1's by 1 each: sqrt(4 / 8)
        spans = [(0, 2), (0, 3), (0, 2), (0, 5), (0, 2), (0, 3), (0, 2), (0, 5)]
        between, within, mean = S.worker_spread(spans, 2, 0, 8)
        self.assertAlmostEqual(between, 1.0)
        self.assertAlmostEqual(within, math.sqrt(4 / 8))
        self.assertAlmostEqual(mean, 3.0)
        self.assertIsNone(S.worker_spread(spans, 2, 0, 3))    # worker 1 has one batch there

    def test_best_threshold_finds_the_cut(self):
        acc, cut, below = S.best_threshold([1.0, 2.0, 3.0, 4.0], [True, True, False, False])
        self.assertEqual((acc, cut, below), (1.0, 3.0, True))
        acc, cut, below = S.best_threshold([1.0, 2.0, 3.0, 4.0], [False, True, False, True])
        self.assertAlmostEqual(acc, 0.75)
        self.assertIsNone(S.best_threshold([], []))


if __name__ == "__main__":
    unittest.main()
