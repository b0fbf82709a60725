#!/usr/bin/env python3
"""cost_move_diagnostic's pure parts against hand figures."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cost_move_diagnostic as D  # noqa: E402


def image_case(in_situ=0.0036, before=0.0030, after=0.0042, workers=8, pin=False, pin_in_case=None):
    probe = {"workers": workers, "getitem_wall_s": before, "pin_thread_cpu_s_per_batch": 0.010}
    probe_after = {"workers": workers, "getitem_wall_s": after, "pin_thread_cpu_s_per_batch": 0.012}
    ins = {"getitem_wall_s": in_situ}
    if pin_in_case is not None:
        ins["pin_thread_cpu_s_per_batch"] = pin_in_case
    return {"knobs": {"pin_memory": pin, "num_workers": workers}, "components": {"probe": probe, "probe_after": probe_after},
            "measured": {"in_situ": ins}}


def row(stage, measured_class, err=0.0):
    return {"pipeplan": {"bottleneck_stage": stage, "err": err}, "measured": {"bottleneck": measured_class}}


class LoadRatioTest(unittest.TestCase):
    def test_the_case_over_its_probes_mean(self):
        # probes 3.0 and 4.2 ms a sample -> mean 3.6; the case 3.96 -> 1.1
        self.assertAlmostEqual(D.load_ratio(image_case(in_situ=0.00396)), 1.1)

    def test_no_ratio_without_comparable_readings(self):
        self.assertIsNone(D.load_ratio(image_case(workers=0)))                  # an inline loader's probes
        c = image_case()
        c["components"]["probe_after"]["workers"] = 4                          # probes at another worker count
        self.assertIsNone(D.load_ratio(c))
        c = image_case()
        del c["measured"]["in_situ"]["getitem_wall_s"]
        self.assertIsNone(D.load_ratio(c))


class CostMoveTest(unittest.TestCase):
    def test_the_bottleneck_picks_the_cost(self):
        c = image_case(in_situ=0.00396, pin=True, pin_in_case=0.0132)
        self.assertEqual(D.cost_move(c, row("workers", "input"))[0], "workers")
        self.assertAlmostEqual(D.cost_move(c, row("workers", "input"))[1], 1.1)
        # the pin thread: 13.2 ms in the case over its probes' (10 + 12) / 2 = 11 ms -> 1.2
        got = D.cost_move(c, row("pin_thread", "input"))
        self.assertEqual(got[0], "pin_thread")
        self.assertAlmostEqual(got[1], 1.2)
        # workers named by the simulator but the measurement not input-bound; another stage: no group
        self.assertIsNone(D.cost_move(c, row("workers", "compute")))
        self.assertIsNone(D.cost_move(c, row("host_loop", "host")))


class CopyRatioTest(unittest.TestCase):
    def window(self, copy_s):
        return {"unpinned_case_like_copy_s": {"mean": copy_s}, "unpinned_case_like_release_s": {"mean": 0.001},
                "unpinned_case_like_host_s": {"mean": 0.002}}

    def test_the_cases_copy_over_its_windows(self):
        # windows' copy 4 and 6 ms -> 5 ms; the case's .to() 5.5 ms a step -> 1.1
        case = {"knobs": {"pin_memory": False}, "measured": {"copy_call_s": {"mean": 0.0055}},
                "components": {"unpinned_window": self.window(0.004), "unpinned_window_after": self.window(0.006)}}
        self.assertAlmostEqual(D.copy_ratio(case), 1.1)
        self.assertEqual(D.cost_move(case, row("h2d_copy", "host"))[0], "h2d_copy")
        # a pinned case's copy is not this reading; nor is a case without its windows
        self.assertIsNone(D.copy_ratio(dict(case, knobs={"pin_memory": True})))
        self.assertIsNone(D.copy_ratio(dict(case, components={})))


class UnpinnedLoopRatioTest(unittest.TestCase):
    def window(self, next_s, copy_s, release_s, host_s):
        return {"unpinned_case_like_next_s": next_s, "unpinned_case_like_copy_s": {"mean": copy_s},
                "unpinned_case_like_release_s": {"mean": release_s}, "unpinned_case_like_host_s": {"mean": host_s}}

    def case(self, before, after, pin=False):
        # in the case: next() 2 ms, launches with the .to() inside 11 ms, release 9 ms -> 22 ms a step
        return {"knobs": {"pin_memory": pin},
                "measured": {"data_wait_s": {"mean": 0.002}, "loop_host_s": {"mean": 0.011},
                             "release_s": {"mean": 0.009}, "copy_call_s": {"mean": 0.010}},
                "components": {"unpinned_window": before, "unpinned_window_after": after}}

    def test_the_whole_loop_over_its_windows(self):
        # windows: 2 + 8 + 7 + 1 = 18 ms and 2 + 10 + 9 + 1 = 22 ms -> 20 ms; the case's 22 ms -> 1.1
        c = self.case(self.window(0.002, 0.008, 0.007, 0.001), self.window(0.002, 0.010, 0.009, 0.001))
        self.assertAlmostEqual(D.unpinned_loop_ratio(c), 1.1)
        for stage in ("main_receive", "host_loop"):
            group, ratio = D.cost_move(c, row(stage, "host"))
            self.assertEqual(group, "unpinned_loop")
            self.assertAlmostEqual(ratio, 1.1)
        # the measurement not host-bound: the loop is not what set its pace
        self.assertIsNone(D.cost_move(c, row("host_loop", "input")))
        # the simulator naming the copy keeps the copy's own reading: 10 ms over (8 + 10) / 2 = 9 ms
        self.assertEqual(D.cost_move(c, row("h2d_copy", "host"))[0], "h2d_copy")
        self.assertAlmostEqual(D.cost_move(c, row("h2d_copy", "host"))[1], 10 / 9)

    def test_a_window_without_its_next_is_left_out(self):
        # a window from before run 26's plan has no next(): only the other counts (2 + 10 + 9 + 1 = 22 -> 1.0)
        before = self.window(0.002, 0.008, 0.007, 0.001)
        del before["unpinned_case_like_next_s"]
        c = self.case(before, self.window(0.002, 0.010, 0.009, 0.001))
        self.assertAlmostEqual(D.unpinned_loop_ratio(c), 1.0)
        c["components"]["unpinned_window_after"] = {}
        self.assertIsNone(D.unpinned_loop_ratio(c))

    def test_no_reading_for_a_pinned_case_or_a_missing_part(self):
        w = self.window(0.002, 0.008, 0.007, 0.001)
        self.assertIsNone(D.unpinned_loop_ratio(self.case(w, w, pin=True)))
        c = self.case(w, w)
        del c["measured"]["release_s"]
        self.assertIsNone(D.unpinned_loop_ratio(c))


class SummaryTest(unittest.TestCase):
    def test_p90_is_linear_between_ranks(self):
        # ten values 1..10: rank 0.9 x 9 = 8.1 -> 9 + 0.1 x 1
        self.assertAlmostEqual(D.p90(list(range(1, 11))), 9.1)
        self.assertEqual(D.p90([5.0]), 5.0)

    def test_by_hand(self):
        # four cases: (move, error). |error - move|: 0.01, 0.01, 0.02, 0.10
        pairs = [(0.10, 0.11), (-0.15, -0.14), (0.0, 0.02), (0.02, -0.08)]
        s = D.group_summary(pairs, 0.12)
        self.assertEqual(s["n"], 4)
        self.assertAlmostEqual(s["median_move"], 0.01)
        self.assertAlmostEqual(s["median_abs_err"], (0.08 + 0.11) / 2)
        self.assertAlmostEqual(s["median_abs_rest"], 0.015)
        # p90 of 0.01, 0.01, 0.02, 0.10: rank 2.7 -> 0.02 + 0.7 x 0.08
        self.assertAlmostEqual(s["p90_abs_rest"], 0.076)
        # one case beyond 12% (-0.14); less its move (-0.15) it is 0.01 off
        self.assertEqual((s["beyond"], s["beyond_within_once_moved"]), (1, 1))
        self.assertGreater(s["correlation"], 0.8)


class P90AtRateTest(unittest.TestCase):
    def test_by_hand(self):
        def r(step_err, err, edge):
            return {"pipeplan": {"step_p90_err": step_err, "err": err, "step_p90_on_edge": edge}}
        # predicted 10% fast with its p90 step 9.09% short: at the measured rate (1 - 1/11) x 1.1 - 1 = 0
        rows = [r(-1 / 11, 0.10, False), r(0.05, 0.0, False), r(0.5, -0.2, True), {"pipeplan": None}]
        f = D.p90_step_at_measured_rate(rows)
        self.assertEqual(f["not_on_edge"]["n"], 2)
        self.assertAlmostEqual(f["not_on_edge"]["median"], (1 / 11 + 0.05) / 2)
        self.assertAlmostEqual(f["not_on_edge"]["median_at_rate"], 0.025)           # 0 and 0.05
        self.assertAlmostEqual(f["on_edge"]["median_at_rate"], 0.2)                 # 1.5 x 0.8 - 1
        self.assertEqual(f["on_edge"]["n"], 1)


if __name__ == "__main__":
    unittest.main()
