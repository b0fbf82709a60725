#!/usr/bin/env python3
"""Turn the harness's measured cases into pipeplan scenarios, simulate them, score the predictions.

Runs on the development machine (plain Python 3, no torch):

    python3 calibrate/validation/convert.py --cases results/cases.json --profile results/profile.json \
        [--pipeplan build/cli/pipeplan] [--out-dir results/run-DATE] [--md docs/validation.md]

For every case with status "ok" it writes OUT_DIR/scenarios/<case id>.json (docs/scenario.md
keys only, filled from the case's knobs and its separately measured component costs), runs
`pipeplan simulate SCENARIO --profile PROFILE --format json`, and compares the prediction with
the measurement. It writes OUT_DIR/report.json and replaces the generated section of the
markdown file (between the GENERATED markers) with the table. Next to pipeplan's error it
shows the by-hand estimate's (the slower of worker capacity and GPU capacity), so the table
shows what the simulation adds. With --no-simulate (no binary yet) only the measured side and
the by-hand estimate are reported.

Rules (also in docs/validation.md):
- measured bottleneck: G = synthetic GPU step time (component), T = measured mean step time,
  W = mean wait in next(iterator). G/T >= 0.9 -> "compute"; else W >= (T-G)/2 -> "input"
  (the loader: storage, decode, collate, IPC, pin thread); else "host" (the training loop's own
  host time and the copies it issues or waits for).
- predicted bottleneck: bottleneck.stage mapped to the same three classes by name
  (stage_class()).
- by-hand estimate (samples/s): num_workers > 0: min(num_workers / load_s, batch / step_s);
  num_workers == 0: batch / (batch * load_s + step_s).
- the prediction is the mean over seeds 1..--seeds (default 8) of the simulated throughput, step time mean and
  p90 (combine_replications): a measured case is one draw of a random process over a finite window.
- errors are signed (pred - meas) / meas; summaries use their absolute values; percentiles
  interpolate linearly between ranks; Kendall tau is tau-b (ties allowed), over each family's
  settings (repeat 0), between measured and predicted throughput.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import lzma
import json
import math
import os
import shlex
import subprocess
import tarfile
import sys
import statistics
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeplan_probe import cold_read_latency_s as _cold_wait_beyond_bytes_s  # noqa: E402  (torch-free)
from pipeplan_probe import memory_map_needed, memory_map_wait_from_rate  # noqa: E402  (one rule and formula for both)
from pipeplan_probe import fd_handover_wait_s as _one_window_fd_wait_s  # noqa: E402  (the user helper's reading, the same)
from sequence_fit import component_fit, fitted_step_s  # noqa: E402  (the sequence step's fit, refitted)

TARGETS = {
    "median_abs_throughput_err": 0.05,
    "p90_abs_throughput_err": 0.12,
    "p90_abs_step_p90_err": 0.15,
    "min_family_tau": 0.9,
    "bottleneck_agreement": 0.90,
}
MIN_SIM_STEPS = 200
# the options of the generated table's command (--transport measured, the rest convert's defaults), for the
# diagnostics that predict a case as the table does (table_case_inputs)
TABLE_OPTIONS = argparse.Namespace(min_steps=MIN_SIM_STEPS, gpu_duty="measured", load_curve="scaling",
                                   transport="measured", wander="probe", gpu_duty_time_constant="rest-curve",
                                   transport_clock="cpu", host_from="probe-bracket", cold_latency="load-cold",
                                   cold_probe="after", unpinned_window="case", probe_pin_window="whole",
                                   launch_tail="loop", unpinned_next="window", memory_map_wait="pin-parts",
                                   pin_thread_wait="probes-fd", transport_busy="probes", main_next="probes",
                                   copy_call="probe", receive_gil_s="0.00048", back_to_back="measured",
                                   new_shape_cost="call", pin_cycle="off")
# A case whose workers all slowed down together (timeline_analysis.common_share above this) ran in a
# machine-wide slow spell or against a shared resource (the disk of a cold case, memory bandwidth):
# run 9: 0.76-0.83 in four cases, -0.24 to +0.33 in all others. A spell, no component measured before
# the case can foresee. Only a diagnostic row leaves these cases out; every target is scored over all.
MACHINE_WIDE_SPELL_SHARE = 0.5
BEGIN = "<!-- BEGIN GENERATED: convert.py replaces everything down to the END marker -->"
END = "<!-- END GENERATED -->"


# ============================================================================ pure statistics
def percentile(xs: Sequence[float], q: float) -> Optional[float]:
    """q in [0, 1]; linear interpolation between closest ranks (numpy 'linear')."""
    v = sorted(x for x in xs if x is not None and math.isfinite(x))
    if not v:
        return None
    if len(v) == 1:
        return float(v[0])
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return float(v[lo] + (v[hi] - v[lo]) * (pos - lo))


def median(xs: Sequence[float]) -> Optional[float]:
    return percentile(xs, 0.5)


def rel_err(pred: Optional[float], meas: Optional[float]) -> Optional[float]:
    if pred is None or meas is None or not math.isfinite(pred) or not math.isfinite(meas) or meas == 0:
        return None
    return (pred - meas) / meas


def _pair_counts(x: Sequence[float], y: Sequence[float], rel_noise: float = 0.0) -> Tuple[int, int, int, int]:
    """Concordant, discordant, tied-in-x-only and tied-in-y-only pairs; x values closer than
    rel_noise (|a - b| / their mean) count as tied."""
    if len(x) != len(y):
        raise ValueError("kendall tau: lengths differ")
    n = len(x)
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            mu = (abs(x[i]) + abs(x[j])) / 2
            close = rel_noise > 0 and mu > 0 and abs(x[i] - x[j]) / mu < rel_noise
            dx = 0 if close else (x[i] > x[j]) - (x[i] < x[j])
            dy = (y[i] > y[j]) - (y[i] < y[j])
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif dx == dy:
                conc += 1
            else:
                disc += 1
    return conc, disc, tx, ty


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> Optional[float]:
    """Kendall's tau-b; None when undefined (fewer than 2 points, or all ties on one side)."""
    conc, disc, tx, ty = _pair_counts(x, y)
    if conc + disc == 0 and tx > 0 and ty > 0:
        return None            # never two points that both sides order
    if conc + disc + tx == 0 and conc + disc + ty == 0:
        return None            # both sides constant
    if conc + disc + tx == 0 or conc + disc + ty == 0:
        return 0.0             # one side constant: it carries no ranking at all
    return (conc - disc) / math.sqrt((conc + disc + tx) * (conc + disc + ty))


def kendall_tau_b_within_noise(x: Sequence[float], y: Sequence[float], rel_noise: float) -> Optional[float]:
    """Kendall's tau over the pairs the ground truth orders: measured pairs closer than rel_noise (|a - b| / mean)
    are left out, since the ground truth cannot order two settings whose difference is within the spread of one
    setting measured twice, so such pairs neither count for nor against a model. Over the rest, tau-b's form with
    no measured ties: (C - D) / sqrt((C + D) (C + D + T)), T the pairs the model ties. Until the twenty-fourth
    session these pairs stayed in tau-b's denominator as measured ties, which held a model that orders every
    orderable pair right below 1 (0.71-0.82 in three-setting families). A diagnostic beside the raw tau (the target
    stays the raw one). None when no measured pair is ordered."""
    conc, disc, _tx, ty = _pair_counts(x, y, rel_noise)
    if conc + disc + ty == 0:
        return None            # no measured pair is ordered beyond the noise
    if conc + disc == 0:
        return 0.0             # the model ties every pair the ground truth orders
    return (conc - disc) / math.sqrt((conc + disc) * (conc + disc + ty))


def call_tag(case_id: str) -> str:
    """The device call's tag of a case id ('r2:05-...' -> 'r2'; '' for a single call)."""
    head, sep, _ = case_id.partition(":")
    return head if sep else ""


def per_call_summary(rows: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The pooled report's figures per device call (the cases' tag, r1, r2, ...), in call order: cases, median
    and p90 of |throughput error|, its signed median (a call leaning one way points at an input measured in that
    call), median and p90 of |p90 step error|, bottleneck agreement. Cases without a prediction are left out."""
    by_tag: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        p = r.get("pipeplan") or {}
        if p.get("err") is None:
            continue
        by_tag.setdefault(call_tag(r["id"]), []).append(r)
    out = []
    for tag in sorted(by_tag, key=lambda t: (len(t), t)):
        rs = by_tag[tag]
        errs = [r["pipeplan"]["err"] for r in rs]
        serrs = [abs(r["pipeplan"]["step_p90_err"]) for r in rs if r["pipeplan"].get("step_p90_err") is not None]
        out.append({"tag": tag, "n": len(rs), "median_abs_throughput_err": median([abs(e) for e in errs]),
                    "p90_abs_throughput_err": percentile([abs(e) for e in errs], 0.9),
                    "median_throughput_err": median(errs),
                    "median_abs_step_p90_err": median(serrs) if serrs else None,
                    "p90_abs_step_p90_err": percentile(serrs, 0.9) if serrs else None,
                    "bottleneck_agreement": sum(1 for r in rs if r["pipeplan"].get("bottleneck_ok")) / len(rs)})
    return out


# ============================================================================ classification
STAGE_CLASSES = [
    # (class, substrings of the stage name, checked in this order)
    ("compute", ("compute", "gpu", "comm", "nccl", "all_reduce", "allreduce", "forward", "backward")),
    ("host", ("h2d", "copy", "transfer", "main", "host", "loop", "train", "launch", "sync")),
    ("input", ("storage", "disk", "read", "decode", "load", "augment", "worker", "collate", "ipc",
               "shm", "pin", "dataloader", "input")),
]


def stage_class(stage: Optional[str]) -> Optional[str]:
    """Map a simulator stage name to compute / host / input (None if unknown)."""
    if not stage:
        return None
    s = stage.lower()
    # the pin thread is loader side even though its name may contain "copy" or "host"
    if "pin" in s or "inline" in s or "load" in s:
        return "input"        # e.g. "main_inline_load": the main thread loading (num_workers=0)
    for cls, keys in STAGE_CLASSES:
        if any(k in s for k in keys):
            return cls
    return None


def measured_bottleneck(step_gpu_s: float, step_mean_s: float, data_wait_mean_s: float) -> Tuple[str, float]:
    """Return (class, gpu busy fraction G/T) by the documented rule."""
    if not step_mean_s or step_mean_s <= 0:
        return "unknown", float("nan")
    busy = step_gpu_s / step_mean_s
    if busy >= 0.9:
        return "compute", busy
    idle = step_mean_s - step_gpu_s
    if data_wait_mean_s >= idle / 2:
        return "input", busy
    return "host", busy


def batches_step_gpu_s(case: Dict[str, Any]) -> Optional[float]:
    """Pure: the GPU step of the batches a variable-length sequence case ran (timeline's padded_length over its
    measured window), mean of the sequence_step_shapes fit at batch_size x each padded length, scaled by the step
    component's sustained over isolated GPU time (the fit is timed isolated). The step component times one batch
    (sample_batch, padded to its own longest): run 65's b128 batch was 40% longer than the case's mean batch, so its
    GPU time called the case compute-bound at 1.03 busy where its batches kept the GPU 0.73 busy (validation-runs.md
    run 65, finding 3). None for a case without a timeline's lengths or the fit: the step component's time stands."""
    comp, m = case.get("components") or {}, case.get("measured") or {}
    tl = m.get("timeline") or {}
    shapes = comp.get("sequence_step_shapes") or {}
    lengths = (tl.get("main") or {}).get("padded_length") or []
    if not lengths or not shapes:
        return None
    fit = component_fit(shapes)
    if fit.get("per_token_s") is None:
        return None
    skip = int(tl.get("skip") or m.get("skip") or 0)
    window = [int(x) for x in lengths[skip:] if x]
    rows = int((case.get("knobs") or {}).get("batch_size") or 0)
    if not window or rows <= 0:
        return None
    step = comp.get("step") or {}
    isolated = float(((step.get("gpu_s") or {}).get("mean")) or 0.0)
    sustained_over_isolated = step_time(step)[0] / isolated if isolated > 0 and step else 1.0
    return sustained_over_isolated * statistics.fmean(fitted_step_s(fit, rows, x) for x in window)


def step_time(step: Dict[str, Any]) -> Tuple[float, float]:
    """(step_s, cv) of a step component: the harness's chosen step_s (sustained GPU time when
    the host is well ahead, else the isolated GPU time); older files: the isolated GPU time."""
    if step.get("step_s") is not None:
        return float(step["step_s"]), float(step.get("step_cv") or 0.0)
    return float(step["gpu_s"]["mean"]), float(step["gpu_s"].get("cv") or 0.0)


def tau_family_counts(taus: Sequence[Optional[float]], taus_within_noise: Sequence[float],
                      target: float = 0.9) -> Dict[str, int]:
    """How the families fare against the tau target: all of them (n), those at or above it raw (raw_ok), those with
    a pair ordered beyond the call's noise (rankable: a tau within noise exists) and of those the ones at or above
    it over the pairs the ground truth orders, the closer ones left out (rankable_ok)."""
    return {"n": len(taus), "raw_ok": sum(1 for t in taus if t is not None and t >= target - 1e-12),
            "rankable": len(taus_within_noise),
            "rankable_ok": sum(1 for t in taus_within_noise if t >= target - 1e-12)}


def launch_tail_s(comp: Dict[str, Any], step: Dict[str, Any]) -> float:
    """The GPU time left when a host-bound step's last launch returns (training.launch_tail_s): in a plain synthetic
    loop (loss.item() each step) timed alone, its wall a step less its launches in the same steps. From the host
    probes right before and after the case where the harness took them (host-heavy cases, since run 20's plan),
    else host_under_load's alone and alone-again windows (ResNet-50 steps). Only windows whose launches outlast the
    isolated GPU step count: in a GPU-bound window the difference is the GPU's own remaining work, which the
    model's GPU step already holds. 0 without such a window. The step component's loop and launches are timed in
    different loops minutes apart, too far to take a millisecond's difference (run 25: -9 to +6 ms).
    Run 25: the tail falls as the launches slow (the GPU drains what backward queued while the optimizer's Python
    runs): 3-5 ms at 12-14 ms of launches, 1.5-2 at 16-18, 0.1-0.4 beyond 25; the cases' own sync waits
    0.2-1.5 ms against their probes' 0.2-1.5."""
    gpu = positive_mean(step.get("gpu_s"))
    if gpu is None:
        return 0.0
    probes = [comp.get(n) or {} for n in ("host_probe", "host_probe_after")]
    windows = [(positive_mean(p.get("host_s")), positive_mean(p.get("loop_step_s"))) for p in probes]
    if not any(h is not None for h, _ in windows):
        hul = comp.get("host_under_load") or {}
        windows = [] if "error" in hul else [
            (positive_mean(hul.get(h)), positive_mean(hul.get(w)))
            for h, w in (("alone_host_s", "alone_loop_step_s"), ("alone_after_host_s", "alone_after_loop_step_s"))]
    tails = [max(0.0, loop - host) for host, loop in windows if host is not None and loop is not None and host > gpu]
    return sum(tails) / len(tails) if tails else 0.0


def _iso_sus(step: Dict[str, Any]) -> Tuple[float, float]:
    return (float((step.get("gpu_s") or {}).get("mean") or 0.0),
            float((step.get("sustained_interval_s") or {}).get("mean") or 0.0))


def excess_between(points: Sequence[Tuple[float, float]], lo: float, hi: float) -> Optional[List[Tuple[float, float]]]:
    """(duty, value) points strictly inside (0, 1) as (duty, (value - lo) / (hi - lo)), sorted: a duty
    curve's shape between its rested (lo) and back-to-back (hi) ends. None when none is inside."""
    pts = sorted((d, (v - lo) / (hi - lo)) for d, v in points if 0.0 < d < 1.0)
    return pts or None


def step_key(case: Dict[str, Any]) -> str:
    """The harness's key of a case's step component: model/data kind/batch size."""
    k = case.get("knobs") or {}
    return f"{k.get('step')}/{k.get('kind')}/b{k.get('batch_size')}"


def duty_excess(components: Dict[str, Any], key: Optional[str] = None) -> Optional[List[Tuple[float, float]]]:
    """The harness's GPU duty curve as (duty, excess) pairs, excess = (step at that duty - isolated) /
    (sustained - isolated) of the same step component: the step model `key`'s own (gpu_duty_curves, harness
    since run 14: the shape depends on the step's length, run 13 finding 3), else the call's first
    (gpu_duty_curve, since run 13), carried to the call's other step sizes (run 12: every size from 5 to
    60 ms ran 14-16% slower back to back). None without a usable curve."""
    own = ((components or {}).get("gpu_duty_curves") or {}).get(key or "") or {}
    dc = own if own.get("points") and not own.get("error") else ((components or {}).get("gpu_duty_curve") or {})
    step = ((components or {}).get("step") or {}).get(dc.get("step") or "") or {}
    iso, sus = _iso_sus(step)
    if dc.get("error") or not dc.get("points") or iso <= 0 or sus <= iso:
        return None
    return excess_between([(float(q.get("duty") or 0.0), float(q["step_s"])) for q in dc["points"] if q.get("step_s")],
                          iso, sus)


def profile_duty_excess(profile: Optional[Dict[str, Any]]) -> Optional[List[Tuple[float, float]]]:
    """calibrate's compute.step_vs_gpu_duty (relative to a rested GEMM step) as (duty, excess) pairs
    between its duty-0 and duty-1 ends, the same form as duty_excess: the machine's shape where the
    harness took no gpu_duty_curve. None without a usable shape."""
    pts = sorted((float(q["duty"]), float(q["relative_time"]))
                 for q in ((profile or {}).get("compute") or {}).get("step_vs_gpu_duty") or [])
    if len(pts) < 2 or pts[0][0] > 0.0 or pts[-1][1] <= pts[0][1]:
        return None
    return excess_between(pts[1:-1], pts[0][1], pts[-1][1])  # its last point is the back-to-back end


def _step_curve(call_components: Dict[str, Any], profile: Optional[Dict[str, Any]], key: str, curve: Dict[str, Any]
                ) -> Optional[Tuple[List[Dict[str, float]], float, float, Optional[List[Tuple[float, float]]]]]:
    """A harness curve of step model `key` (a rest curve or a burst ramp) with that step's isolated and sustained
    times and its duty shape, as rest_curves_time_constant takes it; None when the curve failed or is empty, or
    the step's sustained interval is not GPU time."""
    step = ((call_components or {}).get("step") or {}).get(key) or {}
    iso, sus = _iso_sus(step)
    if curve.get("error") or not curve.get("points") or not step.get("sustained_is_gpu_time"):
        return None
    return curve["points"], iso, sus, duty_excess(call_components, key) or profile_duty_excess(profile)


def call_rest_curve(call_components: Dict[str, Any], profile: Optional[Dict[str, Any]]
                    ) -> Optional[Tuple[List[Dict[str, float]], float, float, Optional[List[Tuple[float, float]]]]]:
    """A call's gpu_rest_curve (harness since run 11, on its first step model), as _step_curve; None without one."""
    rc = (call_components or {}).get("gpu_rest_curve") or {}
    return _step_curve(call_components, profile, rc.get("step") or "", rc)


# The pipeplan binary README's first command builds, found from this file rather than the working folder, so the
# diagnostics run from any folder.
REPO_PIPEPLAN = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "cli",
                                              "pipeplan"))


def pipeplan_problem(path: str) -> Optional[str]:
    """None when `path` is an executable file, else the one line a script prints before exit code 2."""
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return None
    return f"--pipeplan {path}: not an executable file; expected a built pipeplan (README's first command builds " \
           f"{REPO_PIPEPLAN})"


def exit_without_pipeplan(prog: str, path: str, hint: str = "") -> None:
    """A script that is about to simulate: one line ("prog: why" and `hint`) and exit code 2 when `path` is no
    pipeplan binary, before it reads or writes anything."""
    why = pipeplan_problem(path)
    if why:
        print(f"{prog}: {why}{hint}", file=sys.stderr)
        raise SystemExit(2)


STORED_JSON_SUFFIXES = ("", ".gz", ".xz")


def stored_json_path(path: str) -> Optional[str]:
    """The file a JSON document is kept in: `path` itself, else its gzip or xz copy (older calls' cases.json are kept
    compressed, xz since the fiftieth session: the working tree that travels to the device is limited to 64 MiB);
    None where none is there."""
    for suffix in STORED_JSON_SUFFIXES:
        if os.path.exists(path + suffix):
            return path + suffix
    return None


# A results folder's small side files (env.txt, probe.log, run_meta.json, probe_fragment.json...) are kept in one
# archive per call since the eighty-seventh session: each file took a 4 KiB block of the 64 MiB that travels to the
# device (903 files, 4.0 MB on disk, 1.2 MB as one archive a call). ingest_call.NOTES_PACKED names them.
NOTES_ARCHIVE = "notes.tar.xz"


def read_notes_member(path: str) -> Optional[bytes]:
    """The bytes of `path` where it is a plain file, else of the member of that name in its folder's notes.tar.xz;
    None where neither holds it."""
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return f.read()
    archive = os.path.join(os.path.dirname(path) or ".", NOTES_ARCHIVE)
    if not os.path.isfile(archive):
        return None
    with tarfile.open(archive, "r:xz") as t:
        try:
            member = t.extractfile(os.path.basename(path))
        except KeyError:
            return None
        return member.read() if member is not None else None


def stored_file_exists(path: str) -> bool:
    """Whether `path` is there as a plain file, a .gz / .xz copy or a member of its folder's notes.tar.xz."""
    return stored_json_path(path) is not None or read_notes_member(path) is not None


def read_json(path: str) -> Any:
    """A JSON file, or where `path` is absent its .gz or .xz copy (stored_json_path) or its folder's notes.tar.xz
    member."""
    if stored_json_path(path) is None:       # neither it nor a compressed copy: its folder's notes archive
        data = read_notes_member(path)
        if data is not None:
            return json.loads(data.decode())
    path = stored_json_path(path) or path
    if path.endswith(".gz"):  # also named as such on the command line
        with gzip.open(path, "rt") as f:
            return json.load(f)
    if path.endswith(".xz"):
        with lzma.open(path, "rt") as f:
            return json.load(f)
    with open(path) as f:
        return json.load(f)


def plain_json_path(path: Optional[str], doc: Any, copy_path: str) -> Optional[str]:
    """`path` where it is a plain JSON file; where only its .gz / .xz copy is stored (results' profile.json is kept as
    xz since the eighty-sixth session), `doc` (its content) written to copy_path, which is returned: pipeplan itself
    reads plain JSON only. None for None."""
    if path is None or os.path.isfile(path) and not path.endswith((".gz", ".xz")):
        return path
    with open(copy_path, "w") as f:
        json.dump(doc, f, indent=1)
    return copy_path


def read_stored_text(path: str) -> Optional[str]:
    """A text file (a call's calibrate.log or harness.log), or where `path` is absent its xz copy (ingest_call keeps
    the logs so since the seventy-sixth session) or its folder's notes.tar.xz member (env.txt, probe.log); None where
    none is there."""
    if os.path.isfile(path):
        with open(path, errors="replace") as f:
            return f.read()
    if os.path.isfile(path + ".xz"):
        with lzma.open(path + ".xz", "rt", errors="replace") as f:
            return f.read()
    data = read_notes_member(path)
    return None if data is None else data.decode(errors="replace")


# The cold read model's what-if choices: convert's option, its default (the simulator's), the scenario key it sets
COLD_READ_CHOICES = (("worker_reads", "per-sample", "worker_reads"),
                     ("device_share", "at-start", "device_share"),
                     ("device_bandwidth", "fio", "device_bandwidth_from"),
                     ("reader_share", "back-to-back", "reader_share_from"))


