#!/usr/bin/env python3
"""What a user gets: the validation's image cases predicted from what the user helper measured, not the harness.

The table (docs/validation.md) predicts each case from components the harness measured around it: the load and
collate timed just before and after the case at its own worker count, the DataLoader transport measured alone
(the pin thread's rate and the receive's cost, put into the case's profile), the GPU's duty curve from the step's
own rest curves, the loop's next() and .to() from its probes, the receive's GIL hold. A user has less: one run of
`pipeplan_probe.py --dataset ... --num-workers 8` (device_run.sh runs it on the harness's images at each call's
end: probe_fragment.json), their step timed alone (`--step`), and `pipeplan calibrate`'s profile.

This predicts each image case (warm, batch 64, no injected straggler) of the calls that ran the helper again from
that: the table's scenario for the case with the helper's dataset and loader keys in place of the harness's
(`load_s_per_sample`, `item_bytes`, `load_speed_vs_busy_cores`, `collate_s_per_batch`, `collate_in_shared_memory`,
`worker_s_per_batch`; `main_next_s_per_batch` and `copy_call_s_per_batch` only where the helper ran `--main-loop`;
at num_workers=0 the call's in-process load and collate with the process's threads, which is what the helper
reads with `--num-workers 0`),
the harness-only keys removed (`pin_thread_wait_s_per_batch`, `worker_start_s`, the step's own duty curve and cv:
the profile's duty shape applies), the step's time and host time kept (what `--step` reads: validation run 26 found
the helper's ResNet-50 step within 0.4% of the harness's), on the call's calibrated profile as calibrate wrote it
("calibrated"). The other variants (--variants) put back one part of the table's inputs at a time, to say which
part the user lacks: the receive's GIL hold the table gives pinned cases (`ipc.receive_gil_s_per_batch`, which
calibrate does not measure), the workers' wander read from the case's probes (`cpu.core_speed_cv`,
`core_speed_correlation_s`), the DataLoader transport measured alone (`ipc` receive costs, `host.pin_copy_bytes_per_s`),
all of the table's profile with the helper's keys ("fragment_only"), or the table's scenario on the calibrated
profile ("profile_only"). Usage:

    python3 calibrate/validation/user_path.py [RESULTS_DIR ...] [--seeds 4] [--variants calibrated,gil_hold]
        [--pipeplan build/cli/pipeplan] [--out rows.json]

Without RESULTS_DIR: every call of table_calls.txt with a probe_fragment.json. The table's own predictions come
from results/table-report/report.json.gz (table.sh's last run), so the three columns are the same cases.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402
from pipeplan_probe import write_whole  # noqa: E402

RESULTS = os.path.join(HERE, "results")
REPORT = os.path.join(RESULTS, "table-report", "report.json.gz")
CALLS_FILE = os.path.join(HERE, "table_calls.txt")
# what each variant predicts a case from: the user's scenario (the helper's keys) or the table's, on the call's
# calibrated profile with none, some or all of the table's per-case profile replacements (profile_parts)
VARIANTS = {
    "calibrated": "user: calibrated profile",
    "gil_hold": "user: + GIL hold",
    "profile_wander": "user: + the case's wander",
    "profile_transport": "user: + measured transport",
    "fragment_only": "helper's keys, table profile",
    "profile_only": "table's keys, calibrated",
}
HELPER_DATASET_KEYS = ("load_s_per_sample", "item_bytes", "load_speed_vs_busy_cores")
HELPER_LOADER_KEYS = ("collate_s_per_batch", "collate_in_shared_memory", "worker_s_per_batch", "main_next_s_per_batch")
HARNESS_ONLY_LOADER_KEYS = ("pin_thread_wait_s_per_batch", "worker_start_s", "main_next_s_per_batch")
HARNESS_ONLY_TRAINING_KEYS = ("step_s_vs_gpu_duty", "gpu_duty_time_constant_s", "step_cv")


def user_case(case: Dict[str, Any]) -> bool:
    """The cases the helper's fragment describes: the harness's JPEG images, warm, at its batch size 64, decoded in
    the workers, without the harness's injected straggler."""
    k = case.get("knobs") or {}
    return (case.get("status") == "ok" and k.get("kind") == "image" and k.get("storage") == "warm"
            and int(k.get("batch_size") or 0) == 64 and float(k.get("slow_worker_factor", 1.0)) == 1.0
            and not str(k.get("step", "")).startswith("gpudec"))


