"""noise_diagnostic's pure parts, against hand calculations."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import noise_diagnostic as nd  # noqa: E402


class WindowThroughputs(unittest.TestCase):
    def test_even_completions(self):
        # a batch of 4 every 0.1 s over 2.05 s: 10 in each whole 1 s window, the last 0.05 s left out
        done = [0.1 * i for i in range(21)]
        self.assertEqual(nd.window_throughputs(done, 4, 1.0), [40.0, 40.0])

    def test_a_slow_second(self):
        # 10 batches in the first second, 5 in the second (every 0.2 s), then one at 2.0 closing it
        done = [0.1 * i for i in range(10)] + [1.0 + 0.2 * i for i in range(5)] + [2.0]
        thr = nd.window_throughputs(done, 2, 1.0)
        self.assertEqual(thr, [20.0, 10.0])
        # sample sd of (20, 10) is sqrt(50) = 7.071, over a mean of 15
        self.assertAlmostEqual(nd.sample_cv(thr), math.sqrt(50) / 15)

    def test_too_short(self):
        self.assertEqual(nd.window_throughputs([0.0, 0.5], 1, 1.0), [])
        self.assertIsNone(nd.sample_cv([5.0]))


class Decomposition(unittest.TestCase):
    def test_case_mean_from_windows(self):
        # 16 independent 1 s windows with cv 0.08: the 16 s mean's cv is 0.08 / 4
        self.assertAlmostEqual(nd.case_mean_cv_from_wander(0.08, 1.0, 16.0), 0.02)

    def test_between(self):
        # a 3-4-5 triangle: observed 0.05 of which the wander explains 0.03 leaves 0.04 of drift
        self.assertAlmostEqual(nd.between_case_cv(0.05, 0.03), 0.04)
        self.assertEqual(nd.between_case_cv(0.02, 0.03), 0.0)

    def test_longer_cases_keep_the_drift(self):
        # drift 0.04, wander 0.03: four times as long halves the wander's part, sqrt(0.04^2 + 0.015^2)
        self.assertAlmostEqual(nd.projected_repeat_cv(0.04, 0.03, 4.0), math.sqrt(0.04 ** 2 + 0.015 ** 2))
        self.assertAlmostEqual(nd.projected_repeat_cv(0.04, 0.03, 1.0), 0.05)


def _case(knobs, thr, done, skip=0):
    return {"status": "ok", "knobs": knobs,
            "measured": {"throughput_samples_per_s": thr, "timeline": {"skip": skip, "main": {"released": done}}}}


class SettingRows(unittest.TestCase):
    def test_two_repeats_of_one_setting(self):
        knobs = {"batch_size": 1, "num_workers": 2}
        even = [0.1 * i for i in range(41)]                  # 10 a second for 4 s: no wander
        rows = nd.setting_rows([_case(knobs, 90.0, even), _case(knobs, 110.0, even),
                                _case({"batch_size": 1, "num_workers": 4}, 100.0, even)], 1.0)
        self.assertEqual(len(rows), 1)                       # the single num_workers=4 case is no repeat
        r = rows[0]
        self.assertEqual(r["repeats"], 2)
        # sample sd of (90, 110) is sqrt(200) over a mean of 100; no wander, so all of it is drift
        self.assertAlmostEqual(r["observed_cv"], math.sqrt(200) / 100)
        self.assertAlmostEqual(r["within_cv"], 0.0)
        self.assertAlmostEqual(r["between_cv"], r["observed_cv"])

    def test_skip_and_short_cases(self):
        knobs = {"batch_size": 1}
        short = [0.1 * i for i in range(10)]                 # under 20 completions: left out
        self.assertEqual(nd.setting_rows([_case(knobs, 1.0, short), _case(knobs, 2.0, short)], 1.0), [])
        self.assertEqual(nd.case_completions(_case(knobs, 1.0, [0.0, 1.0, 2.0], skip=1)), [1.0, 2.0])


class DriftTracking(unittest.TestCase):
    def test_hand_example(self):
        knobs = {"batch_size": 64}
        rows = [{"id": "r1:00", "knobs": knobs, "measured": {"samples_per_s": 90.0}, "pipeplan": {"samples_per_s": 95.0}},
                {"id": "r1:01", "knobs": knobs, "measured": {"samples_per_s": 110.0}, "pipeplan": {"samples_per_s": 105.0}},
                # same knobs in another call: its own setting, and alone there
                {"id": "r2:00", "knobs": knobs, "measured": {"samples_per_s": 50.0}, "pipeplan": {"samples_per_s": 80.0}}]
        t = nd.drift_tracking(rows)
        # measured -0.10, +0.10 and predicted -0.05, +0.05 off their means: they move together (correlation 1),
        # rms 0.10 and 0.05, and the prediction leaves 0.05 of each repeat's move unexplained
        self.assertEqual(t["cases"], 2)
        self.assertAlmostEqual(t["correlation"], 1.0)
        self.assertAlmostEqual(t["measured_rms"], 0.10)
        self.assertAlmostEqual(t["predicted_rms"], 0.05)
        self.assertAlmostEqual(t["difference_rms"], 0.05)

    def test_no_repeats(self):
        self.assertIsNone(nd.drift_tracking([{"id": "r1:00", "knobs": {}, "measured": {"samples_per_s": 1.0},
                                              "pipeplan": {"samples_per_s": 1.0}}]))


if __name__ == "__main__":
    unittest.main()
