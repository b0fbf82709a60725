#!/usr/bin/env python3
"""Diagnostic: the shape of the workers' speed wander that one cv and one correlation time leave out.

The simulator's wander (sim/simulation.cpp CoreWander) is a lognormal deviation with one time scale: its log speed
is symmetric (as far above its median at p90 as below at p10) and its autocorrelation after k batches is r1^k. For
each case with a worker timeline (harness --timeline) this reads its workers' batch times as
timeline_analysis.wander_shape does (log speed less each worker's mean, pooled; each worker's first batch left out,
a start-up) and reports, by data kind, worker count and batch size, the medians over the cases of:
  * r1, r2, r4: the autocorrelation after 1, 2 and 4 batches, and r1^4 (what one time scale gives for r4);
  * fast / slow: p90 - median and median - p10 of the log speed, and the share of cases with fast > slow;
and, for the cases whose probes carry the same figures (harness since run 58's session, `components.probe.wander`),
the probes' medians beside: what a prediction could take them from.
Straggler families (slow_worker*) are left out: their slow worker is slow by design.

    python3 calibrate/validation/wander_shape_diagnostic.py [RESULTS_DIR ...]

Without RESULTS_DIR it reads every call in calibrate/validation/table_calls.txt (calls without timelines add
nothing). Missing or unreadable input: one line, exit 2.
"""
import argparse
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402  (table_call_dirs: the readers the other diagnostics share)
import probe_window_diagnostic  # noqa: E402  (read_calls, worker_group)
import timeline_analysis  # noqa: E402  (wander_shape)

FIGURES = ("r1", "r2", "r4", "fast", "slow")


def case_shape(case: Dict[str, Any]) -> Optional[Dict[str, Optional[float]]]:
    """One case's timeline -> {"r1", "r2", "r4", "fast", "slow"} (wander_shape of its workers' batch walls, each
    worker's first batch left out), or None without a worker timeline."""
    workers = ((case.get("measured") or {}).get("timeline") or {}).get("workers") or {}
    durations = [[float(r[1]) - float(r[0]) for r in iv[1:] if float(r[1]) > float(r[0])] for iv in workers.values()]
    if sum(len(d) for d in durations) < 10:
        return None
    return flat_shape(timeline_analysis.wander_shape(durations))


def flat_shape(w: Dict[str, Any]) -> Dict[str, Optional[float]]:
    lags = w.get("autocorrelation_by_lag") or {}
    return {"r1": lags.get("1"), "r2": lags.get("2"), "r4": lags.get("4"),
            "fast": w.get("log_speed_fast_side"), "slow": w.get("log_speed_slow_side")}


def probe_shape(case: Dict[str, Any]) -> Optional[Dict[str, Optional[float]]]:
    """The mean of the probes' figures around the case (before and after), where they carry them; else None."""
    got = [flat_shape(w) for p in ("probe", "probe_after")
           for w in [((case.get("components") or {}).get(p) or {}).get("wander") or {}]
           if "autocorrelation_by_lag" in w]
    if not got:
        return None
    out: Dict[str, Optional[float]] = {}
    for f in FIGURES:
        v = [g[f] for g in got if g[f] is not None]
        out[f] = sum(v) / len(v) if v else None
    return out


def medians(rows: Sequence[Dict[str, Optional[float]]]) -> Dict[str, Optional[float]]:
    out: Dict[str, Optional[float]] = {}
    for f in FIGURES:
        v = [r[f] for r in rows if r.get(f) is not None]
        out[f] = statistics.median(v) if v else None
    sides = [r for r in rows if r.get("fast") is not None and r.get("slow") is not None]
    out["fast_skewed"] = sum(r["fast"] > r["slow"] for r in sides) / len(sides) if sides else None
    return out


def fmt(x: Optional[float], spec: str = "5.2f") -> str:
    return format(x, spec) if x is not None else "  n/a"


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="*", help="call folders (default: table_calls.txt's)")
    a = ap.parse_args(argv)
    dirs = a.results or convert.table_call_dirs(os.path.join(HERE, "table_calls.txt"))
    calls = probe_window_diagnostic.read_calls(dirs, "wander_shape_diagnostic")
    if calls is None:
        return 2
    docs = [doc for _, doc in calls]
    cases: Dict[Tuple[str, str, int], List[Dict[str, Optional[float]]]] = {}
    probes: Dict[Tuple[str, str, int], List[Dict[str, Optional[float]]]] = {}
    for doc in docs:
        for case in doc.get("cases", []):
            if "slow_worker" in str(case.get("family", "")) or case.get("status", "ok") != "ok":
                continue
            k = case.get("knobs") or {}
            nw = int(k.get("num_workers") or 0)
            shape = case_shape(case) if nw >= 2 else None
            if shape is None:
                continue
            key = ("image" if k.get("kind") == "image" else "other", probe_window_diagnostic.worker_group(nw),
                   int(k.get("batch_size") or 0))
            cases.setdefault(key, []).append(shape)
            p = probe_shape(case)
            if p is not None:
                probes.setdefault(key, []).append(p)
    if not cases:
        print("wander_shape_diagnostic: no case with a worker timeline in the calls given", file=sys.stderr)
        return 2
    print("kind   workers batch cases |    r1    r2    r4 r1^4 | fast  slow fast>slow | probes: n    r1    r4  fast  slow")
    for key in sorted(cases):
        m = medians(cases[key])
        r14 = m["r1"] ** 4 if m["r1"] is not None else None
        line = (f"{key[0]:6s} {key[1]:>7s} {key[2]:5d} {len(cases[key]):5d} | {fmt(m['r1'])} {fmt(m['r2'])} "
                f"{fmt(m['r4'])} {fmt(r14, '4.2f')} | {fmt(m['fast'], '5.3f')} {fmt(m['slow'], '5.3f')} "
                f"{fmt(100 * m['fast_skewed'] if m['fast_skewed'] is not None else None, '8.0f')}%")
        if key in probes:
            p = medians(probes[key])
            line += (f" | {len(probes[key]):8d} {fmt(p['r1'])} {fmt(p['r4'])} {fmt(p['fast'], '5.3f')} "
                     f"{fmt(p['slow'], '5.3f')}")
        print(line)
    print("a lognormal wander with one time scale (the simulator's) has fast = slow and r4 = r1^4")
    return 0


if __name__ == "__main__":
    sys.exit(main())
