#!/usr/bin/env python3
"""Unit tests of convert.py and pipeplan_probe.py (plain Python, no torch, no GPU).

    python3 -m unittest discover -s calibrate/validation -p 'test_*.py'
"""
import importlib.util
import argparse
import contextlib
import io
import json
import math
import random
import os
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import convert  # noqa: E402
import pipeplan_probe as probe  # noqa: E402


def make_case(cid, family, thr, step_mean, p90, nw=8, bs=64, load_s=0.004, step_s=0.025,
              wait_s=0.01, repeat=0, also=(), storage="warm", epochs=1, **knobs):
    k = dict(kind="image", batch_size=bs, num_workers=nw, prefetch_factor=2, pin_memory=True,
             persistent_workers=False, non_blocking=True, copy_stream="default", sync_every=1,
             step="mm:25", storage=storage)
    if epochs > 1:
        k.update(epochs=epochs, steps_per_epoch=10)
    k.update(knobs)
    return {
        "id": cid, "family": family, "also_families": list(also), "repeat": repeat, "status": "ok",
        "knobs": k,
        "components": {
            "load": {"mean": load_s, "cv": 0.2, "stderr_rel": 0.01, "n": 300},
            "collate": {"s_per_batch": {"mean": 0.02, "cv": 0.05}, "batch_bytes": {"mean": 64 * 602120.0}},
            "step": {"gpu_s": {"mean": step_s, "cv": 0.01}, "host_s": {"mean": 0.002},
                     "synthetic_loop_step_s": step_s * 1.1},
            "worker_start": {"per_worker_s": 0.01, "intercept_s": 0.02, "points": []},
            "sample_bytes": {"mean": 110000.0, "cv": 0.3},
        },
        "measured": {"throughput_samples_per_s": thr, "step_time_s": {"mean": step_mean, "p50": step_mean, "p90": p90},
                     "data_wait_s": {"mean": wait_s}, "data_wait_fraction": wait_s / step_mean,
                     "skip": 18, "n_measured": 40, "in_situ": {"getitem_wall_s": load_s * 1.5}},
    }




def probe_threads():
    """torch's intra-op threads now (None without torch): what a timed __getitem__ runs with."""
    try:
        import torch
        return torch.get_num_threads()
    except ImportError:
        return None

class StatsTest(unittest.TestCase):
    def test_flagged_edge_summary_by_hand(self):
        def row(err, flag, p80=None, p95=None, meas=None):
            return {"pipeplan": {"step_p90_err": err, "step_p90_on_edge": flag, "step_p80_s": p80, "step_p95_s": p95},
                    "measured": {"step_p90_s": meas}}
        rows = [row(0.40, True, 0.030, 0.150, 0.120),    # measured inside the band
                row(-0.20, True, 0.030, 0.150, 0.160),   # above its p95
                row(0.10, False), row(-0.05, False), row(0.30, False),
                row(None, True), row(0.2, None)]         # no error, no flag: left out
        got = convert.flagged_edge_summary(rows)
        self.assertEqual((got["n"], got["n_other"]), (2, 3))
        self.assertAlmostEqual(got["median_abs_step_p90_err"], 0.30)
        self.assertAlmostEqual(got["other_median_abs_step_p90_err"], 0.10)
        self.assertAlmostEqual(got["share_measured_inside_p80_p95"], 0.5)
        self.assertIsNone(convert.flagged_edge_summary([row(0.1, False)]))

    def test_long_share_sides_by_hand(self):
        def row(measured, simulated, err):
            return {"pipeplan": {"step_p90_err": err, "long_step_fraction": simulated},
                    "measured": {"long_step_share": measured}}
        rows = [row(0.05, 0.08, 0.02),    # both short of a tenth: same side
                row(0.12, 0.14, -0.10),   # both above: same side
                row(0.06, 0.13, 0.45),    # measured short, simulated long: opposite
                row(0.16, 0.09, -0.35),   # measured long, simulated short: opposite
                row(0.04, 0.02, 0.20),    # same side, a miss beyond 15% all the same
                row(None, 0.1, 0.3), row(0.1, None, 0.3)]   # a share missing: left out
        got = convert.long_share_sides(rows)
        self.assertEqual((got["n_cases"], got["n"], got["n_other"]), (5, 3, 2))
        self.assertAlmostEqual(got["median_abs_step_p90_err"], 0.10)         # 0.02, 0.10, 0.20
        self.assertAlmostEqual(got["other_median_abs_step_p90_err"], 0.40)   # 0.45, 0.35
        self.assertAlmostEqual(got["measured_median"], 0.06)
        self.assertAlmostEqual(got["simulated_median"], 0.09)
        # three misses beyond 15% (0.45, 0.35, 0.20), two of them on opposite sides
        self.assertAlmostEqual(got["other_side_p90_err_share_beyond_15"], 2 / 3)
        self.assertIsNone(convert.long_share_sides([row(None, 0.1, 0.3)]))

    def test_seeds_merge_the_edge_flag_by_majority_and_average_the_band(self):
        def res(p80, p95, flag):
            return {"throughput": {"samples_per_s": 100.0}, "bottleneck": {"stage": "workers"},
                    "step_time_s": {"mean": 0.05, "p80": p80, "p90": 0.1, "p95": p95},
                    "long_step_fraction": 0.1, "step_p90_on_edge": flag}
        merged = convert.combine_replications([res(0.03, 0.15, True), res(0.05, 0.17, False), res(0.04, 0.16, True)])
        self.assertTrue(merged["step_p90_on_edge"])
        self.assertAlmostEqual(merged["step_time_s"]["p80"], 0.04)
        self.assertAlmostEqual(merged["step_time_s"]["p95"], 0.16)
        self.assertFalse(convert.combine_replications([res(0.03, 0.15, True), res(0.05, 0.17, False),
                                              res(0.04, 0.16, False)])["step_p90_on_edge"])

    def test_percentile_by_hand(self):
        xs = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
        self.assertAlmostEqual(convert.percentile(xs, 0.5), 5.5)
        # pos = 0.9 * 9 = 8.1 -> 9 + 0.1 * (10 - 9)
        self.assertAlmostEqual(convert.percentile(xs, 0.9), 9.1)
        self.assertAlmostEqual(convert.percentile([3.0], 0.9), 3.0)
        self.assertIsNone(convert.percentile([], 0.5))
        self.assertAlmostEqual(convert.median([0.02, 0.5, 0.1]), 0.1)

    def test_rel_err(self):
        self.assertAlmostEqual(convert.rel_err(110, 100), 0.10)
        self.assertAlmostEqual(convert.rel_err(90, 100), -0.10)
        self.assertIsNone(convert.rel_err(None, 100))
        self.assertIsNone(convert.rel_err(1, 0))

    def test_kendall_perfect_and_reversed(self):
        self.assertAlmostEqual(convert.kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]), 1.0)
        self.assertAlmostEqual(convert.kendall_tau_b([1, 2, 3, 4], [40, 30, 20, 10]), -1.0)

    def test_kendall_by_hand(self):
        # x = 1,2,3,4 ; y = 1,3,2,4: pairs (6): one discordant (2,3) -> (5-1)/6
        self.assertAlmostEqual(convert.kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]), 4 / 6)

    def test_kendall_ties_b(self):
        # x = 1,2,2 ; y = 1,2,3: pairs: (0,1) C, (0,2) C, (1,2) tie in x only
        # tau_b = (2 - 0) / sqrt((2 + 0 + 1) * (2 + 0 + 0)) = 2 / sqrt(6)
        self.assertAlmostEqual(convert.kendall_tau_b([1, 2, 2], [1, 2, 3]), 2 / math.sqrt(6))

    def test_tau_family_counts_by_hand(self):
        # five families: raw taus 1, 0.93, 0.33, -1 and one with no tau; within noise only three are rankable
        got = convert.tau_family_counts([1.0, 0.93, 0.33, -1.0, None], [1.0, 0.71, 0.9])
        self.assertEqual(got, {"n": 5, "raw_ok": 2, "rankable": 3, "rankable_ok": 2})

    def test_kendall_degenerate(self):
        self.assertIsNone(convert.kendall_tau_b([1], [2]))
        self.assertIsNone(convert.kendall_tau_b([1, 1], [2, 2]))
        # a constant predictor carries no ranking: 0, not undefined
        self.assertEqual(convert.kendall_tau_b([1, 2, 3], [5, 5, 5]), 0.0)
        with self.assertRaises(ValueError):
            convert.kendall_tau_b([1, 2], [1])


class ReadCallJsonTest(unittest.TestCase):
    def test_a_missing_or_broken_file_is_one_line_and_exit_code_2(self):
        import contextlib
        import io
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "cases.json"), "w") as f:
                json.dump({"cases": []}, f)
            self.assertEqual(convert.read_call_json(d, "cases.json"), {"cases": []})
            for setup, expect in ((None, "profile.json: not found"), ('{"cpu":', "profile.json: JSONDecodeError")):
                if setup is not None:
                    with open(os.path.join(d, "profile.json"), "w") as f:
                        f.write(setup)
                err = io.StringIO()
                with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
                    convert.load_calls([d])
                self.assertEqual(cm.exception.code, 2)
                self.assertIn(expect, err.getvalue())
                self.assertEqual(err.getvalue().count("\n"), 1)


class MainProfileTest(unittest.TestCase):
    def test_a_broken_profile_plain_or_xz_is_one_line_exit_2_and_no_output(self):
        import lzma
        with tempfile.TemporaryDirectory() as d:
            cases = os.path.join(d, "cases.json")
            with open(cases, "w") as f:
                json.dump({"cases": []}, f)
            plain, packed = os.path.join(d, "profile.json"), os.path.join(d, "packed", "profile.json")
            with open(plain, "w") as f:
                f.write('{"cpu":')
            os.makedirs(os.path.dirname(packed))
            with lzma.open(packed + ".xz", "wt") as f:
                f.write('{"cpu":')
            for given in (plain, packed):
                out = os.path.join(d, "out-" + os.path.basename(os.path.dirname(given)))
                p = subprocess.run([sys.executable, os.path.join(HERE, "convert.py"), "--cases", cases, "--profile",
                                    given, "--no-simulate", "--out-dir", out], capture_output=True, text=True)
                self.assertEqual(p.returncode, 2)
                self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
                self.assertIn(f"cannot read profile {given}: JSONDecodeError", p.stderr)
                self.assertFalse(os.path.exists(out))                   # nothing written


class ReceiveGilShareTest(unittest.TestCase):
    def test_the_share_from_the_gil_probe_by_hand(self):
        # a GIL-wanting thread waited 0.9 ms a batch, 0.2 of it on the run queue; the loop's own next() 0.1 ms:
        # the receive held 0.6 ms of its 1.5 ms fixed cost
        probe = {"held_s_per_batch": 0.9e-3, "held_less_runqueue_s_per_batch": 0.7e-3, "main_cpu_s_per_batch": 0.1e-3}
        self.assertAlmostEqual(convert.receive_gil_share_from_probe(probe, 1.5e-3), 0.4)
        # no run-queue figure: the raw wait
        probe["held_less_runqueue_s_per_batch"] = None
        self.assertAlmostEqual(convert.receive_gil_share_from_probe(probe, 1.5e-3), 0.8 / 1.5)
        # clamped to [0, 1]
        self.assertEqual(convert.receive_gil_share_from_probe(probe, 0.5e-3), 1.0)
        self.assertEqual(convert.receive_gil_share_from_probe(dict(probe, main_cpu_s_per_batch=2e-3), 1.5e-3), 0.0)
        # nothing to go on
        self.assertIsNone(convert.receive_gil_share_from_probe(None, 1.5e-3))
        self.assertIsNone(convert.receive_gil_share_from_probe({"error": "x"}, 1.5e-3))
        self.assertIsNone(convert.receive_gil_share_from_probe(probe, 0.0))


class ReceiveGilSecondsTest(unittest.TestCase):
    def test_the_hold_from_the_gil_probe_by_hand(self):
        # waited 0.9 ms a batch, 0.2 of it on the run queue, the loop's own CPU 0.1 ms: 0.6 ms held
        probe = {"held_s_per_batch": 0.9e-3, "held_less_runqueue_s_per_batch": 0.7e-3, "main_cpu_s_per_batch": 0.1e-3}
        self.assertAlmostEqual(convert.receive_gil_s_from_probe(probe), 0.6e-3)
        probe["held_less_runqueue_s_per_batch"] = None                     # the raw wait
        self.assertAlmostEqual(convert.receive_gil_s_from_probe(probe), 0.8e-3)
        self.assertEqual(convert.receive_gil_s_from_probe(dict(probe, main_cpu_s_per_batch=2e-3)), 0.0)
        self.assertIsNone(convert.receive_gil_s_from_probe(None))
        self.assertIsNone(convert.receive_gil_s_from_probe({"error": "x"}))


class ProbeWanderTest(unittest.TestCase):
    def test_probe_wander_from_the_busy_spread_by_hand(self):
        c = make_case("w8", "num_workers", 1500, 0.04, 0.05, nw=8, bs=64)
        self.assertIsNone(convert.probe_wander(c))              # runs before 12: no figure
        c["components"]["load"]["cv"] = 0.5
        # batch busy 0.05 s, getitem 0.4 ms: the samples give a batch sqrt(64) x 0.4 ms x 0.5 = 1.6 ms,
        # cv 0.032; the probe's 0.10 less it: sqrt(0.01 - 0.032^2) = 0.09478; no correlation time
        c["components"]["probe"] = {"workers": 8, "batches": 100, "getitem_wall_s": 0.0004,
                                    "batch_busy_s": 0.05, "batch_busy_cv": 0.10}
        w = convert.probe_wander(c)
        self.assertAlmostEqual(w["cv"], math.sqrt(0.01 - 0.032 ** 2))
        self.assertIsNone(w["correlation_s"])
        # the probe after: 0.15 -> sqrt(0.0225 - 0.001024); the mean of the two
        c["components"]["probe_after"] = dict(c["components"]["probe"], batch_busy_cv=0.15)
        self.assertAlmostEqual(convert.probe_wander(c)["cv"],
                               (math.sqrt(0.01 - 0.001024) + math.sqrt(0.0225 - 0.001024)) / 2)
        # a spread below the samples' own gives 0, not an imaginary number; a failed probe is left out
        c["components"]["probe_after"] = {"error": "RuntimeError: x"}
        c["components"]["probe"]["batch_busy_cv"] = 0.02
        self.assertEqual(convert.probe_wander(c)["cv"], 0.0)

    def test_probe_wander_from_the_workers_timeline_by_hand(self):
        # the timeline's reading is preferred: cv 0.12 over batches of 0.05 s (the samples' 0.032 off:
        # sqrt(0.0144 - 0.001024)) and its correlation time; an absurd time (a probe too short to
        # see the speed change) is left out of the mean
        c = make_case("w8", "num_workers", 1500, 0.04, 0.05, nw=8, bs=64)
        c["components"]["load"]["cv"] = 0.5
        c["components"]["probe"] = {"workers": 8, "batches": 100, "getitem_wall_s": 0.0004, "batch_busy_s": 0.05,
                                    "batch_busy_cv": 0.30,
                                    "wander": {"cv": 0.12, "batch_s": 0.05, "correlation_s": 0.2}}
        c["components"]["probe_after"] = dict(c["components"]["probe"],
                                              wander={"cv": 0.12, "batch_s": 0.05, "correlation_s": 1e6})
        w = convert.probe_wander(c)
        self.assertAlmostEqual(w["cv"], math.sqrt(0.0144 - 0.001024))
        self.assertAlmostEqual(w["correlation_s"], 0.2)
        self.assertAlmostEqual(w["correlation_batches"], 0.2 / 0.05)   # 4 batches of 0.05 s

    def test_two_part_batch_wander_by_hand(self):
        # cv 0.1 (log variance ln 1.01), lag-one 0.7: the slow part 0.45 of it at 0.9, the fast part the rest at
        # (0.7 - 0.405) / 0.55 = 0.5364; the two variances add back to the whole
        got = convert.two_part_batch_wander(0.1, 0.7)
        var = math.log1p(0.01)
        self.assertAlmostEqual(math.log1p(got["core_speed_cv"] ** 2), 0.55 * var)
        self.assertAlmostEqual(math.log1p(got["core_speed_slow_cv"] ** 2), 0.45 * var)
        self.assertAlmostEqual(math.exp(-1 / got["core_speed_correlation_batches"]), 0.295 / 0.55)
        self.assertAlmostEqual(math.exp(-1 / got["core_speed_slow_correlation_batches"]), 0.9)
        # a lag-one below the slow part's own contribution leaves the fast part memoryless
        self.assertEqual(convert.two_part_batch_wander(0.1, 0.3)["core_speed_correlation_batches"], 1e-6)


