#!/usr/bin/env python3
"""Diagnostic: each cost the model is given for a case, against the same cost measured inside that case.
convert builds a scenario and a profile for every case from components measured next to it (probes before
and after, the transport loop, calibrate); the harness also counted, inside the case itself, what its
workers spent per sample and per collate, what the pin thread spent per batch, what each worker spent on
everything else and what the loop's host time was. Nothing is simulated: the model's side is read off the
scenario and profile at the case's own busy cores (the machine curve, or the dataset's own for the load), as
the simulator would charge it there. A component off in one direction over a call points at its input; the
throughput's miss then follows from which component bounds the case. Usage:

    python3 calibrate/validation/component_diagnostic.py RESULTS_DIR [RESULTS_DIR ...]

Each RESULTS_DIR holds cases.json and profile.json from one device call (harness since run 11).
"""
import argparse
import os
import statistics
import sys
from collections import defaultdict
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402

COMPONENTS = ("load", "collate", "worker_other", "pin_thread", "loop_host", "copy", "release")


def model_components(scen: Dict[str, Any], prof: Dict[str, Any], busy_cores: float) -> Dict[str, float]:
    """The per-sample load, the collate, a worker's other CPU per batch, the pin thread's cost per batch and the
    loop's host time per step, in seconds, as the simulator charges them at `busy_cores` busy cores: CPU costs
    at one idle core divided by the relative speed there (the dataset's own curve for the load where the
    scenario has one, else the machine's); the collate under calibrate's shared-memory floor unless it was
    timed in shared memory (loader.collate_in_shared_memory); the pin thread's receive, first touch and copy
    into pinned memory (pin_memory only); without pinning, the batch's copy from the fresh mapping (a stream's
    time, not scaled) and its release after the step, where the profile splits them (both keys)."""
    ld, ds = scen["loader"], scen["dataset"]
    machine = (prof.get("cpu") or {}).get("speed_vs_busy_cores") or []
    at = convert.relative_core_speed(machine, busy_cores)
    load_curve = ds.get("load_speed_vs_busy_cores") or machine
    batch_bytes = float(scenario_sample_bytes(ds)) * int(ld["batch_size"])
    ipc, host = prof.get("ipc") or {}, prof.get("host") or {}
    collate = float(ld.get("collate_s_per_batch") or 0.0)
    if int(ld.get("num_workers", 0)) > 0 and not ld.get("collate_in_shared_memory"):
        collate = max(collate, batch_bytes * float(ipc.get("shm_write_s_per_byte") or 0.0))
    out = {"load": float(ds["load_s_per_sample"]["mean"]) / convert.relative_core_speed(load_curve, busy_cores),
           "collate": collate / at,
           "worker_other": float(ld.get("worker_s_per_batch") or 0.0) / at,
           "loop_host": float(scen["training"].get("host_s_per_step") or 0.0) / at}
    if ld.get("pin_memory") and int(ld.get("num_workers", 0)) > 0:
        pin_rate = float(host.get("pin_copy_bytes_per_s") or 0.0)
        out["pin_thread"] = (float(ipc.get("receive_s_per_batch") or 0.0)
                             + batch_bytes * float(ipc.get("receive_s_per_byte") or 0.0)
                             + (batch_bytes / pin_rate if pin_rate > 0 else 0.0)) / at
    fresh = (prof.get("copy") or {}).get("h2d_pageable_fresh_mapping")
    if not ld.get("pin_memory") and int(ld.get("num_workers", 0)) > 0 and fresh and ipc.get("release_s_per_byte") is not None:
        out["copy"] = convert.copy_curve_time_s(fresh, batch_bytes)
        out["release"] = batch_bytes * float(ipc["release_s_per_byte"]) / at
    return out


def scenario_sample_bytes(dataset: Dict[str, Any]) -> float:
    """Pure: a sample's bytes as the scenario gives them: dataset.item_bytes, else (a sequence scenario, whose
    samples vary) the mean of dataset.sample_bytes; 0 without either. A sequence batch padded to its longest row is
    larger than this mean x the batch (the pin thread's figure is then a lower bound)."""
    if dataset.get("item_bytes") is not None:
        return float(dataset["item_bytes"])
    return float((dataset.get("sample_bytes") or {}).get("mean") or 0.0)


