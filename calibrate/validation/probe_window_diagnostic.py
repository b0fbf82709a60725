#!/usr/bin/env python3
"""Diagnostic: how far a probe-length window of the workers' load speed can sit from its case's mean, and whether a
vCPU or a worker process carries its speed.

convert.py predicts each case from probes run next to it (about 1.5 s each, before and after). If the workers'
speed wanders, a 1.5 s window reads off its case's mean by that wander alone, whatever the model does; that is
the floor under the out-of-sample throughput error. From each case's timeline (harness --timeline: per worker,
each batch's start and its thread CPU seconds, `workers_cpu`) this:
  * cuts the case into windows of W seconds (by batch start), takes the mean batch CPU of each window over the
    case's mean, and reports the spread (population sd) of those ratios by worker count and data kind, for
    W = 1.5, 3 and 6 s. If the wander were independent from batch to batch the spread would fall as 1/sqrt(W);
    where it falls slower the wander is slow and common to the workers, and a longer probe buys little;
  * asks whether a vCPU carries its speed: per call, each vCPU's median batch CPU over its case's median, from
    alternate cases (odd and even), correlated across vCPUs (near 0: no fixed fast and slow vCPUs);
  * asks whether a worker process carries its speed through its case: each worker's mean over the first half of
    its batches and over the second half (over the case mean), correlated across workers (near 0: no).
Straggler families (slow_worker*) are left out: their slow worker is slow by design.

    python3 calibrate/validation/probe_window_diagnostic.py [RESULTS_DIR ...]

Without RESULTS_DIR it reads every call in calibrate/validation/table_calls.txt (calls without timelines add
nothing). Missing or unreadable input: one line, exit 2.
"""
import argparse
import lzma
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402  (read_json, stored_json_path, table_call_dirs: the readers the other diagnostics share)
WINDOWS_S = (1.5, 3.0, 6.0)