def table_call_dirs(calls_path: str) -> List[str]:
    """The result folders of the calls a list like table_calls.txt names (one folder name per line, under
    calibrate/validation/results/; blank lines and # comments skipped), in its order. OSError where the list cannot
    be read."""
    with open(calls_path) as f:
        names = [ln.split()[0] for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
    results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    return [os.path.join(results, n) for n in names]


def read_call_json(results_dir: str, name: str) -> Any:
    """A device call's cases.json (or its .gz) or profile.json for the diagnostics; where it is missing or not JSON,
    one line on stderr naming the file and what was expected, and exit code 2 (a call without calibration, like run
    24's settle check, has no profile.json)."""
    path = os.path.join(results_dir, name)
    if stored_json_path(path) is None:
        print(f"{path}: not found (expected a device call's result folder holding cases.json and profile.json)",
              file=sys.stderr)
        sys.exit(2)
    try:
        return read_json(path)
    except (OSError, ValueError) as e:
        print(f"{path}: {e.__class__.__name__}: {e} (expected JSON)", file=sys.stderr)
        sys.exit(2)


def read_table_report(path: str, tool: str) -> Optional[Dict[str, Any]]:
    """The generated table's report (table.sh writes it) for the diagnostics that read it; where it is missing, not
    JSON or has no rows, one line on stderr naming the tool, the file and what was expected, and None (exit 2)."""
    try:
        report = read_json(path)
    except (OSError, ValueError) as e:
        print(f"{tool}: {path}: {e.__class__.__name__}: {e} (expected the table's report, table.sh writes it)",
              file=sys.stderr)
        return None
    if not isinstance(report, dict) or not isinstance(report.get("rows"), list):
        print(f"{tool}: {path}: $.rows: expected the table's report (table.sh writes it)", file=sys.stderr)
        return None
    return report


def load_calls(results_dirs: Sequence[str]) -> List[Tuple[str, Dict[str, Any], Dict[str, Any], List[Dict[str, float]]]]:
    """(folder, cases.json, profile.json, the profile's cpu curve) of each device call's result folder, for the
    diagnostics that rebuild its cases as convert does."""
    out = []
    for d in results_dirs:
        doc = read_call_json(d, "cases.json")
        profile = read_call_json(d, "profile.json")
        out.append((d, doc, profile, (profile.get("cpu") or {}).get("speed_vs_busy_cores") or []))
    return out


def loaded_duty_time_constants(calls: Sequence[Tuple[str, Dict[str, Any], Dict[str, Any], Any]]
                               ) -> Dict[str, Optional[float]]:
    """duty_time_constants_by_gpu over load_calls' calls, as the table takes them: a call's constant is
    result[call_gpu(its cases.json)]."""
    return duty_time_constants_by_gpu([(call_gpu(doc), doc.get("components") or {}, profile)
                                       for _, doc, profile, _ in calls])


def call_burst_ramps(call_components: Dict[str, Any], profile: Optional[Dict[str, Any]]
                     ) -> List[Tuple[List[Dict[str, float]], float, float, Optional[List[Tuple[float, float]]]]]:
    """A call's gpu_burst_ramps (harness since run 15, one per step model) with each step model's isolated and
    sustained times and duty shape, as rest_curves_time_constant takes them."""
    ramps = ((call_components or {}).get("gpu_burst_ramps") or {}).items()
    return [c for c in (_step_curve(call_components, profile, key, ramp) for key, ramp in ramps) if c]


def calls_duty_time_constant(calls: Sequence[Tuple[Dict[str, Any], Optional[Dict[str, Any]]]]) -> Optional[float]:
    """rest_curves_time_constant over the rest curves and burst ramps of (components, profile) of several calls."""
    return rest_curves_time_constant([rc for rc in (call_rest_curve(c, p) for c, p in calls) if rc],
                                     [r for c, p in calls for r in call_burst_ramps(c, p)])


def duty_time_constants_by_gpu(calls: Sequence[Tuple[str, Dict[str, Any], Optional[Dict[str, Any]]]]
                               ) -> Dict[str, Optional[float]]:
    """Pure: calls_duty_time_constant per GPU kind over (the harness's machine.gpu, components, profile) of each call:
    the constant is the machine's (its clocks' and power's response to rest), so an H100 call's rest curves must not
    move an H200 call's (run 64, the first H100 calls, shifted the pooled 45.0 ms to 42.8 and 65 H200 cases' predictions
    by 1-3.4%)."""
    groups: Dict[str, List[Tuple[Dict[str, Any], Optional[Dict[str, Any]]]]] = {}
    for gpu, components, profile in calls:
        groups.setdefault(gpu, []).append((components, profile))
    return {gpu: calls_duty_time_constant(members) for gpu, members in groups.items()}


def machine_gpu(machine: Dict[str, Any]) -> str:
    """The GPU a harness's machine record names (machine.gpu), "" where none."""
    return str(machine.get("gpu") or "")


def call_gpu(doc: Dict[str, Any]) -> str:
    """The GPU a call's harness recorded (its cases.json's machine.gpu), "" where none."""
    return machine_gpu(doc.get("machine") or {})


def case_duty_shape(call_components: Dict[str, Any], profile: Optional[Dict[str, Any]],
                    case: Dict[str, Any]) -> Optional[List[Tuple[float, float]]]:
    """The GPU step's shape between rested and back to back for a case: the harness's curve for its step
    model, else the call's first, else calibrate's (compute.step_vs_gpu_duty)."""
    return duty_excess(call_components, step_key(case)) or profile_duty_excess(profile)


def table_case_inputs(case: Dict[str, Any], doc: Dict[str, Any], profile: Dict[str, Any],
                      cpu_curve: Sequence[Dict[str, float]], duty_time_constant_s: Optional[float] = None
                      ) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    """case_inputs as the generated table builds a case of call `doc` (TABLE_OPTIONS, the case's duty shape, the
    receive's GIL hold), for the diagnostics that rebuild it (bracket, burst, component, overtake, handoff)."""
    duty_shape = case_duty_shape(doc.get("components") or {}, profile, case)
    if TABLE_OPTIONS.new_shape_cost == "call":
        case = with_call_new_shape(case, call_new_shape_host_s(doc))
    scen, case_profile = case_inputs(case, doc.get("machine") or {}, profile, TABLE_OPTIONS, cpu_curve, duty_shape,
                                     True, duty_time_constant_s, doc.get("components") or {})
    held = with_receive_gil(case, case_profile or profile,
                            receive_gil_for_machine(TABLE_OPTIONS.receive_gil_s, False, doc.get("machine") or {}))
    return scen, held if held is not None else case_profile


def receive_gil_for_machine(receive_gil_s: Optional[str], given: bool, machine: Dict[str, Any]) -> Optional[str]:
    """Pure: the hold to give a call's pinned cases. One given on the command line is used as is; the default
    (H200_RECEIVE_GIL_S) was fitted on the validation H200 host (validation-runs.md run 62, finding 9) and checked
    out of sample on the H100 host of run 64 (finding 2: the loop's ops after a hand-off 0.37-0.67 ms measured,
    0.48-0.96 simulated with it), so it applies to calls whose harness recorded one of HOLD_CHECKED_GPUS; other
    machines keep their profile's receive_gil_share ("off") until their own timelines measure it."""
    if given or receive_gil_s in (None, "off"):
        return receive_gil_s
    return receive_gil_s if any(name in machine_gpu(machine) for name in HOLD_CHECKED_GPUS) else "off"


def with_receive_gil(case: Dict[str, Any], profile: Optional[Dict[str, Any]],
                     receive_gil_s: Optional[str]) -> Optional[Dict[str, Any]]:
    """Pure: a copy of `profile` with ipc.receive_gil_s_per_batch = receive_gil_s (seconds, given as text), for a
    case whose loader has a pin thread (pin_memory and workers: only it receives in one); None where it does not
    apply (no such thread, no profile, or "off" / None: the profile's own receive_gil_share). "off" on a profile whose
    ipc gives neither key writes the share's default (1) out: the simulator's reader gives such a profile PyTorch's
    measured hold (models/profile.hpp kPytorchReceiveGilS, the same 0.48 ms), which "off" is there to leave out."""
    knobs = case.get("knobs") or {}
    if profile is None or not knobs.get("pin_memory") or int(knobs.get("num_workers") or 0) <= 0:
        return None
    if receive_gil_s in (None, "off"):
        ipc = profile.get("ipc")
        if ipc is None or "receive_gil_s_per_batch" in ipc or "receive_gil_share" in ipc:
            return None  # no ipc section: the default profile's, which names its hold; else the profile's own key
        out = json.loads(json.dumps(profile))
        out["ipc"]["receive_gil_share"] = 1.0
        return out
    out = json.loads(json.dumps(profile))
    out.setdefault("ipc", {})["receive_gil_s_per_batch"] = float(receive_gil_s)
    return out


def share_at_step_start(duty: float, step_s: float, time_constant_s: float) -> float:
    """The GPU's busy share (an exponential average with this time constant, as the simulator keeps it) at the
    start of each step of a steady periodic loop at `duty`: busy step_s, idle step_s (1 - duty) / duty. With
    a = exp(-step/tau) and b = exp(-idle/tau), share_end = 1 - (1 - share_start) a and share_start = b share_end,
    so share_start = b (1 - a) / (1 - a b); the duty itself as tau grows, 0 and 1 at the ends."""
    if duty >= 1.0:
        return 1.0
    if duty <= 0.0 or step_s <= 0.0:
        return 0.0
    a = math.exp(-step_s / time_constant_s)
    b = math.exp(-step_s * (1.0 - duty) / duty / time_constant_s)
    return b * (1.0 - a) / (1.0 - a * b)


def excess_at_share(shape: Sequence[Tuple[float, float]], share: float) -> float:
    """A duty shape's excess at a busy share: linear between its points and the ends (0, 0) and (1, 1)."""
    pts = [(0.0, 0.0)] + sorted(shape) + [(1.0, 1.0)]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if share <= x1:
            return y0 if x1 <= x0 else y0 + (share - x0) / (x1 - x0) * (y1 - y0)
    return 1.0


def shape_at_step_start(shape: Sequence[Tuple[float, float]], iso_s: float, sus_s: float,
                        time_constant_s: float) -> List[Tuple[float, float]]:
    """A duty shape measured at steady duties, re-expressed against the busy share at a step's start under
    the time constant: the simulator reads its curve at that share, so with a short constant each measured
    point moves to share_at_step_start of its duty (the step taking its own time there) and the simulator
    gives back the measured step at the measured duty."""
    return sorted((share_at_step_start(d, iso_s + e * (sus_s - iso_s), time_constant_s), e) for d, e in shape)


def rest_curve_error(rest_points: Sequence[Dict[str, float]], iso_s: float, sus_s: float,
                     shape: Optional[Sequence[Tuple[float, float]]], tau_s: float) -> float:
    """Squared error of a duty time constant tau against a gpu_rest_curve (one step after sustained load and a
    rest of rest_s): after the rest the share is exp(-rest/tau), and the step's excess over its isolated time
    is the shape's (re-expressed at a step's start under tau; a line without a shape) at that share."""
    at_start = shape_at_step_start(shape or [], iso_s, sus_s, tau_s)
    return sum((excess_at_share(at_start, math.exp(-float(q["rest_s"]) / tau_s))
                - min(1.0, max(0.0, (float(q["gpu_s"]) - iso_s) / (sus_s - iso_s)))) ** 2
               for q in rest_points if q.get("rest_s") and q.get("gpu_s"))


def burst_ramp_error(ramp_points: Sequence[Dict[str, float]], iso_s: float, sus_s: float,
                     shape: Optional[Sequence[Tuple[float, float]]], tau_s: float) -> float:
    """Squared error of a duty time constant tau against a gpu_burst_ramp (harness since run 15: each step's GPU
    time in a burst of back-to-back steps after 0.3 s of rest): before the step at position k the GPU has been
    busy for the steps ahead of it, so its share is 1 - exp(-busy/tau) (rested before the burst), and its excess
    the shape's (re-read at a step's start under tau) at that share."""
    at_start = shape_at_step_start(shape or [], iso_s, sus_s, tau_s)
    err, busy = 0.0, 0.0
    for q in sorted(ramp_points, key=lambda q: q["position"]):
        e = min(1.0, max(0.0, (float(q["gpu_s"]) - iso_s) / (sus_s - iso_s)))
        err += (excess_at_share(at_start, 1.0 - math.exp(-busy / tau_s)) - e) ** 2
        busy += float(q["gpu_s"])
    return err


def rest_curves_time_constant(curves: Sequence[Tuple[Sequence[Dict[str, float]], float, float,
                                                      Optional[Sequence[Tuple[float, float]]]]],
                              ramps: Sequence[Tuple[Sequence[Dict[str, float]], float, float,
                                                    Optional[Sequence[Tuple[float, float]]]]] = ()) -> Optional[float]:
    """The GPU's duty time constant: the tau of a log grid from 5 ms to 2 s with the least squared error over
    every given rest curve (points, isolated, sustained, shape), one machine kind. One call's curve is noisy
    (two steps per rest; runs 12-14's calls alone put it anywhere from 5 to 90 ms), so convert takes it over all
    the calls it scores. None without a curve of 3 points or more."""
    usable = [(p, i, s, sh) for p, i, s, sh in curves if s > i > 0 and len(p or []) >= 3]
    usable_ramps = [(p, i, s, sh) for p, i, s, sh in ramps if s > i > 0 and len(p or []) >= 3]
    if not usable and not usable_ramps:
        return None
    best = None
    for k in range(121):
        tau = 0.005 * (400.0 ** (k / 120.0))
        err = (sum(rest_curve_error(p, i, s, sh, tau) for p, i, s, sh in usable)
               + sum(burst_ramp_error(p, i, s, sh, tau) for p, i, s, sh in usable_ramps))
        if best is None or err < best[0] - 1e-12:
            best = (err, tau)
    return best[1]


def duty_curve(step: Dict[str, Any], excess: Optional[Sequence[Tuple[float, float]]] = None
               ) -> Optional[List[Dict[str, float]]]:
    """training.step_s_vs_gpu_duty from a step component: its isolated GPU time (one step after a
    rest: duty 0) and its sustained back-to-back time (duty 1); between them the call's measured shape
    (`duty_excess`, each point isolated + excess x (sustained - isolated), clamped to the two ends), or
    without one a line, nothing fitted. Only where the sustained interval is GPU time (the host well
    ahead) and above the isolated time: the H200 held its boost clock while it rested (25.0 ms isolated,
    29.9 ms back to back for mm:25) and ran 26-29 ms inside cases of GPU busy 0.1-0.75 (run 12's in-situ
    loops). None otherwise."""
    iso, sus = _iso_sus(step)
    if not step.get("sustained_is_gpu_time") or iso <= 0 or sus <= iso:
        return None
    mid = [{"duty": d, "step_s": iso + min(1.0, max(0.0, f)) * (sus - iso)} for d, f in (excess or [])]
    return [{"duty": 0.0, "step_s": iso}] + mid + [{"duty": 1.0, "step_s": sus}]


def worker_start_s(ws: Dict[str, Any], num_workers: int) -> float:
    return max(0.0, float(ws.get("intercept_s") or 0.0) + float(ws["per_worker_s"]) * num_workers)


def by_hand(num_workers: int, batch: int, load_s: float, step_s: float) -> float:
    if num_workers <= 0:
        return batch / (batch * load_s + step_s)
    return min(num_workers / load_s, batch / step_s)


# ============================================================================ scenario
def _dist(mean: float, cv: Optional[float]) -> Dict[str, Any]:
    cv = 0.0 if cv is None or not math.isfinite(cv) else max(0.0, float(cv))
    return {"mean": float(mean), "cv": round(cv, 4), "kind": "lognormal"}


# The harness's token batches: int64 ids (TokenDataset, pad_collate / PadToMaxCollate); the lengths tensor beside them
# (8 bytes a row) is left out.
SEQUENCE_BYTES_PER_TOKEN = 8


def new_shape_overlap_fraction(ns: Dict[str, Any], fit: Dict[str, Any]) -> Optional[float]:
    """Pure: sequence.new_shape_gpu_overlap_fraction from the sequence_new_shape component (per length: the step's
    host span and wall to a sync on a shape never run, and on it again) and the step's fit (its GPU time at the
    component's rows and length, g): a new step's wall is the build plus the GPU time not run during it, C + (1 - f) g
    (validation run 63, finding 7), so f = (C + g - new wall) / g with C the host span's extra; the median over the
    lengths, within 0..1. None without the lists or the fit."""
    rows, lengths = ns.get("rows"), ns.get("lengths") or []
    new_host, new_wall, seen_host = ns.get("new_host_s") or [], ns.get("new_wall_s") or [], ns.get("seen_host_s") or []
    if not rows or not fit or fit.get("per_token_s") is None or not (
            len(lengths) == len(new_host) == len(new_wall) == len(seen_host) > 0):
        return None
    out = []
    for n, nh, nw, sh in zip(lengths, new_host, new_wall, seen_host):
        g = fitted_step_s(fit, rows, n)
        if g > 0:
            out.append((nh - sh + g - nw) / g)
    if not out:
        return None
    return min(1.0, max(0.0, statistics.median(out)))


def call_new_shape_host_s(doc: Dict[str, Any]) -> Dict[str, float]:
    """Pure: per step model (knobs.step), a new batch shape's host time pooled over the call: the median, over every
    length timed by the sequence_new_shape components of the call's cases whose batches change shape (not padded to
    max_tokens), of new minus seen host time. A new shape's cost is cuDNN attention's plan build (validation run
    64), which does not follow the batch size: one component's 8 lengths spread 105-236 ms (run 66), and the three
    batch sizes' medians within a call (154 / 118 / 92 ms in run 65) moved more than the cases' own costs did
    (105-120). Each (rows, lengths) component counts once (a repeat's cases share it)."""
    seen, per_step = set(), {}
    for c in doc.get("cases") or []:
        comp = c.get("components") or {}
        ns = comp.get("sequence_new_shape") or {}
        new, old = ns.get("new_host_s") or [], ns.get("seen_host_s") or []
        step = str((c.get("knobs") or {}).get("step", ""))
        if comp.get("max_tokens") or not step.startswith("seq:") or not new or len(new) != len(old):
            continue
        key = (step, ns.get("rows"), tuple(ns.get("lengths") or ()), tuple(new))
        if key in seen:
            continue
        seen.add(key)
        per_step.setdefault(step, []).extend(float(a) - float(b) for a, b in zip(new, old))
    return {step: max(0.0, statistics.median(xs)) for step, xs in per_step.items()}


def with_call_new_shape(case: Dict[str, Any], pooled: Dict[str, float]) -> Dict[str, Any]:
    """Pure: the case with the call's pooled new-shape cost for its step model (call_new_shape_host_s) beside its
    own sequence_new_shape component's, which sequence_section then takes; the case itself where it has none."""
    comp = case.get("components") or {}
    ns = comp.get("sequence_new_shape")
    step = str((case.get("knobs") or {}).get("step", ""))
    if not ns or ns.get("new_shape_host_s") is None or step not in pooled or comp.get("max_tokens"):
        return case
    return dict(case, components=dict(comp, sequence_new_shape=dict(ns, call_new_shape_host_s=pooled[step])))


def sequence_section(case: Dict[str, Any]) -> Optional[Tuple[Dict[str, Any], float]]:
    """Pure: the scenario's `sequence` section for a case whose step follows its batch's shape (the harness's seq:N
    decoder on token batches), and the step's fixed part (training.step_s): the lines' lengths in tokens (the
    dataset's, lognormal by their mean and cv), the collate (pad_to_max at the kind's max_tokens, else
    pad_to_longest), int64 ids, and the step's per-position and per-squared-length terms and its latency floor
    refitted from the sequence_step_shapes component's points (sequence_fit); a new batch shape's host time from sequence_new_shape where measured, with
    the shapes the process had run before the case. None for any other case, or one without those components."""
    k, comp = case.get("knobs") or {}, case.get("components") or {}
    if not str(k.get("step", "")).startswith("seq:"):
        return None
    tokens = comp.get("tokens_per_sample") or {}
    shapes = comp.get("sequence_step_shapes") or {}
    # refitted from the timed shapes where recorded (run 63's nine shapes within 0.4% with a floor against 14% for
    # one line), else the harness's own fit
    fit = component_fit(shapes)
    if not tokens.get("mean") or fit.get("per_token_s") is None:
        return None
    max_tokens = int(comp.get("max_tokens") or 0)
    # the dataset's own lengths where the harness recorded them (run 64 on): a finite dataset's few long lengths
    # make a batch's longest, and so its shape, repeat (run 63); else the law by the lengths' mean and cv
    lengths = ({"tokens_per_sample_histogram": [[int(a), int(b)] for a, b in tokens["histogram"]]}
               if tokens.get("histogram") else {"tokens_per_sample": _dist(tokens["mean"], tokens.get("cv"))})
    seq = {**lengths,
           "collate": "pad_to_max" if max_tokens else "pad_to_longest",
           "bytes_per_token": SEQUENCE_BYTES_PER_TOKEN,
           "step_s_per_token": float(fit["per_token_s"]),
           "step_s_per_token_squared": float(fit.get("per_token_squared_s") or 0.0)}
    if fit.get("floor_s"):
        seq["step_s_floor"] = round(float(fit["floor_s"]), 9)
    if max_tokens:
        seq["max_tokens"] = max_tokens
    # a batch shape the step has not run costs plan building on the host (validation run 63); the component exists
    # from run 64 on (comp_sequence_new_shape: new minus seen host time, median of 8 lengths; 16 from the
    # sixty-ninth session's harness on)
    ns = comp.get("sequence_new_shape") or {}
    if ns.get("new_shape_host_s") is not None:
        # the call's pooled figure where convert added it (--new-shape-cost call), else this case's component
        cost = ns["call_new_shape_host_s"] if ns.get("call_new_shape_host_s") is not None else ns["new_shape_host_s"]
        seq["new_shape_host_s"] = round(max(0.0, float(cost)), 6)
        # the plans the harness's process already held as the case started (the fit's shapes, the probes' batches,
        # an earlier repeat's): not new to the case (recorded from the sixty-third session's harness on)
        # the part of the step's GPU time that runs while its plans build (run 63, finding 7: about a quarter)
        overlap = new_shape_overlap_fraction(ns, fit)
        if overlap:
            seq["new_shape_gpu_overlap_fraction"] = round(overlap, 4)
        before = comp.get("sequence_shapes_run_before")
        if before:
            seq["shapes_run_before"] = [[int(b), int(n)] for b, n in before]
    # the simulator needs a positive fixed part; a fit through the origin keeps a microsecond
    return seq, max(float(fit.get("fixed_s") or 0.0), 1e-6)


def gpu_decode_keys(comp: Dict[str, Any]) -> Dict[str, float]:
    """Pure: training.gpu_decode_host_s_per_sample and gpu_decode_s_per_sample from a case's gpu_decode component
    (the harness's GpuDecodeStep decode alone): the call's host time over the batch, and its wall to the stream's end
    less that (the GPU work still running when the call returns) over the batch. {} without the component."""
    gd = comp.get("gpu_decode") or {}
    host, wall = (gd.get("host_s") or {}).get("mean"), (gd.get("wall_s") or {}).get("mean")
    n = int(gd.get("batch_size") or 0)
    if host is None or wall is None or n <= 0:
        return {}
    return {"gpu_decode_host_s_per_sample": round(float(host) / n, 9),
            "gpu_decode_s_per_sample": round(max(0.0, float(wall) - float(host)) / n, 9)}


def worker_collate_cost(case: Dict[str, Any]) -> float:
    """A batch's collate as a worker pays it: measured inside one worker (component in_worker) when
    the run has it, else the main-process collate (runs before in_worker existed)."""
    comp = case.get("components") or {}
    iw = comp.get("in_worker") or {}
    if iw.get("collate_wall_s"):
        return float(iw["collate_wall_s"])
    return float(((comp.get("collate") or {}).get("s_per_batch") or {}).get("mean") or 0.0)


def probe_bracket(before: Dict[str, Any], after: Dict[str, Any]) -> Dict[str, Any]:
    """The probe to use: the one right before the case, or (harness since run 10) the mean of it and
    the same probe right after the case, which brackets the case in time (the machine drifts by up to
    24% between a probe and its case, run 9). A failed or absent probe_after leaves the one before; an absent
    one before leaves the one after (a cold case, harness since run 17: probed only after, on the re-warmed
    cache, its decode at the case's concurrency; the cold reads are the simulator's)."""
    keys = ("getitem_wall_s", "collate_wall_s")
    if not all(before.get(k) for k in keys) and all(after.get(k) for k in keys):
        return after
    if not all(before.get(k) for k in keys) or not all(after.get(k) for k in keys) \
            or before.get("workers") != after.get("workers"):
        return before
    out = dict(before, **{k: (float(before[k]) + float(after[k])) / 2 for k in keys}, bracketed=True)
    if before.get("busy_cores") and after.get("busy_cores"):
        out["busy_cores"] = (float(before["busy_cores"]) + float(after["busy_cores"])) / 2
    return out


def probe_on_cores(probe: Dict[str, Any], cores: int) -> Dict[str, Any]:
    """A loader window's costs as one core pays them. A window whose workers asked for more cores than
    the machine has (busy_cores, counted from __getitem__ and collate wall times, above its cores) timed
    each sample's wait for a core along with its work: run 14's 24-worker probe on 16 cores read 8.2 ms
    per sample of wall time against 5.9 ms of CPU, while its case, held back by the GPU, kept 12.6
    cores busy and paid 4.9. The simulator shares its cores among the workers itself, so such a window
    is taken at its CPU time: getitem at getitem_cpu_s, collate scaled by the same ratio, its busy
    cores at the workers' CPU plus the main side. A window within the machine's cores, or without
    CPU figures (harness before run 14), is returned as is."""
    wall, cpu = float(probe.get("getitem_wall_s") or 0.0), float(probe.get("getitem_cpu_s") or 0.0)
    busy, workers_busy = probe.get("busy_cores"), probe.get("busy_workers")
    if busy is None or workers_busy is None or cores <= 0 or float(busy) <= cores or not 0 < cpu < wall:
        return probe
    ratio = cpu / wall
    out = dict(probe, getitem_wall_s=cpu, oversubscribed_wall_over_cpu=wall / cpu,
               busy_cores=float(busy) - float(workers_busy) * (1.0 - ratio),
               busy_workers=float(workers_busy) * ratio)
    if probe.get("collate_wall_s"):
        out["collate_wall_s"] = float(probe["collate_wall_s"]) * ratio
    return out


def probe_busy_cores(probe: Dict[str, Any]) -> float:
    """Where a loader window's costs (a probe's, or a load_scaling point's) were measured on the simulator's
    busy-cores axis: the cores the window kept busy (workers in __getitem__ and collate plus the main process's pin and main threads; harness since
    run 14), else its configured worker count (until run 13, which found the two 4-6 against 8 in every
    pin-bound tensor case: finding 2)."""
    return max(1.0, float(probe.get("busy_cores") or probe.get("workers") or 1))


def probe_pin_thread_s(probe: Dict[str, Any], window: str = "whole") -> Optional[float]:
    """A pinned probe's pin thread CPU per batch: over its whole window, or (late-half) over the window's second
    half where the harness split it (since run 13), the first half being the end of a fresh loader's start-up. Run
    24 (finding 1): an image probe that drops batches for a second more before its window opens
    (--probe-settle-s 1) reads 1.016 of the case's own pin thread (13 cases, two leases) where the
    same lease's unsettled probes read 1.150 (4); over runs 11-24 the unsettled image probes' first half reads
    1.26-1.42 of the case and their second half 0.97-1.04 (tensor: 0.99-1.03 and 0.96-0.99). None without the
    figure."""
    whole = float(probe.get("pin_thread_cpu_s_per_batch") or 0.0)
    halves = probe.get("pin_thread_cpu_s_per_batch_halves")
    if window == "late-half" and isinstance(halves, list) and len(halves) == 2 and float(halves[1] or 0.0) > 0:
        return float(halves[1])
    return whole if whole > 0 else None


# A probe whose workers were busier than this was bound by them, not by its pin thread: its wall per batch then
# holds the pin thread's waits for a batch, which the simulator makes itself (validation run 36: pin-bound tensor
# probes 0.49 busy, median; image probes 0.96).
PIN_BOUND_PROBE_WORKERS_BUSY = 0.8


def pin_thread_wait_s(comp: Dict[str, Any], pin_busier: bool = True) -> Optional[float]:
    """The pin thread's time off its core per batch around a pinned case: over its probes before and after (harness
    since run 14) that were bound by the pin thread (workers under PIN_BOUND_PROBE_WORKERS_BUSY busy), the mean of
    the window's wall per batch less the pin thread's CPU per batch, never below 0. Run 36 (finding 6): in
    pin-bound probes the pin thread is on its CPU 95.6% of the wall (0.76 ms of a 17-20 ms cycle), and in the cases
    a batch is always ready for it; the simulator's pin thread, given the CPU alone, was busy 100%. None without a
    pin-bound probe (image loaders, runs before 14). Used with --pin-thread-wait probes and probes-fd (the default).
    pin_busier (the default since the forty-sixth session): a probe counts only where its pin thread was also on its
    CPU a larger share of the wall than its workers were busy. Over runs 11-50, 1,099 of the 1,141 probes under
    0.8 busy workers pass; the 42 that do not are image probes whose workers were the busier side: 24-worker
    loaders on 16 cores (pin thread 0.59-0.75 of the wall, workers 0.69-0.80) and five 8-worker windows whose
    workers stalled (pin thread 0.27-0.39 of the wall), whose "wait" of 27-45 ms a batch is the workers' pace, not
    the pin thread's (run 50, A2 case 03: 38 ms, predicted -17%). False: the rule of runs 38-50."""
    waits = []
    for p in (comp.get("probe") or {}, comp.get("probe_after") or {}):
        cpu, batches = p.get("pin_thread_cpu_s_per_batch"), p.get("batches")
        window_s, workers, busy = p.get("window_s"), p.get("workers"), p.get("busy_workers")
        if not (p.get("pin_memory") and cpu and batches and window_s and workers and busy is not None):
            continue
        workers_busy = float(busy) / int(workers)
        if workers_busy >= PIN_BOUND_PROBE_WORKERS_BUSY:
            continue
        wall_per_batch_s = float(window_s) / int(batches)
        if pin_busier and float(cpu) / wall_per_batch_s <= workers_busy:
            continue
        waits.append(max(0.0, wall_per_batch_s - float(cpu)))
    return sum(waits) / len(waits) if waits else None


def fd_handover_wait_s(comp: Dict[str, Any]) -> Optional[float]:
    """The receive's file-descriptor hand-overs' time off the pin thread's core per batch around a pinned case: over
    its probes before and after that timed them (harness since the ninetieth session: each DupFd.detach() in the main
    process, fd_detach_{wall_s,cpu_s}_per_batch), the mean of wall less CPU, never below 0. Run 84 (validation-runs.md):
    at 2 and 4 tensor workers the cases' hand-overs took 1.44 and 1.96 ms a batch off the core, 73-79% of the pin
    thread's backlogged cycle less its CPU, and their probes read 1.31 and 1.88 ms; the probes there are bound by
    their workers, so pin_thread_wait_s has no reading. A part of the pin thread's time off its core, not all of it:
    used only where pin_thread_wait_s has none (--pin-thread-wait probes-fd, the default since the ninety-third
    session: over the 12 such cases of runs 84-86 p90 abs throughput error 6.4% -> 4.5%, p90 step 59.5% -> 47.9% at
    p90 but 9.8% -> 14.6% at the median; validation-runs.md run 86). None without such a probe (every call before
    run 84)."""
    got = [_one_window_fd_wait_s(p) for p in (comp.get("probe") or {}, comp.get("probe_after") or {})
           if p.get("pin_memory")]
    got = [w for w in got if w is not None]
    return sum(got) / len(got) if got else None


def probe_pin_cycle_cv(comp: Dict[str, Any]) -> Optional[float]:
    """The pin thread's own spread around a pinned case: the mean over its probes before and after that were bound
    by the pin thread (workers under PIN_BOUND_PROBE_WORKERS_BUSY busy) of their pin cycle's cv (harness since the
    eighty-second session, pin_cycle_figures: one pin_memory() call's end to the next). Profile
    cpu.pin_thread_speed_cv. Over the 33 pinned tensor cases with timelines of runs 59-70 the case's own pin cycle
    cv in place of the cores' took their p90 step in situ from 11.1% to 9.3% median abs (6.7% -> 3.7% with the
    workers' batch times replayed; validation-runs.md "The pin thread's own spread"). Out of the case, run 77's
    probes read it 0.101 at mean where their 13 cases ran 0.145 (correlation 0.46): used only with --pin-cycle probes,
    a what-if. None without such a probe (every call before run 77)."""
    got = []
    for p in (comp.get("probe") or {}, comp.get("probe_after") or {}):
        cv, workers, busy = p.get("pin_cycle_cv"), p.get("workers"), p.get("busy_workers")
        if not (p.get("pin_memory") and cv and workers and busy is not None):
            continue
        if float(busy) / int(workers) >= PIN_BOUND_PROBE_WORKERS_BUSY:
            continue
        got.append(float(cv))
    return sum(got) / len(got) if got else None


def main_next_s(comp: Dict[str, Any]) -> Optional[float]:
    """The loop thread's own CPU in next() per batch of a pinning loader with workers, from the probes before and
    after a case (harness since run 11: the main thread's CPU per batch of a window that only takes and drops
    batches): the DataLoader's in-order bookkeeping and the next index's hand-out, which run before the loop can
    enqueue the batch's copy (validation-runs.md run 42, finding 8: about 0.2 ms, and the compute-bound cases'
    steps that much longer than their GPU time). The mean of the pinned probes with workers that have it; None
    without one."""
    got = [v for p in (comp.get("probe") or {}, comp.get("probe_after") or {})
           if p.get("pin_memory") and int(p.get("workers") or 0) > 0
           and (v := positive_mean(p.get("main_thread_cpu_s_per_batch"))) is not None]
    return sum(got) / len(got) if got else None


def copy_call_s(call_components: Dict[str, Any]) -> Optional[float]:
    """The loop's host time in a pinned batch's non_blocking .to() call, once a call: the harness's probe_main_loop
    component (since run 43's plan) times each .to() call of its copy windows, outside any case, and keeps each
    window's median (copy_call_s). The mean of those medians; None without them (calls before run 43, a probe
    that failed or copied blocking, where the call also waits for the copy the model already has)."""
    pm = call_components.get("probe_main_loop") or {}
    if "error" in pm or not pm.get("non_blocking"):
        return None
    got = [float(w["copy_call_s"]) for w in pm.get("windows") or []
           if w.get("main_loop") == "copy" and (w.get("copy_call_s") or 0) > 0]
    return sum(got) / len(got) if got else None


def main_side_probes(case: Dict[str, Any]) -> Tuple[bool, str, List[Dict[str, Any]]]:
    """The probes around a case that read its main side, like for like: (pinned, the figure's key, the probes before
    and after with that figure, pin_memory as the case and workers of their own; an inline (w0) probe's main
    thread also loads)."""
    comp = case.get("components") or {}
    pin = bool((case.get("knobs") or {}).get("pin_memory"))
    key = "pin_thread_cpu_s_per_batch" if pin else "main_thread_cpu_s_per_batch"
    probes = [p for p in (comp.get("probe") or {}, comp.get("probe_after") or {})
              if float(p.get(key) or 0.0) > 0 and bool(p.get("pin_memory")) == pin and int(p.get("workers", 1)) > 0]
    return pin, key, probes


def main_side_drift(case: Dict[str, Any], pin_window: str = "whole") -> Optional[float]:
    """How much dearer the main side's work per batch was around the case than when the transport
    component measured it: the mean of the probes' CPU per batch (before and after the case, harness
    since run 11) over the transport component's, like for like: the pin thread's CPU with pin_memory,
    the main thread's receive without. The pin-thread check of 2026-11-30 found the pin thread's CPU per
    batch tracking each pin-bound case's batch time (14.65 ms in situ for 15.3 ms per batch, 17.50 for
    18.3 in its repeat) and drifting by up to 20% within one call, as the workers' costs do. None when a
    figure is missing (runs before 11): the transport is then used as measured."""
    tr = (case.get("components") or {}).get("transport") or {}
    pin, key, probes = main_side_probes(case)
    ref = float(tr.get("pin_thread_cpu_s_per_batch" if pin else "receive_cpu_s_per_batch") or 0.0)
    if ref <= 0 or not probes:
        return None
    figures = [probe_pin_thread_s(p, pin_window) if pin else float(p[key]) for p in probes]
    return sum(figures) / len(figures) / ref


def main_side_busy_cores(case: Dict[str, Any]) -> Optional[float]:
    """The mean busy cores of the probes main_side_drift reads (main_side_probes); None without one or without
    busy_cores (harness before run 14)."""
    busy = [float(p["busy_cores"]) for p in main_side_probes(case)[2] if float(p.get("busy_cores") or 0.0) > 0]
    return sum(busy) / len(busy) if busy else None


def wander_less_samples(batch_cv: float, batch_size: int, getitem_s: float, load_cv: float, batch_s: float) -> float:
    """A batch time's cv less what its samples' own spread gives it (sqrt(batch) x getitem x the load's
    cv, over the batch time): the simulator draws that part per sample, the rest is the wander. 0 when
    the samples explain it all; the batch cv as is without a batch time."""
    sample_cv = math.sqrt(batch_size) * getitem_s * load_cv / batch_s if batch_s > 0 else 0.0
    return math.sqrt(max(0.0, batch_cv ** 2 - sample_cv ** 2))


# The GIL-held part of the pin thread's receive a batch on the validation H200 host, seconds on one idle core
# (ipc.receive_gil_s_per_batch): the hold at which the simulated loop's ops right after a hand-off (next()'s return
# to its last launch) match the measured ones, over runs 11-40's 129 pinned sync_every / pin_memory_tensor cases with
# a timeline (median of the per-case differences 0 between 0.45 ms, -0.03, and 0.50 ms, +0.02); on runs 41-62's 70
# held out +0.03 ms (the whole fixed receive: +1.15). handoff_diagnostic.py --simulated reads it (validation-runs.md
# run 62, finding 9). The machine's figure, not the table's: the loop's loss does not follow a call's
# receive_s_per_batch (0.69 / 0.71 / 0.66 / 0.58 ms over calls with 0-1 / 1-2 / 2-3 / 3-4 ms of it, 446 cases).
H200_RECEIVE_GIL_S = 0.00048
# The GPUs whose validation hosts' timelines checked that hold (the loop's ops right after a hand-off,
# handoff_diagnostic.py --simulated): the H200's (runs 11-62) and the H100's (run 64, finding 2). The harness's own GIL
# probe is not the check: beside the same H100 loop it read 6.6 ms a batch, one hold the size of the hand-off delay,
# which the loop waits through in next() (run 64, finding 2).
HOLD_CHECKED_GPUS = ("H200", "H100")
assert float(TABLE_OPTIONS.receive_gil_s) == H200_RECEIVE_GIL_S


def receive_gil_share_from_probe(probe: Optional[Dict[str, Any]], receive_s_per_batch: float) -> Optional[float]:
    """Pure: ipc.receive_gil_share from the harness's GIL probe beside its pinned transport loop: the hold a batch
    (receive_gil_s_from_probe) over the receive's fixed cost, in [0, 1]. None without a probe figure or a receive
    cost."""
    held_s = receive_gil_s_from_probe(probe)
    if held_s is None or receive_s_per_batch <= 0:
        return None
    return min(1.0, held_s / receive_s_per_batch)


def receive_gil_s_from_probe(probe: Optional[Dict[str, Any]]) -> Optional[float]:
    """Pure: ipc.receive_gil_s_per_batch from the harness's GIL probe beside its pinned transport loop
    (gil_probe.per_batch): the time a GIL-wanting thread waited a batch (less its run-queue wait where recorded), less
    the loop's own CPU a batch there, in seconds (>= 0); None without a probe figure. Wall seconds at the transport
    loop's busy cores, not brought to one idle core (on the H200 the curve moves it by a few percent; validation-runs.md
    run 62, finding 9 expects about 0.5 ms)."""
    if not probe or probe.get("held_s_per_batch") is None:
        return None
    held = probe.get("held_less_runqueue_s_per_batch")
    held = float(probe["held_s_per_batch"] if held is None else held)
    return max(0.0, held - float(probe.get("main_cpu_s_per_batch") or 0.0))


def probe_wander(case: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """The workers' speed wander around the case, from the probes before and after it (harness since run
    12): per probe, the cv of its workers' batch times read as the cases' timelines are
    (timeline_analysis.core_wander: cv and, from the lag-one autocorrelation, a correlation time), or
    without that the pooled spread of their batches' busy times (batch_busy_cv), less what the samples'
    own spread gives a batch (sqrt(batch) x getitem x the load's cv, over the batch time: the simulator
    draws that per sample); the mean over the probes. Run 11 found calibrate's wander scattering from
    0.078 to 0.165 over four calls of one lease while the cases' workers stayed at 0.09-0.16, and the
    pinned tensor cases' p90 step following it. {"cv", "correlation_s" (None if no probe gave one),
    "correlation_batches" (the same lag-one in the probe's batches: correlation_s over its batch time)}, or None
    without a figure."""
    comp = case.get("components") or {}
    k = case.get("knobs") or {}
    bs = int(k.get("batch_size") or 0)
    load_cv = float((comp.get("load") or {}).get("cv") or 0.0)
    cvs, taus, batches = [], [], []
    for p in (comp.get("probe") or {}, comp.get("probe_after") or {}):
        w, g = p.get("wander") or {}, p.get("getitem_wall_s")
        if int(p.get("workers") or 0) < 1:
            continue
        if w.get("cv") is not None and w.get("batch_s") and g:
            cv, batch_s = float(w["cv"]), float(w["batch_s"])
            tau = w.get("correlation_s")
            if tau is not None and 0.0 < float(tau) <= 60.0:
                taus.append(float(tau))
                batches.append(float(tau) / batch_s)  # the same lag-one counted in the probe's batches
        elif p.get("batch_busy_cv") is not None and p.get("batch_busy_s") and g and int(p.get("batches") or 0) >= 3:
            cv, batch_s = float(p["batch_busy_cv"]), float(p["batch_busy_s"])
        else:
            continue
        cvs.append(wander_less_samples(cv, bs, float(g), load_cv, batch_s))
    if not cvs:
        return None
    return {"cv": sum(cvs) / len(cvs), "correlation_s": sum(taus) / len(taus) if taus else None,
            "correlation_batches": sum(batches) / len(batches) if batches else None}


# The slower part's share of the workers' log variance and its lag-one a batch: the median three-part fit
# (insitu_diagnostic.fit_wander_parts, level and slow together) over the batch_size family's 70 eight-worker cases in
# 13 calls (validation run 59, finding 4): a figure of this machine, not of a case.
TWO_PART_SLOW_SHARE = 0.45
TWO_PART_SLOW_LAG_ONE = 0.9


def two_part_batch_wander(cv: float, lag_one: float, slow_share: float = TWO_PART_SLOW_SHARE,
                          slow_lag_one: float = TWO_PART_SLOW_LAG_ONE) -> Dict[str, float]:
    """Pure: the probes' one-part wander (cv, lag-one a batch) as two parts counted in batches: the slower part takes
    slow_share of the log variance at slow_lag_one a batch, the fast part the rest at the lag-one that keeps the sum's
    lag-one the probes' ((lag_one - share x slow) / (1 - share), in [0, 0.95]). Profile keys cpu.core_speed_cv,
    core_speed_correlation_batches, core_speed_slow_cv, core_speed_slow_correlation_batches."""
    var = math.log1p(cv * cv)
    fast_lag = min(0.95, max(0.0, (lag_one - slow_share * slow_lag_one) / (1.0 - slow_share)))
    return {"core_speed_cv": math.sqrt(math.expm1(var * (1.0 - slow_share))),
            "core_speed_correlation_batches": -1.0 / math.log(fast_lag) if fast_lag > 0 else 1e-6,
            "core_speed_slow_cv": math.sqrt(math.expm1(var * slow_share)),
            "core_speed_slow_correlation_batches": -1.0 / math.log(slow_lag_one)}


# Calibrate's decode section logs each of its 8 threads' chunk times, paused 2 ms after each chunk as a worker
# waits for its index ("wander chunk seconds paused, thread N: ..."); laid end to end they give each thread's
# intervals, whose shared part timeline_analysis.common_share reads as in a case's workers (validation run 61,
# finding 6: median 0.05 over 63 calls where the cases' own median is 0.12; correlation 0.15 call by call).
CALIBRATE_CHUNK_PAUSE_S = 0.002


def decode_threads_common_share(log_text: str, pause_s: float = CALIBRATE_CHUNK_PAUSE_S) -> Optional[float]:
    """Pure: the common share of calibrate's paused decode threads' chunk times in a calibrate.log's text, or None
    with fewer than two threads logged."""
    import timeline_analysis  # beside this file; imported here so the converter runs without it otherwise
    threads: Dict[int, List[float]] = {}
    prefix = "calibrate: decode: wander chunk seconds paused, thread "
    for line in log_text.splitlines():
        if line.startswith(prefix):
            head, _, values = line[len(prefix):].partition(":")
            try:
                threads[int(head)] = [float(v) for v in values.split()]
            except ValueError:
                continue
    if len(threads) < 2:
        return None
    intervals = []
    for k in sorted(threads):
        t, iv = 0.0, []
        for d in threads[k]:
            iv.append((t, t + d))
            t += d + pause_s
        intervals.append(iv)
    cs = timeline_analysis.common_share(intervals)
    return cs["share"] if cs else None


def slow_wander_refit(calibrate_binary: str, log_path: str) -> Optional[Dict[str, Any]]:
    """`pipeplan calibrate --wander-from-log` on a call's calibrate.log: its logged chunk times refit with the
    wander's slower part (calibrate/wander_log.hpp). None where the log or the binary is missing or the refit
    fails (the case keeps one part)."""
    text = read_stored_text(log_path)
    if text is None or not os.path.isfile(calibrate_binary):
        return None
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".log") as plain:  # the binary reads a plain file
            plain.write(text)
            plain.flush()
            p = subprocess.run([calibrate_binary, "--wander-from-log", plain.name], capture_output=True, text=True,
                               timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return None


def split_wander(total_cv: float, own_cv: float, slow_cv: float, slow_correlation_s: float
                 ) -> Tuple[float, float, float]:
    """The case's wander (total_cv: the probes' or the profile's, one part) cut into a fast and a slow part in the
    share calibrate's threads showed (their own log variance ln(1 + own_cv^2), of which ln(1 + slow_cv^2) slow):
    variances in log speed add, so the case keeps its total spread. Returns (fast cv, slow cv, slow correlation
    s); no slow part (total_cv, 0, 0) without an own variance or a slow one."""
    own_var = math.log1p(own_cv ** 2)
    slow_var = math.log1p(slow_cv ** 2)
    if own_var <= 0.0 or slow_var <= 0.0 or total_cv <= 0.0:
        return total_cv, 0.0, 0.0
    share = min(1.0, slow_var / own_var)
    total_var = math.log1p(total_cv ** 2)
    return (math.sqrt(math.expm1(total_var * (1.0 - share))), math.sqrt(math.expm1(total_var * share)),
            min(3600.0, slow_correlation_s))


def with_slow_wander(profile: Dict[str, Any], refit: Optional[Dict[str, Any]], which: str = "no_pause"
                     ) -> Optional[Dict[str, Any]]:
    """A copy of the case's profile with its cpu wander split by split_wander on the refit's `which` log (None
    where the refit has no slow part: the profile stands)."""
    part = (refit or {}).get(which) or {}
    own, slow = part.get("own") or {}, part.get("slow") or {}
    if not own.get("cv") or not slow.get("cv"):
        return None
    out = json.loads(json.dumps(profile))
    cpu = out.setdefault("cpu", {})
    fast_cv, slow_cv, slow_s = split_wander(float(cpu.get("core_speed_cv") or 0.0), float(own["cv"]),
                                            float(slow["cv"]), float(slow.get("correlation_s") or 0.0))
    if slow_cv <= 0.0:
        return None
    cpu["core_speed_cv"] = round(fast_cv, 4)
    cpu["core_speed_slow_cv"] = round(slow_cv, 4)
    cpu["core_speed_slow_correlation_s"] = round(slow_s, 3)
    return out


def fast_correlation_less_slow(correlation_s: float, batch_s: float, fast_cv: float, slow_cv: float,
                               slow_correlation_s: float) -> float:
    """Pure: the fast part's correlation time once the slow part's memory is taken out of the probes' lag-one. The
    probes read one lag-one r1 = exp(-batch / correlation_s) over the whole wander; with two independent parts in log
    speed it is the variance-weighted mean of theirs, r1 = f r_fast + (1 - f) r_slow, f = ln(1 + fast_cv^2) / (that
    + ln(1 + slow_cv^2)), r_slow = exp(-batch / slow_correlation_s). Solved for r_fast (kept in [0.01, 0.99]) and
    returned as -batch / ln(r_fast). The split of with_slow_wander keeps the probes' time for the fast part, which
    counts the slow part's memory twice (validation run 58, finding 6). Unchanged without a batch time or a slow
    part."""
    fast_var, slow_var = math.log1p(fast_cv ** 2), math.log1p(slow_cv ** 2)
    if batch_s <= 0.0 or correlation_s <= 0.0 or slow_var <= 0.0 or fast_var <= 0.0:
        return correlation_s
    f = fast_var / (fast_var + slow_var)
    r1 = math.exp(-batch_s / correlation_s)
    r_slow = math.exp(-batch_s / slow_correlation_s) if slow_correlation_s > 0.0 else 0.0
    r_fast = min(0.99, max(0.01, (r1 - (1.0 - f) * r_slow) / f))
    return -batch_s / math.log(r_fast)


def transport_on_cpu_clock(transport: Dict[str, Any]) -> Dict[str, Any]:
    """The transport component with its loops' CPU time per batch in place of their wall time, where the
    harness took it (since run 11): the receive loop's main-thread CPU, the pin loop's pin-thread CPU. The
    simulator's pin thread and receive are CPU work that it slows and queues itself; a loop's wall beyond
    its CPU is time off the core (a wait for a batch, for the GIL or for the scheduler)."""
    out = dict(transport)
    for wall_key, cpu_key in (("receive_s_per_batch", "receive_cpu_s_per_batch"),
                              ("pin_s_per_batch", "pin_thread_cpu_s_per_batch")):
        cpu = float(transport.get(cpu_key) or 0.0)
        if cpu > 0:
            out[wall_key] = cpu
    return out


def positive_mean(x: Any) -> Optional[float]:
    """A component's figure: its "mean" where it is a summary, else the number itself; None unless finite and > 0."""
    v = x.get("mean") if isinstance(x, dict) else x
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else None


def loop_host_alone_figures(comp: Dict[str, Any], step: Dict[str, Any]) -> List[float]:
    """Every time the call measured the same loop's host time with nothing beside it: the step component's, and
    where the case has them (ResNet-50 cases) host_under_load's alone and alone-again windows (since run 9 / 16) and
    host_beside_loader's (since run 16). Run 16 (finding 3): the figure alone moves 5-12% within seconds (B2: 24.33,
    19.89, 21.02, 17.34, 25.56 ms in one call)."""
    out = [float(step["host_s"]["mean"])]
    for name, keys in (("host_under_load", ("alone_host_s", "alone_after_host_s")),
                       ("host_beside_loader", ("alone_host_s", "alone_again_host_s"))):
        c = comp.get(name) or {}
        if "error" in c:
            continue
        out += [v for v in (positive_mean(c.get(k)) for k in keys) if v is not None]
    return out


def host_probe_bracket_s(comp: Dict[str, Any]) -> Optional[float]:
    """The loop's host time alone right around the case: the mean of the host probes before and after it (harness
    components host_probe and host_probe_after, host-heavy cases, since run 20's plan), the one that worked if the
    other failed, None without either."""
    vals = [v for v in (positive_mean((comp.get(name) or {}).get("host_s")) for name in ("host_probe", "host_probe_after"))
            if v is not None]
    return sum(vals) / len(vals) if vals else None


def unpinned_window_host_s(comp: Dict[str, Any]) -> Optional[float]:
    """The loop's launches a step in the case-like unpinned windows right before and after the case (a live
    unpinned loader with the case's workers, the .to() copy, the step on the copied batch): the host time of
    unpinned_window_bracket, the same windows convert takes the case's copy and release from. None without them."""
    win = unpinned_window_bracket(comp)
    return float(win["unpinned_case_like_host_s"]["mean"]) if win else None


def loop_host_s(comp: Dict[str, Any], step: Dict[str, Any], cpu_curve: Sequence[Dict[str, float]],
                host_from: str = "step", unpinned_with_workers: bool = False) -> float:
    """The training loop's host time per step at one idle core: the step component's (its launches timed
    alone, one step at a time), or with host_from "loaded" the host_under_load component's loop beside as
    many spinning processes as the case has workers (harness since run 9; only the ResNet-50 step), brought
    back to one idle core by the machine's curve at those busy cores plus the loop's own (the simulator
    applies the curve again at the case's). Run 15 (finding 5): over nine ResNet-50 cases of runs 11-15 the
    in-situ launch ran 0.79-1.57x the step component's host time and 1.06-1.28x host_under_load's loaded one.
    "probe-bracket" (the default): the host probes right around the case; for an unpinned case with workers,
    its case-like windows' launches where the harness took them (unpinned_window_host_s; convert takes the copy
    and release from the same windows). Over the 22 such cases of runs 23-30 (twenty-sixth session) the windows
    scored 3.6% median / 10.0% p90 against the probes' 5.6% / 15.2%: the windows run the loop as the case does,
    the probes alone, and the loop drifts between probes (run 30, finding 3). "probes-only": the probes for every
    case, as until run 30."""
    alone = float(step["host_s"]["mean"])
    hul = comp.get("host_under_load") or {}
    if host_from == "probe-bracket" and unpinned_with_workers:
        windows = unpinned_window_host_s(comp)
        if windows is not None:
            return windows
    if host_from in ("probe-bracket", "probes-only"):
        bracket = host_probe_bracket_s(comp)
        if bracket is not None:
            return bracket
        host_from = "alone-median"
    if host_from == "alone-median":
        return median(loop_host_alone_figures(comp, step))
    loaded = (hul.get("loaded_host_s") or {}).get("mean")
    if host_from != "loaded" or not loaded or "error" in hul:
        return alone
    busy = float(hul.get("busy_processes") or 0) + 1.0
    return float(loaded) * relative_core_speed(cpu_curve, busy)


# The loop beside a thread working on workers' mappings against beside the same bytes copied from private memory:
# above this ratio the loop needs the memory map (scenario training.host_needs_memory_map). Twice the top of the
# loop's own wander alone (5-12% within seconds, run 16 finding 3); run 17 read 1.44-1.56 for ResNet-50.
MEMORY_MAP_EXPOSED_RATIO = 1.25


# The calls of runs 18-27 have no interleaved blocks. Their pin parts' windows count the loop thread's minor faults:
# 49-64 more a step beside the work on workers' mappings for the ResNet-50 loops, 4-5 for the GEMM loops (mm:5,
# mm:25). Run 30 (finding 1) showed these to be copy-on-write after each part's fresh DataLoader fork (the late
# halves read 1 a step), so they count the pages a loop writes, not its stalls; but they tell the ResNet-50 loops
# (their cases lose 0.77 a second of pin work, median of 24) from the GEMM loops, where the windows' drift does not.
# mm:25's cases lose 0.42 a second (median of 48), which only the interleaved rule sees (run 28's B2 on).
MEMORY_MAP_FAULTS_PER_STEP = 20.0


def loop_needs_memory_map(comp: Dict[str, Any]) -> Optional[bool]:
    """Whether the case's training loop stalls while the pin thread works on a worker's mapping, from the harness
    component host_beside_pin_parts (since run 17). Where it has interleaved blocks (pin_memory_interleaved, since
    run 28): the blocks beside pin_memory() slower than alone at 95% with a loss under the work's own time
    (pipeplan_probe.memory_map_needed, the helper's rule too; validation run 30, finding 1). Else, where the parts
    counted the loop's minor faults (since run 18): more than
    MEMORY_MAP_FAULTS_PER_STEP a step beside the pin thread's work than beside the private copy (a proxy, above).
    Else it needs the memory map when the loop ran more than MEMORY_MAP_EXPOSED_RATIO times its base (beside
    "touch", or "copy" in run 17's first call, against "private_copy" or the mean of alone and alone again) and
    slowed by more than the receive's whole CPU per batch (the GIL bound). Without the parts (run 16): from
    host_beside_loader, the loop beside a pinning DataLoader against its windows alone (run 17 found the bulk of
    that slowdown to be the work on the workers' mappings: finding 1). None where the call measured neither (the
    simulator's default: the loop never waits for the map)."""
    def mean_in(c: Dict[str, Any], key: str) -> Optional[float]:
        return positive_mean(c.get(key))

    def mean_of_alone(c: Dict[str, Any]) -> Optional[float]:
        alone = [v for v in (mean_in(c, "alone_host_s"), mean_in(c, "alone_again_host_s")) if v is not None]
        return sum(alone) / len(alone) if alone else None
    c = comp.get("host_beside_pin_parts") or {}
    if c and "error" not in c:
        verdict = memory_map_needed(c.get("pin_memory_interleaved") or {})
        if verdict is not None:
            return bool(verdict["needed"])
        faults = positive_mean(c.get("pin_memory_loop_minor_faults_per_step")) or \
            positive_mean(c.get("touch_loop_minor_faults_per_step"))
        private_faults = c.get("private_copy_loop_minor_faults_per_step")     # 0 is a count here
        if faults is not None and isinstance(private_faults, (int, float)) and math.isfinite(private_faults):
            return faults - private_faults >= MEMORY_MAP_FAULTS_PER_STEP
        exposed = mean_in(c, "touch_host_s") or mean_in(c, "copy_host_s")
        base = mean_in(c, "private_copy_host_s") or mean_of_alone(c)
        gil_bound = mean_in(c, "receive_thread_cpu_s_per_batch") or 0.0
    else:
        c = comp.get("host_beside_loader") or {}
        if not c or "error" in c:
            return None
        exposed, base = mean_in(c, "pinned_host_s"), mean_of_alone(c)
        gil_bound = mean_in(comp.get("transport") or {}, "receive_s_per_batch") or 0.0
    if exposed is None or base is None:
        return None
    return exposed > MEMORY_MAP_EXPOSED_RATIO * base and exposed - base > gil_bound


def memory_map_rate(comp: Dict[str, Any]) -> Optional[float]:
    """The loop's loss per second of the pin thread's pin_memory() inside its steps, measured outside the case by
    host_beside_pin_parts. Preferred: its interleaved blocks (pin_memory_interleaved.rate, since run 28's plan: the
    loop alone and beside the helper in turn, each beside block against its neighbours, so the loop's drift
    cancels). Else (run 27's calls) the difference of means: the loop's mean host time beside its pin_memory helper
    less its mean alone (the windows before and after all the parts), over the helper's work inside a step
    (pin_memory_loop_stall_per_work_overlap.overlap_s_per_step). The cases' own lines read 0.74-0.80 in the GIL calls
    of runs 24-27, 0.52 and 0.66 in run 27's others (validation-runs.md run 26, finding 2; run 27, finding 1); the
    difference of means read 0.77 / 1.15 / 1.04 in run 27. The per-step line fitted within one part (its slope) is
    no such rate: the helper is paced by the loop, its work inside a step barely varies (run 27 read 1.43-1.69 for
    pin_memory). None where the call did not record it or the figure is not a rate (outside 0 to 1)."""
    c = comp.get("host_beside_pin_parts") or {}
    if "error" in c:
        return None
    interleaved = (c.get("pin_memory_interleaved") or {}).get("rate")
    if isinstance(interleaved, (int, float)):
        return float(interleaved) if 0.0 < interleaved < 1.0 else None
    beside = positive_mean(c.get("pin_memory_host_s"))
    alone = [x for x in (positive_mean(c.get("alone_host_s")), positive_mean(c.get("alone_again_host_s"))) if x]
    overlap_s = ((c.get("pin_memory_loop_stall_per_work_overlap") or {}).get("overlap_s_per_step"))
    if not beside or not alone or not isinstance(overlap_s, (int, float)) or overlap_s <= 0:
        return None
    rate = (beside - sum(alone) / len(alone)) / overlap_s
    return rate if 0.0 < rate < 1.0 else None


def transport_scaled(transport: Dict[str, Any], factor: float) -> Dict[str, Any]:
    """The transport component with the main side's costs per batch (receive, receive + pin, and the
    pin_memory() calls inside the pin loop where it has them) times factor."""
    out = dict(transport, receive_s_per_batch=float(transport["receive_s_per_batch"]) * factor,
               pin_s_per_batch=float(transport["pin_s_per_batch"]) * factor)
    if float(transport.get("pin_copy_s_per_batch") or 0.0) > 0:
        out["pin_copy_s_per_batch"] = float(transport["pin_copy_s_per_batch"]) * factor
    return out


def scenario_for(case: Dict[str, Any], machine: Dict[str, Any], min_steps: int = MIN_SIM_STEPS,
                 cpu_curve: Optional[Sequence[Dict[str, float]]] = None, gpu_duty: bool = True,
                 duty_shape: Optional[Sequence[Tuple[float, float]]] = None,
                 duty_time_constant_s: Optional[float] = None,
                 load_curve_from: str = "scaling", host_from: str = "step",
                 launch_tail: str = "loop", memory_map_wait: str = "pin-parts",
                 pin_thread_wait: str = "probes-fd", main_next: str = "probes",
                 copy_call: Optional[float] = None) -> Dict[str, Any]:
    """A pipeplan-scenario/1 document for one measured case (docs/scenario.md keys only). cpu_curve:
    the profile's cpu.speed_vs_busy_cores, needed only to bring a probe measured at K workers back
    to one idle core (the simulator applies the same curve at its busy cores). load_curve_from:
    where a case with a K-worker probe takes the load's speed around K: load_scaling's shape
    ("scaling") or the machine's curve alone ("machine", no dataset curve). launch_tail: "loop" gives the
    step's launch tail from the loop's host probes (launch_tail_s), "off" none. memory_map_wait: "pin-parts" lets a
    loop that needs the memory map slow at the pin-parts probe's rate instead of stopping (memory_map_wait_s), "off"
    the simulator's full stop. pin_thread_wait: "probes" (the default from run 38 to the ninety-second session) gives
    a pinned case the pin thread's time off its core per batch from its pin-bound probes (pin_thread_wait_s;
    "probes-any" with run 38-50's probe rule); "probes-fd" (the default since the ninety-third session, device plan
    item 30) the same, and where no probe is pin-bound the probes' fd hand-overs (fd_handover_wait_s); "off" none (validation-runs.md run 37, findings 2-4; run 38, finding 2). main_next: "probes" (the default since run 42) gives a pinned case with
    workers the loop thread's own CPU in next() from its probes (main_next_s, loader.main_next_s_per_batch), "off"
    none (run 42, finding 8). copy_call: the call's .to() host time (copy_call_s), given to a pinned non_blocking
    case as transfer.copy_call_s_per_batch; None: none."""
    k, comp, m = case["knobs"], case["components"], case["measured"]
    bs, nw = int(k["batch_size"]), int(k["num_workers"])
    load = comp["load"]
    if nw == 0 and (load.get("default_threads") or {}).get("mean"):
        # num_workers=0 loads in the main process, with its default torch threads
        load = load["default_threads"]
    coll = comp["collate"]
    collate_s = float(coll["s_per_batch"]["mean"])
    if nw == 0 and (coll.get("default_threads") or {}).get("mean"):
        collate_s = float(coll["default_threads"]["mean"])   # inline, with the main process's threads
    iw = comp.get("in_worker") or {}
    # a collate timed inside a worker writes into fresh shared memory: the simulator takes it as is
    # (loader.collate_in_shared_memory) rather than under calibrate's shm-write floor
    collate_in_shm = False
    if nw > 0 and iw.get("getitem_wall_s") and iw.get("collate_wall_s"):
        # measured inside one worker process (harness component in_worker): what a worker pays
        load = dict(load, mean=float(iw["getitem_wall_s"]))
        collate_s = float(iw["collate_wall_s"])
        collate_in_shm = True
    lsc = comp.get("load_scaling") or {}
    ls = lsc.get("points") or []
    cores = int(machine.get("cpu_cores") or machine.get("cpu_count") or 0)
    probe = probe_bracket(probe_on_cores(comp.get("probe") or {}, cores),
                          probe_on_cores(comp.get("probe_after") or {}, cores))
    probe_k = int(probe.get("workers") or 1)
    probe_at = probe_busy_cores(probe)
    if nw == 0 and probe.get("workers") == 0 and probe.get("getitem_wall_s") and probe.get("collate_wall_s"):
        # num_workers=0: the inline load timed right before and after the case (harness since run 12): the
        # load measured at the call's start was 34% above the case's own in run 11 (4.59 against 3.43 ms)
        load = dict(load, mean=float(probe["getitem_wall_s"]))
        collate_s = float(probe["collate_wall_s"])
    elif nw > 0 and probe.get("getitem_wall_s") and probe.get("collate_wall_s"):
        # the case's costs timed right before it (harness since run 6; with the case's own worker
        # count since run 7): the machine's speed drifts over a call, and one worker samples one
        # virtual core, so the cost measured next to the case at its concurrency is the one that holds
        load = dict(load, mean=float(probe["getitem_wall_s"]))
        collate_s = float(probe["collate_wall_s"])
        collate_in_shm = True
        if probe_k > 1:
            # measured with K workers: the simulator slows collate by the machine curve at its busy
            # cores, so the base is brought back to one idle core by that curve where it was measured
            collate_s *= relative_core_speed(cpu_curve or [], probe_at)
    elif nw > 0 and lsc.get("collate") and ls and ls[0].get("workers") == 1 and ls[0].get("getitem_s"):
        # load_scaling with the case's batch size and collate (harness since run 5): the base and
        # the curve from one measurement, so the drift between two measurements does not enter
        load = dict(load, mean=float(ls[0]["getitem_s"]))
    worker_overhead_s = float(iw.get("overhead_s_per_batch") or 0.0) if nw > 0 else 0.0
    step = comp["step"]
    item_bytes = coll["batch_bytes"]["mean"] / bs
    epochs = int(k.get("epochs", 1) or 1)
    if epochs > 1:
        spe = int(k["steps_per_epoch"])
        steps, warmup, num_samples = epochs * spe, spe, spe * bs
    else:
        warmup = int(m["skip"])
        steps = warmup + max(int(m["n_measured"]), min_steps)
        num_samples = steps * bs          # one epoch covers the run: no epoch boundary, as measured
    loader: Dict[str, Any] = {
        "batch_size": bs, "num_workers": nw, "pin_memory": bool(k["pin_memory"]),
        "drop_last": True, "in_order": bool(k.get("in_order", True)),
        "collate_s_per_batch": collate_s,
    }
    if nw > 0:
        if collate_in_shm:
            loader["collate_in_shared_memory"] = True
        loader["worker_s_per_batch"] = round(worker_overhead_s, 6)
        wait_s = (pin_thread_wait_s(comp, pin_busier=pin_thread_wait != "probes-any")
                  if k["pin_memory"] and pin_thread_wait in ("probes", "probes-any", "probes-fd") else None)
        if wait_s is None and k["pin_memory"] and pin_thread_wait == "probes-fd":
            wait_s = fd_handover_wait_s(comp)
        if wait_s is not None:
            loader["pin_thread_wait_s_per_batch"] = round(wait_s, 7)
        next_s = main_next_s(comp) if k["pin_memory"] and main_next == "probes" else None
        if next_s is not None:
            loader["main_next_s_per_batch"] = round(next_s, 7)
        loader["prefetch_factor"] = int(k["prefetch_factor"])
        loader["persistent_workers"] = bool(k.get("persistent_workers", False))
        slow = float(k.get("slow_worker_factor", 1.0))
        if slow != 1.0:
            # the harness's straggler: worker 0 (PyTorch's first in its round robin, as the simulator's) takes
            # factor x its batches' own time, spinning in Python with its GIL held unless slow_worker_spin is
            # "nogil" (hashing with the GIL released)
            loader["slow_worker"] = {"worker": 0, "factor": slow,
                                     "holds_gil": k.get("slow_worker_spin", "python") == "python"}
    ws = comp.get("worker_start") or {}
    if nw > 0 and ws.get("per_worker_s") is not None:
        # the whole start-up of nw workers (docs/scenario.md): the measured linear fit of
        # iter(loader) + first batch of a trivial dataset against the worker count
        loader["worker_start_s"] = worker_start_s(ws, nw)
    sb = comp.get("sample_bytes") or {}
    # each point at the cores its window kept busy where measured (harness since run 14), else at its K
    load_curve = sorted(({"busy_cores": round(probe_busy_cores(q), 2), "relative_speed": float(q["relative_speed"])}
                         for q in ls if q.get("relative_speed")), key=lambda q: q["busy_cores"]) if nw > 0 else []
    if probe_k > 1 and nw > 0 and probe.get("getitem_wall_s"):
        if len(load_curve) >= 2 and load_curve_from == "scaling":
            # the probe is the cost at K workers: the dataset's curve is taken relative to K, so the
            # simulator reproduces the probe at K and uses load_scaling only for the shape around it
            # (load_scaling's own one-worker point samples one virtual core: run 6 shows it 20% off)
            at_probe = relative_core_speed(load_curve, probe_at)
            load_curve = [dict(q, relative_speed=q["relative_speed"] / at_probe) for q in load_curve]
        else:
            load = dict(load, mean=float(load["mean"]) * relative_core_speed(cpu_curve or [], probe_at))
            load_curve = []
    load_curve = [dict(q, relative_speed=round(q["relative_speed"], 4)) for q in load_curve]
    dataset = {"num_samples": int(num_samples),
               "item_bytes": max(1, int(round(item_bytes))),
               "load_s_per_sample": _dist(load["mean"], load.get("cv"))}
    if sb.get("mean"):
        dataset["sample_bytes"] = _dist(sb["mean"], sb.get("cv"))
    if len(load_curve) >= 2:
        dataset["load_speed_vs_busy_cores"] = load_curve
    desc = (f"measured case {case['id']} (family {case['family']}, repeat {case.get('repeat', 0)}); "
            f"components measured alone in the same run")
    training = {
        "step_s": step_time(step)[0],
        "step_cv": round(max(0.0, step_time(step)[1]), 4),
        "host_s_per_step": loop_host_s(comp, step, cpu_curve or [], host_from,
                                       unpinned_with_workers=not k.get("pin_memory") and nw > 0),
        "sync_every_steps": int(k["sync_every"]),
        "steps": int(steps),
        "warmup_steps": int(warmup),
    }
    tail = launch_tail_s(comp, step) if launch_tail == "loop" else 0.0
    if tail > 0.0:
        training["launch_tail_s"] = round(tail, 6)
    if loop_needs_memory_map(comp):
        # how often the loop needs the map is the simulator's default (one need every 0.5 ms of its host work):
        # the fault counts that set it until run 30 were copy-on-write after a fork (run 30, finding 1)
        training["host_needs_memory_map"] = True
        rate = memory_map_rate(comp) if memory_map_wait == "pin-parts" else None
        if rate is not None:
            training["memory_map_wait_s"] = round(memory_map_wait_from_rate(training["host_s_per_step"], None, rate), 7)
    iso, sus = _iso_sus(step)
    if duty_time_constant_s and duty_shape is not None and sus > iso > 0:
        # the simulator reads the curve at the busy share a step starts with; under a short time constant
        # that is not the steady duty the shape was measured at
        duty_shape = shape_at_step_start(duty_shape, iso, sus, duty_time_constant_s)
    curve = duty_curve(step, duty_shape) if gpu_duty else None
    # [] where there is none: a profile's own shape (compute.step_vs_gpu_duty) assumes step_s is the
    # back-to-back time, which a host-bound step's isolated step_s is not
    training["step_s_vs_gpu_duty"] = curve or []
    if curve and duty_time_constant_s:
        training["gpu_duty_time_constant_s"] = round(duty_time_constant_s, 5)
    # a loop that decodes the batch's JPEGs on the GPU (the harness's gpudec+ steps): its step component is the step
    # alone, on a decoded batch; the decode comes from its own component
    training.update(gpu_decode_keys(comp))
    seq = sequence_section(case)
    extra: Dict[str, Any] = {}
    if seq:
        # the batch's shape sets its bytes and its GPU step (docs/scenario.md, sequence): the step's fit is the
        # back-to-back time, so no duty curve (one measured on the component's single batch would scale the fixed
        # part alone)
        extra["sequence"], training["step_s"] = seq
        dataset.pop("item_bytes", None)
        training["step_s_vs_gpu_duty"] = []
        training.pop("gpu_duty_time_constant_s", None)
        if extra["sequence"].get("new_shape_host_s") and epochs == 1:
            # the shapes a run has met accumulate, so the share of new ones in the window depends on the steps before
            # and in it: simulate the case's own steps, not min_steps
            training["steps"] = warmup + int(m["n_measured"])
    return dict({
        "schema": "pipeplan-scenario/1",
        "name": case["id"],
        "description": desc,
        "seed": 1,
        "node": {"gpus": 1, "cpu_cores": int(machine.get("cpu_cores") or machine.get("cpu_count") or 1)},
        "dataset": dataset,
        "storage": {"page_cache_hit_ratio": 0.0 if k.get("storage") == "cold" else 1.0},
        "loader": loader,
        "transfer": dict({"non_blocking": bool(k["non_blocking"]), "copy_stream": k["copy_stream"]},
                         **({"copy_call_s_per_batch": round(copy_call, 7)}
                            if copy_call and k["pin_memory"] and k["non_blocking"] else {})),
        "training": training,
    }, **extra)


def relative_core_speed(curve: Sequence[Dict[str, float]], busy: float) -> float:
    """Per-core speed at `busy` busy cores, linear between the points, flat beyond the ends (as
    models/cost_models.cpp relative_core_speed)."""
    pts = sorted(((float(q["busy_cores"]), float(q["relative_speed"])) for q in curve or []))
    if not pts:
        return 1.0
    if busy <= pts[0][0]:
        return pts[0][1]
    for (b0, s0), (b1, s1) in zip(pts, pts[1:]):
        if busy <= b1:
            return s0 + (busy - b0) / (b1 - b0) * (s1 - s0)
    return pts[-1][1]


def transport_busy_cores(transport: Dict[str, Any], worker_collate_s: Optional[float]) -> Tuple[float, float]:
    """Busy cores while the transport component was measured, for its receive loop (pin_memory off:
    the main thread is the limit) and its pin loop (the pin thread is the limit): the limiting
    thread, plus the workers collating at the loop's pace (cached samples: collate is their work),
    at most num_workers of them. Returns (receive loop, pin loop)."""
    nw = float(transport.get("num_workers") or 12)
    c = float(worker_collate_s or 0.0)
    recv = float(transport["receive_s_per_batch"])
    pin = float(transport["pin_s_per_batch"])
    return (1.0 + min(nw, c / recv) if recv > 0 else 1.0,
            1.0 + min(nw, c / pin) if pin > 0 else 1.0)


def receive_loop_release_s(base: Dict[str, Any], batch_bytes: float) -> float:
    """What the transport's receive loop spent releasing each batch it never touched (calibrate's
    ipc.release_untouched_s_per_byte x bytes), where the simulator charges the unpinned batch's release
    apart (a profile with copy.h2d_pageable_fresh_mapping and ipc.release_s_per_byte: calibrate since run
    16); else 0, the loop's time staying the receive. Run 15's unpinned loops spent 5.6-8.0 ms per 38.5 MB
    batch between the step's sync and the next batch: dropping the batch they had copied from."""
    ipc = base.get("ipc") or {}
    if not ((base.get("copy") or {}).get("h2d_pageable_fresh_mapping") and ipc.get("release_s_per_byte") is not None):
        return 0.0
    return float(ipc.get("release_untouched_s_per_byte") or 0.0) * batch_bytes


def copy_curve_time_s(curve: Dict[str, Any], nbytes: float) -> float:
    """A copy's time from a profile's copy curve, as models/cost_models.cpp copy_time_s: latency + bytes / rate
    below the first point, the last point's rate beyond it, the rate linear in log(bytes) between points."""
    if nbytes <= 0:
        return 0.0
    pts = sorted(curve.get("points") or [], key=lambda q: float(q["bytes"]))
    if not pts or nbytes < float(pts[0]["bytes"]):
        return float(curve.get("latency_s") or 0.0) + nbytes / float(curve["bytes_per_s"])
    if nbytes >= float(pts[-1]["bytes"]):
        return nbytes / float(pts[-1]["bytes_per_s"])
    hi = next(i for i, q in enumerate(pts) if float(q["bytes"]) > nbytes)
    lo, up = pts[hi - 1], pts[hi]
    t = (math.log(nbytes) - math.log(float(lo["bytes"]))) / (math.log(float(up["bytes"])) - math.log(float(lo["bytes"])))
    return nbytes / (float(lo["bytes_per_s"]) + t * (float(up["bytes_per_s"]) - float(lo["bytes_per_s"])))


# host_beside_loader's windows that copy and drop an unpinned batch on the loop's thread, the nearest to the case
# first: (copy key, release key, host key)
UNPINNED_LOOP_WINDOWS = (("unpinned_case_like_copy_s", "unpinned_case_like_release_s", "unpinned_case_like_host_s"),
                         ("unpinned_copy_s", "unpinned_release_s", "unpinned_copied_host_s"))
# The case-like window's next() a step (harness since run 26's plan): the unpinned batch's receive on the loop's thread
UNPINNED_NEXT_KEY = "unpinned_case_like_next_s"


def unpinned_window_bracket(components: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The unpinned case's own case-like windows right before and after it (harness components unpinned_window and
    unpinned_window_after, since run 23's plan) as one host_beside_loader-shaped window: each of copy, release and
    host the mean of the two (of the one that worked, where the other failed). None where neither has all three:
    the call's host_beside_loader window stays (run 22, finding 4: it read cheaper than the cases' own)."""
    keys = UNPINNED_LOOP_WINDOWS[0]
    wins = [w for w in ((components or {}).get("unpinned_window") or {},
                        (components or {}).get("unpinned_window_after") or {})
            if all(positive_mean(w.get(k)) for k in keys)]
    if not wins:
        return None
    out: Dict[str, Any] = {"workers": wins[0].get("workers"), "bracketed": len(wins) == 2}
    for k in keys:
        out[k] = {"mean": sum(positive_mean(w[k]) for w in wins) / len(wins)}
    nexts = [v for v in (positive_mean(w.get(UNPINNED_NEXT_KEY)) for w in wins) if v is not None]
    if nexts:                                      # since run 26's plan
        out[UNPINNED_NEXT_KEY] = {"mean": sum(nexts) / len(nexts)}
    return out


def unpinned_loop_beside_loader(prof: Dict[str, Any], case: Dict[str, Any], batch_bytes: float,
                                worker_collate_s: Optional[float], per_case: bool = True,
                                with_next: bool = True) -> Optional[Dict[str, Any]]:
    """An unpinned case's copy and release as its loop's thread paid them beside a live DataLoader (harness
    component host_beside_loader, ResNet-50 steps, since run 18; the case's own way of doing it since run 19), in
    place of calibrate's, which copied from and released a fresh mapping with nothing else running. Run 19 found
    the copy 1.11-1.42x calibrate's in five windows of four calls (the workers' collates share the memory and
    the page-fault path with it) and the release 0.71-1.31x; fed the copy, the release and the case's own host
    time, the simulator put the GIL call's unpinned case within 4% where it was 32% fast. The copy curve
    (copy.h2d_pageable_fresh_mapping) is scaled to the window's copy at this batch's bytes; the release per byte
    (ipc.release_s_per_byte) set from the window's, brought back to one idle core as transport_profile does (the
    simulator slows CPU work by the busy cores itself). per_case: the case's own windows around it where it has
    them (unpinned_window_bracket), else the call's. with_next: where the case-like window also timed next()
    (harness since run 26's plan), the batch's receive inside next() (ipc.receive_s_per_batch, the fresh-mapping
    path's map) set from it the same way. Until then the receive came from the transport loop less calibrate's
    untouched release, which run 25's GIL call put below zero (4.72 ms receive CPU, 4.55 ms release): the model
    charged nothing in next(), where the case's took 1.51 ms (0.92 ms of it CPU) and its windows 1.51 and 1.85.
    Returns {"profile", "copy_s", "release_s", "window"} (and "next_s" where taken), or None where it does not
    apply: pinned or inline cases, a profile without the fresh-mapping copy, no window with the case's worker
    count, or a window without positive figures."""
    k = case.get("knobs") or {}
    nw = int(k.get("num_workers") or 0)
    fresh = (prof.get("copy") or {}).get("h2d_pageable_fresh_mapping")
    if k.get("pin_memory") or nw <= 0 or not fresh or (prof.get("ipc") or {}).get("release_s_per_byte") is None \
            or batch_bytes <= 0:
        return None
    own = unpinned_window_bracket(case.get("components") or {}) if per_case else None
    win = own or (case.get("components") or {}).get("host_beside_loader") or {}
    if int(win.get("workers") or -1) != nw:
        return None
    for copy_key, release_key, host_key in UNPINNED_LOOP_WINDOWS:
        copy_s, release_s, host_s = (positive_mean(win.get(key)) for key in (copy_key, release_key, host_key))
        if copy_s and release_s and host_s:
            break
    else:
        return None
    calibrated_copy_s = copy_curve_time_s(fresh, batch_bytes)
    if calibrated_copy_s <= 0:
        return None
    factor = copy_s / calibrated_copy_s
    out = json.loads(json.dumps(prof))
    curve = out["copy"]["h2d_pageable_fresh_mapping"]
    curve["bytes_per_s"] = float(curve["bytes_per_s"]) / factor
    if curve.get("latency_s") is not None:
        curve["latency_s"] = float(curve["latency_s"]) * factor
    for q in curve.get("points") or []:
        q["bytes_per_s"] = float(q["bytes_per_s"]) / factor
        if q.get("time_s") is not None:
            q["time_s"] = float(q["time_s"]) * factor
    step_s = copy_s + host_s + release_s            # the window's loop: its workers collate at that pace
    busy = 1.0 + min(float(nw), float(worker_collate_s or 0.0) / step_s)
    speed = relative_core_speed((prof.get("cpu") or {}).get("speed_vs_busy_cores") or [], busy)
    out["ipc"]["release_s_per_byte"] = release_s * speed / batch_bytes
    res = {"profile": out, "copy_s": copy_s, "release_s": release_s,
           "window": ("case's own " if own else "") + copy_key.rsplit("_copy_s", 1)[0],
           "calibrated_copy_s": calibrated_copy_s, "busy_cores": busy}
    next_s = positive_mean(win.get(UNPINNED_NEXT_KEY)) if with_next and copy_key == UNPINNED_LOOP_WINDOWS[0][0] else None
    if next_s is not None:
        out["ipc"]["receive_s_per_batch"] = next_s * speed
        res["next_s"] = next_s
    return res


def pin_split_touched_copy_s(points: List[Dict[str, Any]], batch_bytes: float) -> Optional[float]:
    """The copy of touched pages into resident memory for a batch of batch_bytes, from calibrate's interleaved pin
    split (ipc.pin_split_points, since the twenty-ninth session): linear between the two sizes around it, per byte
    of the nearest size outside them. None without usable points."""
    pts = sorted((float(p["bytes"]), float(p["touched_copy_s"])) for p in points or []
                 if float(p.get("bytes") or 0) > 0 and float(p.get("touched_copy_s") or 0) > 0)
    if not pts or batch_bytes <= 0:
        return None
    if batch_bytes <= pts[0][0]:
        return pts[0][1] * batch_bytes / pts[0][0]
    if batch_bytes >= pts[-1][0]:
        return pts[-1][1] * batch_bytes / pts[-1][0]
    for (b0, s0), (b1, s1) in zip(pts, pts[1:]):
        if b0 <= batch_bytes <= b1:
            return s0 if b1 == b0 else s0 + (s1 - s0) * (batch_bytes - b0) / (b1 - b0)
    return None


def transport_profile(base: Dict[str, Any], transport: Dict[str, Any], batch_bytes: float,
                      worker_collate_s: Optional[float] = None, stall_phase_is_pin_memory: bool = False,
                      copy_from_pin_split: bool = False,
                      measured_at_busy_cores: Optional[float] = None) -> Dict[str, Any]:
    """The calibrated profile with the DataLoader's own transport costs, measured alone in the same
    run (harness component `transport`): the main process's receive cost per batch, and the pin
    thread's extra cost per batch turned into a pinning rate for this batch size.

    A profile's CPU costs are those of one core with nothing else running; the simulator slows
    them by cpu.speed_vs_busy_cores at the busy cores of the moment. The transport loops ran with
    their workers collating beside them, so their times already carry that slowdown: they are
    scaled back to one idle core by the same curve at the loops' own busy cores (from
    worker_collate_s, the collate cost inside a worker), or the simulator would apply it twice.

    stall_phase_is_pin_memory (a variant, `--stall-phase pin-memory`; validation run 31, finding 6): the
    simulator's mapping phase (ipc.receive_s_per_byte x the batch, the part a loop that needs the memory map stalls
    in) takes the pin loop's own pin_memory() calls (transport pin_copy_s_per_batch), the rest of the pin thread's
    work the copy phase after it, since the pin-parts probe's rate is a loss per second of the helper's
    pin_memory(). Over the 20 cases it changes it scored worse than calibrate's touch share (the default), so the
    loop loses more in the case than the rate times pin_memory()'s length.

    copy_from_pin_split (a variant, `--stall-phase pin-split`): the copy part of calibrate's split is the
    interleaved pin split's copy of touched pages at this batch's size (pin_split_touched_copy_s) instead of
    host.pin_copy_bytes_per_s (one 256 MiB reading minutes apart from the receive fit); the touch part stays the
    receive's per-byte cost. Without pin split points in the profile it is the default.

    measured_at_busy_cores: where the transport's figures were scaled to the probes around the case
    (main_side_drift), they are the probes' readings, taken at the probes' busy cores
    (main_side_busy_cores); both loops are then brought to one idle core at those, not at the transport loops'
    own (`--transport-busy probes`; validation-runs.md run 37, finding 3)."""
    prof = json.loads(json.dumps(base))
    curve = (base.get("cpu") or {}).get("speed_vs_busy_cores") or []
    busy_recv, busy_pin = transport_busy_cores(transport, worker_collate_s)
    if measured_at_busy_cores is not None:
        busy_recv = busy_pin = float(measured_at_busy_cores)
    speed_recv, speed_pin = relative_core_speed(curve, busy_recv), relative_core_speed(curve, busy_pin)
    recv = float(transport["receive_s_per_batch"]) * speed_recv
    # The transport loop never touches the batch, so its receive excludes the first touch of the
    # mapped pages; the pin loop's time beyond the receive is that touch plus the copy into pinned
    # memory, measured together. The calibrated profile measured the two apart, minutes earlier:
    # its split is kept and scaled to the measured sum. (Until run 6 the calibrated touch was kept
    # whole and the copy took the rest; when the calibrated touch alone exceeded the rest (run 6,
    # call 2: 10.8 ms of touch against 10.4 ms measured) the copy fell back to the calibrated rate
    # and the pin loop came out 25% slower than measured.)
    # The receive loop also released each batch it dropped; where the simulator charges an unpinned batch's
    # release apart, that part leaves the receive (the pin loop's total stays whole: the rest grows by it).
    recv = max(0.0, recv - receive_loop_release_s(base, batch_bytes))
    per_byte = float((base.get("ipc") or {}).get("receive_s_per_byte") or 0.0)
    copy_rate = float((base.get("host") or {}).get("pin_copy_bytes_per_s") or 0.0)
    touch_s = per_byte * batch_bytes
    copy_s = batch_bytes / copy_rate if copy_rate > 0 else 0.0
    split_copy_s = pin_split_touched_copy_s((base.get("ipc") or {}).get("pin_split_points") or [], batch_bytes) \
        if copy_from_pin_split else None
    if split_copy_s is not None:
        copy_s, copy_rate = split_copy_s, batch_bytes / split_copy_s
    rest = float(transport["pin_s_per_batch"]) * speed_pin - recv
    prof.setdefault("ipc", {})
    prof["ipc"]["receive_s_per_batch"] = recv
    prof["ipc"].pop("points", None)
    pin_memory_s = float(transport.get("pin_copy_s_per_batch") or 0.0) * speed_pin
    if stall_phase_is_pin_memory and rest > 0 and batch_bytes > 0 and pin_memory_s > 0:
        stall_s = min(pin_memory_s, rest)
        prof["ipc"]["receive_s_per_byte"] = stall_s / batch_bytes
        # what is left after it (the free's unmap, the queue): at least a microsecond, the rate must stay finite
        prof.setdefault("host", {})["pin_copy_bytes_per_s"] = batch_bytes / max(rest - stall_s, 1e-6)
    elif rest > 0 and batch_bytes > 0 and touch_s + copy_s > 0:
        scale = rest / (touch_s + copy_s)
        prof["ipc"]["receive_s_per_byte"] = per_byte * scale
        if copy_s > 0:
            prof.setdefault("host", {})["pin_copy_bytes_per_s"] = copy_rate / scale
    prof.setdefault("provenance", {})["note"] = (
        "validation: ipc and pin rate replaced by the DataLoader transport measured alone in the same run "
        f"(convert.py --transport measured), scaled to one idle core: receive loop {busy_recv:.1f} busy cores "
        f"(speed {speed_recv:.3f}), pin loop {busy_pin:.1f} (speed {speed_pin:.3f})")
    return prof


# ============================================================================ sweep inputs
# The knobs that change what a probe or the transport measures: cases of one call that agree on them
# share one set of inputs in the sweep-style prediction (SWEEP_KEYS below).
SWEEP_KEYS = ("kind", "batch_size", "num_workers", "pin_memory", "storage", "collate")


def sweep_key(case: Dict[str, Any]) -> str:
    """Cases of one call whose components measure the same thing: same data kind, batch size,
    num_workers, pin_memory, storage and collate. The other knobs (in_order, prefetch_factor,
    persistent_workers, non_blocking, copy stream, sync_every, the GPU step) leave the probes'
    subject unchanged: a what-if sweep predicts all of them from one set of inputs."""
    k = case.get("knobs") or {}
    return call_tag(case["id"]) + json.dumps({key: k.get(key) for key in SWEEP_KEYS}, sort_keys=True)


# (file, JSON path, averaged as its inverse) of each input measured around the case rather than once
# per call; a rate is averaged as the time it stands for (bytes/s as s/byte)
SWEEP_INPUTS = (("scenario", ("dataset", "load_s_per_sample", "mean"), False),
                ("scenario", ("loader", "collate_s_per_batch"), False),
                ("profile", ("ipc", "receive_s_per_batch"), False),
                ("profile", ("ipc", "receive_s_per_byte"), False),
                ("profile", ("host", "pin_copy_bytes_per_s"), True),
                ("profile", ("cpu", "core_speed_cv"), False),
                ("profile", ("cpu", "core_speed_correlation_s"), False))


def _path_get(doc: Dict[str, Any], path: Sequence[str]) -> Optional[float]:
    x: Any = doc
    for key in path:
        if isinstance(x, dict) and key in x:
            x = x[key]
        else:
            return None
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _path_set(doc: Dict[str, Any], path: Sequence[str], value: float) -> None:
    x = doc
    for key in path[:-1]:
        x = x.setdefault(key, {})
    x[path[-1]] = value


def pooled_inputs(members: Sequence[Tuple[Dict[str, Any], Dict[str, Any]]]) -> Dict[Tuple[str, Tuple[str, ...]], float]:
    """The mean of each SWEEP_INPUTS value over a group's (scenario, profile) pairs (a rate through its
    inverse); an input is pooled only where every member has it (a per-case figure never mixes with a
    per-call one)."""
    pooled = {}
    for which, path, inverse in SWEEP_INPUTS:
        vals = [_path_get(scen if which == "scenario" else prof, path) for scen, prof in members]
        if vals and all(v is not None and (v > 0 or not inverse) for v in vals):
            mean = sum(1.0 / v if inverse else v for v in vals) / len(vals)
            pooled[(which, path)] = 1.0 / mean if inverse else mean
    return pooled


def with_pooled(scen: Dict[str, Any], prof: Dict[str, Any],
                pooled: Dict[Tuple[str, Tuple[str, ...]], float]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Copies of a case's scenario and profile with the group's pooled inputs."""
    scen, prof = json.loads(json.dumps(scen)), json.loads(json.dumps(prof))
    for (which, path), v in pooled.items():
        _path_set(scen if which == "scenario" else prof, path, v)
    return scen, prof


