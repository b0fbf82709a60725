#!/usr/bin/env python3
"""job_check: run your own training loop and set pipeplan's prediction of it beside what it did.

pipeplan_probe.py measures your Dataset, collate_fn and step each alone and writes a whole scenario (`--base
S0.json --out S.json`). This runs the loop that scenario describes, on this machine:

    your Dataset in a torch DataLoader with the scenario's loader knobs (batch_size, num_workers, prefetch_factor,
    pin_memory, persistent_workers, drop_last, in_order; shuffled), each batch moved with
    `.to("cuda", non_blocking=transfer.non_blocking)` (on a side stream for transfer.copy_stream "side"), your step,
    and `loss.item()` every training.sync_every_steps steps

for --seconds of steady state, measured as the validation harness measures a case (docs/validation.md: the first
prefetch_factor x num_workers + 2 steps fill the loader and are left out; a CUDA event after each step's launches;
throughput over the events' window; the step time's p50 and p90 over the events' intervals). Then it simulates the
same scenario with `pipeplan simulate` over the same number of steps (--replications seeds, their mean, as the
validation table predicts) and prints measured against predicted: throughput, mean and p90 step time, bottleneck.
A pinning loader with workers also has its pin thread read over the window (the validation harness's meter): its
CPU a batch, the receive's fd hand-overs off its core, and their share of the mean step, beside pipeplan's pin
thread time a batch and busy share: where a pinned job's prediction misses, this says whether the pin thread's
cost or the loop's wait around it is off (validation-runs.md run 87, finding 3: the first job checks had no such
reading).

    python3 calibrate/validation/job_check.py S.json --dataset mypkg.data:make_dataset --step mypkg.train:make_step \
        [--collate mypkg.data:collate] [--seconds 30] [--profile PROFILE.json] [--out check.json]

Your step: the `--step` callable pipeplan_probe.py takes (module:callable returning the step function). If that
function takes one argument it gets each batch on the GPU; if it takes none it runs on its own batch (as
pipeplan_probe timed it) and the loader's batch is copied and dropped. It returns the loss (a tensor).

`--measured check.json` skips the loop: it simulates the scenario (changed or not) against the measurement an
earlier check wrote, so a scenario can be refined without the GPU. Exit codes as pipeplan's: 0; 2 bad input (one
line naming the file, the key and what was expected; the scenario's own checks are pipeplan's); 3 no torch or no
CUDA GPU here; 1 anything else. --out is written whole or not at all.
"""
from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeplan_probe import (_read_json_object, _validation_module, build_dataset, build_step,  # noqa: E402
                            fd_handover_wait_s, load_callable, pin_thread_between, pin_thread_mark,
                            steady_state_skip, summarize, tensors_in, to_device, write_whole)
import convert  # noqa: E402  (the table's own prediction and scoring rules: one rule for both)
from timeline_analysis import p90_halves  # noqa: E402  (the harness's halves: how well a window knows its own p90)

SCHEMA = "pipeplan-job-check/1"
MIN_BATCHES_PER_WORKER = 3      # the harness's rule: at least this many batches a worker in the measured window
HERE = os.path.dirname(os.path.abspath(__file__))
REPO_PIPEPLAN = os.path.join(HERE, "..", "..", "build", "cli", "pipeplan")


class BadInput(Exception):
    """One line for stderr, exit 2."""


class NotHere(Exception):
    """A measurement that cannot run on this machine (no torch, no CUDA GPU): exit 3."""


# ----------------------------------------------------------------------------- the scenario's loop (pure)
def loop_settings(scenario: Dict[str, Any]) -> Dict[str, Any]:
    """The DataLoader and loop knobs a scenario describes, with docs/scenario.md's defaults where it is silent
    (pipeplan simulates the same defaults). The values' ranges are pipeplan's to check: it runs on the scenario
    before the loop does."""
    ld = scenario.get("loader") or {}
    tr = scenario.get("transfer") or {}
    tn = scenario.get("training") or {}
    nw = int(ld.get("num_workers", 0))
    return {
        "batch_size": int(ld.get("batch_size", 1)),
        "num_workers": nw,
        "prefetch_factor": int(ld.get("prefetch_factor", 2)) if nw > 0 else None,
        "pin_memory": bool(ld.get("pin_memory", False)),
        "persistent_workers": bool(ld.get("persistent_workers", False)) if nw > 0 else False,
        "drop_last": bool(ld.get("drop_last", False)),
        "in_order": bool(ld.get("in_order", True)),
        "non_blocking": bool(tr.get("non_blocking", False)),
        "copy_stream": str(tr.get("copy_stream", "default")),
        "sync_every_steps": int(tn.get("sync_every_steps", 0)),
    }


