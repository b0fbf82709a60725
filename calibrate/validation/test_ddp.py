"""Unit tests of the DDP validation's torch-free parts (ddp_harness.py helpers, ddp_convert.py).

    python3 -m unittest discover -s calibrate/validation -p 'test_*.py'

No torch, no GPU, quick. The pipeplan integration test runs only when build/cli/pipeplan exists.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import ddp_convert as DC  # noqa: E402
from ddp_convert import dump_json, load_json  # noqa: E402
import ddp_harness as DH  # noqa: E402

MIB = 1 << 20
PIPEPLAN = os.path.join(ROOT, "build", "cli", "pipeplan")


# ---------------------------------------------------------------------------- a fake harness output
def _summ(mean, cv=0.01):
    return {"n": 20, "mean": mean, "std": mean * cv, "cv": cv, "stderr": 0.0, "stderr_rel": 0.0,
            "p50": mean, "p90": mean * 1.02, "min": mean * 0.98, "max": mean * 1.05}


def fake_doc(ws=2, caps=(1.0, 5.0, 25.0, 100.0)):
    """A ddp_harness.py document with plausible numbers (the structure the harness writes)."""
    cases = DH.build_cases(["resnet50", "linear"], caps, ["synthetic", "loader"])
    lin_sizes = [4096, 4 * MIB] * 95
    rn_sizes = [8192, 2 * MIB, 256 * 1024, 9 * MIB, 4 * MIB] * 8 + [4096] * 20
    models = {}
    for name, sizes, fw, bw in (("linear", lin_sizes, 0.0015, 0.0030), ("resnet50", rn_sizes, 0.006, 0.011)):
        models[name] = {
            "parameters": sum(sizes) // 4, "parameter_tensors": len(sizes), "gradient_bytes": sum(sizes),
            "isolated": {"forward_s": _summ(fw), "backward_s": _summ(bw), "optimizer_s": _summ(0.0004),
                         "host_s": _summ(0.002)},
            "sustained": {"forward_s": _summ(fw * 1.05), "backward_s": _summ(bw * 1.05),
                          "optimizer_s": _summ(0.0004), "step_interval_s": _summ((fw + bw) * 1.05 + 0.0004, 0.02)},
            "host_ahead": True,
            "grad_ready": {"order": [{"name": f"p{i}", "bytes": b, "ready_s": None} for i, b in enumerate(sizes)]},
            "computed_buckets": {f"{c:g}": DH.bucket_sizes(sizes, c) for c in caps},
        }
    pts = [{"bytes": b, "time_s": 2e-5 + b * DC.bus_factor(ws) / 3e11} for b in DH.geometric_sizes(4096, 512 * MIB, 4.0)]
    doc = {"schema": DH.SCHEMA, "started": "2026-12-01T00:00:00Z", "world_size": ws, "mode": "full",
           "sync_every": 0, "command": "fake",
           "machine": {"gpu": "NVIDIA H200", "cpu_cores": 16 * ws, "hostname": "fake", "torch": "2.11.0",
                       "nccl": "2.28.3"},
           "loader": {"batch_size": 64, "num_workers": 12, "prefetch_factor": 2},
           "components": {"models": models, "allreduce": {"points": pts},
                          "datasets": {"image": {"n": 2000, "sample_bytes": {"mean": 95000, "cv": 0.2}},
                                       "tensor_u8": {"n": 600, "sample_bytes": {"mean": 150656, "cv": 0.0}}},
                          "loader": {"image": {"load": _summ(0.0045, 0.2), "collate": {"s_per_batch": _summ(0.02),
                                                                                     "batch_bytes": _summ(38535168)},
                                               "in_worker": {"getitem_wall_s": 0.0042, "collate_wall_s": 0.027}},
                                     "tensor_u8": {"load": _summ(0.0002, 0.4), "collate": {"s_per_batch": _summ(0.0015),
                                                                                         "batch_bytes": _summ(9633792)},
                                                   "in_worker": {"getitem_wall_s": 0.00025, "collate_wall_s": 0.006}}}},
           "cases": cases}
    base = {"linear": 0.0050, "resnet50": 0.018}
    for c in cases:
        t = base[c["model"]] * (1.0 if c["mode"] != "ddp" else 1.0 + 0.1 / c["bucket_cap_mb"] ** 0.5)
        if c["data"] == "loader" and c["model"] == "resnet50":
            t = 0.026
        c["status"] = "ok"
        c["measured"] = {"n_measured": 100, "warmup_steps": 13,
                         "step_time_s": {"mean": t, "p50": t, "p90": t * 1.05, "cv": 0.02, "min": t, "max": t * 1.1},
                         "throughput_samples_per_s": ws * 64 / t, "data_wait_s": _summ(0.0001)}
        if c["data"] == "loader":
            c["measured"]["loader"] = {"kind": "image" if c["model"] == "resnet50" else "tensor_u8",
                                       "num_workers": 12, "prefetch_factor": 2, "batch_size": 64}
        if c["mode"] == "fsdp":    # each Linear a unit: its 4 MiB weight and 4 KiB bias
            c["measured"]["fsdp"] = {"unit_parameter_bytes": [4 * MIB + 4096] * 95,
                                     "backward_prefetch": c["fsdp_prefetch"], "reshard_after_forward": c["fsdp_reshard"]}
        if c["mode"] == "ddp":
            sizes = models[c["model"]]["computed_buckets"][f"{c['bucket_cap_mb']:g}"]
            c["measured"]["ddp"] = {"bucket_sizes": sizes}
            c["measured"]["profile"] = {"nccl_s_per_step": 0.001, "nccl_not_overlapped_s_per_step": 0.0003}
    DH.derive_exposed(cases)
    return doc


def scenario_keys():
    """Every key of docs/scenario.md's table (first column, in backticks)."""
    keys = set()
    with open(os.path.join(ROOT, "docs", "scenario.md")) as f:
        for line in f:
            m = re.match(r"^\|\s*`([a-z_.]+)`\s*\|", line)
            if m:
                keys.add(m.group(1))
    return keys


