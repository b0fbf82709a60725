#!/usr/bin/env python3
"""cold_cases.py's pure parts against hand-made cases (plain Python, no pipeplan)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cold_cases as C  # noqa: E402


def row(kind, err):
    return {"id": f"{kind}-{err}", "knobs": {"kind": kind}, "measured": {"samples_per_s": 1.0},
            "pipeplan": {"err": err}}


class ColdOnlyTest(unittest.TestCase):
    def test_keeps_the_cold_cases_and_the_rest_of_the_document(self):
        doc = {"machine": "h200", "components": {"x": 1}, "cases": [
            {"id": "a", "knobs": {"storage": "warm"}}, {"id": "b", "knobs": {"storage": "cold"}},
            {"id": "c", "knobs": {}}, {"id": "d"}]}
        out = C.cold_only(doc)
        self.assertEqual([c["id"] for c in out["cases"]], ["b"])
        self.assertEqual(out["machine"], "h200")
        self.assertEqual(out["components"], {"x": 1})
        self.assertEqual(len(doc["cases"]), 4)  # the input is not changed


class FmtTest(unittest.TestCase):
    def test_milliseconds_or_na(self):
        self.assertEqual(C.fmt_ms(0.000534), "0.53")
        self.assertEqual(C.fmt_ms(None), "n/a")


class WaitTest(unittest.TestCase):
    def test_in_situ_wait_is_getitem_wall_less_cpu(self):
        case = {"measured": {"load_in_situ_s": 0.00147, "load_in_situ_cpu_s": 0.00064}}  # convert's row
        self.assertAlmostEqual(C.measured_wait_s_per_file(case), 0.00083)
        # CPU above the wall (clock grain): no wait, not a negative one
        self.assertEqual(C.measured_wait_s_per_file({"measured": {"load_in_situ_s": 1e-3,
                                                                  "load_in_situ_cpu_s": 1.1e-3}}), 0.0)
        self.assertIsNone(C.measured_wait_s_per_file({"measured": {"load_in_situ_s": 1e-3}}))
        self.assertIsNone(C.measured_wait_s_per_file({}))

    def test_in_flight_as_counted_or_na(self):
        self.assertEqual(C.measured_in_flight({"measured": {"getitem_in_flight_mean": 2.345}}), "2.35")
        self.assertEqual(C.measured_in_flight({"measured": {}}), "n/a")

    def test_ratio_by_kind_skips_unknown_and_zero_waits(self):
        waits = [("tensor_f32", 1e-3, 0.8e-3), ("tensor_f32", 0.5e-3, 0.6e-3), ("tensor_f32", 2e-3, 2e-3),
                 ("tensor_f32", None, 1e-3), ("image", 0.0, 1e-3), ("image", 0.2e-3, 0.3e-3), ("image", 1e-3, None)]
        out = C.wait_ratio_by_kind(waits)
        self.assertEqual(out["tensor_f32"][0], 3)
        self.assertAlmostEqual(out["tensor_f32"][1], 1.0)  # median of 0.8, 1.2, 1.0
        self.assertEqual(out["image"][0], 1)
        self.assertAlmostEqual(out["image"][1], 1.5)


class SummaryTest(unittest.TestCase):
    def test_percentile_is_linear_between_ranks(self):
        self.assertAlmostEqual(C.percentile([1, 2, 3, 4, 5], 50), 3)
        # rank (5 - 1) x 0.9 = 3.6: 4 + 0.6 x (5 - 4)
        self.assertAlmostEqual(C.percentile([5, 1, 4, 2, 3], 90), 4.6)

    def test_by_kind_signed_and_absolute(self):
        rows = [row("tensor_f32", -0.10), row("tensor_f32", 0.02), row("tensor_f32", 0.04),
                row("image", 0.05), {"id": "x", "knobs": {"kind": "image"}, "measured": {}, "pipeplan": {}}]
        s = C.summary_by_kind(rows)
        self.assertEqual(s["tensor_f32"]["n"], 3)
        self.assertAlmostEqual(s["tensor_f32"]["median_signed"], 0.02)
        self.assertAlmostEqual(s["tensor_f32"]["median_abs"], 0.04)
        # |err| sorted 0.02, 0.04, 0.10: rank 1.8 -> 0.04 + 0.8 x 0.06
        self.assertAlmostEqual(s["tensor_f32"]["p90_abs"], 0.088)
        self.assertEqual(s["image"]["n"], 1)  # the case without a prediction is left out


if __name__ == "__main__":
    unittest.main()