def scenario_step_gpu_s(scenario: Dict[str, Any]) -> Optional[float]:
    """The scenario's GPU time of one step with data on the GPU (training.step_s, or forward_s + backward_s): the
    measured bottleneck's rule compares the loop's step with it, as the table compares a case's with its step
    component."""
    tn = scenario.get("training") or {}
    if isinstance(tn.get("step_s"), (int, float)):
        return float(tn["step_s"])
    if isinstance(tn.get("forward_s"), (int, float)) and isinstance(tn.get("backward_s"), (int, float)):
        return float(tn["forward_s"]) + float(tn["backward_s"])
    return None


def min_measured_steps(num_workers: int) -> int:
    """The harness's floor on a measured window: 12 steps, and MIN_BATCHES_PER_WORKER batches from every worker
    (one or two batches a worker measure the workers' phase, not their rate)."""
    return max(12, MIN_BATCHES_PER_WORKER * num_workers)


def loop_figures(step_end_s: Sequence[float], host_end_s: Sequence[float], waits_s: Sequence[float], skip: int,
                 batch_size: int, samples: Optional[Sequence[int]] = None) -> Dict[str, Any]:
    """Pure: the measured window from each step's end on the GPU (its event, seconds on one clock), its end on the
    host and its wait in next(), as the harness scores a case: the window runs from step skip-1's end to the last;
    throughput = the window's samples (each step's own where given: an epoch's last batch may be short; else
    batch_size a step) over it; the mean step = the window over its steps; p50 / p90 over the steps' intervals; the
    data wait's share of the host's window."""
    n = len(step_end_s)
    if skip < 1 or n - skip < 2:
        raise ValueError(f"{n} steps with {skip} left out: too few for a window")
    meas = n - skip
    n_samples = sum(samples[skip:n]) if samples is not None else meas * batch_size
    window_s = step_end_s[n - 1] - step_end_s[skip - 1]
    intervals = [step_end_s[j] - step_end_s[j - 1] for j in range(skip, n)]
    host_window_s = host_end_s[n - 1] - host_end_s[skip - 1]
    waits = list(waits_s[skip:n])
    iv = summarize(intervals)
    return {
        "steps_run": n, "skip": skip, "n_measured": meas, "window_s": window_s,
        "samples_measured": n_samples,
        "samples_per_s": n_samples / window_s if window_s > 0 else None,
        "step_time_s": {"mean": window_s / meas, "p50": iv["p50"], "p90": iv["p90"], "max": iv["max"]},
        "data_wait_s_mean": sum(waits) / meas,
        "data_wait_fraction": sum(waits) / host_window_s if host_window_s > 0 else None,
        "halves": window_halves(step_end_s, skip, samples, batch_size),
    }


def window_halves(step_end_s: Sequence[float], skip: int, samples: Optional[Sequence[int]],
                  batch_size: int) -> Optional[Dict[str, Any]]:
    """Pure: the measured window split into its first and second half of steps, each scored alone: samples/s and
    p90 step (timeline_analysis.p90_halves), and how far apart the halves are over their mean. The same loop on
    the same machine moves by this much within one run (validation run 75: one case measured three times on one
    lease moved 13-34% in samples/s), so a prediction's miss of that size is the run's own noise. None with fewer
    than timeline_analysis.HALVES_MIN_STEPS steps a half."""
    intervals = [step_end_s[j] - step_end_s[j - 1] for j in range(skip, len(step_end_s))]
    p90 = p90_halves(intervals)
    if p90 is None:
        return None
    half = p90["steps_per_half"]
    rates = []
    for lo in (skip, skip + half):
        n_samples = sum(samples[lo:lo + half]) if samples is not None else half * batch_size
        span_s = step_end_s[lo + half - 1] - step_end_s[lo - 1]
        rates.append(n_samples / span_s if span_s > 0 else None)
    if None in rates:
        return None
    return {"steps_per_half": half, "samples_per_s": rates,
            "samples_per_s_rel_diff": abs(rates[0] - rates[1]) / ((rates[0] + rates[1]) / 2),
            "step_p90_s": [p90["first_p90_s"], p90["second_p90_s"]], "step_p90_rel_diff": p90["rel_diff"]}


def measured_class(figures: Dict[str, Any], step_gpu_s: Optional[float]) -> Dict[str, Any]:
    """The table's rule for a measured bottleneck (convert.measured_bottleneck): compute where the GPU's own step
    fills 90% of the loop's; else input where the loop waited in next() for at least half the rest; else host."""
    if step_gpu_s is None:
        return {"bottleneck": None, "gpu_busy_fraction": None}
    cls, busy = convert.measured_bottleneck(step_gpu_s, figures["step_time_s"]["mean"], figures["data_wait_s_mean"])
    return {"bottleneck": cls, "gpu_busy_fraction": busy}


