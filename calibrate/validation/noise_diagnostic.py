#!/usr/bin/env python3
"""Diagnostic: where the ground truth's noise comes from, and whether longer cases would shrink it.

A setting measured more than once in a call (a repeat, harness --rounds) measures a different throughput each
time. Two things can make it so:
  * the wander inside a case (cores and the pin thread speeding up and slowing down for tenths of a second to
    seconds): a longer case averages more of it, so its share of a case mean's spread falls with the length;
  * drift between cases (the machine in another state tens of seconds later): no case length averages it out;
    only inputs measured next to each case (convert's bracketing probes) can follow it.
From each case's timeline (harness --timeline: the step each batch was dropped) this cuts the measured window
into windows of `window_s`, takes the cv of their throughputs, and scales it to the case's length as if the
wander were uncorrelated beyond one window (a lower bound where it correlates for longer). Per repeated
setting, the repeats' observed cv against that figure gives the drift between cases, sqrt(observed^2 -
within^2). Usage:

    python3 calibrate/validation/noise_diagnostic.py [RESULTS_DIR ...] [--window-s 1] [--calls FILE] [--report R]

With --report (convert's report.json of the same calls, e.g. results/table-report/report.json) it also says how
far the predictions, each from its own case's bracketing probes, move with the drift between repeats.

Without RESULTS_DIR it reads every call listed in calibrate/validation/table_calls.txt (the generated table's).
"""
import argparse
import collections
import json
import math
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def window_throughputs(done_s: Sequence[float], batch_size: int, window_s: float) -> List[float]:
    """Samples/s in each whole window of `window_s` from the first completion on: the completions (one batch
    each) counted in [start + i*window_s, start + (i+1)*window_s). The last, partial window is left out."""
    t = sorted(float(x) for x in done_s)
    if len(t) < 2 or window_s <= 0:
        return []
    start = t[0]
    n_windows = int((t[-1] - start) // window_s)
    counts = [0] * n_windows
    for x in t:
        i = int((x - start) // window_s)
        if i < n_windows:
            counts[i] += 1
    return [c * batch_size / window_s for c in counts]


def sample_cv(values: Sequence[float]) -> Optional[float]:
    """Sample standard deviation (n - 1) over the mean; None with fewer than 2 values or a mean of 0."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean > 0 else None


def case_mean_cv_from_wander(window_cv: float, window_s: float, case_s: float) -> float:
    """The cv of a whole case's mean throughput that its own windows' spread implies, were the windows
    independent: window_cv * sqrt(window_s / case_s)."""
    return window_cv * math.sqrt(window_s / case_s)


def between_case_cv(observed_cv: float, within_cv: float) -> float:
    """The drift between cases: the part of the repeats' spread that the within-case wander does not explain,
    sqrt(observed^2 - within^2), 0 where the wander explains all of it."""
    return math.sqrt(max(0.0, observed_cv ** 2 - within_cv ** 2))


def projected_repeat_cv(between_cv: float, within_cv: float, length_factor: float) -> float:
    """The repeats' cv were each case `length_factor` times as long: the drift stays, the wander's part falls
    as 1/sqrt(length)."""
    return math.sqrt(between_cv ** 2 + within_cv ** 2 / length_factor)


def case_completions(case: Dict[str, Any]) -> Optional[List[float]]:
    """The measured window's batch completions from a case's timeline (the batch dropped; older timelines
    without `released` fall back to the sync, then to the batch in hand)."""
    timeline = (case.get("measured") or {}).get("timeline")
    if not timeline:
        return None
    main = timeline.get("main") or {}
    done = main.get("released") or main.get("synced") or main.get("next_end")
    if not done:
        return None
    return list(done[int(timeline.get("skip") or 0):])


def setting_rows(cases: Sequence[Dict[str, Any]], window_s: float) -> List[Dict[str, Any]]:
    """One row per setting measured at least twice with timelines: the repeats' observed cv, the within-case
    wander's cv of a case mean (root mean square over the repeats), the drift between cases."""
    groups: Dict[str, List[Tuple[float, float]]] = collections.defaultdict(list)
    for case in cases:
        if case.get("status") != "ok":
            continue
        done = case_completions(case)
        if not done or len(done) < 20:
            continue
        case_s = done[-1] - done[0]
        wcv = sample_cv(window_throughputs(done, int(case["knobs"]["batch_size"]), window_s))
        if wcv is None or case_s <= 0:
            continue
        thr = float(case["measured"]["throughput_samples_per_s"])
        groups[json.dumps(case["knobs"], sort_keys=True)].append((thr, case_mean_cv_from_wander(wcv, window_s, case_s)))
    rows = []
    for knobs, reps in groups.items():
        if len(reps) < 2:
            continue
        observed = sample_cv([r[0] for r in reps])
        if observed is None:
            continue
        within = math.sqrt(statistics.fmean(r[1] ** 2 for r in reps))
        rows.append({"knobs": json.loads(knobs), "repeats": len(reps), "observed_cv": observed,
                     "within_cv": within, "between_cv": between_case_cv(observed, within)})
    return rows


def drift_tracking(report_rows: Sequence[Dict[str, Any]]) -> Optional[Dict[str, float]]:
    """How far the predictions follow the drift between repeats: for each setting measured 2+ times in a call
    (rows of convert's report.json, ids "rN:..."), every repeat's measured and predicted throughput as a share
    above or below its setting's mean; their correlation, the root mean square of each and of their
    difference (what is left after the prediction's own move). None with no repeated setting."""
    groups: Dict[Tuple[str, str], List[Tuple[float, float]]] = collections.defaultdict(list)
    for row in report_rows:
        pred = (row.get("pipeplan") or {}).get("samples_per_s")
        meas = (row.get("measured") or {}).get("samples_per_s")
        if pred is None or meas is None:
            continue
        call = str(row.get("id", "")).split(":")[0]
        groups[(call, json.dumps(row.get("knobs"), sort_keys=True))].append((float(meas), float(pred)))
    dm: List[float] = []
    dp: List[float] = []
    for reps in groups.values():
        if len(reps) < 2:
            continue
        mean_m = statistics.fmean(m for m, _ in reps)
        mean_p = statistics.fmean(p for _, p in reps)
        for m, p in reps:
            dm.append(m / mean_m - 1.0)
            dp.append(p / mean_p - 1.0)
    if not dm:
        return None
    n = len(dm)
    ss_m, ss_p = sum(a * a for a in dm), sum(b * b for b in dp)
    corr = sum(a * b for a, b in zip(dm, dp)) / math.sqrt(ss_m * ss_p) if ss_m > 0 and ss_p > 0 else 0.0
    return {"cases": n, "correlation": corr, "measured_rms": math.sqrt(ss_m / n), "predicted_rms": math.sqrt(ss_p / n),
            "difference_rms": math.sqrt(sum((a - b) ** 2 for a, b in zip(dm, dp)) / n)}


def quantile(values: Sequence[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="*", help="result folders holding cases.json (or cases.json.gz)")
    ap.add_argument("--window-s", type=float, default=1.0, help="window for the within-case wander (default 1 s)")
    ap.add_argument("--report", help="convert's report.json of the same calls: how far the predictions follow "
                    "the drift between repeats")
    ap.add_argument("--calls", default=os.path.join(HERE, "table_calls.txt"),
                    help="calls to read when no RESULTS_DIR is given (default: the generated table's)")
    args = ap.parse_args(argv)
    if args.window_s <= 0:
        print(f"noise_diagnostic: --window-s {args.window_s}: expected a positive number of seconds", file=sys.stderr)
        return 2
    tracking = None
    if args.report:
        try:
            tracking = drift_tracking(convert.read_json(args.report).get("rows") or [])
        except (OSError, ValueError, AttributeError) as e:
            print(f"noise_diagnostic: {args.report}: cannot read a report's rows ({e})", file=sys.stderr)
            return 2
    dirs = list(args.results)
    if not dirs:
        try:
            dirs = convert.table_call_dirs(args.calls)
        except OSError as e:
            print(f"noise_diagnostic: {args.calls}: {e.strerror}", file=sys.stderr)
            return 2
    rows: List[Dict[str, Any]] = []
    for d in dirs:
        rows += setting_rows(convert.read_call_json(d, "cases.json").get("cases") or [], args.window_s)
    if not rows:
        print("noise_diagnostic: no setting was measured twice with timelines (harness --timeline)")
        return 0
    obs = [r["observed_cv"] for r in rows]
    within = [r["within_cv"] for r in rows]
    between = [r["between_cv"] for r in rows]
    ratio = [r["observed_cv"] / r["within_cv"] for r in rows if r["within_cv"] > 0]
    print(f"{len(rows)} settings measured 2+ times in a call, {len(dirs)} calls, windows of {args.window_s:g} s")
    print(f"repeats' throughput cv:            median {statistics.median(obs):.3f}, p90 {quantile(obs, 0.9):.3f}")
    print(f"from the wander inside each case:  median {statistics.median(within):.3f}, p90 {quantile(within, 0.9):.3f}")
    print(f"observed over wander:              median {statistics.median(ratio):.2f} "
          f"(p25 {quantile(ratio, 0.25):.2f}, p75 {quantile(ratio, 0.75):.2f})")
    print(f"drift between cases:               median {statistics.median(between):.3f}, p90 {quantile(between, 0.9):.3f}")
    for k in (2.0, 4.0):
        proj = [projected_repeat_cv(b, w, k) for b, w in zip(between, within)]
        print(f"repeats' cv with cases {k:g}x as long: median {statistics.median(proj):.3f}, p90 {quantile(proj, 0.9):.3f}")
    if args.report:
        if tracking:
            print(f"predictions against the drift ({tracking['cases']} repeats, each as a share off its setting's mean): "
                  f"correlation {tracking['correlation']:.2f}; rms measured {tracking['measured_rms']:.3f}, "
                  f"predicted {tracking['predicted_rms']:.3f}, their difference {tracking['difference_rms']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