def helper_fragment_usable(frag: Optional[Dict[str, Any]]) -> bool:
    ds = (frag or {}).get("dataset") or {}
    ld = (frag or {}).get("loader") or {}
    return bool((ds.get("load_s_per_sample") or {}).get("mean")) and ld.get("collate_s_per_batch") is not None


def inline_timings(case: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """What `pipeplan_probe.py --num-workers 0` reads for a num_workers=0 job (the load and collate in process, with
    its threads): the call's load and collate components timed so (`default_threads`, at the call's start, not
    around the case); None where the call has not both."""
    comp = case.get("components") or {}
    ld = (comp.get("load") or {}).get("default_threads") or {}
    co = (comp.get("collate") or {}).get("default_threads") or {}
    if not ld.get("mean") or not co.get("mean"):
        return None
    return {"load_s": float(ld["mean"]), "load_cv": float(ld.get("cv") or 0.0), "collate_s": float(co["mean"])}


def user_scenario(table_scenario: Dict[str, Any], fragment: Dict[str, Any],
                  inline: Optional[Dict[str, float]] = None) -> Dict[str, Any]:
    """Pure: the table's scenario of a case as a user would have it (module docstring): the helper's dataset and
    loader keys in, the harness-only keys out, everything else (the case's knobs, its run length, the step's time
    and host time, the memory-map verdict) as the table has it. A num_workers=0 case with `inline` timings takes
    those (the helper run with --num-workers 0, as that user would run it) in place of the 8-worker fragment's."""
    s = json.loads(json.dumps(table_scenario))
    ds, ld = s.setdefault("dataset", {}), s.setdefault("loader", {})
    fds, fld = fragment.get("dataset") or {}, fragment.get("loader") or {}
    for key in HELPER_DATASET_KEYS:
        ds.pop(key, None)
    for key in HARNESS_ONLY_LOADER_KEYS + HELPER_LOADER_KEYS:
        ld.pop(key, None)
    for key in HARNESS_ONLY_TRAINING_KEYS:
        (s.get("training") or {}).pop(key, None)
    for key in HELPER_DATASET_KEYS:
        if key in fds:
            ds[key] = fds[key]
    for key in HELPER_LOADER_KEYS:
        if key in fld and int(ld.get("num_workers") or 0) > 0:
            ld[key] = fld[key]
    if int(ld.get("num_workers") or 0) == 0:
        if inline is not None:
            ds["load_s_per_sample"] = {"mean": inline["load_s"], "cv": round(inline["load_cv"], 4), "kind": "lognormal"}
            ds.pop("load_speed_vs_busy_cores", None)
            ld["collate_s_per_batch"] = inline["collate_s"]
        else:
            ld["collate_s_per_batch"] = fld["collate_s_per_batch"]    # the 8-worker fragment's, as a user has it
    tr = fragment.get("transfer") or {}
    s.setdefault("transfer", {}).pop("copy_call_s_per_batch", None)
    if tr.get("copy_call_s_per_batch") is not None and ld.get("pin_memory") and s["transfer"].get("non_blocking"):
        s["transfer"]["copy_call_s_per_batch"] = tr["copy_call_s_per_batch"]
    s["description"] = (s.get("description") or "") + " [user path: pipeplan_probe.py's fragment]"
    return s


def with_gil_hold(profile: Dict[str, Any], scenario: Dict[str, Any], hold_s: float) -> Dict[str, Any]:
    """Pure: the profile with the receive's GIL hold where the loader has a pin thread (convert.with_receive_gil, on
    the scenario's loader knobs), else the profile as it is."""
    ld = scenario.get("loader") or {}
    knobs = {"pin_memory": ld.get("pin_memory"), "num_workers": ld.get("num_workers")}
    return convert.with_receive_gil({"knobs": knobs}, profile, repr(float(hold_s))) or profile


def profile_parts(calibrated: Dict[str, Any], case_profile: Dict[str, Any], parts: Sequence[str]) -> Dict[str, Any]:
    """Pure: the calibrated profile with some of the table's per-case replacements taken from case_profile:
    "wander" (cpu.core_speed_cv and core_speed_correlation_s: the workers' wander read from the case's probes),
    "transport" (ipc's receive costs and host.pin_copy_bytes_per_s: the DataLoader's transport measured alone),
    "gil" (ipc.receive_gil_s_per_batch). The rest stays calibrate's."""
    out = json.loads(json.dumps(calibrated))
    keys = {"wander": (("cpu", "core_speed_cv"), ("cpu", "core_speed_correlation_s")),
            "transport": (("ipc", "receive_s_per_batch"), ("ipc", "receive_s_per_byte"), ("ipc", "points"),
                          ("ipc", "release_s_per_byte"), ("host", "pin_copy_bytes_per_s")),
            "gil": (("ipc", "receive_gil_s_per_batch"),)}
    for part in parts:
        for sec, key in keys[part]:
            if key in (case_profile.get(sec) or {}):
                out.setdefault(sec, {})[key] = case_profile[sec][key]
            else:
                (out.get(sec) or {}).pop(key, None)
    return out


def errors_summary(rows: Sequence[Dict[str, Any]], key: str) -> Dict[str, Any]:
    """Pure: over rows with a prediction under `key`: n, median and p90 abs throughput error, p90 abs error of the
    p90 step, signed median throughput error, bottleneck agreement (the class of the predicted stage against the
    measured class)."""
    got = [r for r in rows if r.get(key)]
    thr = [abs(r[key]["thr_err"]) for r in got]
    p90 = [abs(r[key]["p90_err"]) for r in got]
    ok = [r[key]["bottleneck_ok"] for r in got if r[key].get("bottleneck_ok") is not None]
    return {"n": len(got), "median_abs_thr": convert.median(thr), "p90_abs_thr": convert.percentile(thr, 0.9),
            "signed_median_thr": convert.median([r[key]["thr_err"] for r in got]),
            "p90_abs_step_p90": convert.percentile(p90, 0.9), "median_abs_step_p90": convert.median(p90),
            "bottleneck": sum(ok) / len(ok) if ok else None}


def _pct(x: Optional[float], signed: bool = False) -> str:
    return "n/a" if x is None else (f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%")


def summary_line(name: str, s: Dict[str, Any]) -> str:
    return (f"{name:30s} {s['n']:4d}  {_pct(s['median_abs_thr']):>6} / {_pct(s['p90_abs_thr']):>6}  "
            f"signed {_pct(s['signed_median_thr'], True):>6}  p90 step {_pct(s['median_abs_step_p90']):>6} / "
            f"{_pct(s['p90_abs_step_p90']):>6}  bottleneck {_pct(s['bottleneck'])}")


def table_rows_by_id(path: str = REPORT) -> Dict[str, Dict[str, Any]]:
    return {r["id"]: r for r in convert.read_json(path)["rows"]}


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dirs", nargs="*")
    ap.add_argument("--pipeplan", default=os.path.join(HERE, "..", "..", "build", "cli", "pipeplan"))
    ap.add_argument("--seeds", type=int, default=4, help="seeds 1..N averaged (the table: 8)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--variants", default="calibrated,gil_hold",
                    help=f"comma-separated, of: {', '.join(VARIANTS)} (default %(default)s)")
    ap.add_argument("--out", help="also write every case's predictions (JSON)")
    a = ap.parse_args(argv)
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        print(f"user_path: --variants {a.variants}: expected some of {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    if not os.access(a.pipeplan, os.X_OK):
        print(f"user_path: {a.pipeplan} is not an executable; expected a built pipeplan (--pipeplan)", file=sys.stderr)
        return 2
    table_dirs = [os.path.normpath(d) for d in convert.table_call_dirs(CALLS_FILE)]
    names = [os.path.basename(d) for d in table_dirs]
    table = table_rows_by_id()
    # every table call, read once: the duty constants pool them all, as the table does
    loaded = {os.path.normpath(c[0]): c for c in convert.load_calls(table_dirs)}
    wanted = [os.path.normpath(d) for d in a.results_dirs] or [
        d for d in table_dirs if convert.stored_file_exists(os.path.join(d, "probe_fragment.json"))]
    calls = [loaded.get(d) or convert.load_calls([d])[0] for d in wanted]
    duty_taus = convert.loaded_duty_time_constants(list(loaded.values()))
    hold_s = float(convert.TABLE_OPTIONS.receive_gil_s)
    jobs: List[Tuple[str, Dict[str, Any], Dict[str, Tuple[Dict[str, Any], Dict[str, Any]]]]] = []
    for d, doc, profile, cpu_curve in calls:
        name = os.path.basename(os.path.normpath(d))
        tag = f"r{names.index(name) + 1}" if name in names else name
        try:
            frag = convert.read_json(os.path.join(d, "probe_fragment.json"))
        except (OSError, ValueError) as e:
            print(f"user_path: {os.path.join(d, 'probe_fragment.json')}: cannot read the helper's fragment: {e}",
                  file=sys.stderr)
            return 2
        if not helper_fragment_usable(frag):
            continue
        for c in doc.get("cases") or []:
            if not user_case(c) or f"{tag}:{c['id']}" not in table:
                continue
            scen, case_prof = convert.table_case_inputs(c, doc, profile, cpu_curve,
                                                        duty_taus.get(convert.call_gpu(doc)))
            case_prof = case_prof if case_prof is not None else profile
            us = user_scenario(scen, frag, inline_timings(c))
            inputs = {   # built for the variants asked for only (each a copy of the profile)
                "calibrated": lambda: (us, profile),
                "gil_hold": lambda: (us, with_gil_hold(profile, us, hold_s)),
                "fragment_only": lambda: (us, case_prof),
                "profile_only": lambda: (scen, profile),
                "profile_wander": lambda: (us, profile_parts(profile, case_prof, ["wander", "gil"])),
                "profile_transport": lambda: (us, profile_parts(profile, case_prof, ["transport", "gil"]))}
            jobs.append((f"{tag}:{c['id']}", c, {v: inputs[v]() for v in variants}))
    if not jobs:
        print("user_path: no image case in a call with a usable probe_fragment.json", file=sys.stderr)
        return 2
    print(f"user_path: {len(jobs)} cases in {len({j[0].split(':')[0] for j in jobs})} calls, {a.seeds} seeds each, "
          f"variants {', '.join(variants)}", file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        def predict(job, variant: str) -> Optional[Dict[str, Any]]:
            cid, c, inputs = job
            scen, prof = inputs[variant]
            stem = os.path.join(tmp, f"{cid.replace(':', '_')}-{variant}")
            with open(stem + ".json", "w") as f:
                json.dump(scen, f)
            with open(stem + ".profile.json", "w") as f:
                json.dump(prof, f)
            out = convert.simulate_replicated(a.pipeplan, stem + ".json", stem + ".profile.json", 300, a.seeds)
            if "error" in out:
                print(f"{cid}: pipeplan failed: {out['error']}", file=sys.stderr)
                return None
            r = out["result"]
            m = c["measured"]
            row = table[cid]
            return {"samples_per_s": r["throughput"]["samples_per_s"],
                    "thr_err": r["throughput"]["samples_per_s"] / m["throughput_samples_per_s"] - 1,
                    "p90_err": r["step_time_s"]["p90"] / m["step_time_s"]["p90"] - 1,
                    "bottleneck_ok": convert.stage_class(r["bottleneck"]["stage"]) == row["measured"]["bottleneck"]}
        with ThreadPoolExecutor(max_workers=max(1, a.jobs // 2)) as pool:
            flat = list(pool.map(lambda jv: predict(*jv), [(j, v) for j in jobs for v in variants]))

    rows = []
    for i, (cid, c, _inputs) in enumerate(jobs):
        t = table[cid]["pipeplan"]
        m = table[cid]["measured"]
        row = {"id": cid, "num_workers": int(c["knobs"]["num_workers"]), "pin_memory": bool(c["knobs"]["pin_memory"]),
               "table": {"thr_err": t["err"], "p90_err": t["step_p90_err"], "bottleneck_ok": t["bottleneck_ok"]},
               "measured_bottleneck": m["bottleneck"]}
        row.update({v: flat[len(variants) * i + j] for j, v in enumerate(variants)})
        rows.append(row)
    print(f"{'':30s} {'n':>4s}  median / p90 abs throughput error; signed median; abs error of the p90 step; bottleneck")
    keys = ["table"] + variants
    names = dict(VARIANTS, table="table (harness inputs)")
    for key in keys:
        print(summary_line(names[key], errors_summary(rows, key)))
    print(f"by num_workers (median / p90 abs throughput error (signed median): {' | '.join(keys)}):")
    for nw in sorted({r["num_workers"] for r in rows}):
        sub = [r for r in rows if r["num_workers"] == nw]
        cells = [errors_summary(sub, key) for key in keys]
        print(f"  w{nw:<3d} {len(sub):4d} cases  " + "  |  ".join(
            f"{_pct(s['median_abs_thr'])} / {_pct(s['p90_abs_thr'])} ({_pct(s['signed_median_thr'], True)})"
            for s in cells))
    if a.out:
        write_whole(a.out, json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