def pin_thread_measured(figs: Dict[str, Any], step_mean_s: Optional[float]) -> Optional[Dict[str, Any]]:
    """Pure: the pin thread in your loop's measured window, from harness.pin_thread_figures' per-batch figures
    (pin_thread_cpu_s_per_batch, fd_detach_*): its CPU a batch, the receive's fd hand-overs (their wall, CPU and the
    wait off the core, pipeplan_probe.fd_handover_wait_s) and the share of the mean step the pin thread spent on
    its CPU plus that wait. The share is what the validation reads a pin-bound case by (fd_detach_diagnostic.py's
    last column: 0.91-1.00 in run 86-87's pin-bound w4 cases, 0.41-0.57 where workers bound): near 1, the pin
    thread was the bound. None where neither was read (a loader without a pin thread)."""
    cpu = figs.get("pin_thread_cpu_s_per_batch")
    wait = fd_handover_wait_s(figs)
    if cpu is None and wait is None:
        return None
    out: Dict[str, Any] = {"cpu_s_per_batch": cpu, "fd_handover_wait_s_per_batch": wait}
    for k in ("fd_detach_calls_per_batch", "fd_detach_wall_s_per_batch", "fd_detach_cpu_s_per_batch"):
        if figs.get(k) is not None:
            out[k] = figs[k]
    out["share_of_step"] = ((cpu + (wait or 0.0)) / step_mean_s
                            if cpu is not None and step_mean_s else None)
    return out


def pin_thread_predicted(report: Dict[str, Any], batch_size: int) -> Optional[Dict[str, Any]]:
    """Pure: pipeplan's pin thread in a report: its time a batch (the batch over the stage's capacity: its CPU and
    any wait it is given, loader.pin_thread_wait_s_per_batch) and its busy share of the run. None where the report
    has no pin_thread stage (no pinning, or no workers)."""
    st = next((x for x in report.get("stages") or [] if x.get("name") == "pin_thread"), None)
    if not st or not st.get("capacity_samples_per_s"):
        return None
    return {"s_per_batch": batch_size / st["capacity_samples_per_s"], "busy_fraction": st.get("busy_fraction")}


def comparison(measured: Dict[str, Any], report: Dict[str, Any], batch_size: Optional[int] = None
               ) -> Dict[str, Any]:
    """Pure: pipeplan's report (one seed's, or convert.combine_replications' mean) against the measured figures:
    each relative error (predicted - measured) / measured, and whether the bottleneck's class agrees; with the
    loop's batch_size also pipeplan's pin thread (pin_thread_predicted), to set beside the measured one."""
    st = report.get("step_time_s") or {}
    stage = (report.get("bottleneck") or {}).get("stage")
    pred = {"samples_per_s": (report.get("throughput") or {}).get("samples_per_s"),
            "step_time_s": {k: st.get(k) for k in ("mean", "p50", "p80", "p90", "p95") if st.get(k) is not None},
            "bottleneck_stage": stage, "bottleneck": convert.stage_class(stage),
            "explanation": (report.get("bottleneck") or {}).get("explanation"),
            "step_p90_on_edge": report.get("step_p90_on_edge"),
            "gpu_busy_fraction": (report.get("gpu") or {}).get("busy_fraction"),
            "pin_thread": pin_thread_predicted(report, batch_size) if batch_size else None,
            "seeds": (report.get("replications") or {}).get("n", 1)}

    def rel(p: Optional[float], m: Optional[float]) -> Optional[float]:
        return (p - m) / m if p is not None and m else None
    ms = measured.get("step_time_s") or {}
    err = {"samples_per_s": rel(pred["samples_per_s"], measured.get("samples_per_s")),
           "step_mean_s": rel(pred["step_time_s"].get("mean"), ms.get("mean")),
           "step_p90_s": rel(pred["step_time_s"].get("p90"), ms.get("p90")),
           "bottleneck_agrees": (pred["bottleneck"] == measured.get("bottleneck")
                                 if measured.get("bottleneck") and pred["bottleneck"] else None)}
    return {"predicted": pred, "errors": err}


def simulated_scenario(scenario: Dict[str, Any], measured: Dict[str, Any], dataset_len: Optional[int]
                       ) -> Dict[str, Any]:
    """The scenario as the check simulates it: the measured run's own length (its steps left out for the loader's
    fill, then the measured steps, at least convert.MIN_SIM_STEPS of them as the table simulates a case) and, where
    the loop's Dataset was at hand, its length as an epoch (each epoch's end and, without persistent_workers, its
    workers' restart then fall where they fell in the loop)."""
    out = json.loads(json.dumps(scenario))
    tn = out.setdefault("training", {})
    tn["warmup_steps"] = int(measured["skip"])
    tn["steps"] = int(measured["skip"]) + max(int(measured["n_measured"]), convert.MIN_SIM_STEPS)
    if dataset_len:
        out.setdefault("dataset", {})["num_samples"] = int(dataset_len)
    return out


