#!/usr/bin/env python3
"""Diagnostic: do some workers stay slower than others (a persistent per-worker offset), or do their speeds
wander apart and back within seconds, as the model's per-worker wander does?

A persistent offset (a worker on a slower core for the whole case) would hold an in-order loader back on every
round and make `in_order=False` worth more than the model says (validation.md "Next", item 3; sessions.md's last list, items 3
and 8). Its signature: a worker slower than the others in one part of a window is slower in every other part.
For each case with a timeline this cuts the measured window into quarters, takes each worker's mean batch time in
each, and correlates the workers' means between quarters (across workers, within the case): near 1 for persistent
offsets, near 0 for speeds that decorrelate faster than a quarter. The same is done on the simulator's Perfetto
trace of the table's scenario for the same cases (the model's per-worker Ornstein-Uhlenbeck wander, docs/model.md),
over a window as long as the case's.

    python3 calibrate/validation/worker_offsets_diagnostic.py [--report calibrate/validation/results/table-report]
        [--pipeplan build/cli/pipeplan] [--kind image] [--workers 8] [--step mm:25] [--seeds 2]

Medians over cases, since the correlation across 8 workers of one case is itself noisy (sd about 0.35).
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
from pin_drift_diagnostic import pearson  # noqa: E402

QUARTERS = 4


def correlation(a: Sequence[float], b: Sequence[float]) -> Optional[float]:
    """Pearson's r of two equal-length sequences; None without spread in either."""
    r = pearson(a, b)
    return None if math.isnan(r) else r


def quarter_means(intervals_by_worker: Sequence[Sequence[Tuple[float, float]]], lo: float, hi: float,
                  parts: int = QUARTERS) -> Optional[List[List[float]]]:
    """Per worker, the mean duration of its batches wholly inside each of `parts` equal parts of [lo, hi]; None
    when a worker has fewer than two batches in a part (too few to say)."""
    edges = [lo + (hi - lo) * i / parts for i in range(parts + 1)]
    out = []
    for iv in intervals_by_worker:
        means = []
        for p in range(parts):
            d = [b - a for a, b in iv if a >= edges[p] and b <= edges[p + 1]]
            if len(d) < 2:
                return None
            means.append(statistics.fmean(d))
        out.append(means)
    return out


def persistence(means: Sequence[Sequence[float]]) -> Dict[str, Optional[float]]:
    """From quarter_means: the workers' means correlated between adjacent quarters (their mean over the three
    pairs), between the first and the last quarter, and between the halves; and the spread (cv) of the workers'
    means over the whole window."""
    col = [[m[q] for m in means] for q in range(len(means[0]))]
    adjacent = [r for r in (correlation(col[q], col[q + 1]) for q in range(len(col) - 1)) if r is not None]
    half = len(col) // 2
    first = [statistics.fmean(m[:half]) for m in means]
    second = [statistics.fmean(m[half:]) for m in means]
    whole = [a + b for a, b in zip(first, second)]
    return {"adjacent": statistics.fmean(adjacent) if adjacent else None,
            "first_last": correlation(col[0], col[-1]),
            "halves": correlation(first, second),
            "spread_cv": statistics.pstdev(whole) / statistics.fmean(whole)}


def measured_case(case: Dict) -> Optional[Tuple[Dict[str, Optional[float]], float]]:
    """persistence() of a case's timeline (harness --timeline) over its measured window, and the window's length."""
    tl = (case.get("measured") or {}).get("timeline")
    if not tl:
        return None
    synced, skip = tl["main"]["synced"], int(tl["skip"])
    if len(synced) <= skip + QUARTERS:
        return None
    lo, hi = synced[skip - 1], synced[-1]
    means = quarter_means([tl["workers"][w] for w in sorted(tl["workers"], key=int)], lo, hi)
    return (persistence(means), hi - lo) if means else None