def measured_components(case: Dict[str, Any]) -> Dict[str, float]:
    """The same costs counted inside the case (harness in_situ counters; the loop's host time where the batch was
    pinned and copied non_blocking, or, since run 20's plan, with its .to() calls timed apart (copy_call_s) and
    taken out; an unpinned batch's copy and its drop after the sync (release_s) where timed)."""
    m = case.get("measured") or {}
    k = case.get("knobs") or {}
    ins = m.get("in_situ") or {}
    out = {}
    for key, src in (("load", "getitem_wall_s"), ("collate", "collate_wall_s"),
                     ("worker_other", "worker_other_cpu_s_per_batch"), ("pin_thread", "pin_thread_cpu_s_per_batch")):
        if ins.get(src):
            out[key] = float(ins[src])
    lh = (m.get("loop_host_s") or {}).get("mean")
    copy_call = (m.get("copy_call_s") or {}).get("mean")
    if lh and k.get("pin_memory") and k.get("non_blocking"):
        out["loop_host"] = float(lh)
    elif lh and copy_call is not None and not k.get("pin_memory"):
        out["loop_host"] = float(lh) - float(copy_call)
        out["copy"] = float(copy_call)
        if (m.get("release_s") or {}).get("mean"):
            out["release"] = float(m["release_s"]["mean"])
    return out


