#!/usr/bin/env python3
"""recommend_check.py's pure parts against hand calculations (plain Python, no torch, no pipeplan)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recommend_check as R  # noqa: E402


class RecommendCheckTest(unittest.TestCase):
    def setUp(self):
        # run 11's A sweep, rounded: w8 measured twice (1,500 and 1,540)
        rows = [(0, 250), (2, 500), (4, 870), (8, 1500), (8, 1540), (12, 2060), (16, 2080), (24, 2080)]
        self.curve = R.measured_by_workers([{"knobs": {"num_workers": w}, "measured": {"samples_per_s": v}}
                                            for w, v in rows])

    def test_repeats_are_averaged(self):
        self.assertEqual(self.curve[8], 1520)
        self.assertEqual(sorted(self.curve), [0, 2, 4, 8, 12, 16, 24])

    def test_rate_between_and_beyond_the_measured_counts(self):
        self.assertEqual(R.rate_at(self.curve, 12), (2060, False))
        # 11 workers: three quarters of the way from 1,520 (w8) to 2,060 (w12): 1,925
        rate, extrapolated = R.rate_at(self.curve, 11)
        self.assertAlmostEqual(rate, 1520 + 0.75 * 540)
        self.assertFalse(extrapolated)
        # beyond the sweep: the largest count's rate, flagged
        self.assertEqual(R.rate_at(self.curve, 32), (2080, True))

    def test_knee_is_the_fewest_within_three_percent_of_the_best(self):
        # best 2,080; 3% below is 2,017.6: w12 (2,060) is the fewest above it, w8 (1,520) is not
        self.assertEqual(R.knee(self.curve), 12)
        self.assertEqual(R.knee(self.curve, within=0.30), 8)   # 1,456 and up



class PinVerdictTest(unittest.TestCase):
    def test_verdicts(self):
        self.assertEqual(R.pin_verdict(0.30, True), "right")      # pinning measured 30% faster, recommended
        self.assertEqual(R.pin_verdict(0.30, False), "wrong")
        self.assertEqual(R.pin_verdict(-0.12, False), "right")    # pinning measured slower, not recommended
        self.assertEqual(R.pin_verdict(-0.12, True), "wrong")
        self.assertEqual(R.pin_verdict(0.02, False), "tie")       # within 5%: either answer
        self.assertEqual(R.pin_verdict(-0.049, True), "tie")



class EndToEndTest(unittest.TestCase):
    def test_a_fake_recommend_against_a_hand_made_report(self):
        # one call: a worker sweep w2 (500/s), w4 (900), w8 (1,600), w12 (2,000), w16 (2,040), and a pinning pair
        # (unpinned 3,000/s, pinned 3,600: +20%). A stand-in pipeplan recommends 10 workers for the sweep's starts
        # and pin_memory=true for the pair: at 10 workers the sweep reads 1,600 + 0.5 x 400 = 1,800, 0.882 of the
        # best (2,040); the knee (within 3% of 2,040: 1,978.8) is w12, so 10 is 2 under it.
        import json
        import subprocess
        import tempfile

        def row(rid, fam, w, rate, pin=True):
            return {"id": rid, "family": fam, "repeat": 0, "knobs": {"num_workers": w, "pin_memory": pin},
                    "measured": {"samples_per_s": rate}, "pipeplan": {"samples_per_s": rate}}
        sweep = [row(f"r1:0{i}-nw-w{w}", "r1:num_workers", w, v)
                 for i, (w, v) in enumerate([(2, 500), (4, 900), (8, 1600), (12, 2000), (16, 2040)])]
        pair = [row("r1:10-pin", "r1:pin_memory_tensor", 8, 3600, True),
                row("r1:11-nopin", "r1:pin_memory_tensor", 8, 3000, False)]
        report = {"meta": {"calls": [{"tag": "r1", "results": "unused"}]}, "rows": sweep + pair,
                  "families": {"r1:num_workers": {"cases": [r["id"] for r in sweep]},
                               "r1:pin_memory_tensor": {"cases": [r["id"] for r in pair]}}}
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "scenarios"))
            with open(os.path.join(tmp, "report.json"), "w") as f:
                json.dump(report, f)
            fake = os.path.join(tmp, "pipeplan")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\n"
                        "case \"$2\" in\n"
                        "  *nopin*) echo '{\"recommended\": {\"set\": {\"loader.pin_memory\": \"true\"}}}' ;;\n"
                        "  *) echo '{\"recommended\": {\"set\": {\"loader.num_workers\": \"10\"}}}' ;;\n"
                        "esac\n")
            os.chmod(fake, 0o755)
            out = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                "recommend_check.py"),
                                  "--report", tmp, "--pipeplan", fake], capture_output=True, text=True, check=True).stdout
        self.assertIn("| r1 | w2 (500/s) | w10 | 0.882 | w12 (2,040/s best) | -2 |", out)
        self.assertIn("| r1 | w4 (900/s) | w10 | 0.882 | w12 (2,040/s best) | -2 |", out)
        self.assertIn("2 starts: measured at the recommendation / best measured: median 0.882", out)
        self.assertIn("| r1 | pin_memory_tensor | 3,000/s | pin_memory=true | +20.0% | right |", out)
        self.assertIn("pin_memory: 1 unpinned starts: 1 right, 0 tie, 0 wrong", out)


if __name__ == "__main__":
    unittest.main()
