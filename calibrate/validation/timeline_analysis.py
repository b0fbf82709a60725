#!/usr/bin/env python3
"""Where DataLoader workers sit idle in a measured case (harness.py --timeline).

    python3 calibrate/validation/timeline_analysis.py calibrate/validation/results/<run>/cases.json

For each case with a timeline, over the measured window (after the prefetch fill):
  - worker busy: the fraction of the window each worker spends between a batch's first __getitem__
    and its collate's return (then averaged over workers);
  - index-starved: the part of the idle time a worker spends waiting for its next index, which
    PyTorch sends (`_try_put_index`) only when the loop takes a batch, and only while fewer than
    prefetch_factor x num_workers batches are outstanding;
  - delivery: from a batch being ready (collated, and asked for by the loop) to the loop having it:
    the worker's put, the pin_memory thread (receive, pin) and the main thread's receive.
Batch j of a single-epoch, in-order loader goes to worker j mod num_workers (PyTorch's round robin),
and its index leaves when the loop takes batch j - prefetch_factor x num_workers.
"""
import argparse
import json
import math
import sys
from typing import Any, Dict, List, Optional, Sequence

from pipeplan_probe import summarize, worker_spread


def overlap(a: float, b: float, lo: float, hi: float) -> float:
    return max(0.0, min(b, hi) - max(a, lo))


def core_wander(per_worker_durations: Sequence[Sequence[float]]) -> Optional[Dict[str, float]]:
    """The workers' batch times as calibrate reads its decode chunks (calibrate/stats.hpp
    fit_core_wander): y = ln(1 / duration) less its mean over all batches of all workers; cv =
    sqrt(exp(var y) - 1); lag-one autocorrelation within each worker, pooled; correlation time =
    -mean batch duration / ln(autocorrelation). Compare with the profile's cpu.core_speed_cv and
    core_speed_correlation_s."""
    ys = [[-math.log(d) for d in ds if d > 0] for ds in per_worker_durations]
    flat = [v for y in ys for v in y]
    if len(flat) < 4:
        return None
    m = sum(flat) / len(flat)
    ys = [[v - m for v in y] for y in ys]
    var = sum(v * v for y in ys for v in y) / len(flat)
    num = sum(y[t] * y[t + 1] for y in ys for t in range(len(y) - 1))
    den = sum(y[t] * y[t] for y in ys for t in range(len(y) - 1))
    rho = num / den if den > 0 else 0.0
    mean_d = sum(d for ds in per_worker_durations for d in ds) / len(flat)
    tau = (-mean_d / math.log(rho)) if 0 < rho < 1 else (None if rho >= 1 else 0.0)
    return {"cv": math.sqrt(math.expm1(var)), "lag_one_autocorrelation": rho, "batch_s": mean_d,
            "correlation_s": tau}


def analyse(timeline: Dict[str, Any], num_workers: int, prefetch_factor: int) -> Optional[Dict[str, Any]]:
    """Pure: the timeline dict of one case -> worker busy and idle shares, delivery latencies."""
    main = timeline["main"]
    skip = int(timeline["skip"])
    ends, starts, synced = main["next_end"], main["next_start"], main["synced"]
    n = len(ends)
    if n <= skip + 1 or num_workers <= 0:
        return None
    lo, hi = synced[skip - 1], synced[n - 1]
    span = hi - lo
    workers = {int(w): iv for w, iv in timeline["workers"].items()}
    if sorted(workers) != list(range(num_workers)):
        return None
    busy, idle, starved, per_worker_durations, durations = [], [], [], [], []
    for w in range(num_workers):
        iv = workers[w]
        d = [b - a for a, b in iv if a >= lo and b <= hi]
        per_worker_durations.append([len(d), sum(d), sum(x * x for x in d)])
        durations.append(d)
        busy.append(sum(overlap(a, b, lo, hi) for a, b in iv) / span)
        idle_s = starved_s = 0.0
        for k in range(1, len(iv)):
            gap0, gap1 = iv[k - 1][1], iv[k][0]
            g = overlap(gap0, gap1, lo, hi)
            if g <= 0:
                continue
            idle_s += g
            j = k * num_workers + w                   # this worker's k-th batch (round robin)
            src = j - prefetch_factor * num_workers   # the hand-off that sent its index
            if 0 <= src < n:
                sent = ends[src]
                starved_s += overlap(gap0, min(gap1, sent), lo, hi)
        idle.append(idle_s / span)
        starved.append(starved_s / span)
    deliver, late = [], []
    for j in range(skip, n):
        w, k = j % num_workers, j // num_workers
        if k >= len(workers[w]):
            break
        done = workers[w][k][1]
        ready = max(done, starts[j])
        deliver.append(ends[j] - ready)
        late.append(done > starts[j])
    nb = len(deliver)
    return {
        "window_s": span,
        "worker_busy": sum(busy) / num_workers,
        "worker_idle": sum(idle) / num_workers,
        "worker_index_starved": sum(starved) / num_workers,
        "busy_by_worker": [round(b, 3) for b in busy],
        "spread": worker_spread(per_worker_durations),
        "core_wander": core_wander(durations),
        "delivery_s": summarize(deliver) if deliver else None,
        "steps_waiting_on_a_worker": (sum(late) / nb) if nb else None,
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", help="harness output with --timeline")
    a = ap.parse_args(argv)
    doc = json.load(open(a.cases))
    rows: List[str] = []
    for c in doc.get("cases") or []:
        tl = (c.get("measured") or {}).get("timeline")
        k = c.get("knobs") or {}
        if not tl or k.get("epochs", 1) > 1:
            continue
        r = analyse(tl, int(k["num_workers"]), int(k["prefetch_factor"]))
        if r is None:
            continue
        d = r["delivery_s"] or {}
        rows.append(f"{c['id'][:58]:58s} {c['measured']['throughput_samples_per_s']:6.0f}  busy {r['worker_busy']*100:5.1f}%"
                    f"  idle {r['worker_idle']*100:5.1f}% (index-starved {r['worker_index_starved']*100:5.1f}%)"
                    f"  delivery p50 {(d.get('p50') or 0)*1e3:6.1f} ms p90 {(d.get('p90') or 0)*1e3:6.1f} ms"
                    f"  steps waiting on a worker {r['steps_waiting_on_a_worker']*100:4.0f}%"
                    f"  per worker {r['busy_by_worker']}"
                    + (f"  worker spread cv {r['spread']['worker_spread_cv']:.3f} (raw {r['spread']['worker_spread_cv_raw']:.3f})"
                       if r["spread"] else "")
                    + (f"  wander cv {r['core_wander']['cv']:.3f}, lag-one {r['core_wander']['lag_one_autocorrelation']:.2f}"
                       f" -> {r['core_wander']['correlation_s'] or 0:.2f} s" if r["core_wander"] else ""))
    print("\n".join(rows) if rows else "no case with a timeline (run harness.py with --timeline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