def wander_note(mode: str, n_from_probes: int) -> str:
    """The report's line on where the workers' wander came from (--wander)."""
    if mode == "profile":
        return "the profile's for every case (`--wander profile`)"
    what = ("the workers' wander (cv) from the probes around them" if mode == "probe"
            else "the probes' cv and the profile's correlation time")
    return f"{n_from_probes} case(s) with {what} (`--wander {mode}`), the others the profile's"


# ============================================================================ simulate
def run_pipeplan(binary: str, scenario_path: str, profile: Optional[str], timeout_s: float = 300,
                 extra: Sequence[str] = ()) -> Dict[str, Any]:
    cmd = [binary, "simulate", scenario_path]
    if profile:
        cmd += ["--profile", profile]
    cmd += ["--format", "json", *extra]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout_s}s", "command": shlex.join(cmd)}
    except OSError as e:
        return {"error": f"cannot run {binary}: {e}", "command": shlex.join(cmd)}
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[:500]}", "command": shlex.join(cmd)}
    try:
        out = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        return {"error": f"output is not JSON: {e}", "command": shlex.join(cmd)}
    return {"result": out, "command": shlex.join(cmd)}


def _get(d: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


def combine_replications(results: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """One prediction from the same scenario simulated with several seeds. A measured case is one
    draw of a random process (sample costs, the cores' wander) over a finite window; so is one
    simulation, and with a wander correlated over a second its 400-step window spreads by several
    percent from seed to seed. The prediction is the expectation: the mean over seeds of throughput,
    step time mean and p90 (the expected p90 of such a window), GPU and workers' busy shares; the
    bottleneck stage the seeds name most often (ties: the earliest seed's), with that seed's
    explanation. Adds `replications`: n and the seeds' cv of throughput and of the p90 step time."""
    if len(results) == 1:
        return results[0]

    def mean_of(path: str) -> Optional[float]:
        v = [_get(r, path) for r in results]
        v = [x for x in v if x is not None]
        return sum(v) / len(v) if v else None

    def cv_of(path: str) -> Optional[float]:
        v = [x for x in (_get(r, path) for r in results) if x is not None]
        if len(v) < 2 or sum(v) <= 0:
            return None
        m = sum(v) / len(v)
        return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) / m

    stages = [_get(r, "bottleneck.stage") for r in results]
    counts = {st: stages.count(st) for st in stages}
    top = max(counts.values())
    chosen = next(i for i, st in enumerate(stages) if counts[st] == top)
    out = json.loads(json.dumps(results[chosen]))
    out["throughput"]["samples_per_s"] = mean_of("throughput.samples_per_s")
    for key in ("mean", "p80", "p90", "p95"):
        if _get(out, f"step_time_s.{key}") is not None:
            out["step_time_s"][key] = mean_of(f"step_time_s.{key}")
    if _get(out, "long_step_fraction") is not None:
        out["long_step_fraction"] = mean_of("long_step_fraction")
    flags = [r.get("step_p90_on_edge") for r in results if r.get("step_p90_on_edge") is not None]
    if flags:   # the seeds' majority: the edge is a property of the setting, not of one seed's luck
        out["step_p90_on_edge"] = 2 * sum(1 for f in flags if f) >= len(flags)
    if _get(out, "gpu.busy_fraction") is not None:
        out["gpu"]["busy_fraction"] = mean_of("gpu.busy_fraction")
    if _get(out, "loader.out_of_order_fraction") is not None:
        out["loader"]["out_of_order_fraction"] = mean_of("loader.out_of_order_fraction")
    # cold reads (forty-sixth, forty-seventh, forty-eighth sessions)
    for key in ("readers_in_flight_mean", "wait_s_per_file_mean", "getitem_in_flight_mean"):
        if _get(out, f"storage.{key}") is not None:
            out["storage"][key] = mean_of(f"storage.{key}")
    for st in out.get("stages") or []:
        v = [next((x.get("busy_fraction") for x in (r.get("stages") or []) if x.get("name") == st.get("name")), None)
             for r in results]
        v = [x for x in v if x is not None]
        if v and st.get("busy_fraction") is not None:
            st["busy_fraction"] = sum(v) / len(v)
    out["replications"] = {"n": len(results), "seeds_cv_samples_per_s": cv_of("throughput.samples_per_s"),
                           "seeds_cv_step_p90_s": cv_of("step_time_s.p90"),
                           "bottleneck_votes": counts}
    return out


def step_p90_err_groups(group: Sequence[float], others: Sequence[float]) -> Dict[str, Any]:
    """Pure: the abs errors of the p90 step in a group of cases and in the others, as median and p90 of each."""
    return {"n": len(group), "n_other": len(others),
            "median_abs_step_p90_err": median(group), "p90_abs_step_p90_err": percentile(group, 0.9),
            "other_median_abs_step_p90_err": median(others) if others else None,
            "other_p90_abs_step_p90_err": percentile(others, 0.9) if others else None}


def flagged_edge_summary(rows: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """Pure: the cases pipeplan itself flags with its p90 step on an edge (`step_p90_on_edge`: its step time rises
    1.3x or more from its p85 to its p95, sim/step_stats.hpp) against the others: the abs error of the p90 step in
    each group, and how often the measured p90 falls inside the band the report names for a flagged case (its p80 to
    its p95). None without a flagged case."""
    flagged, others, inside = [], [], 0
    for r in rows:
        p = r.get("pipeplan") or {}
        err, flag = p.get("step_p90_err"), p.get("step_p90_on_edge")
        if err is None or flag is None:
            continue
        if flag:
            flagged.append(abs(err))
            lo, hi, meas = p.get("step_p80_s"), p.get("step_p95_s"), (r.get("measured") or {}).get("step_p90_s")
            if None not in (lo, hi, meas) and lo <= meas <= hi:
                inside += 1
        else:
            others.append(abs(err))
    if not flagged:
        return None
    return dict(step_p90_err_groups(flagged, others), share_measured_inside_p80_p95=inside / len(flagged))


def leave_one_out_errors(values: Sequence[float]) -> List[Optional[float]]:
    """Each measurement predicted by the mean of the others of its setting (same call): |others' mean - x| / x.
    What a predictor that knew everything but this run's luck would score against single runs: the
    repeatability ceiling of the ground truth. None where x is not positive or it has no others."""
    out: List[Optional[float]] = []
    for i, x in enumerate(values):
        others = [v for j, v in enumerate(values) if j != i]
        out.append(abs(sum(others) / len(others) - x) / x if others and x > 0 else None)
    return out


def cold_read_latency_s(case: Dict[str, Any], file_bytes: float, profile: Optional[Dict[str, Any]]) -> Optional[float]:
    """A cold case's wait per file beyond its bytes at the one-reader stream rate: the `load_cold` component (one
    process loading the dataset's own files cold, as a user can time it) less its CPU, less the mean file's bytes at
    calibrate's stream rate; at least the profile's per-request latency (fio's random 4 KiB reads). The scenario's
    storage.read_latency_s, paid once a file. Run 21 (finding 7): calibrate reads 640 KiB files only, so a small
    file's fixed cost (open, metadata, its first request) is not in its figures: the 93 KB JPEGs waited 0.08-0.34 ms
    a file alone against 0.025-0.039 ms of fio latency. None for a warm case or without the component or the rate."""
    if (case.get("knobs") or {}).get("storage") != "cold":
        return None
    lc = (case.get("components") or {}).get("load_cold") or {}
    storage = (profile or {}).get("storage") or {}
    wall, cpu = lc.get("mean"), lc.get("cpu_s_per_sample")
    if not isinstance(wall, (int, float)) or not isinstance(cpu, (int, float)):
        return None
    # None without a stream rate or the file's bytes: the shared formula says so
    return _cold_wait_beyond_bytes_s(wall, cpu, file_bytes, float(storage.get("stream_read_bytes_per_s") or 0.0),
                                     float(storage.get("read_latency_s") or 0.0))


def wall_less_cpu_s(wall: Any, cpu: Any) -> Optional[float]:
    """A timing's wait: its wall less its CPU, never below 0 (clock grain); None unless both are numbers."""
    if not isinstance(wall, (int, float)) or not isinstance(cpu, (int, float)):
        return None
    return max(0.0, float(wall) - float(cpu))


def lone_cold_waits_s(case: Dict[str, Any]) -> tuple:
    """A cold case's load_cold component as waits a file (wall less CPU): with the whole cache dropped (pages,
    inodes, directory entries: the component convert reads), and with the pages alone dropped (`pages_only`, harness
    since the forty-eighth session). (None, None) where absent."""
    lc = (case.get("components") or {}).get("load_cold") or {}
    pages = lc.get("pages_only") or {}
    return (wall_less_cpu_s(lc.get("mean"), lc.get("cpu_s_per_sample")),
            wall_less_cpu_s(pages.get("mean"), pages.get("cpu_s_per_sample")))


def no_gpu_cold_wait_s(case: Dict[str, Any]) -> Optional[float]:
    """A cold case's workers' wait a file (getitem wall less CPU) in the harness's probe right after it: the cache
    dropped again, the same loader without its pin thread or a GPU (components.probe_cold_no_gpu, since the
    forty-eighth session). None where absent or failed."""
    p = (case.get("components") or {}).get("probe_cold_no_gpu") or {}
    return wall_less_cpu_s(p.get("getitem_wall_s"), p.get("getitem_cpu_s"))


def cold_case_probes(c: Dict[str, Any], how: str) -> Dict[str, Any]:
    """The case as scenario_for should see it. how="after" (default): a cold case's loader probe is the one after
    it, on the re-warmed cache (harness since run 17). how="warm-and-after": the probe the harness takes before a
    cold case while its dataset is still warm (`probe_warm`, since run 23's plan) stands as its probe before, so
    the two bracket it as for a warm case (probe_bracket); the probe after read 0.72x the warm sibling's probes over
    runs 17-22 (validation-runs.md run 22, finding 3). Other cases, or a cold case without a usable probe_warm: as is."""
    comps = c.get("components") or {}
    if how != "warm-and-after" or (c.get("knobs") or {}).get("storage") != "cold" \
            or not (comps.get("probe_warm") or {}).get("getitem_wall_s"):
        return c
    return dict(c, components=dict(comps, probe=comps["probe_warm"]))


def gpu_clock_humps(components: Dict[str, Any], key: str) -> Optional[Dict[str, Any]]:
    """training.gpu_clock_humps from a call's duty curves (harness since run 44: each point's per-step times,
    `steps_s`; validation-runs.md run 45, finding 2): the period and high share, medians over the call's humped points
    (duty_hump_diagnostic.hump_reading), and step model `key`'s amplitude at each of its points and at duty 1 (its
    sustained interval): a two-level wave whose high level is its p90, so amplitude = (p90 / mean - 1) / (1 - high
    share), 0 where the step is flat. None without a humped point in the call or per-step times for `key`."""
    import duty_hump_diagnostic as humps_diag   # it imports this module: here, not at the top
    curves = (components or {}).get("gpu_duty_curves") or {}
    readings = {k: [(float(p.get("duty") or 0.0), humps_diag.hump_reading(p.get("steps_s") or [], float(p.get("duty") or 0.0)))
                    for p in (c.get("points") or [])] for k, c in curves.items()}
    humped = [r for pts in readings.values() for _, r in pts if r and r["spells"]]
    periods = [r["period_s"] for r in humped if r["period_s"] is not None]
    own = [(d, r) for d, r in readings.get(key) or [] if r is not None]
    if not humped or not periods or not own:
        return None
    high_share = statistics.median(r["high_share"] for r in humped)
    points = [{"duty": round(min(d, 1.0), 4), "amplitude": round(max(0.0, (r["p90_over_mean"] - 1.0) / (1.0 - high_share)), 4)}
              for d, r in own]
    sus = (((components or {}).get("step") or {}).get(key) or {}).get("sustained_interval_s") or {}
    if sus.get("mean") and sus.get("p90"):
        points.append({"duty": 1.0, "amplitude": round(max(0.0, (sus["p90"] / sus["mean"] - 1.0) / (1.0 - high_share)), 4)})
    return {"period_s": round(statistics.median(periods), 4), "high_share": round(high_share, 4),
            "amplitude_vs_gpu_duty": sorted(points, key=lambda q: q["duty"])}


def back_to_back_host_factor(step: Dict[str, Any]) -> Optional[float]:
    """Pure: training.back_to_back_host_factor from the case's step component: its launches timed right after another
    step's with no sync between (host_after_launch_s, harness since the fifty-ninth session) over the same after a
    sync (host_s), clamped to the simulator's range 0.05-2; None where the harness did not time the first."""
    after = ((step or {}).get("host_after_launch_s") or {}).get("mean")
    alone = ((step or {}).get("host_s") or {}).get("mean")
    if not after or not alone or after != after or alone <= 0:
        return None
    return round(min(2.0, max(0.05, float(after) / float(alone))), 4)


def back_to_back_factor_option(option: str, step: Dict[str, Any]) -> Optional[float]:
    """Pure: the factor `--back-to-back` gives a case: measured (back_to_back_host_factor, None where not timed),
    off (None: the simulator's 1) or a number (a what-if)."""
    if option == "measured":
        return back_to_back_host_factor(step)
    if option == "off":
        return None
    return round(min(2.0, max(0.05, float(option))), 4)


def case_inputs(c: Dict[str, Any], machine: Dict[str, Any], run_profile: Optional[Dict[str, Any]],
                a: argparse.Namespace, cpu_curve: Sequence[Dict[str, float]],
                duty_shape: Optional[Sequence[Tuple[float, float]]], simulate: bool = True,
                duty_time_constant_s: Optional[float] = None, call_components: Optional[Dict[str, Any]] = None
                ) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    """One case's scenario and, where it differs from the call's profile, its own profile (the main
    side's transport as the probes around it found it, the workers' wander from the probes). Notes what
    it took from the probes under c["convert"]. a: convert's options (min_steps, gpu_duty, load_curve,
    transport, wander, copy_call). call_components: the call's components (its once-a-call probes)."""
    call_copy_s = copy_call_s(call_components or {}) if getattr(a, "copy_call", "probe") == "probe" else None
    scen = scenario_for(cold_case_probes(c, getattr(a, "cold_probe", "after")), machine, a.min_steps, cpu_curve,
                        gpu_duty=a.gpu_duty != "off", duty_shape=duty_shape,
                        duty_time_constant_s=duty_time_constant_s, load_curve_from=a.load_curve,
                        host_from=getattr(a, "host_from", "probe-bracket"),
                        launch_tail=getattr(a, "launch_tail", "loop"),
                        memory_map_wait=getattr(a, "memory_map_wait", "pin-parts"),
                        pin_thread_wait=getattr(a, "pin_thread_wait", "probes-fd"),
                        main_next=getattr(a, "main_next", "probes"), copy_call=call_copy_s)
    b2b = back_to_back_factor_option(getattr(a, "back_to_back", "measured"),
                                     ((c.get("components") or {}).get("step") or {}))
    if b2b is not None:
        scen["training"]["back_to_back_host_factor"] = b2b
        c.setdefault("convert", {})["back_to_back_host_factor"] = b2b
    if scen["training"].get("launch_tail_s"):
        c.setdefault("convert", {})["launch_tail_s"] = scen["training"]["launch_tail_s"]
    if scen["training"].get("memory_map_wait_s"):
        c.setdefault("convert", {})["memory_map_wait_s"] = scen["training"]["memory_map_wait_s"]
    if getattr(a, "cold_latency", "load-cold") == "load-cold":
        ds = scen["dataset"]
        file_bytes = positive_mean(ds.get("sample_bytes")) or positive_mean(ds.get("item_bytes")) or 0.0
        latency = cold_read_latency_s(c, file_bytes, run_profile)
        if latency is not None:
            scen["storage"]["read_latency_s"] = round(latency, 9)
            c.setdefault("convert", {})["cold_read_latency_s"] = latency
    if scen["storage"].get("page_cache_hit_ratio", 1.0) < 1.0:  # the cold read model's what-ifs
        read_pieces = getattr(a, "read_pieces", None)
        if read_pieces is not None:
            scen["storage"]["read_pieces_per_batch"] = int(read_pieces)
        # (option, the simulator's default, scenario key): a key is written only away from the default
        for option, default, key in COLD_READ_CHOICES:
            choice = getattr(a, option, default)
            if choice != default:
                scen["storage"][key] = choice.replace("-", "_")
    base_profile = run_profile if (simulate and a.transport == "measured") else None
    tr = (c.get("components") or {}).get("transport")
    case_profile = None
    if base_profile is not None and tr:
        bb = float(c["components"]["collate"]["batch_bytes"]["mean"])
        if getattr(a, "transport_clock", "cpu") == "cpu":
            tr = transport_on_cpu_clock(tr)
        # off: the transport as the component measured it once in the call, as a user's helper would (user_path)
        drift = (main_side_drift(c, getattr(a, "probe_pin_window", "whole"))
                 if getattr(a, "transport_drift", "probes") == "probes" else None)
        measured_at = None
        if drift is not None:
            # the main side's cost as the probes around the case found it (receive and pin alike)
            tr = transport_scaled(tr, drift)
            c.setdefault("convert", {})["main_side_drift"] = drift
            if getattr(a, "transport_busy", "probes") == "probes":
                measured_at = main_side_busy_cores(c)
        phase_mode = getattr(a, "stall_phase", "calibrate-split")
        stall_phase = phase_mode == "pin-memory" and bool(scen["training"].get("memory_map_wait_s"))
        copy_from_split = phase_mode == "pin-split"
        case_profile = transport_profile(base_profile, tr, bb, worker_collate_cost(c),
                                         stall_phase_is_pin_memory=stall_phase, copy_from_pin_split=copy_from_split,
                                         measured_at_busy_cores=measured_at)
        if stall_phase:
            c.setdefault("convert", {})["stall_phase"] = "pin_memory"
        elif copy_from_split and (base_profile.get("ipc") or {}).get("pin_split_points"):
            c.setdefault("convert", {})["stall_phase"] = "pin_split"
        loop = unpinned_loop_beside_loader(case_profile, c, bb, worker_collate_cost(c),
                                           per_case=getattr(a, "unpinned_window", "case") == "case",
                                           with_next=getattr(a, "unpinned_next", "window") == "window") \
            if getattr(a, "unpinned_loop", "beside-loader") == "beside-loader" else None
        if loop is not None:
            case_profile = loop.pop("profile")
            c.setdefault("convert", {})["unpinned_loop"] = loop
    wander = probe_wander(c) if (a.wander in ("probe", "probe-cv") and run_profile is not None) else None
    if wander is not None and a.wander == "probe-cv":
        wander = dict(wander, correlation_s=None)  # the profile's correlation time stays
    if wander is not None:
        # the workers' wander as the probes around the case found it, in place of calibrate's
        case_profile = json.loads(json.dumps(case_profile or run_profile))
        cpu = case_profile.setdefault("cpu", {})
        cpu["core_speed_cv"] = round(wander["cv"], 4)
        if wander["correlation_s"] is not None:
            cpu["core_speed_correlation_s"] = round(wander["correlation_s"], 4)
            if getattr(a, "wander_memory", "seconds") == "batches":
                # a worker's wander counts its batches (validation run 59, finding 2): the probes' lag-one a batch
                cpu["core_speed_correlation_batches"] = round(wander["correlation_batches"], 4)
            elif getattr(a, "wander_memory", "seconds") == "batches-two-part":
                cpu.update(two_part_batch_wander(wander["cv"], math.exp(-1.0 / wander["correlation_batches"])))
        c.setdefault("convert", {})["wander"] = wander
    long_parts = (wander_long_parts(c["knobs"], call_components or {}, scen,
                                    with_level=getattr(a, "wander_long", "off") == "parts")
                  if getattr(a, "wander_long", "off") != "off" and run_profile is not None else None)
    if long_parts is not None:
        # a what-if: the workers' wander in two parts (and a level) fitted to the call's long reading of this loader
        case_profile = json.loads(json.dumps(case_profile or run_profile))
        case_profile.setdefault("cpu", {}).update(long_parts)
        c.setdefault("convert", {})["wander_long"] = long_parts
    pin_cv = (probe_pin_cycle_cv(c["components"]) if c["knobs"].get("pin_memory") and run_profile is not None
              and getattr(a, "pin_cycle", "off") == "probes" else None)
    if pin_cv is not None:
        # the pin thread's own spread as its probes found it, in place of the cores'
        case_profile = json.loads(json.dumps(case_profile or run_profile))
        case_profile.setdefault("cpu", {})["pin_thread_speed_cv"] = round(min(pin_cv, 2.0), 4)
        c.setdefault("convert", {})["pin_thread_speed_cv"] = round(pin_cv, 4)
    put_share = getattr(a, "worker_put_share", None)
    if put_share is not None and scen["loader"].get("num_workers", 0) > 0:
        # a what-if: the share of worker_s_per_batch before the hand-off (the simulator's default 0.67: run 79)
        scen["loader"]["worker_put_share"] = put_share
    turnaround = getattr(a, "worker_turnaround_share", None)
    if getattr(a, "worker_turnaround_from_probes", False) and scen["loader"].get("num_workers", 0) > 0:
        measured = probe_turnaround_share(c.get("components") or {}, scen["loader"].get("worker_s_per_batch") or 0.0,
                                          c["knobs"].get("batch_size"))
        if measured is not None:
            turnaround = measured
            c.setdefault("convert", {})["worker_turnaround_share"] = measured
    if turnaround is not None and scen["loader"].get("num_workers", 0) > 0:
        # a what-if: the worker's turnaround after a collate as a share of worker_s_per_batch, the put beside it
        scen["loader"]["worker_turnaround_share"] = turnaround
    if getattr(a, "gpu_humps", "off") == "duty-curve" and scen["training"].get("step_s_vs_gpu_duty"):
        humps = gpu_clock_humps(call_components or {}, step_key(c))
        if humps is not None:
            scen["training"]["gpu_clock_humps"] = humps
            c.setdefault("convert", {})["gpu_clock_humps"] = humps
    return scen, case_profile


def simulate_replicated(binary: str, scenario_path: str, profile: Optional[str], timeout_s: float,
                        seeds: int) -> Dict[str, Any]:
    """run_pipeplan with --seed 1..seeds, combined (combine_replications); the first error wins. The seeds run at
    once, one process per core (each seed's result is the same however they are scheduled): run 26's B1 call
    scored in 16.8 s instead of 21.7 on 2 cores, the same report."""
    return simulate_seeds(binary, [scenario_path] * seeds, profile, timeout_s)


def simulate_seeds(binary: str, scenario_paths: Sequence[str], profile: Optional[str], timeout_s: float
                   ) -> Dict[str, Any]:
    """Seed k simulates scenario_paths[k - 1] (all the same file for simulate_replicated; one surrogate draw each for
    insitu_diagnostic's replays), at once, one process per core; combined, the first error wins."""
    from concurrent.futures import ThreadPoolExecutor
    seeds = len(scenario_paths)
    with ThreadPoolExecutor(max_workers=max(1, min(seeds, os.cpu_count() or 1))) as pool:
        runs = list(pool.map(lambda k: run_pipeplan(binary, scenario_paths[k - 1], profile, timeout_s,
                                                    ["--seed", str(k)]), range(1, seeds + 1)))
    bad = next((r for r in runs if "error" in r), None)
    if bad:
        return bad
    return {"result": combine_replications([r["result"] for r in runs]),
            "command": runs[0]["command"] + (f" (and --seed 2..{seeds}, averaged)" if seeds > 1 else "")}


# ============================================================================ evaluation
def _timeline(case: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """timeline_analysis.analyse of the case's worker timeline (harness --timeline), or None."""
    tl = (case.get("measured") or {}).get("timeline")
    k = case.get("knobs") or {}
    if not tl or int(k.get("num_workers", 0)) < 2 or int(k.get("epochs", 1) or 1) > 1:
        return None
    import timeline_analysis   # noqa: E402 (beside this file; only for cases with a timeline)
    return timeline_analysis.analyse(tl, int(k["num_workers"]), int(k["prefetch_factor"]),
                                     bool(k.get("in_order", True)))


def _one_epoch_timeline(case: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The case's main-loop timeline (harness --timeline) where it has one epoch, else None: the per-step readings
    below assume one pass of the loader."""
    tl = (case.get("measured") or {}).get("timeline")
    if not tl or int((case.get("knobs") or {}).get("epochs", 1) or 1) > 1:
        return None
    return tl


def loop_in_situ_s(case: Dict[str, Any]) -> Optional[float]:
    """The training loop's median time between receiving a batch and asking for the next inside the
    case (timeline_analysis.loop_s_between_batches), or None without a timeline."""
    tl = _one_epoch_timeline(case)
    if tl is None:
        return None
    import timeline_analysis   # noqa: E402
    return timeline_analysis.loop_s_between_batches(tl)


def p90_step_halves_diff(case: Dict[str, Any]) -> Optional[float]:
    """How far the p90 step of the first half of the case's steady steps is from the second half's, over their mean
    (timeline_analysis.p90_halves): the ground truth's own precision, case by case. From the case's timeline (the
    loop's next() to next()) where it has one, else from the harness's own halves of the GPU-side step intervals
    (`measured.step_p90_halves`, harness since the seventy-ninth session); None for a case with neither."""
    tl = _one_epoch_timeline(case)
    if tl is not None:
        import timeline_analysis   # noqa: E402
        return (timeline_analysis.p90_step_halves(tl) or {}).get("rel_diff")
    return ((case.get("measured") or {}).get("step_p90_halves") or {}).get("rel_diff")


def waiting_step_share(case: Dict[str, Any]) -> Optional[float]:
    """The share of the case's steady steps that waited for a batch more than a quarter of the mean step
    (timeline_analysis.waiting_step_share), or None without a timeline."""
    tl = _one_epoch_timeline(case)
    if tl is None:
        return None
    import timeline_analysis   # noqa: E402
    return timeline_analysis.waiting_step_share(tl)


def long_step_share(case: Dict[str, Any]) -> Optional[float]:
    """The share of the case's steady steps longer than 1.5x their median, as the simulator counts its own
    (timeline_analysis.long_step_share, sim/step_stats.hpp), or None without a timeline."""
    tl = _one_epoch_timeline(case)
    if tl is None:
        return None
    import timeline_analysis   # noqa: E402
    return timeline_analysis.long_step_share(tl)


# The share of long steps at which the p90 step moves from the short steps to the long ones.
LONG_SHARE_EDGE = 0.10


def long_share_sides(rows: Sequence[Dict[str, Any]], edge: float = LONG_SHARE_EDGE) -> Optional[Dict[str, Any]]:
    """Pure: the cases whose long steps' share was measured and simulated, split by whether the two fall on the same
    side of `edge` (a tenth: where the p90 step changes kind), with the abs error of the p90 step in each group and
    the two shares' medians. How many of the p90 step's misses are a case landing on the other side of the edge
    from the model (validation-runs.md run 41, finding 6). None without such cases."""
    pairs = [(r["measured"]["long_step_share"], r["pipeplan"]["long_step_fraction"], abs(r["pipeplan"]["step_p90_err"]))
             for r in rows if r.get("pipeplan") and r["pipeplan"].get("step_p90_err") is not None
             and r["pipeplan"].get("long_step_fraction") is not None
             and r["measured"].get("long_step_share") is not None]
    if not pairs:
        return None
    same = [e for m, p, e in pairs if (m > edge) == (p > edge)]
    other = [e for m, p, e in pairs if (m > edge) != (p > edge)]
    return dict(step_p90_err_groups(same, other) if same else {"n": 0, "n_other": len(other)},
                edge=edge, n_cases=len(pairs),
                measured_median=median([m for m, _, _ in pairs]), simulated_median=median([p for _, p, _ in pairs]),
                other_side_p90_err_share_beyond_15=(sum(1 for e in other if e > 0.15) /
                                                    max(1, sum(1 for _, _, e in pairs if e > 0.15))))


# Where this share of a case's steps wait (about one in ten), its p90 step falls on the edge between the short
# steps and the long ones, and a few points of waiting steps either way move it by the whole wait (the twentieth
# session: the image ResNet-50 cases at 8 workers wait on one step in eight). The band is 10% within a factor of
# about 1.4 either way, set before scoring it.
P90_EDGE_WAITING_SHARE = (0.07, 0.15)

# A case's p90 step counts as pinned down by its own window when the p90 steps of the window's two halves agree
# within this (a third of the p90 step target): the whole window's is then within about half of it.
P90_HALVES_PRECISE = 0.05


def p90_halves_summary(rows: Sequence[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The ground truth's own precision of the p90 step (the two halves of each case's window) and pipeplan's p90
    step error where that precision is good against where it is not. None without timelines."""
    pairs = [(r["measured"]["p90_step_halves_diff"], abs(r["pipeplan"]["step_p90_err"])) for r in rows
             if r.get("pipeplan") and r["pipeplan"].get("step_p90_err") is not None
             and r["measured"].get("p90_step_halves_diff") is not None]
    if not pairs:
        return None
    diffs = [d for d, _ in pairs]
    precise = [e for d, e in pairs if d < P90_HALVES_PRECISE]
    loose = [e for d, e in pairs if d >= P90_HALVES_PRECISE]
    return {"n": len(pairs), "median_rel_diff": median(diffs), "p90_rel_diff": percentile(diffs, 0.9),
            "p90_window_uncertainty": percentile([d / 2 for d in diffs], 0.9),
            "precise_within": P90_HALVES_PRECISE, "n_precise": len(precise), "n_loose": len(loose),
            "precise_median_abs_step_p90_err": median(precise) if precise else None,
            "precise_p90_abs_step_p90_err": percentile(precise, 0.9) if precise else None,
            "loose_median_abs_step_p90_err": median(loose) if loose else None,
            "loose_p90_abs_step_p90_err": percentile(loose, 0.9) if loose else None}


def _step_p90_err_bins(rows: Sequence[Dict[str, Any]], measure, edges: Sequence[float]) -> Optional[List[Dict[str, Any]]]:
    """Pure: pipeplan's abs error of the p90 step in bins [edges[i], edges[i + 1]) of measure(the row's measured
    figures), over the rows with a prediction whose measure can be read: n, median, p90 a bin. None when no row can."""
    pairs = []
    for r in rows:
        if not (r.get("pipeplan") and r["pipeplan"].get("step_p90_err") is not None):
            continue
        try:
            pairs.append((measure(r["measured"]), abs(r["pipeplan"]["step_p90_err"])))
        except (KeyError, TypeError):   # the figure the measure needs is absent
            continue
    if not pairs:
        return None
    out = []
    for lo, hi in zip(edges, edges[1:]):
        errs = [e for x, e in pairs if lo <= x < hi]
        out.append({"n": len(errs), "median_abs_step_p90_err": median(errs) if errs else None,
                    "p90_abs_step_p90_err": percentile(errs, 0.9) if errs else None})
    return out


# A case measured in fewer steps than this holds a handful of rounds of its workers: its p90 step is where one or two
# of a round's waits fall in the window (validation-runs.md run 60, findings 2-3: 12-step cases at +100% to +380%
# under the workers' own replayed walls), so the report shows its error apart.
SHORT_WINDOW_STEPS = 60


def short_window_summary(rows: Sequence[Dict[str, Any]], steps: int = SHORT_WINDOW_STEPS) -> Optional[Dict[str, Any]]:
    """Pure: pipeplan's abs error of the p90 step in the cases measured in fewer than `steps` steps against the rest
    (rows with a prediction and n_measured). None when no row has both."""
    bins = _step_p90_err_bins(rows, lambda m: int(m["n_measured"]), (0.0, steps, math.inf))
    if bins is None:
        return None
    short, rest = bins
    return {"steps": steps, "n_short": short["n"], "n_rest": rest["n"],
            "short_median_abs_step_p90_err": short["median_abs_step_p90_err"],
            "short_p90_abs_step_p90_err": short["p90_abs_step_p90_err"],
            "rest_median_abs_step_p90_err": rest["median_abs_step_p90_err"],
            "rest_p90_abs_step_p90_err": rest["p90_abs_step_p90_err"]}


# The measured window's length in seconds (n_measured x the mean step) sets how far one realisation of a case's p90
# step lies from another's: another repeat's walls replayed miss it by 54% at p90 under 5 s and 22% from 20 s
# (validation-runs.md run 60, finding 7), so the report shows the p90 step error by window length.
WINDOW_BINS_S = (5.0, 12.0, 20.0)


def window_length_summary(rows: Sequence[Dict[str, Any]], bins_s: Sequence[float] = WINDOW_BINS_S) -> Optional[List[Dict[str, Any]]]:
    """Pure: pipeplan's abs error of the p90 step by the measured window's length (n_measured x step_mean_s), one
    entry per bin [lo, hi) of seconds (the last open): n, median, p90. None when no row has both figures."""
    edges = [0.0, *bins_s, math.inf]
    bins = _step_p90_err_bins(rows, lambda m: int(m["n_measured"]) * float(m["step_mean_s"]), edges)
    if bins is None:
        return None
    return [{"from_s": lo, "to_s": None if math.isinf(hi) else hi, **b} for lo, hi, b in zip(edges, edges[1:], bins)]


def step_alone_over_loop(rows: Sequence[Dict[str, Any]], gpu_busy_lo: float, gpu_busy_hi: float) -> Dict[str, Any]:
    """Median of (GPU step measured alone, sustained) / (the loop between batches in situ) over the
    pinned cases synchronised every step whose step is GPU-bound (host time below the step) and whose
    GPU was busy in [lo, hi): does the GPU step run as fast in the case as it did alone?"""
    ratios = []
    for r in rows:
        k, m, c = r["knobs"], r["measured"], r["components"]
        loop, busy = m.get("loop_in_situ_s"), m.get("gpu_busy_fraction")
        if (loop and busy is not None and gpu_busy_lo <= busy < gpu_busy_hi and k.get("sync_every") == 1
                and k.get("pin_memory") and c.get("step_s") and c.get("host_s_per_step") is not None
                and c["host_s_per_step"] < c["step_s"]):
            ratios.append(c["step_s"] / loop)
    return {"n": len(ratios), "median": median(ratios) if ratios else None,
            "min": min(ratios) if ratios else None, "max": max(ratios) if ratios else None}


def machine_wide_share(case: Dict[str, Any], timeline: Optional[Dict[str, Any]] = None) -> Optional[float]:
    """timeline_analysis.common_share of the case's worker timeline (analysed here unless given), or None."""
    return (((timeline or _timeline(case)) or {}).get("common_share") or {}).get("share")


def wander_long_parts(knobs: Dict[str, Any], call_components: Dict[str, Any], scen: Dict[str, Any],
                      with_level: bool = True) -> Optional[Dict[str, float]]:
    """The profile's cpu wander keys (core_speed_cv, core_speed_correlation_s and _batches, the slow part's) fitted
    to the call's long reading of this case's loader (components.wander_long, harness --wander-long-s since the
    eighty-ninth session; insitu_diagnostic.fit_wander_parts and set_wander_parts, counted in batches), or None
    without one (at least two workers of 8 batches or more). with_level=False fits no level part. A what-if
    (validation-runs.md run 82, finding 3; device plan item 28)."""
    from timeline_analysis import wander_long_key
    from insitu_diagnostic import fit_wander_parts, set_wander_parts  # here: insitu_diagnostic imports convert
    key = wander_long_key(knobs)
    reading = ((call_components.get("wander_long") or {}).get(key) or {}) if key else {}
    series = [[float(v) for v in w] for w in (reading.get("worker_batch_s") or []) if len(w) >= 8]
    if len(series) < 2 or any(v <= 0 for w in series for v in w):
        return None
    cpu: Dict[str, Any] = {}
    set_wander_parts(cpu, fit_wander_parts(series, with_level=with_level), series, scen, {}, True)
    return {k: round(float(v), 6) for k, v in cpu.items()}


def probe_turnaround_share(comp: Dict[str, Any], key_s: float, batch_size: Optional[int] = None) -> Optional[float]:
    """Pure: the worker's measured path between two batches as a share of the key (loader.worker_s_per_batch), from
    the probes around the case (harness since the eighty-ninth session: components.probe[_after].turnaround, read by
    turnaround_diagnostic.probe_reading): the mean of the probes' median turnaround plus their fetcher's gap a batch,
    over the key, within [0.05, 1]. The gap is read again from the probe's own whole batches (probe_fetch_gap_s) where
    it kept them: the harness's reading before the ninetieth session divided by the counters' samples / batches, which
    the window's edges bend (run 83: 8-worker image probes read -16 to +19 ms). None without a key or a probe's
    reading. A what-if until the workers' wander keeps their in-order loss (validation-runs.md run 82, finding 3)."""
    if not key_s or key_s <= 0:
        return None
    paths = []
    for name in ("probe", "probe_after"):
        probe = comp.get(name) or {}
        t = probe.get("turnaround") or {}
        if isinstance(t.get("turnaround_s"), (int, float)):
            gap = probe_fetch_gap_s(probe, batch_size)
            if gap is None:
                gap = t.get("fetch_gap_s")
            paths.append(float(t["turnaround_s"]) + max(0.0, float(gap or 0.0)))
    if not paths:
        return None
    return round(min(1.0, max(0.05, (sum(paths) / len(paths)) / key_s)), 4)


def probe_fetch_gap_s(probe: Dict[str, Any], batch_size: Optional[int]) -> Optional[float]:
    """Pure: a probe's fetcher gap a batch (turnaround_diagnostic.span_less_timed_s) from its own record: the whole
    batches' walls inside its window (worker_batch_s, two workers or more) less batch_size x its mean __getitem__ wall
    and its mean collate wall. None without those."""
    from turnaround_diagnostic import span_less_timed_s
    spans = [float(x) for w in (probe.get("worker_batch_s") or []) for x in w]
    if not batch_size or not spans:
        return None
    return span_less_timed_s(spans, probe, int(batch_size))


def measured_workers_busy(case: Dict[str, Any]) -> Optional[float]:
    """The share of the measured window the workers spent in __getitem__ and collate_fn (in-situ
    counters: samples x mean getitem + batches x mean collate, over num_workers x the window) plus each batch's
    worker loop (the in-worker component's process CPU a batch beyond them, the scenario's loader.worker_s_per_batch),
    the measured side of the simulator's stages[workers].busy_fraction, which counts that key too. Until the
    eighty-ninth session the key was left out here, taken for about 1%: in the pinned tensor cases it is 3.6-6.6 ms of
    a 70 ms batch, so a w2 or w4 case read 8-9 points less busy than the simulator at the same rate (validation-runs.md
    run 82). A cold case's __getitem__ wall includes its wait for the disk, which
    the simulator counts as the storage stage's, not the workers' busy time: its CPU time instead (runs 11-27: the
    cold tensor cases' wall read 29-46 points above the model's busy share, their warm twins 4-11 below). None
    without workers or in-situ counters."""
    k, m = case["knobs"], case["measured"]
    nw = int(k["num_workers"])
    ins = m.get("in_situ") or {}
    thr = m.get("throughput_samples_per_s")
    if nw <= 0 or not ins.get("getitem_wall_s") or not thr or not m.get("samples_measured"):
        return None
    window_s = m["samples_measured"] / thr
    getitem_s = ins["getitem_wall_s"]
    if k.get("storage") == "cold" and ins.get("getitem_cpu_s"):
        getitem_s = ins["getitem_cpu_s"]
    key_s = float(((case.get("components") or {}).get("in_worker") or {}).get("overhead_s_per_batch") or 0.0)
    busy_s = ins["samples"] * getitem_s + ins["batches"] * ((ins.get("collate_wall_s") or 0.0) + key_s)
    return busy_s / (nw * window_s)


def evaluate_case(case: Dict[str, Any], pred: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    k, comp, m = case["knobs"], case["components"], case["measured"]
    bs, nw = int(k["batch_size"]), int(k["num_workers"])
    load_s = comp["load"]["mean"]
    step_s = step_time(comp["step"])[0]
    ins = m.get("in_situ") or {}
    meas_thr = m["throughput_samples_per_s"]
    meas_p90 = m["step_time_s"]["p90"]
    meas_mean = m["step_time_s"]["mean"]
    # a variable-length case's GPU time is its own batches', not the step component's one batch (run 65)
    batches_gpu_s = batches_step_gpu_s(case)
    cls, busy = measured_bottleneck(batches_gpu_s if batches_gpu_s is not None else step_s, meas_mean,
                                    m["data_wait_s"]["mean"])
    hand = by_hand(nw, bs, load_s, step_s)
    tl = _timeline(case)     # once: its two-speed fit is the slow part
    lone_all_cold_s, lone_pages_only_s = lone_cold_waits_s(case)
    row: Dict[str, Any] = {
        "id": case["id"], "family": case["family"], "also_families": case.get("also_families", []),
        "repeat": case.get("repeat", 0), "knobs": k,
        "measured": {"samples_per_s": meas_thr, "step_mean_s": meas_mean, "step_p90_s": meas_p90,
                     "bottleneck": cls, "gpu_busy_fraction": busy,
                     "data_wait_fraction": m.get("data_wait_fraction"),
                     "n_measured": m.get("n_measured"),
                     "load_in_situ_s": ins.get("getitem_wall_s"),
                     "load_in_situ_cpu_s": ins.get("getitem_cpu_s"),
                     # a cold case's getitem calls in flight during a call (harness since the forty-seventh session)
                     "getitem_in_flight_mean": ins.get("getitem_in_flight_mean"),
                     # one process's cold load alone, as a wait a file: everything dropped / the pages alone
                     "load_cold_wait_s": lone_all_cold_s,
                     "load_cold_pages_only_wait_s": lone_pages_only_s,
                     # the same loader right after the case, cache dropped again, no pin thread, no GPU
                     "no_gpu_cold_wait_s": no_gpu_cold_wait_s(case),
                     "load_in_situ_ratio": (ins["getitem_wall_s"] / load_s
                                            if ins.get("getitem_wall_s") and load_s else None),
                     "workers_busy_fraction": measured_workers_busy(case),
                     "machine_wide_share": machine_wide_share(case, tl),
                     "out_of_order_fraction": (tl or {}).get("out_of_order_share"),
                     "loop_in_situ_s": loop_in_situ_s(case),
                     "waiting_step_share": waiting_step_share(case),
                     "long_step_share": long_step_share(case),
                     "p90_step_halves_diff": p90_step_halves_diff(case),
                     # validation run 26, finding 2: the loop's loss per second of pin_memory() inside its steps,
                     # for the loops the model stalls on the memory map (the pin-parts probe's rate beside it)
                     "pin_stall_rate": ((tl or {}).get("loop_stall_per_pin_overlap") or {}).get("slope")
                     if loop_needs_memory_map(comp) else None},
        "components": {"load_s": load_s, "load_cv": comp["load"].get("cv"),
                       "load_stderr_rel": comp["load"].get("stderr_rel"),
                       "step_s": step_s, "host_s_per_step": comp["step"]["host_s"]["mean"],
                       "collate_s": comp["collate"]["s_per_batch"]["mean"],
                       "batch_bytes": comp["collate"]["batch_bytes"]["mean"],
                       "pin_parts_stall_rate": memory_map_rate(comp)},
        "by_hand": {"samples_per_s": hand, "err": rel_err(hand, meas_thr)},
        "pipeplan": None,
    }
    if pred is not None:
        if "error" in pred:
            row["pipeplan"] = {"error": pred["error"]}
        else:
            r = pred["result"]
            thr = _get(r, "throughput.samples_per_s")
            p90 = _get(r, "step_time_s.p90")
            stage = _get(r, "bottleneck.stage")
            pc = stage_class(stage)
            row["pipeplan"] = {
                "samples_per_s": thr, "err": rel_err(thr, meas_thr),
                "step_p90_s": p90, "step_p90_err": rel_err(p90, meas_p90),
                "step_mean_s": _get(r, "step_time_s.mean"),
                "bottleneck_stage": stage, "bottleneck_class": pc,
                "bottleneck_ok": (pc == cls) if pc is not None else False,
                "explanation": _get(r, "bottleneck.explanation"),
                "gpu_busy_fraction": _get(r, "gpu.busy_fraction"),
                "synthetic_baseline_samples_per_s": _get(r, "synthetic_baseline.samples_per_s"),
                "workers_busy_fraction": next((st.get("busy_fraction") for st in (r.get("stages") or [])
                                               if st.get("name") == "workers"), None),
                "out_of_order_fraction": _get(r, "loader.out_of_order_fraction"),
                "long_step_fraction": _get(r, "long_step_fraction"),
                # a cold case's reads: in flight during a read and a file's wait (the seeds' means)
                "readers_in_flight_mean": _get(r, "storage.readers_in_flight_mean"),
                "wait_s_per_file": _get(r, "storage.wait_s_per_file_mean"),
                # and its workers' __getitem__ calls (reads and loads) in flight during one: the harness's
                # in_situ.getitem_in_flight_mean, like for like (validation run 52)
                "getitem_in_flight_mean": _get(r, "storage.getitem_in_flight_mean"),
                "seeds_cv_samples_per_s": _get(r, "replications.seeds_cv_samples_per_s"),
                "seeds_cv_step_p90_s": _get(r, "replications.seeds_cv_step_p90_s"),
                # how many different stages the seeds named: more than one puts the case on an edge between two
                # regimes whose p90 steps differ (validation run 23, finding 5)
                "seeds_bottlenecks": len(_get(r, "replications.bottleneck_votes") or {}) or None,
                # pipeplan's own flag that its p90 step sits between short and long steps (sim/step_stats.hpp), with
                # the p80 and p95 it says the p90 moves between
                "step_p90_on_edge": _get(r, "step_p90_on_edge"),
                "step_p80_s": _get(r, "step_time_s.p80"), "step_p95_s": _get(r, "step_time_s.p95"),
            }
    return row


def families_of(rows: List[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    fam: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        if r["repeat"] != 0:
            continue
        for f in [r["family"]] + list(r.get("also_families") or []):
            fam.setdefault(f, []).append(r)
    return fam


def evaluate(cases: List[Dict[str, Any]], preds: Dict[str, Dict[str, Any]],
             sweep_preds: Optional[Dict[str, Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Scores every case; sweep_preds (optional): each case predicted from its group's pooled inputs
    (sweep_key), used only for the families' sweep-style ranking."""
    rows = [evaluate_case(c, preds.get(c["id"])) for c in cases if c.get("status") == "ok"]
    sweep_thr: Dict[str, Optional[float]] = {}
    for cid, sp in (sweep_preds or {}).items():
        sweep_thr[cid] = None if (not sp or "error" in sp) else _get(sp.get("result") or {}, "throughput.samples_per_s")
    # each case as a sweep predicts it too (its call's pooled inputs): against the case's own brackets, how much of
    # the brackets' move from case to case follows the machine and how much is their own noise (run 23, finding 1)
    for r in rows:
        if r["pipeplan"] and "error" not in r["pipeplan"] and sweep_thr.get(r["id"]):
            r["pipeplan"]["sweep_samples_per_s"] = sweep_thr[r["id"]]
            r["pipeplan"]["sweep_err"] = sweep_thr[r["id"]] / r["measured"]["samples_per_s"] - 1.0
    simulated = any(r["pipeplan"] is not None for r in rows)
    fam_rows = families_of(rows)
    # noise of the ground truth: settings measured more than once
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(json.dumps(r["knobs"], sort_keys=True) + call_tag(r["id"]), []).append(r)
    noise = []
    for g in groups.values():
        if len(g) < 2:
            continue
        v = [r["measured"]["samples_per_s"] for r in g]
        # the p90 step of the same setting too: the resolution of the p90 step-time target
        p90 = [r["measured"].get("step_p90_s") for r in g]
        p90 = p90 if all(p90) else []
        noise.append({"cases": [r["id"] for r in g], "samples_per_s": v, "spread": spread_of(v),
                      "step_p90_s": p90, "step_p90_spread": spread_of(p90)})
    # per call: the largest spread of a repeated setting, the resolution of its rankings
    call_noise: Dict[str, float] = {}
    for g in noise:
        if g["spread"] is not None:
            t = call_tag(g["cases"][0])
            call_noise[t] = max(call_noise.get(t, 0.0), g["spread"])
    families = {}

    def setting(r: Dict[str, Any]) -> List[Dict[str, Any]]:
        return groups[json.dumps(r["knobs"], sort_keys=True) + call_tag(r["id"])]

    def mean_measured(r: Dict[str, Any]) -> float:
        # a setting measured more than once (repeats, harness --rounds) is ranked by its mean
        g = setting(r)
        return sum(x["measured"]["samples_per_s"] for x in g) / len(g)

    def mean_predicted(r: Dict[str, Any]) -> Optional[float]:
        v = [x["pipeplan"].get("samples_per_s") for x in setting(r) if x["pipeplan"]]
        return sum(v) / len(v) if v and None not in v and len(v) == len(setting(r)) else None

    def mean_sweep(r: Dict[str, Any]) -> Optional[float]:
        v = [sweep_thr.get(x["id"]) for x in setting(r)]
        return sum(v) / len(v) if v and None not in v else None

    for f, rs in fam_rows.items():
        meas = [mean_measured(r) for r in rs]
        hand = [r["by_hand"]["samples_per_s"] for r in rs]
        ent = {"cases": [r["id"] for r in rs], "n": len(rs), "measured_means": meas,
               "measurements": [len(setting(r)) for r in rs],
               "tau_by_hand": kendall_tau_b(meas, hand) if len(rs) >= 2 else None}
        if simulated:
            pred = [mean_predicted(r) for r in rs]
            complete = len(rs) >= 2 and None not in pred
            ent["tau_pipeplan"] = kendall_tau_b(meas, pred) if complete else None
            nz = call_noise.get(call_tag(rs[0]["id"]))
            ent["ground_truth_noise"] = nz
            ent["tau_pipeplan_within_noise"] = (kendall_tau_b_within_noise(meas, pred, nz)
                                                if nz is not None and complete else None)
            if sweep_thr:
                sw = [mean_sweep(r) for r in rs]
                sw_complete = len(rs) >= 2 and None not in sw
                ent["sweep_predicted_means"] = sw if sw_complete else None
                ent["tau_sweep"] = kendall_tau_b(meas, sw) if sw_complete else None
                ent["tau_sweep_within_noise"] = (kendall_tau_b_within_noise(meas, sw, nz)
                                                 if nz is not None and sw_complete else None)
        families[f] = ent

    def _ceiling(loo_thr, loo_p90, own_thr, own_p90) -> Optional[Dict[str, Any]]:
        lt = [e for e in loo_thr if e is not None]
        l9 = [e for e in loo_p90 if e is not None]
        if not lt:
            return None
        return {"n": len(lt),
                "median_abs_throughput_err": median(lt), "p90_abs_throughput_err": percentile(lt, 0.9),
                "median_abs_step_p90_err": median(l9) if l9 else None,
                "p90_abs_step_p90_err": percentile(l9, 0.9) if l9 else None,
                "pipeplan": {"median_abs_throughput_err": median(own_thr),
                             "p90_abs_throughput_err": percentile(own_thr, 0.9),
                             "median_abs_step_p90_err": median(own_p90) if own_p90 else None,
                             "p90_abs_step_p90_err": percentile(own_p90, 0.9) if own_p90 else None}}

    def summ(kind: str) -> Dict[str, Any]:
        if kind == "by_hand":
            errs = [abs(r["by_hand"]["err"]) for r in rows if r["by_hand"]["err"] is not None]
            taus = [f["tau_by_hand"] for f in families.values() if f["tau_by_hand"] is not None]
            return {"n": len(errs), "median_abs_throughput_err": median(errs),
                    "p90_abs_throughput_err": percentile(errs, 0.9),
                    "p90_abs_step_p90_err": None, "min_family_tau": min(taus) if taus else None,
                    "bottleneck_agreement": None}
        pr = [r for r in rows if r["pipeplan"] and "error" not in r["pipeplan"]]
        errs = [abs(r["pipeplan"]["err"]) for r in pr if r["pipeplan"]["err"] is not None]
        serrs = [abs(r["pipeplan"]["step_p90_err"]) for r in pr if r["pipeplan"]["step_p90_err"] is not None]
        taus = [f.get("tau_pipeplan") for f in families.values() if f.get("tau_pipeplan") is not None]
        taus_nz = [f.get("tau_pipeplan_within_noise") for f in families.values()
                   if f.get("tau_pipeplan_within_noise") is not None]
        taus_sw = [f["tau_sweep"] for f in families.values() if f.get("tau_sweep") is not None]
        taus_sw_nz = [f["tau_sweep_within_noise"] for f in families.values()
                      if f.get("tau_sweep_within_noise") is not None]
        bn = [r["pipeplan"]["bottleneck_ok"] for r in pr]
        # the mechanism, not only the rate: how busy the workers were, where both sides say
        wb = [abs(r["pipeplan"]["workers_busy_fraction"] - r["measured"]["workers_busy_fraction"]) for r in pr
              if r["pipeplan"].get("workers_busy_fraction") is not None
              and r["measured"].get("workers_busy_fraction") is not None]
        calm = [abs(r["pipeplan"]["err"]) for r in pr if r["pipeplan"]["err"] is not None
                and (r["measured"].get("machine_wide_share") is None
                     or r["measured"]["machine_wide_share"] <= MACHINE_WIDE_SPELL_SHARE)]
        # a setting measured more than once: its prediction (an expectation) against the mean of its
        # measurements, a draw each; the p90 step of one draw spreads by 27% median (run 11)
        rep_thr, rep_p90 = [], []
        loo_thr: List[Optional[float]] = []
        loo_p90: List[Optional[float]] = []
        own_thr: List[float] = []
        own_p90: List[float] = []

        def mean_of(xs: List[float]) -> float:
            return sum(xs) / len(xs)
        for g in groups.values():
            gp = [r for r in g if r["pipeplan"] and "error" not in r["pipeplan"]
                  and r["pipeplan"].get("step_p90_s") and r["measured"].get("step_p90_s")]
            if len(g) < 2 or len(gp) != len(g):
                continue
            mt, pt = mean_of([r["measured"]["samples_per_s"] for r in gp]), mean_of([r["pipeplan"]["samples_per_s"] for r in gp])
            m9, p9 = mean_of([r["measured"]["step_p90_s"] for r in gp]), mean_of([r["pipeplan"]["step_p90_s"] for r in gp])
            rep_thr.append(abs(pt - mt) / mt)
            rep_p90.append(abs(p9 - m9) / m9)
            # the same cases, each predicted by its setting's other repeats, and by pipeplan
            loo_thr.extend(leave_one_out_errors([r["measured"]["samples_per_s"] for r in gp]))
            loo_p90.extend(leave_one_out_errors([r["measured"]["step_p90_s"] for r in gp]))
            own_thr.extend(abs(r["pipeplan"]["err"]) for r in gp)
            own_p90.extend(abs(r["pipeplan"]["step_p90_err"]) for r in gp)
        # the cases whose sweep group pooled two or more cases' inputs: pipeplan from the case's own brackets and
        # from the group's mean of them, on the same cases
        pooled_rows = [r for r in pr if r["pipeplan"].get("sweep_err") is not None and r["pipeplan"]["err"] is not None
                       and r["pipeplan"]["sweep_samples_per_s"] != r["pipeplan"]["samples_per_s"]]
        pooled_cmp = None
        if pooled_rows:
            sweep = [abs(r["pipeplan"]["sweep_err"]) for r in pooled_rows]
            own = [abs(r["pipeplan"]["err"]) for r in pooled_rows]
            pooled_cmp = {"n": len(pooled_rows),
                          "median_abs_throughput_err": median(sweep), "p90_abs_throughput_err": percentile(sweep, 0.9),
                          "own_median_abs_throughput_err": median(own), "own_p90_abs_throughput_err": percentile(own, 0.9)}
        # the cases whose seeds named more than one bottleneck (an edge between regimes) against the rest
        split = [abs(r["pipeplan"]["step_p90_err"]) for r in pr if (r["pipeplan"].get("seeds_bottlenecks") or 0) > 1
                 and r["pipeplan"]["step_p90_err"] is not None]
        unanimous = [abs(r["pipeplan"]["step_p90_err"]) for r in pr if r["pipeplan"].get("seeds_bottlenecks") == 1
                     and r["pipeplan"]["step_p90_err"] is not None]
        split_cmp = ({"n": len(split), "n_unanimous": len(unanimous),
                      "median_abs_step_p90_err": median(split), "p90_abs_step_p90_err": percentile(split, 0.9),
                      "unanimous_median_abs_step_p90_err": median(unanimous) if unanimous else None,
                      "unanimous_p90_abs_step_p90_err": percentile(unanimous, 0.9) if unanimous else None}
                     if split else None)
        # the cases whose p90 step sits on the edge between short and long steps (about one step in ten waits)
        lo, hi = P90_EDGE_WAITING_SHARE
        shares = [(r["measured"]["waiting_step_share"], abs(r["pipeplan"]["step_p90_err"])) for r in pr
                  if r["pipeplan"]["step_p90_err"] is not None and r["measured"].get("waiting_step_share") is not None]
        edge = [e for share, e in shares if lo <= share < hi]
        off_edge = [e for share, e in shares if not lo <= share < hi]
        edge_cmp = dict(step_p90_err_groups(edge, off_edge), band=[lo, hi]) if edge else None
        return {"n": len(errs), "failed": len(rows) - len(pr),
                "pooled_inputs": pooled_cmp,
                "p90_edge": edge_cmp,
                "p90_edge_flagged": flagged_edge_summary(pr),
                "long_share_sides": long_share_sides(pr),
                "p90_halves": p90_halves_summary(pr),
                "short_windows": short_window_summary(pr),
                "window_lengths": window_length_summary(pr),
                "seeds_split": split_cmp,
                "repeated_settings": {"n": len(rep_thr),
                                      "median_abs_throughput_err": median(rep_thr) if rep_thr else None,
                                      "p90_abs_throughput_err": percentile(rep_thr, 0.9) if rep_thr else None,
                                      "median_abs_step_p90_err": median(rep_p90) if rep_p90 else None,
                                      "max_abs_step_p90_err": max(rep_p90) if rep_p90 else None},
                "repeats_predicting_each_other": _ceiling(loo_thr, loo_p90, own_thr, own_p90),
                "n_machine_wide_spells": len(errs) - len(calm),
                "median_abs_throughput_err_without_spells": median(calm),
                "p90_abs_throughput_err_without_spells": percentile(calm, 0.9),
                "median_abs_throughput_err": median(errs),
                "p90_abs_throughput_err": percentile(errs, 0.9),
                "p90_abs_step_p90_err": percentile(serrs, 0.9),
                "median_abs_step_p90_err": median(serrs),
                "share_step_p90_within_15pct": (sum(1 for e in serrs if e <= 0.15) / len(serrs)) if serrs else None,
                "min_family_tau": min(taus) if taus else None,
                "min_family_tau_within_noise": min(taus_nz) if taus_nz else None,
                # how many families can be ranked beyond their call's noise at all, and how many of those meet 0.9
                "families_tau": tau_family_counts([f.get("tau_pipeplan") for f in families.values()], taus_nz),
                "min_family_tau_sweep": min(taus_sw) if taus_sw else None,
                "min_family_tau_sweep_within_noise": min(taus_sw_nz) if taus_sw_nz else None,
                "median_abs_workers_busy_err": median(wb), "n_workers_busy": len(wb),
                "pin_stall_rates": [(r["measured"]["pin_stall_rate"], r["components"].get("pin_parts_stall_rate"))
                                    for r in pr if r["measured"].get("pin_stall_rate") is not None],
                "out_of_order_pairs": [(r["measured"]["out_of_order_fraction"], r["pipeplan"]["out_of_order_fraction"])
                                       for r in pr if r["measured"].get("out_of_order_fraction") is not None
                                       and r["pipeplan"].get("out_of_order_fraction") is not None],
                "median_seeds_cv_samples_per_s": median([r["pipeplan"]["seeds_cv_samples_per_s"] for r in pr
                                                         if r["pipeplan"].get("seeds_cv_samples_per_s") is not None]),
                "median_seeds_cv_step_p90_s": median([r["pipeplan"]["seeds_cv_step_p90_s"] for r in pr
                                                      if r["pipeplan"].get("seeds_cv_step_p90_s") is not None]),
                "bottleneck_agreement": (sum(bn) / len(bn)) if bn else None}

    thr_sp = [g["spread"] for g in noise if g.get("spread") is not None]
    p90_sp = [g["step_p90_spread"] for g in noise if g.get("step_p90_spread") is not None]
    summary = {"cases_ok": len(rows), "cases_total": len(cases), "by_hand": summ("by_hand"),
               "pipeplan": summ("pipeplan") if simulated else None, "targets": TARGETS,
               # the GPU step alone (sustained, back to back) against the same step inside the cases
               "step_alone_over_loop": {"gpu_rested": step_alone_over_loop(rows, 0.0, 0.5),
                                        "gpu_busy": step_alone_over_loop(rows, 0.9, 1.01)},
               # the ground truth's own resolution: no prediction can be held closer than this
               "ground_truth_noise": {"settings": len(noise),
                                      "median_throughput_spread": median(thr_sp) if thr_sp else None,
                                      "max_throughput_spread": max(thr_sp) if thr_sp else None,
                                      "median_step_p90_spread": median(p90_sp) if p90_sp else None,
                                      "max_step_p90_spread": max(p90_sp) if p90_sp else None}}
    if simulated:
        met = {}
        s = summary["pipeplan"]
        for key, tgt in TARGETS.items():
            v = s.get(key)
            if v is None:
                met[key] = None
            elif key in ("min_family_tau", "bottleneck_agreement"):
                met[key] = v >= tgt
            else:
                met[key] = v <= tgt
        summary["targets_met"] = met
    return {"rows": rows, "families": families, "noise": noise, "summary": summary,
            "per_call": per_call_summary(rows) if simulated else []}


# ============================================================================ where the misses are
P90_THROUGHPUT_TARGET = 0.12   # issue 4's p90 |throughput error| target: a case beyond it is a miss


def miss_group(knobs: Dict[str, Any]) -> str:
    """The kind of pipeline a case is, in the words the validation page groups its misses by (pure): the ResNet-50
    loop (pinned or not), image by storage, a cold tensor read, else the tensor kind, its GPU step and pinning."""
    pin = "pinned" if knobs.get("pin_memory") else "unpinned"
    if knobs.get("step") == "resnet50":
        return f"ResNet-50 loop, {pin}"
    if knobs.get("kind") == "image":
        return f"image, {knobs.get('storage')}"
    if knobs.get("storage") == "cold":
        return f"{knobs.get('kind')}, cold read"
    return f"{knobs.get('kind')}, {knobs.get('step')}, {pin}"


def miss_groups(rows: Sequence[Dict[str, Any]], threshold: float = P90_THROUGHPUT_TARGET) -> List[Dict[str, Any]]:
    """The cases whose |throughput error| exceeds `threshold`, grouped by miss_group (pure): per group the misses
    (over- and under-predicted), the group's cases in all and the calls (tags) the misses come from; most misses
    first. A case without a prediction is left out."""
    groups: Dict[str, Dict[str, Any]] = {}
    for r in rows:
        err = (r.get("pipeplan") or {}).get("err")
        if err is None:
            continue
        g = groups.setdefault(miss_group(r.get("knobs") or {}),
                              {"n_cases": 0, "n_over": 0, "n_under": 0, "calls": []})
        g["n_cases"] += 1
        if abs(err) > threshold:
            g["n_over" if err > 0 else "n_under"] += 1
            tag = call_tag(r["id"])
            if tag and tag not in g["calls"]:
                g["calls"].append(tag)
    out = [dict(group=k, n_misses=v["n_over"] + v["n_under"], **v) for k, v in groups.items()
           if v["n_over"] + v["n_under"] > 0]
    return sorted(out, key=lambda g: (-g["n_misses"], g["group"]))


def failing_families(families: Dict[str, Dict[str, Any]], target: float = 0.9) -> List[Tuple[str, float]]:
    """The families whose tau over the pairs the ground truth can order (tau_pipeplan_within_noise) is below
    `target`, in the report's order (pure); families with no orderable pair are not counted."""
    # the complement of tau_family_counts' rankable_ok, with its tolerance: the two counts must add up
    return [(k, f["tau_pipeplan_within_noise"]) for k, f in families.items()
            if f.get("tau_pipeplan_within_noise") is not None and f["tau_pipeplan_within_noise"] < target - 1e-12]


# ============================================================================ markdown
def _pct(x: Optional[float], signed: bool = True) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x*100:+.1f}%" if signed else f"{x*100:.1f}%"


def _groups_md(g: Dict[str, Any], others: str) -> str:
    """step_p90_err_groups as a table cell's words: 'median X / p90 Y; the N <others> X / Y'."""
    return (f"median {_pct(g['median_abs_step_p90_err'], False)} / p90 {_pct(g['p90_abs_step_p90_err'], False)}; the "
            f"{g['n_other']} {others} {_pct(g['other_median_abs_step_p90_err'], False)} / "
            f"{_pct(g['other_p90_abs_step_p90_err'], False)}")


def _num(x: Optional[float], fmt: str = "{:.0f}") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return fmt.format(x)


def _tau(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:+.2f}"


def spread_of(values: Sequence[float]) -> Optional[float]:
    """(max - min) / mean of two or more values; None for fewer or a zero mean."""
    if len(values) < 2:
        return None
    mu = sum(values) / len(values)
    return (max(values) - min(values)) / mu if mu else None


def noise_table(noise: Sequence[Dict[str, Any]], value_key: str, value_header: str,
                fmt_value, fmt_spread, with_p90: bool = False) -> List[str]:
    """Markdown lines of the ground truth's noise: each setting measured more than once, its values
    and their spread (shared by convert.py and ddp_convert.py); with_p90: also each one's p90 step
    time (ms, step_p90_s) and that spread (step_p90_spread)."""
    if not noise:
        return ["No repeated setting in this run."]
    if with_p90:
        lines = [f"| cases | {value_header} | spread (max-min)/mean | p90 step ms | p90 spread |",
                 "|---|---|---|---|---|"]
    else:
        lines = [f"| cases | {value_header} | spread (max-min)/mean |", "|---|---|---|"]
    for n in noise:
        row = (f"| {', '.join('`' + c + '`' for c in n['cases'])} | "
               f"{', '.join(fmt_value(v) for v in n[value_key])} | {fmt_spread(n['spread'])} |")
        if with_p90:
            vals = n.get("step_p90_s") or []
            row += (f" {', '.join(f'{v * 1e3:.1f}' for v in vals) if vals else 'n/a'} | "
                    f"{fmt_spread(n.get('step_p90_spread'))} |")
        lines.append(row)
    return lines


def _busy_cell(m: Dict[str, Any], pp: Dict[str, Any]) -> str:
    meas, pred = m.get("workers_busy_fraction"), (pp or {}).get("workers_busy_fraction")
    if meas is None:
        return "n/a"
    return f"{meas:.2f} / {pred:.2f}" if pred is not None else f"{meas:.2f} / n/a"


def render_markdown(ev: Dict[str, Any], meta: Dict[str, Any]) -> str:
    s = ev["summary"]
    mach = meta.get("machine") or {}
    L = []
    L.append(f"## Results (generated {meta['generated']})")
    L.append("")
    L.append(f"- Machine: {mach.get('gpu')} (driver {mach.get('driver')}, CUDA runtime {mach.get('cuda_runtime')}), "
             f"{mach.get('cpu_model')}, {mach.get('cpu_cores')} cores, torch {mach.get('torch')}, "
             f"host {mach.get('hostname')}")
    L.append(f"- Ground truth: `{meta['cases_path']}` (harness mode {meta.get('mode')}, started {meta.get('started')}, "
             f"{s['cases_ok']}/{s['cases_total']} cases measured)")
    L.append(f"- Profile: {meta.get('profile_note')}")
    if meta.get("wander_note"):
        L.append(f"- Workers' wander: {meta['wander_note']}")
    if meta.get("transport_note"):
        L.append(f"- Main side: {meta['transport_note']}")
        if meta.get("host_note"):
            L.append(f"- The training loop's host time per step: {meta['host_note']}")
        if meta.get("unpinned_loop_note"):
            L.append(f"- An unpinned batch's copy and release on the loop's thread: {meta['unpinned_loop_note']}")
    if meta.get("runs_note"):
        L.append(f"- Runs: {meta['runs_note']}")
    if meta.get("memory_map_note"):
        L.append(f"- The memory map: {meta['memory_map_note']}")
    if meta.get("back_to_back_note"):
        L.append(f"- A step's Python right after the previous step's launches: {meta['back_to_back_note']}")
    if meta.get("receive_gil_note"):
        L.append(f"- The pin thread's receive holds the GIL for: {meta['receive_gil_note']}")
    if meta.get("launch_tail_note"):
        L.append(f"- The GPU work launched last (a host-bound step's tail after its last launch): {meta['launch_tail_note']}")
    if meta.get("gpu_duty_time_constant_s_by_gpu"):
        taus = "; ".join(f"{tau * 1e3:.1f} ms on {gpu or 'an unrecorded GPU'}"
                         for gpu, tau in meta["gpu_duty_time_constant_s_by_gpu"].items())
        L.append(f"- GPU duty time constant: {taus}, each fitted to the gpu_rest_curve of every call scored on that "
                 "GPU (`--gpu-duty-time-constant rest-curve`; the step's duty shape re-read at a step's start under it)")
    L.append(f"- Simulator: {meta.get('pipeplan_note')}")
    L.append(f"- Command: `{meta['command']}`")
    L.append("")
    L.append("### Summary against the targets")
    L.append("")
    L.append("| metric | pipeplan | by-hand estimate | target | pipeplan meets it |")
    L.append("|---|---|---|---|---|")
    p = s.get("pipeplan") or {}
    h = s["by_hand"]
    met = s.get("targets_met") or {}

    def yn(key):
        v = met.get(key)
        return "n/a" if v is None else ("yes" if v else "**no**")
    L.append(f"| median abs throughput error | {_pct(p.get('median_abs_throughput_err'), False)} | "
             f"{_pct(h['median_abs_throughput_err'], False)} | <= 5% | {yn('median_abs_throughput_err')} |")
    L.append(f"| p90 abs throughput error | {_pct(p.get('p90_abs_throughput_err'), False)} | "
             f"{_pct(h['p90_abs_throughput_err'], False)} | <= 12% | {yn('p90_abs_throughput_err')} |")
    L.append(f"| p90 abs error of the p90 step time | {_pct(p.get('p90_abs_step_p90_err'), False)} | n/a | <= 15% | "
             f"{yn('p90_abs_step_p90_err')} |")
    L.append(f"| min Kendall tau over families | {_tau(p.get('min_family_tau'))} | {_tau(h['min_family_tau'])} | "
             f">= 0.9 | {yn('min_family_tau')} |")
    L.append(f"| bottleneck agreement | {_pct(p.get('bottleneck_agreement'), False)} | n/a | >= 90% | "
             f"{yn('bottleneck_agreement')} |")
    if p.get("median_abs_step_p90_err") is not None:
        L.append(f"| (diagnostic) median abs error of the p90 step time; cases within 15% | "
                 f"{_pct(p['median_abs_step_p90_err'], False)}; {_pct(p.get('share_step_p90_within_15pct'), False)} | | | |")
    gn = s.get("ground_truth_noise") or {}
    if gn.get("median_step_p90_spread") is not None:
        L.append(f"| (diagnostic) the ground truth's own spread, (max - min) / mean over the {gn['settings']} settings "
                 f"measured more than once in a call: throughput median {_pct(gn['median_throughput_spread'], False)} "
                 f"(max {_pct(gn['max_throughput_spread'], False)}), p90 step median "
                 f"{_pct(gn['median_step_p90_spread'], False)} (max {_pct(gn['max_step_p90_spread'], False)}) | | | |")
    sl = s.get("step_alone_over_loop") or {}
    rested, busy = sl.get("gpu_rested") or {}, sl.get("gpu_busy") or {}
    if rested.get("n") or busy.get("n"):
        def _ratio(d: Dict[str, Any]) -> str:
            return (f"{d['median']:.3f} ({d['min']:.3f}-{d['max']:.3f}, {d['n']} cases)" if d.get("n") else "n/a")
        L.append(f"| (diagnostic) the GPU step measured alone (sustained) over the loop's time between batches in the "
                 f"case (pinned, sync every step, GPU-bound step): GPU busy under half the time {_ratio(rested)}; "
                 f"busy 90% or more {_ratio(busy)} | | | |")
    rs = p.get("repeated_settings") or {}
    if rs.get("n"):
        L.append(f"| (diagnostic) the {rs['n']} settings measured more than once, each predicted against the mean of its "
                 f"measurements: median abs throughput error {_pct(rs['median_abs_throughput_err'], False)} "
                 f"(p90 {_pct(rs.get('p90_abs_throughput_err'), False)}); p90 step "
                 f"time median {_pct(rs['median_abs_step_p90_err'], False)}, max {_pct(rs['max_abs_step_p90_err'], False)} | | | |")
    ce = p.get("repeats_predicting_each_other") or {}
    if ce.get("n"):
        pp = ce["pipeplan"]
        L.append(f"| (diagnostic) the ground truth's repeatability: the {ce['n']} cases of those settings, each predicted "
                 f"by the mean of its setting's other repeats in the same call: throughput median "
                 f"{_pct(ce['median_abs_throughput_err'], False)} / p90 {_pct(ce['p90_abs_throughput_err'], False)}, "
                 f"p90 step median {_pct(ce['median_abs_step_p90_err'], False)} / p90 "
                 f"{_pct(ce['p90_abs_step_p90_err'], False)}; pipeplan on the same cases "
                 f"{_pct(pp['median_abs_throughput_err'], False)} / {_pct(pp['p90_abs_throughput_err'], False)}, "
                 f"{_pct(pp['median_abs_step_p90_err'], False)} / {_pct(pp['p90_abs_step_p90_err'], False)} | | | |")
    ss = p.get("seeds_split") or {}
    if ss.get("n"):
        L.append(f"| (diagnostic) the {ss['n']} cases whose seeds named more than one bottleneck (two stages near each "
                 f"other's capacity): abs error of the p90 step median {_pct(ss['median_abs_step_p90_err'], False)} / "
                 f"p90 {_pct(ss['p90_abs_step_p90_err'], False)}; the {ss['n_unanimous']} whose seeds agreed "
                 f"{_pct(ss['unanimous_median_abs_step_p90_err'], False)} / {_pct(ss['unanimous_p90_abs_step_p90_err'], False)} | | | |")
    pe = p.get("p90_edge") or {}
    if pe.get("n"):
        L.append(f"| (diagnostic) the {pe['n']} cases where {100 * pe['band'][0]:.0f}-{100 * pe['band'][1]:.0f}% of "
                 f"the steps waited for a batch over a quarter of the mean step (their p90 step falls on the edge "
                 f"between short steps and long ones): abs error of the p90 step {_groups_md(pe, 'others with a timeline')}"
                 f" | | | |")
    pf = p.get("p90_edge_flagged") or {}
    if pf.get("n"):
        L.append(f"| (diagnostic) the {pf['n']} cases pipeplan's report flags with its p90 step on an edge (its step "
                 f"time rising 1.3x or more from its p85 to its p95; the measured p90 inside the p80-p95 band it "
                 f"names in {_pct(pf['share_measured_inside_p80_p95'], False)}): abs error of the p90 step "
                 f"{_groups_md(pf, 'others')} | | | |")
    ls = p.get("long_share_sides") or {}
    if ls.get("n_cases"):
        L.append(f"| (diagnostic) the long steps' share (over 1.5x the median step), measured over {ls['n_cases']} "
                 f"cases with a timeline and simulated: median {_pct(ls['measured_median'], False)} measured, "
                 f"{_pct(ls['simulated_median'], False)} simulated; on the same side of {100 * ls['edge']:.0f}% (the "
                 f"p90 step of the same kind) in {ls['n']}: abs error of the p90 step "
                 f"{_groups_md(ls, 'on opposite sides') if ls['n'] else 'n/a'}; the opposite sides hold "
                 f"{_pct(ls['other_side_p90_err_share_beyond_15'], False)} of these cases' p90 step errors beyond 15% | | | |")
    ph = p.get("p90_halves") or {}
    if ph.get("n"):
        L.append(f"| (diagnostic) the ground truth's own precision of the p90 step: over {ph['n']} cases with a "
                 f"timeline the p90 steps of the first and second half of the window differ by median "
                 f"{_pct(ph['median_rel_diff'], False)} / p90 {_pct(ph['p90_rel_diff'], False)} of their mean (the "
                 f"window's own p90 uncertain by about half that: p90 {_pct(ph['p90_window_uncertainty'], False)}); "
                 f"pipeplan's abs error of the p90 step in the {ph['n_precise']} whose halves agree within "
                 f"{100 * ph['precise_within']:.0f}%: median {_pct(ph['precise_median_abs_step_p90_err'], False)} / "
                 f"p90 {_pct(ph['precise_p90_abs_step_p90_err'], False)}; the {ph['n_loose']} others "
                 f"{_pct(ph['loose_median_abs_step_p90_err'], False)} / {_pct(ph['loose_p90_abs_step_p90_err'], False)} | | | |")
    sw = p.get("short_windows") or {}
    if sw.get("n_short") and sw.get("n_rest"):
        L.append(f"| (diagnostic) the {sw['n_short']} cases measured in fewer than {sw['steps']} steps (a few rounds of "
                 f"their workers: the p90 is where a round's waits fall) against the {sw['n_rest']} others: abs error "
                 f"of the p90 step median {_pct(sw['short_median_abs_step_p90_err'], False)} / p90 "
                 f"{_pct(sw['short_p90_abs_step_p90_err'], False)} against {_pct(sw['rest_median_abs_step_p90_err'], False)}"
                 f" / {_pct(sw['rest_p90_abs_step_p90_err'], False)} | | | |")
    wl = [b for b in (p.get("window_lengths") or []) if b["n"]]
    if wl:
        parts = [f"{b['from_s']:g}-{b['to_s']:g} s" if b["to_s"] is not None else f"{b['from_s']:g} s and more"
                 for b in wl]
        L.append("| (diagnostic) the p90 step's abs error by the measured window's length (steps x mean step; one "
                 "realisation of a short window lies far from another's: validation-runs.md run 60, finding 7): "
                 + "; ".join(f"{part} ({b['n']} cases) median {_pct(b['median_abs_step_p90_err'], False)} / p90 "
                             f"{_pct(b['p90_abs_step_p90_err'], False)}" for part, b in zip(parts, wl)) + " | | | |")
    pi = p.get("pooled_inputs") or {}
    if pi.get("n"):
        L.append(f"| (diagnostic) the {pi['n']} cases whose call measured the same components more than once, each "
                 f"predicted from the mean of those inputs (as a sweep: no bracket of its own): median abs throughput "
                 f"error {_pct(pi['median_abs_throughput_err'], False)} / p90 {_pct(pi['p90_abs_throughput_err'], False)}; "
                 f"from its own brackets {_pct(pi['own_median_abs_throughput_err'], False)} / "
                 f"{_pct(pi['own_p90_abs_throughput_err'], False)} | | | |")
    L.append(f"| (diagnostic) min tau over the pairs the ground truth orders (measured pairs within its noise left out) | "
             f"{_tau(p.get('min_family_tau_within_noise'))} | | | |")
    ft = p.get("families_tau") or {}
    if ft.get("n"):
        L.append(f"| (diagnostic) the {ft['n']} families (one per call): tau >= 0.9 in {ft['raw_ok']}; "
                 f"{ft['rankable']} have a measured pair farther apart than their call's repeat spread, and "
                 f"{ft['rankable_ok']} of those meet 0.9 over the pairs the ground truth orders; in the other "
                 f"{ft['n'] - ft['rankable']} the ground truth cannot order any pair | | | |")
    L.append(f"| (diagnostic) min tau as a sweep ranks settings (one set of inputs per call and component "
             f"configuration); over the pairs the ground truth orders | {_tau(p.get('min_family_tau_sweep'))}; "
             f"{_tau(p.get('min_family_tau_sweep_within_noise'))} | | | |")
    if p.get("median_abs_workers_busy_err") is not None:
        L.append(f"| (diagnostic) median abs error of the workers' busy share, in points ({p['n_workers_busy']} cases) | "
                 f"{p['median_abs_workers_busy_err'] * 100:.1f} | | | |")
    if p.get("pin_stall_rates"):
        rates = p["pin_stall_rates"]
        cases_r = sorted(c for c, _ in rates)
        probes = [q for _, q in rates if q is not None]
        pairs = [abs(c - q) for c, q in rates if q is not None]
        L.append(f"| (diagnostic) the loop's loss per second of the pin thread's pin_memory() inside its steps, in the "
                 f"{len(rates)} pinned cases whose loop needs the memory map (timeline; run 26, finding 2), and the "
                 f"pin-parts probe's beside a helper's pin_memory(), measured outside the case (the model slows such "
                 f"a loop at the probe's rate where its call has one, else stops it for the mapping part; run 28) | "
                 f"median {median(cases_r):.2f} (range {cases_r[0]:.2f} to {cases_r[-1]:.2f}); probe: "
                 + (f"median {median(probes):.2f} over {len(probes)} case(s), {median(pairs):.2f} from its case's "
                    f"(median abs difference)" if probes else "not recorded in these calls")
                 + " | | | |")
    if p.get("out_of_order_pairs"):
        oo = p["out_of_order_pairs"]
        L.append(f"| (diagnostic) batches finished before the one ahead of them, measured / simulated, median over "
                 f"{len(oo)} cases (each one's long step then short one shapes the p90 step) | "
                 f"{median([m for m, _ in oo]) * 100:.1f}% / {median([q for _, q in oo]) * 100:.1f}%; median abs "
                 f"difference {median([abs(m - q) for m, q in oo]) * 100:.1f} points | | | |")
    if p.get("n_machine_wide_spells"):
        L.append(f"| (diagnostic) median / p90 abs throughput error without the {p['n_machine_wide_spells']} case(s) whose "
                 f"workers all slowed together (timeline: common share > {MACHINE_WIDE_SPELL_SHARE}; a machine-wide "
                 f"spell or a shared resource) | "
                 f"{_pct(p.get('median_abs_throughput_err_without_spells'), False)} / "
                 f"{_pct(p.get('p90_abs_throughput_err_without_spells'), False)} | | | |")
    if p.get("median_seeds_cv_samples_per_s") is not None:
        L.append(f"| (diagnostic) the prediction's own spread over {meta.get('seeds')} seeds (median cv of throughput / of the "
                 f"p90 step; the prediction is their mean) | {p['median_seeds_cv_samples_per_s'] * 100:.1f}% / "
                 f"{(p.get('median_seeds_cv_step_p90_s') or 0) * 100:.1f}% | | | |")
    if p and p.get("failed"):
        L.append("")
        L.append(f"{p['failed']} case(s) could not be simulated (see the per-case table).")
    calls = meta.get("calls") or []
    if len(calls) > 1 and ev.get("per_call"):
        L.append("")
        L.append("### Per call")
        L.append("")
        L.append("| call | results | cases | median abs thr. err | p90 | signed median | p90 step err: median / p90 | "
                 "bottleneck |")
        L.append("|---|---|---|---|---|---|---|---|")
        where = {c["tag"]: c["results"] for c in calls}
        for c in ev["per_call"]:
            L.append(f"| {c['tag']} | `{where.get(c['tag'], '')}` | {c['n']} | {_pct(c['median_abs_throughput_err'], False)} | "
                     f"{_pct(c['p90_abs_throughput_err'], False)} | {_pct(c['median_throughput_err'])} | "
                     f"{_pct(c['median_abs_step_p90_err'], False)} / {_pct(c['p90_abs_step_p90_err'], False)} | "
                     f"{_pct(c['bottleneck_agreement'], False)} |")
    misses = miss_groups(ev["rows"])
    if misses:
        n_pred = sum(1 for r in ev["rows"] if (r.get("pipeplan") or {}).get("err") is not None)
        L.append("")
        L.append("### Where the misses are")
        L.append("")
        L.append(f"The {sum(g['n_misses'] for g in misses)} of {n_pred} cases whose |throughput error| exceeds "
                 f"{P90_THROUGHPUT_TARGET * 100:.0f}% (the p90 target allows {int(0.1 * n_pred)}), by kind of "
                 "pipeline; over: pipeplan predicts more samples/s than measured.")
        L.append("")
        L.append("| pipeline | misses | over / under | cases of the kind | calls with a miss |")
        L.append("|---|---|---|---|---|")
        for g in misses:
            L.append(f"| {g['group']} | {g['n_misses']} | {g['n_over']} / {g['n_under']} | {g['n_cases']} | "
                     f"{', '.join(g['calls'])} |")
    failing = failing_families(ev.get("families") or {})
    if failing:
        L.append("")
        L.append(f"Families below tau 0.9 over the pairs the ground truth can order ({len(failing)} of "
                 f"{(p.get('families_tau') or {}).get('rankable', 'n/a')}): "
                 + ", ".join(f"{k} ({_tau(v)})" for k, v in failing) + ".")
    L.append("")
    L.append("### Per case")
    L.append("")
    L.append("Throughput in samples/s; step times in ms; errors are (predicted - measured) / measured. "
             "Bottleneck classes: compute, input (loader side), host (training loop and its copies).")
    L.append("")
    L.append("Workers busy: the share of the window the workers spent in `__getitem__` and collate, measured "
             "in situ / simulated.")
    L.append("")
    L.append("| case | measured | pipeplan | err | by-hand | err | p90 step meas | p90 pred | err | GPU busy | load in situ / alone | workers busy | bottleneck meas | pred (stage) |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in ev["rows"]:
        m, pp, bh = r["measured"], r["pipeplan"] or {}, r["by_hand"]
        if "error" in pp:
            pred_cells = ["error", "n/a"]
            p90_cells = ["n/a", "n/a"]
            bn = f"error: {pp['error'][:80]}"
        else:
            pred_cells = [_num(pp.get("samples_per_s")), _pct(pp.get("err"))]
            p90_cells = [_num(pp.get("step_p90_s") and pp["step_p90_s"] * 1e3, "{:.1f}"),
                         _pct(pp.get("step_p90_err"))]
            bn = (f"{pp.get('bottleneck_class')} ({pp.get('bottleneck_stage')})"
                  + ("" if pp.get("bottleneck_ok") else " ✗")) if pp else "n/a"
        L.append(f"| `{r['id']}` | {_num(m['samples_per_s'])} | {pred_cells[0]} | {pred_cells[1]} | "
                 f"{_num(bh['samples_per_s'])} | {_pct(bh['err'])} | {_num(m['step_p90_s']*1e3, '{:.1f}')} | "
                 f"{p90_cells[0]} | {p90_cells[1]} | {_num(m['gpu_busy_fraction'], '{:.2f}')} | "
                 f"{_num(m.get('load_in_situ_ratio'), '{:.2f}')} | {_busy_cell(m, pp)} | {m['bottleneck']} | {bn} |")
    L.append("")
    L.append("### Families (ranking of settings, Kendall tau-b against the measured order)")
    L.append("")
    L.append("The within-noise columns leave out the measured pairs closer than the call's largest repeat spread (the "
             "noise table below): the ground truth cannot order them (n/a: no pair is ordered beyond that noise). "
             "Over the rest: (C - D) / sqrt((C + D) (C + D + T)), T the pairs the prediction ties; until the "
             "twenty-fourth session those pairs counted as measured ties in tau-b's denominator.")
    L.append("")
    L.append("A setting measured more than once in a call (a repeat, or harness `--rounds`) is ranked by its mean, "
             "measured and predicted; `(xN)` marks such a mean.")
    L.append("")
    L.append("The sweep columns rank the settings as `pipeplan sweep` would: every case of a call whose components "
             "measure the same thing (same data kind, batch size, num_workers, pin_memory, storage) predicted from "
             "one set of inputs, the mean of theirs (per-case brackets otherwise carry the machine's drift between "
             "cases into the predicted order).")
    L.append("")
    L.append("| family | settings | measured samples/s in order | tau pipeplan | tau by-hand | noise | tau pipeplan within noise "
             "| sweep: predicted in order | tau sweep | tau sweep within noise |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    rowmap = {r["id"]: r for r in ev["rows"]}
    for f, ent in ev["families"].items():
        means = ent.get("measured_means") or [rowmap[i]["measured"]["samples_per_s"] for i in ent["cases"]]
        counts = ent.get("measurements") or [1] * len(means)
        vals = ", ".join(_num(m) + (f" (x{n})" if n > 1 else "") for m, n in zip(means, counts))
        sw = ", ".join(_num(x) for x in ent["sweep_predicted_means"]) if ent.get("sweep_predicted_means") else "n/a"
        L.append(f"| {f} | {ent['n']} | {vals} | {_tau(ent.get('tau_pipeplan'))} | {_tau(ent['tau_by_hand'])} | "
                 f"{_pct(ent.get('ground_truth_noise'), False)} | {_tau(ent.get('tau_pipeplan_within_noise'))} | "
                 f"{sw} | {_tau(ent.get('tau_sweep'))} | {_tau(ent.get('tau_sweep_within_noise'))} |")
    L.append("")
    L.append("### Noise of the ground truth (the same setting measured more than once in the run)")
    L.append("")
    L += noise_table(ev["noise"], "samples_per_s", "samples/s", _num, lambda x: _pct(x, False), with_p90=True)
    L.append("")
    L.append("### Components (measured alone, same run)")
    L.append("")
    comps = meta.get("components") or {}
    L.append("| component | mean | cv | stderr of the mean | n |")
    L.append("|---|---|---|---|---|")
    for kind, v in (comps.get("load") or {}).items():
        L.append(f"| `__getitem__` {kind} | {v['mean']*1e3:.3f} ms | {_num(v.get('cv'), '{:.2f}')} | "
                 f"{_pct(v.get('stderr_rel'), False)} | {v.get('n')} |")
    for kind, v in (comps.get("load_cold") or {}).items():
        L.append(f"| `__getitem__` {kind}, cold page cache | {v['mean']*1e3:.3f} ms | {_num(v.get('cv'), '{:.2f}')} | "
                 f"{_pct(v.get('stderr_rel'), False)} | {v.get('n')} |")
    for key, v in (comps.get("collate") or {}).items():
        c = v["s_per_batch"]
        L.append(f"| collate {key} ({v['batch_bytes']['mean']/1e6:.2f} MB) | {c['mean']*1e3:.3f} ms | "
                 f"{_num(c.get('cv'), '{:.2f}')} | {_pct(c.get('stderr_rel'), False)} | {c.get('n')} |")
    for key, v in (comps.get("step") or {}).items():
        g, hs = v["gpu_s"], v["host_s"]
        sus = v.get("sustained_interval_s")
        L.append(f"| GPU step {key}, isolated (host {hs['mean']*1e3:.2f} ms; plain synthetic loop "
                 f"{v['synthetic_loop_step_s']*1e3:.2f} ms) | {g['mean']*1e3:.3f} ms | {_num(g.get('cv'), '{:.3f}')} | "
                 f"{_pct(g.get('stderr_rel'), False)} | {g.get('n')} |")
        if sus:
            L.append(f"| GPU step {key}, sustained back-to-back{' (used)' if v.get('sustained_is_gpu_time') else ''} | "
                     f"{sus['mean']*1e3:.3f} ms | {_num(sus.get('cv'), '{:.3f}')} | {_pct(sus.get('stderr_rel'), False)} | {sus.get('n')} |")
    ws = comps.get("worker_start")
    if ws:
        L.append(f"| worker start (slope per worker) | {ws['per_worker_s']*1e3:.1f} ms | | | {len(ws['points'])} counts |")
    L.append("")
    return "\n".join(L)


def update_markdown(path: str, generated: str, begin: str = BEGIN, end: str = END, title: str = "Validation") -> None:
    """Replace what lies between the begin and end markers of `path` (append both when absent)."""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    else:
        text = f"# {title}\n\n{begin}\n{end}\n"
    if begin in text and end in text:
        a = text.index(begin) + len(begin)
        b = text.index(end)
        text = text[:a] + "\n" + generated + "\n" + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + begin + "\n" + generated + "\n" + end + "\n"
    tmp = path + ".tmp"                        # whole or not at all: a killed run leaves the page as it was
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# ============================================================================ main
def tag_case(case: Dict[str, Any], tag: str) -> Dict[str, Any]:
    """A case of one run among several: its id and families prefixed with the run's tag, so that
    ids stay unique and every family ranks settings measured in one call only."""
    c = dict(case)
    c["id"] = f"{tag}:{case['id']}"
    c["family"] = f"{tag}:{case['family']}"
    c["also_families"] = [f"{tag}:{f}" for f in case.get("also_families", [])]
    return c


def _profile_note(path: Optional[str]) -> str:
    if not path:
        return "none given: pipeplan used its bundled default profile"
    try:
        prov = read_json(path).get("provenance")
    except Exception:
        prov = None
    return f"`{os.path.relpath(path)}`" + (f" (measured {prov.get('date')} on {prov.get('hostname')})" if prov else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", required=True, action="append",
                    help="harness output (cases.json); repeat with --profile for several device calls")
    ap.add_argument("--profile", default=None, action="append",
                    help="profile calibrated in the same device call as the --cases in the same position")
    ap.add_argument("--pipeplan", default=REPO_PIPEPLAN, help="pipeplan binary")
    ap.add_argument("--out-dir", default=None, help="scenarios/ and report.json (default: beside the first --cases)")
    ap.add_argument("--md", default=None, help="markdown file whose generated section is replaced")
    ap.add_argument("--no-simulate", action="store_true", help="only the measured side and the by-hand estimate")
    ap.add_argument("--min-steps", type=int, default=MIN_SIM_STEPS,
                    help="simulated steady steps at least (default %(default)s)")
    ap.add_argument("--timeout-s", type=float, default=300)
    ap.add_argument("--transport", choices=["calibrated", "measured"], default="calibrated",
                    help="main-process receive and pin costs: from the calibrated profile (C-level IPC and "
                         "memcpy), or from the harness's DataLoader transport component (default %(default)s)")
    ap.add_argument("--host-from", choices=["step", "loaded", "alone-median", "probe-bracket", "probes-only"], default="probe-bracket",
                    help="the loop's host time per step: probe-bracket: the mean of the host probes right before and "
                         "after the case (harness since run 20; host-heavy cases; run 20's ResNet-50 cases: median "
                         "abs error 3.2%% against the alone-median's 7.5%%), and for an unpinned case with workers "
                         "its case-like windows' launches (run 30's session), else alone-median; probes-only: the "
                         "probes for every case (as until run 30); the median "
                         "of every window the call timed the loop alone "
                         "(alone-median: the step component's, and for ResNet-50 steps host_under_load's and "
                         "host_beside_loader's alone and alone-again windows), the step component's alone (step), "
                         "or host_under_load's loop beside as many spinning processes as the case has workers, "
                         "brought back to one idle core (loaded) (default %(default)s)")
    ap.add_argument("--unpinned-window", choices=["case", "call"], default="case",
                    help="with --unpinned-loop beside-loader: an unpinned case's copy and release from its own windows "
                         "right before and after it where the harness took them (since run 23's plan), or always "
                         "from the call's one host_beside_loader window")
    ap.add_argument("--unpinned-next", choices=["window", "off"], default="window",
                    help="with --unpinned-loop beside-loader: an unpinned batch's receive inside next() from the "
                         "case-like window's next() where the harness timed it (since run 26's plan), or, off, from "
                         "the transport loop less calibrate's untouched release (run 25: below zero in the GIL call)")
    ap.add_argument("--pin-thread-wait", choices=["probes", "probes-fd", "probes-any", "off"], default="probes-fd",
                    help="a pinned case's pin thread time off its core per batch (loader.pin_thread_wait_s_per_batch): "
                         "probes-fd (default since the ninety-third session: device plan item 30, 12 cases of runs "
                         "84-86), from its pin-bound probes' wall less CPU per batch (run 36, finding 6: about 4%% of "
                         "the wall, the same on every lease; run 37, finding 2), a probe counting only where its pin "
                         "thread was busier than its workers (since the forty-sixth session), and where no probe is "
                         "pin-bound the probes' fd hand-overs' wall less CPU (fd_handover_wait_s; run 84; probes "
                         "since run 84 time them, none before); probes, the pin-bound probes alone (the default from "
                         "run 38 to the ninety-second session); probes-any, any probe under 0.8 busy workers (runs "
                         "38-50); or off, the pin thread on its CPU all the time (the default up to run 37)")
    ap.add_argument("--main-next", choices=["probes", "off"], default="probes",
                    help="a pinned case's loop-thread CPU in next() per batch (loader.main_next_s_per_batch): probes, "
                         "from the pinned probes around it (default since run 42: finding 8), or off, none (the "
                         "simulator's next() free once the batch is there; the default up to run 41)")
    ap.add_argument("--copy-call", choices=["probe", "off"], default="probe",
                    help="a pinned non_blocking case's .to() call host time (transfer.copy_call_s_per_batch): probe, "
                         "the call's probe_main_loop copy windows (harness since run 43), or off, none (the "
                         "simulator's copy enqueued for free; the only choice for calls before run 43)")
    ap.add_argument("--transport-busy", choices=["loops", "probes"], default="probes",
                    help="the busy cores at which the transport's costs, once scaled to the probes around a case, are "
                         "brought to one idle core: the probes' own (default since run 38; run 37, finding 3) or the "
                         "transport loops' (the default up to run 37)")
    ap.add_argument("--transport-drift", choices=["probes", "off"], default="probes",
                    help="with --transport measured: scale the transport to the main side's cost in the probes around "
                         "each case (probes, default), or take it as the call's component measured it, once (off: what "
                         "a user who measures the transport once has; validation-runs.md, the user's path)")
    ap.add_argument("--probe-pin-window", choices=["whole", "late-half"], default="whole",
                    help="a pinned case's pin thread cost around it (the transport's scale): its probes' pin thread "
                         "CPU per batch over their whole windows (default), or over the second half of each window, "
                         "past a fresh loader's start-up (run 24's finding 1: unbiased for the image probes of runs "
                         "13-23, but half the batches: 5.0%% / 15.4%% against 4.7%% / 14.9%% over runs 11-24, the "
                         "pin-bound tensor cases noisier). Since run 24 the harness's probes settle 1 s first")
    ap.add_argument("--cold-probe", choices=["after", "warm-and-after"], default="after",
                    help="a cold case's loader probe: the one after it on the re-warmed cache (default), or the mean "
                         "of it and the harness's probe_warm taken before the case (since run 23's plan)")
    ap.add_argument("--cold-latency", choices=["load-cold", "profile"], default="load-cold",
                    help="a cold case's wait per file beyond its bytes at the stream rate: from the load_cold "
                         "component (one process loading the dataset's files cold, less its CPU and its bytes at "
                         "calibrate's stream rate; default since run 21's finding 7), or the profile's per-request "
                         "latency alone (until then)")
    ap.add_argument("--worker-reads", choices=["per-sample", "per-batch"], default="per-sample",
                    help="a cold case's workers: read and decode one sample at a time as PyTorch's map-style fetch "
                         "does (the simulator's default since run 48), or read the batch's files back to back, then "
                         "run their CPU (scenario storage.worker_reads=per_batch; the model until run 48: "
                         "validation-runs.md run 48, finding 6)")
    ap.add_argument("--read-pieces", type=int, default=None,
                    help="a cold case's storage.read_pieces_per_batch (the simulator's default, 4, when absent): "
                         "fewer read-then-CPU pieces a batch simulate faster (forty-sixth session)")
    ap.add_argument("--device-share", choices=["at-start", "follows-readers"], default="at-start",
                    help="a cold read's device rate: fixed by the readers reading at its start (the simulator's "
                         "default), or following the count reading at each moment (scenario "
                         "storage.device_share=follows_readers; forty-sixth session, calibrate's pause sweep)")
    ap.add_argument("--device-bandwidth", choices=["fio", "fio-or-buffered-peak"], default="fio",
                    help="a cold case's device bandwidth: fio's best 1 MiB sequential read (the simulator's default) "
                         "or the larger of it and calibrate's concurrent buffered readers' peak (scenario "
                         "storage.device_bandwidth_from; validation run 51, finding 3)")
    ap.add_argument("--reader-share", choices=["back-to-back", "with-work"], default="back-to-back",
                    help="a cold read's rate by readers: from calibrate's readers reading back to back (the "
                         "simulator's default) or working on the CPU after each file (scenario "
                         "storage.reader_share_from=with_work; validation run 51, finding 2)")
    ap.add_argument("--unpinned-loop", choices=["beside-loader", "calibrated"], default="beside-loader",
                    help="with --transport measured, an unpinned case's copy and release on the loop's thread: as "
                         "host_beside_loader timed them beside a live DataLoader where the call has that window "
                         "(ResNet-50 steps, harness since run 18; every unpinned case with workers since run 21's plan), "
                         "else calibrate's fresh-mapping figures; or always "
                         "calibrate's (default %(default)s)")
    ap.add_argument("--transport-clock", choices=["wall", "cpu"], default="cpu",
                    help="with --transport measured: the transport loops' wall time per batch, or their CPU time "
                         "(the receive loop's main thread, the pin loop's pin thread; harness since run 11) "
                         "(default %(default)s)")
    ap.add_argument("--wander", choices=["probe", "probe-cv", "profile"], default="probe",
                    help="the workers' speed wander (cv and correlation time): from the probes around each case "
                         "where they measured it (harness since run 12), else the profile's; probe-cv: the probes' "
                         "cv with the profile's correlation time; or always the profile's (default %(default)s)")
    ap.add_argument("--worker-put-share", type=float, default=None, metavar="SHARE",
                    help="a what-if: loader.worker_put_share in every scenario with workers (the share of "
                         "worker_s_per_batch before the hand-off; default the simulator's, 0.67 since the eighty-sixth "
                         "session, measured in validation-runs.md run 79, finding 1; 1 as before)")
    ap.add_argument("--worker-turnaround-share", type=float, default=None, metavar="SHARE",
                    help="a what-if: loader.worker_turnaround_share in every scenario with workers (the share of "
                         "worker_s_per_batch a worker spends after a collate before its next index, the put beside it "
                         "on its feeder; default the simulator's, 1: the whole key on the worker's path; "
                         "validation-runs.md run 80, finding 3)")
    ap.add_argument("--wander-long", choices=["off", "parts", "parts-no-level"], default="off",
                    help="a what-if: the workers' wander fitted in parts to the call's long reading of each case's "
                         "loader (components.wander_long, harness --wander-long-s; device plan item 28): parts, a "
                         "level each worker keeps and a fast and a slow part; parts-no-level, the two parts only; off "
                         "(default): the probes' one part")
    ap.add_argument("--worker-turnaround-from-probes", action="store_true",
                    help="a what-if: each case's loader.worker_turnaround_share from its probes' measured path between "
                         "two batches (turnaround plus the fetcher's gaps, over the key; harness since the "
                         "eighty-ninth session), where they read one; the others keep --worker-turnaround-share or the "
                         "simulator's default (validation-runs.md run 82, findings 2 and 3)")
    ap.add_argument("--pin-cycle", choices=["probes", "off"], default="off",
                    help="a what-if: probes, the pin thread's own spread (profile cpu.pin_thread_speed_cv) as its pin "
                         "cycle's cv in the pin-bound probes around each pinned case (harness since the eighty-second "
                         "session); off, the cores' wander (default %(default)s: run 77's probes read 0.101 at mean "
                         "where their cases ran 0.145, correlation 0.46, and moved the p90 step by a point)")
    ap.add_argument("--wander-memory", choices=["seconds", "batches", "batches-two-part"], default="seconds",
                    help="a what-if: with batches a worker's wander keeps the probes' lag-one from one of its batches "
                         "to the next however long they take (cpu.core_speed_correlation_batches; validation run 59, "
                         "finding 2); batches-two-part: the same lag-one split into a slower part of the machine's share and lag-one "
                         "and a fast rest (two_part_batch_wander); seconds: their correlation time (default %(default)s)")
    ap.add_argument("--wander-common-share", default="off",
                    help="a what-if: the share of the workers' wander they all share at the same time "
                         "(cpu.core_speed_common_share; validation run 61, findings 3-6): off, calibrate (its paused "
                         "decode threads' share in the call's calibrate.log: decode_threads_common_share), or a number "
                         "(default %(default)s)")
    ap.add_argument("--slow-wander", choices=["off", "no-pause", "paused"], default="off",
                    help="a what-if: split each case's wander into a fast and a slow part in the share its call's "
                         "calibrate.log shows (refit by --calibrate-binary --wander-from-log; no-pause: the 6 s log, "
                         "paused: the 24 s log with a 2 ms pause per chunk, since the thirty-sixth session) "
                         "(default %(default)s: one part)")
    ap.add_argument("--slow-wander-fast-memory", choices=["probe", "less-slow"], default="probe",
                    help="with --slow-wander: the fast part's correlation time, the probes' as read (default "
                         "%(default)s) or with the slow part's memory taken out of their lag-one "
                         "(fast_correlation_less_slow)")
    ap.add_argument("--calibrate-binary", default="build/calibrate/pipeplan-calibrate",
                    help="pipeplan-calibrate, for --slow-wander (default %(default)s)")
    ap.add_argument("--launch-tail", choices=["loop", "off"], default="loop",
                    help="a host-bound step's kernels end no earlier than its last launch plus the GPU time launched "
                         "last: loop: the plain synthetic loop's step less its launches in the host probes around the "
                         "case, else host_under_load's alone windows (run 25), off: none (the model until run 25)")
    ap.add_argument("--stall-phase", choices=["pin-memory", "calibrate-split", "pin-split"],
                    default="calibrate-split",
                    help="for a loop slowed at the pin-parts probe's rate (--memory-map-wait pin-parts): the pin "
                         "thread's phase it slows in is calibrate's touch share of the pin loop (default), or the "
                         "transport's pin_memory() calls (the rate is a loss per second of them; run 31, finding 6: "
                         "worse on the 20 cases it changes); pin-split: the default's split with its copy part from "
                         "calibrate's interleaved pin split at the batch's size (ipc.pin_split_points; profiles "
                         "since the twenty-ninth session, else the default), for every pinned case")
    ap.add_argument("--memory-map-wait", choices=["off", "pin-parts"], default="pin-parts",
                    help="a loop that needs the memory map: pin-parts: it slows at the rate the harness's pin-parts "
                         "loop lost per second of a helper's pin_memory() (memory_map_rate: the interleaved blocks "
                         "since run 28, else run 27's difference of means), as training.memory_map_wait_s, and where "
                         "the call has no such rate it stops as with off; off: it stops while the pin thread maps a "
                         "batch (the model since run 17). Run 28's interleaved probe read 0.73 where the GIL call's "
                         "pinned cases' own lines read 0.79 and 0.73 (validation-runs.md run 28, finding 1) "
                         "(default %(default)s)")
    ap.add_argument("--gpu-humps", choices=["off", "duty-curve"], default="off",
                    help="the GPU clock's humps at a high duty (validation-runs.md run 45, finding 2): duty-curve "
                         "writes training.gpu_clock_humps from the call's duty curves' per-step times (harness since "
                         "run 44) where they show humps; a what-if until the 0.9 duty point is measured (off)")
    ap.add_argument("--gpu-duty", choices=["measured", "linear", "off"], default="measured",
                    help="the GPU step's time against its recent busy share, from the step component's isolated "
                         "time (rested) to its sustained one (back to back): in between the call's measured "
                         "gpu_duty_curve where the harness took one (since run 13), else the profile's "
                         "compute.step_vs_gpu_duty shape, else a line (measured); always "
                         "a line (linear); or always the sustained time (off; the model until run 12) "
                         "(default %(default)s)")
    ap.add_argument("--gpu-duty-time-constant", choices=["rest-curve", "default"], default="rest-curve",
                    help="how fast the GPU's busy share follows its load (with --gpu-duty measured): fitted to the "
                         "call's gpu_rest_curve, the shape re-read at a step's start (rest-curve), or the "
                         "simulator's 1 s (default: a periodic loop's share is its long-run duty; the model until "
                         "run 14) (default %(default)s)")
    ap.add_argument("--load-curve", choices=["scaling", "machine"], default="scaling",
                    help="the load's speed around the K-worker probe: load_scaling's measured shape (scaling), "
                         "or the machine's cpu curve alone (machine) (default %(default)s)")
    ap.add_argument("--receive-gil-share", default=None,
                    help="a what-if: the share of the pin thread's fixed receive cost that holds the GIL "
                         "(ipc.receive_gil_share, a number in [0, 1], or measured: from the call's GIL probe where "
                         "its harness ran one (receive_gil_share_from_probe), else the simulator's default 1, which "
                         "holds all of it; validation run 62, finding 3)")
    ap.add_argument("--receive-gil-s", default=None, metavar="SECONDS|measured|off",
                    help="ipc.receive_gil_s_per_batch in every case's profile: the GIL-held part of the pin "
                         "thread's receive a batch, seconds on one idle core; off: the profile's receive_gil_share "
                         "instead (the whole fixed receive: the model until the fifty-ninth session). Default: "
                         f"{H200_RECEIVE_GIL_S} (H200_RECEIVE_GIL_S, fitted on the validation H200 host, checked on the H100 "
                         "host) for calls whose harness recorded an H200 or H100, off for others and with --receive-gil-share; measured: "
                         "each call's own from its transport component's GIL probe (receive_gil_s_from_probe, harness "
                         "since run 62's plan), the default where a call has none")
    ap.add_argument("--back-to-back", default="measured", metavar="measured|off|FACTOR",
                    help="training.back_to_back_host_factor: the loop's Python right after its previous launches "
                         "over the same after a sync; measured: from the case's step component (host_after_launch_s "
                         "over host_s, harness since the fifty-ninth session; none before), off: 1, or a number (a "
                         "what-if; validation-runs.md run 62, finding 10 read 0.69 in the sync_every 8 timelines) "
                         "(default %(default)s)")
    ap.add_argument("--new-shape-cost", choices=("call", "case"), default="call",
                    help="sequence.new_shape_host_s of a variable-length case: call, the median over every length "
                         "the call's sequence_new_shape components timed for the same step model "
                         "(call_new_shape_host_s); case, its own (rows, batch size) component's lengths (the "
                         "table until the sixty-ninth session) (default %(default)s)")
    ap.add_argument("--seeds", type=int, default=8,
                    help="simulate each case with seeds 1..N and predict their mean (default %(default)s; "
                         "combine_replications says why)")
    a = ap.parse_args(argv)

    def word_or_number(flag: str, value: Optional[str], words: Sequence[Optional[str]], lo: float, hi: float,
                       expected: str) -> None:
        """One of `words`, or a number in [lo, hi]; else one line and exit 2."""
        if value in words:
            return
        try:
            if lo <= float(value) <= hi:
                return
        except (TypeError, ValueError):
            pass
        ap.error(f"{flag}: {value!r}: expected {expected}")

    if a.worker_put_share is not None and not 0.0 <= a.worker_put_share <= 1.0:
        ap.error(f"--worker-put-share {a.worker_put_share}: expected a share in [0, 1]")
    if a.worker_turnaround_share is not None and not 0.0 <= a.worker_turnaround_share <= 1.0:
        ap.error(f"--worker-turnaround-share {a.worker_turnaround_share}: expected a share in [0, 1]")
    word_or_number("--wander-common-share", a.wander_common_share, ("off", "calibrate"), 0.0, 0.95,
                   "off, calibrate or a number in [0, 0.95]")
    word_or_number("--receive-gil-share", a.receive_gil_share, (None, "measured"), 0.0, 1.0,
                   "measured or a number in [0, 1]")
    word_or_number("--back-to-back", a.back_to_back, ("measured", "off"), 0.05, 2.0,
                   "measured, off or a factor in [0.05, 2]")
    a.receive_gil_s_given = a.receive_gil_s is not None
    if a.receive_gil_s is None:
        a.receive_gil_s = "off" if a.receive_gil_share is not None else str(H200_RECEIVE_GIL_S)
    word_or_number("--receive-gil-s", a.receive_gil_s, ("off", "measured"), 0.0, 10.0,
                   "off, measured or seconds in [0, 10]")
    if a.seeds < 1:
        print(f"convert: --seeds {a.seeds}: expected an integer >= 1", file=sys.stderr)
        return 2

    profiles = a.profile or []
    if profiles and len(profiles) != len(a.cases):
        print(f"convert: {len(a.cases)} --cases but {len(profiles)} --profile: give one profile per device call, "
              f"in the same order (a prediction is compared only with ground truth of its own call)", file=sys.stderr)
        return 2
    runs = []
    for i, cp in enumerate(a.cases):
        try:
            doc = read_json(cp)
        except (OSError, json.JSONDecodeError) as e:
            print(f"convert: cannot read {cp}: {e}", file=sys.stderr)
            return 2
        pp = profiles[i] if profiles else None
        if pp and stored_json_path(pp) is None:
            print(f"convert: profile {pp} not found", file=sys.stderr)
            return 2
        try:
            profile_doc = read_json(pp) if pp else None
        except (OSError, ValueError) as e:     # a truncated or corrupt profile (plain or xz): one line, exit 2
            print(f"convert: cannot read profile {pp}: {e.__class__.__name__}: {e} (expected JSON)", file=sys.stderr)
            return 2
        runs.append({"cases_path": cp, "profile": pp, "profile_doc": profile_doc, "doc": doc,
                     "tag": f"r{i + 1}" if len(a.cases) > 1 else None})
    out_dir = a.out_dir or os.path.join(os.path.dirname(os.path.abspath(a.cases[0])),
                                        os.path.splitext(os.path.basename(a.cases[0]))[0] + "-report")
    simulate = not a.no_simulate
    if simulate:   # before anything is written
        exit_without_pipeplan("convert", a.pipeplan, ", or --no-simulate")
    scen_dir = os.path.join(out_dir, "scenarios")
    os.makedirs(scen_dir, exist_ok=True)

    # the GPU's duty time constant, a property of the machine kind: from the rest curves of every call scored on
    # that kind of GPU
    for i, r in enumerate(runs):
        r["profile_plain"] = plain_json_path(r["profile"], r["profile_doc"],
                                             os.path.join(scen_dir, f"_call{i + 1}.profile.json"))
    duty_taus = (duty_time_constants_by_gpu([(call_gpu(r["doc"]), r["doc"].get("components") or {}, r["profile_doc"])
                                             for r in runs])
                 if a.gpu_duty == "measured" and a.gpu_duty_time_constant == "rest-curve" else {})
    for gpu, tau in duty_taus.items():
        if tau:
            print(f"convert: GPU duty time constant {tau * 1e3:.1f} ms (gpu_rest_curve of the calls scored on "
                  f"{gpu or 'an unrecorded GPU'})", file=sys.stderr)
    preds: Dict[str, Dict[str, Any]] = {}
    cases: List[Dict[str, Any]] = []
    sweep_members: Dict[str, List[Tuple[Dict[str, Any], str, Dict[str, Any], Optional[Dict[str, Any]]]]] = {}
    for run in runs:
        machine = run["doc"].get("machine") or {}
        duty_tau = duty_taus.get(machine_gpu(machine))
        run_profile = run["profile_doc"]
        cpu_curve = ((run_profile or {}).get("cpu") or {}).get("speed_vs_busy_cores") or []
        call_components = run["doc"].get("components") or {}
        duty_shapes: Dict[str, Any] = {}     # per step model, once per call
        pooled_new_shape = call_new_shape_host_s(run["doc"]) if a.new_shape_cost == "call" else {}
        for c0 in run["doc"].get("cases") or []:
            c = tag_case(c0, run["tag"]) if run["tag"] else c0
            c = with_call_new_shape(c, pooled_new_shape)
            cases.append(c)
            if c.get("status") != "ok":
                continue
            # the GPU step's shape between rested and back to back: the harness's curve for this step model,
            # else the call's, else calibrate's
            if a.gpu_duty == "measured" and step_key(c) not in duty_shapes:
                duty_shapes[step_key(c)] = case_duty_shape(call_components, run_profile, c)
            duty_shape = duty_shapes.get(step_key(c))
            scen, case_profile = case_inputs(c, machine, run_profile, a, cpu_curve, duty_shape, simulate, duty_tau,
                                             call_components)
            if getattr(a, "slow_wander", "off") != "off" and (case_profile or run_profile) is not None:
                if "slow_refit" not in run:
                    run["slow_refit"] = slow_wander_refit(
                        a.calibrate_binary, os.path.join(os.path.dirname(run["profile"] or ""), "calibrate.log"))
                split = with_slow_wander(case_profile or run_profile, run["slow_refit"],
                                         "paused" if a.slow_wander == "paused" else "no_pause")
                if split is not None and getattr(a, "slow_wander_fast_memory", "probe") == "less-slow":
                    batch_times = [float(w["batch_s"]) for p in ("probe", "probe_after")
                                   for w in [((c.get("components") or {}).get(p) or {}).get("wander") or {}]
                                   if w.get("batch_s")]
                    cpu = split["cpu"]
                    if batch_times and cpu.get("core_speed_correlation_s"):
                        cpu["core_speed_correlation_s"] = round(fast_correlation_less_slow(
                            float(cpu["core_speed_correlation_s"]), sum(batch_times) / len(batch_times),
                            float(cpu["core_speed_cv"]), float(cpu["core_speed_slow_cv"]),
                            float(cpu["core_speed_slow_correlation_s"])), 4)
                if split is not None:
                    case_profile = split
                    c.setdefault("convert", {})["slow_wander"] = {
                        k: split["cpu"][k] for k in ("core_speed_cv", "core_speed_slow_cv",
                                                     "core_speed_slow_correlation_s")}
            common_opt = getattr(a, "wander_common_share", "off")
            if common_opt != "off" and (case_profile or run_profile) is not None:
                if common_opt == "calibrate":
                    if "common_share" not in run:
                        log_path = os.path.join(os.path.dirname(run["profile"] or ""), "calibrate.log")
                        text = read_stored_text(log_path)     # or its .xz
                        run["common_share"] = decode_threads_common_share(text) if text is not None else None
                    share = run["common_share"]
                else:
                    share = float(common_opt)
                if share is not None:
                    case_profile = json.loads(json.dumps(case_profile or run_profile))
                    case_profile.setdefault("cpu", {})["core_speed_common_share"] = round(min(max(share, 0.0), 0.95), 4)
                    c.setdefault("convert", {})["common_share"] = case_profile["cpu"]["core_speed_common_share"]
            gil_opt = getattr(a, "receive_gil_share", None)
            if gil_opt is not None and (case_profile or run_profile) is not None:
                # a what-if: only this share of the pin thread's fixed receive cost holds the GIL (run 62, finding 3);
                # measured: from the call's GIL probe beside its pinned transport loop (harness since run 62)
                base = case_profile or run_profile
                gil_share = (receive_gil_share_from_probe(
                    ((c.get("components") or {}).get("transport") or {}).get("gil_probe"),
                    float((base.get("ipc") or {}).get("receive_s_per_batch") or 0.0))
                    if gil_opt == "measured" else float(gil_opt))
                if gil_share is not None:
                    case_profile = json.loads(json.dumps(base))
                    case_profile.setdefault("ipc", {})["receive_gil_share"] = round(gil_share, 4)
                    c.setdefault("convert", {})["receive_gil_share"] = case_profile["ipc"]["receive_gil_share"]
            gil_opt = getattr(a, "receive_gil_s", None)
            if gil_opt == "measured":
                # the call's own figure where its harness ran the GIL probe, else the machine's default
                probed = receive_gil_s_from_probe(((c.get("components") or {}).get("transport") or {}).get("gil_probe"))
                gil_s = (f"{probed:.7f}" if probed is not None
                         else receive_gil_for_machine(str(H200_RECEIVE_GIL_S), False, machine))
                if probed is not None:
                    c.setdefault("convert", {})["receive_gil_s_per_batch"] = round(probed, 7)
            else:
                gil_s = receive_gil_for_machine(gil_opt, getattr(a, "receive_gil_s_given", True), machine)
            held = with_receive_gil(c, case_profile or run_profile, gil_s)
            if held is not None:
                case_profile = held
            stem = c["id"].replace(":", "_")
            sp = os.path.join(scen_dir, stem + ".json")
            with open(sp, "w") as f:
                json.dump(scen, f, indent=2)
                f.write("\n")
            profile = run["profile_plain"]       # the simulator reads plain JSON only
            if case_profile is not None:
                profile = os.path.join(scen_dir, stem + ".profile.json")
                with open(profile, "w") as f:
                    json.dump(case_profile, f, indent=1)
            sweep_members.setdefault(sweep_key(c), []).append(
                (c, stem, scen, case_profile if case_profile is not None else run_profile))
            if simulate:
                preds[c["id"]] = simulate_replicated(a.pipeplan, sp, profile, a.timeout_s, a.seeds)
                pr = preds[c["id"]]
                msg = pr.get("error") or f"{_get(pr['result'], 'throughput.samples_per_s')} samples/s"
                print(f"convert: {c['id']}: {msg}", file=sys.stderr)
    # The ranking as a what-if sweep makes it: cases of a call that measure the same components share
    # one set of inputs (their mean), so the settings' predicted order is the model's, not the
    # machine's drift between cases (a sweep has one profile and one dataset cost for all settings).
    sweep_preds: Dict[str, Dict[str, Any]] = {}
    if simulate:
        for members in sweep_members.values():
            if len(members) < 2 or any(prof is None for _, _, _, prof in members):
                for c, *_ in members:
                    sweep_preds[c["id"]] = preds[c["id"]]
                continue
            pooled = pooled_inputs([(scen, prof) for _, _, scen, prof in members])
            for c, stem, scen, prof in members:
                s2, p2 = with_pooled(scen, prof, pooled)
                sp2 = os.path.join(scen_dir, stem + ".sweep.json")
                pp2 = os.path.join(scen_dir, stem + ".sweep.profile.json")
                with open(sp2, "w") as f:
                    json.dump(s2, f, indent=2)
                with open(pp2, "w") as f:
                    json.dump(p2, f, indent=1)
                sweep_preds[c["id"]] = simulate_replicated(a.pipeplan, sp2, pp2, a.timeout_s, a.seeds)
    ev = evaluate(cases, preds, sweep_preds)
    cmd = "python3 " + " ".join(shlex.quote(x) for x in ([sys.argv[0]] + (argv if argv is not None else sys.argv[1:])))
    first = runs[0]["doc"]
    meta = {
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cases_path": ", ".join(os.path.relpath(r["cases_path"]) for r in runs),
        "machine": first.get("machine") or {}, "mode": first.get("mode"),
        "started": ", ".join(str(r["doc"].get("started")) for r in runs),
        "profile_note": "; ".join(_profile_note(r["profile"]) for r in runs),
        "pipeplan_note": ((f"`{a.pipeplan}`" + (f", each case with seeds 1..{a.seeds}, the prediction their mean" if a.seeds > 1 else ""))
                          if simulate else "not run (--no-simulate): pipeplan columns are n/a"),
        "command": cmd, "components": first.get("components"),
        "runs": len(runs), "seeds": a.seeds,
        "transport_note": (("the DataLoader transport loops measured alone in the same call, on the "
                            + ("CPU clock (the pin thread's and the receiving thread's CPU per batch; "
                               "`--transport-clock cpu`)" if a.transport_clock == "cpu" else
                               "wall clock (`--transport-clock wall`)")
                            + ", scaled by the probes around each case"
                            + (" (a pinned probe's pin thread over the second half of its window, past the loader's "
                               "start-up: `--probe-pin-window late-half`, run 24's finding 1)"
                               if getattr(a, "probe_pin_window", "whole") == "late-half" else ""))
                           if a.transport == "measured" else "the calibrated profile's IPC and pinning costs"),
        "wander_note": wander_note(a.wander, sum(1 for c in cases if (c.get("convert") or {}).get("wander") is not None)),
        "unpinned_loop_note": (
            f"{sum(1 for c in cases if (c.get('convert') or {}).get('unpinned_loop'))} unpinned case(s) with the copy and "
            "release that host_beside_loader timed beside a live DataLoader in the same call (ResNet-50 steps, harness "
            "since run 18; every unpinned case with workers since run 21's plan; `--unpinned-loop beside-loader`), the "
            "others calibrate's fresh-mapping figures"
            if a.transport == "measured" and getattr(a, "unpinned_loop", "beside-loader") == "beside-loader"
            else "calibrate's fresh-mapping copy and release (`--unpinned-loop calibrated`)"),
        "host_note": {"alone-median": "the median of every window the call timed the loop alone (the step component's; "
                                      "for ResNet-50 steps also host_under_load's and host_beside_loader's alone and "
                                      "alone-again windows; `--host-from alone-median`)",
                      "step": "the step component's, timed alone (`--host-from step`)",
                      "loaded": "host_under_load's loop beside busy processes, brought back to one idle core "
                                "(`--host-from loaded`)",
                      "probe-bracket": "the mean of the loop's host probes right before and after each host-heavy case "
                                       "where the harness took them, else the alone-median; an unpinned case "
                                       "with workers from its case-like windows where the harness took them "
                                       "(`--host-from probe-bracket`)",
                      "probes-only": "the mean of the loop's host probes right before and after each host-heavy "
                                     "case where the harness took them, else the alone-median (`--host-from "
                                     "probes-only`)"}[getattr(a, "host_from", "probe-bracket")],
        "gpu_duty_time_constant_s_by_gpu": {gpu: tau for gpu, tau in duty_taus.items() if tau},
        "launch_tail_note": (
            f"{sum(1 for c in cases if (c.get('convert') or {}).get('launch_tail_s'))} case(s) with a host-bound step, "
            "each step's kernels ending no earlier than its last launch plus the plain synthetic loop's step less its "
            "launches in the host probes around it, else host_under_load's alone windows (`--launch-tail loop`, run 25)"
            if getattr(a, "launch_tail", "loop") == "loop" else "none (`--launch-tail off`)"),
        "memory_map_note": (
            f"of the pinned loops that need the memory map, {sum(1 for c in cases if (c.get('convert') or {}).get('memory_map_wait_s'))} "
            "case(s) slowed at the rate their call's pin-parts probe lost per second of a helper's pin_memory() "
            "(calls since run 27), the others stopped while the pin thread maps a batch (`--memory-map-wait pin-parts`)"
            if getattr(a, "memory_map_wait", "pin-parts") == "pin-parts"
            else "stopped while the pin thread maps a batch (`--memory-map-wait off`)"),
        "back_to_back_note": (
            f"{sum(1 for c in cases if (c.get('convert') or {}).get('back_to_back_host_factor') is not None)} case(s) "
            "whose step component timed its launches right after another step's charge that ratio of the loop's "
            "Python to a step run back to back (`--back-to-back measured`; harness since the fifty-ninth session), the "
            "others none" if getattr(a, "back_to_back", "measured") == "measured" else
            f"`--back-to-back {getattr(a, 'back_to_back', 'off')}`"),
        "receive_gil_note": (
            f"{sum(1 for c in cases if (c.get('convert') or {}).get('receive_gil_s_per_batch') is not None)} case(s) "
            "their call's own figure from its GIL probe, the others the H200's "
            f"{H200_RECEIVE_GIL_S * 1e3:.2f} ms where their harness recorded an H200 or H100 (`--receive-gil-s measured`)"
            if getattr(a, "receive_gil_s", "off") == "measured" else
            f"{float(a.receive_gil_s) * 1e3:.2f} ms of each batch's receive on one idle core, first in the receive "
            "(`--receive-gil-s`; the H200's figure from runs 11-40's timelines: validation-runs.md run 62, finding 9; "
            "checked on run 64's H100 host: finding 2; by default only in the calls whose harness recorded an H200 or H100)"
            if getattr(a, "receive_gil_s", "off") not in (None, "off")
            else "the profile's `ipc.receive_gil_share` of the fixed receive (`--receive-gil-s off`)"),
    }
    if len(runs) > 1:
        meta["calls"] = [{"tag": r["tag"], "results": os.path.dirname(r["cases_path"]) or "."} for r in runs]
        meta["runs_note"] = (f"{len(runs)} device calls, each calibrated in the same call as its cases; case ids and "
                             "families carry the call's tag (r1, r2, ...); components listed are the first call's")
    report = {"meta": meta, **ev}
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(report, f, indent=1, default=lambda o: None)
    md = render_markdown(ev, meta)
    if a.md:
        update_markdown(a.md, md)
    else:
        print(md)
    s = ev["summary"]
    print(f"convert: {s['cases_ok']} cases; by-hand median |err| {_pct(s['by_hand']['median_abs_throughput_err'], False)}"
          + (f"; pipeplan median |err| {_pct(s['pipeplan']['median_abs_throughput_err'], False)}" if s.get("pipeplan") else "")
          + f"; wrote {out_dir}/report.json" + (f" and {a.md}" if a.md else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
