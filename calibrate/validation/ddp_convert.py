#!/usr/bin/env python3
"""Turn ddp_harness.py's measured DDP cases into pipeplan scenarios, simulate them, score the predictions.

Runs on the development machine (plain Python 3, no torch):

    python3 calibrate/validation/ddp_convert.py --cases RESULTS/ddp_cases.json \
        [--profile RESULTS/profile-nccl.json] [--base-profile scenarios/profiles/h200-2026-11-30-run10.json] \
        [--pipeplan build/cli/pipeplan] [--out-dir RESULTS/ddp-report] [--md docs/ddp-validation.md]

For every measured case it writes OUT_DIR/scenarios/<case id>.json (docs/scenario.md keys only):
node.gpus = the world size, training.forward_s / backward_s from the model's step measured
without DDP (backward_s = backward + optimizer, as docs/scenario.md defines it),
ddp.gradient_bytes (0 for the no_sync and no-DDP cases) and ddp.bucket_cap_mb, the DataLoader's
knobs and per-sample costs when the case has one, else a loader that is never the bottleneck.
It runs `pipeplan simulate SCENARIO --profile PROFILE --format json` and compares predicted and
measured mean step time and exposed-communication fraction; per (model, data) family of
bucket_cap_mb settings, the Kendall tau of the step-time ranking.

The collective model (PROFILE's nccl.all_reduce):
- `profile`: the nccl (and compute) sections calibrated in the same device call
  (`pipeplan-calibrate --only nccl,compute`), merged over --base-profile;
- `fit`: latency + bytes x 2(n-1)/n / busbw fitted (relative least squares, as calibrate fits)
  to the harness's own standalone torch.distributed.all_reduce timings, over --base-profile.
The first is used when --profile has a measured nccl section, else the second; the other is
reported beside it when both exist. A second prediction, "as built", sets ddp.first_bucket_mb
and ddp.bucket_cap_mb to the buckets DDP actually built (pipeplan fills buckets from a
continuous gradient stream; PyTorch never splits a parameter), separating bucket formation
from the collective model.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as _dt
import json
import math
import os
import shlex
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert as C  # noqa: E402  (torch-free: statistics, run_pipeplan)
from ddp_harness import MIB  # noqa: E402  (torch-free)

BEGIN = "<!-- BEGIN GENERATED: ddp_convert.py replaces everything down to the END marker -->"
END = "<!-- END GENERATED: ddp_convert.py -->"
MIN_SIM_STEPS = 200
SYNTH_LOAD_S = 1e-7           # a loader that is never the bottleneck: 0.1 us per sample, 4-byte items


# ============================================================================ collective model
def bus_factor(n: int) -> float:
    """nccl-tests' all-reduce bus-bandwidth factor 2(n-1)/n (0 for one rank)."""
    return 0.0 if n <= 1 else 2.0 * (n - 1) / n


def fit_affine_relative(x: Sequence[float], y: Sequence[float]) -> Optional[Tuple[float, float, float]]:
    """y = a + b x by least squares on relative residuals ((fit - y) / y), as calibrate/stats.cpp
    fit_affine_relative: every equation divided by y_i. A negative intercept is refitted through
    the origin. Returns (a, b, rel_rmse), or None (fewer than 2 distinct x, y <= 0, slope <= 0)."""
    if len(x) != len(y) or len(x) < 2:
        return None
    if any(not (v > 0) or not math.isfinite(v) for v in y):
        return None
    if all(v == x[0] for v in x):
        return None
    # normal equations of [1/y, x/y] . [a, b] = 1
    s11 = sum(1.0 / (v * v) for v in y)
    s12 = sum(u / (v * v) for u, v in zip(x, y))
    s22 = sum((u / v) ** 2 for u, v in zip(x, y))
    r1 = sum(1.0 / v for v in y)
    r2 = sum(u / v for u, v in zip(x, y))
    det = s11 * s22 - s12 * s12
    if det <= 0 or not math.isfinite(det):
        return None
    a = (r1 * s22 - r2 * s12) / det
    b = (s11 * r2 - s12 * r1) / det
    if a < 0:
        a = 0.0
        b = r2 / s22
    if not (b > 0) or not math.isfinite(b):
        return None
    rel = math.sqrt(sum(((a + b * u - v) / v) ** 2 for u, v in zip(x, y)) / len(x))
    return a, b, rel


def fit_all_reduce(points: Sequence[Dict[str, float]], world_size: int,
                   min_bytes: float = 0.0) -> Optional[Dict[str, float]]:
    """pipeplan's collective model time = latency_s + bytes x 2(n-1)/n / bus_bytes_per_s, fitted to
    measured {bytes, time_s} points (those >= min_bytes)."""
    f = bus_factor(world_size)
    if f <= 0:
        return None
    pts = [p for p in points if p.get("bytes", 0) >= min_bytes and p.get("time_s")]
    fit = fit_affine_relative([p["bytes"] * f for p in pts], [p["time_s"] for p in pts])
    if fit is None:
        return None
    a, b, rel = fit
    return {"latency_s": a, "bus_bytes_per_s": 1.0 / b, "rel_rmse": rel, "n_points": len(pts)}


def collective_time(model: Dict[str, float], nbytes: float, world_size: int) -> float:
    """The time pipeplan gives one all-reduce of nbytes (models/cost_models.cpp collective_time_s)."""
    f = bus_factor(world_size)
    if nbytes <= 0 or f <= 0:
        return 0.0
    return model["latency_s"] + nbytes * f / model["bus_bytes_per_s"]


def load_json(path: str) -> Any:
    with open(path) as f:
        return json.load(f)


