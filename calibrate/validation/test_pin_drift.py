"""pin_drift_diagnostic's pure parts, against hand calculations."""
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pin_drift_diagnostic as pd  # noqa: E402


def case(cid, in_case, before, after, pin=True):
    return {"id": cid, "knobs": {"pin_memory": pin},
            "components": {"probe": {"pin_thread_cpu_s_per_batch": before},
                           "probe_after": {"pin_thread_cpu_s_per_batch": after}},
            "measured": {"in_situ": {"pin_thread_cpu_s_per_batch": in_case}}}


class Ratio(unittest.TestCase):
    def test_case_over_the_mean_of_its_probes(self):
        # run 36's r92:12: 19.59 ms in the case, 17.14 and 14.80 around it -> 19.59 / 15.97 = 1.2267
        self.assertAlmostEqual(pd.pin_thread_ratio(case("a", 0.01959, 0.01714, 0.01480)), 0.01959 / 0.01597)

    def test_unpinned_or_missing_readings_give_none(self):
        self.assertIsNone(pd.pin_thread_ratio(case("a", 0.02, 0.02, 0.02, pin=False)))
        self.assertIsNone(pd.pin_thread_ratio(case("a", None, 0.02, 0.02)))
        self.assertIsNone(pd.pin_thread_ratio(case("a", 0.02, 0.02, None)))
        skipped = case("a", 0.02, 0.02, 0.02)
        del skipped["measured"]
        self.assertIsNone(pd.pin_thread_ratio(skipped))


class ByOrder(unittest.TestCase):
    def test_ratios_split_by_in_order_and_unpinned_left_out(self):
        # run 71a's 00 (in order): 10.43 ms in the case, 10.00 and 9.54 around it -> 10.43 / 9.77 = 1.0675
        ordered = case("00", 0.01043, 0.01000, 0.00954)
        unordered = case("01", 0.01037, 0.00973, 0.00986)
        unordered["knobs"]["in_order"] = False
        groups = pd.ratios_by_order([ordered, unordered, case("x", 0.02, 0.02, 0.02, pin=False)])
        self.assertEqual(len(groups["in order"]), 1)
        self.assertAlmostEqual(groups["in order"][0], 0.01043 / 0.00977)
        self.assertAlmostEqual(groups["unordered"][0], 0.01037 / 0.009795)

    def test_ratios_only_needs_no_table(self):
        import contextlib
        import io
        import json
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "cases.json"), "w") as f:
                json.dump({"cases": [case("00-a", 0.011, 0.010, 0.010)]}, f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = pd.main([d, "--ratios-only", "--table-calls", "/nonexistent"])
        self.assertEqual(rc, 0)
        self.assertIn("00-a: pin thread 1.100x its probes", out.getvalue())
        self.assertIn("in order: median 1.100 over 1 case(s)", out.getvalue())


class Fit(unittest.TestCase):
    def test_an_exact_line(self):
        slope, intercept, corr = pd.linear_fit([-0.1, 0.0, 0.1, 0.2], [-0.08, 0.02, 0.12, 0.22])
        self.assertAlmostEqual(slope, 1.0)
        self.assertAlmostEqual(intercept, 0.02)
        self.assertAlmostEqual(corr, 1.0)

    def test_a_falling_line_and_bad_input(self):
        slope, intercept, corr = pd.linear_fit([0, 1, 2], [3, 1, -1])
        self.assertAlmostEqual(slope, -2.0)
        self.assertAlmostEqual(intercept, 3.0)
        self.assertAlmostEqual(corr, -1.0)
        with self.assertRaises(ValueError):
            pd.linear_fit([1.0], [1.0])
        with self.assertRaises(ValueError):
            pd.linear_fit([1.0, 1.0], [0.0, 2.0])


class Tags(unittest.TestCase):
    def test_tags_follow_the_listed_order_and_skip_comments(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("# header\n\ncall-a\n# note\ncall-b\n")
        try:
            self.assertEqual(pd.call_tags(f.name), {"call-a": "r1", "call-b": "r2"})
        finally:
            os.unlink(f.name)

    def test_pairs_join_cases_and_errors_by_id(self):
        cases = [case("x", 0.022, 0.02, 0.02), case("y", 0.02, 0.02, 0.02, pin=False), case("z", 0.018, 0.02, 0.02)]
        pairs = pd.pairs_for_call(cases, {"x": 0.11, "y": 0.5})
        self.assertEqual(len(pairs), 1)
        self.assertEqual(pairs[0][0], "x")
        self.assertAlmostEqual(pairs[0][1], 0.1)
        self.assertAlmostEqual(pairs[0][2], 0.11)


class Spread(unittest.TestCase):
    def test_each_reading_is_the_abs_log_of_its_ratio(self):
        c = case("a", 0.022, 0.02, 0.025)
        c["components"]["probe"]["pin_thread_cpu_s_per_batch_halves"] = [0.02, 0.022]
        c["components"]["probe_after"]["pin_thread_cpu_s_per_batch_halves"] = [0.025, 0.025]
        s = pd.spread_readings([[c]])
        self.assertEqual(len(s["halves"]), 2)
        self.assertAlmostEqual(s["halves"][0], math.log(1.1))
        self.assertAlmostEqual(s["halves"][1], 0.0)
        self.assertAlmostEqual(s["probes"][0], math.log(1.25))
        # 22 ms in the case over the probes' mean of 22.5 ms
        self.assertAlmostEqual(s["case"][0], abs(math.log(0.022 / 0.0225)))
        self.assertEqual(s["lag_pairs"], [])

    def test_lag_pairs_join_neighbours_only_within_a_call(self):
        a, b = case("a", 0.022, 0.02, 0.02), case("b", 0.018, 0.02, 0.02)
        gap, c = case("g", 0.02, 0.02, 0.02, pin=False), case("c", 0.021, 0.02, 0.02)
        s = pd.spread_readings([[a, b, gap, c], [case("d", 0.02, 0.02, 0.02)]])
        # a -> b only: the unpinned case breaks the chain before c, and the next call starts a new one
        self.assertEqual(len(s["lag_pairs"]), 2)
        self.assertAlmostEqual(s["lag_pairs"][0], math.log(1.1))
        self.assertAlmostEqual(s["lag_pairs"][1], math.log(0.9))
        self.assertEqual(len(s["case"]), 4)

    def test_pearson(self):
        self.assertAlmostEqual(pd.pearson([1, 2, 3], [2, 4, 6]), 1.0)
        self.assertAlmostEqual(pd.pearson([1, 2, 3], [3, 2, 1]), -1.0)
        # x = (-1, 0, 1), y = (1, -2, 1): no linear relation at all
        self.assertAlmostEqual(pd.pearson([-1, 0, 1], [1, -2, 1]), 0.0)
        self.assertTrue(math.isnan(pd.pearson([1, 1, 1], [1, 2, 3])))


class Factors(unittest.TestCase):
    def test_a_and_b_multiply_with_the_ratio_to_predicted_over_measured(self):
        # r95:06's figures: 3,284 samples/s of 64 (19.49 ms a batch), 18.76 ms of pin CPU in the case against probes
        # of 16.67 and 17.68 ms; predicted 3,852 samples/s (16.61 ms)
        c = case("x", 0.01876, 0.01667, 0.01768)
        c["knobs"].update(batch_size=64, kind="tensor_f32", step="mm:5", num_workers=8)
        c["measured"]["throughput_samples_per_s"] = 3284.0
        a, b = pd.pin_bound_factors(c, 3852.0)
        self.assertAlmostEqual(a, (64 / 3284.0) / 0.01876)
        self.assertAlmostEqual(b, (0.01667 + 0.01768) / 2 * 3852.0 / 64)
        self.assertAlmostEqual(pd.pin_thread_ratio(c) * a * b, 3852.0 / 3284.0)
        self.assertTrue(pd.is_pin_bound_tensor(c))
        self.assertIsNone(pd.pin_bound_factors(c, None))
        c["knobs"]["step"] = "mm:10"
        self.assertFalse(pd.is_pin_bound_tensor(c))


class BadInput(unittest.TestCase):
    def run_cli(self, *args):
        import subprocess
        return subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                            "pin_drift_diagnostic.py"), *args],
                              capture_output=True, text=True)

    def test_a_missing_or_broken_report_is_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            calls = os.path.join(d, "calls.txt")
            with open(calls, "w") as f:
                f.write("somecall\n")
            broken = os.path.join(d, "report.json")
            with open(broken, "w") as f:
                f.write("{bad")
            for report in (os.path.join(d, "absent.json"), broken):
                p = self.run_cli(os.path.join(d, "somecall"), "--report", report, "--table-calls", calls)
                self.assertEqual(p.returncode, 2)
                self.assertIn("cannot read a report's rows", p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1)
            p = self.run_cli(os.path.join(d, "somecall"), "--table-calls", os.path.join(d, "absent.txt"))
            self.assertEqual(p.returncode, 2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1)