def window_ratios(batches: Sequence[Tuple[float, float]], window_s: float) -> List[float]:
    """Pure: batches as (start_s, cpu_s) -> each whole window's mean cpu_s over the mean of all batches. Windows
    of window_s from the first start; a batch belongs to the window its start falls in; the last window is kept
    only if the starts run past its end (a partial tail would be a short window); empty windows are skipped."""
    if len(batches) < 2 or window_s <= 0:
        return []
    mean_all = statistics.fmean(c for _, c in batches)
    if mean_all <= 0:
        return []
    t0 = min(s for s, _ in batches)
    t1 = max(s for s, _ in batches)
    n_windows = int((t1 - t0) // window_s)
    sums, counts = [0.0] * n_windows, [0] * n_windows
    for s, c in batches:
        i = int((s - t0) // window_s)
        if i < n_windows:
            sums[i] += c
            counts[i] += 1
    return [sums[i] / counts[i] / mean_all for i in range(n_windows) if counts[i]]


def pearson(xs: Sequence[float], ys: Sequence[float]) -> Optional[float]:
    """Pure: Pearson's r, None with fewer than 3 pairs or no spread."""
    if len(xs) < 3 or len(xs) != len(ys):
        return None
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return None


def worker_halves(per_worker_cpu_s: Sequence[Sequence[float]], min_batches: int = 8) -> Tuple[List[float], List[float]]:
    """Pure: per worker (batches' CPU seconds in order) -> (first-half means, second-half means), each over the
    mean of that half over the counted workers, so a drift of the whole machine between the halves (all workers
    slower in the second) does not enter: pooled over cases such a drift reads as a negative correlation. Until run
    58's session both halves were over the case's mean, which read r -0.03 over 2,997 workers; the per-half
    normalisation reads +0.23 over 3,152 (runs 11-58; docs/validation-runs.md run 58, finding 5). Workers with fewer than min_batches
    batches are left out."""
    kept = [list(w) for w in per_worker_cpu_s if len(w) >= min_batches]
    if not kept:
        return [], []
    first = [statistics.fmean(w[:len(w) // 2]) for w in kept]
    second = [statistics.fmean(w[len(w) // 2:]) for w in kept]
    mean_first, mean_second = statistics.fmean(first), statistics.fmean(second)
    return [x / mean_first for x in first], [x / mean_second for x in second]


def vcpu_split_half(cases_by_cpu: Sequence[Dict[int, List[float]]]) -> Optional[Dict[str, Any]]:
    """Pure: per case, {vCPU: batch CPU seconds over that case's median} -> the vCPUs' medians from the even-numbered
    cases against the odd-numbered, correlated across the vCPUs seen in both. None with fewer than 3 such vCPUs."""
    halves: Tuple[Dict[int, List[float]], Dict[int, List[float]]] = ({}, {})
    for i, by_cpu in enumerate(cases_by_cpu):
        for cpu, xs in by_cpu.items():
            halves[i % 2].setdefault(cpu, []).extend(xs)
    cpus = sorted(set(halves[0]) & set(halves[1]))
    a = [statistics.median(halves[0][c]) for c in cpus]
    b = [statistics.median(halves[1][c]) for c in cpus]
    r = pearson(a, b)
    return None if r is None else {"cpus": len(cpus), "r": r}


def case_batches(case: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """One case's timeline -> {'batches': [(start_s, cpu_s)], 'per_worker': [[cpu_s, ...]], 'by_cpu': {cpu: [ratio]}}
    (by_cpu over the case's median; batches that moved CPU left out of it), or None without workers_cpu."""
    tl = (case.get("measured") or {}).get("timeline") or {}
    wc, ws = tl.get("workers_cpu"), tl.get("workers")
    if not wc or not ws:
        return None
    batches, per_worker, cpu_of = [], [], []
    for w, cpu_recs in wc.items():
        walls = ws.get(w) or []
        n = min(len(cpu_recs), len(walls))
        per_worker.append([float(cpu_recs[i][0]) for i in range(n)])
        for i in range(n):
            cpu_s = float(cpu_recs[i][0])
            batches.append((float(walls[i][0]), cpu_s))
            c0, c1 = int(cpu_recs[i][1]), int(cpu_recs[i][2])
            cpu_of.append((c0 if c0 == c1 and c0 >= 0 else None, cpu_s))
    if len(batches) < 2:
        return None
    median = statistics.median(c for _, c in batches)
    by_cpu: Dict[int, List[float]] = {}
    if median > 0:
        for cpu, c in cpu_of:
            if cpu is not None:
                by_cpu.setdefault(cpu, []).append(c / median)
    return {"batches": batches, "per_worker": per_worker, "by_cpu": by_cpu}


def worker_group(num_workers: int) -> str:
    return "1" if num_workers == 1 else "2-4" if num_workers <= 4 else "8+"


def read_call(path: str) -> Dict[str, Any]:
    """A call's cases.json (or its .gz / .xz: convert.read_json) -> the parsed document. Raises OSError/ValueError
    with a message naming the file, so main can print one line before anything else."""
    p = convert.stored_json_path(os.path.join(path, "cases.json"))
    if p is None:
        raise OSError(f"{path}: no cases.json (or .gz / .xz)")
    try:
        return convert.read_json(p)
    except (OSError, ValueError, EOFError, lzma.LZMAError) as e:
        raise ValueError(f"{p}: not a readable cases.json ({e})")


def read_calls(dirs: Sequence[str], tool: str) -> Optional[List[Tuple[str, Dict[str, Any]]]]:
    """Every call folder's cases.json, read before anything is printed -> [(folder name, document)], or None after one
    line on stderr naming the first folder that cannot be read (the caller exits 2). Shared by the diagnostics that
    read the table's calls."""
    docs = []
    for d in dirs:
        try:
            docs.append((os.path.basename(os.path.normpath(d)), read_call(d)))
        except (OSError, ValueError) as e:
            print(f"{tool}: {e}", file=sys.stderr)
            return None
    return docs


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="*", help="call folders (default: table_calls.txt's)")
    a = ap.parse_args(argv)
    dirs = a.results or convert.table_call_dirs(os.path.join(HERE, "table_calls.txt"))
    docs = read_calls(dirs, "probe_window_diagnostic")
    if docs is None:
        return 2
    ratios: Dict[Tuple[str, str, float], List[float]] = {}
    n_cases: Dict[Tuple[str, str, float], int] = {}
    first_all: List[float] = []
    second_all: List[float] = []
    vcpu_rows = []
    for name, doc in docs:
        by_cpu_cases = []
        for case in doc.get("cases", []):
            if "slow_worker" in str(case.get("family", "")) or case.get("status", "ok") != "ok":
                continue
            nw = int((case.get("knobs") or {}).get("num_workers") or 0)
            cb = case_batches(case) if nw > 0 else None
            if cb is None or len(cb["batches"]) < 20:
                continue
            kind = "image" if (case.get("knobs") or {}).get("kind") == "image" else "other"
            for w_s in WINDOWS_S:
                r = window_ratios(cb["batches"], w_s)
                if len(r) >= 2:  # a case that holds two windows, so one is not the case itself
                    key = (kind, worker_group(nw), w_s)
                    ratios.setdefault(key, []).extend(r)
                    n_cases[key] = n_cases.get(key, 0) + 1
            f, s = worker_halves(cb["per_worker"])
            first_all += f
            second_all += s
            by_cpu_cases.append(cb["by_cpu"])
        v = vcpu_split_half(by_cpu_cases)
        if v is not None:
            vcpu_rows.append((name, len(by_cpu_cases), v))
    if not ratios:
        print("probe_window_diagnostic: no case with a workers_cpu timeline in the calls given", file=sys.stderr)
        return 2
    print("a window's mean batch CPU against its case's mean (sd of the ratio), by data kind and workers:")
    print(f"{'kind':6} {'workers':7} " + " ".join(f"{w:>16g} s" for w in WINDOWS_S))
    for kind in ("image", "other"):
        for g in ("1", "2-4", "8+"):
            cells = []
            for w_s in WINDOWS_S:
                xs = ratios.get((kind, g, w_s), [])
                cells.append(f"{statistics.pstdev(xs) * 100:5.1f}% ({n_cases[(kind, g, w_s)]:3d} cases)"
                             if len(xs) >= 5 else f"{'n/a':>17}")
            print(f"{kind:6} {g:7} " + " ".join(cells))
    r = pearson(first_all, second_all)
    print(f"a worker's first half against its second (each over its half's mean): r {r:+.2f} over {len(first_all)} workers"
          if r is not None else "a worker's halves: too few workers")
    if vcpu_rows:
        rs = [v["r"] for _, _, v in vcpu_rows]
        print(f"a vCPU's speed in alternate cases of a call: median r {statistics.median(rs):+.2f} over {len(rs)} calls "
              f"(range {min(rs):+.2f} to {max(rs):+.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