def dump_json(obj: Any, path: str, indent: int = 1) -> None:
    with open(path, "w") as f:
        json.dump(obj, f, indent=indent)
        f.write("\n")


def merge_profile(base: Dict[str, Any], overlay: Dict[str, Any]) -> Dict[str, Any]:
    """The base profile with the overlay's sections: nccl replaced when the overlay measured it;
    compute (and any other section) updated key by key; the base's provenance kept, with a note."""
    out = json.loads(json.dumps(base))
    for key, sec in overlay.items():
        if key in ("schema", "provenance"):
            continue
        if key == "nccl":
            if isinstance(sec, dict) and sec.get("measured") and sec.get("all_reduce"):
                out["nccl"] = json.loads(json.dumps(sec))
            continue
        if isinstance(sec, dict) and isinstance(out.get(key), dict):
            out[key].update(json.loads(json.dumps(sec)))
        else:
            out[key] = json.loads(json.dumps(sec))
    prov = out.setdefault("provenance", {})
    oprov = overlay.get("provenance") or {}
    prov["note"] = ((prov.get("note") + "; ") if prov.get("note") else "") + (
        f"ddp validation: sections {', '.join(k for k in overlay if k not in ('schema', 'provenance'))} from a "
        f"profile measured {oprov.get('date')} on {oprov.get('hostname')} ({oprov.get('gpu_count')} GPUs)")
    return out


def profile_with_fit(base: Dict[str, Any], fit: Dict[str, float], points: Sequence[Dict[str, Any]],
                     world_size: int, note: str) -> Dict[str, Any]:
    """The base profile whose nccl.all_reduce is the fit (pipeplan-profile/1 keys only)."""
    out = json.loads(json.dumps(base))
    f = bus_factor(world_size)
    pts = [{"bytes": float(p["bytes"]), "time_s": float(p["time_s"]),
            "algbw_bytes_per_s": float(p["bytes"]) / float(p["time_s"]),
            "busbw_bytes_per_s": float(p["bytes"]) / float(p["time_s"]) * f} for p in points]
    out["nccl"] = {"measured": True, "gpus": int(world_size),
                   "all_reduce": {"latency_s": fit["latency_s"], "bus_bytes_per_s": fit["bus_bytes_per_s"],
                                  "rel_rmse": fit["rel_rmse"], "points": pts}}
    prov = out.setdefault("provenance", {})
    prov["note"] = ((prov.get("note") + "; ") if prov.get("note") else "") + note
    return out


# ============================================================================ scenario
def step_split(model_comp: Dict[str, Any]) -> Dict[str, float]:
    """forward_s, backward_s (backward + optimizer), cv, host_s of the model measured without DDP:
    the sustained back-to-back times when the host is well ahead of the GPU, else the isolated
    (held-stream) GPU times."""
    src = model_comp["sustained"] if model_comp.get("host_ahead") else model_comp["isolated"]
    fw = float(src["forward_s"]["mean"])
    bw = float(src["backward_s"]["mean"]) + float(src["optimizer_s"]["mean"])
    cv = (model_comp["sustained"].get("step_interval_s") or {}).get("cv") if model_comp.get("host_ahead") else None
    return {"forward_s": fw, "backward_s": bw,
            "step_cv": 0.0 if cv is None or not math.isfinite(cv) else float(cv),
            "host_s": float(model_comp["isolated"]["host_s"]["mean"]),
            "source": "sustained" if model_comp.get("host_ahead") else "isolated"}


def loop_alone_host_s(comps: Dict[str, Any], model: str) -> Optional[float]:
    """The model's loop host time a step with every rank running it at once: on each rank the mean of
    loop_beside_pin_parts' "alone" and "alone again" windows (the loop as the cases run it, forward to zero_grad,
    since the thirteenth session), then the slowest rank's (the ranks' steps wait for each other; pipeplan's ranks
    are alike). None where no rank has both windows."""
    c = (comps.get("loop_beside_pin_parts") or {}).get(model) or {}
    per_rank = []
    for r in (c.get("ranks") or []) if "error" not in c else []:
        vals = [((r or {}).get(k) or {}).get("mean") for k in ("alone_host_s", "alone_again_host_s")]
        if all(isinstance(v, (int, float)) and v > 0 for v in vals):
            per_rank.append(sum(vals) / len(vals))
    return max(per_rank) if per_rank else None