class WithinCallFit(unittest.TestCase):
    def test_each_calls_offset_is_taken_out(self):
        # call A: y = -x + 0.05; call B: y = -x - 0.03. Pooled the offsets blur the line; within calls it is exact.
        pts = [("A", 0.00, 0.05), ("A", 0.01, 0.04), ("A", 0.02, 0.03),
               ("B", 0.02, -0.05), ("B", 0.03, -0.06), ("B", 0.04, -0.07)]
        slope, corr, n = pd.within_call_fit(pts)
        self.assertAlmostEqual(slope, -1.0)
        self.assertAlmostEqual(corr, -1.0)
        self.assertEqual(n, 6)

    def test_a_call_of_one_point_is_left_out(self):
        # C's lone point would pull a pooled fit anywhere; within calls it has no spread of its own
        pts = [("A", 0.0, 0.0), ("A", 0.02, 0.01), ("C", 0.5, -0.9)]
        slope, corr, n = pd.within_call_fit(pts)
        self.assertAlmostEqual(slope, 0.5)
        self.assertEqual(n, 2)
        self.assertTrue(math.isnan(pd.within_call_fit([("A", 0.0, 0.0)])[0]))

    def test_no_spread_within_calls_gives_no_line(self):
        # the model since run 38's finding 6: every case's simulated GIL wait is 0, nothing to fit against
        slope, corr, n = pd.within_call_fit([("A", 0.0, 0.01), ("A", 0.0, -0.02), ("B", 0.0, 0.03), ("B", 0.0, 0.0)])
        self.assertTrue(math.isnan(slope) and math.isnan(corr))
        self.assertEqual(n, 4)


if __name__ == "__main__":
    unittest.main()