class ProbeWanderEndToEndTest(unittest.TestCase):
    def test_the_case_profile_carries_the_probes_wander(self):
        with tempfile.TemporaryDirectory() as d:
            fake = fake_pipeplan(d)
            c = make_case("w8", "num_workers", 1800.0, 64 / 1800, 0.04, nw=8)
            c["components"]["load"]["cv"] = 0.0       # no sample spread to take off: the probe's cv as is
            c["components"]["probe"] = {"workers": 8, "batches": 40, "getitem_wall_s": 0.004, "collate_wall_s": 0.02,
                                        "batch_busy_s": 0.28, "batch_busy_cv": 0.12,
                                        "wander": {"cv": 0.12, "batch_s": 0.28, "correlation_s": 0.5}}
            plain = make_case("w4", "num_workers", 900.0, 64 / 900, 0.08, nw=4)
            cases_path, prof_path = os.path.join(d, "cases.json"), os.path.join(d, "profile.json")
            with open(cases_path, "w") as f:
                json.dump({"cases": [c, plain], "machine": {"cpu_cores": 16}, "mode": "full", "components": {}}, f)
            with open(prof_path, "w") as f:
                json.dump({"cpu": {"core_speed_cv": 0.3, "core_speed_correlation_s": 0.7}}, f)
            for mode, expect in (("probe", 0.12), ("profile", None)):
                out = os.path.join(d, "rep-" + mode)
                p = subprocess.run([sys.executable, os.path.join(HERE, "convert.py"), "--cases", cases_path,
                                    "--profile", prof_path, "--pipeplan", fake, "--out-dir", out, "--seeds", "1",
                                    "--wander", mode, "--receive-gil-s", "off"], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
                written = os.path.join(out, "scenarios", "w8.profile.json")
                if expect is None:
                    self.assertFalse(os.path.exists(written))   # the run's profile as it is
                else:
                    prof = json.load(open(written))
                    self.assertAlmostEqual(prof["cpu"]["core_speed_cv"], expect)
                    self.assertEqual(prof["cpu"]["core_speed_correlation_s"], 0.5)   # the probe's
                self.assertFalse(os.path.exists(os.path.join(out, "scenarios", "w4.profile.json")))


class BackToBackFactorTest(unittest.TestCase):
    def test_the_ratio_of_the_two_host_timings(self):
        step = {"host_s": {"mean": 0.0014}, "host_after_launch_s": {"mean": 0.00098}}
        self.assertAlmostEqual(convert.back_to_back_host_factor(step), 0.7)
        self.assertIsNone(convert.back_to_back_host_factor({"host_s": {"mean": 0.0014}}))   # not timed (before run 63)
        self.assertIsNone(convert.back_to_back_host_factor({"host_s": {"mean": 0.0014},
                                                            "host_after_launch_s": None}))
        self.assertEqual(convert.back_to_back_host_factor({"host_s": {"mean": 0.001},
                                                           "host_after_launch_s": {"mean": 0.01}}), 2.0)  # clamped

    def test_the_option(self):
        step = {"host_s": {"mean": 0.0014}, "host_after_launch_s": {"mean": 0.00098}}
        self.assertAlmostEqual(convert.back_to_back_factor_option("measured", step), 0.7)
        self.assertIsNone(convert.back_to_back_factor_option("off", step))
        self.assertEqual(convert.back_to_back_factor_option("0.69", {}), 0.69)


class BackToBackEndToEndTest(unittest.TestCase):
    def test_a_case_whose_step_timed_it_gets_the_ratio(self):
        with tempfile.TemporaryDirectory() as d:
            fake = fake_pipeplan(d)
            timed = make_case("timed", "sync_every", 3500.0, 64 / 3500, 0.03, sync_every=0)
            timed["components"]["step"]["host_after_launch_s"] = {"mean": 0.0014}   # over host_s 0.002: 0.7
            plain = make_case("plain", "sync_every", 3500.0, 64 / 3500, 0.03, sync_every=0)
            cases_path, prof_path = os.path.join(d, "cases.json"), os.path.join(d, "profile.json")
            with open(cases_path, "w") as f:
                json.dump({"cases": [timed, plain], "machine": {"cpu_cores": 16}, "mode": "full", "components": {}}, f)
            with open(prof_path, "w") as f:
                json.dump({}, f)
            for opt, expect_timed, expect_plain in (([], 0.7, None), (["--back-to-back", "off"], None, None),
                                                    (["--back-to-back", "0.5"], 0.5, 0.5)):
                out = os.path.join(d, "rep" + str(len(os.listdir(d))))
                p = subprocess.run([sys.executable, os.path.join(HERE, "convert.py"), "--cases", cases_path,
                                    "--profile", prof_path, "--pipeplan", fake, "--out-dir", out, "--seeds", "1",
                                    *opt], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
                for cid, expect in (("timed", expect_timed), ("plain", expect_plain)):
                    with open(os.path.join(out, "scenarios", cid + ".json")) as f:
                        got = json.load(f)["training"].get("back_to_back_host_factor")
                    if expect is None:
                        self.assertIsNone(got, (opt, cid))
                    else:
                        self.assertAlmostEqual(got, expect, msg=str((opt, cid)))


class ReceiveGilForMachineTest(unittest.TestCase):
    def test_the_default_only_on_the_checked_hosts_given_values_everywhere(self):
        h200, other = {"gpu": "NVIDIA H200"}, {"gpu": "NVIDIA B200"}
        self.assertEqual(convert.receive_gil_for_machine("0.00048", False, h200), "0.00048")
        self.assertEqual(convert.receive_gil_for_machine("0.00048", False, {"gpu": "NVIDIA H100 80GB HBM3"}),
                         "0.00048")
        self.assertEqual(convert.receive_gil_for_machine("0.00048", False, other), "off")
        self.assertEqual(convert.receive_gil_for_machine("0.00048", False, {}), "off")
        self.assertEqual(convert.receive_gil_for_machine("0.0003", True, other), "0.0003")
        self.assertEqual(convert.receive_gil_for_machine("off", False, h200), "off")


class ReceiveGilEndToEndTest(unittest.TestCase):
    def test_a_pin_threads_case_gets_the_machines_hold_unless_off(self):
        with tempfile.TemporaryDirectory() as d:
            fake = fake_pipeplan(d)
            cases = [make_case("pin", "pin_memory_image", 1500.0, 64 / 1500, 0.05, nw=8),
                     make_case("nopin", "pin_memory_image", 1400.0, 64 / 1400, 0.05, nw=8, pin_memory=False),
                     make_case("inline", "num_workers", 200.0, 64 / 200, 0.4, nw=0)]
            cases_path, prof_path = os.path.join(d, "cases.json"), os.path.join(d, "profile.json")
            with open(cases_path, "w") as f:
                json.dump({"cases": cases, "machine": {"cpu_cores": 16, "gpu": "NVIDIA H200"}, "mode": "full",
                           "components": {}}, f)
            other_path = os.path.join(d, "other.json")          # another machine: the default does not apply
            with open(other_path, "w") as f:
                json.dump({"cases": cases, "machine": {"cpu_cores": 64, "gpu": "NVIDIA B200"}, "mode": "full",
                           "components": {}}, f)
            with open(prof_path, "w") as f:
                json.dump({"ipc": {"receive_s_per_batch": 0.002}}, f)
            for opt, expect in (([], convert.H200_RECEIVE_GIL_S), (["--receive-gil-s", "0.0003"], 0.0003),
                                (["--receive-gil-s", "measured"], convert.H200_RECEIVE_GIL_S),  # no probe: default
                                (["--receive-gil-s", "off"], None), (["--receive-gil-share", "0.5"], None),
                                (["--cases-other"], None), (["--cases-other", "--receive-gil-s", "0.0003"], 0.0003)):
                paths = other_path if opt[:1] == ["--cases-other"] else cases_path
                opt = [o for o in opt if o != "--cases-other"]
                out = os.path.join(d, "rep" + str(len(os.listdir(d))))
                p = subprocess.run([sys.executable, os.path.join(HERE, "convert.py"), "--cases", paths,
                                    "--profile", prof_path, "--pipeplan", fake, "--out-dir", out, "--seeds", "1",
                                    "--wander", "profile", *opt], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
                written = os.path.join(out, "scenarios", "pin.profile.json")
                got = json.load(open(written))["ipc"].get("receive_gil_s_per_batch") if os.path.exists(written) else None
                self.assertEqual(got, expect, opt)
                if expect is None:  # the share, written out: the simulator's reader would give neither key 0.48 ms
                    share = json.load(open(written))["ipc"].get("receive_gil_share")
                    self.assertEqual(share, 0.5 if "--receive-gil-share" in opt else 1.0, opt)
                # only a loader with a pin thread receives in one
                for other in ("nopin", "inline"):
                    path = os.path.join(out, "scenarios", other + ".profile.json")
                    if os.path.exists(path):
                        self.assertNotIn("receive_gil_s_per_batch", json.load(open(path)).get("ipc") or {})
            # a call whose harness ran the GIL probe: measured takes its figure (0.7 - 0.1 ms)
            probed = json.loads(json.dumps(cases[0]))
            probed["components"]["transport"] = {"gil_probe": {"held_s_per_batch": 0.9e-3,
                                                               "held_less_runqueue_s_per_batch": 0.7e-3,
                                                               "main_cpu_s_per_batch": 0.1e-3}}
            probed_path = os.path.join(d, "probed.json")
            with open(probed_path, "w") as f:
                json.dump({"cases": [probed], "machine": {"cpu_cores": 16, "gpu": "NVIDIA H200"}, "mode": "full",
                           "components": {}}, f)
            out = os.path.join(d, "rep-probed")
            p = subprocess.run([sys.executable, os.path.join(HERE, "convert.py"), "--cases", probed_path,
                                "--profile", prof_path, "--pipeplan", fake, "--out-dir", out, "--seeds", "1",
                                "--wander", "profile", "--receive-gil-s", "measured"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(os.path.join(out, "scenarios", "pin.profile.json")) as f:
                self.assertAlmostEqual(json.load(f)["ipc"]["receive_gil_s_per_batch"], 0.6e-3)
        p = subprocess.run([sys.executable, os.path.join(HERE, "convert.py"), "--cases", "x", "--receive-gil-s",
                            "-1"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--receive-gil-s", p.stderr)
        for bad in ("0", "fast"):
            p = subprocess.run([sys.executable, os.path.join(HERE, "convert.py"), "--cases", "x", "--back-to-back",
                                bad], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("--back-to-back", p.stderr)


class SpreadTest(unittest.TestCase):
    def test_spread_by_hand(self):
        # 18.8, 20.6, 37.4 ms: (37.4 - 18.8) / 25.6
        self.assertAlmostEqual(convert.spread_of([18.8, 20.6, 37.4]), 18.6 / 25.6)
        self.assertIsNone(convert.spread_of([1.0]))
        self.assertIsNone(convert.spread_of([0.0, 0.0]))


class StepAloneTest(unittest.TestCase):
    def test_step_alone_over_loop_by_hand(self):
        def row(loop, busy, pin=True, sync=1, host=0.002):
            return {"knobs": {"sync_every": sync, "pin_memory": pin},
                    "measured": {"loop_in_situ_s": loop, "gpu_busy_fraction": busy},
                    "components": {"step_s": 0.030, "host_s_per_step": host}}
        rows = [row(0.025, 0.2), row(0.026, 0.4), row(0.030, 0.95),
                row(0.015, 0.3, pin=False),          # the pageable copy is in the loop: left out
                row(0.025, 0.3, sync=0),             # no sync: the loop is not the step
                row(0.025, 0.3, host=0.040)]         # host-bound step: left out
        rested = convert.step_alone_over_loop(rows, 0.0, 0.5)
        self.assertEqual(rested["n"], 2)
        self.assertAlmostEqual(rested["median"], 0.5 * (0.030 / 0.025 + 0.030 / 0.026))
        busy = convert.step_alone_over_loop(rows, 0.9, 1.01)
        self.assertEqual(busy["n"], 1)
        self.assertAlmostEqual(busy["median"], 1.0)


    def test_p90_halves_summary_splits_on_the_ground_truths_precision(self):
        def row(diff, err):
            return {"measured": {"p90_step_halves_diff": diff}, "pipeplan": {"step_p90_err": err}}
        rows = [row(0.02, 0.05), row(0.04, -0.10), row(0.20, 0.40), row(0.60, -0.30),
                row(None, 0.9),                               # no timeline: left out
                {"measured": {"p90_step_halves_diff": 0.01}, "pipeplan": None}]   # failed prediction: left out
        s = convert.p90_halves_summary(rows)
        self.assertEqual((s["n"], s["n_precise"], s["n_loose"]), (4, 2, 2))
        self.assertAlmostEqual(s["median_rel_diff"], 0.12)                 # (0.04 + 0.20) / 2
        self.assertAlmostEqual(s["precise_median_abs_step_p90_err"], 0.075)
        self.assertAlmostEqual(s["loose_median_abs_step_p90_err"], 0.35)
        self.assertIsNone(convert.p90_halves_summary([row(None, 0.1)]))

    def test_p90_halves_come_from_the_timeline_else_from_the_harness_halves(self):
        # a timeline of 40 steps of 10 ms then 40 of 20 ms after a skip of 2: p90s 10 and 20 ms -> 10 / 15
        starts = [0.0]
        for st in [0.010] * 2 + [0.010] * 40 + [0.020] * 40:
            starts.append(starts[-1] + st)
        halves = {"first_p90_s": 0.040, "second_p90_s": 0.060, "rel_diff": 0.4, "steps_per_half": 500}
        with_tl = {"knobs": {}, "measured": {"timeline": {"skip": 2, "main": {"next_start": starts}},
                                             "step_p90_halves": halves}}
        self.assertAlmostEqual(convert.p90_step_halves_diff(with_tl), 0.010 / 0.015)
        # no timeline (run 75's 60 s windows): the harness's own halves of the GPU-side steps
        self.assertAlmostEqual(convert.p90_step_halves_diff({"knobs": {}, "measured": {"step_p90_halves": halves}}),
                               0.4)
        # a window too short for halves (the harness wrote null) or a call before the harness kept them: None
        self.assertIsNone(convert.p90_step_halves_diff({"knobs": {}, "measured": {"step_p90_halves": None}}))
        self.assertIsNone(convert.p90_step_halves_diff({"knobs": {}, "measured": {}}))

    def test_short_window_summary_splits_on_the_measured_steps(self):
        def row(n, err):
            return {"measured": {"n_measured": n}, "pipeplan": {"step_p90_err": err}}
        rows = [row(12, 1.5), row(40, -0.2), row(59, 0.1), row(60, 0.05), row(400, -0.15),
                row(None, 0.9),                                   # no step count: left out
                {"measured": {"n_measured": 30}, "pipeplan": None}]   # failed prediction: left out
        s = convert.short_window_summary(rows)
        self.assertEqual((s["steps"], s["n_short"], s["n_rest"]), (60, 3, 2))   # 60 steps is not short
        self.assertAlmostEqual(s["short_median_abs_step_p90_err"], 0.2)          # of 1.5, 0.2, 0.1
        self.assertAlmostEqual(s["rest_median_abs_step_p90_err"], 0.10)          # (0.05 + 0.15) / 2
        self.assertIsNone(convert.short_window_summary([row(None, 0.1)]))

    def test_window_length_summary_bins_the_p90_step_error_by_seconds(self):
        def row(n, step_s, err):
            return {"measured": {"n_measured": n, "step_mean_s": step_s}, "pipeplan": {"step_p90_err": err}}
        # windows of 2, 4.8, 6, 25 and 40 s: two under 5 s, one of 5-12, none of 12-20, two from 20
        rows = [row(100, 0.02, 0.5), row(120, 0.04, -0.1), row(200, 0.03, 0.2), row(500, 0.05, 0.3), row(800, 0.05, -0.1),
                {"measured": {"n_measured": 50}, "pipeplan": {"step_p90_err": 0.9}}]   # no mean step: left out
        bins = convert.window_length_summary(rows)
        self.assertEqual([b["n"] for b in bins], [2, 1, 0, 2])
        self.assertEqual((bins[0]["from_s"], bins[0]["to_s"], bins[3]["to_s"]), (0.0, 5.0, None))
        self.assertAlmostEqual(bins[0]["median_abs_step_p90_err"], 0.3)    # (0.5 + 0.1) / 2
        self.assertAlmostEqual(bins[3]["median_abs_step_p90_err"], 0.2)    # (0.3 + 0.1) / 2
        self.assertIsNone(bins[2]["median_abs_step_p90_err"])
        self.assertIsNone(convert.window_length_summary([]))

class DecodeThreadsCommonShareTest(unittest.TestCase):
    def test_threads_that_slow_together_share_all_and_lone_ones_none(self):
        pre = "calibrate: decode: wander chunk seconds paused, thread "
        rng = random.Random(3)
        walk = [0.05 * math.exp(0.2 * math.sin(k / 7.0)) for k in range(200)]
        together = "\n".join(pre + f"{t}: " + " ".join(f"{v:.5f}" for v in walk) for t in range(4))
        self.assertAlmostEqual(convert.decode_threads_common_share("noise\n" + together), 1.0, delta=0.02)
        alone = "\n".join(pre + f"{t}: " + " ".join(f"{0.05 * math.exp(rng.gauss(0, 0.1)):.5f}" for _ in range(200))
                          for t in range(4))
        self.assertAlmostEqual(convert.decode_threads_common_share(alone), 0.0, delta=0.1)
        self.assertIsNone(convert.decode_threads_common_share(pre + "0: 0.05 0.05 0.05"))   # one thread: none
        # the unpaused set ("wander chunk seconds, thread N") is not read
        self.assertIsNone(convert.decode_threads_common_share(together.replace(" paused", "")))

    def test_a_bad_share_option_is_refused(self):
        with self.assertRaises(SystemExit):
            convert.main(["--cases", "x.json", "--wander-common-share", "1.5"])


class RulesTest(unittest.TestCase):
    def test_measured_bottleneck(self):
        self.assertEqual(convert.measured_bottleneck(0.025, 0.026, 0.0)[0], "compute")   # 96% busy
        # T = 0.05, G = 0.025, idle 0.025; wait 0.02 >= 0.0125 -> input
        self.assertEqual(convert.measured_bottleneck(0.025, 0.05, 0.02)[0], "input")
        self.assertEqual(convert.measured_bottleneck(0.025, 0.05, 0.005)[0], "host")
        self.assertAlmostEqual(convert.measured_bottleneck(0.025, 0.05, 0.0)[1], 0.5)

    def test_stage_class(self):
        self.assertEqual(convert.stage_class("gpu_compute"), "compute")
        self.assertEqual(convert.stage_class("workers"), "input")
        self.assertEqual(convert.stage_class("pin_thread"), "input")
        self.assertEqual(convert.stage_class("h2d_copy"), "host")
        self.assertEqual(convert.stage_class("main_loop"), "host")
        self.assertEqual(convert.stage_class("main_inline_load"), "input")
        self.assertEqual(convert.stage_class("storage"), "input")
        self.assertIsNone(convert.stage_class("zzz"))
        self.assertIsNone(convert.stage_class(None))

    def test_by_hand(self):
        # 8 workers at 4 ms: 2000/s; GPU 64 / 25 ms = 2560/s -> 2000
        self.assertAlmostEqual(convert.by_hand(8, 64, 0.004, 0.025), 2000.0)
        self.assertAlmostEqual(convert.by_hand(16, 64, 0.004, 0.025), 2560.0)
        # inline: 64 / (64 * 0.004 + 0.025) = 64 / 0.281
        self.assertAlmostEqual(convert.by_hand(0, 64, 0.004, 0.025), 64 / 0.281)

    def test_launch_tail_by_hand(self):
        step = {"gpu_s": {"mean": 0.0165}, "host_s": {"mean": 0.0199}, "synthetic_loop_step_s": 0.0214}
        # the host probes around the case: (20.0 - 19.0) and (23.0 - 22.6) ms, both host-bound: 0.7 ms
        comp = {"host_probe": {"host_s": {"mean": 0.019}, "loop_step_s": 0.020},
                "host_probe_after": {"host_s": {"mean": 0.0226}, "loop_step_s": 0.023}}
        self.assertAlmostEqual(convert.launch_tail_s(comp, step), 0.0007)
        # a GPU-bound probe (launches 12 ms under a 16.5 ms GPU step) says nothing of the tail: the other alone
        comp["host_probe"] = {"host_s": {"mean": 0.012}, "loop_step_s": 0.0168}
        self.assertAlmostEqual(convert.launch_tail_s(comp, step), 0.0004)
        # no probes: host_under_load's alone windows, the same loop's wall and launches
        hul = {"host_under_load": {"alone_host_s": {"mean": 0.018}, "alone_loop_step_s": 0.0195,
                                   "alone_after_host_s": {"mean": 0.020}, "alone_after_loop_step_s": 0.0205}}
        self.assertAlmostEqual(convert.launch_tail_s(hul, step), 0.001)
        # neither: none (the step component's loop and launches come from different loops)
        self.assertEqual(convert.launch_tail_s({}, step), 0.0)
        c = make_case("h", "step", 2000, 0.032, 0.04)
        c["components"]["step"] = dict(step, step_s=0.0165)
        c["components"].update(hul)
        self.assertAlmostEqual(convert.scenario_for(c, {"cpu_cores": 16})["training"]["launch_tail_s"], 0.001)
        self.assertNotIn("launch_tail_s", convert.scenario_for(c, {"cpu_cores": 16}, launch_tail="off")["training"])

    def test_step_time_prefers_sustained(self):
        st = {"gpu_s": {"mean": 0.025, "cv": 0.01}, "step_s": 0.028, "step_cv": 0.02}
        self.assertEqual(convert.step_time(st), (0.028, 0.02))
        self.assertEqual(convert.step_time({"gpu_s": {"mean": 0.025, "cv": 0.01}}), (0.025, 0.01))


def pin_probe(window_s, batches, cpu, busy_workers, workers=8, pin=True):
    return {"workers": workers, "pin_memory": pin, "window_s": window_s, "batches": batches,
            "pin_thread_cpu_s_per_batch": cpu, "busy_workers": busy_workers}


class MainNextTest(unittest.TestCase):
    def test_the_pinned_probes_main_thread_cpu_per_batch(self):
        # the probe before: 0.20 ms of the loop thread's CPU a batch, the one after 0.30 ms: 0.25 ms
        before, after = pin_probe(1.5, 75, 0.0192, 3.9), pin_probe(1.5, 75, 0.0192, 3.9)
        before["main_thread_cpu_s_per_batch"], after["main_thread_cpu_s_per_batch"] = 0.0002, 0.0003
        self.assertAlmostEqual(convert.main_next_s({"probe": before, "probe_after": after}), 0.00025)
        # an unpinned probe's main thread also receives the batch (its next() is the receive): left out; so is an
        # inline (0-worker) one, whose main thread loads; none left: None
        unpinned = dict(after, pin_memory=False)
        self.assertAlmostEqual(convert.main_next_s({"probe": before, "probe_after": unpinned}), 0.0002)
        self.assertIsNone(convert.main_next_s({"probe": unpinned, "probe_after": dict(before, workers=0)}))
        self.assertIsNone(convert.main_next_s({}))

    def test_the_scenario_carries_it_for_pinned_cases_when_asked(self):
        c = make_case("p", "pin_memory_tensor", 3200, 0.02, 0.022)
        c["components"]["probe"] = dict(pin_probe(1.5, 75, 0.0192, 3.9), main_thread_cpu_s_per_batch=0.00021)
        # on by default since run 42 (validation-runs.md run 42, finding 8)
        s = convert.scenario_for(c, {"cpu_cores": 16})
        self.assertAlmostEqual(s["loader"]["main_next_s_per_batch"], 0.00021)
        self.assertNotIn("main_next_s_per_batch",
                         convert.scenario_for(c, {"cpu_cores": 16}, main_next="off")["loader"])
        c["knobs"]["pin_memory"] = False
        self.assertNotIn("main_next_s_per_batch",
                         convert.scenario_for(c, {"cpu_cores": 16}, main_next="probes")["loader"])


class CopyCallTest(unittest.TestCase):
    def probe_main_loop(self, nb=True, calls=(0.0002, 0.0003)):
        windows = [{"main_loop": "drop", "copy_call_s": None}]
        windows += [{"main_loop": "copy", "copy_call_s": s} for s in calls]
        return {"probe_main_loop": {"non_blocking": nb, "windows": windows}}

    def test_the_mean_of_the_copy_windows_medians(self):
        # two copy windows, 0.20 and 0.30 ms a call: 0.25 ms; the drop windows make no call
        self.assertAlmostEqual(convert.copy_call_s(self.probe_main_loop()), 0.00025)
        # a blocking probe's call also waits for the copy, which the model has apart: none; nor from a failed
        # probe, an older call without the figure, or no probe at all
        self.assertIsNone(convert.copy_call_s(self.probe_main_loop(nb=False)))
        self.assertIsNone(convert.copy_call_s({"probe_main_loop": {"error": "RuntimeError: x", "non_blocking": True}}))
        self.assertIsNone(convert.copy_call_s(self.probe_main_loop(calls=(None, None))))
        self.assertIsNone(convert.copy_call_s({}))

    def test_the_scenario_carries_it_for_pinned_non_blocking_cases(self):
        c = make_case("p", "pin_memory_tensor", 3200, 0.02, 0.022)
        c["knobs"]["non_blocking"] = True
        s = convert.scenario_for(c, {"cpu_cores": 16}, copy_call=0.00025)
        self.assertAlmostEqual(s["transfer"]["copy_call_s_per_batch"], 0.00025)
        self.assertNotIn("copy_call_s_per_batch", convert.scenario_for(c, {"cpu_cores": 16})["transfer"])
        for knob in ("pin_memory", "non_blocking"):
            off = json.loads(json.dumps(c))
            off["knobs"][knob] = False
            self.assertNotIn("copy_call_s_per_batch",
                             convert.scenario_for(off, {"cpu_cores": 16}, copy_call=0.00025)["transfer"])


class PinThreadWaitTest(unittest.TestCase):
    def test_wall_less_cpu_of_the_pin_bound_probes(self):
        # 1.5 s for 75 batches: 20 ms a batch, 19.2 ms of it on the CPU -> 0.8 ms off the core; the probe after:
        # 1.6 s / 80 = 20 ms, 19.0 ms CPU -> 1.0 ms; mean 0.9 ms
        comp = {"probe": pin_probe(1.5, 75, 0.0192, 3.9), "probe_after": pin_probe(1.6, 80, 0.019, 4.1)}
        self.assertAlmostEqual(convert.pin_thread_wait_s(comp), 0.0009)

    def test_worker_bound_unpinned_and_old_probes_say_nothing(self):
        # workers 7.2 of 8 busy (0.9): the wall holds waits for batches; one unpinned; one without busy_workers
        self.assertIsNone(convert.pin_thread_wait_s({"probe": pin_probe(1.5, 20, 0.01, 7.2)}))
        self.assertIsNone(convert.pin_thread_wait_s({"probe": pin_probe(1.5, 75, 0.0192, 3.9, pin=False)}))
        old = pin_probe(1.5, 75, 0.0192, 3.9)
        del old["busy_workers"]
        self.assertIsNone(convert.pin_thread_wait_s({"probe": old}))
        # only the pin-bound one counts; a CPU above the wall (counter granularity) gives 0, not below
        comp = {"probe": pin_probe(1.5, 20, 0.01, 7.2), "probe_after": pin_probe(1.5, 75, 0.0201, 3.9)}
        self.assertEqual(convert.pin_thread_wait_s(comp), 0.0)

    def test_a_probe_whose_workers_were_busier_than_its_pin_thread_says_nothing(self):
        # run 50 A2's case 03: 8 workers 6.14 busy (0.77, under 0.8), 55.4 ms a batch of wall of which 17.4 ms the
        # pin thread's CPU (0.31 of the wall): the workers set the pace, and the 38 ms "wait" is theirs
        stalled = pin_probe(1.385, 25, 0.0174, 6.14)
        self.assertIsNone(convert.pin_thread_wait_s({"probe": stalled}))
        self.assertAlmostEqual(convert.pin_thread_wait_s({"probe": stalled}, pin_busier=False), 0.0554 - 0.0174)
        # a pin-bound probe beside it still counts: 19.2 of 20 ms on the CPU (0.96) against workers 0.49
        comp = {"probe": stalled, "probe_after": pin_probe(1.5, 75, 0.0192, 3.9)}
        self.assertAlmostEqual(convert.pin_thread_wait_s(comp), 0.0008)

    def test_the_scenario_carries_it_for_pinned_cases_unless_off(self):
        c = make_case("p", "pin_memory_tensor", 3200, 0.02, 0.022)
        c["components"]["probe"] = pin_probe(1.5, 75, 0.0192, 3.9)
        s = convert.scenario_for(c, {"cpu_cores": 16})
        # on by default since run 38 (validation-runs.md run 38, finding 2): 20 ms wall less 19.2 ms CPU a batch
        self.assertAlmostEqual(s["loader"]["pin_thread_wait_s_per_batch"], 0.0008)
        self.assertNotIn("pin_thread_wait_s_per_batch",
                         convert.scenario_for(c, {"cpu_cores": 16}, pin_thread_wait="off")["loader"])
        c["knobs"]["pin_memory"] = False
        self.assertNotIn("pin_thread_wait_s_per_batch",
                         convert.scenario_for(c, {"cpu_cores": 16}, pin_thread_wait="probes")["loader"])

    def test_probes_fd_takes_the_hand_overs_where_no_probe_is_pin_bound(self):
        # run 84's 4-worker probes, rounded: workers 0.87 busy (worker-bound, no pin_thread_wait_s reading); the
        # hand-overs 2.00 ms wall / 0.62 ms CPU a batch before, 2.93 / 0.56 after: 1.38 and 2.37 ms off the core,
        # 1.875 ms at mean
        before, after = pin_probe(1.52, 71, 0.0199, 3.49, workers=4), pin_probe(1.52, 71, 0.0190, 3.36, workers=4)
        before.update(fd_detach_wall_s_per_batch=0.0020, fd_detach_cpu_s_per_batch=0.00062)
        after.update(fd_detach_wall_s_per_batch=0.00293, fd_detach_cpu_s_per_batch=0.00056)
        comp = {"probe": before, "probe_after": after}
        self.assertIsNone(convert.pin_thread_wait_s(comp))
        self.assertAlmostEqual(convert.fd_handover_wait_s(comp), 0.001875)
        c = make_case("p", "pin_memory_tensor", 3200, 0.02, 0.022)
        c["components"].update(comp)
        # the default since the ninety-third session (device plan item 30); "probes" keeps the pin-bound probes alone
        s = convert.scenario_for(c, {"cpu_cores": 16})
        self.assertAlmostEqual(s["loader"]["pin_thread_wait_s_per_batch"], 0.001875)
        self.assertNotIn("pin_thread_wait_s_per_batch",
                         convert.scenario_for(c, {"cpu_cores": 16}, pin_thread_wait="probes")["loader"])
        self.assertEqual(convert.TABLE_OPTIONS.pin_thread_wait, "probes-fd")
        s = convert.scenario_for(c, {"cpu_cores": 16}, pin_thread_wait="probes-fd")
        self.assertAlmostEqual(s["loader"]["pin_thread_wait_s_per_batch"], 0.001875)
        # a pin-bound probe's whole wall less CPU (which holds the hand-overs) wins where there is one
        c["components"]["probe"] = dict(pin_probe(1.5, 75, 0.0192, 3.9), fd_detach_wall_s_per_batch=0.0005,
                                        fd_detach_cpu_s_per_batch=0.0003)
        s = convert.scenario_for(c, {"cpu_cores": 16}, pin_thread_wait="probes-fd")
        self.assertAlmostEqual(s["loader"]["pin_thread_wait_s_per_batch"], 0.0008)
        # a CPU above the wall gives 0, not below; probes without the figures (every call before run 84) none
        self.assertEqual(convert.fd_handover_wait_s({"probe": dict(before, fd_detach_cpu_s_per_batch=0.003)}), 0.0)
        self.assertIsNone(convert.fd_handover_wait_s({"probe": pin_probe(1.5, 75, 0.0192, 3.9)}))


class PinCycleCvTest(unittest.TestCase):
    def test_the_mean_of_the_pin_bound_probes_cv(self):
        before, after = pin_probe(1.5, 75, 0.0192, 3.9), pin_probe(1.5, 75, 0.0192, 3.9)
        before["pin_cycle_cv"], after["pin_cycle_cv"] = 0.10, 0.14
        self.assertAlmostEqual(convert.probe_pin_cycle_cv({"probe": before, "probe_after": after}), 0.12)
        # a worker-bound probe (7.2 of 8 busy) cycles at the workers' pace: left out
        bound = pin_probe(1.5, 20, 0.01, 7.2)
        bound["pin_cycle_cv"] = 0.4
        self.assertAlmostEqual(convert.probe_pin_cycle_cv({"probe": bound, "probe_after": after}), 0.14)
        # calls before the harness measured it, an unpinned probe, none: None
        self.assertIsNone(convert.probe_pin_cycle_cv({"probe": pin_probe(1.5, 75, 0.0192, 3.9)}))
        unpinned = pin_probe(1.5, 75, 0.0192, 3.9, pin=False)
        unpinned["pin_cycle_cv"] = 0.1
        self.assertIsNone(convert.probe_pin_cycle_cv({"probe": unpinned}))
        self.assertIsNone(convert.probe_pin_cycle_cv({}))


class ScenarioTest(unittest.TestCase):
    ALLOWED = {
        "": {"schema", "name", "description", "seed", "node", "dataset", "storage", "loader",
             "transfer", "training", "ddp"},
        "node": {"gpus", "cpu_cores"},
        "dataset": {"num_samples", "sample_bytes", "item_bytes", "load_s_per_sample", "load_speed_vs_busy_cores"},
        "storage": {"page_cache_hit_ratio", "read_bytes_per_s", "read_iops", "read_latency_s"},
        "loader": {"batch_size", "num_workers", "prefetch_factor", "pin_memory", "persistent_workers",
                   "drop_last", "in_order", "worker_start_s", "collate_s_per_batch", "worker_s_per_batch",
                   "pin_thread_wait_s_per_batch", "main_next_s_per_batch", "slow_worker"},
        "transfer": {"non_blocking", "copy_stream", "copy_call_s_per_batch"},
        "training": {"step_s", "forward_s", "backward_s", "step_cv", "host_s_per_step", "launch_tail_s",
                     "sync_every_steps", "max_steps_ahead", "steps", "warmup_steps", "step_s_vs_gpu_duty"},
    }

    def check_keys(self, scen):
        self.assertLessEqual(set(scen), self.ALLOWED[""])
        for sec, keys in self.ALLOWED.items():
            if sec and sec in scen:
                self.assertLessEqual(set(scen[sec]), keys, sec)

    def test_keys_and_values(self):
        c = make_case("a", "num_workers", 2000, 0.032, 0.04)
        s = convert.scenario_for(c, {"cpu_cores": 16})
        self.check_keys(s)
        self.assertEqual(s["schema"], "pipeplan-scenario/1")
        self.assertEqual(s["node"], {"gpus": 1, "cpu_cores": 16})
        self.assertEqual(s["dataset"]["item_bytes"], 602120)
        self.assertEqual(s["dataset"]["load_s_per_sample"], {"mean": 0.004, "cv": 0.2, "kind": "lognormal"})
        self.assertEqual(s["loader"]["prefetch_factor"], 2)
        self.assertEqual(s["storage"]["page_cache_hit_ratio"], 1.0)
        self.assertEqual(s["training"]["warmup_steps"], 18)
        self.assertEqual(s["training"]["steps"], 18 + convert.MIN_SIM_STEPS)
        self.assertEqual(s["dataset"]["num_samples"], s["training"]["steps"] * 64)
        self.assertEqual(s["training"]["sync_every_steps"], 1)
        self.assertAlmostEqual(s["training"]["host_s_per_step"], 0.002)
        self.assertAlmostEqual(s["loader"]["worker_start_s"], 0.02 + 8 * 0.01)   # all 8 workers
        self.assertIs(s["loader"]["in_order"], True)                              # PyTorch's default
        u = convert.scenario_for(make_case("u", "in_order", 2000, 0.032, 0.04, in_order=False), {"cpu_cores": 16})
        self.assertIs(u["loader"]["in_order"], False)
        self.assertNotIn("slow_worker", s["loader"])
        # the harness's straggler (family slow_worker): its worker 0, PyTorch's first in the round robin
        slow = convert.scenario_for(make_case("s", "slow_worker", 2000, 0.032, 0.04, slow_worker_factor=1.25),
                                    {"cpu_cores": 16})
        self.assertEqual(slow["loader"]["slow_worker"], {"worker": 0, "factor": 1.25, "holds_gil": True})
        nogil = convert.scenario_for(make_case("s", "slow_worker_gil", 2000, 0.032, 0.04, slow_worker_factor=2.0,
                                               slow_worker_spin="nogil"), {"cpu_cores": 16})
        self.assertFalse(nogil["loader"]["slow_worker"]["holds_gil"])

    def test_in_worker_costs_are_preferred_for_workers(self):
        c = make_case("w", "num_workers", 2000, 0.032, 0.04)
        c["components"]["in_worker"] = {"getitem_wall_s": 0.005, "collate_wall_s": 0.03, "overhead_s_per_batch": 0.012}
        c["components"]["load_scaling"] = {"points": [{"workers": 1, "getitem_s": 0.001, "relative_speed": 1.0},
                                                      {"workers": 8, "getitem_s": 0.002, "relative_speed": 0.5}]}
        s = convert.scenario_for(c, {"cpu_cores": 16})
        self.assertEqual(s["loader"]["worker_s_per_batch"], 0.012)
        self.assertEqual(s["dataset"]["load_speed_vs_busy_cores"],
                         [{"busy_cores": 1, "relative_speed": 1.0}, {"busy_cores": 8, "relative_speed": 0.5}])
        self.assertEqual(s["dataset"]["load_s_per_sample"]["mean"], 0.005)
        self.assertEqual(s["dataset"]["load_s_per_sample"]["cv"], 0.2)   # the spread still from the alone samples
        self.assertEqual(s["loader"]["collate_s_per_batch"], 0.03)
        self.assertIs(s["loader"]["collate_in_shared_memory"], True)   # timed in the worker: no shm floor
        del c["components"]["in_worker"]                                # the main process's collate alone
        self.assertNotIn("collate_in_shared_memory", convert.scenario_for(c, {"cpu_cores": 16})["loader"])
        c0 = make_case("w0", "num_workers", 100, 0.3, 0.3, nw=0)        # inline: no worker to measure in
        c0["components"]["in_worker"] = {"getitem_wall_s": 0.005, "collate_wall_s": 0.03}
        s0 = convert.scenario_for(c0, {"cpu_cores": 16})
        self.assertEqual(s0["loader"]["collate_s_per_batch"], 0.02)

    def test_inline_probe_brackets_a_w0_case(self):
        # harness since run 12: a num_workers=0 case's probe loads inline (workers 0), before and after
        c0 = make_case("w0", "num_workers", 100, 0.3, 0.3, nw=0)
        c0["components"]["probe"] = {"workers": 0, "getitem_wall_s": 0.0030, "collate_wall_s": 0.020,
                                     "pin_memory": False, "main_thread_cpu_s_per_batch": 0.25}
        c0["components"]["probe_after"] = dict(c0["components"]["probe"], getitem_wall_s=0.0040, collate_wall_s=0.024)
        s0 = convert.scenario_for(c0, {"cpu_cores": 16})
        self.assertAlmostEqual(s0["dataset"]["load_s_per_sample"]["mean"], 0.0035)   # (3 + 4) / 2 ms
        self.assertAlmostEqual(s0["loader"]["collate_s_per_batch"], 0.022)
        # its main thread loaded too: not a measure of the main side's receive
        c0["knobs"]["pin_memory"] = False
        c0["components"]["transport"] = {"receive_cpu_s_per_batch": 0.005, "receive_s_per_batch": 0.005,
                                         "pin_s_per_batch": 0.01}
        self.assertIsNone(convert.main_side_drift(c0))
        # a worker probe (workers 1) without a workers key in the case's knobs is unchanged: w > 0 only
        c1 = make_case("w1", "num_workers", 100, 0.3, 0.3, nw=1)
        c1["components"]["probe"] = dict(c0["components"]["probe"], workers=1)
        s1 = convert.scenario_for(c1, {"cpu_cores": 16})
        self.assertAlmostEqual(s1["dataset"]["load_s_per_sample"]["mean"], 0.0030)

    def test_inline_uses_default_thread_costs(self):
        c = make_case("i", "num_workers", 100, 0.3, 0.3, nw=0)
        c["components"]["load"]["default_threads"] = {"threads": 16, "mean": 0.003, "cv": 0.1}
        c["components"]["collate"]["default_threads"] = {"threads": 16, "mean": 0.008, "cv": 0.1}
        s = convert.scenario_for(c, {"cpu_cores": 16})
        self.assertEqual(s["dataset"]["load_s_per_sample"]["mean"], 0.003)
        self.assertEqual(s["loader"]["collate_s_per_batch"], 0.008)
        w = make_case("w", "num_workers", 100, 0.3, 0.3, nw=4)       # workers run torch with one thread
        w["components"]["collate"]["default_threads"] = {"threads": 16, "mean": 0.008, "cv": 0.1}
        self.assertEqual(convert.scenario_for(w, {"cpu_cores": 16})["loader"]["collate_s_per_batch"], 0.02)

    def test_transport_profile_keeps_the_measured_pin_loop_total(self):
        base = {"schema": "pipeplan-profile/1", "ipc": {"receive_s_per_batch": 1e-5, "receive_s_per_byte": 1e-10,
                                                        "points": []}, "host": {"pin_copy_bytes_per_s": 1e10}}
        prof = convert.transport_profile(base, {"receive_s_per_batch": 0.004, "pin_s_per_batch": 0.010}, 2e7)
        self.assertEqual(prof["ipc"]["receive_s_per_batch"], 0.004)
        # pin loop: 10 ms = 4 ms receive + 6 ms of first touch and copy; calibrated 2 ms touch
        # (2e7 B x 1e-10) and 2 ms copy (2e7 B / 1e10 B/s), split kept: 3 ms + 3 ms
        self.assertAlmostEqual(prof["ipc"]["receive_s_per_byte"], 1.5e-10)
        self.assertAlmostEqual(prof["host"]["pin_copy_bytes_per_s"], 2e7 / 0.003)
        self.assertNotIn("points", prof["ipc"])
        self.assertEqual(base["ipc"]["receive_s_per_batch"], 1e-5)       # the calibrated profile untouched

    def test_transport_profile_stall_phase_from_the_pin_loops_pin_memory_calls(self):
        # the variant of run 31, finding 6: of the 6 ms beyond the 4 ms receive, the pin loop's own pin_memory()
        # calls took 2.5 ms: that is the phase a slowed loop stalls in, the other 3.5 ms the phase after it
        base = {"schema": "pipeplan-profile/1", "ipc": {"receive_s_per_batch": 1e-5, "receive_s_per_byte": 1e-10},
                "host": {"pin_copy_bytes_per_s": 1e10}}
        tr = {"receive_s_per_batch": 0.004, "pin_s_per_batch": 0.010, "pin_copy_s_per_batch": 0.0025}
        prof = convert.transport_profile(base, tr, 2e7, stall_phase_is_pin_memory=True)
        self.assertAlmostEqual(prof["ipc"]["receive_s_per_byte"] * 2e7, 0.0025)
        self.assertAlmostEqual(2e7 / prof["host"]["pin_copy_bytes_per_s"], 0.0035)
        # without the flag (the default) calibrate's split of the same 6 ms: 3 ms + 3 ms
        self.assertAlmostEqual(convert.transport_profile(base, tr, 2e7)["ipc"]["receive_s_per_byte"] * 2e7, 0.003)
        # scaled with the rest of the main side by the probes' drift
        self.assertAlmostEqual(convert.transport_scaled(tr, 1.2)["pin_copy_s_per_batch"], 0.003)

    def test_pin_split_touched_copy_interpolates_in_bytes(self):
        pts = [{"bytes": 32 << 20, "touch_s": 0.01, "fresh_copy_s": 0.02, "touched_copy_s": 0.004},
               {"bytes": 16 << 20, "touch_s": 0.005, "fresh_copy_s": 0.01, "touched_copy_s": 0.002}]
        # halfway between 16 and 32 MiB: halfway between 2 and 4 ms (the points need not come sorted)
        self.assertAlmostEqual(convert.pin_split_touched_copy_s(pts, 24 << 20), 0.003)
        # below the smallest and above the largest: per byte of the nearest size
        self.assertAlmostEqual(convert.pin_split_touched_copy_s(pts, 8 << 20), 0.001)
        self.assertAlmostEqual(convert.pin_split_touched_copy_s(pts, 64 << 20), 0.008)
        self.assertIsNone(convert.pin_split_touched_copy_s([], 24 << 20))
        self.assertIsNone(convert.pin_split_touched_copy_s(pts, 0))

    def test_transport_profile_copy_part_from_the_pin_split(self):
        # the default: of the 6 ms beyond the 4 ms receive, calibrate's 2 ms touch (2e7 B x 1e-10) and 2 ms copy
        # (2e7 B / 1e10 B/s) split it 3 + 3 ms. With the pin split's touched copy at 2e7 B (4 ms, between its
        # 1e7 B / 2 ms and 4e7 B / 8 ms points) the split is 2 : 4 of 6 ms: 2 ms touch phase, 4 ms copy
        base = {"schema": "pipeplan-profile/1",
                "ipc": {"receive_s_per_batch": 1e-5, "receive_s_per_byte": 1e-10,
                        "pin_split_points": [{"bytes": 1e7, "touch_s": 0.001, "fresh_copy_s": 0.003,
                                              "touched_copy_s": 0.002},
                                             {"bytes": 4e7, "touch_s": 0.004, "fresh_copy_s": 0.012,
                                              "touched_copy_s": 0.008}]},
                "host": {"pin_copy_bytes_per_s": 1e10}}
        tr = {"receive_s_per_batch": 0.004, "pin_s_per_batch": 0.010}
        prof = convert.transport_profile(base, tr, 2e7, copy_from_pin_split=True)
        self.assertAlmostEqual(prof["ipc"]["receive_s_per_byte"] * 2e7, 0.002)
        self.assertAlmostEqual(2e7 / prof["host"]["pin_copy_bytes_per_s"], 0.004)
        self.assertAlmostEqual(convert.transport_profile(base, tr, 2e7)["ipc"]["receive_s_per_byte"] * 2e7, 0.003)
        # a profile without the points (before the twenty-ninth session): the default's split
        del base["ipc"]["pin_split_points"]
        self.assertAlmostEqual(convert.transport_profile(base, tr, 2e7, copy_from_pin_split=True)
                               ["ipc"]["receive_s_per_byte"] * 2e7, 0.003)

    def test_transport_profile_when_the_calibrated_touch_alone_exceeds_the_measured_rest(self):
        # run 6, call 2: calibrated touch 8 ms + copy 2 ms against 6 ms measured beyond the receive.
        # The pin thread must still take the measured 10 ms (the old split kept the touch whole and
        # fell back to the calibrated copy: 4 + 8 + 2 = 14 ms).
        base = {"schema": "pipeplan-profile/1", "ipc": {"receive_s_per_batch": 1e-5, "receive_s_per_byte": 4e-10},
                "host": {"pin_copy_bytes_per_s": 1e10}}
        prof = convert.transport_profile(base, {"receive_s_per_batch": 0.004, "pin_s_per_batch": 0.010}, 2e7)
        pin_loop_s = (prof["ipc"]["receive_s_per_batch"] + 2e7 * prof["ipc"]["receive_s_per_byte"]
                      + 2e7 / prof["host"]["pin_copy_bytes_per_s"])
        self.assertAlmostEqual(pin_loop_s, 0.010)
        self.assertAlmostEqual(2e7 * prof["ipc"]["receive_s_per_byte"], 0.0048)   # 8 ms x 6/10

    def test_transport_profile_scales_to_one_idle_core(self):
        # Per-core speed 1.0 alone, 0.8 from 2 busy cores on. Receive loop: 4 ms per batch while
        # workers collate 8 ms batches -> 1 + 8/4 = 3 busy cores -> 4 ms x 0.8 = 3.2 ms on one idle
        # core. Pin loop: 10 ms -> 1 + 8/10 = 1.8 busy -> speed 1 - 0.8 x 0.2 = 0.84 -> 8.4 ms, of
        # which 3.2 ms receive and 5.2 ms touch + copy, split as calibrated (2 ms + 2 ms): 2.6 ms each.
        base = {"schema": "pipeplan-profile/1", "ipc": {"receive_s_per_batch": 1e-5, "receive_s_per_byte": 1e-10},
                "host": {"pin_copy_bytes_per_s": 1e10},
                "cpu": {"speed_vs_busy_cores": [{"busy_cores": 1, "relative_speed": 1.0},
                                                {"busy_cores": 2, "relative_speed": 0.8}]}}
        tr = {"receive_s_per_batch": 0.004, "pin_s_per_batch": 0.010, "num_workers": 12}
        self.assertEqual(convert.transport_busy_cores(tr, 0.008), (3.0, 1.8))
        prof = convert.transport_profile(base, tr, 2e7, worker_collate_s=0.008)
        self.assertAlmostEqual(prof["ipc"]["receive_s_per_batch"], 0.0032)
        self.assertAlmostEqual(prof["host"]["pin_copy_bytes_per_s"] / (2e7 / 0.0026), 1.0)
        self.assertAlmostEqual(prof["ipc"]["receive_s_per_byte"] * 2e7, 0.0026)
        # at most num_workers workers collate
        self.assertEqual(convert.transport_busy_cores(dict(tr, num_workers=1), 0.008)[0], 2.0)

    def test_transport_profile_at_the_probes_busy_cores(self):
        # The same loops as above, but their figures scaled to probes that ran at 5 busy cores (speed 0.8 there):
        # both are brought to one idle core at 0.8, whatever the loops' own 3.0 and 1.8 busy cores.
        base = {"schema": "pipeplan-profile/1", "ipc": {"receive_s_per_batch": 1e-5, "receive_s_per_byte": 1e-10},
                "host": {"pin_copy_bytes_per_s": 1e10},
                "cpu": {"speed_vs_busy_cores": [{"busy_cores": 1, "relative_speed": 1.0},
                                                {"busy_cores": 2, "relative_speed": 0.8}]}}
        tr = {"receive_s_per_batch": 0.004, "pin_s_per_batch": 0.010, "num_workers": 12}
        prof = convert.transport_profile(base, tr, 2e7, worker_collate_s=0.008, measured_at_busy_cores=5.0)
        # receive 4 ms x 0.8 = 3.2 ms; pin loop 10 ms x 0.8 = 8 ms, 4.8 ms beyond the receive, split 2.4 + 2.4
        self.assertAlmostEqual(prof["ipc"]["receive_s_per_batch"], 0.0032)
        self.assertAlmostEqual(prof["ipc"]["receive_s_per_byte"] * 2e7, 0.0024)
        self.assertAlmostEqual(2e7 / prof["host"]["pin_copy_bytes_per_s"], 0.0024)
        # at 1 busy core (speed 1.0) the figures stay as measured
        one = convert.transport_profile(base, tr, 2e7, worker_collate_s=0.008, measured_at_busy_cores=1.0)
        self.assertAlmostEqual(one["ipc"]["receive_s_per_batch"], 0.004)
        self.assertAlmostEqual(one["ipc"]["receive_s_per_byte"] * 2e7, 0.003)

    def test_main_side_busy_cores_reads_the_probes_main_side_drift_reads(self):
        c = make_case("p", "pin_memory_tensor", 3505, 0.0183, 0.021)
        self.assertIsNone(convert.main_side_busy_cores(c))
        c["components"]["probe"] = {"pin_memory": True, "workers": 8, "pin_thread_cpu_s_per_batch": 0.017,
                                    "busy_cores": 4.6}
        c["components"]["probe_after"] = {"pin_memory": True, "workers": 8, "pin_thread_cpu_s_per_batch": 0.018,
                                          "busy_cores": 5.2}
        self.assertAlmostEqual(convert.main_side_busy_cores(c), 4.9)
        # a probe that did not pin, or without busy cores (before run 14), is left out
        c["components"]["probe_after"]["pin_memory"] = False
        self.assertAlmostEqual(convert.main_side_busy_cores(c), 4.6)
        del c["components"]["probe"]["busy_cores"]
        self.assertIsNone(convert.main_side_busy_cores(c))

    def test_transport_profile_takes_the_release_out_of_the_receive_where_simulated_apart(self):
        # 2e7 B batches: the receive loop's 4 ms includes releasing pages it never touched (0.05 ns/B: 1 ms).
        # With the fresh-mapping copy and the release measured apart the simulator charges an unpinned batch
        # receive + release (touched) + fresh copy, so the receive is 3 ms; the pin loop's 10 ms stays whole.
        base = {"schema": "pipeplan-profile/1",
                "ipc": {"receive_s_per_batch": 1e-5, "receive_s_per_byte": 1e-10, "release_s_per_byte": 0.8e-10,
                        "release_untouched_s_per_byte": 0.5e-10},
                "host": {"pin_copy_bytes_per_s": 1e10},
                "copy": {"h2d_pageable_fresh_mapping": {"latency_s": 0.0, "bytes_per_s": 6e9}}}
        tr = {"receive_s_per_batch": 0.004, "pin_s_per_batch": 0.010}
        prof = convert.transport_profile(base, tr, 2e7)
        self.assertAlmostEqual(prof["ipc"]["receive_s_per_batch"], 0.003)
        pin_loop_s = (prof["ipc"]["receive_s_per_batch"] + 2e7 * prof["ipc"]["receive_s_per_byte"]
                      + 2e7 / prof["host"]["pin_copy_bytes_per_s"])
        self.assertAlmostEqual(pin_loop_s, 0.010)
        # without the release key (profiles before run 16) the receive stays as measured
        del base["ipc"]["release_s_per_byte"]
        self.assertAlmostEqual(convert.transport_profile(base, tr, 2e7)["ipc"]["receive_s_per_batch"], 0.004)
        self.assertEqual(convert.receive_loop_release_s(base, 2e7), 0.0)

    def test_copy_curve_time_interpolates_the_rate_in_log_bytes_as_the_simulator(self):
        curve = {"latency_s": 1e-5, "bytes_per_s": 1e9,
                 "points": [{"bytes": 1e6, "bytes_per_s": 1e9}, {"bytes": 1e8, "bytes_per_s": 2e9}]}
        # 1e7 B is halfway between 1e6 and 1e8 in log bytes: 1.5 GB/s, 6.667 ms
        self.assertAlmostEqual(convert.copy_curve_time_s(curve, 1e7), 1e7 / 1.5e9)
        self.assertAlmostEqual(convert.copy_curve_time_s(curve, 1e5), 1e-5 + 1e5 / 1e9)   # below: latency + rate
        self.assertAlmostEqual(convert.copy_curve_time_s(curve, 1e9), 1e9 / 2e9)          # beyond: the last rate
        self.assertEqual(convert.copy_curve_time_s(curve, 0), 0.0)

    def _unpinned_window_inputs(self):
        prof = {"schema": "pipeplan-profile/1",
                "cpu": {"speed_vs_busy_cores": [{"busy_cores": 1, "relative_speed": 1.0},
                                                {"busy_cores": 3, "relative_speed": 1.2}]},
                "ipc": {"receive_s_per_batch": 1e-5, "receive_s_per_byte": 1e-10, "release_s_per_byte": 4e-10},
                "copy": {"h2d_pageable_fresh_mapping": {
                    "latency_s": 1e-5, "bytes_per_s": 1e9,
                    "points": [{"bytes": 1e6, "bytes_per_s": 1e9, "time_s": 1e-3},
                               {"bytes": 1e8, "bytes_per_s": 2e9, "time_s": 0.05}]}}}
        win = {"workers": 8, "unpinned_case_like_copy_s": {"mean": 0.010},
               "unpinned_case_like_release_s": {"mean": 0.005}, "unpinned_case_like_host_s": {"mean": 0.020},
               "unpinned_copy_s": {"mean": 0.008}, "unpinned_release_s": {"mean": 0.004},
               "unpinned_copied_host_s": {"mean": 0.019}}
        case = make_case("c", "pin_memory_gil", 1000, 0.05, 0.06, pin_memory=False)
        case["components"]["host_beside_loader"] = win
        return prof, case

    def test_unpinned_loop_takes_the_copy_and_release_timed_beside_a_live_loader(self):
        prof, case = self._unpinned_window_inputs()
        out = convert.unpinned_loop_beside_loader(prof, case, 1e7, 0.035)
        self.assertEqual(out["window"], "unpinned_case_like")
        self.assertAlmostEqual(out["calibrated_copy_s"], 1e7 / 1.5e9)
        # the curve scaled 1.5x slower: its copy of this batch is the window's 10 ms, at every size alike
        curve = out["profile"]["copy"]["h2d_pageable_fresh_mapping"]
        self.assertAlmostEqual(convert.copy_curve_time_s(curve, 1e7), 0.010)
        self.assertAlmostEqual(convert.copy_curve_time_s(curve, 1e9), 1.5 * 0.5)
        # the window's loop: 10 + 20 + 5 = 35 ms a step, 35 ms of collate a batch: 1 + 1 busy cores, speed 1.1;
        # its 5 ms release back to one idle core is 5.5 ms, per byte of the 1e7 B batch
        self.assertAlmostEqual(out["busy_cores"], 2.0)
        self.assertAlmostEqual(out["profile"]["ipc"]["release_s_per_byte"] * 1e7, 0.0055)
        self.assertEqual(prof["ipc"]["release_s_per_byte"], 4e-10)          # the input profile untouched
        # run 18's window (cached samples, blocking copy) where the case-like one is missing
        for key in ("unpinned_case_like_copy_s", "unpinned_case_like_release_s", "unpinned_case_like_host_s"):
            del case["components"]["host_beside_loader"][key]
        out = convert.unpinned_loop_beside_loader(prof, case, 1e7, 0.035)
        self.assertEqual(out["window"], "unpinned")
        self.assertAlmostEqual(convert.copy_curve_time_s(out["profile"]["copy"]["h2d_pageable_fresh_mapping"], 1e7),
                               0.008)

    def test_unpinned_loop_from_the_cases_own_windows_around_it(self):
        prof, case = self._unpinned_window_inputs()
        # before: copy 12 ms, release 6, host 20; after: 14, 8, 22: their means 13 / 7 / 21 ms
        case["components"]["unpinned_window"] = {
            "workers": 8, "unpinned_case_like_copy_s": {"mean": 0.012}, "unpinned_case_like_release_s": {"mean": 0.006},
            "unpinned_case_like_host_s": {"mean": 0.020}}
        case["components"]["unpinned_window_after"] = {
            "workers": 8, "unpinned_case_like_copy_s": {"mean": 0.014}, "unpinned_case_like_release_s": {"mean": 0.008},
            "unpinned_case_like_host_s": {"mean": 0.022}}
        out = convert.unpinned_loop_beside_loader(prof, case, 1e7, 0.035)
        self.assertEqual(out["window"], "case's own unpinned_case_like")
        self.assertAlmostEqual(out["copy_s"], 0.013)
        self.assertAlmostEqual(out["release_s"], 0.007)
        self.assertAlmostEqual(convert.copy_curve_time_s(out["profile"]["copy"]["h2d_pageable_fresh_mapping"], 1e7),
                               0.013)
        # the call's window when asked, or when the case's own failed on both sides; one side alone where one failed
        self.assertAlmostEqual(convert.unpinned_loop_beside_loader(prof, case, 1e7, 0.035, per_case=False)["copy_s"],
                               0.010)
        case["components"]["unpinned_window_after"] = {"error": "RuntimeError: x"}
        self.assertAlmostEqual(convert.unpinned_loop_beside_loader(prof, case, 1e7, 0.035)["copy_s"], 0.012)
        case["components"]["unpinned_window"] = {"error": "RuntimeError: x"}
        self.assertEqual(convert.unpinned_loop_beside_loader(prof, case, 1e7, 0.035)["window"], "unpinned_case_like")

    def test_unpinned_loop_takes_the_receive_in_next_from_the_windows(self):
        prof, case = self._unpinned_window_inputs()
        # the windows around the case timed next() too (1.5 and 1.9 ms, mean 1.7); the window's loop (13 + 17 + 5 =
        # 35 ms a step) runs at 1 + 1 busy cores (speed 1.1), so the receive at one idle core is 1.7 x 1.1 = 1.87 ms
        for name, copy_s, next_s in (("unpinned_window", 0.012, 0.0015), ("unpinned_window_after", 0.014, 0.0019)):
            case["components"][name] = {
                "workers": 8, "unpinned_case_like_copy_s": {"mean": copy_s},
                "unpinned_case_like_release_s": {"mean": 0.005}, "unpinned_case_like_host_s": {"mean": 0.017},
                "unpinned_case_like_next_s": {"mean": next_s}}
        out = convert.unpinned_loop_beside_loader(prof, case, 1e7, 0.035)
        self.assertAlmostEqual(out["next_s"], 0.0017)
        self.assertAlmostEqual(out["busy_cores"], 2.0)
        self.assertAlmostEqual(out["profile"]["ipc"]["receive_s_per_batch"], 0.0017 * 1.1)
        self.assertEqual(prof["ipc"]["receive_s_per_batch"], 1e-5)            # the input profile untouched
        # asked not to, or a window from before run 26's plan: the receive stays the profile's
        out = convert.unpinned_loop_beside_loader(prof, case, 1e7, 0.035, with_next=False)
        self.assertEqual(out["profile"]["ipc"]["receive_s_per_batch"], 1e-5)
        for name in ("unpinned_window", "unpinned_window_after"):
            del case["components"][name]["unpinned_case_like_next_s"]
        out = convert.unpinned_loop_beside_loader(prof, case, 1e7, 0.035)
        self.assertNotIn("next_s", out)
        self.assertEqual(out["profile"]["ipc"]["receive_s_per_batch"], 1e-5)

    def test_unpinned_loop_left_to_calibrate_where_the_window_does_not_apply(self):
        prof, case = self._unpinned_window_inputs()
        pinned = json.loads(json.dumps(case))
        pinned["knobs"]["pin_memory"] = True
        self.assertIsNone(convert.unpinned_loop_beside_loader(prof, pinned, 1e7, 0.035))
        other_workers = json.loads(json.dumps(case))
        other_workers["knobs"]["num_workers"] = 4
        self.assertIsNone(convert.unpinned_loop_beside_loader(prof, other_workers, 1e7, 0.035))
        no_release = json.loads(json.dumps(prof))
        del no_release["ipc"]["release_s_per_byte"]                        # the simulator's older unpinned path
        self.assertIsNone(convert.unpinned_loop_beside_loader(no_release, case, 1e7, 0.035))
        failed = json.loads(json.dumps(case))
        failed["components"]["host_beside_loader"] = {"error": "RuntimeError: x"}
        self.assertIsNone(convert.unpinned_loop_beside_loader(prof, failed, 1e7, 0.035))

    def test_loop_host_from_the_host_probes_around_the_case(self):
        step = {"host_s": {"mean": 0.019}}
        comp = {"host_probe": {"host_s": {"mean": 0.022}}, "host_probe_after": {"host_s": {"mean": 0.026}},
                "host_under_load": {"alone_host_s": {"mean": 0.017}, "alone_after_host_s": {"mean": 0.018}}}
        self.assertAlmostEqual(convert.loop_host_s(comp, step, [], "probe-bracket"), 0.024)   # (22 + 26) / 2
        comp["host_probe_after"] = {"error": "RuntimeError: x"}                              # the one that worked
        self.assertAlmostEqual(convert.loop_host_s(comp, step, [], "probe-bracket"), 0.022)
        del comp["host_probe"]                         # neither: the median of the windows alone (17, 18, 19 ms)
        self.assertAlmostEqual(convert.loop_host_s(comp, step, [], "probe-bracket"), 0.018)

    def test_an_unpinned_loop_with_workers_takes_its_case_like_windows(self):
        # run 30's GIL2 unpinned case: probes 24.77 ms before and 16.78 after (20.775), case-like windows 26.33 and
        # 22.19 ms of launches (24.26); the case ran 26.82
        step = {"host_s": {"mean": 0.019}}
        copy_release = {"unpinned_case_like_copy_s": {"mean": 0.0073}, "unpinned_case_like_release_s": {"mean": 0.0053}}
        comp = {"host_probe": {"host_s": {"mean": 0.02477}}, "host_probe_after": {"host_s": {"mean": 0.01678}},
                "unpinned_window": dict(copy_release, unpinned_case_like_host_s={"mean": 0.02633}),
                "unpinned_window_after": dict(copy_release, unpinned_case_like_host_s={"mean": 0.02219})}
        self.assertAlmostEqual(convert.loop_host_s(comp, step, [], "probe-bracket", unpinned_with_workers=True), 0.02426)
        # a pinned case (or one without workers), or --host-from probes-only: the probes
        self.assertAlmostEqual(convert.loop_host_s(comp, step, [], "probe-bracket"), 0.020775)
        self.assertAlmostEqual(convert.loop_host_s(comp, step, [], "probes-only", unpinned_with_workers=True), 0.020775)
        # one window failed: the other; neither: the probes
        comp["unpinned_window_after"] = {"error": "RuntimeError: x"}
        self.assertAlmostEqual(convert.loop_host_s(comp, step, [], "probe-bracket", unpinned_with_workers=True), 0.02633)
        del comp["unpinned_window"]
        self.assertAlmostEqual(convert.loop_host_s(comp, step, [], "probe-bracket", unpinned_with_workers=True), 0.020775)
        # in a scenario: only the unpinned case with workers takes the windows
        c = make_case("u", "pin_memory_gil", 1400, 0.045, 0.05)
        c["knobs"]["pin_memory"] = False
        c["components"].update({"host_probe": {"host_s": {"mean": 0.02477}}, "host_probe_after": {"host_s": {"mean": 0.01678}},
                                "unpinned_window": dict(copy_release, unpinned_case_like_host_s={"mean": 0.02633})})
        tr = convert.scenario_for(c, {"cpu_cores": 16}, host_from="probe-bracket")["training"]
        self.assertAlmostEqual(tr["host_s_per_step"], 0.02633)
        c["knobs"]["pin_memory"] = True
        tr = convert.scenario_for(c, {"cpu_cores": 16}, host_from="probe-bracket")["training"]
        self.assertAlmostEqual(tr["host_s_per_step"], 0.020775)

    def test_loop_host_from_the_step_or_beside_busy_processes(self):
        step = {"host_s": {"mean": 0.019}}
        comp = {"host_under_load": {"busy_processes": 8, "loaded_host_s": {"mean": 0.0228}}}
        curve = [{"busy_cores": 1, "relative_speed": 1.0}, {"busy_cores": 9, "relative_speed": 0.9}]
        self.assertEqual(convert.loop_host_s(comp, step, curve), 0.019)                  # the default: the step's
        # loaded at 8 + 1 busy cores, back to one idle core: 22.8 ms x 0.9
        self.assertAlmostEqual(convert.loop_host_s(comp, step, curve, "loaded"), 0.0228 * 0.9)
        self.assertEqual(convert.loop_host_s({}, step, curve, "loaded"), 0.019)          # not measured: the step's

    def test_loop_host_alone_is_the_median_of_every_window_alone(self):
        step = {"host_s": {"mean": 0.024}}
        comp = {"host_under_load": {"alone_host_s": 0.020, "alone_after_host_s": 0.023, "loaded_host_s": 0.030},
                "host_beside_loader": {"alone_host_s": {"mean": 0.017}, "alone_again_host_s": {"mean": 0.016},
                                       "pinned_host_s": {"mean": 0.031}}}
        curve = [{"busy_cores": 1, "relative_speed": 1.0}]
        # 24, 20, 23, 17, 16 ms alone (the loaded and pinned windows are not alone): median 20 ms
        self.assertEqual(sorted(convert.loop_host_alone_figures(comp, step)), [0.016, 0.017, 0.020, 0.023, 0.024])
        self.assertAlmostEqual(convert.loop_host_s(comp, step, curve, "alone-median"), 0.020)
        # a component that failed is left out (24, 20, 23: 23 ms); without them (every matmul step): the step's own
        comp["host_beside_loader"] = {"error": "RuntimeError: x"}
        self.assertAlmostEqual(convert.loop_host_s(comp, step, curve, "alone-median"), 0.023)
        self.assertEqual(convert.loop_host_s({}, step, curve, "alone-median"), 0.024)

    def test_the_memory_map_verdict_is_a_significant_loss_under_the_works_own_time(self):
        # Student's one-sided 95% quantiles (tables) and the approximation beyond 10 degrees of freedom, against the
        # tables' 1.796 (11), 1.725 (20) and 1.697 (30)
        self.assertEqual(probe.student_t_95(1), 6.314)
        self.assertEqual(probe.student_t_95(7), 1.895)
        for df, table in ((11, 1.796), (20, 1.725), (30, 1.697)):
            self.assertAlmostEqual(probe.student_t_95(df), table, delta=0.002)
        # 8 blocks 10 ms a step slower than their neighbours on average, deviations 0, 2, -2, 1, -1, 3, 0, -3 ms: sd
        # 2 ms (28 / 7 = 4), standard error 2 / sqrt(8) = 0.7071 ms, t = 14.14 against 1.895; rate 0.9: needed
        dev = (0, 2, -2, 1, -1, 3, 0, -3)
        iv = {"rate": 0.9, "block_excess_s": [0.010 + d / 1000 for d in dev]}
        v = probe.memory_map_needed(iv)
        self.assertTrue(v["needed"])
        self.assertAlmostEqual(v["t"], 10 / (2 / math.sqrt(8)), places=6)
        self.assertEqual((v["t_min"], v["blocks"], v["rate"]), (1.895, 8, 0.9))
        self.assertAlmostEqual(v["excess_s"], 0.010)
        self.assertNotIn("receive_excess_s", v)
        # 1.3 ms slower on average: t 1.84, under 1.895, not needed; 1.4 ms: 1.98, needed
        self.assertFalse(probe.memory_map_needed(dict(iv, block_excess_s=[0.0013 + d / 1000 for d in dev]))["needed"])
        self.assertTrue(probe.memory_map_needed(dict(iv, block_excess_s=[0.0014 + d / 1000 for d in dev]))["needed"])
        # a loss over the work's own time (mm:5's 2.21: the interpreter lock behind the receive) or none: not needed
        self.assertFalse(probe.memory_map_needed(dict(iv, rate=2.21))["needed"])
        self.assertFalse(probe.memory_map_needed(dict(iv, rate=0.0))["needed"])
        # the blocks beside the receive alone come along where measured
        self.assertAlmostEqual(probe.memory_map_needed(dict(iv, receive_block_excess_s=[0.004, 0.006, None]))[
            "receive_excess_s"], 0.005)
        # results from before the twenty-sixth session: each block's rate times the mean overlap; under 3 blocks or
        # no rate: no verdict
        old = {"rate": 0.5, "block_rates": [0.5, None, 1.0, 0.6], "overlap_s_per_step": 0.01}
        self.assertEqual(probe.block_excess_s(old), [0.005, 0.01, 0.006])
        self.assertEqual(probe.memory_map_needed(old)["blocks"], 3)
        self.assertIsNone(probe.memory_map_needed(dict(iv, block_excess_s=iv["block_excess_s"][:2])))
        self.assertIsNone(probe.memory_map_needed({"block_excess_s": iv["block_excess_s"]}))
        self.assertEqual(probe.block_excess_s({"receive_block_excess_s": [0.004, float("nan")]}, "receive_block_excess_s"),
                         [0.004])

    def test_the_interleaved_blocks_decide_whether_the_loop_needs_the_memory_map(self):
        # run 30's GIL call: the ResNet-50 loop's blocks read 0.73 ... 1.03 a second of 11.06 ms of pin work a step
        # (rate 0.91, excess 10.1 ms, t 12): needed, whatever its windows' fault counts (copy-on-write) say
        rates = [0.73, 0.85, 0.58, 1.11, 0.75, 1.08, 1.17, 1.03]
        resnet = {"pin_memory_interleaved": {"rate": 0.91, "block_rates": rates, "overlap_s_per_step": 0.01106,
                                             "blocks": 8},
                  "pin_memory_loop_minor_faults_per_step": 2.0, "private_copy_loop_minor_faults_per_step": 1.0}
        self.assertTrue(convert.loop_needs_memory_map({"host_beside_pin_parts": resnet}))
        # run 29's B1 mm:5 loop: 2.21 a second of 0.28 ms of work (the lock's): not needed, whatever the faults say
        mm5 = {"pin_memory_interleaved": {"rate": 2.21, "block_rates": [2.9, 1.2, 2.5, 3.1, 1.4, 2.0, 2.6, 1.98],
                                          "overlap_s_per_step": 0.00028, "blocks": 8},
               "pin_memory_loop_minor_faults_per_step": 62.0, "private_copy_loop_minor_faults_per_step": 1.0}
        self.assertFalse(convert.loop_needs_memory_map({"host_beside_pin_parts": mm5}))
        # interleaved blocks that failed (or none, runs 18-27): the fault counts decide, as before run 30
        failed = dict(mm5, pin_memory_interleaved={"error": "RuntimeError: x"})
        self.assertTrue(convert.loop_needs_memory_map({"host_beside_pin_parts": failed}))

    def test_a_loop_slowed_at_the_pin_parts_rate_waits_that_share_of_each_need_interval(self):
        # run 26's pinned GIL loop: 27.35 ms of launches, 60.23 needs a step (0.454 ms apart), the cases' rate 0.76:
        # each need waits 0.454 x 0.76 / 0.24 = 1.438 ms, the time the loop loses over one interval at a quarter speed
        self.assertAlmostEqual(convert.memory_map_wait_from_rate(0.02735, 60.23, 0.76),
                               0.02735 / 60.23 * 0.76 / 0.24)
        self.assertAlmostEqual(convert.memory_map_wait_from_rate(0.02735, 60.23, 0.76), 0.001438, places=6)
        # no count: the simulator's default interval, 0.5 ms; a rate of one half waits one interval
        self.assertAlmostEqual(convert.memory_map_wait_from_rate(0.030, None, 0.5), 0.0005)
        # run 27's probe: the loop 22.75 ms alone and 25.00 alone again, 31.38 beside pin_memory(), whose work
        # overlapped 9.79 ms of each step: (31.38 - 23.875) / 9.79 = 0.767 (its per-step slope, 1.69, is ignored)
        line = {"steps": 30, "base_s": 0.01486, "slope": 1.69, "overlap_s_per_step": 0.00979, "loop_s": 0.03138}
        parts = {"pin_memory_loop_stall_per_work_overlap": line, "pin_memory_loop_minor_faults_per_step": 60.23,
                 "touch_loop_minor_faults_per_step": 56.0, "private_copy_loop_minor_faults_per_step": 1.0,
                 "touch_host_s": {"mean": 0.037}, "private_copy_host_s": {"mean": 0.028},
                 "alone_host_s": {"mean": 0.02275}, "alone_again_host_s": {"mean": 0.02500},
                 "pin_memory_host_s": {"mean": 0.03138}}
        rate = (0.03138 - (0.02275 + 0.02500) / 2) / 0.00979
        self.assertAlmostEqual(convert.memory_map_rate({"host_beside_pin_parts": parts}), rate)
        self.assertAlmostEqual(rate, 0.767, places=3)
        # only one alone window: that one
        one = {k: v for k, v in parts.items() if k != "alone_again_host_s"}
        self.assertAlmostEqual(convert.memory_map_rate({"host_beside_pin_parts": one}), (0.03138 - 0.02275) / 0.00979)
        # no rate: the loop faster beside the work than alone, or slower by more than the work's time; no overlap;
        # a part that failed, or none recorded (calls before run 27)
        for beside in (0.0230, 0.0238, 0.0400):
            self.assertIsNone(convert.memory_map_rate({"host_beside_pin_parts": dict(
                parts, pin_memory_host_s={"mean": beside})}))
        for ov in (0.0, None):
            self.assertIsNone(convert.memory_map_rate({"host_beside_pin_parts": dict(
                parts, pin_memory_loop_stall_per_work_overlap=dict(line, overlap_s_per_step=ov))}))
        self.assertIsNone(convert.memory_map_rate({"host_beside_pin_parts": dict(parts, error="RuntimeError: x")}))
        self.assertIsNone(convert.memory_map_rate({"host_beside_pin_parts": {"touch_host_s": {"mean": 0.03}}}))
        # the interleaved blocks win where they gave a rate; one that is no rate gives none (not the means);
        # an interleaved reading that failed leaves the means
        self.assertEqual(convert.memory_map_rate({"host_beside_pin_parts": dict(
            parts, pin_memory_interleaved={"rate": 0.62, "blocks": 5})}), 0.62)
        self.assertIsNone(convert.memory_map_rate({"host_beside_pin_parts": dict(
            parts, pin_memory_interleaved={"rate": 1.3, "blocks": 5})}))
        self.assertAlmostEqual(convert.memory_map_rate({"host_beside_pin_parts": dict(
            parts, pin_memory_interleaved={"error": "RuntimeError: x"})}), rate)
        # in a scenario: with --memory-map-wait pin-parts (the default since run 28), only for a loop that needs the map
        c = make_case("g", "pin_memory_gil", 1800, 0.036, 0.045)
        c["components"]["host_beside_pin_parts"] = parts
        tr = convert.scenario_for(c, {"cpu_cores": 16}, memory_map_wait="pin-parts")["training"]
        self.assertTrue(tr["host_needs_memory_map"])
        # at the simulator's default need interval: the parts' fault counts were copy-on-write (run 30, finding 1)
        self.assertAlmostEqual(tr["memory_map_wait_s"],
                               convert.memory_map_wait_from_rate(tr["host_s_per_step"], None, rate), places=7)
        self.assertNotIn("memory_map_needs_per_step", tr)
        self.assertEqual(convert.scenario_for(c, {"cpu_cores": 16})["training"]["memory_map_wait_s"], tr["memory_map_wait_s"])
        self.assertNotIn("memory_map_wait_s",
                         convert.scenario_for(c, {"cpu_cores": 16}, memory_map_wait="off")["training"])
        c["components"]["host_beside_pin_parts"] = dict(parts, pin_memory_loop_minor_faults_per_step=2.0,
                                                        touch_loop_minor_faults_per_step=2.0)
        self.assertNotIn("memory_map_wait_s",
                         convert.scenario_for(c, {"cpu_cores": 16}, memory_map_wait="pin-parts")["training"])

    def test_the_loops_faults_beside_the_pin_threads_work_decide_whether_it_needs_the_memory_map(self):
        # run 20's first call: a ResNet-50 loop at 29.4 ms alone ran 37.91 beside touch and 30.58 beside a private
        # copy (1.24, under the time rule's 1.25) while faulting 59.2 times a step beside pin_memory() against 0.8
        slow = {"touch_host_s": {"mean": 0.03791}, "private_copy_host_s": {"mean": 0.03058},
                "receive_thread_cpu_s_per_batch": 0.00582, "pin_memory_loop_minor_faults_per_step": 59.2,
                "touch_loop_minor_faults_per_step": 54.9, "private_copy_loop_minor_faults_per_step": 0.8}
        self.assertTrue(convert.loop_needs_memory_map({"host_beside_pin_parts": slow}))
        # the same windows without the counts: the time rule, which misses it
        uncounted = {k: v for k, v in slow.items() if "faults" not in k}
        self.assertFalse(convert.loop_needs_memory_map({"host_beside_pin_parts": uncounted}))
        # run 20's mm:25 loop: 9.47 ms beside touch against 3.89 (2.4x) and 4.1 faults a step against 0 (a zero
        # count is a count): 4.1 more is under 20, not a loop that keeps needing the map
        gemm = {"touch_host_s": {"mean": 0.00947}, "private_copy_host_s": {"mean": 0.00389},
                "receive_thread_cpu_s_per_batch": 0.00618, "pin_memory_loop_minor_faults_per_step": 4.1,
                "touch_loop_minor_faults_per_step": 4.2, "private_copy_loop_minor_faults_per_step": 0.0}
        self.assertFalse(convert.loop_needs_memory_map({"host_beside_pin_parts": gemm}))
        # the threshold on the difference: as many faults beside a private copy is not the map's work
        self.assertFalse(convert.loop_needs_memory_map({"host_beside_pin_parts": dict(
            slow, private_copy_loop_minor_faults_per_step=50.0)}))

    def test_the_loop_needs_the_memory_map_when_touching_slows_it_beyond_a_private_copy(self):
        # run 17's GIL call: 32.38 ms beside touching workers' batches, 20.73 beside a private copy: 1.56 > 1.25,
        # and 11.65 ms more, above the receive's 3.57 ms of CPU a batch (the most its GIL-held part can be)
        parts = {"touch_host_s": {"mean": 0.03238}, "private_copy_host_s": {"mean": 0.02073},
                 "copy_host_s": {"mean": 0.03071}, "alone_host_s": {"mean": 0.01866}, "alone_again_host_s": {"mean": 0.02146},
                 "receive_thread_cpu_s_per_batch": 0.00357}
        self.assertTrue(convert.loop_needs_memory_map({"host_beside_pin_parts": parts}))
        # 24 ms against 20.73: 1.16, inside twice the loop's own wander
        self.assertFalse(convert.loop_needs_memory_map({"host_beside_pin_parts": dict(parts, touch_host_s={"mean": 0.024})}))
        # a light loop: 0.8 ms alone, 2.9 beside touch (3.6x) but 2.1 ms more is within a 3.1 ms receive: the GIL's
        light = {"touch_host_s": {"mean": 0.0029}, "private_copy_host_s": {"mean": 0.0008},
                 "receive_thread_cpu_s_per_batch": 0.0031}
        self.assertFalse(convert.loop_needs_memory_map({"host_beside_pin_parts": light}))
        # run 17's first call had copy and alone only: 30.56 against the mean of 18.57 and 23.32 (20.945): 1.46
        first = {"copy_host_s": {"mean": 0.03056}, "alone_host_s": {"mean": 0.01857}, "alone_again_host_s": {"mean": 0.02332},
                 "receive_thread_cpu_s_per_batch": 0.00309}
        self.assertTrue(convert.loop_needs_memory_map({"host_beside_pin_parts": first}))
        # run 16 had host_beside_loader only: B2's 30.41 ms beside a pinning loader against 17.34 and 25.56 alone
        # (mean 21.45): 1.42 > 1.25 and 8.96 ms more than a 5.33 ms receive (the transport's); an unpinned figure
        # does not count
        hbl = {"alone_host_s": {"mean": 0.01734}, "pinned_host_s": {"mean": 0.03041}, "unpinned_host_s": {"mean": 0.02621},
               "alone_again_host_s": {"mean": 0.02556}}
        transport = {"receive_s_per_batch": 0.00533}
        self.assertTrue(convert.loop_needs_memory_map({"host_beside_loader": hbl, "transport": transport}))
        self.assertFalse(convert.loop_needs_memory_map({"host_beside_loader": dict(hbl, pinned_host_s={"mean": 0.025}),
                                                        "transport": transport}))
        # the pin parts, where measured, decide over host_beside_loader
        self.assertFalse(convert.loop_needs_memory_map({"host_beside_loader": hbl, "host_beside_pin_parts":
                                                        dict(parts, touch_host_s={"mean": 0.024})}))
        # not measured or failed: no verdict (the simulator's default, the loop never waits for the map)
        self.assertIsNone(convert.loop_needs_memory_map({}))
        self.assertIsNone(convert.loop_needs_memory_map({"host_beside_pin_parts": {"error": "RuntimeError: x"}}))

    def test_per_call_summary_by_hand(self):
        def row(cid, err, step_err, ok):
            return {"id": cid, "pipeplan": {"err": err, "step_p90_err": step_err, "bottleneck_ok": ok}}
        rows = [row("r2:00-a", 0.10, -0.20, True), row("r2:01-b", -0.04, 0.10, True), row("r2:02-c", -0.02, 0.0, False),
                row("r10:00-a", 0.30, 0.50, True), row("r1:00-a", 0.01, 0.01, True), row("r1:01-b", None, None, True)]
        rows[-1]["pipeplan"] = {"error": "timeout"}                           # not simulated: left out
        out = convert.per_call_summary(rows)
        self.assertEqual([c["tag"] for c in out], ["r1", "r2", "r10"])       # call order, not string order
        r2 = out[1]
        self.assertEqual(r2["n"], 3)
        self.assertAlmostEqual(r2["median_abs_throughput_err"], 0.04)        # |0.10|, |-0.04|, |-0.02|
        self.assertAlmostEqual(r2["median_throughput_err"], -0.02)           # signed: leans slow
        self.assertAlmostEqual(r2["median_abs_step_p90_err"], 0.10)
        self.assertAlmostEqual(r2["bottleneck_agreement"], 2 / 3)
        self.assertEqual(out[0]["n"], 1)

    def test_transport_on_cpu_clock_takes_the_loops_cpu_where_measured(self):
        # run 15 call B1: the pin loop's wall 18.90 ms per batch against its pin thread's CPU 16.60 ms;
        # the receive loop 6.08 ms wall, 5.48 ms CPU. The cases' pin threads spent 16.6-19.5 ms of CPU.
        tr = {"receive_s_per_batch": 0.00608, "receive_cpu_s_per_batch": 0.00548,
              "pin_s_per_batch": 0.01890, "pin_thread_cpu_s_per_batch": 0.01660, "num_workers": 12}
        out = convert.transport_on_cpu_clock(tr)
        self.assertEqual((out["receive_s_per_batch"], out["pin_s_per_batch"]), (0.00548, 0.01660))
        self.assertEqual(tr["pin_s_per_batch"], 0.01890)                     # the component untouched
        # runs before 11 (no CPU figure) or a zero figure: the wall stays
        old = {"receive_s_per_batch": 0.004, "pin_s_per_batch": 0.010, "pin_thread_cpu_s_per_batch": 0.0}
        self.assertEqual(convert.transport_on_cpu_clock(old), old)

    def test_load_scaling_with_the_cases_collate_gives_base_and_curve(self):
        w = make_case("w", "num_workers", 100, 0.3, 0.3, nw=8)
        w["components"]["in_worker"] = {"getitem_wall_s": 0.0037, "collate_wall_s": 0.027}
        pts = [{"workers": 1, "getitem_s": 0.0044, "relative_speed": 1.0},
               {"workers": 8, "getitem_s": 0.0046, "relative_speed": 0.0044 / 0.0046}]
        w["components"]["load_scaling"] = {"points": pts}              # old form: curve only
        self.assertEqual(convert.scenario_for(w, {"cpu_cores": 16})["dataset"]["load_s_per_sample"]["mean"], 0.0037)
        w["components"]["load_scaling"] = {"points": pts, "collate": "the case's collate_fn", "batch_size": 64}
        s = convert.scenario_for(w, {"cpu_cores": 16})
        self.assertEqual(s["dataset"]["load_s_per_sample"]["mean"], 0.0044)
        self.assertEqual(s["loader"]["collate_s_per_batch"], 0.027)      # collate still from in_worker
        self.assertAlmostEqual(s["dataset"]["load_speed_vs_busy_cores"][1]["relative_speed"], 0.9565)

    def test_probe_before_the_case_gives_its_costs(self):
        w = make_case("w", "num_workers", 100, 0.3, 0.3, nw=8)
        w["components"]["in_worker"] = {"getitem_wall_s": 0.0037, "collate_wall_s": 0.027}
        w["components"]["load_scaling"] = {"collate": "the case's collate_fn", "points": [
            {"workers": 1, "getitem_s": 0.0044, "relative_speed": 1.0},
            {"workers": 8, "getitem_s": 0.0046, "relative_speed": 0.0044 / 0.0046}]}
        w["components"]["probe"] = {"getitem_wall_s": 0.0041, "collate_wall_s": 0.029}
        s = convert.scenario_for(w, {"cpu_cores": 16})
        self.assertEqual(s["dataset"]["load_s_per_sample"]["mean"], 0.0041)
        self.assertEqual(s["loader"]["collate_s_per_batch"], 0.029)
        self.assertEqual(len(s["dataset"]["load_speed_vs_busy_cores"]), 2)
        # the same probe right after the case: the mean of the two brackets the case in time
        w["components"]["probe_after"] = {"getitem_wall_s": 0.0045, "collate_wall_s": 0.031}
        s = convert.scenario_for(w, {"cpu_cores": 16})
        self.assertAlmostEqual(s["dataset"]["load_s_per_sample"]["mean"], 0.0043)
        self.assertAlmostEqual(s["loader"]["collate_s_per_batch"], 0.030)
        w["components"]["probe_after"] = {"error": "RuntimeError: y"}       # a failed one after: the one before
        self.assertEqual(convert.scenario_for(w, {"cpu_cores": 16})["dataset"]["load_s_per_sample"]["mean"], 0.0041)
        # probes at different worker counts are not averaged
        self.assertEqual(convert.probe_bracket({"workers": 8, "getitem_wall_s": 1.0, "collate_wall_s": 1.0},
                                               {"workers": 4, "getitem_wall_s": 3.0, "collate_wall_s": 3.0})
                         ["getitem_wall_s"], 1.0)
        w["components"]["probe"] = {"error": "RuntimeError: x"}             # a failed probe is ignored
        self.assertEqual(convert.scenario_for(w, {"cpu_cores": 16})["dataset"]["load_s_per_sample"]["mean"], 0.0044)
        # no probe before (a cold case, probed after on the re-warmed cache since run 17): the one after alone
        w["components"]["probe_after"] = {"getitem_wall_s": 0.0047, "collate_wall_s": 0.031}
        self.assertAlmostEqual(convert.scenario_for(w, {"cpu_cores": 16})["dataset"]["load_s_per_sample"]["mean"], 0.0047)
        w["components"]["probe_after"] = {"error": "RuntimeError: y"}
        inline = make_case("i", "num_workers", 100, 0.3, 0.3, nw=0)
        inline["components"]["probe"] = {"getitem_wall_s": 0.0041, "collate_wall_s": 0.029}
        self.assertNotEqual(convert.scenario_for(inline, {"cpu_cores": 16})["dataset"]["load_s_per_sample"]["mean"], 0.0041)

    def test_an_oversubscribed_probe_is_taken_at_its_cpu_time(self):
        # run 14's 24-worker probe on 16 cores: 19.4 workers busy by wall time, 0.7 cores of main side,
        # 8.2 ms of wall per sample against 5.9 ms of CPU; collate 47.8 ms of wall
        p = {"workers": 24, "getitem_wall_s": 0.0082, "getitem_cpu_s": 0.0059, "busy_workers": 19.4,
             "busy_cores": 20.1, "collate_wall_s": 0.0478}
        q = convert.probe_on_cores(p, 16)
        ratio = 0.0059 / 0.0082
        self.assertEqual(q["getitem_wall_s"], 0.0059)
        self.assertAlmostEqual(q["collate_wall_s"], 0.0478 * ratio)
        self.assertAlmostEqual(q["busy_workers"], 19.4 * ratio)            # 13.96 cores of work
        self.assertAlmostEqual(q["busy_cores"], 19.4 * ratio + 0.7)       # plus the main side as it was
        self.assertLessEqual(q["busy_cores"], 16)
        # within the machine's cores, or without CPU figures: as measured
        self.assertIs(convert.probe_on_cores(p, 24), p)
        self.assertIs(convert.probe_on_cores(dict(p, getitem_cpu_s=None), 16)["getitem_wall_s"], 0.0082)
        old = {"workers": 8, "getitem_wall_s": 0.005, "collate_wall_s": 0.03}     # harness before run 14
        self.assertIs(convert.probe_on_cores(old, 4), old)
        # in a scenario: the load at CPU time, before and after alike
        w = make_case("w", "num_workers", 2000, 0.032, 0.036, nw=24)
        w["components"]["probe"] = p
        w["components"]["probe_after"] = dict(p)
        s = convert.scenario_for(w, {"cpu_cores": 16}, load_curve_from="machine")
        self.assertAlmostEqual(s["dataset"]["load_s_per_sample"]["mean"], 0.0059)

    def test_the_share_a_periodic_steps_starts_with(self):
        # step 25 ms at duty 0.5 (25 ms idle), tau 25 ms: a = b = e^-1; share_start = b (1 - a) / (1 - a b)
        e1 = math.exp(-1.0)
        self.assertAlmostEqual(convert.share_at_step_start(0.5, 0.025, 0.025), e1 * (1 - e1) / (1 - e1 * e1))
        self.assertAlmostEqual(convert.share_at_step_start(0.5, 0.025, 1e6), 0.5, places=4)   # long tau: the duty
        self.assertEqual(convert.share_at_step_start(1.0, 0.025, 0.025), 1.0)
        self.assertEqual(convert.share_at_step_start(0.0, 0.025, 0.025), 0.0)
        # the shape's excess at a share, its ends (0, 0) and (1, 1)
        self.assertAlmostEqual(convert.excess_at_share([(0.5, 0.2)], 0.25), 0.1)
        self.assertAlmostEqual(convert.excess_at_share([(0.5, 0.2)], 0.75), 0.6)
        # a shape point moves to the share its step starts with (the step taking its own time there)
        iso, sus = 0.025, 0.030
        moved = convert.shape_at_step_start([(0.5, 0.2)], iso, sus, 0.025)
        self.assertAlmostEqual(moved[0][0], convert.share_at_step_start(0.5, 0.026, 0.025))
        self.assertEqual(moved[0][1], 0.2)

    def test_the_duty_time_constant_from_rest_curves(self):
        # rest curves made with tau = 30 ms and a line shape are given back (on the grid, within its step)
        iso, sus, tau = 0.025, 0.030, 0.030
        pts = [{"rest_s": r, "gpu_s": iso + math.exp(-r / tau) * (sus - iso)} for r in (0.01, 0.03, 0.1, 0.3)]
        got = convert.rest_curves_time_constant([(pts, iso, sus, None)])
        self.assertAlmostEqual(got, tau, delta=0.06 * tau)
        self.assertIsNone(convert.rest_curves_time_constant([(pts[:2], iso, sus, None)]))   # too few points
        # the call's curve as the harness writes it
        comps = {"gpu_rest_curve": {"step": "mm:25/image/b64", "points": pts},
                 "step": {"mm:25/image/b64": {"gpu_s": {"mean": iso}, "sustained_interval_s": {"mean": sus},
                                              "sustained_is_gpu_time": True}}}
        self.assertAlmostEqual(convert.calls_duty_time_constant([(comps, None)]), tau, delta=0.06 * tau)
        self.assertIsNone(convert.calls_duty_time_constant([({}, None)]))
        # a burst ramp made with tau = 40 ms and a line shape: before position k the GPU was busy for the steps
        # ahead, share 1 - e^(-busy / tau); given back alone
        tau, busy, ramp = 0.040, 0.0, []
        for k in range(8):
            t = iso + (1.0 - math.exp(-busy / tau)) * (sus - iso)
            ramp.append({"position": k, "gpu_s": t})
            busy += t
        self.assertAlmostEqual(convert.rest_curves_time_constant([], [(ramp, iso, sus, None)]), tau, delta=0.06 * tau)
        comps["gpu_burst_ramps"] = {"mm:25/image/b64": {"step": "mm:25/image/b64", "points": ramp}}
        del comps["gpu_rest_curve"]
        self.assertAlmostEqual(convert.calls_duty_time_constant([(comps, None)]), tau, delta=0.06 * tau)

    def test_the_duty_time_constant_is_pooled_per_gpu_kind(self):
        # rest curves made with tau = 30 ms on one GPU kind and 80 ms on another: each kind gets its own back, so a
        # call on the second kind does not move the first's (run 64's H100 calls moved the pooled H200 figure)
        iso, sus = 0.025, 0.030

        def call_with_tau(tau):
            pts = [{"rest_s": r, "gpu_s": iso + math.exp(-r / tau) * (sus - iso)} for r in (0.01, 0.03, 0.1, 0.3)]
            return {"gpu_rest_curve": {"step": "mm:25/image/b64", "points": pts},
                    "step": {"mm:25/image/b64": {"gpu_s": {"mean": iso}, "sustained_interval_s": {"mean": sus},
                                                 "sustained_is_gpu_time": True}}}
        h200, h100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"
        alone = convert.duty_time_constants_by_gpu([(h200, call_with_tau(0.030), None)] * 2)
        mixed = convert.duty_time_constants_by_gpu([(h200, call_with_tau(0.030), None)] * 2
                                                   + [(h100, call_with_tau(0.080), None)])
        self.assertEqual(mixed[h200], alone[h200])
        self.assertAlmostEqual(mixed[h200], 0.030, delta=0.06 * 0.030)
        self.assertAlmostEqual(mixed[h100], 0.080, delta=0.06 * 0.080)
        # pooled as before this split, the second kind pulls the first's away from its own
        pooled = convert.calls_duty_time_constant([(call_with_tau(0.030), None)] * 2 + [(call_with_tau(0.080), None)])
        self.assertGreater(abs(pooled - 0.030), 0.06 * 0.030)
        self.assertEqual(convert.call_gpu({"machine": {"gpu": h100}}), h100)
        self.assertEqual(convert.call_gpu({}), "")

    def test_main_side_drift_from_the_probes_around_the_case(self):
        # the pin-thread check's figures (2026-11-30): transport alone 14.44 ms of pin-thread CPU per batch;
        # probes around a case 17.0 and 18.0 -> the case's main side is (17.0 + 18.0) / 2 / 14.44 as dear
        c = make_case("p", "pin_memory_tensor", 3505, 0.0183, 0.021)
        c["components"]["transport"] = {"num_workers": 12, "receive_s_per_batch": 0.00554,
                                        "pin_s_per_batch": 0.01502, "pin_thread_cpu_s_per_batch": 0.01444,
                                        "receive_cpu_s_per_batch": 0.0050}
        self.assertIsNone(convert.main_side_drift(c))            # runs before 11: no probe figure
        c["components"]["probe"] = {"pin_memory": True, "pin_thread_cpu_s_per_batch": 0.0170,
                                    "main_thread_cpu_s_per_batch": 0.0004}
        self.assertAlmostEqual(convert.main_side_drift(c), 0.0170 / 0.01444)
        c["components"]["probe_after"] = {"pin_memory": True, "pin_thread_cpu_s_per_batch": 0.0180}
        self.assertAlmostEqual(convert.main_side_drift(c), 0.0175 / 0.01444)
        # without pinning the main thread's receive is compared with the transport's receive loop
        n = make_case("n", "pin_memory_tensor", 2700, 0.0237, 0.025, pin_memory=False)
        n["components"]["transport"] = c["components"]["transport"]
        n["components"]["probe"] = {"pin_memory": False, "main_thread_cpu_s_per_batch": 0.0055}
        self.assertAlmostEqual(convert.main_side_drift(n), 0.0055 / 0.0050)
        # a probe that did not pin says nothing about a pinned case's pin thread
        n["knobs"]["pin_memory"] = True
        self.assertIsNone(convert.main_side_drift(n))

    def test_main_side_drift_reads_the_late_half_of_a_pinned_probe(self):
        # run 24's B2 pin r1 case: its probe's pin thread 24.6 ms a batch over the window, 38.0 over its first half
        # (a fresh loader's start-up) and 16.25 over its second; the case itself 17.5. The whole window is the
        # default, the late half on request; a probe without halves (runs before 13) gives its whole window either way
        c = make_case("p", "pin_memory_image", 1548, 0.041, 0.045)
        c["components"]["transport"] = {"num_workers": 8, "pin_thread_cpu_s_per_batch": 0.0160,
                                        "receive_cpu_s_per_batch": 0.0050}
        c["components"]["probe"] = {"pin_memory": True, "workers": 8, "pin_thread_cpu_s_per_batch": 0.0246,
                                    "pin_thread_cpu_s_per_batch_halves": [0.0380, 0.01625]}
        c["components"]["probe_after"] = {"pin_memory": True, "workers": 8, "pin_thread_cpu_s_per_batch": 0.0177}
        self.assertAlmostEqual(convert.main_side_drift(c, "late-half"), (0.01625 + 0.0177) / 2 / 0.0160)
        self.assertAlmostEqual(convert.main_side_drift(c), (0.0246 + 0.0177) / 2 / 0.0160)
        self.assertAlmostEqual(convert.probe_pin_thread_s(c["components"]["probe"], "late-half"), 0.01625)
        self.assertAlmostEqual(convert.probe_pin_thread_s(c["components"]["probe"]), 0.0246)
        # a half with no batches in it (0) is no figure: the whole window stands
        c["components"]["probe"]["pin_thread_cpu_s_per_batch_halves"] = [0.0246, 0.0]
        self.assertAlmostEqual(convert.probe_pin_thread_s(c["components"]["probe"], "late-half"), 0.0246)

    def test_probe_with_the_cases_workers_is_reproduced_at_that_concurrency(self):
        # Probe at K = 8 workers: 4.1 ms per sample, 29 ms collate. The simulator runs a load at
        # base / dataset_curve(busy) and a collate at base / machine_curve(busy), so at 8 busy
        # cores it must give back the probe: dataset curve relative to 8 (load_scaling: 1 worker
        # 4.4 ms, 8 workers 4.6 ms -> 1.0 at 8, 4.6/4.4 at 1), collate base 29 ms x machine(8) = 0.8.
        w = make_case("w", "num_workers", 100, 0.3, 0.3, nw=8)
        w["components"]["load_scaling"] = {"collate": "the case's collate_fn", "points": [
            {"workers": 1, "getitem_s": 0.0044, "relative_speed": 1.0},
            {"workers": 8, "getitem_s": 0.0046, "relative_speed": 0.0044 / 0.0046}]}
        w["components"]["probe"] = {"workers": 8, "getitem_wall_s": 0.0041, "collate_wall_s": 0.029}
        machine_curve = [{"busy_cores": 1, "relative_speed": 1.0}, {"busy_cores": 16, "relative_speed": 0.7}]
        machine_at_8 = 1.0 - 0.3 * 7 / 15
        s = convert.scenario_for(w, {"cpu_cores": 16}, cpu_curve=machine_curve)
        self.assertEqual(s["dataset"]["load_s_per_sample"]["mean"], 0.0041)
        curve = s["dataset"]["load_speed_vs_busy_cores"]
        self.assertAlmostEqual(convert.relative_core_speed(curve, 8), 1.0, places=4)
        self.assertAlmostEqual(convert.relative_core_speed(curve, 1), 0.0046 / 0.0044, places=4)
        self.assertAlmostEqual(s["loader"]["collate_s_per_batch"] / machine_at_8, 0.029)
        # without a dataset curve the load base is brought back by the machine curve too
        del w["components"]["load_scaling"]
        s = convert.scenario_for(w, {"cpu_cores": 16}, cpu_curve=machine_curve)
        self.assertAlmostEqual(s["dataset"]["load_s_per_sample"]["mean"] / machine_at_8, 0.0041)
        # --load-curve machine: load_scaling is there but not used; the probe's load is brought back by
        # the machine curve at K and the scenario carries no dataset curve
        w["components"]["load_scaling"] = {"collate": "the case's collate_fn", "points": [
            {"workers": 1, "getitem_s": 0.0044, "relative_speed": 1.0},
            {"workers": 8, "getitem_s": 0.0046, "relative_speed": 0.0044 / 0.0046}]}
        s = convert.scenario_for(w, {"cpu_cores": 16}, cpu_curve=machine_curve, load_curve_from="machine")
        self.assertNotIn("load_speed_vs_busy_cores", s["dataset"])
        self.assertAlmostEqual(s["dataset"]["load_s_per_sample"]["mean"] / machine_at_8, 0.0041)

    def test_probe_and_load_scaling_on_the_cores_their_windows_kept_busy(self):
        # Harness since run 14: each window reports the cores it kept busy. load_scaling's points sit
        # there (1 worker -> 1.3 cores, 8 workers -> 9.0), not at K, and the curve is taken relative to
        # the probe's own 5.0 busy cores (a pin-bound probe with K = 8), not to 8. By hand: the curve
        # (1.3, 1.0), (9.0, 0.5) at 5.0 is 1.0 - 0.5 x 3.7 / 7.7 = 0.75974; relative: 1 / 0.75974 at
        # 1.3, 0.5 / 0.75974 at 9.0. Collate is brought back by the machine curve at 5.0, not at 8.
        w = make_case("w", "num_workers", 100, 0.3, 0.3, nw=8)
        w["components"]["load_scaling"] = {"collate": "the case's collate_fn", "points": [
            {"workers": 1, "getitem_s": 0.002, "relative_speed": 1.0, "busy_cores": 1.3},
            {"workers": 8, "getitem_s": 0.004, "relative_speed": 0.5, "busy_cores": 9.0}]}
        w["components"]["probe"] = {"workers": 8, "getitem_wall_s": 0.003, "collate_wall_s": 0.02, "busy_cores": 4.0}
        w["components"]["probe_after"] = {"workers": 8, "getitem_wall_s": 0.003, "collate_wall_s": 0.02,
                                          "busy_cores": 6.0}
        machine_curve = [{"busy_cores": 1, "relative_speed": 1.0}, {"busy_cores": 16, "relative_speed": 0.7}]
        s = convert.scenario_for(w, {"cpu_cores": 16}, cpu_curve=machine_curve)
        curve = s["dataset"]["load_speed_vs_busy_cores"]
        at_probe = 1.0 - 0.5 * 3.7 / 7.7
        self.assertEqual([q["busy_cores"] for q in curve], [1.3, 9.0])
        self.assertAlmostEqual(curve[0]["relative_speed"], round(1.0 / at_probe, 4))
        self.assertAlmostEqual(curve[1]["relative_speed"], round(0.5 / at_probe, 4))
        self.assertAlmostEqual(s["loader"]["collate_s_per_batch"], 0.02 * (1.0 - 0.3 * 4.0 / 15))
        # runs before 14 (no busy_cores): the configured K, as before
        self.assertEqual(convert.probe_busy_cores({"workers": 8}), 8.0)
        self.assertEqual(convert.probe_busy_cores({"workers": 0}), 1.0)

    def test_tau_within_noise_ties_pairs_the_ground_truth_cannot_order(self):
        # measured 100, 103, 150; predicted order 2, 1, 3. Raw: (0,1) discordant, (0,2) and (1,2)
        # concordant -> (2 - 1) / 3. Within 5% noise, (0,1) cannot be ordered (3 / 101.5 = 3%) and is left
        # out: both pairs the ground truth orders are concordant -> 2 / sqrt(2 x 2) = 1.
        x, y = [100.0, 103.0, 150.0], [2.0, 1.0, 3.0]
        self.assertAlmostEqual(convert.kendall_tau_b(x, y), 1 / 3)
        self.assertAlmostEqual(convert.kendall_tau_b_within_noise(x, y, 0.05), 1.0)
        self.assertAlmostEqual(convert.kendall_tau_b_within_noise(x, y, 0.0), 1 / 3)
        # a model that ties (1,2) and reverses (0,2): C 0, D 1, T 1 -> -1 / sqrt(1 x 2)
        self.assertAlmostEqual(convert.kendall_tau_b_within_noise(x, [3.0, 1.0, 1.0], 0.05), -1 / math.sqrt(2))
        # a model that ties both orderable pairs: 0
        self.assertEqual(convert.kendall_tau_b_within_noise(x, [1.0, 1.0, 1.0], 0.05), 0.0)
        self.assertIsNone(convert.kendall_tau_b_within_noise([100.0, 101.0], [1.0, 2.0], 0.05))
        self.assertEqual(convert.call_tag("r2:05-x"), "r2")
        self.assertEqual(convert.call_tag("05-x"), "")

    def test_measured_workers_busy_share(self):
        # 640 samples at 100 samples/s: a 6.4 s window; 4 workers spent 640 x 30 ms + 10 x 100 ms
        # = 20.2 s in getitem and collate -> 20.2 / (4 x 6.4) = 0.789
        c = {"knobs": {"num_workers": 4}, "measured": {
            "throughput_samples_per_s": 100.0, "samples_measured": 640,
            "in_situ": {"samples": 640, "getitem_wall_s": 0.03, "batches": 10, "collate_wall_s": 0.1}}}
        self.assertAlmostEqual(convert.measured_workers_busy(c), 20.2 / 25.6)
        # cold: its getitem's CPU (12 ms), not its wall (30 ms, most of it the disk's wait, the storage stage's):
        # 640 x 12 ms + 10 x 100 ms = 8.68 s over 25.6; warm keeps the wall even where the CPU time is given
        c["measured"]["in_situ"]["getitem_cpu_s"] = 0.012
        self.assertAlmostEqual(convert.measured_workers_busy(c), 20.2 / 25.6)
        c["knobs"]["storage"] = "cold"
        self.assertAlmostEqual(convert.measured_workers_busy(c), 8.68 / 25.6)
        # each batch's worker loop (the in-worker component's CPU a batch beyond getitem and collate, the scenario's
        # loader.worker_s_per_batch) counts as the simulator counts it: 10 batches x 6.5 ms more, 8.745 s
        c["components"] = {"in_worker": {"overhead_s_per_batch": 0.0065}}
        self.assertAlmostEqual(convert.measured_workers_busy(c), 8.745 / 25.6)
        c["knobs"]["num_workers"] = 0
        self.assertIsNone(convert.measured_workers_busy(c))

    def test_probe_turnaround_share_by_hand(self):
        # probes' turnarounds 2.0 and 2.4 ms with fetcher gaps 0.6 and 0.8 ms: a path of 2.9 ms a batch at mean,
        # over a 5.8 ms key: 0.5
        comp = {"probe": {"turnaround": {"turnaround_s": 0.0020, "fetch_gap_s": 0.0006}},
                "probe_after": {"turnaround": {"turnaround_s": 0.0024, "fetch_gap_s": 0.0008}}}
        self.assertAlmostEqual(convert.probe_turnaround_share(comp, 0.0058), 0.5)
        # one probe's reading is enough; a negative gap (the counters' rounding) counts as none
        comp["probe_after"] = {"turnaround": None}
        comp["probe"]["turnaround"]["fetch_gap_s"] = -0.0001
        self.assertAlmostEqual(convert.probe_turnaround_share(comp, 0.004), 0.5)
        # within [0.05, 1]; no key or no reading: None
        self.assertEqual(convert.probe_turnaround_share(comp, 0.001), 1.0)
        self.assertEqual(convert.probe_turnaround_share(comp, 1.0), 0.05)
        self.assertIsNone(convert.probe_turnaround_share(comp, 0.0))
        self.assertIsNone(convert.probe_turnaround_share({"probe": {}}, 0.004))

    def test_probe_turnaround_share_reads_the_gap_again_from_whole_batches(self):
        # a probe whose stored gap (the counters' samples / batches, bent by the window's edges) reads 17 ms, but
        # whose whole batches inside the window (worker_batch_s) are 300 and 304 ms against 64 x 4.0 ms + 44 ms timed
        # inside: 2 ms of fetcher. With the batch size its path is 1.0 + 2.0 ms over a 6 ms key: 0.5; without the
        # batch size the stored gap counts and the share is held at 1
        probe = {"turnaround": {"turnaround_s": 0.0010, "fetch_gap_s": 0.017}, "worker_batch_s": [[0.300], [0.304]],
                 "getitem_wall_s": 0.004, "collate_wall_s": 0.044, "samples": 610, "batches": 9}
        self.assertAlmostEqual(convert.probe_fetch_gap_s(probe, 64), 0.002)
        self.assertAlmostEqual(convert.probe_turnaround_share({"probe": probe}, 0.006, 64), 0.5)
        self.assertEqual(convert.probe_turnaround_share({"probe": probe}, 0.006), 1.0)
        self.assertIsNone(convert.probe_fetch_gap_s({"turnaround": {}}, 64))

    def test_wander_long_parts_reads_a_slow_memory(self):
        # four workers' log batch times from one AR(1) with lag-one 0.95 (a memory of about 20 batches) and a cv of
        # about 0.1, 400 batches each: the fit puts most of the variance in the slow part and gives it that memory
        import random
        rng = random.Random(7)
        series = []
        for _ in range(4):
            x, w = 0.0, []
            for _ in range(400):
                x = 0.95 * x + 0.1 * math.sqrt(1 - 0.95 ** 2) * rng.gauss(0.0, 1.0)
                w.append(0.065 * math.exp(x))
            series.append(w)
        knobs = {"kind": "tensor_f32", "batch_size": 64, "num_workers": 4, "pin_memory": True}
        comps = {"wander_long": {"tensor_f32/b64/w4/pin": {"worker_batch_s": series}}}
        scen = {"dataset": {"load_s_per_sample": {"mean": 0.0005, "cv": 0.0}}, "loader": {"batch_size": 64}}
        cpu = convert.wander_long_parts(knobs, comps, scen, with_level=False)
        self.assertGreater(cpu["core_speed_slow_cv"], 2 * cpu["core_speed_cv"])
        # lag-one 0.95 -> -1 / ln 0.95 = 19.5 batches; the fit's grid holds 0.93 (13.8) and 0.97 (32.8) beside it
        self.assertGreater(cpu["core_speed_slow_correlation_batches"], 10.0)
        self.assertLess(cpu["core_speed_slow_correlation_batches"], 40.0)
        # no reading for the key, too few workers or batches: None
        self.assertIsNone(convert.wander_long_parts(dict(knobs, num_workers=8), comps, scen))
        self.assertIsNone(convert.wander_long_parts(knobs, {"wander_long": {"tensor_f32/b64/w4/pin": {
            "worker_batch_s": [series[0][:7], series[1][:7]]}}}, scen))
        self.assertIsNone(convert.wander_long_parts(dict(knobs, storage="cold"), comps, scen))

    def test_relative_core_speed_matches_the_simulator(self):
        curve = [{"busy_cores": 4, "relative_speed": 0.9}, {"busy_cores": 1, "relative_speed": 1.0}]
        self.assertEqual(convert.relative_core_speed(curve, 0.5), 1.0)
        self.assertAlmostEqual(convert.relative_core_speed(curve, 2.5), 0.95)
        self.assertEqual(convert.relative_core_speed(curve, 9), 0.9)
        self.assertEqual(convert.relative_core_speed([], 3), 1.0)

    def test_inline_and_cold_and_epochs(self):
        s = convert.scenario_for(make_case("b", "num_workers", 100, 0.3, 0.3, nw=0), {"cpu_cores": 16})
        self.check_keys(s)
        self.assertNotIn("prefetch_factor", s["loader"])          # PyTorch raises otherwise
        self.assertNotIn("persistent_workers", s["loader"])
        self.assertNotIn("worker_start_s", s["loader"])
        s = convert.scenario_for(make_case("c", "storage", 100, 0.3, 0.3, storage="cold"), {"cpu_cores": 16})
        self.assertEqual(s["storage"]["page_cache_hit_ratio"], 0.0)
        s = convert.scenario_for(make_case("d", "persistent_workers", 100, 0.3, 0.3, epochs=4,
                                           persistent_workers=True), {"cpu_cores": 16})
        self.assertEqual((s["training"]["steps"], s["training"]["warmup_steps"]), (40, 10))
        self.assertEqual(s["dataset"]["num_samples"], 640)
        self.assertTrue(s["loader"]["persistent_workers"])


FAKE = r'''#!/usr/bin/env python3
import json, sys
args = sys.argv[1:]
assert args[0] == "simulate", args
scen = json.load(open(args[1]))
if scen["name"] == "bad":
    print("bad.json: training.step_s: expected > 0", file=sys.stderr); sys.exit(2)
nw = scen["loader"]["num_workers"]; bs = scen["loader"]["batch_size"]
load = scen["dataset"]["load_s_per_sample"]["mean"]; step = scen["training"]["step_s"]
thr = min(max(nw, 1) / load, bs / step) * 0.9
stage = "workers" if max(nw, 1) / load < bs / step else "gpu_compute"
print(json.dumps({"throughput": {"samples_per_s": thr, "steps_per_s": thr / bs},
                  "step_time_s": {"mean": bs / thr, "p50": bs / thr, "p90": 1.1 * bs / thr},
                  "bottleneck": {"stage": stage, "explanation": "fake"},
                  "stages": [], "gpu": {"busy_fraction": 0.5, "idle_waiting_for_data_fraction": 0.5,
                  "exposed_comm_fraction": 0.0}, "synthetic_baseline": {"samples_per_s": bs / step}}))
'''


def fake_pipeplan(d: str) -> str:
    """FAKE written as an executable `pipeplan` in directory d; its path."""
    fake = os.path.join(d, "pipeplan")
    with open(fake, "w") as f:
        f.write(FAKE)
    os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
    return fake


class EndToEndTest(unittest.TestCase):
    def test_convert_with_fake_pipeplan(self):
        with tempfile.TemporaryDirectory() as d:
            fake = fake_pipeplan(d)
            cases = [
                # input bound: measured 1800 < 8 / 4 ms; fake predicts 0.9 * 2000 = 1800
                make_case("w8", "num_workers", 1800.0, 64 / 1800, 0.04, nw=8, wait_s=0.01),
                make_case("w4", "num_workers", 900.0, 64 / 900, 0.08, nw=4, wait_s=0.04),
                make_case("w16", "num_workers", 2400.0, 64 / 2400, 0.03, nw=16, wait_s=0.0),
                make_case("w8r", "num_workers", 1700.0, 64 / 1700, 0.04, nw=8, repeat=1),
                dict(make_case("skipped", "num_workers", 1, 1, 1), status="skipped"),
            ]
            cases_path = os.path.join(d, "cases.json")
            with open(cases_path, "w") as f:
                json.dump({"cases": cases, "machine": {"cpu_cores": 16, "gpu": "X"}, "mode": "quick",
                           "components": {}}, f)
            md = os.path.join(d, "validation.md")
            with open(md, "w") as f:
                f.write("# Validation\n\nhand text\n\n" + convert.BEGIN + "\nold\n" + convert.END + "\n\ntail\n")
            out = os.path.join(d, "rep")
            p = subprocess.run([sys.executable, os.path.join(HERE, "convert.py"), "--cases", cases_path,
                                "--pipeplan", fake, "--out-dir", out, "--md", md],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            rep = json.load(open(os.path.join(out, "report.json")))
            self.assertEqual(len(os.listdir(os.path.join(out, "scenarios"))), 4)
            rows = {r["id"]: r for r in rep["rows"]}
            self.assertAlmostEqual(rows["w8"]["pipeplan"]["err"], 0.0, places=9)
            self.assertAlmostEqual(rows["w4"]["pipeplan"]["err"], 0.0, places=9)   # 0.9 * 1000
            # w16: GPU-bound 2560 * 0.9 = 2304 vs 2400
            self.assertAlmostEqual(rows["w16"]["pipeplan"]["err"], -96 / 2400, places=9)
            self.assertEqual(rows["w16"]["measured"]["bottleneck"], "compute")
            self.assertTrue(rows["w16"]["pipeplan"]["bottleneck_ok"])
            self.assertEqual(rows["w4"]["measured"]["bottleneck"], "input")
            self.assertAlmostEqual(rows["w8"]["measured"]["load_in_situ_ratio"], 1.5)
            fam = rep["families"]["num_workers"]
            self.assertEqual(fam["n"], 3)                      # repeat 1 is left out of rankings
            self.assertAlmostEqual(fam["tau_pipeplan"], 1.0)
            self.assertEqual(len(rep["noise"]), 1)
            self.assertAlmostEqual(rep["noise"][0]["spread"], 100 / 1750)
            # both measured a p90 step of 40 ms: no p90 spread
            self.assertEqual(rep["noise"][0]["step_p90_s"], [0.04, 0.04])
            self.assertAlmostEqual(rep["noise"][0]["step_p90_spread"], 0.0)
            # w8 (1800) and w8r (1700) both predicted 1800: against their mean 1750, 50 / 1750; the p90
            # step: fake 1.1 x 64 / 1800 = 39.1 ms against 40 ms measured twice
            rs = rep["summary"]["pipeplan"]["repeated_settings"]
            self.assertEqual(rs["n"], 1)
            self.assertAlmostEqual(rs["median_abs_throughput_err"], 50 / 1750)
            self.assertAlmostEqual(rs["p90_abs_throughput_err"], 50 / 1750)   # one setting: its own error
            self.assertAlmostEqual(rs["median_abs_step_p90_err"], abs(1.1 * 64 / 1800 - 0.04) / 0.04)
            # the repeats predicting each other: 1700 for w8 (|1700 - 1800| / 1800), 1800 for w8r (100 / 1700);
            # pipeplan on those two cases: 0 and 100 / 1700
            ce = rep["summary"]["pipeplan"]["repeats_predicting_each_other"]
            self.assertEqual(ce["n"], 2)
            self.assertAlmostEqual(ce["median_abs_throughput_err"], (100 / 1800 + 100 / 1700) / 2)
            self.assertAlmostEqual(ce["p90_abs_step_p90_err"], 0.0)
            self.assertAlmostEqual(ce["pipeplan"]["median_abs_throughput_err"], (0 + 100 / 1700) / 2)
            self.assertIn("repeatability", open(md).read())
            gn = rep["summary"]["ground_truth_noise"]
            self.assertEqual(gn["settings"], 1)
            self.assertAlmostEqual(gn["max_throughput_spread"], 100 / 1750)
            s = rep["summary"]
            self.assertEqual(s["cases_ok"], 4)
            self.assertTrue(s["targets_met"]["median_abs_throughput_err"])
            text = open(md).read()
            self.assertIn("hand text", text)
            self.assertIn("tail", text)
            self.assertNotIn("\nold\n", text)
            self.assertIn("| `w8` | 1800 | 1800 | +0.0% |", text)
            self.assertIn("| `w8`, `w8r` | 1800, 1700 | 5.7% | 40.0, 40.0 | 0.0% |", text)

    def test_in_situ_batch_spread_and_worker_cpu_by_hand(self):
        import pipeplan_probe as P
        # two batches of 2 samples: busy 0.1 and 0.3 s -> mean 0.2, sd 0.1, cv 0.5
        s0 = [0.0] * 8
        s1 = [0.2, 0.2, 4, 0.2, 0.2, 2, 0.4, 0.1 ** 2 + 0.3 ** 2]
        d = P.insitu_diff(s0, s1)
        self.assertAlmostEqual(d["batch_busy_s"], 0.2)
        self.assertAlmostEqual(d["batch_busy_cv"], 0.5)
        self.assertAlmostEqual(d["getitem_wall_s"], 0.05)
        self.assertEqual(d["batches"], 2)
        # workers' CPU 0.6 s over 2 batches = 0.3 per batch; getitem 4 x 0.05 + collate 2 x 0.1 = 0.2 per batch
        w = P.workers_cpu_per_batch(1.0, 1.6, d)
        self.assertAlmostEqual(w["worker_process_cpu_s_per_batch"], 0.3)
        self.assertAlmostEqual(w["worker_other_cpu_s_per_batch"], 0.1)
        self.assertEqual(P.workers_cpu_per_batch(None, 1.6, d), {})
        self.assertIsNone(P.workers_cpu_s([]))
        self.assertIsNone(P.insitu_diff(s0, s0)["batch_busy_cv"])
        # an old six-field snapshot still reads (no batch spread)
        self.assertIsNone(P.insitu_diff([0.0] * 6, s1[:6])["batch_busy_s"])

    def test_two_device_calls_keep_their_cases_apart(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "pipeplan")
            with open(fake, "w") as f:
                f.write(FAKE)
            os.chmod(fake, 0o755)
            paths = []
            for i, thr in enumerate((1800.0, 1500.0)):
                cases = [make_case("w8", "num_workers", thr, 64 / thr, 0.04, nw=8, wait_s=0.01),
                         make_case("w4", "num_workers", thr / 2, 128 / thr, 0.08, nw=4, wait_s=0.04)]
                cp = os.path.join(d, f"cases{i}.json")
                with open(cp, "w") as f:
                    json.dump({"cases": cases, "machine": {"cpu_cores": 16}, "components": {}}, f)
                paths.append(cp)
            out = os.path.join(d, "rep")
            args = [sys.executable, os.path.join(HERE, "convert.py"), "--cases", paths[0], "--cases", paths[1],
                    "--pipeplan", fake, "--out-dir", out]
            p = subprocess.run(args, capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            rep = json.load(open(os.path.join(out, "report.json")))
            self.assertEqual(sorted(r["id"] for r in rep["rows"]), ["r1:w4", "r1:w8", "r2:w4", "r2:w8"])
            self.assertEqual(sorted(rep["families"]), ["r1:num_workers", "r2:num_workers"])
            self.assertEqual(rep["families"]["r2:num_workers"]["n"], 2)
            self.assertEqual(len(os.listdir(os.path.join(out, "scenarios"))), 4)
            # one profile for two calls: refused, nothing compared across calls
            p = subprocess.run(args + ["--profile", os.path.join(d, "p.json")], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("one profile per device call", p.stderr)

    def test_cases_in_a_machine_wide_spell_are_left_out_only_of_a_diagnostic(self):
        # two workers whose batches slow down together (the same durations at the same times): common
        # share 1, a machine-wide spell; the other case has no timeline. Errors +50% and +10%.
        def worker(durations):
            t, iv = 0.0, []
            for d in durations:
                iv.append([t, t + d])
                t += d
            return iv
        pattern = [1.0, 1.0, 2.0, 2.0] * 6
        n = 14
        tl = {"skip": 1, "main": {k: [float(j) for j in range(n)] for k in ("next_start", "next_end", "launched", "synced")},
              "workers": {"0": worker(pattern), "1": worker(pattern)}}
        spell = make_case("spell", "f", 100.0, 0.64, 0.7, nw=2)
        spell["measured"]["timeline"] = tl
        calm = make_case("calm", "f", 100.0, 0.64, 0.7, nw=2)
        self.assertAlmostEqual(convert.machine_wide_share(spell), 1.0, places=6)
        self.assertIsNone(convert.machine_wide_share(calm))
        def pred(thr):
            return {"result": {"throughput": {"samples_per_s": thr}, "step_time_s": {"mean": 0.6, "p90": 0.7},
                               "bottleneck": {"stage": "workers"}, "stages": []}}
        ev = convert.evaluate([spell, calm], {"spell": pred(150.0), "calm": pred(110.0)})
        p = ev["summary"]["pipeplan"]
        self.assertAlmostEqual(p["median_abs_throughput_err"], 0.30)          # both cases scored
        self.assertEqual(p["n_machine_wide_spells"], 1)
        self.assertAlmostEqual(p["median_abs_throughput_err_without_spells"], 0.10)

    def test_a_family_ranks_a_repeated_setting_by_its_mean(self):
        # workers 4 and 8; w8 measured twice (1500, then 2100 in a slow-then-fast drift): its mean 1800
        # is above w4's 1700, so the family's order is w4 < w8. Ranked by the first w8 alone (1500) the
        # measured order would flip and the model (w4 1650, w8 1790 and 1810) would score tau -1.
        def pred(thr):
            return {"result": {"throughput": {"samples_per_s": thr}, "step_time_s": {"mean": 0.04, "p90": 0.05},
                               "bottleneck": {"stage": "workers"}, "stages": []}}
        w4 = make_case("w4", "num_workers", 1700.0, 0.04, 0.05, nw=4)
        w8 = make_case("w8", "num_workers", 1500.0, 0.04, 0.05, nw=8)
        w8r = make_case("w8-r1", "num_workers", 2100.0, 0.04, 0.05, nw=8, repeat=1)
        ev = convert.evaluate([w4, w8, w8r], {"w4": pred(1650.0), "w8": pred(1790.0), "w8-r1": pred(1810.0)})
        fam = ev["families"]["num_workers"]
        self.assertEqual(fam["cases"], ["w4", "w8"])
        self.assertEqual(fam["measured_means"], [1700.0, 1800.0])
        self.assertEqual(fam["measurements"], [1, 2])
        self.assertAlmostEqual(fam["tau_pipeplan"], 1.0)
        self.assertEqual(len(ev["rows"]), 3)                                   # every measurement still scored

    def test_the_gpu_step_follows_its_duty_between_the_measured_ends(self):
        gpu_bound = {"gpu_s": {"mean": 0.025}, "sustained_interval_s": {"mean": 0.0299}, "sustained_is_gpu_time": True}
        self.assertEqual(convert.duty_curve(gpu_bound), [{"duty": 0.0, "step_s": 0.025}, {"duty": 1.0, "step_s": 0.0299}])
        # a host-bound sustained interval (resnet50: 35.4 ms of host launches over a 16.6 ms GPU step) is not GPU time
        self.assertIsNone(convert.duty_curve(dict(gpu_bound, sustained_is_gpu_time=False)))
        self.assertIsNone(convert.duty_curve(dict(gpu_bound, sustained_interval_s={"mean": 0.024})))
        self.assertIsNone(convert.duty_curve({"gpu_s": {"mean": 0.025}}))
        # a measured shape from another step size of the call: mm:25 25.0 / 30.0 ms, 26.0 ms at duty 0.5
        # -> excess 0.2, carried to mm:5 (5.0 / 5.8 ms): 5.16 ms at 0.5
        comps = {"gpu_duty_curve": {"step": "mm:25", "points": [{"duty": 0.5, "step_s": 0.026}]},
                 "step": {"mm:25": {"gpu_s": {"mean": 0.025}, "sustained_interval_s": {"mean": 0.030}}}}
        shape = convert.duty_excess(comps)
        self.assertEqual(len(shape), 1)
        self.assertAlmostEqual(shape[0][0], 0.5)
        self.assertAlmostEqual(shape[0][1], 0.2)
        mm5 = {"gpu_s": {"mean": 0.005}, "sustained_interval_s": {"mean": 0.0058}, "sustained_is_gpu_time": True}
        curve = convert.duty_curve(mm5, shape)
        self.assertEqual([q["duty"] for q in curve], [0.0, 0.5, 1.0])
        self.assertAlmostEqual(curve[1]["step_s"], 0.00516)
        self.assertIsNone(convert.duty_excess({"gpu_duty_curve": {"step": "mm:25", "error": "x"}, "step": comps["step"]}))
        # one curve per step model (harness since run 14): mm:5's own 5.4 ms at duty 0.5 -> excess 0.5 for mm:5,
        # the call's first (mm:25's 0.2) for a step model without its own or whose own failed
        comps["step"]["mm:5"] = {"gpu_s": {"mean": 0.005}, "sustained_interval_s": {"mean": 0.0058}}
        comps["gpu_duty_curves"] = {"mm:5": {"step": "mm:5", "points": [{"duty": 0.5, "step_s": 0.0054}]},
                                    "mm:60": {"step": "mm:60", "error": "x"}}
        self.assertAlmostEqual(convert.duty_excess(comps, "mm:5")[0][1], 0.5)
        self.assertAlmostEqual(convert.duty_excess(comps, "mm:60")[0][1], 0.2)
        self.assertAlmostEqual(convert.duty_excess(comps, None)[0][1], 0.2)
        self.assertEqual(convert.step_key({"knobs": {"step": "mm:5", "kind": "image", "batch_size": 64}}), "mm:5/image/b64")
        # calibrate's shape: 1.0 rested, 1.05 at duty 0.5, 1.2 back to back -> excess 0.25 at 0.5
        prof = {"compute": {"step_vs_gpu_duty": [{"duty": 0.0, "relative_time": 1.0}, {"duty": 0.5, "relative_time": 1.05},
                                                 {"duty": 0.98, "relative_time": 1.2}]}}
        pe = convert.profile_duty_excess(prof)
        self.assertEqual(len(pe), 1)
        self.assertAlmostEqual(pe[0][1], 0.25)
        self.assertIsNone(convert.profile_duty_excess({"compute": {}}))

    def test_a_sweep_pools_the_inputs_of_cases_that_measure_the_same_thing(self):
        # in_order on and off measure the same components: one key; a different num_workers another
        a = {"id": "r1:a", "knobs": {"kind": "image", "batch_size": 64, "num_workers": 8, "pin_memory": True,
                                      "storage": "warm", "in_order": True}}
        b = {"id": "r1:b", "knobs": dict(a["knobs"], in_order=False)}
        c = {"id": "r1:c", "knobs": dict(a["knobs"], num_workers=4)}
        d = {"id": "r2:a", "knobs": a["knobs"]}
        self.assertEqual(convert.sweep_key(a), convert.sweep_key(b))
        self.assertNotEqual(convert.sweep_key(a), convert.sweep_key(c))
        self.assertNotEqual(convert.sweep_key(a), convert.sweep_key(d))      # another call, another machine
        # by hand: loads 4 and 6 ms -> 5; pin rates 8 and 4 GB/s averaged as times (0.125 and 0.25 ns/B)
        # -> 0.1875 ns/B = 5.333 GB/s; a wander only one member has is not pooled
        s1 = {"dataset": {"load_s_per_sample": {"mean": 0.004}}, "loader": {"collate_s_per_batch": 0.02}}
        s2 = {"dataset": {"load_s_per_sample": {"mean": 0.006}}, "loader": {"collate_s_per_batch": 0.03}}
        p1 = {"host": {"pin_copy_bytes_per_s": 8e9}, "cpu": {"core_speed_cv": 0.1}}
        p2 = {"host": {"pin_copy_bytes_per_s": 4e9}, "cpu": {}}
        pooled = convert.pooled_inputs([(s1, p1), (s2, p2)])
        self.assertAlmostEqual(pooled[("scenario", ("dataset", "load_s_per_sample", "mean"))], 0.005)
        self.assertAlmostEqual(pooled[("scenario", ("loader", "collate_s_per_batch"))], 0.025)
        self.assertNotIn(("profile", ("cpu", "core_speed_cv")), pooled)
        s3, p3 = convert.with_pooled(s1, p1, pooled)
        self.assertAlmostEqual(s3["dataset"]["load_s_per_sample"]["mean"], 0.005)
        self.assertAlmostEqual(p3["host"]["pin_copy_bytes_per_s"], 1 / 0.1875e-9, delta=1e3)
        self.assertEqual(p3["cpu"]["core_speed_cv"], 0.1)                     # its own, unpooled
        self.assertEqual(s1["dataset"]["load_s_per_sample"]["mean"], 0.004)   # the originals untouched

    def test_the_sweep_ranking_uses_the_pooled_predictions(self):
        def pred(thr):
            return {"result": {"throughput": {"samples_per_s": thr}, "step_time_s": {"mean": 0.04, "p90": 0.05},
                               "bottleneck": {"stage": "workers"}, "stages": []}}
        w4 = make_case("w4", "num_workers", 1000.0, 0.04, 0.05, nw=4)
        w8 = make_case("w8", "num_workers", 1800.0, 0.04, 0.05, nw=8)
        # per case the drift reverses the order (tau -1); pooled, the model's order is right (+1)
        ev = convert.evaluate([w4, w8], {"w4": pred(1700.0), "w8": pred(1600.0)},
                              {"w4": pred(1000.0), "w8": pred(1700.0)})
        fam = ev["families"]["num_workers"]
        self.assertAlmostEqual(fam["tau_pipeplan"], -1.0)
        self.assertAlmostEqual(fam["tau_sweep"], 1.0)
        self.assertEqual(fam["sweep_predicted_means"], [1000.0, 1700.0])
        self.assertAlmostEqual(ev["summary"]["pipeplan"]["min_family_tau_sweep"], 1.0)
        # each case's error from the pooled inputs, beside its own: w4 1000 against 1000 measured (0%), w8 1700
        # against 1800 (-5.6%); own brackets +70% and -11.1%
        self.assertAlmostEqual(ev["rows"][1]["pipeplan"]["sweep_err"], 1700.0 / 1800.0 - 1.0)
        pooled = ev["summary"]["pipeplan"]["pooled_inputs"]
        self.assertEqual(pooled["n"], 2)
        self.assertAlmostEqual(pooled["median_abs_throughput_err"], (0.0 + 100.0 / 1800.0) / 2)
        self.assertAlmostEqual(pooled["own_median_abs_throughput_err"], (0.7 + 200.0 / 1800.0) / 2)

    def test_cases_whose_seeds_split_are_scored_apart(self):
        def pred(p90, votes):
            return {"result": {"throughput": {"samples_per_s": 1000.0}, "step_time_s": {"mean": 0.04, "p90": p90},
                               "bottleneck": {"stage": "workers"}, "stages": [],
                               "replications": {"n": 4, "bottleneck_votes": votes}}}
        a = make_case("a", "f", 1000.0, 0.04, 0.100)
        b = make_case("b", "f", 1000.0, 0.04, 0.100, nw=4)
        c = make_case("c", "f", 1000.0, 0.04, 0.100, nw=2)
        ev = convert.evaluate([a, b, c], {"a": pred(0.070, {"host_loop": 3, "workers": 1}),   # split: -30%
                                          "b": pred(0.110, {"workers": 4}),                  # +10%
                                          "c": pred(0.095, {"workers": 4})})                 # -5%
        self.assertEqual(ev["rows"][0]["pipeplan"]["seeds_bottlenecks"], 2)
        self.assertEqual(ev["rows"][1]["pipeplan"]["seeds_bottlenecks"], 1)
        split = ev["summary"]["pipeplan"]["seeds_split"]
        self.assertEqual((split["n"], split["n_unanimous"]), (1, 2))
        self.assertAlmostEqual(split["median_abs_step_p90_err"], 0.30)
        self.assertAlmostEqual(split["unanimous_median_abs_step_p90_err"], (0.10 + 0.05) / 2)

    def test_no_pooled_comparison_where_each_case_kept_its_own_inputs(self):
        def pred(thr):
            return {"result": {"throughput": {"samples_per_s": thr}, "step_time_s": {"mean": 0.04, "p90": 0.05},
                               "bottleneck": {"stage": "workers"}, "stages": []}}
        w4 = make_case("w4", "num_workers", 1000.0, 0.04, 0.05, nw=4)
        ev = convert.evaluate([w4], {"w4": pred(1100.0)}, {"w4": pred(1100.0)})   # a group of one: the same prediction
        self.assertIsNone(ev["summary"]["pipeplan"]["pooled_inputs"])

    def test_replications_are_averaged_and_the_stage_voted(self):
        def res(thr, p90, stage, busy):
            return {"throughput": {"samples_per_s": thr}, "step_time_s": {"mean": 64 / thr, "p90": p90},
                    "bottleneck": {"stage": stage, "explanation": stage + " says"},
                    "gpu": {"busy_fraction": busy}, "stages": [{"name": "workers", "busy_fraction": 1 - busy}]}
        runs = [res(1000.0, 0.10, "gpu_compute", 0.9), res(1100.0, 0.12, "workers", 0.7),
                res(1200.0, 0.14, "workers", 0.8)]
        for r, oo in zip(runs, (0.05, 0.10, 0.30)):
            r["loader"] = {"out_of_order_fraction": oo}
        c = convert.combine_replications(runs)
        self.assertAlmostEqual(c["loader"]["out_of_order_fraction"], 0.15)
        self.assertAlmostEqual(c["throughput"]["samples_per_s"], 1100.0)
        self.assertAlmostEqual(c["step_time_s"]["p90"], 0.12)
        self.assertAlmostEqual(c["step_time_s"]["mean"], (0.064 + 64 / 1100 + 64 / 1200) / 3)
        self.assertAlmostEqual(c["gpu"]["busy_fraction"], 0.8)
        self.assertAlmostEqual(c["stages"][0]["busy_fraction"], 0.2)
        # two of three seeds say workers: the earliest of them gives the explanation
        self.assertEqual(c["bottleneck"]["stage"], "workers")
        self.assertEqual(c["bottleneck"]["explanation"], "workers says")
        # sample standard deviation of 1000, 1100, 1200 is 100: cv 100 / 1100
        self.assertAlmostEqual(c["replications"]["seeds_cv_samples_per_s"], 100.0 / 1100.0)
        self.assertAlmostEqual(c["replications"]["seeds_cv_step_p90_s"], 0.02 / 0.12)
        self.assertEqual(runs[1]["throughput"]["samples_per_s"], 1100.0)      # inputs untouched
        self.assertIs(convert.combine_replications(runs[:1]), runs[0])       # one seed: as is

    def test_simulator_error_is_reported(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "pipeplan")
            with open(fake, "w") as f:
                f.write(FAKE)
            os.chmod(fake, 0o755)
            c = make_case("bad", "x", 100.0, 0.64, 0.7)
            sp = os.path.join(d, "bad.json")
            with open(sp, "w") as f:
                json.dump(convert.scenario_for(c, {"cpu_cores": 4}), f)
            r = convert.run_pipeplan(fake, sp, None)
            self.assertIn("exit 2", r["error"])
            row = convert.evaluate_case(c, r)
            self.assertIn("error", row["pipeplan"])


class BatchesStepGpuTest(unittest.TestCase):
    """A variable-length case's measured GPU time is its own batches' (run 65, finding 3), by hand."""

    def seq_case(self, step_mean_s):
        # one worker: the timeline carries only the lengths here (the worker analysis wants two or more)
        c = make_case("s", "sequence_step", 100.0, step_mean_s, step_mean_s, nw=1, bs=2, step="seq:4",
                      kind="tokens", wait_s=0.0)
        # the fit: 1 ms + 1 us a position (rows x length); the step component timed one longer batch, 0.5 ms
        # isolated and 0.55 ms sustained (a factor 1.1)
        c["components"]["sequence_step_shapes"] = {"fit": {"fixed_s": 0.001, "per_token_s": 1e-6,
                                                           "per_token_squared_s": 0.0}}
        c["components"]["step"] = {"gpu_s": {"mean": 0.0005, "cv": 0.0}, "host_s": {"mean": 0.0002},
                                   "step_s": 0.00055}
        t0 = [0.0, step_mean_s, 2 * step_mean_s]
        c["measured"]["timeline"] = {"skip": 1, "main": {
            "padded_length": [100, 10, 30], "next_start": t0, "next_end": [t + 1e-4 for t in t0],
            "copied": [t + 2e-4 for t in t0], "launched": [t + 3e-4 for t in t0],
            "synced": [t + 0.9 * step_mean_s for t in t0], "released": [t + 0.95 * step_mean_s for t in t0]}}
        return c

    def test_mean_over_the_window_of_the_fit_at_each_batch_scaled_to_sustained(self):
        # steps after the skip: 2 x 10 and 2 x 30 positions -> 1.02 and 1.06 ms, mean 1.04, x 1.1
        self.assertAlmostEqual(convert.batches_step_gpu_s(self.seq_case(0.01)), 1.1 * 0.00104)

    def test_none_without_the_lengths_or_the_fit(self):
        c = self.seq_case(0.01)
        c["measured"]["timeline"]["main"]["padded_length"] = []
        self.assertIsNone(convert.batches_step_gpu_s(c))
        c = self.seq_case(0.01)
        del c["components"]["sequence_step_shapes"]
        self.assertIsNone(convert.batches_step_gpu_s(c))
        self.assertIsNone(convert.batches_step_gpu_s(make_case("i", "x", 100.0, 0.03, 0.04)))

    def test_the_measured_bottleneck_follows_the_batches_not_the_one_timed_batch(self):
        # the step component's 0.55 ms over a 1.2 ms step says host (0.46 busy); the batches' 1.144 ms says compute
        row = convert.evaluate_case(self.seq_case(0.0012), {"error": "not simulated"})
        self.assertEqual(row["measured"]["bottleneck"], "compute")
        self.assertAlmostEqual(row["measured"]["gpu_busy_fraction"], 1.144 / 1.2)


def load_harness():
    """harness.py's pure parts, without torch or numpy (a stub stands in for numpy's import)."""
    import importlib.util
    import types
    stub = "numpy" not in sys.modules
    if stub:
        sys.modules["numpy"] = types.ModuleType("numpy")
    try:
        spec = importlib.util.spec_from_file_location("harness_under_test", os.path.join(HERE, "harness.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        if stub:
            del sys.modules["numpy"]


class HarnessCasesTest(unittest.TestCase):
    def test_rounds_measure_every_setting_round_after_round(self):
        h = load_harness()
        fams = ["pin_memory_tensor", "sync_every"]
        one = h.build_cases(False, fams)
        three = h.build_cases(False, fams, 3)
        settings = [c for c in one if c["repeat"] == 0]
        # 4 settings (pin, nopin, sync 8, sync 0) x 3 rounds, no separate base repeats
        self.assertEqual(len(settings), 4)
        self.assertEqual(len(three), 12)
        self.assertEqual([c["repeat"] for c in three], [0] * 4 + [1] * 4 + [2] * 4)
        # every second round in the reverse order (run 47, finding 6): over rounds 0 and 1 each setting's positions
        # add to the same 7 (0 + 7, 1 + 6, ...), so a steady drift reaches every setting's mean alike
        self.assertEqual([c["knobs"] for c in three[4:8]], [c["knobs"] for c in settings][::-1])
        self.assertEqual([c["knobs"] for c in three[8:12]], [c["knobs"] for c in settings])
        two = h.build_cases(False, fams, 2)
        pos = {}
        for i, c in enumerate(two):
            pos.setdefault(json.dumps(c["knobs"], sort_keys=True), []).append(i)
        self.assertEqual({sum(v) for v in pos.values()}, {7})
        self.assertTrue(three[4]["id"].endswith("-r1") and three[8]["id"].endswith("-r2"))
        self.assertEqual(len({c["id"] for c in three}), 12)
        # rounds 1 keeps the old list: the base repeats spread over the run
        self.assertGreater(len(one), len(settings))

    def test_slow_worker_family_sweeps_one_straggler_on_the_tensor_base(self):
        h = load_harness()
        cases = [c for c in h.build_cases(False, ["slow_worker"]) if c["repeat"] == 0]
        self.assertEqual([c["knobs"].get("slow_worker_factor", 1.0) for c in cases], [1.0, 1.1, 1.25, 1.5, 2.0])
        self.assertTrue(all(c["knobs"]["kind"] == "tensor_f32" and c["knobs"]["pin_memory"] for c in cases))
        # the factor-1 setting is the pinned tensor base itself: measured once when both families run
        both = h.build_cases(False, ["pin_memory_tensor", "slow_worker"], 2)
        self.assertEqual(len(both), 12)
        self.assertEqual(both[0]["also_families"], ["slow_worker"])
        self.assertTrue(any(c["id"].endswith("-warm-slow1.25") for c in cases))
        self.assertTrue(cases[0]["id"].endswith("-warm"))
        self.assertEqual(len([c for c in h.build_cases(True, ["slow_worker"]) if c["repeat"] == 0]), 2)
        # the remedies share the factor-2 setting with the sweep: measured once, listed in both
        rem = [c for c in h.build_cases(False, ["slow_worker", "slow_worker_remedy"], 2) if c["repeat"] == 0]
        self.assertEqual(len(rem), 7)
        two = [c for c in rem if c["knobs"].get("slow_worker_factor") == 2.0]
        self.assertEqual(len(two), 3)
        self.assertEqual({c["knobs"]["prefetch_factor"] for c in two}, {2, 4})
        self.assertEqual(sum(1 for c in two if c["knobs"].get("in_order", True) is False), 1)
        py = [c for c in h.build_cases(False, ["python_load"], 2) if c["repeat"] == 0]
        self.assertEqual([c["knobs"]["kind"] for c in py], ["tensor_f32", "tensor_f32_py", "tensor_f32_pyfree"])
        self.assertEqual({c["knobs"]["num_workers"] for c in py}, {8})
        gil = [c for c in h.build_cases(False, ["slow_worker_remedy", "slow_worker_gil"], 2) if c["repeat"] == 0]
        self.assertEqual(len(gil), 4)       # the factor-2 straggler shared, its GIL-free spin added
        self.assertEqual([c["id"].endswith("-nogil") for c in gil].count(True), 1)
        # held against GIL-free, in order or not: one new setting beside the remedies' and the GIL family's
        order = [c for c in h.build_cases(False, ["slow_worker_order"], 2) if c["repeat"] == 0]
        self.assertEqual(len(order), 4)
        self.assertEqual({(c["knobs"].get("slow_worker_spin", "python"), c["knobs"].get("in_order", True))
                          for c in order}, {("python", True), ("python", False), ("nogil", True), ("nogil", False)})
        self.assertEqual(len({c["id"] for c in order}), 4)
        shared = [c for c in h.build_cases(False, ["slow_worker_remedy", "slow_worker_gil", "slow_worker_order"], 2)
                  if c["repeat"] == 0]
        self.assertEqual(len(shared), 5)

    def test_straggler_spins_worker_zero_for_the_factors_extra(self):
        h = load_harness()
        # by hand: a 60 ms batch at factor 1.25 takes 15 ms more, in worker 0 only
        self.assertAlmostEqual(h.straggler_extra_s(0.060, 1.25, 0), 0.015)
        self.assertEqual(h.straggler_extra_s(0.060, 1.25, 1), 0.0)
        self.assertEqual(h.straggler_extra_s(0.060, 1.25, None), 0.0)     # main process (num_workers=0)
        self.assertEqual(h.straggler_extra_s(0.060, 1.0, 0), 0.0)
        for holding_gil in (True, False):
            t0, c0 = h.time.perf_counter(), h.time.thread_time()
            end = h.spin_s(0.02, holding_gil)
            self.assertGreaterEqual(end - t0, 0.02)
            # busy, not asleep: most of the wall on this thread's CPU clock (a loaded CI machine gets a margin)
            self.assertGreater(h.time.thread_time() - c0, 0.005)

    def test_setup_overhead_counts_each_new_component_once(self):
        h = load_harness()
        cases = h.build_cases(False, ["batch_size", "prefetch_factor"])
        # by hand: every case pays CASE_SETUP_S; each new (kind, batch size) with workers NEW_COMPONENTS_S
        # once; each new step model NEW_STEP_S once; the call's once-only pin probes (probe_main_loop, the light
        # loop's host_beside_pin_parts) FIRST_PIN_PROBES_S, as these cases are pinned with workers
        kinds = {f"{c['knobs']['kind']}/b{c['knobs']['batch_size']}" for c in cases if c["knobs"]["num_workers"] > 0}
        steps = {f"{c['knobs']['step']}/{c['knobs']['kind']}/b{c['knobs']['batch_size']}" for c in cases}
        self.assertTrue(any(c["knobs"]["pin_memory"] and c["knobs"]["num_workers"] > 0 for c in cases))
        expected = (len(cases) * h.CASE_SETUP_S + len(kinds) * h.NEW_COMPONENTS_S + len(steps) * h.NEW_STEP_S
                    + h.FIRST_PIN_PROBES_S)
        self.assertAlmostEqual(h.setup_overhead_s(cases, {}), expected)
        # what is measured already costs nothing more
        done = {"transport": {k: {} for k in kinds}, "step": {k: {} for k in steps}, "probe_main_loop": {}}
        self.assertAlmostEqual(h.setup_overhead_s(cases, done), len(cases) * h.CASE_SETUP_S)
        self.assertEqual(h.setup_overhead_s([], {}), 0.0)
        # the probes before and after each case settle (harness default 1 s since run 24): 2 s more a case
        self.assertAlmostEqual(h.setup_overhead_s(cases, done, 1.0), len(cases) * (h.CASE_SETUP_S + 2.0))

    def test_setup_overhead_counts_a_longer_probe_window(self):
        h = load_harness()
        cases = h.build_cases(False, ["batch_size"])
        self.assertTrue(all(c["knobs"]["num_workers"] >= 4 for c in cases))
        done = {"transport": {}, "step": {}, "probe_main_loop": {}}
        base = h.setup_overhead_s(cases, done)
        try:
            h.set_probe_timing(4.0)
            # by hand: two probes a case, each 4.0 - 1.5 s longer than CASE_SETUP_S counts
            self.assertAlmostEqual(h.setup_overhead_s(cases, done), base + len(cases) * 2 * 2.5)
        finally:
            h.set_probe_timing(1.5)

    def test_setup_overhead_counts_the_no_put_probe_for_cases_with_workers(self):
        h = load_harness()
        cases = h.build_cases(False, ["num_workers"])
        done = {"transport": {}, "step": {}, "probe_main_loop": {}}
        base = h.setup_overhead_s(cases, done, 1.0)
        try:
            h.PROBE_NO_PUT = True
            # by hand: each case with workers one more probe: its 1 s start, the 1 s settle and its window
            # (probe_window_s: 6 s for one worker, 3 s for two, 1.5 s from four); the main-process case none
            extra = sum(h.NO_PUT_PROBE_START_S + 1.0 + h.probe_window_s(c["knobs"]["num_workers"], h.PROBE_WINDOW_S)
                        for c in cases if c["knobs"]["num_workers"] > 0)
            self.assertTrue(any(c["knobs"]["num_workers"] == 0 for c in cases))
            self.assertAlmostEqual(h.setup_overhead_s(cases, done, 1.0), base + extra)
        finally:
            h.PROBE_NO_PUT = False

    def test_setup_overhead_counts_the_long_wander_reading_once_a_setting(self):
        h = load_harness()
        cases = h.build_cases(False, ["num_workers"])
        done = {"transport": {}, "step": {}, "probe_main_loop": {}}
        base = h.setup_overhead_s(cases, done, 1.0)
        base_quick = h.setup_overhead_s(cases, done, 1.0, quick=True)
        keys = {h.wander_long_key(c["knobs"]) for c in cases} - {None}
        # the num_workers sweep: one warm pinned image setting per worker count; 0 and 1 worker read none
        self.assertEqual(keys, {f"image/b64/w{c['knobs']['num_workers']}/pin" for c in cases
                                if c["knobs"]["num_workers"] >= 2})
        try:
            h.WANDER_LONG_S = 15.0
            # by hand: each setting once, its 1.5 s start and its 15 s window; none once read
            self.assertAlmostEqual(h.setup_overhead_s(cases, done, 1.0), base + len(keys) * 16.5)
            # quick mode takes no long reading
            self.assertAlmostEqual(h.setup_overhead_s(cases, done, 1.0, quick=True), base_quick)
            done["wander_long"] = {k: {} for k in keys}
            self.assertAlmostEqual(h.setup_overhead_s(cases, done, 1.0), base)
        finally:
            h.WANDER_LONG_S = 0.0
        self.assertIsNone(h.wander_long_key({"kind": "image", "batch_size": 64, "num_workers": 8,
                                             "storage": "cold", "pin_memory": True}))
        self.assertIsNone(h.wander_long_key({"kind": "tensor_f32", "batch_size": 64, "num_workers": 8,
                                             "slow_worker_factor": 1.5, "pin_memory": True}))
        self.assertEqual(h.wander_long_key({"kind": "tensor_f32", "batch_size": 64, "num_workers": 4,
                                            "pin_memory": False}), "tensor_f32/b64/w4/nopin")

    def test_collate_that_drops_its_batch_still_counts_it(self):
        h = load_harness()
        insitu = h.InSitu()
        slot = h.InSitu.slot
        h.InSitu.slot = staticmethod(lambda: 0)    # the main process's slot, without torch's worker info
        try:
            kept = h.InstrumentedCollate(lambda xs: list(xs), insitu)([1, 2, 3])
            dropped = h.InstrumentedCollate(lambda xs: list(xs), insitu, drop_batch=True)([1, 2, 3])
        finally:
            h.InSitu.slot = slot
        self.assertEqual(kept, [1, 2, 3])
        self.assertEqual(dropped, 0)            # the loader carries a bare int: nothing for the feeder to put
        self.assertEqual(insitu.snapshot()[5], 2.0)    # both collates counted

    def test_probe_window_longer_below_four_workers(self):
        h = load_harness()
        # by hand: 1.5 s x 4 / max(k, 1): the main process (k = 0) and one worker 6 s, two 3 s, three 2 s, four on 1.5
        self.assertEqual([h.probe_window_s(k, 1.5) for k in (0, 1, 2, 3, 4, 8, 24)], [6.0, 6.0, 3.0, 2.0, 1.5, 1.5, 1.5])

    def test_setup_overhead_charges_a_host_heavy_loop_its_probes(self):
        h = load_harness()
        # run 32's A1 (num_workers, step): its one ResNet-50 case with 8 workers ran 36.7 s of host probes and a
        # 16.8 s first step component before its window, which the per-case allowance did not know of
        cases = h.build_cases(False, ["num_workers", "step"])
        heavy_w = [c for c in cases if c["knobs"]["step"] == "resnet50" and c["knobs"]["num_workers"] > 0]
        self.assertEqual(len(heavy_w), 1)
        kinds = {f"{c['knobs']['kind']}/b{c['knobs']['batch_size']}" for c in cases if c["knobs"]["num_workers"] > 0}
        steps = {c["knobs"]["step"] for c in cases}
        self.assertEqual(steps, {"mm:5", "mm:25", "mm:60", "resnet50"})
        # by hand: 13 cases x 6 s, one (kind, batch size) with workers at 24 s, the call's pin probes at 27 s, three
        # GEMM steps at 15 s and ResNet-50's at 22 s (runs 32-33's 10 and 17 s plus the duty curve's 1.8 s longer top
        # duty since run 45 and its 3 s fourth duty since run 46's plan), and the one heavy case's probes at 37 s
        self.assertEqual(len(cases), 13)
        # and the longer probes of the zero-, one- and two-worker cases (probe_window_s: 6, 6 and 3 s against
        # 1.5, twice each): 21 s
        few = 2 * (4.5 + 4.5 + 1.5)
        self.assertAlmostEqual(h.setup_overhead_s(cases, {}), 13 * 6.0 + 24.0 + 27.0 + 3 * 15.0 + 22.0 + 37.0 + few)
        # once its step is measured the probes are still to come; once they ran (kept per step, kind, batch
        # size and workers, as run_case keeps them) nothing more
        done = {"transport": {k: {} for k in kinds}, "probe_main_loop": {},
                "step": {f"{s}/image/b64": {} for s in steps}}
        self.assertAlmostEqual(h.setup_overhead_s(cases, done), 13 * 6.0 + 37.0 + few)
        done["host_beside_workers"] = {"resnet50/image/b64/w8": {}}
        self.assertAlmostEqual(h.setup_overhead_s(cases, done), 13 * 6.0 + few)
        # quick mode's probes are 0.6 s at any worker count: nothing more
        self.assertAlmostEqual(h.setup_overhead_s(cases, done, quick=True), 13 * 6.0)
        # the heavy case left alone: its step component with the harness's rule (host above half the GPU time)
        self.assertAlmostEqual(h.setup_overhead_s(heavy_w, {}), 6.0 + 24.0 + 27.0 + 22.0 + 37.0)
        # a GIL call: four ResNet-50 cases of one (kind, batch size, workers), pinned and not, two rounds; run 31's
        # GIL ran the probes once, before its first case (its other cases took 35-42 s with 25 s windows)
        gil = h.build_cases(False, ["pin_memory_gil"], 2)
        self.assertEqual(len(gil), 4)
        self.assertEqual({h.heavy_probe_key(c["knobs"]) for c in gil}, {"resnet50/tensor_f32/b64/w8"})
        self.assertAlmostEqual(h.setup_overhead_s(gil, {}), 4 * 6.0 + 24.0 + 27.0 + 22.0 + 37.0)
        # once probe_main_loop ran (or with no warm pinned case with workers left) the pin probes are not charged
        self.assertAlmostEqual(h.setup_overhead_s(gil, {"probe_main_loop": {}}), 4 * 6.0 + 24.0 + 22.0 + 37.0)
        unpinned = [c for c in gil if not c["knobs"]["pin_memory"]]
        self.assertAlmostEqual(h.setup_overhead_s(unpinned, {}), 2 * 6.0 + 24.0 + 22.0 + 37.0)
        # quick mode runs no probe_main_loop
        self.assertAlmostEqual(h.setup_overhead_s(gil, {}, 0.0, True), 4 * 6.0 + 24.0 + 22.0 + 37.0)

    def test_the_shortest_window_is_an_option(self):
        h = load_harness()
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(h.main(["--out", os.devnull, "--list", "--families", "pin_memory_image",
                                        "--min-case-window-s", "12"]), 0)
            self.assertEqual(h.MIN_CASE_WINDOW_S, 12.0)
            # the floor cannot pass the ceiling, nor fall below a second
            for bad in (["--min-case-window-s", "40"], ["--min-case-window-s", "0.5"]):
                with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as e:
                    h.main(["--out", os.devnull, "--list"] + bad)
                self.assertEqual(e.exception.code, 2)
        finally:
            h.set_case_window(30.0, 3.0)

    def test_later_cases_are_left_out_before_a_case_gets_a_one_second_window(self):
        h = load_harness()
        # run 45's B2b: ten cases, four data kinds, 292 s left at its first case (309 s budget, 13.7 s of data
        # generation, 3 s reserve), probes settling 1 s. By hand: 10 x (6 + 2) + 4 kinds x 24 + the pin probes'
        # 27 + five step models (mm:10 on four kinds, mm:25 on images) x 15 = 278 s of setup: (292 - 278) / 10 x
        # 0.85 = 1.19 s (the call, whose estimate then was 292 s, measured its image case in 24 steps; it spent
        # 219 s outside its windows)
        cases = h.build_cases(False, ["data_kind", "storage_tensor", "storage_image"])
        self.assertEqual(len(cases), 10)
        self.assertAlmostEqual(h.setup_overhead_s(cases, {}, 1.0), 278.0)
        self.assertAlmostEqual(h.case_allowance_s(292.0, cases, {}, 1.0), 14 / 10 * 0.85)
        # left out, repeats first and the latest first: r2 (09) -> 270 s, 22 / 9 x 0.85 = 2.08 s; r1 (04) -> 262 s,
        # 30 / 8 x 0.85 = 3.19 s: enough
        self.assertEqual(h.cases_to_leave_out(292.0, cases, {}, 1.0, 3.0), [9, 4])
        kept = [c for i, c in enumerate(cases) if i not in (9, 4)]
        self.assertAlmostEqual(h.case_allowance_s(292.0, kept, {}, 1.0), 30 / 8 * 0.85)
        # with less left the first runs of others go too, the latest first: at 270 s, after both repeats
        # (262 - 270 < 0, the floor), the cold image case (08) -> 254 s, 16 / 7 x 0.85 = 1.94 s; the warm one (07),
        # the last on mm:25, its step model with it -> 231 s, 39 / 6 x 0.85 = 5.53 s
        self.assertEqual(h.cases_to_leave_out(270.0, cases, {}, 1.0, 3.0), [9, 4, 8, 7])
        # with the window long enough already nothing goes; the case about to run never goes
        self.assertEqual(h.cases_to_leave_out(600.0, cases, {}, 1.0, 3.0), [])
        self.assertEqual(h.cases_to_leave_out(10.0, cases[:1], {}, 1.0, 3.0), [])
        self.assertEqual(h.cases_to_leave_out(1.0, cases, {}, 1.0, 3.0), [9, 4, 8, 7, 6, 5, 3, 2, 1])
        # the calls that ran with windows of 3 s and more keep every case (A1 num_workers/step: 13 cases, 390 s
        # left after the main-loop probe's 15 s; 13 x 8 + 24 + 27 + 3 x 15 + 22 + 37 = 259 s, (390 - 259) / 13 x
        # 0.85; the call spent 267 s outside its windows). Since run 58's plan the zero-, one- and two-worker cases'
        # probes run 6, 6 and 3 s instead of 1.5: 2 x (4.5 + 4.5 + 1.5) = 21 s more, 280 s
        a1 = h.build_cases(False, ["num_workers", "step"])
        self.assertAlmostEqual(h.case_allowance_s(390.0, a1, {}, 1.0), (390 - 280) / 13 * 0.85)
        self.assertEqual(h.cases_to_leave_out(390.0, a1, {}, 1.0, 3.0), [])

    def test_skip_reason_keeps_a_late_case_from_overrunning_the_budget(self):
        h = load_harness()
        resnet = {"kind": "image", "batch_size": 64, "num_workers": 8, "step": "resnet50"}
        gemm = dict(resnet, step="mm:25")
        seen = {"transport": {"image/b64": {}}, "step": {}}
        # run 32's A1: the ResNet-50 case started with 22 s left (its probes then took 36.7 s); now skipped
        self.assertEqual(h.skip_reason(resnet, 22.0, seen, False), ", too little for its host probes")
        # once its probes ran (an earlier case of the same loop), a late case only needs its window
        probed = dict(seen, host_beside_workers={"resnet50/image/b64/w8": {}})
        self.assertIsNone(h.skip_reason(resnet, 22.0, probed, False))
        # with room for its probes it runs, and a light loop never waits for them
        self.assertIsNone(h.skip_reason(resnet, h.HEAVY_PROBES_S + h.CASE_SETUP_S + 1.0, seen, False))
        self.assertIsNone(h.skip_reason(gemm, 22.0, seen, False))
        # the main process loading (no workers): no host probes, as run_case measures none
        self.assertIsNone(h.skip_reason(dict(resnet, num_workers=0), 22.0, seen, False))
        # the older rules: too little for any window; a new (kind, batch size) with workers needs 45 s (15 quick)
        self.assertEqual(h.skip_reason(gemm, 1.5, seen, False), "")
        self.assertEqual(h.skip_reason(gemm, 30.0, {}, False), ", too little for its components")
        self.assertIsNone(h.skip_reason(gemm, 30.0, {}, True))

    def test_step_is_heavy_by_measurement_then_by_name(self):
        h = load_harness()
        # run 32's A1 step components: resnet50 host 21.59 ms over GPU 16.83 ms; mm:25 host 3.33 over 24.96
        self.assertTrue(h.step_is_heavy("resnet50", {"host_s": {"mean": 0.02159}, "gpu_s": {"mean": 0.01683}}))
        self.assertFalse(h.step_is_heavy("mm:25", {"host_s": {"mean": 0.00333}, "gpu_s": {"mean": 0.02496}}))
        # the measurement wins over the name: a GEMM loop whose host is slow is heavy
        self.assertTrue(h.step_is_heavy("mm:5", {"host_s": {"mean": 0.004}, "gpu_s": {"mean": 0.005}}))
        # before the step is measured: by name
        self.assertTrue(h.step_is_heavy("resnet50"))
        self.assertFalse(h.step_is_heavy("mm:60", None))

    def test_in_order_families_add_only_the_unordered_knob(self):
        h = load_harness()
        cases = [c for c in h.build_cases(False, ["in_order", "in_order_image"]) if c["repeat"] == 0]
        self.assertEqual(len(cases), 4)
        ordered = [c for c in cases if "in_order" not in c["knobs"]]
        unordered = [c for c in cases if c["knobs"].get("in_order") is False]
        self.assertEqual(len(ordered), 2)
        self.assertEqual(len(unordered), 2)
        # the default setting keeps its old knobs (and id), so it dedups with the other families' base
        for c in unordered:
            self.assertTrue(c["id"].endswith("-unordered"))
        self.assertFalse(any(c["id"].endswith("-unordered") for c in ordered))
        base = h.build_cases(False, ["pin_memory_tensor", "in_order"])
        self.assertEqual(len([c for c in base if c["repeat"] == 0]), 3)   # pin, nopin, unordered


def write_tiny_dataset_module(d: str) -> str:
    """A module in d for pipeplan_probe.py's CLI: make() gives 50 samples of 10 bytes, coll joins them."""
    mod = os.path.join(d, "myds.py")
    with open(mod, "w") as f:
        f.write("class DS:\n    def __len__(self): return 50\n"
                "    def __getitem__(self, i): return bytes(10)\n"
                "def make(): return DS()\n"
                "def coll(b): return b''.join(b)\n")
    return mod


class ProbeTest(unittest.TestCase):
    def test_summarize_by_hand(self):
        s = probe.summarize([1.0, 2.0, 3.0, 4.0])
        self.assertAlmostEqual(s["mean"], 2.5)
        self.assertAlmostEqual(s["std"], math.sqrt(5 / 3))
        self.assertAlmostEqual(s["cv"], math.sqrt(5 / 3) / 2.5)
        self.assertAlmostEqual(s["stderr"], math.sqrt(5 / 3) / 2)
        self.assertAlmostEqual(s["p50"], 2.5)

    def test_nbytes(self):
        self.assertEqual(probe.nbytes_of([b"abcd", {"x": bytearray(3)}, (1, "s")]), 7)

    def test_probe_with_plain_dataset(self):
        class DS:
            def __len__(self):
                return 1000

            def __getitem__(self, i):
                return bytes(100 + i % 7)

        def coll(batch):
            return b"".join(batch)
        clock = iter(range(10 ** 6))
        res = probe.probe(DS(), collate_fn=coll, batch_size=8, n_samples=50, n_batches=5,
                          sample_bytes=123)
        self.assertEqual(res["load_s_per_sample"]["n"], 50)
        frag = probe.scenario_fragment(res)
        self.assertEqual(set(frag), {"dataset", "loader"})
        self.assertEqual(frag["loader"]["batch_size"], 8)
        self.assertGreater(frag["dataset"]["item_bytes"], 99)
        self.assertEqual(frag["dataset"]["num_samples"], 1000)
        self.assertEqual(frag["dataset"]["sample_bytes"]["mean"], 123.0)
        self.assertEqual(frag["dataset"]["load_s_per_sample"]["kind"], "lognormal")
        if "in_worker" not in res:      # timed in this process only (no torch): plain memory, the floor applies
            self.assertNotIn("collate_in_shared_memory", frag["loader"])
        del clock

    def test_fragment_from_the_jobs_own_worker_count(self):
        # one worker 4 ms per sample, 8 at once 5 ms: the fragment's cost is 5 ms with the curve
        # 1.0 at 8 busy cores and 5/4 = 1.25 alone, so the simulator gives back 5 ms at 8 and 4 ms alone
        res = {"num_samples": 1000, "batch_size": 64, "item_bytes_from_batch": 600.0,
               "load_s_per_sample": {"mean": 0.0035, "cv": 0.2}, "collate_s_per_batch": {"mean": 0.02},
               "in_worker": {"getitem_s": 0.004, "collate_s": 0.025, "workers": 1},
               "in_workers": {"getitem_s": 0.005, "collate_s": 0.03, "workers": 8}}
        frag = probe.scenario_fragment(res)
        self.assertEqual(frag["dataset"]["load_s_per_sample"]["mean"], 0.005)
        self.assertEqual(frag["dataset"]["load_speed_vs_busy_cores"],
                         [{"busy_cores": 1, "relative_speed": 1.25}, {"busy_cores": 8, "relative_speed": 1.0}])
        self.assertEqual(frag["loader"]["collate_s_per_batch"], 0.025)   # one worker's: the profile's curve slows it
        self.assertTrue(frag["loader"]["collate_in_shared_memory"])     # timed in a worker: no shm-write floor
        del res["in_workers"]
        frag = probe.scenario_fragment(res)
        self.assertEqual(frag["dataset"]["load_s_per_sample"]["mean"], 0.004)
        self.assertNotIn("load_speed_vs_busy_cores", frag["dataset"])

    def test_an_inline_job_takes_the_in_process_timings(self):
        # num_workers=0: the main process loads and collates, with its own threads, into private memory; a worker's
        # timing (one thread, a collate into fresh shared memory) is not what it pays (harness: run 12's inline probe)
        res = {"num_samples": 1000, "batch_size": 64, "item_bytes_from_batch": 600.0, "inline": True,
               "load_s_per_sample": {"mean": 0.0035, "cv": 0.2}, "collate_s_per_batch": {"mean": 0.02},
               "in_worker": {"getitem_s": 0.004, "collate_s": 0.025, "workers": 1, "overhead_s_per_batch": 0.003}}
        frag = probe.scenario_fragment(res)
        self.assertEqual(frag["dataset"]["load_s_per_sample"]["mean"], 0.0035)
        self.assertEqual(frag["loader"]["collate_s_per_batch"], 0.02)
        self.assertNotIn("collate_in_shared_memory", frag["loader"])
        self.assertNotIn("worker_s_per_batch", frag["loader"])

    def test_an_inline_probe_times_with_the_process_threads_and_no_worker(self):
        threads = []

        class DS:
            def __len__(self):
                return 100

            def __getitem__(self, i):
                threads.append(probe_threads())
                return bytes(10)
        res = probe.probe(DS(), collate_fn=lambda b: b"".join(b), batch_size=4, n_samples=10, n_batches=3,
                          num_workers=0)
        self.assertTrue(res["inline"])
        self.assertNotIn("in_worker", res)
        try:
            import torch
            self.assertEqual(set(threads), {torch.get_num_threads()})
        except ImportError:
            pass
        res = probe.probe(DS(), collate_fn=lambda b: b"".join(b), batch_size=4, n_samples=10, n_batches=3,
                          in_worker=False)
        self.assertFalse(res["inline"])

    def test_probe_cli(self):
        with tempfile.TemporaryDirectory() as d:
            mod = write_tiny_dataset_module(d)
            out = os.path.join(d, "frag.json")
            p = subprocess.run([sys.executable, os.path.join(HERE, "pipeplan_probe.py"), "--dataset",
                                f"{mod}:make", "--collate", f"{mod}:coll", "--batch-size", "4",
                                "--samples", "30", "--batches", "5", "--out", out],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            frag = json.load(open(out))
            self.assertEqual(frag["dataset"]["item_bytes"], 10)
            # the module form the docstring shows (module:callable, found from the working directory)
            p = subprocess.run([sys.executable, os.path.join(HERE, "pipeplan_probe.py"), "--dataset", "myds:make",
                                "--collate", "myds:coll", "--batch-size", "4", "--samples", "30", "--batches", "5",
                                "--out", out], capture_output=True, text=True, cwd=d)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.load(open(out))["dataset"]["item_bytes"], 10)
            p = subprocess.run([sys.executable, os.path.join(HERE, "pipeplan_probe.py"), "--dataset",
                                "nosuchmod:x"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("No module named 'nosuchmod'", p.stderr)
            # the hand-overs' wait needs the windows that time them: one line, exit 2, no fragment written
            nothing = os.path.join(d, "nothing.json")
            p = subprocess.run([sys.executable, os.path.join(HERE, "pipeplan_probe.py"), "--dataset", f"{mod}:make",
                                "--collate", f"{mod}:coll", "--batch-size", "4", "--pin-wait-from-hand-overs",
                                "--out", nothing], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("--pin-wait-from-hand-overs: needs --main-loop", p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1)
            self.assertFalse(os.path.exists(nothing))
            # --open-files: the files' opens timed, their wait written (a local disk: microseconds or none)
            for i in range(6):
                with open(os.path.join(d, f"f{i}.bin"), "wb") as f:
                    f.write(b"x" * 100)
            p = subprocess.run([sys.executable, os.path.join(HERE, "pipeplan_probe.py"), "--dataset", f"{mod}:make",
                                "--collate", f"{mod}:coll", "--batch-size", "4", "--samples", "30", "--batches", "5",
                                "--open-files", os.path.join(d, "f*.bin"), "--samples-per-file", "2", "--out", out],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                frag = json.load(f)
            self.assertEqual(frag["dataset"]["samples_per_file"], 2)
            self.assertGreaterEqual(frag["storage"]["open_latency_s"], 0.0)
            self.assertLess(frag["storage"]["open_latency_s"], 0.05)
            self.assertIn("over 6 files", p.stderr)
            p = subprocess.run([sys.executable, os.path.join(HERE, "pipeplan_probe.py"), "--dataset", f"{mod}:make",
                                "--open-files", os.path.join(d, "nothing*.jpg")], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("--open-files", p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_time_opens_counts_each_file_once(self):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i in range(5):
                paths.append(os.path.join(d, f"{i}.bin"))
                with open(paths[-1], "wb") as f:
                    f.write(b"y")
            res = probe.time_opens(paths, max_files=3)
            self.assertEqual(res["n"], 3)
            self.assertGreaterEqual(res["wall_s_per_open"], 0.0)
            self.assertGreaterEqual(res["wait_s_per_open"], 0.0)
            self.assertEqual(probe.time_opens([])["n"], 0)
        self.assertAlmostEqual(probe.open_wait_s(0.0012, 0.0002), 0.001, places=15)
        self.assertEqual(probe.open_wait_s(0.00001, 0.00002), 0.0)  # a CPU tick longer than a local open

    def test_fragment_moves_the_open_wait_out_of_the_per_sample_cost(self):
        # a 4 ms __getitem__ in a worker that waited a 1 ms open: 3 ms of load and a 1 ms open a file; with 4 samples
        # a file the timed samples waited a quarter of an open each on average: 3.75 ms of load
        res = {"num_samples": 1000, "batch_size": 64, "item_bytes_from_batch": 600.0,
               "load_s_per_sample": {"mean": 0.0035, "cv": 0.2}, "collate_s_per_batch": {"mean": 0.02},
               "in_worker": {"getitem_s": 0.004, "collate_s": 0.025, "workers": 1},
               "opens": {"n": 100, "wall_s_per_open": 0.00105, "cpu_s_per_open": 0.00005, "wait_s_per_open": 0.001}}
        frag = probe.scenario_fragment(dict(res, samples_per_file=1))
        self.assertAlmostEqual(frag["dataset"]["load_s_per_sample"]["mean"], 0.003, places=12)
        self.assertEqual(frag["storage"], {"open_latency_s": 0.001})
        self.assertEqual(frag["dataset"]["samples_per_file"], 1)
        frag = probe.scenario_fragment(dict(res, samples_per_file=4))
        self.assertAlmostEqual(frag["dataset"]["load_s_per_sample"]["mean"], 0.00375, places=12)
        self.assertNotIn("samples_per_file", probe.scenario_fragment(dict(res, opens={"n": 0}))["dataset"])


class ProbeStepTest(unittest.TestCase):
    """pipeplan_probe's training step: time_step on a fake clock, training_fragment by hand, the CLI's --step."""

    def test_training_fragment_by_hand(self):
        # launches 20 ms over a 16.5 ms GPU step (back to back the host's 20.2), 21.5 ms a step with a sync: host-bound,
        # step_s the isolated time, and the sync waits 1.5 ms (the tail)
        gpu = {"isolated_s": {"mean": 0.0165}, "sustained_s": {"mean": 0.0202}}
        res = {"host_s": {"mean": 0.020}, "loop_step_s": 0.0215, "gpu_step_s": gpu}
        self.assertEqual(probe.training_fragment(res),
                         {"training": {"host_s_per_step": 0.02, "step_s": 0.0165, "launch_tail_s": 0.0015}})
        # GPU-bound (5 ms of launches, 0.2 of the 29.9 ms back-to-back step): step_s the back-to-back time, no tail
        gpu = {"isolated_s": {"mean": 0.025}, "sustained_s": {"mean": 0.0299}}
        res = {"host_s": {"mean": 0.005}, "loop_step_s": 0.0253, "gpu_step_s": gpu}
        self.assertEqual(probe.training_fragment(res), {"training": {"host_s_per_step": 0.005, "step_s": 0.0299}})
        # launches 25 ms, over 0.8 of the 29.9 ms back-to-back step: the isolated time; no longer than it: no tail
        res = {"host_s": {"mean": 0.025}, "loop_step_s": 0.0301, "gpu_step_s": gpu}
        self.assertEqual(probe.training_fragment(res), {"training": {"host_s_per_step": 0.025, "step_s": 0.025}})
        # no isolated time (the launches never fitted behind the hold) and not well ahead: step_s left to the user
        res = {"host_s": {"mean": 0.025}, "loop_step_s": 0.0301,
               "gpu_step_s": {"isolated_s": None, "sustained_s": {"mean": 0.0299}}}
        self.assertEqual(probe.training_fragment(res), {"training": {"host_s_per_step": 0.025}})

    def test_the_step_summary_names_the_verdict(self):
        st = {"host_s": {"mean": 0.020, "cv": 0.05, "n": 20}, "loop_step_s": 0.0215,
              "gpu_step_s": {"isolated_s": {"mean": 0.0165}, "sustained_s": {"mean": 0.0202}}}
        self.assertIn("the sync waits 1.500 ms for the work launched last", probe._human_step(st))
        st["gpu_step_s"] = {"isolated_s": {"mean": 0.025}, "sustained_s": {"mean": 0.0299}}
        st["host_s"]["mean"] = 0.005
        self.assertIn("step_s the back-to-back time", probe._human_step(st))
        st["gpu_step_s"]["isolated_s"] = None
        st["host_s"]["mean"] = 0.025
        self.assertIn("isolated n/a", probe._human_step(st))
        self.assertIn("training.step_s left to you", probe._human_step(st))
        del st["gpu_step_s"]
        self.assertIn("not measured (no CUDA)", probe._human_step(st))
        # no GPU time (no CUDA): the launches alone
        self.assertEqual(probe.training_fragment({"host_s": {"mean": 0.02}, "loop_step_s": 0.03}),
                         {"training": {"host_s_per_step": 0.02}})

    def test_time_step_on_a_fake_clock(self):
        from unittest import mock
        clock = [0.0]
        def step():                      # 4 ms of launches
            clock[0] += 0.004
            return "loss"
        def sync(out):                   # then 1 ms of waiting at the sync
            self.assertEqual(out, "loss")
            clock[0] += 0.001
        with mock.patch.object(probe.time, "perf_counter", lambda: clock[0]):
            res = probe.time_step(step, n_steps=10, warmup=2, sync=sync, gpu=False)
        self.assertAlmostEqual(res["host_s"]["mean"], 0.004)
        self.assertEqual(res["host_s"]["n"], 10)
        self.assertAlmostEqual(res["loop_step_s"], 0.005)
        self.assertNotIn("gpu_step_s", res)

    def test_memory_map_fragment_by_hand(self):
        # run 28's GIL call: the loop 23.56 ms alone, rate 0.73; its blocks 6.70 ms a step slower on average
        # (deviations 0, 2, -2, 1, -1, 3, 0, -3 ms: t 9.5), 1.70 beside the receive alone: it needs the map. One
        # need every 0.5 ms (the simulator's default), each waiting 0.5 x 0.73 / 0.27 = 1.352 ms
        dev = (0, 2, -2, 1, -1, 3, 0, -3)
        res = {"rate": 0.73, "alone_s": 0.02356, "beside_s": 0.03026, "overlap_s_per_step": 0.00921, "blocks": 8,
               "block_excess_s": [0.0067 + d / 1000 for d in dev],
               "receive_block_excess_s": [0.0017 + d / 1000 for d in dev],
               "alone_faults_per_step": 1.0, "beside_faults_per_step": 1.0}
        tr = probe.memory_map_fragment(res)["training"]
        self.assertEqual(set(tr), {"host_needs_memory_map", "memory_map_wait_s"})
        self.assertTrue(tr["host_needs_memory_map"])
        self.assertAlmostEqual(tr["memory_map_wait_s"], 0.0005 * 0.73 / 0.27, places=7)
        self.assertAlmostEqual(tr["memory_map_wait_s"], 0.0013519, places=6)
        # the converter's formula gives the same wait for the same loop
        self.assertAlmostEqual(tr["memory_map_wait_s"], convert.memory_map_wait_from_rate(0.02356, None, 0.73), places=7)
        text = probe._human_memory_map(res)
        self.assertIn("(6.70 ms a step slower, t 9.5, 1.90 needed; 1.70 ms beside the receive alone)", text)
        self.assertIn("training.memory_map_wait_s 1.352 ms", text)
        # a loss over the work's own time (a light loop behind the lock): false, and the summary says why
        light = dict(res, rate=2.21)
        self.assertEqual(probe.memory_map_fragment(light), {"training": {"host_needs_memory_map": False}})
        self.assertIn("more than the work's own time", probe._human_memory_map(light))
        # no significant loss: false, without that reason
        calm = dict(res, block_excess_s=[d / 1000 for d in dev])
        self.assertEqual(probe.memory_map_fragment(calm), {"training": {"host_needs_memory_map": False}})
        self.assertNotIn("work's own time", probe._human_memory_map(calm))
        # under 3 blocks: no keys, and the summary says so
        short = dict(res, block_excess_s=res["block_excess_s"][:2])
        self.assertEqual(probe.memory_map_fragment(short), {})
        self.assertIn("no verdict", probe._human_memory_map(short))
        self.assertIn("not measured (RuntimeError: no CUDA", probe._human_memory_map(
            {"error": "RuntimeError: no CUDA device: pin_memory() needs one"}))

    @unittest.skipUnless(os.access(os.path.join(HERE, "..", "..", "build", "cli", "pipeplan"), os.X_OK),
                         "build/cli/pipeplan not built")
    def test_memory_map_fragment_runs_in_pipeplan(self):
        # the keys the fragment writes are the simulator's: merged into the bundled default scenario (pinned, 8
        # workers) it simulates, and the report's memory_map section shows the loop stalling on the map
        pipeplan = os.path.join(HERE, "..", "..", "build", "cli", "pipeplan")
        res = {"rate": 0.73, "alone_s": 0.02356, "beside_s": 0.03026, "overlap_s_per_step": 0.00921, "blocks": 8,
               "block_excess_s": [0.0067, 0.0087, 0.0047, 0.0077], "receive_block_excess_s": [0.0017, 0.0037, 0.0007]}
        base = json.load(open(os.path.join(HERE, "..", "..", "scenarios", "default.json")))
        sc = probe.scenario_with(base, probe.memory_map_fragment(res))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.json")
            json.dump(sc, open(path, "w"))
            p = subprocess.run([pipeplan, "simulate", "--scenario", path, "--format", "json"], capture_output=True,
                               text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        mm = json.loads(p.stdout)["memory_map"]
        self.assertGreater(mm["main_thread_wait_fraction"], 0.0)
        self.assertGreater(mm["pin_thread_held_fraction"], 0.0)

    def test_main_loop_window_on_a_fake_clock(self):
        # a drop window: each next() advances the wall 2 ms and the thread's CPU 0.25 ms; 1.5 s of window -> 750
        # batches, 0.25 ms of CPU each. A copy window: each call advances the wall 0.3 ms more (the .to() call), the
        # median call 0.3 ms; the sync after it (the transfer, 0.6 ms) is not the call's; the CPU figure is a drop
        # window's only (a copy's sync spins)
        clock = {"wall": 0.0, "cpu": 0.0}

        def source():
            while True:
                clock["wall"] += 0.002
                clock["cpu"] += 0.00025
                yield object()

        def copy(batch):
            clock["wall"] += 0.0003

        def sync():
            clock["wall"] += 0.0006
        drop = probe.main_loop_window(source(), "drop", 1.5, clock=lambda: clock["wall"],
                                      thread_clock=lambda: clock["cpu"])
        self.assertEqual(drop["batches"], 750)
        self.assertAlmostEqual(drop["main_thread_cpu_s_per_batch"], 0.00025)
        self.assertNotIn("copy_call_s", drop)
        cp = probe.main_loop_window(source(), "copy", 1.5, copy, sync, clock=lambda: clock["wall"],
                                    thread_clock=lambda: clock["cpu"])
        self.assertAlmostEqual(cp["copy_call_s"], 0.0003)
        self.assertEqual(cp["batches"], 1.5 // 0.0029 + 1)  # each batch's wall: 2 + 0.3 + 0.6 ms
        self.assertNotIn("main_thread_cpu_s_per_batch", cp)
        # a slow source still gives 3 batches
        slow = probe.main_loop_window(iter([1, 2, 3, 4]), "drop", 0.0)
        self.assertEqual(slow["batches"], 3)

    def test_loop_fragment_by_hand(self):
        windows = [{"main_loop": "drop", "main_thread_cpu_s_per_batch": 0.0002},
                   {"main_loop": "copy", "copy_call_s": 0.0003},
                   {"main_loop": "drop", "main_thread_cpu_s_per_batch": 0.0003},
                   {"main_loop": "copy", "copy_call_s": 0.0002}]
        self.assertEqual(probe.loop_fragment({"windows": windows}),
                         {"loader": {"main_next_s_per_batch": 0.00025}, "transfer": {"copy_call_s_per_batch": 0.00025}})
        # without CUDA: no keys, and the summary says why
        failed = {"error": "RuntimeError: no CUDA device: a pinning loader and the copy need one"}
        self.assertEqual(probe.loop_fragment(failed), {})
        self.assertIn("not measured (RuntimeError: no CUDA", probe._human_main_loop(failed))
        self.assertIn("next() 0.250 ms", probe._human_main_loop({"windows": windows, "num_workers": 4}))

    def test_loop_fragment_takes_the_fd_hand_overs_off_the_pin_threads_core(self):
        # run 86a's first w4 case, rounded: two hand-overs a batch, 1.76 ms wall, 0.56 ms of the pin thread's CPU in
        # them: 1.20 ms a batch off its core (convert.fd_handover_wait_s reads a probe the same way)
        windows = [{"main_loop": "drop", "main_thread_cpu_s_per_batch": 0.0002}]
        res = {"windows": windows, "num_workers": 4, "fd_detach_calls_per_batch": 2.0,
               "fd_detach_wall_s_per_batch": 0.00176, "fd_detach_cpu_s_per_batch": 0.00056}
        self.assertAlmostEqual(probe.fd_handover_wait_s(res), 0.0012)
        # written only when asked (--pin-wait-from-hand-overs): the user's path has not been checked with it yet
        self.assertEqual(probe.loop_fragment(res)["loader"], {"main_next_s_per_batch": 0.0002})
        self.assertEqual(probe.loop_fragment(res, pin_wait=True)["loader"],
                         {"main_next_s_per_batch": 0.0002, "pin_thread_wait_s_per_batch": 0.0012})
        self.assertAlmostEqual(probe.fd_handover_wait_s(res),
                               convert.fd_handover_wait_s({"probe": dict(res, pin_memory=True)}))
        self.assertIn("fd hand-overs 1.200 ms a batch off its core", probe._human_main_loop(res))
        # CPU above the wall: 0, never below; not timed (a torch that hands storages over otherwise): no key
        self.assertEqual(probe.fd_handover_wait_s(dict(res, fd_detach_cpu_s_per_batch=0.002)), 0.0)
        del res["fd_detach_wall_s_per_batch"]
        self.assertIsNone(probe.fd_handover_wait_s(res))
        self.assertNotIn("pin_thread_wait_s_per_batch", probe.loop_fragment(res, pin_wait=True)["loader"])
        # a failed run fills nothing, whatever it carries
        self.assertEqual(probe.loop_fragment({"error": "RuntimeError: no CUDA device", "fd_detach_wall_s_per_batch": 1,
                                              "fd_detach_cpu_s_per_batch": 0}, pin_wait=True), {})

    def test_time_main_loop_times_the_hand_overs_of_its_own_windows_and_puts_everything_back(self):
        # time_main_loop's plumbing without torch or a GPU: a stand-in torch whose DataLoader hands over two fds a
        # batch through multiprocessing.resource_sharer.DupFd.detach (here a 1 ms sleep, no CPU to speak of, in
        # place of the wait for the worker's sharer thread), and harness's numpy stubbed where it is missing
        import types
        from multiprocessing import resource_sharer as rs
        from unittest import mock

        def sleeping_detach(self_):
            time.sleep(0.001)

        class DataLoader:
            def __init__(self, dataset, batch_size, **kw):
                self.batches = len(dataset) // batch_size

            def __iter__(self):
                for i in range(self.batches):
                    rs.DupFd.detach(None)
                    rs.DupFd.detach(None)
                    yield i
        data = types.ModuleType("torch.utils.data")
        data.DataLoader, data.IterableDataset = DataLoader, type("IterableDataset", (), {})
        pm = types.ModuleType("torch.utils.data._utils.pin_memory")
        pm.pin_memory, pm._pin_memory_loop = (lambda d, *a, **k: d), (lambda *a, **k: None)
        _utils = types.ModuleType("torch.utils.data._utils")
        _utils.pin_memory, data._utils = pm, _utils
        utils = types.ModuleType("torch.utils")
        utils.data = data
        torch = types.ModuleType("torch")
        torch.utils, torch.cuda = utils, types.SimpleNamespace(is_available=lambda: True, synchronize=lambda: None)
        fakes = {"torch": torch, "torch.utils": utils, "torch.utils.data": data, "torch.utils.data._utils": _utils,
                 "torch.utils.data._utils.pin_memory": pm}
        if importlib.util.find_spec("numpy") is None:
            fakes["numpy"] = types.ModuleType("numpy")
        orig_pin = pm.pin_memory
        with mock.patch.dict(sys.modules, fakes), mock.patch.object(rs.DupFd, "detach", sleeping_detach):
            res = probe.time_main_loop(list(range(64 * 4)), batch_size=64, num_workers=2, window_s=0.02,
                                       settle_s=0.01)
            # the meter put the module's pin_memory and the class's detach back when it ended
            self.assertIs(rs.DupFd.detach, sleeping_detach)
            self.assertIs(pm.pin_memory, orig_pin)
        self.assertEqual([w["main_loop"] for w in res["windows"]], ["drop", "copy", "drop", "copy"])
        self.assertEqual(res["fd_detach_calls_per_batch"], 2.0)
        # two 1 ms sleeps a batch: at least 2 ms off the core (a sleep never returns early; its overshoot on a busy
        # CI machine is left loose above: the count of calls a batch above is the check on what is counted)
        wait_s = probe.loop_fragment(res, pin_wait=True)["loader"]["pin_thread_wait_s_per_batch"]
        self.assertGreaterEqual(wait_s, 0.0019)
        self.assertLess(wait_s, 0.02)

    @unittest.skipUnless(os.access(os.path.join(HERE, "..", "..", "build", "cli", "pipeplan"), os.X_OK),
                         "build/cli/pipeplan not built")
    def test_loop_fragment_runs_in_pipeplan(self):
        # the keys are the simulator's: merged into the bundled default scenario (pinned, 8 workers) it simulates
        # with both in the loop's host time: the host_loop stage's time a batch grows by their sum (0.5 ms), over the
        # loop's share of its core (models/analytic.cpp; within 2% on the default scenario)
        pipeplan = os.path.join(HERE, "..", "..", "build", "cli", "pipeplan")
        base = json.load(open(os.path.join(HERE, "..", "..", "scenarios", "default.json")))
        windows = [{"main_loop": "drop", "main_thread_cpu_s_per_batch": 0.0002},
                   {"main_loop": "copy", "copy_call_s": 0.0003}]

        def host_loop_capacity(sc):
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "s.json")
                json.dump(sc, open(path, "w"))
                p = subprocess.run([pipeplan, "simulate", "--scenario", path, "--format", "json"],
                                   capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            return next(s["capacity_samples_per_s"] for s in json.loads(p.stdout)["stages"] if s["name"] == "host_loop")
        with_loop = probe.scenario_with(base, probe.loop_fragment({"windows": windows}))
        self.assertEqual(with_loop["transfer"]["copy_call_s_per_batch"], 0.0003)
        bs = base["loader"]["batch_size"]
        before, after = host_loop_capacity(base), host_loop_capacity(with_loop)
        self.assertAlmostEqual(bs / after - bs / before, 0.0005, delta=0.0005 * 0.02)

    def test_to_device_moves_each_tensor_and_keeps_the_structure(self):
        class FakeTensor:                      # what tensors_in takes for a tensor: pin_memory and data_ptr
            def __init__(self, name):
                self.name = name

            def pin_memory(self):
                return self

            def data_ptr(self):
                return 0

            def to(self, device, non_blocking=False):
                return (self.name, device, non_blocking)
        batch = (FakeTensor("x"), [FakeTensor("y"), 7], {"z": FakeTensor("z")})
        self.assertEqual(probe.to_device(batch, "cuda"),
                         (("x", "cuda", True), [("y", "cuda", True), 7], {"z": ("z", "cuda", True)}))
        self.assertEqual(probe.to_device(FakeTensor("x"), "cuda", non_blocking=False), ("x", "cuda", False))

    def test_endless_batches_go_epoch_after_epoch(self):
        src = probe.endless_batches([1, 2], batch_size=8)
        self.assertEqual([next(src) for _ in range(5)], [1, 2, 1, 2, 1])
        with self.assertRaises(ValueError):       # no whole batch in an epoch: an error, not a spin
            next(probe.endless_batches([], batch_size=8))

    def test_main_loop_cli_needs_a_dataset_and_workers(self):
        p = subprocess.run([sys.executable, os.path.join(HERE, "pipeplan_probe.py"), "--step", "x:y", "--main-loop"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        self.assertIn("--main-loop: needs --dataset and --num-workers K >= 1", p.stderr)

    def test_memory_map_cli_needs_its_three_inputs(self):
        p = subprocess.run([sys.executable, os.path.join(HERE, "pipeplan_probe.py"), "--step", "x:y", "--memory-map"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        self.assertIn("--memory-map: needs --step, --dataset and --num-workers K >= 1", p.stderr)

    @unittest.skipUnless(importlib.util.find_spec("torch") is not None, "needs torch (CPU is enough)")
    def test_time_step_beside_pin_on_cpu(self):
        # the blocks' machinery on a CPU: the pin work replaced by a 2 ms sleep on the helper thread (pin_memory()
        # needs CUDA); the step a 4 ms sleep, the GIL released, so that the helper's work runs inside the steps
        # of a beside block (a step holding the GIL for less than Python's 5 ms switch interval would keep the
        # helper out until it ends). The reading has 8 blocks, the alone and beside means, and fault counts on Linux.
        import time as _t
        def step():
            _t.sleep(0.004)
            return None
        res = probe.time_step_beside_pin(step, list(range(256)), batch_size=8, num_workers=1, sync=lambda out: None,
                                         pin=lambda batch: _t.sleep(0.002))
        self.assertNotIn("error", res)
        self.assertEqual(res["blocks"], 8)
        self.assertGreater(res["overlap_s_per_step"], 0.0)
        self.assertGreaterEqual(res["alone_s"], 0.004)        # each step's span holds its 4 ms of work
        self.assertLess(res["alone_s"], 0.05)                 # and not the blocks' waits for a token
        self.assertEqual(len(res["block_excess_s"]), 8)
        self.assertEqual(len(res["receive_block_excess_s"]), 8)  # the blocks beside the receive alone
        if sys.platform.startswith("linux"):
            self.assertIsNotNone(res["alone_faults_per_step"])
        # a dataset too small for one whole batch: an error, not an endless wait
        with self.assertRaisesRegex(ValueError, "no whole batch of 8"):
            probe.time_step_beside_pin(step, list(range(5)), batch_size=8, num_workers=1, sync=lambda out: None,
                                       pin=lambda batch: None)

    def test_merge_fragments(self):
        a = {"dataset": {"num_samples": 5}, "training": {"steps": 10}}
        b = {"training": {"host_s_per_step": 0.02}}
        self.assertEqual(probe.merge_fragments(a, b),
                         {"dataset": {"num_samples": 5}, "training": {"steps": 10, "host_s_per_step": 0.02}})
        self.assertEqual(a["training"], {"steps": 10})                  # the inputs untouched

    def test_scenario_with_a_base(self):
        base = {"schema": "pipeplan-scenario/1", "description": "mine.", "dataset": {"num_samples": 9, "sample_bytes": 5},
                "loader": {"batch_size": 256, "num_workers": 8}, "training": {"step_s": 0.085}}
        frag = {"dataset": {"num_samples": 50, "item_bytes": 10}, "training": {"host_s_per_step": 0.02}}
        out = probe.scenario_with(base, frag, batch_size=4)
        self.assertEqual(out["dataset"], {"num_samples": 50, "sample_bytes": 5, "item_bytes": 10})
        self.assertEqual(out["loader"], {"batch_size": 4, "num_workers": 8})   # num_workers: the base's
        self.assertEqual(out["training"], {"step_s": 0.085, "host_s_per_step": 0.02})
        self.assertTrue(out["description"].startswith("mine. [measured by pipeplan_probe.py on "))
        self.assertIn("dataset.item_bytes, training.host_s_per_step]", out["description"])
        self.assertEqual(base["loader"]["batch_size"], 256)                      # the base untouched

    def test_step_cli(self):
        with tempfile.TemporaryDirectory() as d:
            mod = os.path.join(d, "mystep.py")
            with open(mod, "w") as f:
                f.write("import time\n"
                        "def make():\n"
                        "    def step():\n"
                        "        time.sleep(0.002)\n"
                        "        return 0.5\n"
                        "    return step\n"
                        "def not_a_step(): return 3\n")
            out = os.path.join(d, "frag.json")
            cmd = [sys.executable, os.path.join(HERE, "pipeplan_probe.py")]
            p = subprocess.run(cmd + ["--step", f"{mod}:make", "--steps", "5", "--out", out],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            tr = json.load(open(out))["training"]
            self.assertGreaterEqual(tr["host_s_per_step"], 0.002)       # at least the sleep
            self.assertNotIn("launch_tail_s", tr)                       # no GPU time here: no tail claimed
            # merged into a whole scenario (--base): the base's keys stay, the measured ones replace them
            base = os.path.join(d, "base.json")
            with open(base, "w") as f:
                json.dump({"schema": "pipeplan-scenario/1", "training": {"step_s": 0.01, "host_s_per_step": 1.0},
                           "loader": {"batch_size": 32}}, f)
            p = subprocess.run(cmd + ["--step", f"{mod}:make", "--steps", "3", "--base", base, "--out", out],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            merged = json.load(open(out))
            self.assertEqual(merged["training"]["step_s"], 0.01)
            self.assertLess(merged["training"]["host_s_per_step"], 1.0)
            self.assertEqual(merged["loader"], {"batch_size": 32})                # no --dataset: the base's batch
            with open(base, "w") as f:
                f.write("[1, 2")
            # a step builder that does not return a function, no subject at all, a broken base: one line, exit code 2
            for args in (["--step", f"{mod}:not_a_step"], [], ["--step", f"{mod}:make", "--base", base]):
                p = subprocess.run(cmd + args, capture_output=True, text=True)
                self.assertEqual(p.returncode, 2)
                self.assertEqual(p.stderr.count("\n"), 1, p.stderr)


class ReadJson(unittest.TestCase):
    """convert.read_json: a call's cases.json, or where it is absent the .gz or .xz copy older calls are kept as."""

    def test_reads_the_plain_file_and_else_its_gzip_copy(self):
        import gzip
        with tempfile.TemporaryDirectory() as d:
            plain, packed = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            with open(plain, "w") as f:
                json.dump({"cases": [1]}, f)
            with gzip.open(packed + ".gz", "wt") as f:
                json.dump({"cases": [2]}, f)
            self.assertEqual(convert.read_json(plain), {"cases": [1]})
            self.assertEqual(convert.read_json(packed), {"cases": [2]})
            self.assertEqual(convert.read_json(packed + ".gz"), {"cases": [2]})   # named as such (a traceback before)
            import lzma
            xz = os.path.join(d, "c.json")
            with lzma.open(xz + ".xz", "wt") as f:
                json.dump({"cases": [3]}, f)
            self.assertEqual(convert.read_json(xz), {"cases": [3]})
            self.assertEqual(convert.read_json(xz + ".xz"), {"cases": [3]})
            self.assertEqual(convert.stored_json_path(xz), xz + ".xz")
            self.assertEqual(convert.stored_json_path(plain), plain)
            self.assertIsNone(convert.stored_json_path(os.path.join(d, "missing.json")))
            with self.assertRaises(OSError):
                convert.read_json(os.path.join(d, "missing.json"))

    def test_a_plain_copy_for_the_simulator_only_where_the_file_is_stored_compressed(self):
        import lzma
        with tempfile.TemporaryDirectory() as d:
            plain, packed = os.path.join(d, "profile.json"), os.path.join(d, "other", "profile.json")
            with open(plain, "w") as f:
                json.dump({"schema": 1}, f)
            copy = os.path.join(d, "copy.json")
            self.assertEqual(convert.plain_json_path(plain, {"schema": 1}, copy), plain)
            self.assertFalse(os.path.exists(copy))                        # nothing written for a plain file
            os.makedirs(os.path.dirname(packed))
            with lzma.open(packed + ".xz", "wt") as f:
                json.dump({"schema": 2}, f)
            got = convert.plain_json_path(packed, convert.read_json(packed), copy)
            self.assertEqual(got, copy)
            with open(copy) as f:
                self.assertEqual(json.load(f), {"schema": 2})
            self.assertEqual(convert.plain_json_path(packed + ".xz", {"schema": 2}, copy), copy)   # named as such
            self.assertIsNone(convert.plain_json_path(None, None, copy))

    def test_a_log_is_read_plain_or_from_its_xz_copy(self):
        import lzma
        with tempfile.TemporaryDirectory() as d:
            plain, packed = os.path.join(d, "calibrate.log"), os.path.join(d, "harness.log")
            with open(plain, "w") as f:
                f.write("chunk 1\n")
            with lzma.open(packed + ".xz", "wt") as f:
                f.write("case 00 ok\n")
            self.assertEqual(convert.read_stored_text(plain), "chunk 1\n")
            self.assertEqual(convert.read_stored_text(packed), "case 00 ok\n")
            self.assertIsNone(convert.read_stored_text(os.path.join(d, "missing.log")))
            # the wander refit hands the binary a plain copy of an xz log: a stand-in binary echoes what it read
            fake = os.path.join(d, "fake-calibrate")
            with open(fake, "w") as f:
                f.write('#!/bin/sh\nprintf \'{"read": "%s"}\' "$(cat "$2")"\n')
            os.chmod(fake, 0o755)
            self.assertEqual(convert.slow_wander_refit(fake, packed), {"read": "case 00 ok"})
            self.assertIsNone(convert.slow_wander_refit(fake, os.path.join(d, "missing.log")))



class ColdCaseProbes(unittest.TestCase):
    """--cold-probe: which loader probes a cold case's scenario brackets it with."""

    def case(self, storage="cold", warm_probe=True):
        c = {"knobs": {"storage": storage},
             "components": {"probe_after": {"workers": 4, "getitem_wall_s": 0.3e-3, "collate_wall_s": 0.02}}}
        if warm_probe:
            c["components"]["probe_warm"] = {"workers": 4, "getitem_wall_s": 0.4e-3, "collate_wall_s": 0.024}
        return c

    def test_warm_and_after_brackets_the_cold_case_like_a_warm_one(self):
        c = convert.cold_case_probes(self.case(), "warm-and-after")
        comp = c["components"]
        p = convert.probe_bracket(comp["probe"], comp["probe_after"])
        self.assertAlmostEqual(p["getitem_wall_s"], 0.35e-3)        # (0.4 + 0.3) / 2
        self.assertAlmostEqual(p["collate_wall_s"], 0.022)
        self.assertNotIn("probe", self.case()["components"])        # the case itself is left as it was

    def test_default_and_other_cases_unchanged(self):
        for c, how in ((self.case(), "after"), (self.case(storage="warm"), "warm-and-after"),
                       (self.case(warm_probe=False), "warm-and-after")):
            self.assertIs(convert.cold_case_probes(c, how), c)


class LeaveOneOut(unittest.TestCase):
    def test_each_value_against_the_mean_of_the_others(self):
        # 100 against (110 + 120) / 2 = 115: 0.15; 110 against 110: 0; 120 against 105: 0.125
        e = convert.leave_one_out_errors([100.0, 110.0, 120.0])
        for got, want in zip(e, [0.15, 0.0, 0.125]):
            self.assertAlmostEqual(got, want)
        self.assertEqual(convert.leave_one_out_errors([5.0]), [None])


class ColdReadLatency(unittest.TestCase):
    """A cold case's wait per file from load_cold: 0.50 ms a file cold alone, 0.30 ms of it CPU, and 100 kB at a
    1e9 B/s stream rate (0.10 ms): 0.10 ms a file beyond its bytes, above fio's 0.025 ms."""

    def case(self, storage="cold", wall=0.0005, cpu=0.0003):
        c = make_case("c", "storage_image", 1000, 0.05, 0.06, storage=storage)
        c["components"]["load_cold"] = {"mean": wall, "cpu_s_per_sample": cpu}
        return c

    PROFILE = {"storage": {"stream_read_bytes_per_s": 1e9, "read_latency_s": 2.5e-5}}

    def test_the_wait_beyond_the_bytes_at_the_stream_rate(self):
        self.assertAlmostEqual(convert.cold_read_latency_s(self.case(), 1e5, self.PROFILE), 1e-4, places=12)

    def test_never_below_one_requests_latency(self):
        # 0.15 ms of wall, 0.10 of CPU: 0.05 ms of wait is less than the bytes' 0.10 ms: fio's latency stays
        self.assertAlmostEqual(convert.cold_read_latency_s(self.case(wall=0.00015, cpu=0.0001), 1e5, self.PROFILE),
                               2.5e-5, places=12)

    def test_lone_waits_with_and_without_the_metadata(self):
        # everything dropped: 0.50 - 0.30 ms; the pages alone: 0.35 - 0.28 ms; CPU above the wall reads as no wait
        c = self.case()
        self.assertEqual(convert.lone_cold_waits_s(c)[1], None)
        c["components"]["load_cold"]["pages_only"] = {"mean": 0.00035, "cpu_s_per_sample": 0.00028}
        all_cold, pages = convert.lone_cold_waits_s(c)
        self.assertAlmostEqual(all_cold, 2e-4, places=12)
        self.assertAlmostEqual(pages, 7e-5, places=12)
        c["components"]["load_cold"]["pages_only"]["cpu_s_per_sample"] = 0.0004
        self.assertEqual(convert.lone_cold_waits_s(c)[1], 0.0)
        self.assertEqual(convert.lone_cold_waits_s({"components": {}}), (None, None))

    def test_no_gpu_probe_wait(self):
        # 1.20 ms of getitem, 0.45 of it CPU: 0.75 ms waited; a failed or absent probe: None
        c = self.case()
        self.assertIsNone(convert.no_gpu_cold_wait_s(c))
        c["components"]["probe_cold_no_gpu"] = {"getitem_wall_s": 0.0012, "getitem_cpu_s": 0.00045}
        self.assertAlmostEqual(convert.no_gpu_cold_wait_s(c), 0.00075, places=12)
        c["components"]["probe_cold_no_gpu"] = {"error": "RuntimeError: x"}
        self.assertIsNone(convert.no_gpu_cold_wait_s(c))

    def test_none_when_warm_or_unmeasured(self):
        self.assertIsNone(convert.cold_read_latency_s(self.case(storage="warm"), 1e5, self.PROFILE))
        self.assertIsNone(convert.cold_read_latency_s(self.case(), 1e5, {"storage": {}}))
        c = self.case()
        del c["components"]["load_cold"]
        self.assertIsNone(convert.cold_read_latency_s(c, 1e5, self.PROFILE))


class ProbeCold(unittest.TestCase):
    """pipeplan_probe --cold: a sample's cold load turned into storage.read_latency_s as convert does for the
    validation cases (hand figures as in ColdReadLatency)."""

    PROFILE = {"storage": {"stream_read_bytes_per_s": 1e9, "read_latency_s": 2.5e-5}}

    def res(self, cold=True):
        return {"num_samples": 1000, "batch_size": 64, "item_bytes_from_batch": 600.0,
                "load_s_per_sample": {"mean": 0.0035, "cv": 0.2}, "collate_s_per_batch": {"mean": 0.02},
                "sample_bytes": {"mean": 1e5, "cv": 0.0},
                "load_cold": {"mean": 0.0005, "cpu_s_per_sample": 0.0003, "cold": cold, "n": 120}}

    def test_fragment_takes_the_wait_beyond_the_bytes(self):
        # 0.50 ms cold, 0.30 ms of it CPU, 100 kB at 1e9 B/s (0.10 ms): 0.10 ms a file
        frag = probe.scenario_fragment(self.res(), self.PROFILE)
        self.assertAlmostEqual(frag["storage"]["read_latency_s"], 1e-4, places=9)
        self.assertEqual(convert.cold_read_latency_s(
            {"knobs": {"storage": "cold"}, "components": {"load_cold": self.res()["load_cold"]}}, 1e5, self.PROFILE),
            probe.cold_read_latency_s(0.0005, 0.0003, 1e5, 1e9, 2.5e-5))     # one formula for both

    def test_no_latency_without_a_profile_a_cold_cache_or_the_bytes(self):
        self.assertNotIn("storage", probe.scenario_fragment(self.res()))
        self.assertNotIn("storage", probe.scenario_fragment(self.res(cold=False), self.PROFILE))
        r = self.res()
        del r["sample_bytes"]
        self.assertNotIn("storage", probe.scenario_fragment(r, self.PROFILE))

    def test_timing_files_advised_out_of_the_cache(self):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i in range(40):
                paths.append(os.path.join(d, f"{i:03d}.bin"))
                with open(paths[-1], "wb") as f:
                    f.write(os.urandom(4096 + 512 * i))

            class Files:
                def __len__(self):
                    return len(paths)

                def __getitem__(self, i):
                    with open(paths[i], "rb") as f:
                        return f.read()
            res = probe.probe(Files(), collate_fn=lambda b: b"".join(b), batch_size=4, n_samples=20, n_batches=3,
                              in_worker=False, cold=False, cold_paths=paths)
            # one file a sample: the bytes read are the files' mean size, 4096 + 512 * 19.5
            self.assertAlmostEqual(res["sample_bytes"]["mean"], 4096 + 512 * 19.5)
            lc = probe.time_cold(Files(), paths=paths, n_samples=30, system_wide=False)
            self.assertTrue(lc["cold"])
            self.assertEqual(lc["n"], 30)
            self.assertIn("posix_fadvise(DONTNEED) on 40 files", lc["method"])
            self.assertLessEqual(lc["cpu_s_per_sample"], lc["mean"] * 1.05 + 1e-4)   # CPU within the wall
            lc = probe.time_cold(Files(), paths=[], n_samples=5, system_wide=False)
            self.assertFalse(lc["cold"])                # nothing was made cold: no latency from it

    def test_cli_refuses_what_it_cannot_use(self):
        with tempfile.TemporaryDirectory() as d:
            mod = write_tiny_dataset_module(d)
            bad = os.path.join(d, "profile.json")
            with open(bad, "w") as f:
                json.dump({"storage": {"stream_read_bytes_per_s": -1}}, f)
            out = os.path.join(d, "frag.json")
            cli = [sys.executable, os.path.join(HERE, "pipeplan_probe.py"), "--dataset", f"{mod}:make",
                   "--samples", "30", "--batches", "5", "--no-worker", "--out", out]
            p = subprocess.run(cli + ["--cold", "--cold-files", os.path.join(d, "*.nomatch")],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("no files match", p.stderr)
            p = subprocess.run(cli + ["--profile", bad], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1)
            self.assertIn("$.storage.stream_read_bytes_per_s = -1", p.stderr)
            self.assertFalse(os.path.exists(out))       # refused before measuring: nothing written
            p = subprocess.run(cli[:-1] + [os.path.join(d, "no", "such", "frag.json")], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertIn("--out", p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1)


class MissGroupsTest(unittest.TestCase):
    """The generated page's "Where the misses are": cases beyond the 12% p90 target grouped by hand."""

    @staticmethod
    def row(cid, err, **knobs):
        k = {"kind": "tensor_f32", "step": "mm:5", "pin_memory": True, "storage": "warm"}
        k.update(knobs)
        return {"id": cid, "knobs": k, "pipeplan": {"err": err} if err is not None else {}}

    def test_groups_by_hand(self):
        rows = [self.row("r1:00", +0.20),                                   # tensor mm:5 pinned, over
                self.row("r1:01", -0.13),                                   # same group, under
                self.row("r2:00", +0.05),                                   # same group, inside the target
                self.row("r2:01", +0.121, step="resnet50", pin_memory=False),
                self.row("r2:02", +0.12, step="resnet50", pin_memory=False),  # exactly 12%: not a miss
                self.row("r3:00", -0.30, kind="image", storage="cold"),
                self.row("r3:01", +0.50, storage="cold"),                   # a cold tensor read
                self.row("r3:02", None, kind="image", storage="cold")]       # no prediction: left out
        g = {x["group"]: x for x in convert.miss_groups(rows)}
        self.assertEqual(set(g), {"tensor_f32, mm:5, pinned", "ResNet-50 loop, unpinned", "image, cold",
                                  "tensor_f32, cold read"})
        t = g["tensor_f32, mm:5, pinned"]
        self.assertEqual((t["n_misses"], t["n_over"], t["n_under"], t["n_cases"], t["calls"]), (2, 1, 1, 3, ["r1"]))
        r = g["ResNet-50 loop, unpinned"]
        self.assertEqual((r["n_misses"], r["n_cases"], r["calls"]), (1, 2, ["r2"]))
        self.assertEqual(g["image, cold"]["n_cases"], 1)                   # the unpredicted case is not counted
        self.assertEqual(convert.miss_groups(rows)[0]["group"], "tensor_f32, mm:5, pinned")   # most misses first

    def test_failing_families_leave_out_the_unorderable(self):
        fams = {"r1:a": {"tau_pipeplan_within_noise": 1.0}, "r1:b": {"tau_pipeplan_within_noise": 0.6},
                "r2:c": {"tau_pipeplan_within_noise": None}, "r2:d": {}, "r3:e": {"tau_pipeplan_within_noise": 0.9}}
        self.assertEqual(convert.failing_families(fams), [("r1:b", 0.6)])



class FastCorrelationLessSlow(unittest.TestCase):
    def test_by_hand(self):
        # equal parts in log variance (cv 0.1 each: f = 0.5), a slow part lasting far longer than a batch (r_slow ->
        # 1 at 1e9 s), probes' lag-one 0.8 at 0.1 s a batch (correlation 0.1 / ln(1 / 0.8) = 0.448 s): r_fast =
        # (0.8 - 0.5) / 0.5 = 0.6, so -0.1 / ln 0.6 = 0.1958 s
        tau = -0.1 / math.log(0.8)
        got = convert.fast_correlation_less_slow(tau, 0.1, 0.1, 0.1, 1e9)
        self.assertAlmostEqual(got, -0.1 / math.log(0.6), places=6)

    def test_kept_in_bounds_and_unchanged_without_a_slow_part(self):
        # a slow part that explains more than the whole lag-one: r_fast held at 0.01
        tau = -0.1 / math.log(0.3)
        self.assertAlmostEqual(convert.fast_correlation_less_slow(tau, 0.1, 0.1, 0.1, 1e9), -0.1 / math.log(0.01))
        self.assertEqual(convert.fast_correlation_less_slow(0.5, 0.1, 0.1, 0.0, 10.0), 0.5)
        self.assertEqual(convert.fast_correlation_less_slow(0.5, 0.0, 0.1, 0.1, 10.0), 0.5)


class SlowWanderSplit(unittest.TestCase):
    """--slow-wander: the case's one-part wander cut in the share calibrate's threads showed, variances in log
    speed adding up to the case's own."""

    def test_split_keeps_the_total_log_variance_in_the_calibrated_share(self):
        # calibrate: own cv 0.107 (var ln(1.011449) = 0.011384), slow cv 0.0508 (var 0.0025774): share 0.22641
        fast, slow, tau = convert.split_wander(0.12, 0.107, 0.0508, 3600.0)
        total = math.log1p(0.12 ** 2)
        share = math.log1p(0.0508 ** 2) / math.log1p(0.107 ** 2)
        self.assertAlmostEqual(math.log1p(fast ** 2) + math.log1p(slow ** 2), total, places=12)
        self.assertAlmostEqual(math.log1p(slow ** 2) / total, share, places=12)
        self.assertAlmostEqual(share, 0.22641, places=4)
        self.assertEqual(tau, 3600.0)

    def test_no_slow_part_leaves_the_wander_whole(self):
        self.assertEqual(convert.split_wander(0.12, 0.107, 0.0, 5.0), (0.12, 0.0, 0.0))
        self.assertEqual(convert.split_wander(0.12, 0.0, 0.05, 5.0), (0.12, 0.0, 0.0))
        # a slow part larger than the own (sampling noise) takes it all, no more
        fast, slow, _ = convert.split_wander(0.10, 0.05, 0.08, 5.0)
        self.assertEqual(fast, 0.0)
        self.assertAlmostEqual(slow, 0.10, places=12)

    def test_with_slow_wander_copies_the_profile(self):
        prof = {"cpu": {"core_speed_cv": 0.12, "core_speed_correlation_s": 0.8, "cores": 16}}
        refit = {"no_pause": {"own": {"cv": 0.107, "correlation_s": 1.0},
                              "slow": {"cv": 0.0508, "correlation_s": 5000.0}}, "paused": None}
        out = convert.with_slow_wander(prof, refit)
        self.assertEqual(prof["cpu"]["core_speed_cv"], 0.12)  # the input is untouched
        self.assertEqual(out["cpu"]["core_speed_correlation_s"], 0.8)
        self.assertEqual(out["cpu"]["core_speed_slow_correlation_s"], 3600.0)
        self.assertAlmostEqual(out["cpu"]["core_speed_slow_cv"], round(convert.split_wander(0.12, 0.107, 0.0508,
                                                                                            5000.0)[1], 4))
        self.assertIsNone(convert.with_slow_wander(prof, refit, "paused"))
        self.assertIsNone(convert.with_slow_wander(prof, None))


RUN48B2B = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "2026-12-03-h200-run48b2b")


@unittest.skipUnless(convert.stored_json_path(os.path.join(RUN48B2B, "cases.json")), "run 48's results not in this checkout")
class WorkerReadsTest(unittest.TestCase):
    """--worker-reads: the simulator reads a cold case's files one sample at a time unless told per-batch; a warm
    case reads nothing, so it never carries the key."""

    @classmethod
    def setUpClass(cls):
        cls.doc = convert.read_json(os.path.join(RUN48B2B, "cases.json"))
        cls.profile = convert.read_json(os.path.join(RUN48B2B, "profile.json"))
        cls.curve = cls.profile["cpu"]["speed_vs_busy_cores"]

    def storage(self, cold: bool, worker_reads: str, **what_ifs):
        c = next(c for c in self.doc["cases"]
                 if c["status"] == "ok" and c["family"] == "storage_tensor" and c["id"].endswith("-cold") == cold)
        a = argparse.Namespace(**{**vars(convert.TABLE_OPTIONS), "worker_reads": worker_reads, **what_ifs})
        duty_shape = convert.case_duty_shape(self.doc["components"], self.profile, c)
        scen, _ = convert.case_inputs(json.loads(json.dumps(c)), self.doc["machine"], self.profile, a, self.curve,
                                      duty_shape, True, None, self.doc["components"])
        return scen["storage"]

    def test_a_pinned_case_takes_its_probes_pin_cycle_cv_when_asked(self):
        c = next(c for c in self.doc["cases"] if c["status"] == "ok" and c["knobs"].get("pin_memory")
                 and int(c["knobs"].get("num_workers") or 0) > 0)
        c = json.loads(json.dumps(c))
        for name, cv in (("probe", 0.11), ("probe_after", 0.13)):
            c["components"][name].update(pin_memory=True, pin_cycle_cv=cv, workers=8, busy_workers=3.0)
        duty_shape = convert.case_duty_shape(self.doc["components"], self.profile, c)

        def profile_with(pin_cycle):
            a = argparse.Namespace(**{**vars(convert.TABLE_OPTIONS), "pin_cycle": pin_cycle})
            _, prof = convert.case_inputs(json.loads(json.dumps(c)), self.doc["machine"], self.profile, a, self.curve,
                                          duty_shape, True, None, self.doc["components"])
            return ((prof or self.profile).get("cpu") or {})

        self.assertAlmostEqual(profile_with("probes")["pin_thread_speed_cv"], 0.12)
        self.assertNotIn("pin_thread_speed_cv", profile_with("off"))   # the table's (TABLE_OPTIONS): the cores'
        self.assertEqual(convert.TABLE_OPTIONS.pin_cycle, "off")
        self.assertNotIn("pin_thread_speed_cv", self.profile.get("cpu") or {})  # the call's profile untouched

    def test_only_a_cold_case_told_per_batch_carries_the_key(self):
        self.assertEqual(self.storage(True, "per-batch")["worker_reads"], "per_batch")
        self.assertNotIn("worker_reads", self.storage(True, "per-sample"))   # the simulator's default
        self.assertEqual(self.storage(True, "per-sample")["page_cache_hit_ratio"], 0.0)
        self.assertNotIn("worker_reads", self.storage(False, "per-batch"))

    def test_the_cold_read_share_what_ifs_reach_only_a_cold_case(self):
        cold = self.storage(True, "per-sample", device_share="follows-readers", reader_share="with-work",
                            device_bandwidth="fio-or-buffered-peak")
        self.assertEqual(cold["device_share"], "follows_readers")
        self.assertEqual(cold["reader_share_from"], "with_work")
        self.assertEqual(cold["device_bandwidth_from"], "fio_or_buffered_peak")
        plain = self.storage(True, "per-sample")  # the simulator's defaults: no key
        for key in ("device_share", "reader_share_from", "device_bandwidth_from"):
            self.assertNotIn(key, plain)
        warm = self.storage(False, "per-sample", device_share="follows-readers", reader_share="with-work")
        self.assertNotIn("reader_share_from", warm)


if __name__ == "__main__":
    unittest.main()
