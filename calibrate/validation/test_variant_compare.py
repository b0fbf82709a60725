"""Tests of variant_compare.py: its figures by hand on small reports, the rule's verdict, the common cases only,
and bad input's one line and exit 2."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variant_compare as vc  # noqa: E402


def row(call, cid, err, step_err=None, ok=True):
    return {"id": cid, "family": f"{call}:pin_memory_few_workers",
            "pipeplan": {"err": err, "step_p90_err": step_err, "bottleneck_ok": ok}}


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


class Figures(unittest.TestCase):
    def test_by_hand(self):
        rows = [row("r1", "a", -0.10, 0.20), row("r1", "b", 0.02, -0.05, ok=False), row("r2", "a", 0.04, None),
                row("r2", "c", -0.01, 0.10)]
        f = vc.figures(rows)
        # abs errors 0.01, 0.02, 0.04, 0.10: median (0.02 + 0.04) / 2; p90 at position 0.9 * 3 = 2.7 between
        # 0.04 and 0.10: 0.04 + 0.7 * 0.06 = 0.082 (numpy's 'linear', as convert's summaries)
        self.assertAlmostEqual(f["median_abs_err"], 0.03)
        self.assertAlmostEqual(f["p90_abs_err"], 0.082)
        # signed -0.10, -0.01, 0.02, 0.04: median 0.005
        self.assertAlmostEqual(f["signed_median_err"], 0.005)
        # p90 step over the three rows that have one: 0.05, 0.10, 0.20; median 0.10, p90 0.10 + 0.8 * 0.10
        self.assertAlmostEqual(f["median_abs_step_p90_err"], 0.10)
        self.assertAlmostEqual(f["p90_abs_step_p90_err"], 0.18)
        self.assertEqual(f["bottleneck_ok"], 3)
        self.assertEqual(f["n"], 4)

    def test_worsened_names_only_higher_figures(self):
        base = {"median_abs_err": 0.03, "p90_abs_err": 0.07, "median_abs_step_p90_err": 0.10,
                "p90_abs_step_p90_err": 0.36}
        var = dict(base, median_abs_err=0.034, p90_abs_err=0.061)
        self.assertEqual(vc.worsened(base, var), ["median_abs_err"])
        self.assertEqual(vc.worsened(base, base), [])


class Compare(unittest.TestCase):
    def test_only_common_scored_cases_count(self):
        base = {"rows": [row("r1", "a", 0.10), row("r1", "b", 0.02), row("r2", "a", 0.50)]}
        var = {"rows": [row("r1", "a", 0.05), row("r1", "b", 0.04), row("r2", "a", None)]}
        figs, common, only = vc.compare(base, var)
        # r2:a failed in the variant (no error): out of both sides, named apart
        self.assertEqual(common, ["r1:a", "r1:b"])
        self.assertEqual(only, ["r2:a"])
        self.assertAlmostEqual(figs["base"]["median_abs_err"], 0.06)
        self.assertAlmostEqual(figs["variant"]["median_abs_err"], 0.045)

    def test_same_id_in_two_calls_kept_apart(self):
        self.assertNotEqual(vc.case_key(row("r1", "a", 0.0)), vc.case_key(row("r2", "a", 0.0)))

    def test_prefixed_id_not_prefixed_twice(self):
        self.assertEqual(vc.case_key(row("r10", "r10:00-pin", 0.0)), "r10:00-pin")
        self.assertEqual(vc.case_key(row("r10", "00-pin", 0.0)), "r10:00-pin")


class Cli(unittest.TestCase):
    def run_main(self, args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = vc.main(args)
        return rc, out.getvalue(), err.getvalue()

    def test_prints_rule_verdict_and_cases(self):
        with tempfile.TemporaryDirectory() as d:
            b, v = os.path.join(d, "b.json"), os.path.join(d, "v.json")
            write_json(b, {"rows": [row("r1", "a", 0.10, 0.3), row("r1", "b", -0.02, 0.1)]})
            write_json(v, {"rows": [row("r1", "a", 0.05, 0.4), row("r1", "b", -0.02, 0.1, ok=False)]})
            rc, out, _ = self.run_main([b, v, "--cases"])
        self.assertEqual(rc, 0)
        self.assertIn("base | 6.0% / 9.2% |", out)
        self.assertIn("the variant worsens: median_abs_step_p90_err, p90_abs_step_p90_err (2 cases in both)", out)
        self.assertIn("r1:a | +10.0% / +5.0% | +30.0% / +40.0% | yes / yes", out)
        self.assertIn("r1:b | -2.0% / -2.0% | +10.0% / +10.0% | yes / no", out)

    def test_bad_input_one_line_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            b = os.path.join(d, "b.json")
            write_json(b, {"summary": {}})
            rc, out, err = self.run_main([b, b])
            self.assertEqual(rc, 2)
            self.assertEqual(out, "")
            self.assertEqual(len(err.strip().splitlines()), 1)
            self.assertIn("$.rows", err)
            rc, _, err = self.run_main([os.path.join(d, "missing.json"), b])
            self.assertEqual(rc, 2)
            self.assertIn("missing.json", err)

    def test_no_common_case_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            b, v = os.path.join(d, "b.json"), os.path.join(d, "v.json")
            write_json(b, {"rows": [row("r1", "a", 0.1)]})
            write_json(v, {"rows": [row("r2", "a", 0.1)]})
            rc, _, err = self.run_main([b, v])
        self.assertEqual(rc, 2)
        self.assertIn("share no scored case", err)


if __name__ == "__main__":
    unittest.main()
