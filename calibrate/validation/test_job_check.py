"""Tests of job_check.py without torch or a GPU: its pure parts against hand figures, and the CLI's --measured path
against pipeplan itself (when build/cli/pipeplan is built)."""
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import job_check  # noqa: E402
import pipeplan_probe  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PIPEPLAN = os.path.join(ROOT, "build", "cli", "pipeplan")
DEFAULT_SCENARIO = os.path.join(ROOT, "scenarios", "default.json")
SCRIPT = os.path.join(HERE, "job_check.py")


def run_cli(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=300)


class LoopSettingsTest(unittest.TestCase):
    def test_defaults_are_docs_scenario_md(self):
        # docs/scenario.md: batch_size 1, num_workers 0 (so no prefetch_factor), pin_memory / persistent_workers /
        # drop_last false, in_order true, non_blocking false, copy_stream default, sync_every_steps 0
        self.assertEqual(job_check.loop_settings({}), {
            "batch_size": 1, "num_workers": 0, "prefetch_factor": None, "pin_memory": False,
            "persistent_workers": False, "drop_last": False, "in_order": True, "non_blocking": False,
            "copy_stream": "default", "sync_every_steps": 0})

    def test_a_scenario_s_own_knobs(self):
        s = job_check.loop_settings({"loader": {"batch_size": 64, "num_workers": 8, "pin_memory": True,
                                                "persistent_workers": True},
                                     "transfer": {"non_blocking": True, "copy_stream": "side"},
                                     "training": {"sync_every_steps": 4}})
        self.assertEqual((s["batch_size"], s["num_workers"], s["prefetch_factor"]), (64, 8, 2))  # PyTorch's default 2
        self.assertTrue(s["pin_memory"] and s["persistent_workers"] and s["non_blocking"])
        self.assertEqual((s["copy_stream"], s["sync_every_steps"]), ("side", 4))

    def test_step_gpu_time(self):
        self.assertEqual(job_check.scenario_step_gpu_s({"training": {"step_s": 0.03}}), 0.03)
        self.assertAlmostEqual(job_check.scenario_step_gpu_s({"training": {"forward_s": 0.01, "backward_s": 0.02}}),
                               0.03)
        self.assertIsNone(job_check.scenario_step_gpu_s({}))


class SkipTest(unittest.TestCase):
    def test_the_loader_s_fill(self):
        # prefetch_factor x num_workers in flight, plus the batch in hand and the next; at least 5
        self.assertEqual(pipeplan_probe.steady_state_skip(8, 2), 18)
        self.assertEqual(pipeplan_probe.steady_state_skip(4, 4), 18)
        self.assertEqual(pipeplan_probe.steady_state_skip(1, 2), 5)
        self.assertEqual(pipeplan_probe.steady_state_skip(0, None), 5)

    def test_the_window_s_floor(self):
        self.assertEqual(job_check.min_measured_steps(0), 12)
        self.assertEqual(job_check.min_measured_steps(8), 24)     # 3 batches from each of 8 workers