def simulated_case(pipeplan: str, scenario: str, profile: Optional[str], seed: int, window_s: float
                   ) -> Optional[Dict[str, Optional[float]]]:
    """persistence() of the simulator's workers over `window_s` after the 20th step of a trace of the scenario."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        steps_needed = 40 + int(window_s * 200)  # at least the window at up to 200 steps/s
        run = convert.run_pipeplan(pipeplan, scenario, profile, timeout_s=600,
                                   extra=["--seed", str(seed), "--steps", str(steps_needed), "--trace", trace])
        if "error" in run:
            return None
        events = convert.read_json(trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    steps = sorted(e["ts"] for e in events if e.get("ph") == "X" and e.get("name") == "training step (python)")
    if len(steps) < 40:
        return None
    lo = steps[20] * 1e-6
    hi = min(steps[-1] * 1e-6, lo + window_s)
    by_worker: Dict[int, List[Tuple[float, float]]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("name") == "load+collate":
            by_worker.setdefault(e["tid"], []).append((e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6))
    means = quarter_means([by_worker[t] for t in sorted(by_worker)], lo, hi)
    return persistence(means) if means else None


def median_of(rows: Sequence[Dict[str, Optional[float]]], key: str) -> Optional[float]:
    v = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(v) if v else None


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", default="calibrate/validation/results/table-report")
    ap.add_argument("--pipeplan", default="build/cli/pipeplan")
    ap.add_argument("--kind", default="image")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--step", default="mm:25")
    ap.add_argument("--seeds", type=int, default=2)
    a = ap.parse_args(argv)
    report_path = os.path.join(a.report, "report.json")
    if convert.stored_json_path(report_path) is None:  # the table's is kept gzipped
        print(f"worker_offsets_diagnostic: {report_path} not found (run bash calibrate/validation/table.sh)",
              file=sys.stderr)
        return 2
    report = convert.read_json(report_path)
    calls = {c["tag"]: c["results"] for c in (report.get("meta") or {}).get("calls") or []}
    wanted = [r for r in report["rows"]
              if r["knobs"].get("kind") == a.kind and r["knobs"].get("num_workers") == a.workers
              and r["knobs"].get("step") == a.step and r["knobs"].get("storage") == "warm"
              and r["knobs"].get("in_order", True) and r["knobs"].get("batch_size") == 64]
    cases_by_call: Dict[str, Dict[str, Dict]] = {}
    measured, simulated = [], []
    for r in wanted:
        # a pooled report's ids are "tag:case" (meta.calls names each tag's folder); one call's are the case's own
        tag, name = r["id"].split(":", 1) if ":" in r["id"] else ("", r["id"])
        if tag not in cases_by_call:
            path = (os.path.join(calls.get(tag, ""), "cases.json") if tag else
                    str((report.get("meta") or {}).get("cases_path") or "").removesuffix(".gz").removesuffix(".xz"))
            if convert.stored_json_path(path) is None:
                continue
            d = convert.read_json(path)  # or its .gz / .xz
            cases_by_call[tag] = {c["id"]: c for c in (d["cases"] if isinstance(d, dict) else d)}
        got = measured_case(cases_by_call[tag].get(name) or {})
        if not got:
            continue
        measured.append(got[0])
        stem = os.path.join(a.report, "scenarios", r["id"].replace(":", "_"))
        profile = stem + ".profile.json" if os.path.isfile(stem + ".profile.json") else None
        for seed in range(1, a.seeds + 1):
            s = simulated_case(a.pipeplan, stem + ".json", profile, seed, got[1])
            if s:
                simulated.append(s)
    if not measured:
        print("worker_offsets_diagnostic: no case with a timeline matches", file=sys.stderr)
        return 2
    print(f"{a.kind}, {a.workers} workers, step {a.step}, warm, in order: the workers' mean batch times, "
          "correlated across workers between parts of the window (median over windows)")
    print("                     windows  adjacent quarters  first/last quarter  halves  spread of the means (cv)")
    for label, rows in (("measured", measured), ("simulated", simulated)):
        vals = [median_of(rows, k) for k in ("adjacent", "first_last", "halves", "spread_cv")]
        print(f"{label:<20} {len(rows):>8}  " + "  ".join(
            f"{'n/a' if v is None else format(v, '.2f' if i < 3 else '.3f'):>{w}}"
            for i, (v, w) in enumerate(zip(vals, (17, 18, 6, 24)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
