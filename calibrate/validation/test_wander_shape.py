"""wander_shape_diagnostic's command line and its reading of a case, against hand calculations."""
import io
import json
import math
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wander_shape_diagnostic as ws  # noqa: E402


def alternating_worker(n: int, a: float, t0: float = 0.0):
    """n back-to-back batches, log speed -a, +a, -a, ... (each worker's mean 0 once the first is left out with
    n odd): intervals [start, end]."""
    out, t = [], t0
    for i in range(n):
        d = math.exp(a if i % 2 == 0 else -a)
        out.append([t, t + d])
        t += d
    return out


def case(workers, family="num_workers", batch_size=64, probe_wander=None):
    c = {"id": "x", "family": family, "status": "ok",
         "knobs": {"num_workers": len(workers), "batch_size": batch_size, "kind": "image"},
         "measured": {"timeline": {"workers": {str(i): w for i, w in enumerate(workers)}}},
         "components": {}}
    if probe_wander is not None:
        c["components"]["probe"] = {"wander": probe_wander}
    return c


class CaseShape(unittest.TestCase):
    def test_alternating_speeds(self):
        # 9 batches a worker, the first left out: 8 alternating +a, -a in log speed -> r1 = -7/8, r2 = 6/8,
        # r4 = 4/8 (as timeline_analysis.wander_shape's hand test); 16 values +-a: deciles and median give
        # fast = slow = a
        a = 0.1
        s = ws.case_shape(case([alternating_worker(9, a), alternating_worker(9, a)]))
        self.assertAlmostEqual(s["r1"], -7 / 8)
        self.assertAlmostEqual(s["r2"], 6 / 8)
        self.assertAlmostEqual(s["r4"], 4 / 8)
        self.assertAlmostEqual(s["fast"], a)
        self.assertAlmostEqual(s["slow"], a)

    def test_too_few_batches(self):
        self.assertIsNone(ws.case_shape(case([alternating_worker(3, 0.1), alternating_worker(3, 0.1)])))


class CommandLine(unittest.TestCase):
    def run_main(self, args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = ws.main(args)
        return rc, out.getvalue(), err.getvalue()

    def test_missing_call_is_one_line_and_exit_2(self):
        rc, out, err = self.run_main(["/nonexistent/call"])
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertIn("/nonexistent/call", err)

    def test_a_call_with_probes(self):
        probe = {"autocorrelation_by_lag": {"1": 0.5, "2": 0.3, "4": 0.1},
                 "log_speed_fast_side": 0.2, "log_speed_slow_side": 0.1}
        doc = {"cases": [case([alternating_worker(9, 0.1), alternating_worker(9, 0.1)], probe_wander=probe),
                         case([alternating_worker(9, 0.1)] * 2, family="slow_worker")]}
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "cases.json"), "w") as f:
                json.dump(doc, f)
            rc, out, err = self.run_main([d])
        self.assertEqual(rc, 0, err)
        rows = [l for l in out.splitlines() if l.startswith("image")]
        self.assertEqual(len(rows), 1)       # the straggler case left out
        self.assertIn("  2-4    64     1 | -0.88  0.75  0.50", rows[0])
        self.assertIn("0.50  0.10 0.200 0.100", rows[0])   # the probe's figures beside

    def test_no_timeline_is_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "cases.json"), "w") as f:
                json.dump({"cases": [{"id": "y", "family": "f", "knobs": {"num_workers": 2}}]}, f)
            rc, out, err = self.run_main([d])
        self.assertEqual(rc, 2)
        self.assertIn("no case with a worker timeline", err)


if __name__ == "__main__":
    unittest.main()