class LoopFiguresTest(unittest.TestCase):
    def test_by_hand(self):
        # 12 steps; the first 2 left out. Intervals after step 1: nine of 10 ms and one of 100 ms
        ends = [0.0, 0.05] + [0.05 + 0.01 * k for k in range(1, 10)] + [0.05 + 0.09 + 0.1]
        host = [e + 0.001 for e in ends]
        waits = [0.5, 0.5] + [0.002] * 9 + [0.092]
        f = job_check.loop_figures(ends, host, waits, skip=2, batch_size=64)
        self.assertEqual((f["steps_run"], f["skip"], f["n_measured"]), (12, 2, 10))
        self.assertAlmostEqual(f["window_s"], 0.19)                  # 9 x 10 ms + 100 ms
        self.assertAlmostEqual(f["samples_per_s"], 10 * 64 / 0.19)
        g = job_check.loop_figures(ends, host, waits, skip=2, batch_size=64, samples=[64] * 11 + [10])
        self.assertAlmostEqual(g["samples_per_s"], (9 * 64 + 10) / 0.19)      # the last batch short
        self.assertAlmostEqual(f["step_time_s"]["mean"], 0.019)
        self.assertAlmostEqual(f["step_time_s"]["p50"], 0.01)
        # p90 of nine 10s and one 100 (linear between ranks): position 0.9 x 9 = 8.1 -> 10 + 0.1 x 90 = 19 ms
        self.assertAlmostEqual(f["step_time_s"]["p90"], 0.019)
        self.assertAlmostEqual(f["data_wait_s_mean"], (9 * 0.002 + 0.092) / 10)
        self.assertAlmostEqual(f["data_wait_fraction"], (9 * 0.002 + 0.092) / 0.19)

    def test_too_short(self):
        with self.assertRaises(ValueError):
            job_check.loop_figures([0.0, 0.1, 0.2], [0.0, 0.1, 0.2], [0, 0, 0], skip=2, batch_size=1)

    def test_the_windows_halves_by_hand(self):
        # skip 1, then 40 steps of 10 ms and 40 of 20 ms: halves of 40 steps, 64 samples each step
        ends = [0.0, 0.5]
        for st in [0.010] * 40 + [0.020] * 40:
            ends.append(ends[-1] + st)
        f = job_check.loop_figures(ends, ends, [0.0] * len(ends), skip=2, batch_size=64)
        h = f["halves"]
        self.assertEqual(h["steps_per_half"], 40)
        # the first half's window runs from step 1's end (0.5 s) to step 41's: 40 x 10 ms; the second 40 x 20 ms
        self.assertAlmostEqual(h["samples_per_s"][0], 40 * 64 / 0.4)
        self.assertAlmostEqual(h["samples_per_s"][1], 40 * 64 / 0.8)
        self.assertAlmostEqual(h["samples_per_s_rel_diff"], (6400 - 3200) / 4800)
        self.assertAlmostEqual(h["step_p90_s"][0], 0.010)
        self.assertAlmostEqual(h["step_p90_s"][1], 0.020)
        self.assertAlmostEqual(h["step_p90_rel_diff"], 0.010 / 0.015)
        # each step's own samples where given: the second half's steps carry 32
        g = job_check.loop_figures(ends, ends, [0.0] * len(ends), skip=2, batch_size=64,
                                   samples=[64] * 42 + [32] * 40)
        self.assertAlmostEqual(g["halves"]["samples_per_s"][1], 40 * 32 / 0.8)
        # under 20 steps a half: no halves, the rest of the figures as before
        short = job_check.loop_figures(ends[:40], ends[:40], [0.0] * 40, skip=2, batch_size=64)
        self.assertIsNone(short["halves"])
        self.assertEqual(short["n_measured"], 38)