def short_run(scenario: Dict[str, Any]) -> Dict[str, Any]:
    """The scenario cut to the loader's fill and 20 steps: pipeplan's checks of it, quickly (as it is where a loop
    knob is of a type the loop cannot read: pipeplan names that one)."""
    out = json.loads(json.dumps(scenario))
    try:
        s = loop_settings(scenario)
    except (TypeError, ValueError, AttributeError):
        return out
    skip = steady_state_skip(s["num_workers"], s["prefetch_factor"])
    out.setdefault("training", {}).update(steps=skip + 20, warmup_steps=skip)
    return out


def profile_note(settings: Dict[str, Any], profile: Optional[Dict[str, Any]], path: Optional[str]) -> Optional[str]:
    """Pure: a line for a pinning loader with workers simulated on a profile whose ipc section has no
    receive_gil_s_per_batch (as calibrate writes it: its receive and pin figures are C-level, and the validation
    table's pinned tensor cases came out about 30% fast on them, run 67's example job 15% where the fold left 6%),
    or for one the helper's --transport folded without --main-loop (its provenance note names no "scaled by"), else
    None. The bundled profile carries the fold's hold; a profile from pipeplan_probe.py --profile-out does too."""
    if profile is None or not settings.get("pin_memory") or int(settings.get("num_workers") or 0) <= 0:
        return None
    provenance = str((profile.get("provenance") or {}).get("note") or "")
    if provenance.startswith("pipeplan_probe.py --transport") and "scaled by" not in provenance.split("Before:")[0]:
        return (f"note: {path}'s transport fold is not scaled to your own loader: over cached samples the pin thread "
                f"worked about 12% cheaper at median in the validation, and the pinned tensor job of runs 67-68 came "
                f"out +6.3% and -4.2% on such a fold, within 1% scaled; give the helper's --transport run "
                f"--num-workers K (it then runs --main-loop) and check again")
    if "receive_gil_s_per_batch" in (profile.get("ipc") or {}):
        return None
    return (f"note: {path}'s ipc figures look like calibrate's own (no ipc.receive_gil_s_per_batch): a pinning "
            f"loader simulated 15-30% fast on them (docs/validation-runs.md, run 67 and the user's path); fold your "
            f"DataLoader's transport in with pipeplan_probe.py --transport --main-loop --profile {path} "
            f"--profile-out P2 and check again with --profile P2")


def pin_thread_line(measured: Optional[Dict[str, Any]], predicted: Optional[Dict[str, Any]]) -> Optional[str]:
    """Pure: one line setting the pin thread your loop measured (pin_thread_measured) beside pipeplan's
    (pin_thread_predicted): which of its time a batch or the in-order loop on top is long, where a pinned job's
    prediction misses (validation-runs.md run 87, finding 3). None where neither is known."""
    def ms(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x * 1e3:.2f} ms"

    def pct(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x * 100:.0f}%"
    parts = []
    if measured:
        part = f"your loop's {ms(measured.get('cpu_s_per_batch'))} of CPU a batch"
        if measured.get("fd_handover_wait_s_per_batch") is not None:
            part += f" + {ms(measured['fd_handover_wait_s_per_batch'])} off its core in the fd hand-overs"
        parts.append(part + f", {pct(measured.get('share_of_step'))} of the mean step")
    if predicted:
        parts.append(f"pipeplan's {ms(predicted.get('s_per_batch'))} a batch, busy "
                     f"{pct(predicted.get('busy_fraction'))} of the run")
    return ("pin thread      " + "; ".join(parts)) if parts else None


