"""nccl_tests_fit.py against nccl-tests' own output format (common.cu's header, rank lines and result rows), built
here from a known collective model, and the profile it writes read by pipeplan itself."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nccl_tests_fit as F  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PIPEPLAN = os.path.join(ROOT, "build", "cli", "pipeplan")


def fake_log(collective: str, hosts, gpus_per_host: int, latency_s: float, bus_bytes_per_s: float,
             sizes=None) -> str:
    """nccl-tests' output for a collective whose time is latency + size x factor / bus, printed as common.cu prints
    it (times to 2, 1 or 0 decimals by size, bandwidths to 2)."""
    ranks = len(hosts) * gpus_per_host
    factor = F.bus_factor(collective, ranks)
    lines = ["# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20",
             "#", "# Using devices"]
    r = 0
    for h in hosts:
        for d in range(gpus_per_host):
            lines.append(f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {h:>10s} device {d:2d} [0000:1b:00] NVIDIA H200")
            r += 1
    lines += ["#",
              "#                                                              out-of-place                       in-place",
              "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"]
    for size in sizes or [2 ** k for k in range(20, 33)]:
        t_us = (latency_s + size * factor / bus_bytes_per_s) * 1e6
        fmt = "%7.0f" if t_us >= 10000 else ("%7.1f" if t_us >= 100 else "%7.2f")
        algbw = size / (t_us * 1e-6) / 1e9
        busbw = algbw * factor
        row = f"{size:12d}  {size // 4:12d}     float     sum      -1  {fmt % t_us}  {algbw:6.2f}  {busbw:6.2f}      0"
        lines.append(row + f"  {fmt % t_us}  {algbw:6.2f}  {busbw:6.2f}      0")
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 40.1 ", "#",
              f"# Collective test concluded: {collective}_perf", ""]
    return "\n".join(lines)


class ParseAndFit(unittest.TestCase):
    def test_recovers_the_model_across_two_nodes(self):
        text = fake_log("all_reduce", ["node-a", "node-b"], 8, 30e-6, 40e9)
        parsed = F.parse_log(text)
        self.assertEqual(parsed["ranks"], 16)
        self.assertEqual(parsed["hosts"], ["node-a", "node-b"])
        self.assertEqual(len(parsed["points"]), 13)
        fit = F.fit_collective("all_reduce", 16, parsed["points"])
        self.assertAlmostEqual(fit["latency_s"], 30e-6, delta=1e-6)
        self.assertAlmostEqual(fit["bus_bytes_per_s"] / 40e9, 1.0, delta=0.005)
        self.assertLess(fit["rel_rmse"], 0.01)

    def test_an_older_release_without_group_or_root(self):
        # older nccl-tests print "#   Rank  0 Pid ..." and no root column; the header names the columns either way
        text = fake_log("all_reduce", ["h1", "h2"], 4, 25e-6, 30e9)
        text = text.replace(" Group  0", "").replace("    root", "").replace("      -1  ", "  ")
        parsed = F.parse_log(text)
        self.assertEqual((parsed["ranks"], parsed["hosts"]), (8, ["h1", "h2"]))
        fit = F.fit_collective("all_reduce", 8, parsed["points"])
        self.assertAlmostEqual(fit["bus_bytes_per_s"] / 30e9, 1.0, delta=0.005)
        self.assertAlmostEqual(fit["latency_s"], 25e-6, delta=1e-6)

    def test_bus_factors_as_nccl_tests(self):
        self.assertAlmostEqual(F.bus_factor("all_reduce", 16), 2 * 15 / 16)
        self.assertAlmostEqual(F.bus_factor("all_gather", 16), 15 / 16)
        self.assertAlmostEqual(F.bus_factor("reduce_scatter", 4), 3 / 4)
        self.assertEqual(F.bus_factor("all_reduce", 1), 0.0)

    def test_an_all_gather_log_by_its_closing_line(self):
        text = fake_log("all_gather", ["n1", "n2", "n3", "n4"], 2, 50e-6, 20e9)
        self.assertEqual(F.collective_of(text, "whatever.txt", None), "all_gather")
        fit = F.fit_collective("all_gather", 8, F.parse_log(text)["points"])
        self.assertAlmostEqual(fit["bus_bytes_per_s"] / 20e9, 1.0, delta=0.005)

    def test_the_section_across_nodes_and_on_one(self):
        across = [{**F.parse_log(fake_log(c, ["a", "b"], 4, 20e-6, 45e9)), "collective": c, "path": c + ".log"}
                  for c in ("all_reduce", "reduce_scatter")]
        sec = F.nccl_section(across)
        self.assertEqual(sec["inter_node"]["nodes"], 2)
        self.assertEqual(sec["inter_node"]["gpus"], 8)
        self.assertIn("reduce_scatter", sec["inter_node"])
        one = [{**F.parse_log(fake_log("all_reduce", ["a"], 8, 15e-6, 300e9)), "collective": "all_reduce", "path": "x"}]
        sec = F.nccl_section(one)
        self.assertTrue(sec["measured"])
        self.assertEqual(sec["gpus"], 8)

    def test_logs_of_two_layouts_are_refused(self):
        logs = [{**F.parse_log(fake_log("all_reduce", ["a", "b"], 4, 20e-6, 45e9)), "collective": "all_reduce", "path": "1"},
                {**F.parse_log(fake_log("all_gather", ["a", "b"], 8, 20e-6, 45e9)), "collective": "all_gather", "path": "2"}]
        with self.assertRaises(F.InputProblem):
            F.nccl_section(logs)

    def test_merged_keeps_the_other_part(self):
        base = {"schema": "pipeplan-profile/1", "nccl": {"measured": True, "gpus": 8,
                                                          "all_reduce": {"latency_s": 1e-5, "bus_bytes_per_s": 3e11}}}
        inter = {"inter_node": {"nodes": 2, "gpus": 16, "all_reduce": {"latency_s": 3e-5, "bus_bytes_per_s": 4e10}}}
        out = F.merged(base, inter)
        self.assertEqual(out["nccl"]["all_reduce"]["bus_bytes_per_s"], 3e11)
        self.assertEqual(out["nccl"]["inter_node"]["gpus"], 16)
        back = F.merged(out, {"measured": True, "gpus": 8, "all_reduce": {"latency_s": 2e-5, "bus_bytes_per_s": 2e11}})
        self.assertEqual(back["nccl"]["inter_node"]["gpus"], 16)
        self.assertEqual(back["nccl"]["all_reduce"]["bus_bytes_per_s"], 2e11)


class Cli(unittest.TestCase):
    def test_bad_logs_get_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            no_ranks = os.path.join(d, "all_reduce.log")
            with open(no_ranks, "w") as f:
                f.write("#  size count\n1048576 262144 float sum -1 10.0 1.0 1.0 0\n")
            unknown = os.path.join(d, "mystery.log")
            with open(unknown, "w") as f:
                f.write(fake_log("all_reduce", ["a", "b"], 2, 1e-5, 1e10).replace("Collective test concluded", "x"))
            for args in ([no_ranks], [unknown], [os.path.join(d, "missing.log")]):
                err = io.StringIO()
                with redirect_stderr(err):
                    rc = F.main(args + ["--out", os.path.join(d, "out.json")])
                self.assertEqual(rc, 2, args)
                self.assertEqual(len(err.getvalue().strip().splitlines()), 1, err.getvalue())
                self.assertFalse(os.path.exists(os.path.join(d, "out.json")))

    @unittest.skipUnless(os.path.exists(PIPEPLAN), "pipeplan not built")
    def test_pipeplan_times_a_two_node_all_reduce_from_the_fit(self):
        # 16 ranks on 2 nodes, 30 us + bytes x 2 x 15/16 / 40 GB/s: one 100 MB bucket after a 100 ms backward is
        # 30 us + 4.6875 ms exposed, so a 50 + 100 ms step lasts 154.7175 ms
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "all_reduce.log")
            with open(log, "w") as f:
                f.write(fake_log("all_reduce", ["node-a", "node-b"], 8, 30e-6, 40e9))
            prof = os.path.join(d, "cluster.json")
            base = os.path.join(ROOT, "tests", "data", "flat_profile.json")
            with redirect_stderr(io.StringIO()):
                self.assertEqual(F.main([log, "--merge-into", base, "--out", prof]), 0)
            scen = {"node": {"gpus": 8, "cpu_cores": 64}, "cluster": {"nodes": 2},
                    "dataset": {"num_samples": 10000000, "item_bytes": 1000, "load_s_per_sample": 1e-5},
                    "loader": {"batch_size": 32, "num_workers": 2, "collate_s_per_batch": 0.0, "pin_memory": True},
                    "transfer": {"non_blocking": True, "copy_stream": "side"},
                    "training": {"forward_s": 0.05, "backward_s": 0.1, "steps": 60},
                    "ddp": {"gradient_bytes": 1e8, "bucket_cap_mb": 1000, "first_bucket_mb": 1000}}
            sp = os.path.join(d, "s.json")
            with open(sp, "w") as f:
                json.dump(scen, f)
            r = subprocess.run([PIPEPLAN, "simulate", sp, "--profile", prof, "--format", "json"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            out = json.loads(r.stdout)
            self.assertAlmostEqual(out["step_time_s"]["mean"], 0.15 + 30e-6 + 1e8 * 2 * 15 / 16 / 40e9, delta=2e-4)
            self.assertEqual(out["throughput"]["nodes"], 2)
            self.assertAlmostEqual(out["throughput"]["job_samples_per_s"], 2 * out["throughput"]["samples_per_s"])


if __name__ == "__main__":
    unittest.main()