class ComparisonTest(unittest.TestCase):
    MEASURED = {"samples_per_s": 2000.0, "step_time_s": {"mean": 0.032, "p90": 0.040}, "bottleneck": "input",
                "skip": 18, "n_measured": 400, "window_s": 12.8, "gpu_busy_fraction": 0.6}
    REPORT = {"throughput": {"samples_per_s": 2100.0}, "step_time_s": {"mean": 0.0304, "p80": 0.036, "p90": 0.038,
                                                                        "p95": 0.045},
              "bottleneck": {"stage": "workers", "explanation": "input-bound: 8 workers ..."},
              "step_p90_on_edge": True, "replications": {"n": 8}}

    def test_errors_and_classes(self):
        c = job_check.comparison(self.MEASURED, self.REPORT)
        self.assertAlmostEqual(c["errors"]["samples_per_s"], 0.05)       # 2,100 against 2,000
        self.assertAlmostEqual(c["errors"]["step_mean_s"], -0.05)        # 30.4 against 32.0 ms
        self.assertAlmostEqual(c["errors"]["step_p90_s"], -0.05)         # 38 against 40 ms
        self.assertEqual(c["predicted"]["bottleneck"], "input")          # the workers are the input side
        self.assertTrue(c["errors"]["bottleneck_agrees"])
        self.assertEqual(c["predicted"]["seeds"], 8)
        c2 = job_check.comparison(dict(self.MEASURED, bottleneck="compute"), self.REPORT)
        self.assertFalse(c2["errors"]["bottleneck_agrees"])

    def test_measured_class_is_the_table_s_rule(self):
        f = {"step_time_s": {"mean": 0.05}, "data_wait_s_mean": 0.02}
        # 25 ms of GPU in a 50 ms step: half busy; the 20 ms wait is over half of the other 25 ms: input
        self.assertEqual(job_check.measured_class(f, 0.025), {"bottleneck": "input", "gpu_busy_fraction": 0.5})
        self.assertEqual(job_check.measured_class(f, 0.046)["bottleneck"], "compute")
        self.assertEqual(job_check.measured_class({"step_time_s": {"mean": 0.05}, "data_wait_s_mean": 0.005},
                                                  0.025)["bottleneck"], "host")

    def test_human(self):
        check = {"settings": job_check.loop_settings({"loader": {"batch_size": 64, "num_workers": 8,
                                                                 "pin_memory": True}}),
                 "measured": self.MEASURED}
        check.update(job_check.comparison(self.MEASURED, self.REPORT))
        text = job_check.human(check)
        self.assertIn("8 workers, prefetch_factor 2, batch 64, pinned, no sync in the loop", text)
        self.assertIn("over 400 steps (12.8 s, after 18 that fill the loader)", text)
        self.assertRegex(text, r"samples/s\s+2,000\s+2,100\s+\+5\.0%")
        self.assertRegex(text, r"step p90\s+40\.0 ms\s+38\.0 ms\s+-5\.0%")
        self.assertIn("measured input (GPU busy 60%), pipeplan input (its stage workers): they agree", text)
        self.assertIn("anywhere in 36.0 ms to 45.0 ms", text)
        self.assertNotIn("own halves", text)          # a measurement without halves (an older check) says nothing
        halves = {"steps_per_half": 200, "samples_per_s": [2100.0, 1900.0], "samples_per_s_rel_diff": 0.1,
                  "step_p90_s": [0.038, 0.042], "step_p90_rel_diff": 0.1}
        check["measured"] = dict(self.MEASURED, halves=halves)
        self.assertIn("your window's own halves (200 steps each): 2,100 and 1,900 samples/s (10.0% apart), p90 step "
                      "38.0 ms and 42.0 ms (10.0% apart)", job_check.human(check))

    def test_the_simulated_run_is_the_measured_one(self):
        sim = job_check.simulated_scenario({"training": {"step_s": 0.03, "steps": 2000}},
                                           {"skip": 18, "n_measured": 400}, 50000)
        self.assertEqual(sim["training"], {"step_s": 0.03, "steps": 418, "warmup_steps": 18})
        self.assertEqual(sim["dataset"]["num_samples"], 50000)
        short = job_check.simulated_scenario({}, {"skip": 5, "n_measured": 30}, None)
        self.assertEqual(short["training"]["steps"], 5 + 200)           # the table's floor, convert.MIN_SIM_STEPS
        self.assertNotIn("dataset", short)


