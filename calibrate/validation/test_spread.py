#!/usr/bin/env python3
"""spread_diagnostic's pure parts against hand figures."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
import spread_diagnostic as D  # noqa: E402


def timeline(walls_by_worker, start_s=1.0, skip=1):
    """Each worker's batches back to back from start_s, with the given walls; the window opens at next_end[skip]."""
    workers = {}
    for w, walls in walls_by_worker.items():
        t, ivs = start_s, []
        for wall in walls:
            ivs.append([t, t + wall])
            t += wall
        workers[w] = ivs
    return {"skip": skip, "main": {"next_end": [0.5, 0.9, 1.3]}, "workers": workers}


class CaseBatchSdTest(unittest.TestCase):
    def test_pooled_population_sd_of_walls_after_the_window_opens(self):
        # two workers, 30 batches each alternating 50 and 70 ms: pooled mean 60, population sd 10 ms
        tl = timeline({"0": [0.050, 0.070] * 15, "1": [0.070, 0.050] * 15})
        self.assertAlmostEqual(D.case_batch_sd_s(tl), 0.010)

    def test_batches_begun_before_the_window_are_left_out(self):
        # a 500 ms first batch that begins at 0.2 s, before the window opens at next_end[1] = 0.9 s
        tl = timeline({"0": [0.050, 0.070] * 30})
        tl["workers"]["0"].insert(0, [0.2, 0.7])
        self.assertAlmostEqual(D.case_batch_sd_s(tl), 0.010)

    def test_none_with_too_few_batches_or_no_window(self):
        self.assertIsNone(D.case_batch_sd_s(timeline({"0": [0.05] * 10})))
        self.assertIsNone(D.case_batch_sd_s({"workers": {}}))


class ProbeBatchSdTest(unittest.TestCase):
    def test_mean_of_cv_times_batch_time_over_the_probes(self):
        comps = {"probe": {"wander": {"cv": 0.10, "batch_s": 0.070}},
                 "probe_after": {"wander": {"cv": 0.12, "batch_s": 0.060}}}
        self.assertAlmostEqual(D.probe_batch_sd_s(comps), (0.007 + 0.0072) / 2)

    def test_one_probe_or_none(self):
        self.assertAlmostEqual(D.probe_batch_sd_s({"probe": {"wander": {"cv": 0.1, "batch_s": 0.05}}}), 0.005)
        self.assertIsNone(D.probe_batch_sd_s({"probe": {"getitem_wall_s": 0.001}}))


class BinTableTest(unittest.TestCase):
    def test_medians_per_bin_and_empty_bins_left_out(self):
        pts = [{"x": 0.35, "measured_share": 0.05, "simulated_share": 0.07, "p90_err": 0.10},
               {"x": 0.38, "measured_share": 0.07, "simulated_share": 0.09, "p90_err": -0.02},
               {"x": 0.55, "measured_share": 0.20, "simulated_share": 0.15, "p90_err": -0.10}]
        got = D.bin_table(pts, "x")
        self.assertEqual([(b["lo"], b["n"]) for b in got], [(0.3, 2), (0.5, 1)])
        self.assertAlmostEqual(got[0]["measured_share"], 0.06)
        self.assertAlmostEqual(got[0]["simulated_share"], 0.08)
        self.assertAlmostEqual(got[0]["p90_err"], 0.04)

    def test_bin_of_edges_and_beyond(self):
        self.assertEqual(D.bin_of(0.4), (0.4, 0.5))
        self.assertEqual(D.bin_of(3.0), (0.8, float("inf")))


class ShareLineTest(unittest.TestCase):
    def test_line_through_exact_points(self):
        # share = 0.5 x spread - 0.1, three points on it
        pts = [{"s": 0.3, "y": 0.05}, {"s": 0.4, "y": 0.10}, {"s": 0.6, "y": 0.20}]
        slope, intercept = D.share_line(pts, "s", "y")
        self.assertAlmostEqual(slope, 0.5)
        self.assertAlmostEqual(intercept, -0.1)

    def test_none_without_spread_or_points(self):
        self.assertIsNone(D.share_line([{"s": 0.4, "y": 0.1}] * 3, "s", "y"))
        self.assertIsNone(D.share_line([{"s": 0.4, "y": 0.1}, {"s": 0.5, "y": 0.2}], "s", "y"))