def leaf_paths(d, prefix=""):
    """Dotted paths of a scenario; a distribution object ({mean, cv, kind}) is one leaf."""
    out = []
    for k, v in d.items():
        p = f"{prefix}{k}"
        if isinstance(v, dict) and not ({"mean"} <= set(v) and set(v) <= {"mean", "cv", "kind"}) \
                and not p.endswith("slow_worker"):
            out += leaf_paths(v, p + ".")
        else:
            out.append(p)
    return out


# ---------------------------------------------------------------------------- bucket formation
class TestBuckets(unittest.TestCase):
    def test_first_bucket_then_cap(self):
        # 0.5 MiB tensors: the first bucket closes at 1 MiB (2 tensors), then 5 MiB (10 tensors) each
        sizes = [MIB // 2] * 23
        b = DH.bucket_assignment(sizes, 5 * MIB)
        self.assertEqual([len(x) for x in b], [2, 10, 10, 1])
        self.assertEqual(DH.bucket_sizes(sizes, 5), [MIB, 5 * MIB, 5 * MIB, MIB // 2])

    def test_reaching_the_limit_closes(self):
        # a bucket closes as soon as its size is >= the limit (not only when it would overflow)
        b = DH.bucket_sizes([MIB, MIB, MIB, MIB], 2)
        self.assertEqual(b, [MIB, 2 * MIB, MIB])

    def test_reverse_parameter_order(self):
        # backward produces a sequential model's gradients last layer first: the caller passes them
        # in that order, and the first (small) bucket holds the LAST layer's parameters
        forward_order = [8 * MIB, 8 * MIB, 8 * MIB, 4096]        # e.g. big layers, then a small head
        backward_order = list(reversed(forward_order))
        b = DH.bucket_assignment(backward_order, 25 * MIB)
        self.assertEqual(b[0], [0, 1])                            # head bias + the last big layer
        self.assertEqual(DH.bucket_sizes(backward_order, 25), [8 * MIB + 4096, 16 * MIB])

    def test_parameter_larger_than_cap_gets_its_own_bucket(self):
        sizes = [MIB, 100 * MIB, MIB // 4, MIB // 4]
        b = DH.bucket_assignment(sizes, 5 * MIB)
        self.assertEqual(b, [[0], [1], [2, 3]])                   # the 100 MiB one alone
        self.assertEqual(DH.bucket_sizes(sizes, 5)[1], 100 * MIB)

    def test_oversized_parameter_closes_an_open_bucket(self):
        # PyTorch's rule: it is appended to the open bucket, which then closes (never split)
        sizes = [MIB, MIB // 2, 100 * MIB, MIB]
        self.assertEqual(DH.bucket_assignment(sizes, 5 * MIB), [[0], [1, 2], [3]])

    def test_totals_and_every_index_once(self):
        sizes = [(i * 7919) % (3 * MIB) + 4 for i in range(300)]
        for cap in (1, 5, 25, 100):
            b = DH.bucket_assignment(sizes, cap * MIB)
            self.assertEqual(sorted(i for x in b for i in x), list(range(300)))
            self.assertEqual(sum(DH.bucket_sizes(sizes, cap)), sum(sizes))
            # every bucket but the last reaches its limit
            lims = [MIB] + [cap * MIB] * len(b)
            for k, x in enumerate(b[:-1]):
                self.assertGreaterEqual(sum(sizes[i] for i in x), lims[k])

    def test_bad_limits(self):
        with self.assertRaises(ValueError):
            DH.bucket_assignment([1, 2], 0)

    def test_linear_stack_layers(self):
        n = DH.linear_stack_layers(400e6, 1024)
        self.assertEqual(n, 95)
        self.assertEqual(DH.linear_stack_layers(1, 1024), 1)

    def test_parse_int_list(self):
        self.assertEqual(DH.parse_int_list("1048576, 26214400,5"), [1048576, 26214400, 5])
        self.assertEqual(DH.parse_int_list([1, 2]), [1, 2])
        self.assertEqual(DH.parse_int_list(None), [])
        self.assertEqual(DH.parse_int_list(""), [])


# ---------------------------------------------------------------------------- collective model
class TestHostCostFit(unittest.TestCase):
    def test_exact_recovery_by_hand(self):
        # extra = 2 ms + 50 us x buckets + 10 us x tensors
        pts = [{"buckets": b, "parameters": p, "extra_s": 2e-3 + 50e-6 * b + 10e-6 * p}
               for b, p in ((1, 48), (2, 192), (12, 192), (66, 192))]
        f = DH.fit_host_cost(pts)
        self.assertAlmostEqual(f["s_per_step"], 2e-3, places=9)
        self.assertAlmostEqual(f["s_per_bucket"], 50e-6, places=10)
        self.assertAlmostEqual(f["s_per_parameter"], 10e-6, places=10)
        self.assertLess(f["rmse_s"], 1e-12)

    def test_undetermined(self):
        self.assertIsNone(DH.fit_host_cost([{"buckets": 1, "parameters": 48, "extra_s": 1e-3}] * 2))
        # parameters never vary: per-step and per-parameter costs cannot be told apart
        self.assertIsNone(DH.fit_host_cost([{"buckets": b, "parameters": 192, "extra_s": 1e-3 * b} for b in (1, 2, 3)]))
        self.assertIsNone(DH.fit_host_cost([{"buckets": 1, "parameters": 1, "extra_s": None}] * 4))


class TestCollective(unittest.TestCase):
    def test_model_comm_per_step_by_hand(self):
        # 2 ranks (bus factor 1): 20 us + 3e8 B / 3e11 B/s = 1.02 ms, 20 us + 1e8 / 3e11 = 0.3533 ms
        m = {"latency_s": 20e-6, "bus_bytes_per_s": 3e11}
        self.assertAlmostEqual(DC.model_comm_per_step(m, [3e8, 1e8], 2), 1.02e-3 + 0.35333333e-3, places=9)
        # 4 ranks: bus factor 2 x 3 / 4 = 1.5
        self.assertAlmostEqual(DC.model_comm_per_step(m, [3e8], 4), 20e-6 + 1.5e-3, places=9)
        self.assertIsNone(DC.model_comm_per_step(None, [3e8], 2))
        self.assertIsNone(DC.model_comm_per_step(m, [], 2))

    def test_bus_factor(self):
        self.assertEqual(DC.bus_factor(1), 0.0)
        self.assertAlmostEqual(DC.bus_factor(2), 1.0)
        self.assertAlmostEqual(DC.bus_factor(4), 1.5)
        self.assertAlmostEqual(DC.bus_factor(8), 1.75)

    def test_fit_recovers_a_known_model(self):
        for ws in (2, 4, 8):
            lat, busbw = 23e-6, 3.4e11
            pts = [{"bytes": b, "time_s": lat + b * DC.bus_factor(ws) / busbw}
                   for b in DH.geometric_sizes(4096, 512 * MIB, 2.0)]
            fit = DC.fit_all_reduce(pts, ws)
            self.assertAlmostEqual(fit["latency_s"], lat, delta=lat * 1e-9)
            self.assertAlmostEqual(fit["bus_bytes_per_s"] / busbw, 1.0, places=9)
            self.assertLess(fit["rel_rmse"], 1e-9)
            self.assertAlmostEqual(DC.collective_time(fit, 100 * MIB, ws), lat + 100 * MIB * DC.bus_factor(ws) / busbw,
                                   delta=1e-12)

    def test_fit_is_relative(self):
        # +-10% multiplicative noise alternating: the latency is still found within ~10%
        lat, busbw = 30e-6, 2e11
        pts = [{"bytes": b, "time_s": (lat + b / busbw) * (1.1 if i % 2 else 0.9)}
               for i, b in enumerate(DH.geometric_sizes(1024, 1 << 30, 2.0))]
        fit = DC.fit_all_reduce(pts, 2)
        self.assertLess(abs(fit["latency_s"] / lat - 1), 0.15)
        self.assertLess(abs(fit["bus_bytes_per_s"] / busbw - 1), 0.15)
        self.assertGreater(fit["rel_rmse"], 0.05)

    def test_negative_intercept_refits_through_origin(self):
        a, b, rel = DC.fit_affine_relative([1.0, 2.0, 4.0], [0.5, 1.5, 3.5])     # y = -0.5 + x
        self.assertEqual(a, 0.0)
        self.assertGreater(b, 0.0)

    def test_fit_rejects_degenerate_input(self):
        self.assertIsNone(DC.fit_affine_relative([1.0], [1.0]))
        self.assertIsNone(DC.fit_affine_relative([1.0, 1.0], [1.0, 2.0]))
        self.assertIsNone(DC.fit_affine_relative([1.0, 2.0], [1.0, 0.0]))
        self.assertIsNone(DC.fit_all_reduce([{"bytes": 1, "time_s": 1}, {"bytes": 2, "time_s": 2}], 1))

    def test_interp_time(self):
        pts = [{"bytes": 1000, "time_s": 1e-5}, {"bytes": 100000, "time_s": 1e-3}]
        self.assertAlmostEqual(DH.interp_time(pts, 1000), 1e-5)
        self.assertAlmostEqual(DH.interp_time(pts, 10000), 1e-4)          # log-log midpoint
        self.assertAlmostEqual(DH.interp_time(pts, 10), 1e-5)             # below: the smallest
        self.assertAlmostEqual(DH.interp_time(pts, 200000), 1e-3 + 0.99e-3 / 99000 * 100000)
        self.assertIsNone(DH.interp_time([], 10))

    def test_dedupe_sizes(self):
        self.assertEqual(DH.dedupe_sizes([100, 100, 1000, 1001, 5000]), [100, 1000, 5000])
        many = DH.dedupe_sizes(range(1000, 200000, 1000), max_n=10)
        self.assertEqual(len(many), 10)
        self.assertEqual((many[0], many[-1]), (1000, 199000))


# ---------------------------------------------------------------------------- profiler summary, budget
class TestHarnessPure(unittest.TestCase):
    def test_kernel_overlap(self):
        ks = [("gemm_a", 0.0, 4.0), ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 3.0, 6.0),
              ("elementwise", 5.0, 5.5), ("Memcpy HtoD (Pinned -> Device)", 6.0, 7.0),
              ("ncclKernel_AllReduce", 8.0, 9.0), ("Activity Buffer Request", 0.0, 20.0)]
        s = DH.kernel_overlap_summary(ks, 2)
        self.assertAlmostEqual(s["nccl_s_per_step"], 4.0 / 2)              # [3,6] + [8,9]
        self.assertAlmostEqual(s["nccl_not_overlapped_s_per_step"], (4.0 - 1.0 - 0.5) / 2)
        self.assertAlmostEqual(s["compute_s_per_step"], 4.5 / 2)
        self.assertAlmostEqual(s["copy_s_per_step"], 0.5)
        self.assertAlmostEqual(s["gpu_busy_s_per_step"], 8.0 / 2)          # [0,7] + [8,9]
        self.assertAlmostEqual(s["span_s_per_step"], 4.5)
        self.assertEqual(s["kernels_per_step"]["nccl"], 1.0)

    def test_merge_and_intersection(self):
        m = DH.merge_intervals([(0, 1), (0.5, 2), (3, 4), (5, 5)])
        self.assertEqual(m, [(0.0, 2.0), (3.0, 4.0)])
        self.assertAlmostEqual(DH.intersection_length(m, DH.merge_intervals([(1, 3.5)])), 1.5)

    def test_budget(self):
        self.assertEqual(DH.allowance_for(100.0, 10), 8.5)
        self.assertEqual(DH.allowance_for(1.0, 10), 4.0)
        self.assertEqual(DH.allowance_for(1e4, 2), 40.0)
        self.assertEqual(DH.measured_steps(10.0, 0.01, 25, 400), 400)
        self.assertEqual(DH.measured_steps(1.0, 0.01, 25, 400), 100)
        self.assertEqual(DH.measured_steps(-1.0, 0.01, 25, 400), 25)
        self.assertEqual(DH.measured_steps(1.0, 0.0, 25, 400), 25)

    def test_case_list(self):
        cases = DH.build_cases()
        ids = [c["id"] for c in cases]
        self.assertEqual(len(ids), len(set(ids)))
        for m in ("linear", "resnet50"):
            for d in ("synthetic", "loader"):
                caps = sorted(c["bucket_cap_mb"] for c in cases if c["model"] == m and c["data"] == d
                              and c["mode"] == "ddp" and not c["gradient_as_bucket_view"] and not c["repeat"])
                self.assertEqual(caps, [1.0, 5.0, 25.0, 100.0])
                modes = {c["mode"] for c in cases if c["model"] == m and c["data"] == d}
                self.assertEqual(modes, {"no_ddp", "no_sync", "ddp"} | ({"fsdp"} if (m, d) == ("linear", "synthetic")
                                                                        else set()))
        fsdp = [(c["fsdp_prefetch"], c["fsdp_reshard"]) for c in cases if c["mode"] == "fsdp"]
        self.assertEqual(fsdp, list(DH.FSDP_VARIANTS))
        self.assertIn("-fsdp-none-full", " ".join(ids))
        self.assertFalse(any(c["mode"] == "fsdp" for c in DH.build_cases(fsdp=False)))
        self.assertTrue(ids[0].startswith("00-linear-synthetic"))

    def test_derive_exposed(self):
        cases = DH.build_cases(["linear"], [25.0], ["synthetic"], repeats=False, bucket_view=False)
        for c, t in zip(cases, (0.010, 0.0105, 0.012)):       # no_ddp, no_sync, ddp
            c["status"] = "ok"
            c["measured"] = {"step_time_s": {"mean": t}}
        DH.derive_exposed(cases)
        d = cases[2]["derived"]
        self.assertAlmostEqual(d["exposed_comm_vs_no_sync_s"], 0.0015)
        self.assertAlmostEqual(d["exposed_comm_vs_no_sync_fraction"], 0.0015 / 0.012)
        self.assertAlmostEqual(d["exposed_comm_vs_no_ddp_s"], 0.002)
        self.assertNotIn("derived", cases[0])


# ---------------------------------------------------------------------------- the harness's command line
class TestHarnessCli(unittest.TestCase):
    def run_h(self, *args):
        env = dict(os.environ)
        env.pop("WORLD_SIZE", None)
        return subprocess.run([sys.executable, os.path.join(HERE, "ddp_harness.py"), *args],
                              capture_output=True, text=True, timeout=60, env=env)

    def test_list_without_torch(self):
        p = self.run_h("--list")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.strip().splitlines()
        self.assertTrue(lines[-1].endswith("cases"))
        self.assertEqual(int(lines[-1].split()[0]), len(lines) - 1)
        self.assertIn("02-linear-synthetic-ddp-cap1", lines)

    def test_dry_run_and_quick(self):
        p = self.run_h("--dry-run", "--quick", "--models", "linear")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("linear cap 25 MiB", p.stdout)
        self.assertNotIn("resnet50", p.stdout.split("bucket_cap_mb")[1])

    def test_bad_options(self):
        for args in (["--list", "--models", "gpt"], ["--list", "--caps", "0"], ["--list", "--data", "x"],
                     ["--budget-s", "10"]):                    # the last: no --out
            p = self.run_h(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))

    def test_no_gpu_here(self):
        # with torch absent: exit 1 saying so; with torch but < 2 GPUs: exit 3 (not checkable here)
        p = self.run_h("--out", os.path.join(tempfile.gettempdir(), "ddp-none.json"))
        self.assertIn(p.returncode, (1, 3), p.stderr)
        self.assertTrue("torch" in p.stderr or "GPU" in p.stderr)


# ---------------------------------------------------------------------------- scenarios
class TestScenario(unittest.TestCase):
    def setUp(self):
        self.doc = fake_doc(ws=4)
        self.keys = scenario_keys()
        self.assertIn("ddp.bucket_cap_mb", self.keys)

    def test_only_documented_keys(self):
        for c in self.doc["cases"]:
            for b in ("knob", "built"):
                s = DC.scenario_for(c, self.doc, buckets=b)
                for p in leaf_paths(s):
                    self.assertIn(p, self.keys, f"{c['id']}: {p} is not in docs/scenario.md")

    def test_the_loop_needs_the_memory_map_when_every_rank_measured_it_so(self):
        lc = next(c for c in self.doc["cases"] if c["model"] == "resnet50" and c["data"] == "loader")
        self.assertNotIn("host_needs_memory_map", DC.scenario_for(lc, self.doc)["training"])   # not measured
        # both ranks 1.5x slower beside touching workers' batches than beside a private copy, well over the
        # receive's CPU a batch (convert.loop_needs_memory_map's rule, single-GPU run 17's readings)
        exposed = {"touch_host_s": {"mean": 0.036}, "private_copy_host_s": {"mean": 0.024},
                   "receive_thread_cpu_s_per_batch": 0.004}
        calm = dict(exposed, touch_host_s={"mean": 0.025})
        self.doc["components"]["loop_beside_pin_parts"] = {"resnet50": {"ranks": [exposed, exposed]}}
        s = DC.scenario_for(lc, self.doc)
        self.assertIs(s["training"]["host_needs_memory_map"], True)
        self.assertNotIn("memory_map_needs_per_step", s["training"])    # faults not counted: the default interval
        for p in leaf_paths(s):
            self.assertIn(p, self.keys)
        # faults counted beside touch on each rank (run 18's single-GPU readings: 56 and 50 a step) decide through
        # convert's fault rule, but set no interval: copy-on-write after the fork (single-GPU run 30, finding 1)
        self.doc["components"]["loop_beside_pin_parts"] = {"resnet50": {"ranks": [
            dict(calm, touch_loop_minor_faults_per_step=56.0, private_copy_loop_minor_faults_per_step=1.0),
            dict(calm, touch_loop_minor_faults_per_step=50.0, private_copy_loop_minor_faults_per_step=1.0)]}}
        s = DC.scenario_for(lc, self.doc)
        self.assertIs(s["training"]["host_needs_memory_map"], True)
        self.assertNotIn("memory_map_needs_per_step", s["training"])
        for p in leaf_paths(s):
            self.assertIn(p, self.keys)
        self.doc["components"]["loop_beside_pin_parts"] = {"resnet50": {"ranks": [exposed, calm]}}   # not every rank
        self.assertNotIn("host_needs_memory_map", DC.scenario_for(lc, self.doc)["training"])
        self.doc["components"]["loop_beside_pin_parts"] = {"resnet50": {"error": "RuntimeError: x"}}
        self.assertIsNone(DC.loop_needs_memory_map(self.doc["components"], "resnet50"))

    def test_the_loops_host_time_from_the_slowest_ranks_alone_windows(self):
        c = next(c for c in self.doc["cases"] if c["model"] == "resnet50")
        isolated = DC.scenario_for(c, self.doc)["training"]["host_s_per_step"]
        # no windows: the component's isolated host time, whichever --host-from
        self.assertEqual(DC.scenario_for(c, self.doc, host_from="alone-windows")["training"]["host_s_per_step"],
                         isolated)
        # run 22's readings: rank 0 alone 21.59 / again 23.55 ms, rank 1 19.76 / 18.83: rank 0's mean, 22.57 ms
        self.doc["components"]["loop_beside_pin_parts"] = {"resnet50": {"ranks": [
            {"alone_host_s": {"mean": 0.02159}, "alone_again_host_s": {"mean": 0.02355}},
            {"alone_host_s": {"mean": 0.01976}, "alone_again_host_s": {"mean": 0.01883}}]}}
        self.assertAlmostEqual(DC.loop_alone_host_s(self.doc["components"], "resnet50"), 0.02257)
        self.assertAlmostEqual(
            DC.scenario_for(c, self.doc, host_from="alone-windows")["training"]["host_s_per_step"], 0.02257)
        self.assertEqual(DC.scenario_for(c, self.doc, host_from="isolated")["training"]["host_s_per_step"], isolated)
        self.assertIsNone(DC.loop_alone_host_s(self.doc["components"], "linear"))   # not measured for it

    def test_values(self):
        by = {c["id"]: c for c in self.doc["cases"]}
        c = next(c for c in self.doc["cases"] if c["mode"] == "ddp" and c["model"] == "linear"
                 and c["data"] == "synthetic" and c["bucket_cap_mb"] == 5.0)
        s = DC.scenario_for(c, self.doc)
        mc = self.doc["components"]["models"]["linear"]
        self.assertEqual(s["node"]["gpus"], 4)
        self.assertEqual(s["node"]["cpu_cores"], 64)
        order = [g["bytes"] for g in mc["grad_ready"]["order"]]
        self.assertEqual(s["ddp"], {"gradient_bytes": mc["gradient_bytes"], "bucket_cap_mb": 5.0,
                                    "parameter_bytes": order})   # buckets by PyTorch's rule in pipeplan
        self.assertEqual(sum(order), mc["gradient_bytes"])
        self.assertAlmostEqual(s["training"]["forward_s"], 0.0015 * 1.05)          # sustained (host ahead)
        self.assertAlmostEqual(s["training"]["backward_s"], 0.0030 * 1.05 + 0.0004)  # + optimizer
        self.assertEqual(s["loader"]["num_workers"], 0)                            # never the bottleneck
        self.assertLess(s["dataset"]["load_s_per_sample"]["mean"] * 64, 1e-4)
        self.assertNotIn("step_s", s["training"])
        # the measured window is covered by one epoch
        self.assertGreaterEqual(s["dataset"]["num_samples"], s["training"]["steps"] * 64 * 4)
        # loader case: the measured per-sample costs inside one worker
        lc = next(c for c in self.doc["cases"] if c["mode"] == "ddp" and c["model"] == "resnet50"
                  and c["data"] == "loader")
        s = DC.scenario_for(lc, self.doc)
        self.assertEqual(s["loader"]["num_workers"], 12)
        self.assertEqual(s["loader"]["prefetch_factor"], 2)
        self.assertTrue(s["loader"]["pin_memory"])
        self.assertAlmostEqual(s["dataset"]["load_s_per_sample"]["mean"], 0.0042)
        self.assertAlmostEqual(s["loader"]["collate_s_per_batch"], 0.027)
        self.assertEqual(s["dataset"]["item_bytes"], 38535168 // 64)
        # no_sync and no-DDP cases: no communication
        ns = next(c for c in self.doc["cases"] if c["mode"] == "no_sync")
        self.assertEqual(DC.scenario_for(ns, self.doc)["ddp"], {"gradient_bytes": 0})
        self.assertIn(c["id"], by)

    def test_ddp_host_costs_from_the_component(self):
        doc = json.loads(json.dumps(self.doc))
        doc["components"]["ddp_host"] = {"fit": {"s_per_step": 1e-3, "s_per_bucket": 2e-4,
                                                 "s_per_parameter": -1e-6, "rmse_s": 0.0, "n_points": 4}}
        c = next(c for c in doc["cases"] if c["mode"] == "ddp" and c["model"] == "linear" and c["bucket_cap_mb"] == 5.0)
        s = DC.scenario_for(c, doc)
        self.assertEqual(s["ddp"]["host_s_per_bucket"], 2e-4)
        self.assertEqual(s["ddp"]["host_s_per_parameter"], 0.0)        # negative noise counts as 0
        self.assertEqual(s["ddp"]["host_s_per_step"], 1e-3)
        # as built (no parameter list): the per-tensor cost is folded into the per-step one
        doc["components"]["ddp_host"]["fit"]["s_per_parameter"] = 1e-5
        tensors = doc["components"]["models"]["linear"]["parameter_tensors"]
        s = DC.scenario_for(c, doc, buckets="built")
        self.assertNotIn("host_s_per_parameter", s["ddp"])
        self.assertAlmostEqual(s["ddp"]["host_s_per_step"], 1e-3 + 1e-5 * tensors)
        ns = next(c for c in doc["cases"] if c["mode"] == "no_sync")   # no DDP reduce: no reducer cost
        self.assertEqual(DC.scenario_for(ns, doc)["ddp"], {"gradient_bytes": 0})

    def test_built_buckets(self):
        c = next(c for c in self.doc["cases"] if c["mode"] == "ddp" and c["model"] == "linear"
                 and c["bucket_cap_mb"] == 1.0)
        s = DC.scenario_for(c, self.doc, buckets="built")
        sizes = c["measured"]["ddp"]["bucket_sizes"]
        self.assertAlmostEqual(s["ddp"]["first_bucket_mb"], sizes[0] / MIB)
        self.assertAlmostEqual(s["ddp"]["bucket_cap_mb"], sum(sizes[1:]) / len(sizes[1:]) / MIB)

    def test_profiles(self):
        base = load_json(os.path.join(ROOT, "scenarios", "profiles", "h200.json"))
        ov = {"schema": "pipeplan-profile/1", "provenance": {"date": "d", "hostname": "h", "gpu_count": 2},
              "compute": {"gemm_kept_with_nccl": 0.9},
              "nccl": {"measured": True, "gpus": 2, "all_reduce": {"latency_s": 1e-5, "bus_bytes_per_s": 3e11}}}
        m = DC.merge_profile(base, ov)
        self.assertEqual(m["nccl"]["all_reduce"]["bus_bytes_per_s"], 3e11)
        self.assertEqual(m["compute"]["gemm_kept_with_nccl"], 0.9)
        self.assertEqual(m["compute"]["bf16_gemm_flops_per_s"], base["compute"]["bf16_gemm_flops_per_s"])
        self.assertEqual(m["cpu"], base["cpu"])
        unmeasured = dict(ov, nccl={"measured": False, "gpus": 1, "reason": "one GPU visible"})
        self.assertEqual(DC.merge_profile(base, unmeasured)["nccl"], base["nccl"])
        pts = self.doc["components"]["allreduce"]["points"]
        fit = DC.fit_all_reduce(pts, 4)
        p = DC.profile_with_fit(base, fit, pts, 4, "note")
        self.assertEqual(p["nccl"]["gpus"], 4)
        self.assertEqual(set(p["nccl"]["all_reduce"]["points"][0]),
                         {"bytes", "time_s", "algbw_bytes_per_s", "busbw_bytes_per_s"})

    def test_evaluate_and_markdown(self):
        doc = self.doc
        preds = {}
        for c in doc["cases"]:
            t = c["measured"]["step_time_s"]["mean"]
            r = {"step_time_s": {"mean": t * 1.1, "p90": t * 1.2}, "gpu": {"exposed_comm_fraction": 0.05},
                 "bottleneck": {"stage": "gpu_compute"}, "stages": [{"name": "comm", "busy_fraction": 0.1}]}
            preds[c["id"]] = {"main": {"result": r}, "nocomm": {"result": {"step_time_s": {"mean": t}}}}
        ev = DC.evaluate(doc["cases"], preds)
        s = ev["summary"]
        self.assertAlmostEqual(s["median_abs_step_err_ddp"], 0.1)
        self.assertEqual(set(ev["families"]), {"linear/synthetic", "linear/loader", "resnet50/synthetic",
                                               "resnet50/loader"})
        # prediction = 1.1 x measured keeps the order: tau +1 where the measured steps differ
        self.assertAlmostEqual(ev["families"]["linear/synthetic"]["tau"], 1.0)
        self.assertEqual(len(ev["noise"]), 2)
        md = DC.render_markdown(ev, {"generated": "now", "cases_path": "x.json", "command": "cmd", "world_size": 4})
        self.assertIn("| `02-linear-synthetic-ddp-cap1` |", md)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.md")
            with open(p, "w") as f:
                f.write(f"# T\n\nkeep\n\n{DC.BEGIN}\nold\n{DC.END}\n\nafter\n")
            DC.update_markdown(p, md)
            with open(p) as f:
                text = f.read()
            self.assertNotIn("old", text)
            self.assertIn("keep", text)
            self.assertIn("after", text)
            self.assertIn("DDP results", text)

    def test_convert_no_simulate(self):
        with tempfile.TemporaryDirectory() as d:
            cp = os.path.join(d, "ddp_cases.json")
            dump_json(self.doc, cp)
            rc = DC.main(["--cases", cp, "--no-simulate", "--out-dir", os.path.join(d, "r"),
                          "--md", os.path.join(d, "x.md")])
            self.assertEqual(rc, 0)
            self.assertTrue(os.path.exists(os.path.join(d, "r", "report.json")))
            self.assertTrue(os.path.exists(os.path.join(d, "r", "profile-fit.json")))
            n = len(os.listdir(os.path.join(d, "r", "scenarios")))
            self.assertGreaterEqual(n, len(self.doc["cases"]))
            bad = dict(self.doc, schema="other")
            dump_json(bad, cp)
            self.assertEqual(DC.main(["--cases", cp, "--no-simulate", "--out-dir", os.path.join(d, "r")]), 2)

    @unittest.skipUnless(os.access(PIPEPLAN, os.X_OK), "build/cli/pipeplan not built")
    def test_fsdp_scenarios(self):
        doc = fake_doc(ws=2, caps=(25.0,))
        for c in (c for c in doc["cases"] if c["mode"] == "fsdp"):
            s = DC.scenario_for(c, doc)
            self.assertEqual(s["fsdp"]["unit_parameter_bytes"], [4 * MIB + 4096] * 95)
            self.assertEqual((s["fsdp"]["backward_prefetch"], s["fsdp"]["reshard_after_forward"]),
                             (c["fsdp_prefetch"], c["fsdp_reshard"]))
            self.assertEqual(s["ddp"], {"gradient_bytes": 0})
        self.assertNotIn("fsdp", DC.scenario_for(doc["cases"][0], doc))   # no_ddp
        # FSDP's exposed comm is counted against the model alone (no_ddp), DDP's against no_sync
        fs = next(c for c in doc["cases"] if c["mode"] == "fsdp")
        fs["derived"] = {"exposed_comm_vs_no_ddp_fraction": 0.3, "exposed_comm_vs_no_sync_fraction": 0.2}
        self.assertEqual(DC.measured_exposed(fs), 0.3)

    @unittest.skipUnless(os.access(PIPEPLAN, os.X_OK), "build/cli/pipeplan not built")
    def test_pipeplan_ranks_the_fsdp_settings(self):
        # on a slow placeholder-free link (1 GB/s of bus) the collectives outlast the compute: without prefetch the
        # step is longest, SHARD_GRAD_OP (a third fewer collectives) shortest
        doc = fake_doc(ws=2, caps=(25.0,))
        with tempfile.TemporaryDirectory() as d:
            base = load_json(os.path.join(ROOT, "scenarios", "profiles", "h200.json"))
            base["nccl"] = {"measured": True, "gpus": 2, "all_gather": {"latency_s": 2e-5, "bus_bytes_per_s": 1e9},
                            "reduce_scatter": {"latency_s": 2e-5, "bus_bytes_per_s": 1e9}}
            prof = os.path.join(d, "p.json")
            dump_json(base, prof)
            steps = {}
            for c in (c for c in doc["cases"] if c["mode"] == "fsdp"):
                c["measured"]["n_measured"] = 30
                sp = os.path.join(d, c["id"] + ".json")
                dump_json(DC.scenario_for(c, doc, min_steps=30), sp)
                r = DC.C.run_pipeplan(PIPEPLAN, sp, prof, 60)
                self.assertNotIn("error", r, r.get("error"))
                steps[(c["fsdp_prefetch"], c["fsdp_reshard"])] = r["result"]["step_time_s"]["mean"]
        self.assertGreater(steps[("none", True)], steps[("backward_pre", True)])
        self.assertLess(steps[("backward_pre", False)], steps[("backward_pre", True)])

    def test_pipeplan_accepts_the_scenarios(self):
        doc = fake_doc(ws=2, caps=(25.0,))
        pick = [c for c in doc["cases"] if c["mode"] == "ddp" and not c.get("repeat")
                and not c.get("gradient_as_bucket_view")][:2]
        pick[0]["measured"]["n_measured"] = 50
        with tempfile.TemporaryDirectory() as d:
            base = load_json(os.path.join(ROOT, "scenarios", "profiles", "h200.json"))
            pts = doc["components"]["allreduce"]["points"]
            prof = os.path.join(d, "p.json")
            dump_json(DC.profile_with_fit(base, DC.fit_all_reduce(pts, 2), pts, 2, "test"), prof)
            for c in pick:
                sp = os.path.join(d, c["id"] + ".json")
                dump_json(DC.scenario_for(c, doc, min_steps=60), sp)
                r = DC.C.run_pipeplan(PIPEPLAN, sp, prof, 120)
                self.assertNotIn("error", r, r.get("error"))
                self.assertGreater(r["result"]["step_time_s"]["mean"], 0)
                self.assertIn("exposed_comm_fraction", r["result"]["gpu"])



class PredictedExposedTest(unittest.TestCase):
    """The harness's exposed comm (DDP step less no_sync step) holds the wait for the other rank too: pipeplan's is
    the sum of its two shares; a report from before the split carries the whole wait in exposed_comm_fraction."""

    def test_sum_of_the_collectives_and_the_wait_for_ranks(self):
        r = {"gpu": {"exposed_comm_fraction": 0.05, "idle_waiting_for_ranks_fraction": 0.12}}
        self.assertAlmostEqual(DC.predicted_exposed(r), 0.17)

    def test_an_older_report_and_none(self):
        self.assertAlmostEqual(DC.predicted_exposed({"gpu": {"exposed_comm_fraction": 0.2}}), 0.2)
        self.assertIsNone(DC.predicted_exposed(None))
        self.assertIsNone(DC.predicted_exposed({"gpu": {}}))


class RankCpusTest(unittest.TestCase):
    def test_contiguous_blocks_cover_every_cpu_once(self):
        cpus = list(range(32))
        self.assertEqual(DH.rank_cpus(cpus, 2, 0), list(range(16)))
        self.assertEqual(DH.rank_cpus(cpus, 2, 1), list(range(16, 32)))
        # 10 CPUs over 3 ranks: 4, 3, 3, in order, nothing left out or shared
        blocks = [DH.rank_cpus(list(range(10)), 3, r) for r in range(3)]
        self.assertEqual([len(b) for b in blocks], [4, 3, 3])
        self.assertEqual(sum(blocks, []), list(range(10)))
        # an affinity mask with holes is split as given, sorted
        self.assertEqual(DH.rank_cpus([7, 3, 5, 1], 2, 1), [5, 7])

if __name__ == "__main__":
    unittest.main()