class ProfileNoteTest(unittest.TestCase):
    def test_only_a_pinning_loader_on_an_unfolded_profile(self):
        pinned = job_check.loop_settings({"loader": {"num_workers": 8, "pin_memory": True}})
        calibrated = {"ipc": {"receive_s_per_batch": 8e-6}}
        note = job_check.profile_note(pinned, calibrated, "p.json")
        self.assertIn("p.json's ipc figures look like calibrate's own", note)
        self.assertIn("pipeplan_probe.py --transport --main-loop --profile p.json --profile-out P2", note)
        folded = {"ipc": {"receive_s_per_batch": 2e-3, "receive_gil_s_per_batch": 4.8e-4}}
        self.assertIsNone(job_check.profile_note(pinned, folded, "p.json"))
        self.assertIsNone(job_check.profile_note(pinned, None, None))            # the bundled profile
        unpinned = job_check.loop_settings({"loader": {"num_workers": 8}})
        self.assertIsNone(job_check.profile_note(unpinned, calibrated, "p.json"))
        with open(os.path.join(ROOT, "scenarios", "profiles", "h200.json")) as f:
            self.assertIsNone(job_check.profile_note(pinned, json.load(f), "h200.json"))

    def test_a_helper_fold_without_the_loaders_scaling(self):
        pinned = job_check.loop_settings({"loader": {"num_workers": 4, "pin_memory": True}})
        calibrated = {"ipc": {"receive_s_per_batch": 8e-6}, "host": {"pin_copy_bytes_per_s": 1.1e10},
                      "provenance": {"note": "pipeplan calibrate, scaled by nothing"}}
        tr = {"num_workers": 12, "batch_size": 64, "batch_bytes": 38.5e6, "receive_s_per_batch": 0.0026,
              "receive_cpu_s_per_batch": 0.0024, "pin_s_per_batch": 0.017, "pin_thread_cpu_s_per_batch": 0.016}
        import pipeplan_probe
        unscaled = pipeplan_probe.profile_with_transport(calibrated, tr, 0.026, receive_gil_s=4.8e-4)
        note = job_check.profile_note(pinned, unscaled, "jc_p.json")
        self.assertIn("jc_p.json's transport fold is not scaled to your own loader", note)
        # the earlier profile's words after "Before:" do not count as the fold's scaling
        self.assertIn("scaled by nothing", unscaled["provenance"]["note"])
        scaled = pipeplan_probe.profile_with_transport(calibrated, tr, 0.026, receive_gil_s=4.8e-4,
                                                       pin_cpu_beside_loader_s=0.0179)
        self.assertIsNone(job_check.profile_note(pinned, scaled, "jc_p.json"))
        unpinned = job_check.loop_settings({"loader": {"num_workers": 4}})
        self.assertIsNone(job_check.profile_note(unpinned, unscaled, "jc_p.json"))


class TakesBatchTest(unittest.TestCase):
    def test_signatures(self):
        self.assertTrue(job_check.takes_batch(lambda batch: 0))
        self.assertFalse(job_check.takes_batch(lambda: 0))
        self.assertFalse(job_check.takes_batch(lambda batch=None: 0))
        self.assertFalse(job_check.takes_batch(lambda a, b: 0))


def measured_check(path, **over):
    m = {"skip": 18, "n_measured": 400, "window_s": 60.0, "samples_per_s": 1700.0,
         "step_time_s": {"mean": 0.15, "p50": 0.09, "p90": 0.36}, "bottleneck": "input", "gpu_busy_fraction": 0.57,
         "data_wait_s_mean": 0.06}
    m.update(over)
    with open(path, "w") as f:
        json.dump({"schema": job_check.SCHEMA, "measured": m, "dataset_len": None}, f)


