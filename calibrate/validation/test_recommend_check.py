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

    def test_a_family_setting_is_the_mean_of_its_repeats(self):
        # a family lists each setting's first case; the table's measured_means average the repeats
        rows = {"r1:00-a": {"id": "r1:00-a", "measured": {"samples_per_s": 90.0}},
                "r1:01-b": {"id": "r1:01-b", "measured": {"samples_per_s": 210.0}}}
        fam = {"cases": ["r1:00-a", "r1:01-b"], "measured_means": [100.0, 200.0]}
        self.assertEqual([r["measured"]["samples_per_s"] for r in R.family_settings(fam, rows)], [100.0, 200.0])
        self.assertEqual(rows["r1:00-a"]["measured"]["samples_per_s"], 90.0)  # the report's rows untouched
        self.assertEqual([r["measured"]["samples_per_s"] for r in R.family_settings({"cases": fam["cases"]}, rows)],
                         [90.0, 210.0])

    def test_knob_verdicts(self):
        means = {("1",): 500.0, ("2",): 700.0, ("4",): 690.0}
        self.assertEqual(R.knob_verdict(means, ("4",)), "right")       # 690 >= 0.95 x 700 = 665
        self.assertEqual(R.knob_verdict(means, ("1",)), "wrong")       # 500 < 665
        self.assertEqual(R.knob_verdict(means, ("8",)), "unmeasured")
        self.assertEqual(R.knob_verdict(means, ("1",), 0.30), "tie")  # a call whose repeats spread 30%: 500 >= 490
        self.assertEqual(R.knob_verdict({("true",): 1000.0, ("false",): 960.0}, ("false",)), "tie")  # 4% apart

    def test_a_setting_as_recommend_writes_it(self):
        keys = R.KNOB_FAMILIES["non_blocking_stream"]
        self.assertEqual(R.setting_of({"non_blocking": True, "copy_stream": "side"}, keys), ("true", "side"))
        # a case without in_order ran PyTorch's default, in order
        self.assertEqual(R.setting_of({"num_workers": 8}, R.KNOB_FAMILIES["in_order_image"]), ("true",))



class SteadierVerdictTest(unittest.TestCase):
    def test_verdicts_by_hand(self):
        # run 54's straggler: p90 step -79% at +19% rate: worth naming; named -> right, not named -> missed
        self.assertEqual(R.steadier_verdict(-0.79, 0.19, True), "right")
        self.assertEqual(R.steadier_verdict(-0.79, 0.19, False), "missed")
        # run 15's tensor pair (r18): -41% at -2.0%, within the tie: worth naming
        self.assertEqual(R.steadier_verdict(-0.41, -0.020, True), "right")
        # no p90 change at -2.9%: not worth it; naming it is a false alarm
        self.assertEqual(R.steadier_verdict(0.0, -0.029, False), "right")
        self.assertEqual(R.steadier_verdict(0.0, -0.029, True), "false alarm")
        # a cut at a clearly lower rate (beyond the 5% tie) is not worth it
        self.assertEqual(R.steadier_verdict(-0.5, -0.12, True), "false alarm")
        # a rate gain beyond the tie is worth naming whatever the p90 did
        self.assertEqual(R.steadier_verdict(0.1, 0.12, True), "right")
        # a 20% cut is under the 25% bar
        self.assertEqual(R.steadier_verdict(-0.2, 0.0, False), "right")


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
        # a prefetch_factor family: pf1 500/s, pf2 700, pf4 690. The stand-in, asked with --knobs
        # loader.prefetch_factor, changes nothing from pf1 (500 / 700 = 0.714: wrong) and says 8 from the others
        # (not measured). The stand-in's patterns carry the dash of the case ids (-pf1), which a temporary
        # directory's random name ([a-z0-9_]) cannot: a bare pf1 once matched one (a flaky failure, fifty-fifth session)
        prefetch = [row(f"r1:2{i}-pf{pf}", "r1:prefetch_factor", 4, v) for i, (pf, v) in enumerate([(1, 500), (2, 700), (4, 690)])]
        for r, pf in zip(prefetch, (1, 2, 4)):
            r["knobs"]["prefetch_factor"] = pf
        report = {"meta": {"calls": [{"tag": "r1", "results": "unused"}]}, "rows": sweep + pair + prefetch,
                  "families": {"r1:num_workers": {"cases": [r["id"] for r in sweep]},
                               "r1:pin_memory_tensor": {"cases": [r["id"] for r in pair]},
                               "r1:prefetch_factor": {"cases": [r["id"] for r in prefetch]}}}
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "scenarios"))
            with open(os.path.join(tmp, "report.json"), "w") as f:
                json.dump(report, f)
            fake = os.path.join(tmp, "pipeplan")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\n"
                        "case \"$2 $*\" in\n"
                        "  *-pf1*--knobs\\ loader.prefetch_factor*) echo '{\"recommended\": {\"set\": {}}}' ;;\n"
                        "  *-pf*--knobs\\ loader.prefetch_factor*) "
                        "echo '{\"recommended\": {\"set\": {\"loader.prefetch_factor\": \"8\"}}}' ;;\n"
                        "  *-pf*) echo 'no --knobs' >&2; exit 1 ;;\n"
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
        self.assertIn("| r1 | prefetch_factor | prefetch_factor=1 | 500/s | no change | 0.714 | wrong |", out)
        self.assertIn("| r1 | prefetch_factor | prefetch_factor=2 | 700/s | prefetch_factor=8 | not measured | unmeasured |", out)
        self.assertIn("other knobs: 3 starts: 0 right, 0 tie, 1 wrong, 2 unmeasured", out)


if __name__ == "__main__":
    unittest.main()
