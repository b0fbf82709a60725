#!/usr/bin/env python3
"""duty_hump_diagnostic.py's pure parts against hand-built step series (plain Python, no pipeplan)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import duty_hump_diagnostic as H  # noqa: E402


def humped_series(n, step_s, period_steps, hump_steps, first, ratio):
    """n steps of step_s, each period_steps from `first` on raised to ratio x for hump_steps."""
    return [step_s * ratio if i >= first and (i - first) % period_steps < hump_steps else step_s for i in range(n)]


class HumpTest(unittest.TestCase):
    def test_periodic_humps_give_their_period_length_and_share(self):
        # 10 ms steps at duty 0.8: a step's wall 12.5 ms; humps of 20 steps (0.25 s) every 80 steps (1.0 s),
        # the first at step 16 (0.2 s), 1.2x: spells start 0.2, 1.2, 2.2 s
        xs = humped_series(200, 0.010, 80, 20, 16, 1.2)
        r = H.hump_reading(xs, 0.8 * sum(xs) / len(xs) / 0.010)   # duty from the series' own mean: wall 12.5 ms
        self.assertEqual(len(r["spells"]), 3)
        self.assertAlmostEqual(r["period_s"], 1.0, places=6)
        self.assertAlmostEqual(r["spells"][0]["start_s"] / r["window_s"] * 200, 16, places=6)
        # 20 + 20 + 20 of 200 steps high (the last hump at 176-195)
        self.assertAlmostEqual(r["high_share"], 60 / 200)
        self.assertAlmostEqual(r["high_over_low"], 1.2)
        self.assertAlmostEqual(r["mean_over_low"], 1 + 0.2 * 60 / 200)

    def test_a_flat_series_has_no_humps(self):
        xs = [0.010 * (1 + 0.01 * (i % 3)) for i in range(100)]   # within 2%: under FLAT_RATIO
        r = H.hump_reading(xs, 0.5)
        self.assertEqual(r["spells"], [])
        self.assertIsNone(r["period_s"])
        self.assertNotIn("high_share", r)

    def test_single_slow_steps_are_flicker_not_humps(self):
        # one 1.3x step in every 10: the high (95th percentile) is 1.3x, but no run of them lasts MIN_SPELL_S and
        # the running mean over SMOOTH_S (9 steps of 12.5 ms) holds at most one: 1.033x, under the 1.15x midpoint
        xs = [0.013 if i % 10 == 7 else 0.010 for i in range(200)]
        r = H.hump_reading(xs, 0.8)
        self.assertAlmostEqual(r["high_over_low"], 1.3)
        self.assertEqual(r["spells"], [])

    def test_a_spell_at_the_window_start_does_not_set_the_period(self):
        # humps at 0 (began before the window), 80 and 160: only the two inside give a gap
        xs = humped_series(200, 0.010, 80, 20, 0, 1.2)
        r = H.hump_reading(xs, 0.8)
        self.assertTrue(r["spells"][0]["touches_edge"])
        self.assertAlmostEqual(r["period_s"], 80 * 0.0125 * (sum(xs) / len(xs)) / 0.010, places=6)

    def test_too_few_steps_or_a_bad_duty_say_nothing(self):
        self.assertIsNone(H.hump_reading([0.01] * (H.MIN_STEPS - 1), 0.8))
        self.assertIsNone(H.hump_reading([0.01] * 50, 0.0))
        self.assertIsNone(H.hump_reading([0.01] * 50, 1.5))

    def test_spells_bridge_short_gaps(self):
        high = [False, True, True, False, False, True, False, False, False, True]
        self.assertEqual(H.high_spells(high, bridge=2), [(1, 5), (9, 9)])
        self.assertEqual(H.high_spells(high, bridge=1), [(1, 2), (5, 5), (9, 9)])

    def test_percentile_and_running_mean_by_hand(self):
        self.assertAlmostEqual(H.percentile([1, 2, 3, 4, 5], 0.10), 1.4)
        self.assertAlmostEqual(H.percentile([1, 2, 3, 4, 5], 0.95), 4.8)
        self.assertEqual(H.running_mean([0, 3, 6, 9], 3), [1.5, 3.0, 6.0, 7.5])


class ConvertHumpsTest(unittest.TestCase):
    """convert.gpu_clock_humps: training.gpu_clock_humps from a call's duty curves, by hand."""

    def components(self):
        # step model A: flat at duty 0.5; at 0.8, 200 steps of 10 ms with 1.2x humps of 20 steps every 80 (a step's
        # wall 12.5 ms: 1.0 s apart, high share 60 / 200 = 0.3 of the steps); sustained back to back: mean 11 ms,
        # p90 11.11 ms
        humped = humped_series(200, 0.010, 80, 20, 16, 1.2)
        mean = sum(humped) / len(humped)
        return {"gpu_duty_curves": {"A": {"points": [
                    {"duty": 0.5, "steps_s": [0.010] * 60},
                    {"duty": round(0.8 * mean / 0.010, 6), "steps_s": humped}]}},
                "step": {"A": {"sustained_interval_s": {"mean": 0.011, "p90": 0.01111}}}}

    def test_the_calls_period_and_share_and_the_models_amplitude(self):
        import convert
        comps = self.components()
        humped = comps["gpu_duty_curves"]["A"]["points"][1]["steps_s"]
        r = H.hump_reading(humped, comps["gpu_duty_curves"]["A"]["points"][1]["duty"])
        h = convert.gpu_clock_humps(comps, "A")
        self.assertAlmostEqual(h["period_s"], round(r["period_s"], 4))
        self.assertAlmostEqual(h["high_share"], 0.3)
        amps = {round(q["duty"], 1): q["amplitude"] for q in h["amplitude_vs_gpu_duty"]}
        # a flat point: p90 = mean, amplitude 0; the humped one: (p90 / mean - 1) / (1 - 0.3); duty 1 from the
        # sustained interval: (11.11 / 11 - 1) / 0.7 = 0.01 / 0.7
        self.assertEqual(amps[0.5], 0.0)
        self.assertAlmostEqual(amps[0.8], round((r["p90_over_mean"] - 1) / 0.7, 4))
        self.assertAlmostEqual(amps[1.0], round(0.01 / 0.7, 4))
        self.assertGreater(amps[0.8], 0.1)

    def test_no_humps_without_a_humped_point_or_the_step_models_curve(self):
        import convert
        comps = self.components()
        self.assertIsNone(convert.gpu_clock_humps(comps, "B"))
        comps["gpu_duty_curves"]["A"]["points"] = comps["gpu_duty_curves"]["A"]["points"][:1]
        self.assertIsNone(convert.gpu_clock_humps(comps, "A"))


if __name__ == "__main__":
    unittest.main()