class CliTest(unittest.TestCase):
    def test_nothing_to_run_is_bad_input(self):
        p = run_cli(DEFAULT_SCENARIO)
        self.assertEqual(p.returncode, 2)
        self.assertIn("expected --dataset and --step", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)

    def test_measure_only_and_measured_are_one_or_the_other(self):
        p = run_cli(DEFAULT_SCENARIO, "--no-simulate", "--measured", "/nonexistent/c.json")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--no-simulate: given with --measured", p.stderr)

    def test_measure_only_lines(self):
        import argparse
        check = {"measured": {"n_measured": 400, "window_s": 12.8, "skip": 18, "samples_per_s": 2000.0,
                              "step_time_s": {"mean": 0.032, "p90": 0.040}, "bottleneck": "input"}}
        text = job_check.human_measured(check, argparse.Namespace(scenario="s.json", out="c.json", profile="p.json"))
        self.assertIn("400 steps over 12.8 s after 18 that fill the loader: 2,000 samples/s, step mean 32.0 ms, "
                      "p90 40.0 ms, bottleneck input", text)
        self.assertIn("job_check.py s.json --measured c.json --profile p.json", text)

    def test_a_missing_scenario_is_named(self):
        p = run_cli("/nonexistent/s.json", "--measured", "/nonexistent/c.json")
        self.assertEqual(p.returncode, 2)
        self.assertIn("/nonexistent/s.json: cannot read a pipeplan scenario", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)

    @unittest.skipUnless(os.access(PIPEPLAN, os.X_OK), "build/cli/pipeplan not built")
    def test_a_bad_measurement_is_named_by_its_path(self):
        with tempfile.TemporaryDirectory() as d:
            c = os.path.join(d, "c.json")
            measured_check(c, n_measured=1)
            out = os.path.join(d, "out.json")
            p = run_cli(DEFAULT_SCENARIO, "--measured", c, "--out", out, "--pipeplan", PIPEPLAN)
            self.assertEqual(p.returncode, 2)
            self.assertIn(f"{c}: $.measured.n_measured = 1; expected an integer >= 2", p.stderr)
            self.assertFalse(os.path.exists(out))

    def test_malformed_halves_are_named(self):
        with tempfile.TemporaryDirectory() as d:
            c = os.path.join(d, "c.json")
            measured_check(c, halves={"samples_per_s": [1700.0]})
            with self.assertRaises(job_check.BadInput) as e:
                job_check.measured_from_check(c)
            self.assertIn(f"{c}: $.measured.halves = ", str(e.exception))
            self.assertIn("expected null or an object with samples_per_s and step_p90_s", str(e.exception))
            measured_check(c, halves=None)             # too short a window for halves: accepted
            self.assertIsNone(job_check.measured_from_check(c)["measured"]["halves"])

    @unittest.skipUnless(os.access(PIPEPLAN, os.X_OK), "build/cli/pipeplan not built")
    def test_a_scenario_pipeplan_refuses_is_its_line(self):
        with tempfile.TemporaryDirectory() as d:
            s = os.path.join(d, "s.json")
            with open(DEFAULT_SCENARIO) as f:
                doc = json.load(f)
            doc["loader"]["num_workers"] = -1
            with open(s, "w") as f:
                json.dump(doc, f)
            c = os.path.join(d, "c.json")
            measured_check(c)
            p = run_cli(s, "--measured", c, "--pipeplan", PIPEPLAN)
            self.assertEqual(p.returncode, 2)
            self.assertIn(f"{s}: loader.num_workers: got -1, expected an integer in [0, 1024]", p.stderr)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1)

    @unittest.skipUnless(os.access(PIPEPLAN, os.X_OK), "build/cli/pipeplan not built")
    def test_the_prediction_is_pipeplan_s_own_mean_over_seeds(self):
        # independent of job_check's arithmetic: pipeplan's --replications 3 over the same run (seeds 1-3) gives
        # the mean job_check must print
        with tempfile.TemporaryDirectory() as d:
            c = os.path.join(d, "c.json")
            measured_check(c)
            out = os.path.join(d, "out.json")
            p = run_cli(DEFAULT_SCENARIO, "--measured", c, "--replications", "3", "--out", out,
                        "--pipeplan", PIPEPLAN)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                check = json.load(f)
            ref = json.loads(subprocess.run(
                [PIPEPLAN, "simulate", DEFAULT_SCENARIO, "--steps", str(18 + 400), "--set",
                 "training.warmup_steps=18", "--replications", "3", "--format", "json"],
                capture_output=True, text=True, timeout=300, check=True).stdout)
        pred = check["predicted"]
        self.assertAlmostEqual(pred["samples_per_s"], ref["replications"]["samples_per_s"]["mean"], places=6)
        self.assertAlmostEqual(pred["step_time_s"]["p90"], ref["replications"]["step_time_s"]["p90"]["mean"],
                               places=9)
        self.assertAlmostEqual(check["errors"]["samples_per_s"], pred["samples_per_s"] / 1700.0 - 1)
        self.assertEqual(check["simulated_scenario"]["training"]["steps"], 418)
        self.assertIn("samples/s", p.stdout)
        self.assertIn("pipeplan: input-bound", p.stdout)

    def test_the_loop_without_torch_says_so(self):
        try:
            import torch  # noqa: F401
            self.skipTest("torch is here: the loop would run")
        except ImportError:
            pass
        if not os.access(PIPEPLAN, os.X_OK):
            self.skipTest("build/cli/pipeplan not built")
        ex = os.path.join(HERE, "example_step.py")
        p = run_cli(DEFAULT_SCENARIO, "--dataset", f"{ex}:tensor_dataset", "--step", f"{ex}:matmul_step",
                    "--pipeplan", PIPEPLAN)
        # example_step's callables build torch tensors: without torch the dataset cannot be built (bad input) or
        # the loop cannot run (3); either way one line
        self.assertIn(p.returncode, (2, 3))
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)


