#!/usr/bin/env python3
"""pipeplan DDP ground truth: real PyTorch DistributedDataParallel jobs, measured on a multi-GPU node.

Launched by torchrun, one process per GPU, NCCL:

    torchrun --standalone --nproc_per_node=N calibrate/validation/ddp_harness.py --out ddp_cases.json
    python3 calibrate/validation/ddp_harness.py --list            # the case list (no torch needed)
    python3 calibrate/validation/ddp_harness.py --dry-run         # the plan (no torch needed)

Models whose gradients span many buckets: torchvision ResNet-50 (25.6 M parameters, ~102 MB of
fp32 gradients) and a stack of nn.Linear(width, width) layers sized to a target gradient size
(default 400 MB). Per model, with synthetic data on the GPU (communication alone) and with a real
DataLoader per rank (DistributedSampler over data generated here with harness.py's code):
the model without DDP, DDP under no_sync() (no all-reduce), and DDP with bucket_cap_mb swept
(default 1, 5, 25, 100). Per case, in steady state: step time from CUDA events (mean, p50, p90),
throughput, the buckets DDP actually built, and a torch.profiler summary of a few steps on rank 0
(NCCL kernel time per step and the part not overlapped by compute kernels). Exposed communication
= the DDP case's step time minus the no_sync (and the no-DDP) case's.

Components, measured alone (what pipeplan's scenario and profile are made of): forward,
backward and optimizer GPU time per rank without DDP, every parameter's gradient bytes in the
order backward produces them (and when), and torch.distributed.all_reduce timed at a size sweep
and at every bucket size DDP builds (the collective model a profile gives).

Rank 0 writes one JSON (--out), rewritten after every case, so a kill keeps what finished.
Exit codes: 0 ok, 1 a failure (see the log), 2 bad options, 3 fewer than 2 GPUs / ranks.
Everything above "torch from here on" runs without torch (and is unit-tested in test_ddp.py).
See docs/ddp-validation.md.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import gc
import json
import math
import os
import platform
import socket
import subprocess
import sys
import threading
import time
import traceback
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pipeplan_probe import cpu_model, json_default, summarize  # noqa: E402  (torch-free)

SCHEMA = "pipeplan-ddp-cases/1"
MIB = 1 << 20
DEFAULT_FIRST_BUCKET_BYTES = MIB          # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
DEFAULT_CAPS = (1.0, 5.0, 25.0, 100.0)
MODELS = ("resnet50", "linear")
DATA_MODES = ("synthetic", "loader")
T_START = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T_START:7.1f}s] {msg}", flush=True)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ============================================================================ pure helpers
def bucket_assignment(sizes_bytes: Sequence[int], cap_bytes: float,
                      first_bucket_bytes: float = DEFAULT_FIRST_BUCKET_BYTES) -> List[List[int]]:
    """PyTorch's bucket rule (c10d reducer.cpp compute_bucket_assignment_by_size, as used by
    Reducer::rebuild_buckets after the first iteration) for dense tensors of one dtype and device.

    `sizes_bytes` are the gradients in the order backward produces them (reverse parameter order
    for a sequential model). Tensors are appended to the open bucket; the bucket closes as soon as
    its size reaches the current limit (>=). The first limit is first_bucket_bytes (1 MiB), every
    later one cap_bytes. A tensor larger than the limit that arrives at an empty bucket is a
    bucket of its own; one that arrives at a partly filled bucket closes that bucket with it.
    Returns the buckets as lists of indices into sizes_bytes, in reduction order."""
    if cap_bytes <= 0 or first_bucket_bytes <= 0:
        raise ValueError("bucket limits must be > 0")
    buckets: List[List[int]] = []
    cur: List[int] = []
    size = 0
    limit = first_bucket_bytes
    for i, b in enumerate(sizes_bytes):
        cur.append(i)
        size += int(b)
        if size >= limit:
            buckets.append(cur)
            cur, size = [], 0
            limit = cap_bytes
    if cur:
        buckets.append(cur)
    return buckets


def bucket_sizes(sizes_bytes: Sequence[int], cap_mb: float,
                 first_bucket_bytes: float = DEFAULT_FIRST_BUCKET_BYTES) -> List[int]:
    """Bytes per bucket, in reduction order (see bucket_assignment); cap in MiB as DDP takes it."""
    return [sum(int(sizes_bytes[i]) for i in b)
            for b in bucket_assignment(sizes_bytes, cap_mb * MIB, first_bucket_bytes)]


def fit_host_cost(points: Sequence[Dict[str, float]]) -> Optional[Dict[str, float]]:
    """Least squares of DDP's extra host time per step on the bucket and parameter-tensor counts:
    extra_s = s_per_step + s_per_bucket x buckets + s_per_parameter x parameters. Points need
    'extra_s', 'buckets', 'parameters'; None when they cannot determine the three (fewer than 3
    points, or buckets and parameters do not vary independently)."""
    rows = [(1.0, float(q["buckets"]), float(q["parameters"]), float(q["extra_s"])) for q in points
            if q.get("extra_s") is not None]
    if len(rows) < 3:
        return None
    # normal equations, 3 x 3, solved by Cramer's rule (no numpy here)
    A = [[sum(r[i] * r[j] for r in rows) for j in range(3)] for i in range(3)]
    b = [sum(r[i] * r[3] for r in rows) for i in range(3)]

    def det(m):
        return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
                + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))
    d = det(A)
    scale = max(abs(A[i][i]) for i in range(3)) ** 3
    if abs(d) <= 1e-12 * scale:
        return None
    sol = []
    for k in range(3):
        m = [[b[i] if j == k else A[i][j] for j in range(3)] for i in range(3)]
        sol.append(det(m) / d)
    res = [r[3] - (sol[0] + sol[1] * r[1] + sol[2] * r[2]) for r in rows]
    rmse = math.sqrt(sum(e * e for e in res) / len(res))
    return {"s_per_step": sol[0], "s_per_bucket": sol[1], "s_per_parameter": sol[2], "rmse_s": rmse,
            "n_points": len(rows)}


def linear_stack_layers(target_bytes: float, width: int, dtype_bytes: int = 4) -> int:
    """Number of nn.Linear(width, width) layers (weight + bias) whose gradients total about target_bytes."""
    per_layer = (width * width + width) * dtype_bytes
    return max(1, int(round(target_bytes / per_layer)))


def parse_int_list(s: Any) -> List[int]:
    """DDP logging data reports sizes as "1048576, 26214400, ..." (a string); accept lists too."""
    if s is None:
        return []
    if isinstance(s, (list, tuple)):
        return [int(x) for x in s]
    out = []
    for part in str(s).replace(";", ",").split(","):
        part = part.strip()
        if part and part.lstrip("-").isdigit():
            out.append(int(part))
    return out


def merge_intervals(intervals: Iterable[Tuple[float, float]]) -> List[Tuple[float, float]]:
    """Union of [start, end) intervals as sorted, disjoint intervals (empty ones dropped)."""
    iv = sorted((float(a), float(b)) for a, b in intervals if b > a)
    out: List[Tuple[float, float]] = []
    for a, b in iv:
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def total_length(merged: Sequence[Tuple[float, float]]) -> float:
    return sum(b - a for a, b in merged)


def intersection_length(a: Sequence[Tuple[float, float]], b: Sequence[Tuple[float, float]]) -> float:
    """Length of the intersection of two merged (sorted, disjoint) interval lists."""
    i = j = 0
    tot = 0.0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            tot += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tot


def kernel_class(name: str) -> str:
    """nccl (collective kernels), copy (memcpy / memset activities), other (the profiler's own
    bookkeeping, ignored), compute (every other kernel)."""
    n = name.lower()
    if "buffer request" in n or "overhead" in n:
        return "other"
    if "nccl" in n:
        return "nccl"
    if n.startswith("memcpy") or n.startswith("memset") or "memcpy " in n:
        return "copy"
    return "compute"


def kernel_overlap_summary(kernels: Sequence[Tuple[str, float, float]], steps: int) -> Dict[str, Any]:
    """Summary of GPU activities (name, start_s, end_s) recorded over `steps` training steps:
    per step, the busy time of NCCL kernels, of compute kernels, of copies, and the NCCL time
    not overlapped by any compute kernel (what the compute stream cannot hide)."""
    steps = max(1, int(steps))
    by: Dict[str, List[Tuple[float, float]]] = {"nccl": [], "compute": [], "copy": []}
    count: Dict[str, int] = {"nccl": 0, "compute": 0, "copy": 0}
    for name, a, b in kernels:
        c = kernel_class(name)
        if c == "other":
            continue
        by[c].append((a, b))
        count[c] += 1
    m = {k: merge_intervals(v) for k, v in by.items()}
    allm = merge_intervals([iv for v in by.values() for iv in v])
    nccl = total_length(m["nccl"])
    comp = total_length(m["compute"])
    ov = intersection_length(m["nccl"], m["compute"])
    span = (allm[-1][1] - allm[0][0]) if allm else 0.0
    return {
        "steps": steps,
        "nccl_s_per_step": nccl / steps,
        "nccl_not_overlapped_s_per_step": (nccl - ov) / steps,
        "nccl_overlapped_fraction": (ov / nccl) if nccl > 0 else None,
        "compute_s_per_step": comp / steps,
        "copy_s_per_step": total_length(m["copy"]) / steps,
        "gpu_busy_s_per_step": total_length(allm) / steps,
        "span_s_per_step": span / steps,
        "kernels_per_step": {k: v / steps for k, v in count.items()},
    }


def interp_time(points: Sequence[Dict[str, float]], nbytes: float) -> Optional[float]:
    """All-reduce time at nbytes from measured points {bytes, time_s}: log-log interpolation
    between the neighbours, linear-in-bytes extrapolation beyond the largest, the smallest's
    time below it."""
    pts = sorted((float(p["bytes"]), float(p["time_s"])) for p in points
                 if p.get("time_s") and p["time_s"] > 0 and p.get("bytes", 0) > 0)
    if not pts or nbytes <= 0:
        return None
    if nbytes <= pts[0][0]:
        return pts[0][1]
    if nbytes >= pts[-1][0]:
        if len(pts) >= 2:
            (b0, t0), (b1, t1) = pts[-2], pts[-1]
            slope = (t1 - t0) / (b1 - b0) if b1 > b0 else 0.0
            return t1 + max(slope, 0.0) * (nbytes - b1)
        return pts[-1][1] * nbytes / pts[-1][0]
    for (b0, t0), (b1, t1) in zip(pts, pts[1:]):
        if b0 <= nbytes <= b1:
            if b1 == b0:
                return t0
            f = (math.log(nbytes) - math.log(b0)) / (math.log(b1) - math.log(b0))
            return math.exp(math.log(t0) + f * (math.log(t1) - math.log(t0)))
    return pts[-1][1]


def dedupe_sizes(sizes: Iterable[float], rel_tol: float = 0.005, max_n: int = 64) -> List[int]:
    """Distinct sizes (within rel_tol), at most max_n of them, spread evenly in log size."""
    out: List[int] = []
    for s in sorted(int(x) for x in sizes if x > 0):
        if not out or s > out[-1] * (1 + rel_tol):
            out.append(s)
    if len(out) > max_n:
        idx = sorted({round(k * (len(out) - 1) / (max_n - 1)) for k in range(max_n)})
        out = [out[k] for k in idx]
    return out


def geometric_sizes(first: float, last: float, factor: float) -> List[int]:
    out, s = [], float(first)
    while s <= last * (1 + 1e-9):
        out.append(int(s))
        s *= factor
    return out


def allowance_for(remaining_s: float, cases_left: int, lo: float = 4.0, hi: float = 40.0) -> float:
    """Seconds for the next case: an even share of what is left (85%), within [lo, hi]."""
    if cases_left <= 0:
        return 0.0
    return min(max(remaining_s / cases_left * 0.85, lo), hi)


def measured_steps(window_s: float, pace_s: float, lo: int, hi: int) -> int:
    """Steps that fit in window_s at pace_s per step, within [lo, hi]."""
    if not pace_s or pace_s <= 0 or not math.isfinite(pace_s):
        return lo
    return int(min(max(int(window_s / pace_s), lo), hi))


# ============================================================================ the case list
def rank_cpus(cpus: Sequence[int], local_world_size: int, local_rank: int) -> List[int]:
    """--bind-cpus: this rank's share of the CPUs the job may use, a contiguous block of the sorted
    list (block local_rank of local_world_size; the first blocks take one more when it does not
    divide). Both DDP calls measured rank 0's launch-bound loop 20-50% slower than rank 1's
    (ResNet-50, no DDP: 35.4 vs 29.3 ms and 33.8 vs 22.2 ms) with both ranks free to run anywhere;
    a block of vCPUs per rank, its DataLoader workers inside it, says whether placement is why."""
    c = sorted(cpus)
    n = max(1, local_world_size)
    size, extra = divmod(len(c), n)
    start = local_rank * size + min(local_rank, extra)
    return c[start:start + size + (1 if local_rank < extra else 0)]


def case_id(i: int, c: Dict[str, Any]) -> str:
    s = f"{i:02d}-{c['model']}-{c['data']}-{c['mode']}"
    if c["mode"] == "fsdp":
        s += f"-{c['fsdp_prefetch']}-{'full' if c['fsdp_reshard'] else 'grad_op'}"
    if c["mode"] == "ddp":
        s += f"-cap{c['bucket_cap_mb']:g}"
        if c.get("gradient_as_bucket_view"):
            s += "-gbv"
    if c.get("repeat"):
        s += f"-r{c['repeat']}"
    return s


# FSDP's settings measured on the linear stack with synthetic data, each Linear a unit (pipeplan's fsdp section):
# (backward_prefetch, reshard_after_forward); FULL_SHARD with each prefetch, then SHARD_GRAD_OP
FSDP_VARIANTS = (("backward_pre", True), ("backward_post", True), ("none", True), ("backward_pre", False))


def build_cases(models: Sequence[str] = MODELS, caps: Sequence[float] = DEFAULT_CAPS,
                data_modes: Sequence[str] = DATA_MODES, repeats: bool = True,
                bucket_view: bool = True, fsdp: bool = True) -> List[Dict[str, Any]]:
    """Blocks ordered by what matters most if the budget runs out: synthetic data first (the
    communication model alone), the linear stack (communication visible) before ResNet-50, then
    the DataLoader cases, then repeats (noise of the ground truth). Each block: no DDP, DDP under
    no_sync(), then DDP at every bucket_cap_mb; the linear stack's synthetic block then FSDP at FSDP_VARIANTS
    (fsdp=True; its no-DDP case is their compute alone)."""
    order_models = [m for m in ("linear", "resnet50") if m in models]
    cases: List[Dict[str, Any]] = []

    def add(model, data, mode, cap=None, gbv=False, repeat=0, **extra):
        cases.append(dict({"id": None, "model": model, "data": data, "mode": mode,
                           "bucket_cap_mb": float(cap) if cap is not None else None,
                           "gradient_as_bucket_view": bool(gbv), "repeat": repeat,
                           "family": f"{model}/{data}", "status": "pending"}, **extra))

    for data in [d for d in ("synthetic", "loader") if d in data_modes]:
        for m in order_models:
            add(m, data, "no_ddp")
            add(m, data, "no_sync")
            for cap in caps:
                add(m, data, "ddp", cap)
            if bucket_view and data == "synthetic" and m == "linear":
                cap = 25.0 if 25.0 in caps else caps[len(caps) // 2]
                add(m, data, "ddp", cap, gbv=True)
            if fsdp and data == "synthetic" and m == "linear":
                for prefetch, reshard in FSDP_VARIANTS:
                    add(m, data, "fsdp", fsdp_prefetch=prefetch, fsdp_reshard=reshard)
    if repeats and order_models and "synthetic" in data_modes:
        m = order_models[0]
        cap = 25.0 if 25.0 in caps else caps[len(caps) // 2]
        add(m, "synthetic", "no_sync", repeat=1)
        add(m, "synthetic", "ddp", cap, repeat=1)
    for i, c in enumerate(cases):
        c["index"] = i
        c["id"] = case_id(i, c)
    return cases


def baseline_of(cases: Sequence[Dict[str, Any]], case: Dict[str, Any], mode: str) -> Optional[Dict[str, Any]]:
    """The measured case of `mode` (no_sync / no_ddp) with the same model and data, preferring the
    same repeat id."""
    cands = [c for c in cases if c.get("status") == "ok" and c["mode"] == mode
             and c["model"] == case["model"] and c["data"] == case["data"]]
    if not cands:
        return None
    same = [c for c in cands if c.get("repeat", 0) == case.get("repeat", 0)]
    return (same or cands)[0]


def derive_exposed(cases: Sequence[Dict[str, Any]]) -> None:
    """For every measured DDP case: exposed communication = its mean step time minus the mean step
    time of the no_sync (and of the no-DDP) case of the same model and data; as a fraction of the
    DDP step. Written into case["derived"]."""
    for c in cases:
        if c.get("status") != "ok" or c["mode"] not in ("ddp", "fsdp"):
            continue
        t = c["measured"]["step_time_s"]["mean"]
        d: Dict[str, Any] = {}
        for mode in ("no_sync", "no_ddp"):
            b = baseline_of(cases, c, mode)
            if b is None:
                continue
            tb = b["measured"]["step_time_s"]["mean"]
            d[f"exposed_comm_vs_{mode}_s"] = t - tb
            d[f"exposed_comm_vs_{mode}_fraction"] = (t - tb) / t if t > 0 else None
            d[f"baseline_{mode}"] = b["id"]
        c["derived"] = d


# ============================================================================ options
def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="results JSON, rewritten after every case (required to run)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="wall-clock budget of the whole run after start-up (default 420, quick 150)")
    ap.add_argument("--quick", action="store_true", help="smoke test: caps 1 and 25, shorter windows, no repeats")
    ap.add_argument("--models", default=",".join(MODELS), help="comma list of resnet50, linear")
    ap.add_argument("--caps", default=None, help="bucket_cap_mb values (default 1,5,25,100; quick 1,25)")
    ap.add_argument("--data", default=",".join(DATA_MODES), help="comma list of synthetic, loader")
    ap.add_argument("--no-repeats", action="store_true", help="no repeated cases at the end")
    ap.add_argument("--no-bucket-view", action="store_true", help="no gradient_as_bucket_view=True case")
    ap.add_argument("--no-fsdp", action="store_true", help="no FSDP cases (the linear stack, synthetic data)")
    ap.add_argument("--batch-size", type=int, default=64, help="samples per rank per step (ResNet-50 and the loaders)")
    ap.add_argument("--linear-mb", type=float, default=400.0, help="gradient MB (1e6 bytes) of the linear stack")
    ap.add_argument("--linear-width", type=int, default=1024, help="in = out features of each nn.Linear")
    ap.add_argument("--linear-rows", type=int, default=4096, help="rows of the linear stack's activation")
    ap.add_argument("--num-workers", type=int, default=None,
                    help="DataLoader workers per rank (default min(12, cores per rank - 3), at least 1)")
    ap.add_argument("--prefetch-factor", type=int, default=2)
    ap.add_argument("--sync-every", type=int, default=0,
                    help="loss.item() every k steps inside the loop (0 = never; the default)")
    ap.add_argument("--data-dir", default="/tmp/pipeplan-ddp-data")
    ap.add_argument("--n-images", type=int, default=2000, help="JPEGs generated for the loader cases")
    ap.add_argument("--n-tensors", type=int, default=600, help=".npy uint8 tensors generated for the loader cases")
    ap.add_argument("--no-profiler", action="store_true", help="no torch.profiler pass per case")
    ap.add_argument("--no-ddp-host", action="store_true", help="skip the DDP host-cost component (small-layer stacks)")
    ap.add_argument("--no-pin-parts", action="store_true",
                    help="skip the loop-beside-the-pin-thread's-parts component (loader cases; validation run 17)")
    ap.add_argument("--bind-cpus", action="store_true",
                    help="bind each rank (and its DataLoader workers) to its own contiguous block of the CPUs")
    ap.add_argument("--profile-steps", type=int, default=3, help="steps under torch.profiler per case (rank 0)")
    ap.add_argument("--trace-case", default="linear-synthetic-ddp-cap25",
                    help="export one small gzipped Chrome trace for the first case whose id contains this "
                         "('' = none)")
    ap.add_argument("--trace-out", default=None, help="trace file (default: beside --out, ddp_trace.json.gz)")
    ap.add_argument("--trace-max-mb", type=float, default=8.0, help="drop the trace if larger (compressed)")
    ap.add_argument("--allreduce-max-sizes", type=int, default=64, help="bucket sizes timed standalone at most")
    ap.add_argument("--nccl-timeout-s", type=float, default=180.0)
    ap.add_argument("--list", action="store_true", help="print the case ids and exit (no torch needed)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and exit (no torch needed)")
    a = ap.parse_args(argv)
    a.models_l = [m.strip() for m in a.models.split(",") if m.strip()]
    a.data_l = [d.strip() for d in a.data.split(",") if d.strip()]
    bad = [m for m in a.models_l if m not in MODELS]
    if bad or not a.models_l:
        ap.error(f"--models: unknown {bad or '(empty)'}; expected a comma list of {', '.join(MODELS)}")
    bad = [d for d in a.data_l if d not in DATA_MODES]
    if bad or not a.data_l:
        ap.error(f"--data: unknown {bad or '(empty)'}; expected a comma list of {', '.join(DATA_MODES)}")
    try:
        a.caps_l = ([float(x) for x in a.caps.split(",") if x.strip()] if a.caps
                    else ([1.0, 25.0] if a.quick else list(DEFAULT_CAPS)))
    except ValueError:
        ap.error(f"--caps: not a comma list of numbers: {a.caps!r}")
    if not a.caps_l or any(not (c > 0) for c in a.caps_l):
        ap.error("--caps: every bucket_cap_mb must be > 0")
    if a.budget_s is None:
        a.budget_s = 150.0 if a.quick else 420.0
    if a.budget_s <= 0:
        ap.error("--budget-s must be > 0")
    for name in ("batch_size", "linear_width", "linear_rows", "prefetch_factor", "n_images", "n_tensors",
                 "allreduce_max_sizes"):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if a.linear_mb <= 0:
        ap.error("--linear-mb must be > 0")
    if a.num_workers is not None and a.num_workers < 0:
        ap.error("--num-workers must be >= 0")
    if a.sync_every < 0 or a.profile_steps < 1:
        ap.error("--sync-every must be >= 0 and --profile-steps >= 1")
    if not (a.list or a.dry_run) and not a.out:
        ap.error("--out is required (or --list / --dry-run)")
    return a


def cases_for(a: argparse.Namespace) -> List[Dict[str, Any]]:
    return build_cases(a.models_l, a.caps_l, a.data_l, repeats=not (a.no_repeats or a.quick),
                       bucket_view=not a.no_bucket_view, fsdp=not a.no_fsdp)


def linear_describe(a: argparse.Namespace) -> Dict[str, Any]:
    n = linear_stack_layers(a.linear_mb * 1e6, a.linear_width)
    return {"layers": n, "width": a.linear_width, "rows": a.linear_rows,
            "gradient_bytes": n * (a.linear_width ** 2 + a.linear_width) * 4}


def print_plan(a: argparse.Namespace, cases: List[Dict[str, Any]]) -> None:
    ws = os.environ.get("WORLD_SIZE", "N (torchrun --nproc_per_node)")
    lin = linear_describe(a)
    print(f"ddp_harness plan: world size {ws}, budget {a.budget_s:.0f}s, {len(cases)} cases "
          f"(about {a.budget_s / max(1, len(cases)):.0f}s each before start-up costs)")
    print(f"  models: {', '.join(a.models_l)}; linear stack: {lin['layers']} x nn.Linear({a.linear_width}, "
          f"{a.linear_width}) on {a.linear_rows} rows, {lin['gradient_bytes']/1e6:.1f} MB of fp32 gradients")
    print(f"  bucket_cap_mb: {', '.join(f'{c:g}' for c in a.caps_l)} (first bucket 1 MiB)")
    print(f"  data: {', '.join(a.data_l)}; loader: batch {a.batch_size}/rank, workers/rank "
          f"{a.num_workers if a.num_workers is not None else 'auto'}, prefetch {a.prefetch_factor}, pin_memory, "
          f"non_blocking; ResNet-50 reads JPEGs, the linear stack uint8 3x224x224 .npy tensors")
    print(f"  sync_every {a.sync_every}; profiler {'off' if a.no_profiler else f'{a.profile_steps} steps per case on rank 0'};"
          f" trace: {a.trace_case or 'none'}")
    # the bucket sizes the linear stack gets (pure rule), as a sanity line
    sizes = [lin["width"] * 4, lin["width"] ** 2 * 4] * lin["layers"]     # backward order: bias, weight, ...
    for cap in (a.caps_l if "linear" in a.models_l else []):
        bs = bucket_sizes(sizes, cap)
        print(f"  linear cap {cap:g} MiB: {len(bs)} buckets (first {bs[0]/MIB:.2f} MiB, largest {max(bs)/MIB:.2f} MiB)")
    for c in cases:
        print(f"  {c['id']}")


# ============================================================================ torch from here on
class RepeatDataset:
    """A virtual dataset of `length` items over a real one (index mod n), so a DistributedSampler
    epoch outlasts the measured window without any file read twice in a row mattering (warm cache)."""

    def __init__(self, ds, length):
        self.ds, self.length = ds, int(length)

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        return self.ds[i % len(self.ds)]


def _to_dev(t, batch, dev):
    if isinstance(batch, t.Tensor):
        return batch.to(dev, non_blocking=True)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_dev(t, b, dev) for b in batch)
    return batch


class Runner:
    def __init__(self, a: argparse.Namespace, cases: List[Dict[str, Any]]):
        import torch
        import torch.distributed as dist
        self.t, self.dist, self.a, self.cases = torch, dist, a, cases
        self.rank = int(os.environ["RANK"])
        self.ws = int(os.environ["WORLD_SIZE"])
        self.lr = int(os.environ.get("LOCAL_RANK", self.rank))
        self.dev = torch.device("cuda", self.lr)
        self.t0 = time.perf_counter()
        self.datasets: Dict[str, Any] = {}
        self.trace_done = False
        try:
            cores = len(os.sched_getaffinity(0))
        except Exception:
            cores = os.cpu_count() or 1
        if a.bind_cpus:
            # this rank's affinity is its own block already (main): the machine's count for the scenario
            self.cores = os.cpu_count() or cores
            self.cores_per_rank = cores
        else:
            self.cores = cores
            self.cores_per_rank = max(1, cores // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", self.ws))))
        self.nw = a.num_workers if a.num_workers is not None else max(1, min(12, self.cores_per_rank - 3))
        self.doc = {"schema": SCHEMA, "started": now_iso(), "finished": None, "status": "running",
                    "mode": "quick" if a.quick else "full", "budget_s": a.budget_s,
                    "command": " ".join([sys.executable] + sys.argv), "world_size": self.ws,
                    "options": {k: v for k, v in vars(a).items() if not k.endswith("_l")},
                    "machine": None,
                    "loader": {"batch_size": a.batch_size, "num_workers": self.nw,
                               "prefetch_factor": a.prefetch_factor, "pin_memory": True,
                               "non_blocking": True, "persistent_workers": False, "drop_last": True,
                               "sampler": "DistributedSampler(shuffle=True, drop_last=True) over a virtual "
                                          "length (index mod n files)",
                               "kinds": {"resnet50": "image", "linear": "tensor_u8"}},
                    "sync_every": a.sync_every,
                    "components": {"models": {}, "allreduce": None, "datasets": {}},
                    "methods": METHODS, "cases": cases}

    # ------------------------------------------------------------------ plumbing
    def is0(self):
        return self.rank == 0

    def elapsed(self):
        return time.perf_counter() - self.t0

    def save(self):
        if not self.is0():
            return
        derive_exposed(self.cases)
        path = self.a.out
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.doc, f, indent=1, default=json_default)
        os.replace(tmp, path)

    def bcast(self, obj):
        box = [obj]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]

    def allmax(self, x: float) -> float:
        v = self.t.tensor([float(x)], device=self.dev, dtype=self.t.float64)
        self.dist.all_reduce(v, op=self.dist.ReduceOp.MAX)
        return float(v.item())

    def allmin(self, x: float) -> float:
        v = self.t.tensor([float(x)], device=self.dev, dtype=self.t.float64)
        self.dist.all_reduce(v, op=self.dist.ReduceOp.MIN)
        return float(v.item())

    def gather(self, obj):
        out = [None] * self.ws
        self.dist.all_gather_object(out, obj)
        return out

    def barrier(self):
        try:
            self.dist.barrier(device_ids=[self.lr])
        except TypeError:
            self.dist.barrier()

    def event(self):
        return self.t.cuda.Event(enable_timing=True)

    def watchdog(self, seconds: Optional[float], phase: str) -> None:
        """Arms (or, with None, disarms) a per-rank timer: a phase that hangs (a collective one rank
        never reaches, a blocked launch) dumps every thread's stack to stderr and exits the rank, so
        torchrun ends the job with the finished cases saved instead of burning the device call."""
        import faulthandler
        faulthandler.cancel_dump_traceback_later()
        self.phase = phase
        if seconds is not None:
            faulthandler.dump_traceback_later(max(10.0, float(seconds)), exit=True)

    def sync(self):
        self.t.cuda.synchronize(self.dev)

    # ------------------------------------------------------------------ machine
    def machine_info(self):
        t = self.t
        info = {"hostname": socket.gethostname(), "platform": platform.platform(),
                "python": platform.python_version(), "cpu_count": os.cpu_count(), "cpu_cores": self.cores,
                "cpu_cores_per_rank": self.cores_per_rank, "torch": t.__version__,
                "cuda_runtime": t.version.cuda, "gpu_count": t.cuda.device_count(),
                "gpu": t.cuda.get_device_name(self.lr)}
        try:
            v = t.cuda.nccl.version()
            info["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
        except Exception as e:
            info["nccl"] = f"unknown ({e.__class__.__name__})"
        for mod in ("torchvision", "numpy", "PIL"):
            try:
                info[mod] = __import__(mod).__version__
            except Exception:
                pass
        cpu_name = cpu_model()
        if cpu_name:
            info["cpu_model"] = cpu_name
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                  "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
            info["nvidia_smi"] = out.stdout.strip().splitlines()
            info["driver"] = info["nvidia_smi"][0].split(",")[1].strip() if info["nvidia_smi"] else None
        except Exception:
            info["driver"] = None
        info["env"] = {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                      "NVSHMEM_DISABLE_NVLS", "NCCL_ALGO", "NCCL_PROTO",
                                                      "CUDA_DEVICE_MAX_CONNECTIONS") if os.environ.get(k) is not None}
        return info

    # ------------------------------------------------------------------ models
    def make_model(self, name):
        t = self.t
        t.manual_seed(0)
        if name == "resnet50":
            import torchvision
            m = torchvision.models.resnet50(num_classes=1000).to(self.dev).to(memory_format=t.channels_last)
            t.backends.cudnn.benchmark = True
        else:
            lin = linear_describe(self.a)
            layers = []
            for _ in range(lin["layers"]):
                layers += [t.nn.Linear(self.a.linear_width, self.a.linear_width, device=self.dev), t.nn.ReLU()]
            m = t.nn.Sequential(*layers)
        m.train()
        return m

    def synthetic_batch(self, name):
        t = self.t
        g = t.Generator(device="cpu").manual_seed(1 + self.rank)
        if name == "resnet50":
            x = t.randn(self.a.batch_size, 3, 224, 224, generator=g).to(self.dev).contiguous(memory_format=t.channels_last)
            y = t.randint(0, 1000, (self.a.batch_size,), generator=g).to(self.dev)
            return (x, y)
        return (t.randn(self.a.linear_rows, self.a.linear_width, generator=g).to(self.dev), None)

    def forward_loss(self, name, model, gb, x0=None):
        """The loss of one step. The linear stack runs on its own activation x0 (rows x width); with
        a DataLoader batch it also reads the batch, so that it waits for the batch's copy."""
        t = self.t
        if name == "resnet50":
            x, y = gb[0], gb[1]
            x = x.contiguous(memory_format=t.channels_last)
            if x.dtype != t.float32:
                x = x.float()
            with t.autocast(device_type="cuda", dtype=t.bfloat16):
                out = model(x)
            return t.nn.functional.cross_entropy(out.float(), y)
        h = x0 if x0 is not None else gb[0]
        if x0 is not None and gb is not None and gb[0] is not None and gb[0] is not x0:
            h = x0 + gb[0].float().mean() * 0.0
        with t.autocast(device_type="cuda", dtype=t.bfloat16):
            out = model(h)
        return out.float().square().mean()

    # ------------------------------------------------------------------ components
    def comp_model(self, name):
        """Without DDP, synthetic data: forward, backward and optimizer GPU time (isolated: launches
        queued behind a spin kernel; sustained: back-to-back), the host time of a step, and every
        parameter's gradient bytes in the order backward produces them, with the time it is ready."""
        t = self.t
        a = self.a
        c0 = time.perf_counter()
        model = self.make_model(name)
        opt = t.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
        gb = self.synthetic_batch(name)
        x0 = gb[0] if name == "linear" else None
        names = {id(p): n for n, p in model.named_parameters()}
        params = list(model.parameters())

        def step(evs=None):
            if evs:
                evs[0].record()
            loss = self.forward_loss(name, model, gb, x0)
            if evs:
                evs[1].record()
            loss.backward()
            if evs:
                evs[2].record()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if evs:
                evs[3].record()
            return loss

        for _ in range(4):
            step()
        self.sync()
        # spin-kernel rate, to hold the stream while the host enqueues a whole step
        cyc_per_s = None
        if hasattr(t.cuda, "_sleep"):
            e0, e1 = self.event(), self.event()
            e0.record()
            t.cuda._sleep(20_000_000)
            e1.record()
            self.sync()
            ms = e0.elapsed_time(e1)
            cyc_per_s = 20_000_000 / (ms / 1e3) if ms > 0 else None
        fw, bw, op, host = [], [], [], []
        hold = 0.05
        hold_max_s = 1.0
        queue_full = False
        reps = 6 if a.quick else 12
        r = 0
        while r < reps + 1:
            self.sync()
            held = False
            if cyc_per_s and not queue_full:
                t.cuda._sleep(int(cyc_per_s * hold))
                held = True
            evs = [self.event() for _ in range(4)]
            h0 = time.perf_counter()
            step(evs)
            h1 = time.perf_counter()
            self.sync()
            if held and (h1 - h0) > 0.8 * hold:
                # The host did not finish enqueueing before the spin ended. A longer hold helps when
                # the host is merely slow; when the step has more launches than CUDA's launch queue
                # holds, the host blocks until the spin ends whatever its length (the hold would
                # grow without end): then measure without holding.
                if hold < hold_max_s:
                    hold = min(hold_max_s, 3 * (h1 - h0))
                else:
                    queue_full = True
                continue
            if r > 0:
                fw.append(evs[0].elapsed_time(evs[1]) / 1e3)
                bw.append(evs[1].elapsed_time(evs[2]) / 1e3)
                op.append(evs[2].elapsed_time(evs[3]) / 1e3)
                host.append(h1 - h0)
            r += 1
        # sustained: back-to-back steps, events between the parts, after ~0.3 s of load
        n_sus = 10 if a.quick else 20
        iso_step = sum(fw) / len(fw) + sum(bw) / len(bw) + sum(op) / len(op)
        for _ in range(max(3, int(0.3 / max(iso_step, 1e-3)))):
            step()
        evl = [[self.event() for _ in range(4)] for _ in range(n_sus)]
        for j in range(n_sus):
            step(evl[j])
        self.sync()
        sfw = [e[0].elapsed_time(e[1]) / 1e3 for e in evl]
        sbw = [e[1].elapsed_time(e[2]) / 1e3 for e in evl]
        sop = [e[2].elapsed_time(e[3]) / 1e3 for e in evl]
        siv = [evl[j - 1][3].elapsed_time(evl[j][3]) / 1e3 for j in range(1, n_sus)]
        # gradient ready order and times: post-accumulate-grad hooks record an event each
        order: List[Tuple[Any, Any]] = []
        handles = []

        def ready_hook(p_):          # post-accumulate-grad hooks must return None
            ev = self.event()
            ev.record()
            order.append((p_, ev))

        if hasattr(params[0], "register_post_accumulate_grad_hook"):
            for p in params:
                handles.append(p.register_post_accumulate_grad_hook(ready_hook))
        self.sync()
        if cyc_per_s and not queue_full:
            t.cuda._sleep(int(cyc_per_s * hold))
        e_start, e_bwd = self.event(), self.event()
        loss = self.forward_loss(name, model, gb, x0)
        e_start.record()
        loss.backward()
        e_bwd.record()
        self.sync()
        for h in handles:
            h.remove()
        grads = []
        if order:
            for p, ev in order:
                grads.append({"name": names.get(id(p)), "bytes": p.numel() * p.element_size(),
                              "ready_s": e_start.elapsed_time(ev) / 1e3})
            order_method = "register_post_accumulate_grad_hook: a CUDA event per parameter, one held-stream backward"
        else:
            for p in reversed(params):
                grads.append({"name": names.get(id(p)), "bytes": p.numel() * p.element_size(), "ready_s": None})
            order_method = "reverse parameter order (no post-accumulate-grad hooks in this torch)"
        backward_one_s = e_start.elapsed_time(e_bwd) / 1e3
        opt.zero_grad(set_to_none=True)
        total = sum(p.numel() * p.element_size() for p in params)
        sizes = [g["bytes"] for g in grads]
        S = lambda xs: summarize(xs)  # noqa: E731
        sus_interval = summarize(siv)
        h = summarize(host)
        res = {
            "describe": ({"kind": "torchvision resnet50", "autocast": "bf16", "memory_format": "channels_last",
                          "batch_per_rank": a.batch_size, "input": "3x224x224", "loss": "cross_entropy"}
                         if name == "resnet50" else
                         dict(linear_describe(a), kind="nn.Sequential(Linear(w, w), ReLU) x layers",
                              autocast="bf16", loss="mean(out^2)")),
            "optimizer": "SGD(lr=1e-4, momentum=0.9), zero_grad(set_to_none=True)",
            "parameters": sum(p.numel() for p in params), "parameter_tensors": len(params),
            "gradient_bytes": total,
            "isolated": {"forward_s": S(fw), "backward_s": S(bw), "optimizer_s": S(op), "host_s": h,
                         "hold_s": None if queue_full else hold,
                         "method": ("CUDA events between forward, backward and optimizer of one step, NOT held: the "
                                    "step has more launches than the launch queue holds (launch overhead included)"
                                    if queue_full else
                                    "CUDA events between forward, backward and optimizer of one step whose launches "
                                    "were queued behind a torch.cuda._sleep spin kernel (launch overhead excluded)")},
            "sustained": {"forward_s": S(sfw), "backward_s": S(sbw), "optimizer_s": S(sop),
                          "step_interval_s": sus_interval,
                          "method": f"{n_sus} back-to-back steps after ~0.3 s of load, CUDA events between parts"},
            "host_ahead": h["mean"] < 0.8 * sus_interval["mean"],
            "grad_ready": {"order": grads, "method": order_method, "backward_s": backward_one_s},
            "computed_buckets": {f"{cap:g}": bucket_sizes(sizes, cap) for cap in a.caps_l},
        }
        per_rank = self.gather({"forward_s": res["sustained"]["forward_s"]["mean"],
                                "backward_s": res["sustained"]["backward_s"]["mean"],
                                "optimizer_s": res["sustained"]["optimizer_s"]["mean"],
                                "step_interval_s": sus_interval["mean"]})
        res["sustained_per_rank"] = per_rank
        if self.is0():
            self.doc["components"]["models"][name] = res
            log(f"component {name}: {res['parameters']/1e6:.1f} M params, {total/1e6:.1f} MB grads; "
                f"isolated fwd {res['isolated']['forward_s']['mean']*1e3:.2f} bwd {res['isolated']['backward_s']['mean']*1e3:.2f} "
                f"opt {res['isolated']['optimizer_s']['mean']*1e3:.2f} ms, host {h['mean']*1e3:.2f} ms; sustained step "
                f"{sus_interval['mean']*1e3:.2f} ms; buckets "
                + ", ".join(f"cap {k}: {len(v)}" for k, v in res["computed_buckets"].items())
                + f" ({time.perf_counter()-c0:.1f}s)")
        model = opt = gb = loss = None      # free the GPU memory (the closure keeps the cells)
        gc.collect()
        t.cuda.empty_cache()
        return res

    def comp_allreduce(self, bucket_sets: List[List[int]]):
        """torch.distributed.all_reduce (fp32, sum, in place, as DDP reduces a bucket) at a size sweep
        and at the bucket sizes DDP builds: time per op over back-to-back iterations between CUDA
        events on the caller's stream, the slowest rank's."""
        t, dist, a = self.t, self.dist, self.a
        c0 = time.perf_counter()
        sweep = geometric_sizes(4096, 512 * MIB, 2.0 if not a.quick else 4.0)
        buckets = dedupe_sizes([s for bs in bucket_sets for s in bs], max_n=a.allreduce_max_sizes)
        sizes = sorted(set(sweep) | set(buckets))
        biggest = max(sizes)
        buf = t.empty(biggest // 4 + 1, dtype=t.float32, device=self.dev).normal_()
        for _ in range(3):
            dist.all_reduce(buf[: 1 << 20])
        self.sync()
        pts = []
        for nbytes in sizes:
            x = buf[: max(1, nbytes // 4)]
            for _ in range(2):
                dist.all_reduce(x)
            self.sync()
            e0, e1 = self.event(), self.event()
            e0.record()
            dist.all_reduce(x)
            e1.record()
            self.sync()
            est = max(e0.elapsed_time(e1) / 1e3, 1e-6)
            iters = int(min(max(0.02 / est, 5), 50 if not a.quick else 20))
            iters = int(self.allmax(iters))
            self.barrier()
            e0.record()
            for _ in range(iters):
                dist.all_reduce(x)
            e1.record()
            self.sync()
            mine = e0.elapsed_time(e1) / 1e3 / iters
            slow = self.allmax(mine)
            fast = self.allmin(mine)
            b = x.numel() * 4
            factor = 2.0 * (self.ws - 1) / self.ws
            pts.append({"bytes": b, "time_s": slow, "time_s_fastest_rank": fast, "iters": iters,
                        "algbw_bytes_per_s": b / slow, "busbw_bytes_per_s": b / slow * factor,
                        "bucket_size": nbytes in buckets})
        del buf
        t.cuda.empty_cache()
        res = {"points": pts, "world_size": self.ws, "dtype": "float32", "op": "sum", "in_place": True,
               "method": "dist.all_reduce on a slice of one buffer; 2 warm-up ops, then N back-to-back ops between "
                         "CUDA events on the current stream (~20 ms); time = the slowest rank's mean per op; "
                         "busbw = bytes/time x 2(n-1)/n (nccl-tests)"}
        if self.is0():
            self.doc["components"]["allreduce"] = res
            big = pts[-1]
            log(f"component allreduce: {len(pts)} sizes ({len(buckets)} bucket sizes) in "
                f"{time.perf_counter()-c0:.1f}s; {big['bytes']/MIB:.0f} MiB: {big['time_s']*1e3:.3f} ms, "
                f"busbw {big['busbw_bytes_per_s']/1e9:.1f} GB/s; 4 KiB: {pts[0]['time_s']*1e6:.1f} us")
        return res

    def comp_ddp_host(self):
        """DDP's host cost alone: stacks of small nn.Linear(64, 64) layers (GPU work negligible, so the
        step is the host's time), without DDP, under no_sync() and with DDP at caps that give from a
        few to one bucket per tensor; two stack depths separate the per-parameter from the
        per-bucket cost (fit_host_cost). The DDP cases showed up to 30 ms of extra host time per
        step that is not NCCL time; this measures it where nothing else can be the cause."""
        t, a = self.t, self.a
        from torch.nn.parallel import DistributedDataParallel as DDP
        c0 = time.perf_counter()
        width, rows = 64, 256
        pts = []
        window_s = 0.3 if a.quick else 0.6
        for layers in (24, 96):
            t.manual_seed(0)
            sizes = []
            for _ in range(layers):
                sizes += [width * width * 4, width * 4]
            grads_ready = list(reversed(sizes))             # backward order of a sequential stack
            x = t.randn(rows, width, device=self.dev)
            for mode, cap in (("no_ddp", None), ("no_sync", 25.0), ("ddp", 25.0), ("ddp", 0.05), ("ddp", 0.001)):
                mods = [t.nn.Linear(width, width, device=self.dev) for _ in range(layers)]
                module = t.nn.Sequential(*mods)
                model = module if mode == "no_ddp" else DDP(module, device_ids=[self.lr], bucket_cap_mb=cap)
                opt = t.optim.SGD(model.parameters(), lr=1e-4)

                def step():
                    ctx = model.no_sync() if mode == "no_sync" else contextlib.nullcontext()
                    with ctx:
                        model(x).square().mean().backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)

                for _ in range(10):
                    step()
                self.sync()
                # as many steps as fit the window on the slowest rank (both ranks run the same count)
                p0 = time.perf_counter()
                for _ in range(5):
                    step()
                self.sync()
                pace = self.allmax((time.perf_counter() - p0) / 5)
                n = int(self.bcast(max(20, min(400, int(window_s / max(pace, 1e-5)))) if self.is0() else None))
                self.barrier()
                w0 = time.perf_counter()
                for _ in range(n):
                    step()
                self.sync()
                per_step = self.allmax((time.perf_counter() - w0) / n)
                buckets = (len(bucket_sizes(grads_ready, cap)) if mode == "ddp" else 0)
                built = None
                if mode == "ddp":
                    try:
                        built = len(parse_int_list(model._get_ddp_logging_data().get("rebuilt_bucket_sizes")))
                    except Exception:
                        built = None
                q = {"layers": layers, "parameters": 2 * layers, "mode": mode, "bucket_cap_mb": cap,
                     "buckets": built or buckets, "buckets_computed": buckets, "steps": n, "step_s": per_step}
                pts.append(q)
                model = module = opt = mods = None
                gc.collect()
        # extra host time of DDP over the same stack without DDP (no_sync points are kept for reference)
        by_layers = {}
        for q in pts:
            by_layers.setdefault(q["layers"], {})[(q["mode"], q["bucket_cap_mb"])] = q
        for q in pts:
            ref = by_layers[q["layers"]].get(("no_ddp", None))
            q["extra_s"] = (q["step_s"] - ref["step_s"]) if (ref and q["mode"] != "no_ddp") else None
        fit = fit_host_cost([q for q in pts if q["mode"] == "ddp"])
        res = {"points": pts, "fit": fit, "width": width, "rows": rows,
               "method": "nn.Sequential of L nn.Linear(64, 64) (L = 24, 96), 256 x 64 input, SGD; per mode and cap "
                         "10 warm-up steps, then as many steps as fit ~0.6 s (the slowest rank's pace), wall time / "
                         "steps after a synchronize, the slowest rank's; extra_s = step - the same stack without "
                         "DDP; fit: extra_s = s_per_step + s_per_bucket x buckets + s_per_parameter x tensors "
                         "over the DDP points (no_sync excluded)"}
        if self.is0():
            self.doc["components"]["ddp_host"] = res
            msg = ", ".join(f"L{q['layers']} {q['mode']}{'' if q['bucket_cap_mb'] is None else ' cap %g' % q['bucket_cap_mb']}"
                            f" ({q['buckets']} b) {q['step_s']*1e3:.2f} ms" for q in pts)
            log(f"component ddp_host: {msg}" + (f"; fit {fit['s_per_step']*1e3:.2f} ms + {fit['s_per_bucket']*1e6:.1f} "
                                                  f"us/bucket + {fit['s_per_parameter']*1e6:.1f} us/tensor" if fit else "")
                + f" ({time.perf_counter()-c0:.1f}s)")
        return res

    # ------------------------------------------------------------------ data
    def make_data(self):
        import multiprocessing as mp
        import harness as H          # the single-GPU harness's generation and datasets (needs numpy)
        a = self.a
        root = a.data_dir
        info = None
        if self.is0():
            t0 = time.perf_counter()
            os.makedirs(root, exist_ok=True)
            with mp.get_context("fork").Pool(max(1, min(32, os.cpu_count() or 1))) as pool:
                ipaths, isizes = (H.gen_images(root, a.n_images, pool) if "resnet50" in a.models_l else ([], []))
                tpaths, tsizes = (H.gen_tensors(root, "tensor_u8", a.n_tensors, (3, 224, 224), "uint8", pool)
                                  if "linear" in a.models_l else ([], []))
            os.sync()
            info = {"image": (ipaths, isizes), "tensor_u8": (tpaths, tsizes)}
            log(f"data generated in {time.perf_counter()-t0:.1f}s: {len(ipaths)} JPEGs, {len(tpaths)} .npy")
        info = self.bcast(info)
        if info["image"][0]:
            self.datasets["image"] = H.ImageDataset(info["image"][0], crop=224)
        if info["tensor_u8"][0]:
            self.datasets["tensor_u8"] = H.NpyTensorDataset(info["tensor_u8"][0])
        for k, (paths, sizes) in info.items():
            if paths:
                s = summarize([float(x) for x in sizes])
                self.doc["components"]["datasets"][k] = {
                    "n": len(paths), "sample_bytes": {"mean": s["mean"], "cv": s["cv"]},
                    "what": ("JPEG q90 ~500x375, RandomResizedCrop(224)+flip+ToTensor+Normalize (harness.ImageDataset)"
                             if k == "image" else "np.load of uint8 3x224x224 .npy (harness.NpyTensorDataset)")}
        self.barrier()

    def comp_loader(self, kind):
        """__getitem__ of one sample in this process (torch 1 thread, random indices), collate of a
        batch, and __getitem__ + collate inside ONE DataLoader worker: the per-sample costs of the
        scenario (the same code as harness.py / pipeplan_probe.py). Rank 0 only; others wait."""
        comps = self.doc["components"].setdefault("loader", {})
        if kind in comps or not self.is0():
            return
        import harness as H
        from pipeplan_probe import time_collate, time_getitem
        from torch.utils.data import DataLoader
        t0 = time.perf_counter()
        ds = self.datasets[kind]
        n = 200 if self.a.quick else 300
        summ, kept, ib = time_getitem(ds, n_samples=n, keep=128, seed=11, max_seconds=6.0)
        ct, bb = time_collate(kept, self.a.batch_size, collate_fn=None, n_batches=20, seed=5, max_seconds=4.0)
        insitu = H.InSitu()
        bs = self.a.batch_size
        sampler = H.IndexSampler(len(ds), 13 * bs, seed=23)
        dl = DataLoader(H.InstrumentedDataset(ds, insitu), batch_size=bs, sampler=sampler, num_workers=1,
                        prefetch_factor=2, collate_fn=H.InstrumentedCollate(None, insitu))
        it = iter(dl)
        next(it)
        s0 = insitu.snapshot()
        k = 0
        for _ in it:
            k += 1
            if k >= 3 and time.perf_counter() - t0 > 12.0:
                break
        s1 = insitu.snapshot()
        del it, dl
        iw = H.InSitu.diff(s0, s1)
        comps[kind] = {"load": summ, "collate": {"s_per_batch": ct, "batch_bytes": bb},
                       "item_bytes": (sum(ib) / len(ib)) if ib else None, "in_worker": iw,
                       "method": "harness.py components: single-process __getitem__ (torch 1 thread), collate in "
                                 "the main process, and both inside one DataLoader worker (first batch left out)"}
        log(f"component loader[{kind}]: getitem {summ['mean']*1e3:.3f} ms (in worker "
            f"{(iw.get('getitem_wall_s') or 0)*1e3:.3f}), collate {ct['mean']*1e3:.2f} ms "
            f"(in worker {(iw.get('collate_wall_s') or 0)*1e3:.2f}), batch {bb['mean']/1e6:.2f} MB "
            f"({time.perf_counter()-t0:.1f}s)")

    def comp_loop_beside_pin_parts(self, name):
        """Each rank's training loop without DDP (a synthetic batch already on the GPU, SGD) timed alone, then
        beside a helper thread (pace_thread.PaceThread at torch.set_num_threads(1), one batch a step) that takes
        each batch from this rank's unpinned DataLoader (the cases' workers) and drops it ("receive"), or also
        reads one byte of every page of it ("touch": first-touch faults on the worker's shared mapping and the
        unmapping of touched pages), or copies a private, already-touched batch into pinned memory
        ("private_copy": the copy without mappings), then alone again: the single-GPU harness's
        host_beside_pin_parts (docs/validation-runs.md, run 17 finding 1). Host time: step start to the optimizer's
        step returned. ddp_convert sets the scenario's training.host_needs_memory_map from it. Every rank runs it
        at once, as the cases do."""
        import itertools
        import harness as H
        from pace_thread import PaceThread, thread_minor_faults
        from torch.utils.data import DataLoader
        t, a = self.t, self.a
        c0 = time.perf_counter()
        tid = threading.get_native_id()
        kind = "image" if name == "resnet50" else "tensor_u8"
        model = self.make_model(name)
        opt = t.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
        gb = self.synthetic_batch(name)
        x0 = gb[0] if name == "linear" else None
        n = 10 if a.quick else 30

        def loop(tokens=None, steps=n):
            host = []
            for _ in range(steps):
                if tokens is not None:
                    next(tokens)
                h0 = time.perf_counter()
                loss = self.forward_loss(name, model, gb, x0)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                host.append(time.perf_counter() - h0)
                float(loss.item())
            return summarize(host)
        loop(steps=3)                                   # warm-up (cudnn autotune, allocator)
        ds = RepeatDataset(self.datasets[kind], 1 << 20)
        private = next(iter(DataLoader(ds, batch_size=a.batch_size, num_workers=0)))   # in this process's memory
        bufs = {}

        def touch(batch):
            H.touch_pages(t, batch)

        def copy_private(batch):
            H.copy_into_pinned(t, bufs, batch)

        def one_thread():
            t.set_num_threads(1)                         # as PyTorch's pin loop

        def counted(window, tokens=None):
            # the window's host time and the loop thread's minor faults a step (run 18, finding 1; convert's fault
            # rule for whether the loop needs the memory map; single-GPU run 30, finding 1: copy-on-write after the
            # window's DataLoader fork, so a proxy for the pages the loop writes, not a count of its stalls)
            f0 = thread_minor_faults(tid)
            res[f"{window}_host_s"] = loop(tokens)
            f1 = thread_minor_faults(tid)
            res[f"{window}_loop_minor_faults_per_step"] = (f1 - f0) / n if f0 is not None and f1 is not None else None
        res = {"steps": n, "workers": self.nw}
        counted("alone")
        parts = [("private_copy", copy_private, False)]
        if self.nw > 0:
            parts = [("receive", None, True), ("touch", touch, True)] + parts
        for part, work, from_loader in parts:
            dl = it = None
            if from_loader:
                dl = DataLoader(ds, batch_size=a.batch_size, shuffle=False, num_workers=self.nw, pin_memory=False,
                                prefetch_factor=a.prefetch_factor)
                it = iter(dl)
                for _ in range(2 * self.nw):             # the workers up and the prefetch slots full
                    next(it)
            src = it if from_loader else itertools.repeat(private)
            with PaceThread(src, work=work, ahead=2, on_start=one_thread) as pt:
                counted(part, pt.tokens())
            cpu = sorted(pt.cpu_s[1:]) or sorted(pt.cpu_s)
            res[f"{part}_thread_cpu_s_per_batch"] = cpu[len(cpu) // 2] if cpu else None
            del it, dl, src
        counted("alone_again")
        bufs.clear()
        model = opt = gb = private = None
        gc.collect()
        ranks = self.gather(res)
        if self.is0():
            self.doc["components"].setdefault("loop_beside_pin_parts", {})[name] = {
                "ranks": ranks,
                "method": "no-DDP loop on a synthetic batch already on the GPU (SGD), host = step start to "
                          "opt.step() returned, n steps a window: alone, beside a helper thread taking each batch "
                          "from this rank's unpinned DataLoader and dropping it (receive) or reading a byte a page "
                          "(touch), beside one copying a private batch into pinned memory (private_copy), alone "
                          "again, each window with the loop thread's minor faults a step (since the fourteenth "
                          "session); every rank at once"}

            def ms(x):
                return f"{x['mean'] * 1e3:.2f}" if isinstance(x, dict) else "n/a"
            for r, q in enumerate(ranks):
                log(f"component loop_beside_pin_parts[{name}] rank {r}: alone {ms(q.get('alone_host_s'))} ms, "
                    + ", ".join(f"{p} {ms(q.get(p + '_host_s'))}" for p, _w, _l in parts)
                    + f", alone again {ms(q.get('alone_again_host_s'))} ({time.perf_counter() - c0:.1f}s)")
        return ranks

    def make_loader(self, kind, n_batches, seed):
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler
        a = self.a
        ds = RepeatDataset(self.datasets[kind], self.ws * a.batch_size * (n_batches + 2))
        sampler = DistributedSampler(ds, num_replicas=self.ws, rank=self.rank, shuffle=True, seed=seed,
                                     drop_last=True)
        kw = dict(batch_size=a.batch_size, sampler=sampler, num_workers=self.nw, pin_memory=True, drop_last=True)
        if self.nw > 0:
            kw["prefetch_factor"] = a.prefetch_factor
            kw["persistent_workers"] = False
        return DataLoader(ds, **kw)

    # ------------------------------------------------------------------ one case
    def run_case(self, case, allowance_s):
        t, a = self.t, self.a
        from torch.nn.parallel import DistributedDataParallel as DDP
        c0 = time.perf_counter()
        name, data, mode = case["model"], case["data"], case["mode"]
        module = self.make_model(name)
        if mode == "no_ddp":
            model = module
        elif mode == "fsdp":
            model = self.wrap_fsdp(module, case)
        else:
            cap = case["bucket_cap_mb"] if mode == "ddp" else 25.0
            model = DDP(module, device_ids=[self.lr], output_device=self.lr, bucket_cap_mb=cap,
                        gradient_as_bucket_view=bool(case.get("gradient_as_bucket_view")))
        opt = t.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
        syn = self.synthetic_batch(name)
        x0 = syn[0] if name == "linear" else None
        kind = "image" if name == "resnet50" else "tensor_u8"
        loader = data == "loader"
        nw, pf = self.nw, a.prefetch_factor
        warm = max(pf * nw + 2, 8) if loader else 8
        probe = 5
        hi = 150 if a.quick else 400
        lo = 15 if a.quick else 25
        P = 0 if a.no_profiler else a.profile_steps
        it = None
        if loader:
            it = iter(self.make_loader(kind, warm + probe + hi + 1 + P + 2, seed=case["index"]))
        from contextlib import nullcontext

        T0, T1, T2 = [], [], []

        def one(ev=None):
            h0 = time.perf_counter()
            if loader:
                gb = _to_dev(t, next(it), self.dev)
            else:
                gb = syn
            h1 = time.perf_counter()
            ctx = model.no_sync() if mode == "no_sync" else nullcontext()
            with ctx:
                loss = self.forward_loss(name, model, gb, x0)
                loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            h2 = time.perf_counter()
            if ev is not None:
                ev.record()
            T0.append(h0), T1.append(h1), T2.append(h2)
            return loss

        for _ in range(warm):
            one()
        self.sync()
        pe = [self.event() for _ in range(probe + 1)]
        pe[0].record()
        for j in range(probe):
            one(pe[j + 1])
        self.sync()
        pace = self.allmax(pe[0].elapsed_time(pe[probe]) / 1e3 / probe)
        spent = time.perf_counter() - c0
        window = allowance_s - spent - (2.0 if P else 0.5)
        n = self.bcast(measured_steps(window, pace, lo, hi) if self.is0() else None)
        # n + 1 steps; the window runs from the end of the first (the GPU was idle after the probe's
        # synchronize, so the first step's interval would include its launch latency) to the last
        T0.clear(), T1.clear(), T2.clear()
        evs = [self.event() for _ in range(n + 1)]
        se = a.sync_every
        w0 = time.perf_counter()
        for j in range(n + 1):
            loss = one(evs[j])
            if se > 0 and (j + 1) % se == 0:
                float(loss.item())
        self.sync()
        wall = time.perf_counter() - w0
        iv = [evs[j].elapsed_time(evs[j + 1]) / 1e3 for j in range(n)]
        window_s = evs[0].elapsed_time(evs[n]) / 1e3
        g = summarize(iv)
        waits = [T1[j] - T0[j] for j in range(1, n + 1)]
        hloop = [T2[j] - T1[j] for j in range(1, n + 1)]
        mine = {"step_mean_s": window_s / n, "p50_s": g["p50"], "p90_s": g["p90"],
                "data_wait_s": sum(waits) / n, "loop_host_s": sum(hloop) / n}
        per_rank = self.gather(mine)
        res = {
            "n_measured": n, "warmup_steps": warm + probe, "pace_probe_s": pace, "wall_s": wall,
            "step_time_s": {"mean": window_s / n, "p50": g["p50"], "p90": g["p90"], "cv": g["cv"],
                            "min": g["min"], "max": g["max"]},
            "slowest_rank_step_mean_s": max(r["step_mean_s"] for r in per_rank),
            "throughput_samples_per_s": self.ws * a.batch_size * n / window_s if window_s > 0 else None,
            "per_rank": per_rank,
            "data_wait_s": summarize(waits), "loop_host_s": summarize(hloop),
            "data_wait_fraction": sum(waits) / (T0[n] - T0[0]) if n > 1 and T0[n] > T0[0] else None,
            "timing": "rank 0: intervals between CUDA events recorded on the compute stream after each step's "
                      "launches (after optimizer.step), read after a final synchronize",
        }
        if loader:
            res["loader"] = {"kind": kind, "num_workers": nw, "prefetch_factor": pf, "batch_size": a.batch_size}
        if mode == "fsdp":
            res["fsdp"] = self.fsdp_info(module, case)
        # DDP's own view of its buckets (rebuilt after the first iteration, in gradient-ready order)
        if mode not in ("no_ddp", "fsdp") and self.is0():
            try:
                res["ddp"] = self.ddp_info(model, name, case)
            except Exception as e:          # rank 0 only: must not fail the case for the others
                res["ddp"] = {"error": f"{e.__class__.__name__}: {e}"}
        # profiler pass (rank 0 records; every rank runs the same steps)
        if P:
            res["profile"] = self.profile_steps(case, one, P)
        self.sync()
        it = None
        return res, True

    def wrap_fsdp(self, module, case):
        """FullyShardedDataParallel with every nn.Linear its own unit (ModuleWrapPolicy), the case's sharding
        strategy (FULL_SHARD: reshard after forward; SHARD_GRAD_OP) and backward_prefetch, FSDP's default
        limit_all_gathers."""
        from torch.distributed.fsdp import BackwardPrefetch, FullyShardedDataParallel as FSDP, ShardingStrategy
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        prefetch = {"backward_pre": BackwardPrefetch.BACKWARD_PRE, "backward_post": BackwardPrefetch.BACKWARD_POST,
                    "none": None}[case["fsdp_prefetch"]]
        strategy = ShardingStrategy.FULL_SHARD if case["fsdp_reshard"] else ShardingStrategy.SHARD_GRAD_OP
        return FSDP(module, auto_wrap_policy=ModuleWrapPolicy({self.t.nn.Linear}), device_id=self.lr,
                    sharding_strategy=strategy, backward_prefetch=prefetch, limit_all_gathers=True,
                    use_orig_params=True)

    def fsdp_info(self, module, case):
        """The units as pipeplan's fsdp section takes them: each Linear's parameter bytes in forward order (its
        unsharded weight and bias: what an all-gather assembles), and the case's settings."""
        units = [sum(p.numel() * p.element_size() for p in m.parameters(recurse=False))
                 for m in module.modules() if isinstance(m, self.t.nn.Linear)]
        return {"unit_parameter_bytes": [int(b) for b in units], "backward_prefetch": case["fsdp_prefetch"],
                "reshard_after_forward": bool(case["fsdp_reshard"]), "wrap": "ModuleWrapPolicy({nn.Linear})",
                "limit_all_gathers": True}

    def ddp_info(self, model, name, case):
        out: Dict[str, Any] = {}
        try:
            d = model._get_ddp_logging_data()
            keep = {k: d[k] for k in ("bucket_cap_bytes", "bucket_sizes", "rebuilt_bucket_sizes",
                                      "has_rebuilt_buckets", "num_buckets_reduced", "total_parameter_size_bytes",
                                      "num_parameter_tensors", "iteration", "gradient_as_bucket_view",
                                      "avg_forward_compute_time", "avg_backward_compute_time",
                                      "avg_backward_comm_time", "avg_backward_compute_comm_overlap_time",
                                      "prev_iteration_grad_ready_order_indices") if k in d}
            out["logging_data"] = keep
            sizes = parse_int_list(keep.get("rebuilt_bucket_sizes")) or []
            if sizes:
                out["bucket_sizes"] = sizes
                out["bucket_sizes_source"] = "_get_ddp_logging_data()['rebuilt_bucket_sizes']"
        except Exception as e:
            out["logging_error"] = f"{e.__class__.__name__}: {e}"
        comp = self.doc["components"]["models"].get(name) or {}
        grads = [g["bytes"] for g in (comp.get("grad_ready") or {}).get("order", [])]
        if case["mode"] == "ddp" and grads:
            out["computed_bucket_sizes"] = bucket_sizes(grads, case["bucket_cap_mb"])
            if "bucket_sizes" not in out:
                out["bucket_sizes"] = out["computed_bucket_sizes"]
                out["bucket_sizes_source"] = "computed: PyTorch's rule on the measured gradient-ready order"
        ar = self.doc["components"].get("allreduce")
        if case["mode"] == "ddp" and ar and out.get("bucket_sizes"):
            ts = [interp_time(ar["points"], b) for b in out["bucket_sizes"]]
            out["standalone_comm_s"] = sum(x for x in ts if x)
            out["standalone_comm_method"] = ("sum over DDP's buckets of the standalone all-reduce time at that size "
                                             "(interpolated between timed sizes): the comm time if serialized, no overlap")
        return out

    def profile_steps(self, case, one, P):
        """Every rank runs the same P steps whatever happens to the profiler on rank 0 (the steps
        hold collectives); a profiler failure is recorded, never raised."""
        want_trace = bool(self.is0() and self.a.trace_case and not self.trace_done
                          and self.a.trace_case in case["id"])
        if not self.is0():
            for _ in range(P):
                one()
            self.sync()
            return None
        prof = None
        try:
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if want_trace else [])
            self.sync()
            prof = profile(activities=acts)
            prof.__enter__()
        except Exception as e:
            prof = None
            err = f"profiler did not start: {e.__class__.__name__}: {e}"
        for _ in range(P):
            one()
        self.sync()
        if prof is None:
            return {"error": err}
        try:
            prof.__exit__(None, None, None)
            return self._profile_summary(prof, P, want_trace)
        except Exception as e:
            return {"error": f"{e.__class__.__name__}: {e}", "traceback": traceback.format_exc()}

    def _profile_summary(self, prof, P, want_trace):
        kernels = []
        try:
            evs = prof.profiler.kineto_results.events()
            for e in evs:
                if "cuda" not in str(e.device_type()).lower():
                    continue
                if hasattr(e, "start_ns"):
                    a0 = e.start_ns() / 1e9
                    a1 = (e.end_ns() if hasattr(e, "end_ns") else e.start_ns() + e.duration_ns()) / 1e9
                else:
                    a0 = e.start_us() / 1e6
                    a1 = a0 + e.duration_us() / 1e6
                kernels.append((e.name(), a0, a1))
            src = "kineto_results.events()"
        except Exception:
            kernels = []
        if not kernels:
            for e in prof.events():
                if "cuda" in str(getattr(e, "device_type", "")).lower():
                    kernels.append((e.name, e.time_range.start / 1e6, e.time_range.end / 1e6))
            src = "prof.events()"
        summ = kernel_overlap_summary(kernels, P)
        names: Dict[str, int] = {}
        for nm, _, _ in kernels:
            if kernel_class(nm) == "nccl":
                names[nm] = names.get(nm, 0) + 1
        summ["nccl_kernel_names"] = dict(sorted(names.items(), key=lambda kv: -kv[1])[:6])
        summ["source"] = src
        summ["method"] = (f"torch.profiler (CUDA activities) over {P} steps on rank 0 after the measured window; "
                          "NCCL kernels are those named nccl*; not overlapped = NCCL busy time with no compute "
                          "kernel running (NCCL kernels include their wait for the other ranks)")
        if want_trace:
            self.trace_done = True
            summ["trace"] = self.export_trace(prof)
        return summ

    def export_trace(self, prof):
        import gzip
        import shutil
        import tempfile
        out = self.a.trace_out or os.path.join(os.path.dirname(os.path.abspath(self.a.out)), "ddp_trace.json.gz")
        fd, tmp = tempfile.mkstemp(prefix="ddp_trace_", suffix=".json")     # not beside the output
        os.close(fd)
        try:
            prof.export_chrome_trace(tmp)
            with open(tmp, "rb") as f, gzip.open(out, "wb", compresslevel=6) as g:
                shutil.copyfileobj(f, g)
            os.unlink(tmp)
            mb = os.path.getsize(out) / 1e6
            if mb > self.a.trace_max_mb:
                os.unlink(out)
                return {"dropped": f"{mb:.1f} MB compressed > --trace-max-mb {self.a.trace_max_mb}"}
            return {"file": os.path.basename(out), "mb": round(mb, 2)}
        except Exception as e:
            for p in (tmp,):
                if os.path.exists(p):
                    os.unlink(p)
            return {"error": f"{e.__class__.__name__}: {e}"}

    # ------------------------------------------------------------------ all
    def run(self):
        t = self.t
        if self.is0():
            self.doc["machine"] = self.machine_info()
            m = self.doc["machine"]
            log(f"machine: {self.ws} x {m.get('gpu')} | {m.get('cpu_model')} | {self.cores} cores "
                f"({self.cores_per_rank}/rank) | torch {t.__version__} | NCCL {m.get('nccl')}")
            self.save()
        models = [m for m in ("linear", "resnet50") if m in self.a.models_l and any(c["model"] == m for c in self.cases)]
        for m in models:
            self.watchdog(120, f"component {m}")
            self.comp_model(m)
            self.barrier()
        bsets = []
        if self.is0():
            for m in models:
                bsets += list(self.doc["components"]["models"][m]["computed_buckets"].values())
        self.watchdog(120, "component allreduce")
        bsets = self.bcast(bsets)
        self.comp_allreduce(bsets)
        self.save()
        if not self.a.no_ddp_host:
            self.watchdog(90, "component ddp_host")
            try:
                self.comp_ddp_host()
            except Exception as e:          # every rank runs the same code: a failure is the same on all
                if self.is0():
                    self.doc["components"]["ddp_host"] = {"error": f"{e.__class__.__name__}: {e}",
                                                          "traceback": traceback.format_exc()}
                    log(f"component ddp_host: ERROR {e.__class__.__name__}: {e}")
            self.barrier()
            self.save()
        if any(c["data"] == "loader" for c in self.cases):
            self.watchdog(150, "data generation")
            self.make_data()
            self.watchdog(40 + 30 * len(models), "loader components")
            for m in models:
                self.comp_loader("image" if m == "resnet50" else "tensor_u8")
            self.barrier()
            self.save()
            if not self.a.no_pin_parts:
                for m in models:
                    if not any(c["model"] == m and c["data"] == "loader" for c in self.cases):
                        continue
                    self.watchdog(120, f"component loop_beside_pin_parts {m}")
                    try:
                        self.comp_loop_beside_pin_parts(m)
                    except Exception as e:  # a diagnostic: never costs the cases
                        if self.is0():
                            self.doc["components"].setdefault("loop_beside_pin_parts", {})[m] = {
                                "error": f"{e.__class__.__name__}: {e}", "traceback": traceback.format_exc()}
                            log(f"component loop_beside_pin_parts[{m}]: ERROR {e.__class__.__name__}: {e}")
                    self.barrier()
                self.save()
        reserve = 3.0
        for ci, case in enumerate(self.cases):
            left = len(self.cases) - ci
            plan = None
            if self.is0():
                rem = self.a.budget_s - self.elapsed() - reserve
                plan = {"skip": rem < 5.0, "allowance": allowance_for(rem, left), "rem": rem}
            plan = self.bcast(plan)
            if plan["skip"]:
                case["status"] = "skipped"
                case["error"] = f"budget: {plan['rem']:.1f}s left"
                continue
            # model build, DataLoader start-up and the profiler pass come on top of the allowance
            self.watchdog(plan["allowance"] + 90, f"case {case['id']}")
            c0 = time.perf_counter()
            case["status"] = "running"
            case["started_s"] = round(self.elapsed(), 2)
            err = None
            try:
                res, _ = self.run_case(case, plan["allowance"])
            except Exception as e:
                err = f"{e.__class__.__name__}: {e}"
                res = None
                if self.is0():
                    case["traceback"] = traceback.format_exc()
                else:
                    print(f"[rank {self.rank}] case {case['id']}: {err}", file=sys.stderr, flush=True)
            # every rank must agree that the case succeeded
            try:
                ok_all = self.allmin(0.0 if err else 1.0) > 0.5
            except Exception as e:      # the process group is gone: nothing more can run
                case["status"] = "error"
                case["error"] = err or f"{e.__class__.__name__}: {e}"
                self.save()
                raise
            if ok_all and res is not None:
                case["status"] = "ok"
                case["measured"] = res
            else:
                case["status"] = "error"
                case["error"] = err or "failed on another rank (see the log)"
            gc.collect()
            t.cuda.empty_cache()
            self.barrier()
            case["case_wall_s"] = round(time.perf_counter() - c0, 3)
            if self.is0():
                if case["status"] == "ok":
                    m = case["measured"]
                    pr = m.get("profile") or {}
                    dd = m.get("ddp") or {}
                    log(f"case {ci+1}/{len(self.cases)} {case['id']}: step {m['step_time_s']['mean']*1e3:.2f} ms "
                        f"(p90 {m['step_time_s']['p90']*1e3:.2f}), {m['throughput_samples_per_s']:.0f} samples/s, "
                        f"wait {m['data_wait_s']['mean']*1e3:.2f} ms"
                        + (f", {len(dd['bucket_sizes'])} buckets" if dd.get("bucket_sizes") else "")
                        + (f", nccl {pr['nccl_s_per_step']*1e3:.2f} ms/step ({pr['nccl_not_overlapped_s_per_step']*1e3:.2f} not overlapped)"
                           if pr.get("nccl_s_per_step") is not None else "")
                        + f", n={m['n_measured']} ({case['case_wall_s']:.1f}s)")
                else:
                    log(f"case {ci+1}/{len(self.cases)} {case['id']}: ERROR {case['error']}")
                self.save()
        self.watchdog(None, "done")
        self.doc["finished"] = now_iso()
        self.doc["status"] = "done"
        self.doc["elapsed_s"] = round(self.elapsed(), 1)
        self.save()
        if self.is0():
            ok = sum(1 for c in self.cases if c["status"] == "ok")
            log(f"done: {ok}/{len(self.cases)} cases ok in {self.elapsed():.1f}s; wrote {self.a.out}")
        return 0


METHODS = {
    "step_time": "intervals between CUDA events recorded on rank 0's compute stream after each step's launches "
                 "(the optimizer waits for DDP's all-reduces); mean = window / steps; every rank's mean is kept "
                 "in per_rank; throughput = world_size x batch x steps / window",
    "steady_state": "warm-up steps (8, or prefetch_factor x num_workers + 2 with a DataLoader; DDP rebuilds its "
                    "buckets after the first) and 5 pace-probe steps are left out; the window's length in steps is "
                    "chosen from the probe pace and the case's time allowance (the slowest rank's pace, rank 0 decides)",
    "exposed_comm": "derived: DDP case mean step minus the no_sync case's (same model and data; DDP wrapper, no "
                    "all-reduce) and minus the no-DDP case's (plain module); fraction of the DDP step",
    "profile": "torch.profiler CUDA activities over a few steps on rank 0 after the window; per step NCCL kernel "
               "busy time and the part not overlapped by compute kernels (in-process interval arithmetic)",
    "components": "per model without DDP: forward, backward, optimizer GPU times (isolated held-stream and "
                  "sustained), gradient bytes in backward order with ready times; all_reduce timed standalone",
}


def main(argv=None) -> int:
    a = parse_args(argv)
    cases = cases_for(a)
    if a.list:
        for c in cases:
            print(c["id"])
        print(f"{len(cases)} cases")
        return 0
    if a.dry_run:
        print_plan(a, cases)
        return 0
    ws = int(os.environ.get("WORLD_SIZE", "1") or 1)
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print(f"ddp_harness: torch is not importable here ({e}); --list and --dry-run work without it",
              file=sys.stderr)
        return 1
    ngpu = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if ngpu < 2 or ws < 2:
        print(f"ddp_harness: needs at least 2 GPUs and 2 ranks: {ngpu} GPU(s) visible, world size {ws}. "
              f"Launch with torchrun --standalone --nproc_per_node=N (N >= 2) on a multi-GPU machine.",
              file=sys.stderr)
        return 3
    lr = int(os.environ.get("LOCAL_RANK", "0"))
    if lr >= ngpu:
        print(f"ddp_harness: local rank {lr} but only {ngpu} GPUs visible", file=sys.stderr)
        return 3
    torch.cuda.set_device(lr)
    if a.bind_cpus:
        # before any thread or worker starts: they inherit it
        mine = rank_cpus(sorted(os.sched_getaffinity(0)), int(os.environ.get("LOCAL_WORLD_SIZE", ws)), lr)
        os.sched_setaffinity(0, mine)
        torch.set_num_threads(max(1, len(mine)))
        log(f"rank {os.environ.get('RANK', '0')}: bound to {len(mine)} CPUs {mine[0]}-{mine[-1]}")
    import warnings
    warnings.filterwarnings("ignore", message=".*worker processes in total.*")
    kw = {"backend": "nccl", "timeout": _dt.timedelta(seconds=a.nccl_timeout_s)}
    try:
        dist.init_process_group(device_id=torch.device("cuda", lr), **kw)
    except TypeError:
        dist.init_process_group(**kw)
    if int(os.environ.get("RANK", "0")) == 0:
        log(f"ddp_harness start: world size {ws}, budget {a.budget_s:.0f}s, {len(cases)} cases")
    r = Runner(a, cases)
    try:
        rc = r.run()
    except KeyboardInterrupt:
        r.doc["status"] = "interrupted"
        r.save()
        raise
    except Exception:
        r.doc["status"] = "failed"
        r.doc["error"] = traceback.format_exc()
        try:
            r.save()
        except Exception:
            pass
        traceback.print_exc()
        rc = 1
    try:
        dist.destroy_process_group()
    except Exception:
        pass
    return rc


if __name__ == "__main__":
    sys.exit(main())