class PointTest(unittest.TestCase):
    def test_spreads_over_the_mean_step(self):
        case = {"measured": {"timeline": timeline({"0": [0.050, 0.070] * 30})},
                "components": {"probe": {"wander": {"cv": 0.1, "batch_s": 0.06}}}}
        row = {"measured": {"step_mean_s": 0.020, "out_of_order_fraction": 0.12},
               "pipeplan": {"out_of_order_fraction": 0.10, "step_p90_err": -0.05}}
        p = D.point(case, row)
        self.assertAlmostEqual(p["case_spread"], 0.5)     # 10 ms sd over a 20 ms step
        self.assertAlmostEqual(p["probe_spread"], 0.3)    # 6 ms over 20
        self.assertEqual((p["measured_share"], p["simulated_share"], p["p90_err"]), (0.12, 0.10, -0.05))
        del row["pipeplan"]["out_of_order_fraction"]
        self.assertIsNone(D.point(case, row))

    def test_matches_the_pinned_pipeline_in_the_pin_bound_families(self):
        row = {"family": "r12:sync_every", "knobs": {"pin_memory": True, "kind": "tensor_f32", "num_workers": 8,
                                                     "batch_size": 64, "step": "mm:5"}}
        self.assertTrue(D.matches(row, "tensor_f32", 8, 64, "mm:5"))
        row["knobs"]["pin_memory"] = False
        self.assertFalse(D.matches(row, "tensor_f32", 8, 64, "mm:5"))
        row["knobs"]["pin_memory"], row["family"] = True, "r12:num_workers"
        self.assertFalse(D.matches(row, "tensor_f32", 8, 64, "mm:5"))



class ReadTableReportTest(unittest.TestCase):
    """convert.read_table_report, which spread_diagnostic and cost_move_diagnostic read the table's report with."""

    def read(self, text):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "report.json")
            if text is not None:
                with open(path, "w") as f:
                    f.write(text)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                got = convert.read_table_report(path, "spread_diagnostic")
            return got, err.getvalue(), path

    def test_rows_read(self):
        got, err, _ = self.read(json.dumps({"rows": [{"id": "r1:00"}]}))
        self.assertEqual(got, {"rows": [{"id": "r1:00"}]})
        self.assertEqual(err, "")

    def test_one_line_naming_the_tool_file_and_what_was_expected(self):
        for text, said in ((None, "FileNotFoundError"), ("{", "JSONDecodeError"), ('{"rows": 3}', "$.rows")):
            got, err, path = self.read(text)
            self.assertIsNone(got)
            self.assertEqual(err.count("\n"), 1, err)
            self.assertTrue(err.startswith(f"spread_diagnostic: {path}: "), err)
            self.assertIn(said, err)
            self.assertIn("expected the table's report", err)



class BusySdMoveTest(unittest.TestCase):
    def case(self, in_situ=(0.080, 0.12), probes=((0.075, 0.10), (0.085, 0.10))):
        comps = {n: {"batch_busy_s": b, "batch_busy_cv": cv} for n, (b, cv) in zip(("probe", "probe_after"), probes)}
        return {"measured": {"in_situ": {"batch_busy_s": in_situ[0], "batch_busy_cv": in_situ[1]}}, "components": comps}

    def test_in_situ_sd_over_the_probes_mean_sd(self):
        # in situ 80 ms x 0.12 = 9.6 ms; probes 7.5 and 8.5 ms -> 8.0; 9.6 / 8.0 - 1 = +0.2
        self.assertAlmostEqual(D.busy_sd_move(self.case()), 0.2)

    def test_none_without_either_side(self):
        c = self.case()
        del c["measured"]["in_situ"]["batch_busy_cv"]
        self.assertIsNone(D.busy_sd_move(c))
        c = self.case()
        c["components"] = {}
        self.assertIsNone(D.busy_sd_move(c))

    def test_move_table_and_labels(self):
        got = D.move_table([(-0.3, 0.5), (0.05, -0.02), (0.07, -0.04), (0.25, -0.15)])
        self.assertEqual([(b["n"], round(b["p90_err"], 3)) for b in got], [(1, 0.5), (2, -0.03), (1, -0.15)])
        self.assertEqual(D.move_label(-float("inf"), -0.2), "below -20%")
        self.assertEqual(D.move_label(0.0, 0.1), "+0% to +10%")
        self.assertEqual(D.move_label(0.2, float("inf")), "+20% and more")


if __name__ == "__main__":
    unittest.main()