class FakeTensor:
    """A batch tensor to the loop: its first dimension, a .to() that stays put."""

    def __init__(self, rows):
        self.shape = (rows, 3)
        self.is_cuda = False

    def pin_memory(self):
        return self

    def data_ptr(self):
        return 0

    def to(self, device, non_blocking=False):
        return self


class FakeTorch:
    """Just enough of torch for run_loop's control flow on a CPU without torch: a DataLoader that deals index
    batches in order, CUDA events on the host clock. It checks the loop, not CUDA."""

    def __init__(self):
        import time as _t
        import types
        self.syncs = 0
        fake = self

        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

            def record(self):
                self.t = _t.perf_counter()

            def elapsed_time(self, other):
                return (other.t - self.t) * 1e3

        class DataLoader:
            def __init__(self, ds, batch_size=1, shuffle=False, generator=None, num_workers=0, pin_memory=False,
                         drop_last=False, collate_fn=None, **kw):
                self.ds, self.bs, self.drop_last, self.kw = ds, batch_size, drop_last, kw

            def __iter__(self):
                n = len(self.ds)
                for a in range(0, n, self.bs):
                    b = [self.ds[i] for i in range(a, min(a + self.bs, n))]
                    if len(b) == self.bs or not self.drop_last:
                        yield [FakeTensor(len(b)), b]     # (inputs, labels) as default_collate gives them

        class Loss:
            def item(self):
                fake.syncs += 1
                return 0.0

        cuda = types.SimpleNamespace(is_available=lambda: True, Event=Event, synchronize=lambda: None,
                                     get_device_name=lambda i: "FakeGPU", Stream=object)
        self.module = types.SimpleNamespace(cuda=cuda, Generator=lambda: types.SimpleNamespace(manual_seed=lambda s: 0),
                                            device=lambda name: name, __version__="0-fake",
                                            utils=types.SimpleNamespace(data=types.SimpleNamespace(DataLoader=DataLoader)))
        self.Loss = Loss


class FakeMeter:
    """harness.PinThreadMeter's face to run_loop: a context, and snapshots that count how often they were taken
    (calls, pin wall, detach calls, detach wall, detach CPU: each snapshot's figures are its index times a step)."""

    def __init__(self):
        self.n = 0
        self.entered = self.exited = False

    def __enter__(self):
        self.entered = True
        return self

    def __exit__(self, *exc):
        self.exited = True
        return False

    def snapshot(self):
        self.n += 1
        return (10 * self.n, 0.01 * self.n, 20 * self.n, 0.020 * self.n, 0.006 * self.n)


