#!/usr/bin/env python3
"""Holds the simulator's cold-read model to calibrate's own measurement, outside any case.

calibrate's storage section reads the same 256 files cold with N threads, each doing a fixed CPU work between files
(profile storage.buffered_read.concurrent_with_work: threads, wall_s, work_s_per_file; file_bytes and files beside
it). That is a DataLoader worker's cold fetch with nothing else running: read a file, work on it, read the next.
This script builds the equivalent scenario for each N (N workers, one batch each of files / N samples, the work as
the per-sample load, no collate, a GPU step too short to matter), simulates it with the call's own profile, and
prints the simulated wall (the last worker's last read-and-work span) against the measured one, with the workers
reading sample by sample and batch by batch.

  python3 calibrate/validation/storage_check.py calibrate/validation/results/2026-12-03-h200-run49b2b [...]

Nothing here is fitted: the scenario carries only what calibrate did. Validation run 49, finding 6.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402

DEFAULT_PIPEPLAN = os.path.join(HERE, "..", "..", "build", "cli", "pipeplan")


def per_sample_load_s(buffered, point):
    """What a case's warm getitem would measure for calibrate's reader: the work after each file plus the warm
    re-read's CPU a file (the copy out of the page cache; the simulator adds only the cold read's extra, the
    page-cache fill, and the wait). Before the forty-sixth session this was the work alone, which left 0.14 ms a file
    of run 49's CPU out and made the per-sample order look 7-10% short on run 49's B2b."""
    warm_cpu_s_per_file = float(buffered.get("warm_cpu_s", 0.0)) / int(buffered["files"])
    return float(point["work_s_per_file"]) + warm_cpu_s_per_file


def per_sample_load_cv(buffered, point):
    """The spread of the per-sample load where calibrate drew each file's work (pause_sweep_jittered: uniform in
    work x (1 +- work_jitter), standard deviation work x jitter / sqrt(3)) over the whole load (the work plus the
    warm re-read's CPU, which does not vary); 0 for fixed work."""
    jitter = float(point.get("work_jitter", 0.0))
    load_s = per_sample_load_s(buffered, point)
    if jitter <= 0.0 or load_s <= 0.0:
        return 0.0
    return float(point["work_s_per_file"]) * jitter / 3 ** 0.5 / load_s


def with_work_scenario(buffered, point, worker_reads, device_share="at_start", reader_share="back_to_back",
                       device_bandwidth="fio"):
    """The scenario of calibrate's run with point["threads"] readers: each reads files / threads files whole,
    cold, with point["work_s_per_file"] of CPU after each."""
    threads = int(point["threads"])
    files = int(buffered["files"])
    if threads <= 0 or files % threads:
        raise ValueError(f"{files} files do not split evenly over {threads} threads")
    file_bytes = float(buffered["file_bytes"])
    return {
        "schema": "pipeplan-scenario/1",
        "name": f"calibrate-cold-read-with-work-{threads}",
        "description": "calibrate's storage.buffered_read.concurrent_with_work run as DataLoader workers",
        "seed": 1,
        "node": {"gpus": 1, "cpu_cores": 16},
        "dataset": {
            "num_samples": files,
            "item_bytes": file_bytes,
            # drawn file by file where calibrate drew the work (gamma: the simulator's nearest to a uniform draw)
            "load_s_per_sample": {"mean": per_sample_load_s(buffered, point), "cv": per_sample_load_cv(buffered, point),
                                  "kind": "gamma" if point.get("work_jitter") else "lognormal"},
            "sample_bytes": {"mean": file_bytes, "cv": 0.0, "kind": "lognormal"},
        },
        # one read-then-work piece a file, as calibrate's readers do (the simulator's default grain is coarser)
        "storage": {"page_cache_hit_ratio": 0.0, "worker_reads": worker_reads, "device_share": device_share,
                    "reader_share_from": reader_share, "device_bandwidth_from": device_bandwidth,
                    "read_pieces_per_batch": files // threads},
        "loader": {"batch_size": files // threads, "num_workers": threads, "pin_memory": False,
                   "prefetch_factor": 1, "collate_s_per_batch": 1e-6, "worker_start_s": 0.0},
        "training": {"step_s": 1e-4, "host_s_per_step": 0.0, "steps": threads, "warmup_steps": 0},
    }


def last_read_end_s(trace):
    """The end of the last worker span that reads or loads (Chrome trace events, microseconds), in seconds."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    ends = [(e["ts"] + e["dur"]) / 1e6 for e in events
            if e.get("ph") == "X" and ("read" in e.get("name", "") or "load" in e.get("name", ""))]
    if not ends:
        raise ValueError("the trace has no read or load span")
    return max(ends)


def steady_core_profile(profile):
    """The profile with the cores' speed wander off. calibrate's readers spin on their own thread's CPU clock
    (spin_cpu_s) until the work's seconds have passed, so a slow core does not lengthen it; the simulator's wander
    would, and four readers whose equal work differs by a few percent every file drift out of step, which
    calibrate's do not (run 51: 3.80 reads in flight at 2 ms of work). Before the forty-seventh session the check
    kept the wander, which put the simulated readers out of step (1.26-1.90 in flight) and their wall 17-21% short."""
    cpu = dict(profile.get("cpu", {}))
    for key in ("core_speed_cv", "core_speed_slow_cv"):
        if key in cpu:
            cpu[key] = 0.0
    return {**profile, "cpu": cpu}


def simulate_wall_s(pipeplan, scenario, profile):
    """The simulated wall of `scenario` under `profile` (convert's runner: a timeout, and its error as one line) and
    the simulated reads in flight during a read (the report's storage.readers_in_flight_mean; None before the
    forty-sixth session's simulator)."""
    with tempfile.TemporaryDirectory(prefix="pipeplan-storage-check-") as tmp:
        scenario_path = os.path.join(tmp, "scenario.json")
        trace_path = os.path.join(tmp, "trace.json")
        profile_path = os.path.join(tmp, "profile.json")
        with open(scenario_path, "w") as f:
            json.dump(scenario, f)
        with open(profile_path, "w") as f:
            json.dump(profile, f)
        run = convert.run_pipeplan(pipeplan, scenario_path, profile_path, timeout_s=120, extra=["--trace", trace_path])
        if "error" in run:
            raise RuntimeError(f"{run['command']}: {run['error']}")
        in_flight = (run["result"].get("storage") or {}).get("readers_in_flight_mean")
        return last_read_end_s(convert.read_json(trace_path)), in_flight


def fmt_in_flight(value):
    """A reads-in-flight figure, or n/a where it was not measured (calibrate before the forty-sixth session)."""
    return "n/a" if value is None else f"{float(value):.2f}"


def wait_s_per_file(point, files):
    """A point's wait a file as calibrate logs it: the wall less the threads' CPU share, over a thread's files."""
    threads = int(point["threads"])
    return (float(point["wall_s"]) - float(point["cpu_s"]) / threads) / (files / threads)


def head_first_pairs(buffered):
    """Each head-first point (np.load's two requests a file; calibrate since the forty-eighth session) beside the
    same readers reading whole files in the same call: one reader with no work against the pause sweep's, four with
    jittered work against the jittered sweep's of the same mean work. (threads, work_ms, head-first wait s a file,
    whole-file wait s a file) for each pair found."""
    files = int(buffered["files"])
    whole = [q for q in buffered.get("pause_sweep", []) if not q.get("work_jitter")]
    whole += buffered.get("pause_sweep_jittered", [])
    pairs = []
    for h in buffered.get("pause_sweep_head_first", []):
        match = [q for q in whole if int(q["threads"]) == int(h["threads"])
                 and abs(float(q["work_s_per_file"]) - float(h["work_s_per_file"])) < 1e-9
                 and bool(q.get("work_jitter")) == bool(h.get("work_jitter"))]
        if match:
            pairs.append((int(h["threads"]), float(h["work_s_per_file"]) * 1e3, wait_s_per_file(h, files),
                          wait_s_per_file(match[0], files)))
    return pairs


def summary_lines(rows):
    """One line per experiment, reader count and work (over the calls given): how many, the per-sample order's
    signed median and median |error| in percent, and the reads in flight, measured / simulated, by median where
    measured. rows: (experiment, readers, work_ms, per_sample_err_pct, measured_in_flight or None, sim_in_flight)."""
    groups = {}
    for experiment, readers, work_ms, err_pct, measured, simulated in rows:
        groups.setdefault((experiment, readers, round(work_ms, 2) if experiment != "with_work" else None),
                          []).append((err_pct, measured, simulated))
    lines = []
    for (experiment, readers, work_ms), v in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0)):
        errs = [e for e, _, _ in v]
        pairs = [(m, s) for _, m, s in v if m is not None and s is not None]
        in_flight = (f"{statistics.median(m for m, _ in pairs):.2f} / {statistics.median(s for _, s in pairs):.2f}"
                     if pairs else "n/a")
        work = f"{work_ms:.2f} ms" if work_ms is not None else "as measured"
        lines.append(f"{experiment:12s}{readers:3d} readers, work {work:12s} n={len(v):3d}  per sample "
                     f"{statistics.median(errs):+6.1f}% signed, {statistics.median(abs(e) for e in errs):5.1f}% |err|"
                     f"  in flight {in_flight}")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("calls", nargs="+", help="validation result folders (each with profile.json)")
    ap.add_argument("--pipeplan", default=DEFAULT_PIPEPLAN)
    ap.add_argument("--device-share", choices=["at_start", "follows_readers"], default="at_start",
                    help="the scenario's storage.device_share (default %(default)s)")
    ap.add_argument("--reader-share", choices=["back_to_back", "with_work"], default="back_to_back",
                    help="the scenario's storage.reader_share_from (default %(default)s)")
    ap.add_argument("--device-bandwidth", choices=["fio", "fio_or_buffered_peak"], default="fio",
                    help="the scenario's storage.device_bandwidth_from (default %(default)s)")
    args = ap.parse_args(argv)
    summary_rows = []
    buffered_by_call = {}  # each call's storage.buffered_read, read once
    print("call                      experiment      readers  work ms  measured ms  per sample ms       per batch ms"
          "      in flight: measured / per sample")
    for call in args.calls:
        profile_path = os.path.join(call, "profile.json")
        try:
            profile = convert.read_json(profile_path)
            buffered = profile.get("storage", {}).get("buffered_read", {})
            steady_profile = steady_core_profile(profile)  # one copy a call, whatever its points
            buffered_by_call[call] = buffered
        except (OSError, ValueError) as e:
            print(f"storage_check.py: {profile_path}: {e}", file=sys.stderr)
            return 2
        # concurrent_with_work since the seventeenth session; pause_sweep (1 and 4 readers, 0-2 ms) since the
        # forty-sixth
        points = [("with_work", q) for q in buffered.get("concurrent_with_work", [])]
        points += [("pause_sweep", q) for q in buffered.get("pause_sweep", [])]
        # four readers with work drawn file by file (forty-seventh session)
        points += [("jittered", q) for q in buffered.get("pause_sweep_jittered", [])]
        # the same with each file read head first, as np.load does (forty-eighth session): simulated as whole-file
        # reads, since the simulator has one request a file; set beside "jittered" it shows what the second costs
        points += [("head_first", q) for q in buffered.get("pause_sweep_head_first", [])]
        if not points:
            print(f"{os.path.basename(call.rstrip('/'))}: no storage.buffered_read.concurrent_with_work in {profile_path}")
            continue
        for experiment, point in points:
            measured_s = float(point["wall_s"])
            row = [f"{os.path.basename(call.rstrip('/')):26s}{experiment:12s}{int(point['threads']):7d}"
                   f"{float(point['work_s_per_file']) * 1e3:9.3f}  {measured_s * 1e3:11.1f}"]
            in_flight, sim_wall_s = {}, {}
            for order in ("per_sample", "per_batch"):
                try:
                    scenario = with_work_scenario(buffered, point, order, args.device_share, args.reader_share,
                                                  args.device_bandwidth)
                    sim_wall_s[order], in_flight[order] = simulate_wall_s(args.pipeplan, scenario, steady_profile)
                except (RuntimeError, ValueError) as e:
                    print(f"storage_check.py: {call}: {e}", file=sys.stderr)
                    return 2
                sim_s = sim_wall_s[order]
                row.append(f"{sim_s * 1e3:8.1f} ({(sim_s / measured_s - 1) * 100:+6.1f}%)")
            # calibrate's readers_in_flight_mean since after run 50 (absent before)
            measured_in_flight = point.get("readers_in_flight_mean")
            row.append(f"{fmt_in_flight(measured_in_flight):>8s} / {fmt_in_flight(in_flight['per_sample'])}")
            print("  ".join(row))
            summary_rows.append((experiment, int(point["threads"]), float(point["work_s_per_file"]) * 1e3,
                                 (sim_wall_s["per_sample"] / measured_s - 1) * 100,
                                 None if measured_in_flight is None else float(measured_in_flight),
                                 in_flight["per_sample"]))
    if len(args.calls) > 1 and summary_rows:
        print("\nover the calls (per-sample order; medians):")
        for line in summary_lines(summary_rows):
            print("  " + line)
    # measured against measured: does a file read head first (np.load's pattern) wait longer than one read whole?
    ratios = {}
    for call, buffered in buffered_by_call.items():
        for threads, work_ms, head_s, whole_s in head_first_pairs(buffered) if buffered.get("files") else []:
            if not ratios:
                print("\nhead-first reads (4 KiB, then the rest) against whole-file reads of the same call, wait ms a file:")
            print(f"  {os.path.basename(call.rstrip('/')):26s}{threads:2d} reader(s), work {work_ms:4.2f} ms: "
                  f"{head_s * 1e3:6.3f} / {whole_s * 1e3:6.3f} = {head_s / whole_s:5.2f}x")
            ratios.setdefault((threads, work_ms), []).append(head_s / whole_s)
    for (threads, work_ms), v in sorted(ratios.items()):
        if len(v) > 1:
            print(f"  over {len(v)} calls, {threads} reader(s), work {work_ms:4.2f} ms: median {statistics.median(v):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