def unpinned_loop_readings(case: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """An unpinned case's launches a step in situ (loop_host_s less its .to() calls) over each reading of the same
    loop taken right around it: the bare host probes' mean (host_probe, host_probe_after: the loop on a resident
    batch, nothing beside it) and the case-like unpinned windows' (unpinned_window, unpinned_window_after: a live
    unpinned loader, the .to() copy, the step on the copied batch; ResNet-50 cases since run 25's plan). Run 24,
    finding 4: the launches ran 1.00-1.41x the bare probes. {"launches_s", "over_host_probes",
    "over_unpinned_windows"} (a ratio absent without its readings), or None for a pinned case or one without the
    split loop times."""
    m, k, comp = case.get("measured") or {}, case.get("knobs") or {}, case.get("components") or {}
    lh, copy_call = (m.get("loop_host_s") or {}).get("mean"), (m.get("copy_call_s") or {}).get("mean")
    if k.get("pin_memory") or case.get("status") != "ok" or not lh or copy_call is None:
        return None
    launches = float(lh) - float(copy_call)
    out = {"launches_s": launches}
    for name, keys, field in (("over_host_probes", ("host_probe", "host_probe_after"), "host_s"),
                              ("over_unpinned_windows", ("unpinned_window", "unpinned_window_after"),
                               "unpinned_case_like_host_s")):
        got = [convert.positive_mean((comp.get(key) or {}).get(field)) for key in keys]
        got = [g for g in got if g]
        if got and launches > 0:
            out[name] = launches / (sum(got) / len(got))
    # since run 29's session (run 28, finding 4): the loop beside the workers alone over the loop alone, in blocks in
    # turn (harness host_beside_workers): if over_host_probes is a steady slowdown beside the workers, it reads the same
    ratio = (comp.get("host_beside_workers") or {}).get("ratio")
    if isinstance(ratio, (int, float)):
        out["beside_workers_ratio"] = float(ratio)
    return out


def unpinned_next_readings(case: Dict[str, Any], prof: Optional[Dict[str, Any]]) -> Dict[str, float]:
    """An unpinned case's next() a step, as the case took it (measured.data_wait_s, and the loop thread's CPU in it,
    data_wait_cpu_s: harness since run 26's plan), as the case-like windows around it took it (their mean,
    unpinned_case_like_next_s) and as the model charges it at one idle core (the case profile's
    ipc.receive_s_per_batch: the map of the fresh-mapping path; run 25, finding 3). Each key only where it is known."""
    m, comp = case.get("measured") or {}, case.get("components") or {}
    out: Dict[str, float] = {}
    for key, src in (("case_s", "data_wait_s"), ("case_cpu_s", "data_wait_cpu_s")):
        v = (m.get(src) or {}).get("mean")
        if isinstance(v, (int, float)):
            out[key] = float(v)
    wins = [convert.positive_mean((comp.get(k) or {}).get(convert.UNPINNED_NEXT_KEY))
            for k in ("unpinned_window", "unpinned_window_after")]
    wins = [w for w in wins if w]
    if wins:
        out["windows_s"] = sum(wins) / len(wins)
    r = ((prof or {}).get("ipc") or {}).get("receive_s_per_batch")
    if isinstance(r, (int, float)):
        out["model_s"] = float(r)
    return out


def relative_errors(model: Dict[str, float], measured: Dict[str, float]) -> Dict[str, float]:
    """(model - measured) / measured for each component both sides have (a measured zero is skipped)."""
    return {k: (model[k] - measured[k]) / measured[k] for k in COMPONENTS
            if k in model and measured.get(k)}


def comparable(case: Dict[str, Any]) -> bool:
    """A measured case with workers, one epoch and warm storage (a cold case's wall time per sample holds
    the disk's wait, which the simulator charges apart)."""
    k = case.get("knobs") or {}
    return (case.get("status") == "ok" and int(k.get("num_workers", 0)) > 0 and int(k.get("epochs", 1) or 1) == 1
            and k.get("storage") != "cold")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dirs", nargs="+")
    a = ap.parse_args()
    table: Dict[str, Dict[str, List[float]]] = {}
    unpinned: List[str] = []
    for d, doc, profile, cpu_curve in convert.load_calls(a.results_dirs):
        machine = doc.get("machine") or {}
        cores = float(machine.get("cpu_cores") or machine.get("cpu_count") or 1)
        call = os.path.basename(os.path.normpath(d))
        errs: Dict[str, List[float]] = defaultdict(list)
        for c in doc.get("cases") or []:
            u = unpinned_loop_readings(c) if int((c.get("knobs") or {}).get("num_workers", 0)) > 0 else None
            if u and ("over_host_probes" in u or "over_unpinned_windows" in u):
                cells = [f"{u[key]:.3f}" if key in u else "n/a"
                         for key in ("over_host_probes", "over_unpinned_windows", "beside_workers_ratio")]
                _, prof_u = convert.table_case_inputs(c, doc, profile, cpu_curve)
                nx = unpinned_next_readings(c, prof_u or profile)
                nxt = [f"{nx[key] * 1e3:.2f}" if key in nx else "n/a"
                       for key in ("case_s", "case_cpu_s", "windows_s", "model_s")]
                unpinned.append(f"{call[-24:]:24s} {c['id'][:56]:56s} {u['launches_s'] * 1e3:8.2f} ms "
                                f"{cells[0]:>12s} {cells[1]:>14s} {cells[2]:>13s}   " + " / ".join(nxt))
            if not comparable(c):
                continue
            scen, prof = convert.table_case_inputs(c, doc, profile, cpu_curve)
            busy = min(cores, float((c.get("measured") or {}).get("cpu_busy_cores")
                                    or int(c["knobs"]["num_workers"])))
            for k, e in relative_errors(model_components(scen, prof or profile, busy), measured_components(c)).items():
                errs[k].append(e)
        table[call] = errs
    print("model against in situ, per call: signed median (cases); + means the model charges more")
    print(f"{'call':32s} " + " ".join(f"{k:>18s}" for k in COMPONENTS))
    pooled: Dict[str, List[float]] = defaultdict(list)
    for call, errs in table.items():
        cells = []
        for k in COMPONENTS:
            v = errs.get(k) or []
            pooled[k] += v
            cells.append(f"{100 * statistics.median(v):+7.1f}% ({len(v):3d})" if v else f"{'':>18s}")
        print(f"{call[-32:]:32s} " + " ".join(f"{x:>18s}" for x in cells))
    print(f"{'all':32s} " + " ".join(f"{(f'{100 * statistics.median(pooled[k]):+7.1f}% ({len(pooled[k]):3d})' if pooled[k] else ''):>18s}"
                                      for k in COMPONENTS))
    if unpinned:
        print("\nunpinned loops: the case's launches a step over the readings right around it (run 24, finding 4)")
        print(f"{'call':24s} {'case':56s} {'launches':>11s} {'/host probes':>12s} {'/unpinned win':>14s} {'beside wkrs':>13s}   "
              "next() ms: case / its CPU / windows / model (run 25, finding 3)")
        print("\n".join(unpinned))
    return 0


if __name__ == "__main__":
    sys.exit(main())