class PinThreadTest(unittest.TestCase):
    def test_measured_by_hand(self):
        figs = {"pin_thread_cpu_s_per_batch": 0.012, "fd_detach_calls_per_batch": 2.0,
                "fd_detach_wall_s_per_batch": 0.0011, "fd_detach_cpu_s_per_batch": 0.0003}
        m = job_check.pin_thread_measured(figs, 0.0135)
        # the wait off the core: 1.1 - 0.3 = 0.8 ms; the share: (12 + 0.8) / 13.5
        self.assertAlmostEqual(m["fd_handover_wait_s_per_batch"], 0.0008)
        self.assertAlmostEqual(m["share_of_step"], 0.0128 / 0.0135)
        self.assertEqual(m["fd_detach_calls_per_batch"], 2.0)
        # CPU alone (no hand-overs timed: a torch that shares storages otherwise): the share is the CPU's
        m = job_check.pin_thread_measured({"pin_thread_cpu_s_per_batch": 0.010}, 0.020)
        self.assertIsNone(m["fd_handover_wait_s_per_batch"])
        self.assertAlmostEqual(m["share_of_step"], 0.5)
        # hand-overs alone (the thread restarted in the window): no share
        m = job_check.pin_thread_measured({"fd_detach_wall_s_per_batch": 0.001, "fd_detach_cpu_s_per_batch": 0.0004},
                                          0.020)
        self.assertIsNone(m["cpu_s_per_batch"])
        self.assertIsNone(m["share_of_step"])
        self.assertIsNone(job_check.pin_thread_measured({}, 0.02))

    def test_predicted_is_the_batch_over_the_stage_s_capacity(self):
        rep = {"stages": [{"name": "workers", "capacity_samples_per_s": 10000.0, "busy_fraction": 0.3},
                          {"name": "pin_thread", "capacity_samples_per_s": 4000.0, "busy_fraction": 0.8}]}
        p = job_check.pin_thread_predicted(rep, 64)
        self.assertAlmostEqual(p["s_per_batch"], 0.016)       # 64 / 4,000
        self.assertEqual(p["busy_fraction"], 0.8)
        self.assertIsNone(job_check.pin_thread_predicted({"stages": [rep["stages"][0]]}, 64))
        c = job_check.comparison({"samples_per_s": 3000.0, "step_time_s": {"mean": 0.02, "p90": 0.04}}, rep, 64)
        self.assertAlmostEqual(c["predicted"]["pin_thread"]["s_per_batch"], 0.016)
        self.assertIsNone(job_check.comparison({"samples_per_s": 1.0, "step_time_s": {}}, rep)["predicted"]["pin_thread"])

    def test_line(self):
        m = {"cpu_s_per_batch": 0.0125, "fd_handover_wait_s_per_batch": 0.0008, "share_of_step": 0.95}
        line = job_check.pin_thread_line(m, {"s_per_batch": 0.01421, "busy_fraction": 0.81})
        self.assertEqual(line, "pin thread      your loop's 12.50 ms of CPU a batch + 0.80 ms off its core in the fd "
                               "hand-overs, 95% of the mean step; pipeplan's 14.21 ms a batch, busy 81% of the run")
        self.assertTrue(job_check.pin_thread_line(None, {"s_per_batch": 0.01, "busy_fraction": None})
                        .endswith("pipeplan's 10.00 ms a batch, busy n/a of the run"))
        self.assertIsNone(job_check.pin_thread_line(None, None))