def human(check: Dict[str, Any]) -> str:
    """The check as a few lines: the loop, then measured | pipeplan | error per figure, then pipeplan's words."""
    s, m, p, e = check["settings"], check["measured"], check["predicted"], check["errors"]
    loop = (f"{s['num_workers']} workers" + (f", prefetch_factor {s['prefetch_factor']}" if s["num_workers"] else "")
            + f", batch {s['batch_size']}, " + ("pinned" if s["pin_memory"] else "not pinned")
            + (", non_blocking" if s["non_blocking"] else "") + (", side copy stream" if s["copy_stream"] == "side" else "")
            + (f", a sync every {s['sync_every_steps']} steps" if s["sync_every_steps"] else ", no sync in the loop"))

    def pct(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x * 100:+.1f}%"

    def ms(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x * 1e3:.1f} ms"
    mst, pst = m["step_time_s"], p["step_time_s"]
    lines = [f"job check: your loop ({loop}) over {m['n_measured']} steps ({m['window_s']:.1f} s, after "
             f"{m['skip']} that fill the loader); pipeplan: {p['seeds']} seed(s) of the same run",
             f"{'':16}{'measured':>12}{'pipeplan':>12}{'error':>9}",
             f"{'samples/s':16}{m['samples_per_s']:>12,.0f}{p['samples_per_s']:>12,.0f}{pct(e['samples_per_s']):>9}",
             f"{'step mean':16}{ms(mst['mean']):>12}{ms(pst.get('mean')):>12}{pct(e['step_mean_s']):>9}",
             f"{'step p90':16}{ms(mst['p90']):>12}{ms(pst.get('p90')):>12}{pct(e['step_p90_s']):>9}"]
    mb = m.get("bottleneck") or "n/a"
    if m.get("gpu_busy_fraction") is not None:
        mb += f" (GPU busy {m['gpu_busy_fraction'] * 100:.0f}%)"
    agree = {True: ": they agree", False: ": they differ", None: ""}[e["bottleneck_agrees"]]
    lines.append(f"{'bottleneck':16}measured {mb}, pipeplan {p['bottleneck'] or 'n/a'} (its stage "
                 f"{p['bottleneck_stage']}){agree}")
    pin = pin_thread_line(m.get("pin_thread"), p.get("pin_thread"))
    if pin:
        lines.append(pin)
    if p.get("explanation"):
        lines.append(f"pipeplan: {p['explanation']}")
    if check.get("profile_note"):
        lines.append(check["profile_note"])
    h = m.get("halves")
    if h:
        lines.append(f"your window's own halves ({h['steps_per_half']} steps each): {h['samples_per_s'][0]:,.0f} and "
                     f"{h['samples_per_s'][1]:,.0f} samples/s ({h['samples_per_s_rel_diff'] * 100:.1f}% apart), p90 "
                     f"step {ms(h['step_p90_s'][0])} and {ms(h['step_p90_s'][1])} "
                     f"({h['step_p90_rel_diff'] * 100:.1f}% apart): the run's own noise, before the machine's drift "
                     f"from one run to the next")
    if p.get("step_p90_on_edge") and pst.get("p80") is not None and pst.get("p95") is not None:
        lines.append(f"pipeplan puts its p90 step on an edge between short and long steps: a window's p90 may fall "
                     f"anywhere in {ms(pst['p80'])} to {ms(pst['p95'])}")
    return "\n".join(lines)


def human_measured(check: Dict[str, Any], a: argparse.Namespace) -> str:
    """--no-simulate's lines: what the loop did, and the command that simulates it later."""
    m = check["measured"]
    st = m["step_time_s"]
    line = (f"job check (measured only): {m['n_measured']} steps over {m['window_s']:.1f} s after {m['skip']} that "
            f"fill the loader: {m['samples_per_s']:,.0f} samples/s, step mean {st['mean'] * 1e3:.1f} ms, p90 "
            f"{st['p90'] * 1e3:.1f} ms")
    if m.get("bottleneck"):
        line += f", bottleneck {m['bottleneck']}"
    pin = pin_thread_line(m.get("pin_thread"), None)
    if pin:
        line += "\n" + pin
    later = f"python3 calibrate/validation/job_check.py {a.scenario} --measured {a.out or 'CHECK.json (--out)'}"
    return line + f"\nsimulate it where pipeplan is: {later}" + (f" --profile {a.profile}" if a.profile else "")


# ----------------------------------------------------------------------------- the loop (torch, CUDA)
def samples_in(batch: Any, batch_size: int) -> int:
    """A collated batch's samples: its first tensor's first dimension (default_collate stacks samples there), else
    batch_size."""
    for t in tensors_in(batch):
        shape = getattr(t, "shape", None)
        if shape is not None and len(shape) > 0:
            return int(shape[0])
    return batch_size


def takes_batch(step_fn: Callable[..., Any]) -> bool:
    """Whether the step function wants the batch: one positional parameter without a default."""
    try:
        params = [q for q in inspect.signature(step_fn).parameters.values()
                  if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD) and q.default is q.empty]
    except (TypeError, ValueError):
        return False
    return len(params) == 1