def scenario_for(case: Dict[str, Any], doc: Dict[str, Any], min_steps: int = MIN_SIM_STEPS,
                 buckets: str = "knob", host_from: str = "isolated") -> Dict[str, Any]:
    """A pipeplan-scenario/1 document for one measured DDP case (docs/scenario.md keys only).
    buckets: "knob" (bucket_cap_mb as given to DDP, first bucket 1 MiB) or "built" (first bucket and
    cap from the buckets DDP built: the first one's size, the mean of the others). host_from: the loop's host time
    a step, "isolated" (the model component's, launches queued behind a spin kernel) or "alone-windows"
    (loop_alone_host_s, where the call has them; else isolated)."""
    comps = doc["components"]
    mc = comps["models"][case["model"]]
    ws = int(doc["world_size"])
    machine = doc.get("machine") or {}
    m = case["measured"]
    sp = step_split(mc)
    loader_doc = doc.get("loader") or {}
    bs = int(loader_doc.get("batch_size") or 64)
    has_loader = case["data"] == "loader"
    warm = int(m.get("warmup_steps") or 8)
    steps = warm + max(int(m["n_measured"]), min_steps)
    scen: Dict[str, Any] = {
        "schema": "pipeplan-scenario/1",
        "name": case["id"],
        "description": (f"measured DDP case {case['id']} ({case['model']}, {case['data']}, {case['mode']}) on "
                        f"{ws} GPUs; step split measured without DDP ({sp['source']}), "
                        f"buckets: {buckets}"),
        "seed": 1,
        "node": {"gpus": ws, "cpu_cores": int(machine.get("cpu_cores") or machine.get("cpu_count") or 1)},
        "storage": {"page_cache_hit_ratio": 1.0},
        "transfer": {"non_blocking": True, "copy_stream": "default"},
        "training": {"forward_s": sp["forward_s"], "backward_s": sp["backward_s"],
                     "step_cv": round(sp["step_cv"], 4),
                     "host_s_per_step": ((host_from == "alone-windows" and loop_alone_host_s(comps, case["model"]))
                                         or sp["host_s"]),
                     "sync_every_steps": int(doc.get("sync_every") or 0),
                     "steps": int(steps), "warmup_steps": int(warm)},
    }
    if has_loader:
        kind = (m.get("loader") or {}).get("kind") or ("image" if case["model"] == "resnet50" else "tensor_u8")
        lc = (comps.get("loader") or {})[kind]
        nw = int((m.get("loader") or {}).get("num_workers", loader_doc.get("num_workers", 0)))
        load = lc["load"]
        load_mean, load_cv = float(load["mean"]), load.get("cv")
        collate_s = float(lc["collate"]["s_per_batch"]["mean"])
        iw = lc.get("in_worker") or {}
        if nw > 0 and iw.get("getitem_wall_s") and iw.get("collate_wall_s"):
            load_mean, collate_s = float(iw["getitem_wall_s"]), float(iw["collate_wall_s"])
        item_bytes = float(lc["collate"]["batch_bytes"]["mean"]) / bs
        dataset = {"num_samples": int(steps * bs * ws), "item_bytes": max(1, int(round(item_bytes))),
                   "load_s_per_sample": C._dist(load_mean, load_cv)}
        sb = ((comps.get("datasets") or {}).get(kind) or {}).get("sample_bytes") or {}
        if sb.get("mean"):
            dataset["sample_bytes"] = C._dist(sb["mean"], sb.get("cv"))
        loader = {"batch_size": bs, "num_workers": nw, "pin_memory": True, "drop_last": True, "in_order": True,
                  "collate_s_per_batch": collate_s}
        if loop_needs_memory_map(comps, case["model"]):
            # how often it needs the map: the simulator's default interval (the fault counts that set it until
            # single-GPU validation run 30 were copy-on-write after a DataLoader fork: finding 1)
            scen["training"]["host_needs_memory_map"] = True
        if nw > 0:
            loader["prefetch_factor"] = int(loader_doc.get("prefetch_factor") or 2)
            loader["persistent_workers"] = False
    else:
        # data already on the GPU: a loader that is never the bottleneck (inline, 0.1 us and 4 bytes a sample)
        dataset = {"num_samples": int(steps * bs * ws), "item_bytes": 4,
                   "load_s_per_sample": {"mean": SYNTH_LOAD_S, "cv": 0.0, "kind": "constant"},
                   "sample_bytes": {"mean": 4, "cv": 0.0, "kind": "constant"}}
        loader = {"batch_size": bs, "num_workers": 0, "pin_memory": False, "drop_last": True,
                  "collate_s_per_batch": 0.0}
    scen["dataset"] = dataset
    scen["loader"] = loader
    ddp: Dict[str, Any] = {"gradient_bytes": 0}
    if case["mode"] == "ddp":
        ddp = {"gradient_bytes": int(mc["gradient_bytes"]), "bucket_cap_mb": float(case["bucket_cap_mb"])}
        order = [g["bytes"] for g in ((mc.get("grad_ready") or {}).get("order") or []) if g.get("bytes")]
        if order and abs(sum(order) - mc["gradient_bytes"]) <= 1e-6 * mc["gradient_bytes"]:
            # the measured gradients in backward order: pipeplan buckets them by PyTorch's rule
            ddp["parameter_bytes"] = [int(b) for b in order]
        built = ((m.get("ddp") or {}).get("bucket_sizes")) or []
        host = ddp_host_costs(comps)
        if buckets == "built" and built:
            ddp.pop("parameter_bytes", None)   # "as built" imposes DDP's own bucket sizes instead
            ddp["first_bucket_mb"] = built[0] / MIB
            rest = built[1:]
            ddp["bucket_cap_mb"] = (sum(rest) / len(rest) / MIB) if rest else built[0] / MIB
        if host and "parameter_bytes" not in ddp:
            # no parameter list (buckets as built, or no measured order): per tensor becomes per step
            host = dict(host, host_s_per_step=host["host_s_per_step"]
                        + host.pop("host_s_per_parameter") * int(mc.get("parameter_tensors") or 0))
        ddp.update(host or {})
    scen["ddp"] = ddp
    fs = m.get("fsdp") or {}
    if case["mode"] == "fsdp" and fs.get("unit_parameter_bytes"):
        # each Linear an FSDP unit, as the harness wrapped it: its gathers and reduce-scatters at the profile's
        # all_gather / reduce_scatter models (fp32 parameters and gradients: the same bytes)
        scen["fsdp"] = {"unit_parameter_bytes": [int(b) for b in fs["unit_parameter_bytes"]],
                        "backward_prefetch": fs["backward_prefetch"],
                        "reshard_after_forward": bool(fs["reshard_after_forward"])}
    return scen


