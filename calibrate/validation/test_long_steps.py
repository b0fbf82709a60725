#!/usr/bin/env python3
"""long_steps_diagnostic.py's pure parts against hand calculations (plain Python, no pipeplan)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import long_steps_diagnostic as L  # noqa: E402


def starts(steps):
    """next() times from step lengths, the first at 0."""
    out = [0.0]
    for s in steps:
        out.append(out[-1] + s)
    return out


class LongStepsTest(unittest.TestCase):
    def test_one_slow_worker_puts_every_long_step_on_one_position_of_the_round(self):
        # 80 steps of 10 ms, each eighth (index 7, 15, ...) 30 ms: the in-order loader waiting on one worker
        steps = [0.030 if i % 8 == 7 else 0.010 for i in range(80)]
        a = L.long_step_anatomy(starts(steps), 8)
        self.assertEqual(a["steps"], 80)
        self.assertAlmostEqual(a["long_share"], 10 / 80)
        self.assertAlmostEqual(a["top_position_share"], 1.0)
        self.assertEqual(a["gaps"], [(8, 9)])   # 10 long steps, 9 gaps of 8

    def test_long_steps_spread_over_the_round_share_its_busiest_position(self):
        # 64 steps, a long one at indices 0..7 once each (a different position each time)
        steps = [0.030 if i in (0, 9, 18, 27, 36, 45, 54, 63) else 0.010 for i in range(64)]
        a = L.long_step_anatomy(starts(steps), 8)
        self.assertAlmostEqual(a["long_share"], 8 / 64)
        self.assertAlmostEqual(a["top_position_share"], 1 / 8)
        self.assertEqual(a["gaps"], [(9, 7)])

    def test_long_means_over_one_and_a_half_medians(self):
        # median 10 ms: 15 ms is not long (not over 1.5x), 15.1 ms is
        steps = [0.010] * 38 + [0.015, 0.0151]
        a = L.long_step_anatomy(starts(steps), 8)
        self.assertAlmostEqual(a["long_share"], 1 / 40)

    def test_too_short_a_window_says_nothing(self):
        self.assertIsNone(L.long_step_anatomy(starts([0.01] * (L.MIN_STEPS - 1)), 8))

    def test_case_matches_the_pipeline_asked_for(self):
        c = {"knobs": {"kind": "tensor_f32", "num_workers": 8, "step": "mm:5", "pin_memory": True}}
        self.assertTrue(L.case_matches(c, "tensor_f32", 8, "mm:5", "yes"))
        self.assertTrue(L.case_matches(c, "tensor_f32", 8, "mm:5", "any"))
        self.assertFalse(L.case_matches(c, "tensor_f32", 8, "mm:5", "no"))
        self.assertFalse(L.case_matches(c, "tensor_f32", 4, "mm:5", "yes"))
        self.assertFalse(L.case_matches(c, "image", 8, "mm:5", "yes"))

    def test_case_anatomy_leaves_the_warm_up_out(self):
        # two warm-up steps of 1 s would be long; skipped, the 40 steps after them are all 10 ms
        ns = starts([1.0, 1.0] + [0.010] * 40)
        c = {"knobs": {"num_workers": 8}, "measured": {"timeline": {"skip": 2, "main": {"next_start": ns}}}}
        a = L.case_anatomy(c)
        self.assertEqual(a["steps"], 40)
        self.assertEqual(a["long_share"], 0.0)
        self.assertIsNone(a["top_position_share"])


if __name__ == "__main__":
    unittest.main()