def run_loop(ds: Any, collate_fn: Optional[Callable[..., Any]], settings: Dict[str, Any],
             step_fn: Callable[..., Any], window_s: float, seed: int = 0) -> Dict[str, Any]:
    """Run the scenario's loop on `ds` until window_s of steady state (and at least min_measured_steps) has passed;
    its figures (loop_figures) and what ran. NotHere without torch or a CUDA GPU."""
    try:
        import torch
        from torch.utils.data import DataLoader
    except ImportError as e:
        raise NotHere(f"the loop needs torch ({e})")
    if not torch.cuda.is_available():
        raise NotHere("the loop needs a CUDA GPU and torch.cuda.is_available() is False")
    s = settings
    gen = torch.Generator()
    gen.manual_seed(seed)
    kw: Dict[str, Any] = {"batch_size": s["batch_size"], "num_workers": s["num_workers"],
                          "pin_memory": s["pin_memory"], "drop_last": s["drop_last"]}
    if not isinstance(ds, getattr(torch.utils.data, "IterableDataset", ())):
        kw.update(shuffle=True, generator=gen)   # a map-style Dataset, shuffled as a training job takes it
    if collate_fn is not None:
        kw["collate_fn"] = collate_fn
    if s["num_workers"] > 0:
        kw.update(prefetch_factor=s["prefetch_factor"], persistent_workers=s["persistent_workers"])
    if not s["in_order"]:
        kw["in_order"] = False          # PyTorch 2.6 and later
    try:
        dl = DataLoader(ds, **kw)
    except TypeError as e:
        raise BadInput(f"DataLoader refused the scenario's knobs: {e}; expected a PyTorch that has them "
                       f"(in_order needs 2.6)")
    dev = torch.device("cuda")
    side = torch.cuda.Stream() if s["copy_stream"] == "side" else None
    with_batch = takes_batch(step_fn)
    skip = steady_state_skip(s["num_workers"], s["prefetch_factor"])
    floor = min_measured_steps(s["num_workers"])
    se = s["sync_every_steps"]
    events: List[Any] = []
    host_end: List[float] = []
    waits: List[float] = []
    samples: List[int] = []
    epochs = 0
    # pinned with workers: harness.PinThreadMeter (as the validation's cases and the helper's --main-loop read it) on
    # before the iterator starts its pin thread: the pin thread's CPU and the receive's fd hand-overs over the window
    pinned = bool(s["pin_memory"]) and s["num_workers"] > 0
    meter_cm = _validation_module("harness").PinThreadMeter() if pinned else contextlib.nullcontext()
    pin0, pin1 = None, None
    with meter_cm as meter:
        torch.cuda.synchronize()
        wall0 = time.perf_counter()
        t_skip = None
        it = None
        i = 0
        while True:
            t0 = time.perf_counter()
            batch = None
            while batch is None:
                if it is None:
                    it = iter(dl)
                    epochs += 1
                try:
                    batch = next(it)
                except StopIteration:
                    it = None
                    if epochs > 1 and i == 0:
                        raise BadInput("the DataLoader gave no batch (a Dataset shorter than one batch with "
                                       "drop_last?)")
            t1 = time.perf_counter()
            samples.append(samples_in(batch, s["batch_size"]))
            if side is not None:
                with torch.cuda.stream(side):
                    gb = to_device(batch, dev, s["non_blocking"])
                torch.cuda.current_stream().wait_stream(side)
                for x in tensors_in(gb):
                    if x.is_cuda:
                        x.record_stream(torch.cuda.current_stream())
            else:
                gb = to_device(batch, dev, s["non_blocking"])
            loss = step_fn(gb) if with_batch else step_fn()
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            if se > 0 and (i + 1) % se == 0:
                if hasattr(loss, "item"):
                    float(loss.item())
                else:
                    torch.cuda.synchronize()
            del batch, gb
            events.append(ev)
            host_end.append(time.perf_counter())
            waits.append(t1 - t0)
            i += 1
            now = time.perf_counter()
            if i == skip:
                t_skip = now
                if meter is not None:        # the window's start: the pin thread's CPU and the meter's totals
                    pin0 = pin_thread_mark(meter)
            if t_skip is not None and i >= skip + floor and now - t_skip >= window_s:
                break
            if now - wall0 > 3 * window_s + 120 and i > skip + 2:
                break                            # a loop far slower than its fill: what it has is the window
        torch.cuda.synchronize()
        if meter is not None and pin0 is not None:
            # the window's end; a pin thread restarted inside the window (an epoch's end without persistent_workers)
            # leaves its CPU unread, the hand-overs (counted in every thread) kept (pin_thread_between)
            pin1 = pin_thread_mark(meter)
    ends = [events[0].elapsed_time(e) / 1e3 for e in events]
    figures = loop_figures(ends, host_end, waits, skip, s["batch_size"], samples)
    figures.update({"epochs_started": epochs, "step_takes_batch": with_batch,
                    "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__})
    if pin0 is not None and pin1 is not None:
        pf = pin_thread_between(_validation_module("harness"), pin0, pin1, figures["n_measured"])
        figures["pin_thread"] = pin_thread_measured(pf, figures["step_time_s"]["mean"])
    del it, dl
    return figures


# ----------------------------------------------------------------------------- CLI
def find_pipeplan(given: Optional[str]) -> str:
    """--pipeplan, else `pipeplan` on PATH, else this checkout's build/cli/pipeplan."""
    for cand in ([given] if given else []) + [shutil.which("pipeplan") or "", os.path.normpath(REPO_PIPEPLAN)]:
        if cand and os.access(cand, os.X_OK):
            return cand
    raise BadInput(f"--pipeplan {given or '(not given)'}: no pipeplan binary there, on PATH or at "
                   f"{os.path.normpath(REPO_PIPEPLAN)}; expected the path of a built pipeplan (or --no-simulate to "
                   f"measure only)")


def read_json_object(path: str, what: str) -> Dict[str, Any]:
    """The JSON object in `path` (pipeplan_probe's reader); BadInput naming the file and `what` was expected."""
    doc, why = _read_json_object(path)
    if why:
        raise BadInput(f"{path}: cannot read {what}: {why}")
    return doc


def measured_from_check(path: str) -> Dict[str, Any]:
    """The measured section of an earlier check's --out (and its dataset length)."""
    doc = read_json_object(path, "a job check (job_check.py --out)")
    m = doc.get("measured")
    need = ("skip", "n_measured", "samples_per_s", "step_time_s")
    if not isinstance(m, dict) or any(k not in m for k in need):
        raise BadInput(f"{path}: $.measured: expected an object with {', '.join(need)} (a job_check.py --out file)")
    for k in ("skip", "n_measured"):
        if not isinstance(m[k], int) or isinstance(m[k], bool) or m[k] < (1 if k == "skip" else 2):
            raise BadInput(f"{path}: $.measured.{k} = {json.dumps(m[k])}; expected an integer >= "
                           f"{1 if k == 'skip' else 2}")
    for k in ("mean", "p90"):
        v = (m["step_time_s"] or {}).get(k) if isinstance(m["step_time_s"], dict) else None
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
            raise BadInput(f"{path}: $.measured.step_time_s.{k} = {json.dumps(v)}; expected a time > 0 in seconds")
    v = m["samples_per_s"]
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
        raise BadInput(f"{path}: $.measured.samples_per_s = {json.dumps(v)}; expected a rate > 0")
    h = m.get("halves")
    # a check written before the halves (absent) or over too short a window (null) has none; a present one must be
    # what window_halves writes
    if h is not None and not halves_well_formed(h):
        raise BadInput(f"{path}: $.measured.halves = {json.dumps(h)[:80]}; expected null or an object with "
                       f"samples_per_s and step_p90_s (two values > 0 each), their rel_diffs and steps_per_half")
    return {"measured": m, "dataset_len": doc.get("dataset_len")}


def _number(x: Any) -> bool:
    """A JSON number (a bool is not one)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def halves_well_formed(h: Any) -> bool:
    """Pure: whether h has window_halves's shape: two rates and two p90 steps > 0, their rel_diffs >= 0 and an
    integer steps_per_half."""
    return (isinstance(h, dict)
            and all(isinstance(h.get(k), list) and len(h[k]) == 2 and all(_number(x) and x > 0 for x in h[k])
                    for k in ("samples_per_s", "step_p90_s"))
            and all(_number(h.get(k)) and h[k] >= 0 for k in ("samples_per_s_rel_diff", "step_p90_rel_diff"))
            and isinstance(h.get("steps_per_half"), int) and not isinstance(h.get("steps_per_half"), bool))


def predict(binary: str, scenario: Dict[str, Any], profile: Optional[str], seeds: int,
            scenario_path: str) -> Dict[str, Any]:
    """pipeplan's prediction of `scenario` (the table's: convert.simulate_replicated, the seeds' mean); BadInput
    with pipeplan's own line where it refuses the scenario (the file named is the one given)."""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "scenario.json")
        with open(p, "w") as f:
            json.dump(scenario, f)
        r = convert.simulate_replicated(binary, p, profile, 600, seeds)
    if "error" in r:
        msg = r["error"].replace(p, scenario_path)
        if msg.startswith("exit 2:"):
            raise BadInput(msg[len("exit 2:"):].strip().splitlines()[0])
        raise RuntimeError(f"pipeplan: {msg}")
    return r["result"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", help="the scenario pipeplan_probe.py wrote (--base ... --out S.json): its loader, "
                                     "transfer and training knobs are the loop's")
    ap.add_argument("--dataset", help="module:callable returning your Dataset (as pipeplan_probe.py takes it)")
    ap.add_argument("--dataset-args", default="[]", help="JSON list of positional args for the dataset callable")
    ap.add_argument("--collate", help="module:callable collate_fn (default: PyTorch's default_collate)")
    ap.add_argument("--step", help="module:callable returning your step function (of the batch on the GPU, or of "
                                   "nothing), which returns the loss")
    ap.add_argument("--step-args", default="[]", help="JSON list of positional args for the --step callable")
    ap.add_argument("--seconds", type=float, default=30.0, help="steady-state window to measure (default 30)")
    ap.add_argument("--seed", type=int, default=0, help="the DataLoader's shuffle seed")
    ap.add_argument("--measured", metavar="CHECK.json", help="no loop: take the measurement of an earlier check's "
                                                            "--out and simulate the scenario against it")
    ap.add_argument("--no-simulate", action="store_true",
                    help="measure the loop only (on a GPU machine without pipeplan); simulate it later with "
                         "--measured and --out's file")
    ap.add_argument("--profile", help="hardware profile for pipeplan (default: pipeplan's bundled one)")
    ap.add_argument("--pipeplan", help="the pipeplan binary (default: on PATH, else build/cli/pipeplan)")
    ap.add_argument("--replications", type=int, default=8, help="seeds pipeplan simulates, averaged (default 8)")
    ap.add_argument("--out", help="write the check (JSON) here, whole or not at all")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    a = ap.parse_args(argv)
    try:
        check = run_check(a)
    except BadInput as e:
        print(f"job_check: {e}", file=sys.stderr)
        return 2
    except NotHere as e:
        print(f"job_check: {e}; run it on the GPU machine, or pass --measured CHECK.json", file=sys.stderr)
        return 3
    text = json.dumps(check, indent=2) + "\n"
    if a.out:
        write_whole(a.out, text)
    if a.format == "json":
        print(text, end="")
    else:
        print(human(check) if "predicted" in check else human_measured(check, a))
    return 0


def run_check(a: argparse.Namespace) -> Dict[str, Any]:
    if not 0 < a.seconds <= 3600:
        raise BadInput(f"--seconds {a.seconds:g}: expected a window in (0, 3600] seconds")
    if not 1 <= a.replications <= 64:
        raise BadInput(f"--replications {a.replications}: expected an integer in [1, 64]")
    if a.out and not os.path.isdir(os.path.dirname(os.path.abspath(a.out))):
        raise BadInput(f"--out {a.out}: its folder does not exist; expected a path in an existing folder")
    if a.no_simulate and a.measured:
        raise BadInput("--no-simulate: given with --measured; expected one or the other (--measured only simulates)")
    if a.measured and (a.dataset or a.step):
        raise BadInput("--measured: given with --dataset / --step; expected one or the other (no loop runs with it)")
    if not a.measured and not (a.dataset and a.step):
        raise BadInput(f"expected --dataset and --step (got --dataset {a.dataset!r}, --step {a.step!r}), or "
                       f"--measured CHECK.json")
    if a.profile and not os.path.isfile(a.profile):
        raise BadInput(f"--profile {a.profile}: no such file; expected a profile from pipeplan calibrate")
    scenario = read_json_object(a.scenario, "a pipeplan scenario")
    binary = None if a.no_simulate else find_pipeplan(a.pipeplan)
    if binary:
        # pipeplan checks the scenario (keys, types, ranges) before the GPU spends a minute on it: a refusal is its
        # own line, exit 2. A short run: the loader's fill and 20 steps
        predict(binary, short_run(scenario), a.profile, 1, a.scenario)
    settings = loop_settings_checked(scenario, a.scenario)
    if a.measured:
        got = measured_from_check(a.measured)
        measured, dataset_len = got["measured"], got["dataset_len"]
    else:
        try:
            ds = build_dataset(a.dataset, a.dataset_args)
            coll = load_callable(a.collate) if a.collate else None
            step_fn = build_step(a.step, a.step_args, "--step", "a function of the batch or of nothing")
        except ValueError as e:
            raise BadInput(str(e))
        except Exception as e:  # a user's module that fails to import or build is bad input
            raise BadInput(f"cannot load the dataset, collate or step: {e.__class__.__name__}: {e}")
        try:
            dataset_len = len(ds)
        except TypeError:
            dataset_len = None                # an IterableDataset: the scenario's own num_samples stands
        measured = run_loop(ds, coll, settings, step_fn, a.seconds, a.seed)
        measured.update(measured_class(measured, scenario_step_gpu_s(scenario)))
    sim = simulated_scenario(scenario, measured, dataset_len)
    out = {"schema": SCHEMA, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "scenario": os.path.abspath(a.scenario), "profile": a.profile, "settings": settings,
           "dataset_len": dataset_len, "measured": measured, "simulated_scenario": sim}
    if binary:
        out.update(comparison(measured, predict(binary, sim, a.profile, a.replications, a.scenario),
                              settings["batch_size"]))
        note = profile_note(settings, read_json_object(a.profile, "a pipeplan profile") if a.profile else None,
                            a.profile)
        if note:
            out["profile_note"] = note
    return out


def loop_settings_checked(scenario: Dict[str, Any], path: str) -> Dict[str, Any]:
    """loop_settings once pipeplan has accepted the scenario; a guard for a key pipeplan reads and the loop cannot."""
    try:
        s = loop_settings(scenario)
    except (TypeError, ValueError, AttributeError) as e:
        raise BadInput(f"{path}: a loader, transfer or training knob is not a number or bool: {e}; expected "
                       f"docs/scenario.md's types")
    if s["copy_stream"] not in ("default", "side"):
        raise BadInput(f"{path}: $.transfer.copy_stream = {json.dumps(s['copy_stream'])}; expected \"default\" "
                       f"or \"side\"")
    return s


if __name__ == "__main__":
    sys.exit(main())