def per_rank_pin_parts(comps: Dict[str, Any], model: str, read) -> List[Any]:
    """`read` (one of convert's host_beside_pin_parts readers) applied to each rank's loop_beside_pin_parts windows
    of `model`, the ranks that gave nothing left out; [] where the component is absent or failed."""
    c = (comps.get("loop_beside_pin_parts") or {}).get(model) or {}
    if not c or "error" in c:
        return []
    out = [read({"host_beside_pin_parts": r}) for r in (c.get("ranks") or []) if r]
    return [v for v in out if v is not None]


def loop_needs_memory_map(comps: Dict[str, Any], model: str) -> Optional[bool]:
    """Whether the model's loop stalls while the pin thread works on workers' mappings (scenario
    training.host_needs_memory_map), from the DDP harness's loop_beside_pin_parts component (since the thirteenth
    session; every rank at once): convert.loop_needs_memory_map's verdict on each rank's windows, true when every
    rank that measured it says so (the scenario's ranks are alike). None where it was not measured."""
    verdicts = per_rank_pin_parts(comps, model, C.loop_needs_memory_map)
    return all(verdicts) if verdicts else None


def ddp_host_costs(comps: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """DDP's host costs for the scenario (ddp.host_s_*) from the harness's ddp_host component: its
    least-squares fit over small-layer stacks, measured alone in the same call. A negative
    coefficient (noise around zero) counts as 0. None when the run has no fit."""
    fit = (comps.get("ddp_host") or {}).get("fit")
    if not fit:
        return None
    return {"host_s_per_step": max(0.0, float(fit["s_per_step"])),
            "host_s_per_parameter": max(0.0, float(fit["s_per_parameter"])),
            "host_s_per_bucket": max(0.0, float(fit["s_per_bucket"]))}


def no_comm_variant(scen: Dict[str, Any]) -> Dict[str, Any]:
    s = json.loads(json.dumps(scen))
    s["name"] = scen["name"] + "-nocomm"
    s["ddp"] = {"gradient_bytes": 0}
    return s


# ============================================================================ evaluation
def measured_exposed(case: Dict[str, Any]) -> Optional[float]:
    """The case's exposed communication as a share of its step: against DDP's no_sync case (DDP), against the
    model without a wrapper (FSDP: its compute alone)."""
    d = case.get("derived") or {}
    return d.get("exposed_comm_vs_no_ddp_fraction" if case.get("mode") == "fsdp" else "exposed_comm_vs_no_sync_fraction")


def predicted_exposed(result: Optional[Dict[str, Any]]) -> Optional[float]:
    """pipeplan's share of the step a rank waits after backward: the collectives' own exposed time plus its wait for
    another rank (`gpu.idle_waiting_for_ranks_fraction`, reported apart since the sixty-fourth session; an older
    report has only the first, which then held both). What the harness's DDP step less its no_sync step measures."""
    if not result:
        return None
    comm = C._get(result, "gpu.exposed_comm_fraction")
    if comm is None:
        return None
    return comm + (C._get(result, "gpu.idle_waiting_for_ranks_fraction") or 0.0)


def model_comm_per_step(model: Optional[Dict[str, float]], bucket_sizes: Sequence[float], world_size: int) -> Optional[float]:
    """Seconds of all-reduce per step that the collective model gives DDP's buckets as built: what
    the profiler's NCCL kernel time per step measures, when no kernel waits for a late rank."""
    if not model or not bucket_sizes:
        return None
    return sum(collective_time(model, float(b), world_size) for b in bucket_sizes)


def evaluate(cases: List[Dict[str, Any]], preds: Dict[str, Dict[str, Any]],
             comm_model: Optional[Dict[str, float]] = None, world_size: int = 2) -> Dict[str, Any]:
    """preds[case id] = {variant: run_pipeplan result}; variants: main, nocomm, built, alt.
    comm_model: the main prediction's all-reduce model (latency_s, bus_bytes_per_s)."""
    rows = []
    for c in cases:
        if c.get("status") != "ok":
            continue
        m = c["measured"]
        p = preds.get(c["id"]) or {}

        def res(v):
            r = p.get(v)
            return r.get("result") if r and "result" in r else None

        def err(v):
            r = p.get(v)
            return r.get("error") if r and "error" in r else None
        main, nocomm, built, alt = res("main"), res("nocomm"), res("built"), res("alt")
        t_meas = m["step_time_s"]["mean"]
        t_pred = C._get(main, "step_time_s.mean") if main else None
        t_nc = C._get(nocomm, "step_time_s.mean") if nocomm else None
        row = {
            "id": c["id"], "model": c["model"], "data": c["data"], "mode": c["mode"],
            "bucket_cap_mb": c.get("bucket_cap_mb"), "repeat": c.get("repeat", 0),
            "gradient_as_bucket_view": c.get("gradient_as_bucket_view", False),
            "fsdp_prefetch": c.get("fsdp_prefetch"), "fsdp_reshard": c.get("fsdp_reshard"),
            "family": f"{c['model']}/{c['data']}",
            "measured": {"step_mean_s": t_meas, "step_p90_s": m["step_time_s"]["p90"],
                         "samples_per_s": m.get("throughput_samples_per_s"),
                         "exposed_fraction": measured_exposed(c),
                         "exposed_vs_no_ddp_fraction": (c.get("derived") or {}).get("exposed_comm_vs_no_ddp_fraction"),
                         "buckets": len((m.get("ddp") or {}).get("bucket_sizes") or []) or None,
                         "standalone_comm_s": (m.get("ddp") or {}).get("standalone_comm_s"),
                         "nccl_s_per_step": (m.get("profile") or {}).get("nccl_s_per_step"),
                         "nccl_not_overlapped_s_per_step": (m.get("profile") or {}).get("nccl_not_overlapped_s_per_step"),
                         "model_comm_s": model_comm_per_step(comm_model, (m.get("ddp") or {}).get("bucket_sizes") or [],
                                                             world_size)},
            "pipeplan": {
                "error": err("main"),
                "step_mean_s": t_pred, "step_err": C.rel_err(t_pred, t_meas),
                "step_p90_s": C._get(main, "step_time_s.p90") if main else None,
                "exposed_fraction": predicted_exposed(main),
                "exposed_by_difference": ((t_pred - t_nc) / t_pred) if (t_pred and t_nc is not None) else None,
                "comm_busy_fraction": next((s.get("busy_fraction") for s in (C._get(main, "stages") or [])
                                            if s.get("name") == "comm"), None) if main else None,
                "bottleneck": C._get(main, "bottleneck.stage") if main else None,
                "built_step_mean_s": C._get(built, "step_time_s.mean") if built else None,
                "built_exposed_fraction": predicted_exposed(built),
                "alt_step_mean_s": C._get(alt, "step_time_s.mean") if alt else None,
                "alt_exposed_fraction": predicted_exposed(alt),
            },
        }
        pp = row["pipeplan"]
        pp["built_step_err"] = C.rel_err(pp["built_step_mean_s"], t_meas)
        pp["alt_step_err"] = C.rel_err(pp["alt_step_mean_s"], t_meas)
        me = row["measured"]["exposed_fraction"]
        pe = pp["exposed_fraction"]
        pp["exposed_abs_diff"] = (pe - me) if (pe is not None and me is not None) else None
        rows.append(row)
    # families: DDP cases over bucket_cap_mb (repeat 0, default gradient_as_bucket_view)
    fams: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        if r["mode"] == "ddp" and r["repeat"] == 0 and not r["gradient_as_bucket_view"]:
            fams.setdefault(r["family"], []).append(r)
    families = {}
    for f, rs in fams.items():
        rs = sorted(rs, key=lambda r: r["bucket_cap_mb"])
        ok = [r for r in rs if r["pipeplan"]["step_mean_s"] is not None]
        tau = (C.kendall_tau_b([r["measured"]["step_mean_s"] for r in ok], [r["pipeplan"]["step_mean_s"] for r in ok])
               if len(ok) >= 2 and len(ok) == len(rs) else None)
        okb = [r for r in rs if r["pipeplan"]["built_step_mean_s"] is not None]
        taub = (C.kendall_tau_b([r["measured"]["step_mean_s"] for r in okb],
                                [r["pipeplan"]["built_step_mean_s"] for r in okb])
                if len(okb) >= 2 and len(okb) == len(rs) else None)
        families[f] = {"cases": [r["id"] for r in rs], "caps": [r["bucket_cap_mb"] for r in rs],
                       "tau": tau, "tau_built": taub}
    ddp_rows = [r for r in rows if r["mode"] == "ddp" and r["pipeplan"]["step_err"] is not None]
    errs = [abs(r["pipeplan"]["step_err"]) for r in ddp_rows]
    all_errs = [abs(r["pipeplan"]["step_err"]) for r in rows if r["pipeplan"]["step_err"] is not None]
    exd = [abs(r["pipeplan"]["exposed_abs_diff"]) for r in ddp_rows if r["pipeplan"]["exposed_abs_diff"] is not None]
    berrs = [abs(r["pipeplan"]["built_step_err"]) for r in ddp_rows if r["pipeplan"]["built_step_err"] is not None]
    taus = [f["tau"] for f in families.values() if f["tau"] is not None]
    # the collective model against the profiler's NCCL kernel time per step, buckets as built
    comm_errs = [C.rel_err(r["measured"]["model_comm_s"], r["measured"]["nccl_s_per_step"]) for r in rows
                 if r["mode"] == "ddp" and r["measured"]["model_comm_s"] and r["measured"]["nccl_s_per_step"]]
    # noise: the same setting measured twice
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        key = json.dumps([r["model"], r["data"], r["mode"], r["bucket_cap_mb"], r["gradient_as_bucket_view"],
                          r["fsdp_prefetch"], r["fsdp_reshard"]])
        groups.setdefault(key, []).append(r)
    noise = []
    for g in groups.values():
        if len(g) >= 2:
            v = [r["measured"]["step_mean_s"] for r in g]
            mu = sum(v) / len(v)
            noise.append({"cases": [r["id"] for r in g], "step_mean_s": v, "spread": (max(v) - min(v)) / mu})
    fsdp_errs = [abs(r["pipeplan"]["step_err"]) for r in rows
                 if r["mode"] == "fsdp" and r["pipeplan"]["step_err"] is not None]
    summary = {
        "cases_ok": len(rows), "cases_total": len(cases), "ddp_cases_simulated": len(ddp_rows),
        "fsdp_cases_simulated": len(fsdp_errs), "median_abs_step_err_fsdp": C.median(fsdp_errs) if fsdp_errs else None,
        "median_abs_step_err_ddp": C.median(errs), "p90_abs_step_err_ddp": C.percentile(errs, 0.9),
        "median_abs_step_err_all": C.median(all_errs),
        "median_abs_step_err_ddp_built": C.median(berrs),
        "median_abs_exposed_diff": C.median(exd), "max_abs_exposed_diff": max(exd) if exd else None,
        "min_family_tau": min(taus) if taus else None,
        "comm_model_vs_nccl_n": len(comm_errs),
        "median_abs_comm_model_vs_nccl_err": C.median([abs(e) for e in comm_errs]) if comm_errs else None,
    }
    return {"rows": rows, "families": families, "noise": noise, "summary": summary}


# ============================================================================ markdown
def _ms(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x*1e3:.2f}"


def _pp(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x*100:.1f}%"


def render_markdown(ev: Dict[str, Any], meta: Dict[str, Any]) -> str:
    s = ev["summary"]
    mach = meta.get("machine") or {}
    L = [f"## DDP results (generated {meta['generated']})", ""]
    L.append(f"- Machine: {meta.get('world_size')} x {mach.get('gpu')} (driver {mach.get('driver')}, CUDA "
             f"{mach.get('cuda_runtime')}, NCCL {mach.get('nccl')}), {mach.get('cpu_model')}, {mach.get('cpu_cores')} "
             f"cores, torch {mach.get('torch')}, host {mach.get('hostname')}")
    L.append(f"- Ground truth: `{meta['cases_path']}` (harness mode {meta.get('mode')}, started {meta.get('started')}, "
             f"{s['cases_ok']}/{s['cases_total']} cases measured)")
    L.append(f"- Collective model: {meta.get('collective_note')}")
    if meta.get("alt_note"):
        L.append(f"- Also shown (alt): {meta['alt_note']}")
    L.append(f"- Simulator: {meta.get('pipeplan_note')}")
    L.append(f"- Command: `{meta['command']}`")
    L.append("")
    L.append("### Summary")
    L.append("")
    L.append("| metric | value |")
    L.append("|---|---|")
    L.append(f"| DDP cases simulated | {s['ddp_cases_simulated']} |")
    L.append(f"| median abs step-time error, DDP cases | {_pp(s['median_abs_step_err_ddp'])} |")
    L.append(f"| p90 abs step-time error, DDP cases | {_pp(s['p90_abs_step_err_ddp'])} |")
    L.append(f"| median abs step-time error, DDP cases, buckets as built | {_pp(s['median_abs_step_err_ddp_built'])} |")
    L.append(f"| median abs step-time error, all cases (no_sync and no-DDP too) | {_pp(s['median_abs_step_err_all'])} |")
    L.append(f"| median abs difference of the exposed-comm fraction (percentage points) | "
             f"{_pp(s['median_abs_exposed_diff'])} |")
    L.append(f"| collective model vs profiler NCCL kernel time per step (buckets as built; median abs err over "
             f"{s.get('comm_model_vs_nccl_n') or 0} DDP cases) | {_pp(s.get('median_abs_comm_model_vs_nccl_err'))} |")
    tau = s["min_family_tau"]
    L.append(f"| min Kendall tau over bucket_cap_mb families | {'n/a' if tau is None else format(tau, '+.2f')} |")
    if s.get("fsdp_cases_simulated"):
        # the FSDP cases (linear stack, each Linear a unit): exposed comm measured against the no-DDP case
        L.append(f"| median abs step-time error, FSDP cases ({s['fsdp_cases_simulated']}) | "
                 f"{_pp(s.get('median_abs_step_err_fsdp'))} |")
    L.append("")
    L.append("### Per case")
    L.append("")
    L.append("Step times in ms (mean over the window). Exposed comm: measured = (DDP step - no_sync step) / DDP step; "
             "predicted = pipeplan's `gpu.exposed_comm_fraction` + `gpu.idle_waiting_for_ranks_fraction`. NCCL: profiler, rank 0, per step (not overlapped "
             "with compute). Model comm: the collective model's time for DDP's buckets as built, per step. "
             "Standalone: sum over DDP's buckets of the all-reduce timed alone with torch.distributed.")
    L.append("")
    L.append("| case | buckets | measured | pipeplan | err | as built | err | exposed meas | exposed pred | "
             "NCCL (not overlapped) | model comm | standalone comm | alt | bottleneck pred |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in ev["rows"]:
        m, p = r["measured"], r["pipeplan"]
        if p.get("error"):
            L.append(f"| `{r['id']}` | {m['buckets'] or ''} | {_ms(m['step_mean_s'])} | error: {p['error'][:60]} "
                     f"| | | | | | | | | | |")
            continue
        nccl = ("n/a" if m["nccl_s_per_step"] is None else
                f"{_ms(m['nccl_s_per_step'])} ({_ms(m['nccl_not_overlapped_s_per_step'])})")
        L.append(f"| `{r['id']}` | {m['buckets'] or ''} | {_ms(m['step_mean_s'])} | {_ms(p['step_mean_s'])} | "
                 f"{C._pct(p['step_err'])} | {_ms(p['built_step_mean_s'])} | {C._pct(p['built_step_err'])} | "
                 f"{_pp(m['exposed_fraction'])} | {_pp(p['exposed_fraction'])} | {nccl} | "
                 f"{_ms(m.get('model_comm_s'))} | {_ms(m['standalone_comm_s'])} | {_ms(p['alt_step_mean_s'])} | {p['bottleneck'] or 'n/a'} |")
    L.append("")
    L.append("### bucket_cap_mb families (Kendall tau-b of the step-time ranking)")
    L.append("")
    L.append("| family | caps | measured step ms in cap order | tau pipeplan | tau as built |")
    L.append("|---|---|---|---|---|")
    rowmap = {r["id"]: r for r in ev["rows"]}
    for f, e in ev["families"].items():
        vals = ", ".join(_ms(rowmap[i]["measured"]["step_mean_s"]) for i in e["cases"])
        t1 = "n/a" if e["tau"] is None else f"{e['tau']:+.2f}"
        t2 = "n/a" if e["tau_built"] is None else f"{e['tau_built']:+.2f}"
        L.append(f"| {f} | {', '.join(f'{c:g}' for c in e['caps'])} | {vals} | {t1} | {t2} |")
    L.append("")
    L.append("### Noise of the ground truth")
    L.append("")
    L += C.noise_table(ev["noise"], "step_mean_s", "step ms", _ms, _pp)
    L.append("")
    comps = meta.get("components") or {}
    L.append("### Components (measured alone, same run)")
    L.append("")
    L.append("| component | value |")
    L.append("|---|---|")
    for name, mc in (comps.get("models") or {}).items():
        sp = step_split(mc)
        L.append(f"| {name}: gradients | {mc['gradient_bytes']/1e6:.1f} MB in {mc['parameter_tensors']} tensors |")
        L.append(f"| {name}: forward / backward+optimizer without DDP ({sp['source']}) | "
                 f"{_ms(sp['forward_s'])} / {_ms(sp['backward_s'])} ms, host {_ms(sp['host_s'])} ms |")
    ar = comps.get("allreduce") or {}
    fit = meta.get("fit")
    if ar.get("points"):
        pts = ar["points"]
        busbw = pts[-1]["bytes"] / pts[-1]["time_s"] * bus_factor(int(meta.get("world_size") or 2))
        L.append(f"| all_reduce standalone | {len(pts)} sizes, {pts[0]['bytes']/1024:.0f} KiB: {pts[0]['time_s']*1e6:.1f} us, "
                 f"{pts[-1]['bytes']/MIB:.0f} MiB: {pts[-1]['time_s']*1e3:.3f} ms (busbw {busbw/1e9:.1f} GB/s) |")
    if fit:
        L.append(f"| all_reduce fit (latency + bytes x 2(n-1)/n / busbw) | {fit['latency_s']*1e6:.1f} us + busbw "
                 f"{fit['bus_bytes_per_s']/1e9:.1f} GB/s, rel_rmse {fit['rel_rmse']:.3f} |")
    dh = comps.get("ddp_host") or {}
    if dh.get("error"):
        L.append(f"| DDP host cost (small-layer stacks) | error: {dh['error'][:80]} |")
    elif dh.get("points"):
        pts = ", ".join(f"L{q['layers']} {q['mode']}{'' if q.get('bucket_cap_mb') is None else ' cap %g' % q['bucket_cap_mb']}"
                        f" ({q['buckets']} buckets) {q['step_s']*1e3:.2f} ms" for q in dh["points"])
        f = dh.get("fit")
        fit_s = (f"; fit {f['s_per_step']*1e3:.3f} ms/step + {f['s_per_bucket']*1e6:.1f} us/bucket + "
                 f"{f['s_per_parameter']*1e6:.2f} us/tensor (rmse {f['rmse_s']*1e6:.0f} us)") if f else "; no fit"
        L.append(f"| DDP host cost (small-layer stacks, step = host time) | {pts}{fit_s} |")
    for kind, lc in (comps.get("loader") or {}).items():
        iw = lc.get("in_worker") or {}
        L.append(f"| loader {kind}: `__getitem__` alone / in one worker | {lc['load']['mean']*1e3:.3f} / "
                 f"{(iw.get('getitem_wall_s') or float('nan'))*1e3:.3f} ms |")
    L.append("")
    return "\n".join(L)


def update_markdown(path: str, generated: str) -> None:
    C.update_markdown(path, generated, BEGIN, END, "DDP validation")


# ============================================================================ main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", required=True, help="ddp_harness.py output (ddp_cases.json)")
    ap.add_argument("--profile", default=None, help="profile of the same device call (pipeplan-calibrate "
                                                    "--only nccl,compute): merged over --base-profile")
    ap.add_argument("--base-profile", default=os.path.join(HERE, "..", "..", "scenarios", "profiles", "h200-2026-11-30-run10.json"))
    ap.add_argument("--collective", choices=["auto", "profile", "fit"], default="auto",
                    help="the all-reduce model of the main prediction (auto: profile when it measured nccl, else fit)")
    ap.add_argument("--fit-min-bytes", type=float, default=0.0, help="fit only standalone points at least this big")
    ap.add_argument("--pipeplan", default=C.REPO_PIPEPLAN)
    ap.add_argument("--out-dir", default=None, help="scenarios/, profiles and report.json (default: beside --cases)")
    ap.add_argument("--md", default=None, help="markdown file whose generated section is replaced")
    ap.add_argument("--no-simulate", action="store_true", help="write scenarios and the measured side only")
    ap.add_argument("--host-from", choices=["isolated", "alone-windows"], default="alone-windows",
                    help="the loop's host time a step: the slowest rank's loop_beside_pin_parts alone windows, every "
                         "rank running the loop as the cases do (default since validation run 22; calls without "
                         "them fall back), or the model component's isolated one (launches behind a spin kernel)")
    ap.add_argument("--min-steps", type=int, default=MIN_SIM_STEPS)
    ap.add_argument("--jobs", type=int, default=max(1, min(8, os.cpu_count() or 1)))
    ap.add_argument("--timeout-s", type=float, default=300)
    a = ap.parse_args(argv)
    simulate = not a.no_simulate
    if simulate:   # before anything is written
        C.exit_without_pipeplan("ddp_convert", a.pipeplan, ", or --no-simulate")

    try:
        doc = load_json(a.cases)
    except (OSError, json.JSONDecodeError) as e:
        print(f"ddp_convert: cannot read {a.cases}: {e}", file=sys.stderr)
        return 2
    if doc.get("schema") != "pipeplan-ddp-cases/1":
        print(f"ddp_convert: {a.cases} is not a ddp_harness.py output (schema {doc.get('schema')!r})", file=sys.stderr)
        return 2
    ws = int(doc["world_size"])
    cases = doc.get("cases") or []
    out_dir = a.out_dir or os.path.join(os.path.dirname(os.path.abspath(a.cases)),
                                        os.path.splitext(os.path.basename(a.cases))[0] + "-report")
    scen_dir = os.path.join(out_dir, "scenarios")
    os.makedirs(scen_dir, exist_ok=True)
    base = load_json(a.base_profile)

    # the collective models
    profiles: Dict[str, str] = {}
    notes: Dict[str, str] = {}
    ar = (doc.get("components") or {}).get("allreduce") or {}
    fit = fit_all_reduce(ar.get("points") or [], ws, a.fit_min_bytes) if ar.get("points") else None
    if fit:
        p = os.path.join(out_dir, "profile-fit.json")
        note = (f"ddp validation: nccl.all_reduce fitted to ddp_harness.py's standalone all_reduce timings "
                f"({fit['n_points']} sizes, {ws} ranks): latency {fit['latency_s']*1e6:.1f} us, busbw "
                f"{fit['bus_bytes_per_s']/1e9:.1f} GB/s, rel_rmse {fit['rel_rmse']:.3f}")
        dump_json(profile_with_fit(base, fit, ar["points"], ws, note), p)
        profiles["fit"], notes["fit"] = p, f"fit to the harness's standalone all_reduce timings (`{os.path.relpath(p)}`): " + note.split(": ", 1)[1]
    if a.profile:
        ov = load_json(a.profile)
        nc = ov.get("nccl") or {}
        if nc.get("measured") and nc.get("all_reduce"):
            p = os.path.join(out_dir, "profile-merged.json")
            dump_json(merge_profile(base, ov), p)
            arm = nc["all_reduce"]
            profiles["profile"] = p
            notes["profile"] = (f"`{os.path.relpath(a.profile)}` (pipeplan-calibrate, {nc.get('gpus')} GPUs: latency "
                                f"{arm.get('latency_s', 0)*1e6:.1f} us, busbw {arm.get('bus_bytes_per_s', 0)/1e9:.1f} GB/s) "
                                f"merged over `{os.path.relpath(a.base_profile)}`")
            if int(nc.get("gpus") or 0) != ws:
                notes["profile"] += f" (WARNING: calibrated on {nc.get('gpus')} GPUs, the cases ran on {ws})"
        else:
            print(f"ddp_convert: {a.profile} has no measured nccl section; using the fit", file=sys.stderr)
    main_src = a.collective if a.collective != "auto" else ("profile" if "profile" in profiles else "fit")
    if main_src not in profiles:
        print(f"ddp_convert: no collective model '{main_src}' (no measured nccl profile / no all_reduce points)",
              file=sys.stderr)
        return 2
    alt_src = next((k for k in profiles if k != main_src), None)

    jobs = []
    for c in cases:
        if c.get("status") != "ok":
            continue
        variants = {"main": (scenario_for(c, doc, a.min_steps, "knob", a.host_from), profiles[main_src])}
        if c["mode"] == "ddp":
            variants["nocomm"] = (no_comm_variant(variants["main"][0]), profiles[main_src])
            if (c["measured"].get("ddp") or {}).get("bucket_sizes"):
                variants["built"] = (scenario_for(c, doc, a.min_steps, "built", a.host_from), profiles[main_src])
            if alt_src:
                variants["alt"] = (variants["main"][0], profiles[alt_src])
        for v, (scen, prof) in variants.items():
            sp = os.path.join(scen_dir, f"{c['id']}.json" if v in ("main", "alt") else f"{c['id']}.{v}.json")
            if v != "alt":
                with open(sp, "w") as f:
                    json.dump(scen, f, indent=2)
                    f.write("\n")
            jobs.append((c["id"], v, sp, prof))
    preds: Dict[str, Dict[str, Any]] = {}
    if simulate:
        with cf.ThreadPoolExecutor(max(1, a.jobs)) as ex:
            futs = {ex.submit(C.run_pipeplan, a.pipeplan, sp, prof, a.timeout_s): (cid, v) for cid, v, sp, prof in jobs}
            for fu in cf.as_completed(futs):
                cid, v = futs[fu]
                preds.setdefault(cid, {})[v] = fu.result()
                if "error" in preds[cid][v]:
                    print(f"ddp_convert: {cid} [{v}]: {preds[cid][v]['error']}", file=sys.stderr)
    comm_model = None
    if main_src == "fit":
        comm_model = fit
    elif a.profile:
        comm_model = (load_json(a.profile).get("nccl") or {}).get("all_reduce")
    ev = evaluate(cases, preds, comm_model, ws)
    cmd = "python3 " + " ".join(shlex.quote(x) for x in ([sys.argv[0]] + (argv if argv is not None else sys.argv[1:])))
    meta = {"generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cases_path": os.path.relpath(a.cases), "machine": doc.get("machine"), "world_size": ws,
            "mode": doc.get("mode"), "started": doc.get("started"),
            "collective_note": notes.get(main_src), "alt_note": notes.get(alt_src) if alt_src else None,
            "pipeplan_note": f"`{a.pipeplan}`" if simulate else "not run (--no-simulate)",
            "command": cmd, "components": doc.get("components"), "fit": fit}
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump({"meta": meta, **ev}, f, indent=1, default=lambda o: None)
    md = render_markdown(ev, meta)
    if a.md:
        update_markdown(a.md, md)
    else:
        print(md)
    s = ev["summary"]
    print(f"ddp_convert: {s['cases_ok']} cases; DDP median |step err| {_pp(s['median_abs_step_err_ddp'])}; "
          f"wrote {out_dir}/report.json" + (f" and {a.md}" if a.md else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