class RunLoopTest(unittest.TestCase):
    def run_fake(self, settings, step, ds, patches=None):
        """run_loop on FakeTorch with the names in `patches` replaced for the call: a bare name is job_check's, a
        "pipeplan_probe.name" the helper's (where the pin thread's marks read the thread)."""
        fake = FakeTorch()
        saved = {k: sys.modules.get(k) for k in ("torch", "torch.utils", "torch.utils.data")}
        mods = {"pipeplan_probe": pipeplan_probe}

        def where(key):
            mod, _, name = key.rpartition(".")
            return mods[mod] if mod else job_check, name
        saved_names = {k: getattr(*where(k)) for k in (patches or {})}
        sys.modules["torch"] = fake.module
        sys.modules["torch.utils"] = fake.module.utils
        sys.modules["torch.utils.data"] = fake.module.utils.data
        for k, v in (patches or {}).items():
            setattr(*where(k), v)
        try:
            return job_check.run_loop(ds, None, settings, step(fake), window_s=1e-6), fake
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
            for k, v in saved_names.items():
                setattr(*where(k), v)

    def pinned_patches(self, end_tid):
        meter = FakeMeter()
        cpu = iter([1.00, 1.36])          # the pin thread's CPU at the window's start and end
        tids = iter([4242, end_tid])
        calls = []

        def figures(p0, p1, c0, c1, batches):
            calls.append((p0, p1, c0, c1, batches))
            out = {"fd_detach_calls_per_batch": (p1[2] - p0[2]) / batches,
                   "fd_detach_wall_s_per_batch": (p1[3] - p0[3]) / batches,
                   "fd_detach_cpu_s_per_batch": (p1[4] - p0[4]) / batches}
            if c0 is not None and c1 is not None:
                out["pin_thread_cpu_s_per_batch"] = (c1 - c0) / batches
            return out
        harness = types.SimpleNamespace(PinThreadMeter=lambda: meter, pin_thread_figures=figures)
        return meter, calls, {"_validation_module": lambda name: harness,
                              "pipeplan_probe.pin_thread_native_id": lambda: next(tids),
                              # a restarted thread has a clock of its own, 0.05 s so far
                              "pipeplan_probe.process_cpu_s": lambda pid, tid: next(cpu) if tid == 4242 else 0.05}

    def test_pinned_reads_the_pin_thread_over_the_window(self):
        meter, calls, patches = self.pinned_patches(end_tid=4242)
        s = job_check.loop_settings({"loader": {"batch_size": 4, "num_workers": 2, "pin_memory": True,
                                                "persistent_workers": True}})
        f, _ = self.run_fake(s, lambda fake: (lambda batch: fake.Loss()), list(range(40)), patches)
        self.assertTrue(meter.entered and meter.exited)
        # one snapshot at the window's start (after the fill), one at its end; the figures over the measured steps
        self.assertEqual(meter.n, 2)
        (p0, p1, c0, c1, batches), = calls
        self.assertEqual((c0, c1, batches), (1.00, 1.36, f["n_measured"]))
        self.assertAlmostEqual(f["pin_thread"]["cpu_s_per_batch"], 0.36 / f["n_measured"])
        # hand-overs: 20 calls, 20 ms wall, 6 ms CPU between the snapshots: 14 ms off the core over the window
        self.assertAlmostEqual(f["pin_thread"]["fd_handover_wait_s_per_batch"], 0.014 / f["n_measured"])
        self.assertAlmostEqual(f["pin_thread"]["share_of_step"],
                               (0.36 + 0.014) / f["n_measured"] / f["step_time_s"]["mean"])

    def test_a_restarted_pin_thread_leaves_its_cpu_unread(self):
        meter, calls, patches = self.pinned_patches(end_tid=5151)
        s = job_check.loop_settings({"loader": {"batch_size": 4, "num_workers": 2, "pin_memory": True}})
        f, _ = self.run_fake(s, lambda fake: (lambda batch: fake.Loss()), list(range(40)), patches)
        self.assertIsNone(calls[0][3])
        self.assertIsNone(f["pin_thread"]["cpu_s_per_batch"])
        self.assertIsNotNone(f["pin_thread"]["fd_handover_wait_s_per_batch"])

    def test_unpinned_has_no_pin_thread_reading(self):
        def no_harness(name):
            raise AssertionError("an unpinned loop must not load the harness's meter")
        s = job_check.loop_settings({"loader": {"batch_size": 4, "num_workers": 2}})
        f, _ = self.run_fake(s, lambda fake: (lambda batch: fake.Loss()), list(range(40)),
                             {"_validation_module": no_harness})
        self.assertNotIn("pin_thread", f)

    def test_epochs_skip_floor_and_syncs(self):
        seen = []

        def make_step(fake):
            def step(batch):
                seen.append(len(batch[1]))
                return fake.Loss()
            return step
        s = job_check.loop_settings({"loader": {"batch_size": 4}, "training": {"sync_every_steps": 2}})
        f, fake = self.run_fake(s, make_step, list(range(10)))
        # no workers: 5 steps fill, then at least 12 measured: 17 steps of 4, 4, 2 samples (10 a pass, no drop_last)
        self.assertEqual((f["steps_run"], f["skip"], f["n_measured"]), (17, 5, 12))
        self.assertEqual(seen, [4, 4, 2] * 5 + [4, 4])
        self.assertEqual(f["epochs_started"], 6)
        # the window: steps 6-17, the samples of each (an epoch's last batch holds 2)
        self.assertEqual(f["samples_measured"], sum(([4, 4, 2] * 5 + [4, 4])[5:]))
        self.assertEqual(fake.syncs, 8)                  # loss.item() after steps 2, 4, ..., 16
        self.assertTrue(f["step_takes_batch"])
        self.assertEqual(f["gpu"], "FakeGPU")


if __name__ == "__main__":
    unittest.main()
