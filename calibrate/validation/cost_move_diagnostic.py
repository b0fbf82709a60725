#!/usr/bin/env python3
"""Diagnostic: how much of the table's throughput tail is the bottleneck's own cost moving between its probes and
the case (validation-runs.md run 75, finding 3, over the whole table).

convert predicts a case from probes taken right before and right after it (1.5-4 s windows at the case's worker
count): the workers' load a sample (`components.probe` / `probe_after`, `getitem_wall_s`) and the pin thread's CPU a
batch (`pin_thread_cpu_s_per_batch`), and an unpinned batch's .to() copy from its case-like windows around it. The
harness also counted each inside the case (`measured.in_situ`, `measured.copy_call_s`). Where the simulated
bottleneck is that stage, a case whose cost ran 1.1x its probes' mean runs about 10% below the prediction, so the
error should follow (ratio - 1). For each group (cases whose simulated bottleneck stage is `workers` and whose
measured class is input; cases whose stage is `pin_thread`; unpinned cases whose stage is `h2d_copy`; unpinned cases
the measurement calls host-bound whose stage is the loop's own thread, `main_receive` or `host_loop`, read as the
whole loop a step: next(), launches with the .to(), release) this prints the correlation, the error and the error
less (ratio - 1), and how many of the table's cases beyond --threshold come within it once the move is taken out.

Not a prediction: the in-situ reading is the case's own. It says where the error comes from: a small residual with
an unbiased ratio is the machine moving between a probe and the case (run 75: one case measured three times in 25
minutes moved 13-34%), not the model. Reads the generated table's report (run `bash calibrate/validation/table.sh`
first), so it scores what docs/validation.md shows. Usage:

    python3 calibrate/validation/cost_move_diagnostic.py \
        [--report calibrate/validation/results/table-report/report.json.gz] \
        [--calls calibrate/validation/table_calls.txt] [--threshold 0.12]
"""
import argparse
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
from pin_drift_diagnostic import call_tags, pearson, pin_thread_ratio  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def load_ratio(case: Dict[str, Any]) -> Optional[float]:
    """The workers' load a sample inside the case (in-situ getitem wall) over the mean of its probes before and after;
    None for an inline loader, probes at another worker count, or a missing reading."""
    comps = case.get("components") or {}
    before, after = comps.get("probe") or {}, comps.get("probe_after") or {}
    in_case = (((case.get("measured") or {}).get("in_situ")) or {}).get("getitem_wall_s")
    if not before.get("workers") or before.get("workers") != after.get("workers"):
        return None
    b, a = before.get("getitem_wall_s"), after.get("getitem_wall_s")
    if not (in_case and b and a):
        return None
    return float(in_case) / ((float(b) + float(a)) / 2.0)


def copy_ratio(case: Dict[str, Any]) -> Optional[float]:
    """An unpinned case's .to() call a step inside the case (`measured.copy_call_s`) over the copy of its case-like
    windows right before and after it (convert.unpinned_window_bracket, what convert predicts the copy from); None
    for a pinned case or a missing reading."""
    if (case.get("knobs") or {}).get("pin_memory"):
        return None
    in_case = (((case.get("measured") or {}).get("copy_call_s")) or {}).get("mean")
    win = convert.unpinned_window_bracket(case.get("components") or {})
    around = ((win or {}).get(convert.UNPINNED_LOOP_WINDOWS[0][0]) or {}).get("mean")
    if not (in_case and around):
        return None
    return float(in_case) / float(around)


# An unpinned host-bound loop's step, both ways: the case's next(), its launches with the .to() inside them
# (`loop_host_s`) and the batch's release a step, against its case-like windows' next(), copy, the rest of the host
# step and release (timed apart there)
UNPINNED_LOOP_CASE_KEYS = ("data_wait_s", "loop_host_s", "release_s")
UNPINNED_LOOP_WINDOW_KEYS = (convert.UNPINNED_NEXT_KEY,) + convert.UNPINNED_LOOP_WINDOWS[0]


def unpinned_loop_ratio(case: Dict[str, Any]) -> Optional[float]:
    """An unpinned case's loop a step inside the case (next() + launches with the .to() + release) over the same
    four of its case-like windows right before and after it (the mean of those that have all four; the windows'
    next() since run 26's plan); None for a pinned case or a missing reading. Where the simulator names the loop's
    own thread (main_receive, host_loop) this is the bottleneck's cost: the copy and the release, most of the step,
    are page-fault work that moves with the machine."""
    if (case.get("knobs") or {}).get("pin_memory"):
        return None
    in_case_s = _sum_of(case.get("measured") or {}, UNPINNED_LOOP_CASE_KEYS)
    comps = case.get("components") or {}
    around_s = [s for s in (_sum_of(comps.get(name) or {}, UNPINNED_LOOP_WINDOW_KEYS)
                            for name in ("unpinned_window", "unpinned_window_after")) if s is not None]
    if in_case_s is None or not around_s:
        return None
    return in_case_s / (sum(around_s) / len(around_s))


def _sum_of(readings: Dict[str, Any], keys: Sequence[str]) -> Optional[float]:
    """The sum of the readings' means under keys; None unless every one is there and positive."""
    values = [convert.positive_mean(readings.get(k)) for k in keys]
    return sum(values) if all(v is not None for v in values) else None


def cost_move(case: Dict[str, Any], row: Dict[str, Any]) -> Optional[Tuple[str, float]]:
    """(group, ratio) of a scored case whose bottleneck's cost the harness read both ways: 'workers' where the
    simulator names the workers and the measurement says input, 'pin_thread' where it names the pin thread,
    'h2d_copy' where it names the copy of an unpinned batch, 'unpinned_loop' where it names the loop's own thread
    (main_receive, host_loop) of an unpinned case the measurement calls host-bound; None otherwise (a pinned loop's
    host time has no reading of the same thing on both sides yet: validation.md Next)."""
    stage = (row.get("pipeplan") or {}).get("bottleneck_stage")
    if stage == "h2d_copy":
        ratio = copy_ratio(case)
        return None if ratio is None else ("h2d_copy", ratio)
    if stage == "workers" and (row.get("measured") or {}).get("bottleneck") == "input":
        ratio = load_ratio(case)
        return None if ratio is None else ("workers", ratio)
    if stage == "pin_thread":
        ratio = pin_thread_ratio(case)
        return None if ratio is None else ("pin_thread", ratio)
    if stage in ("main_receive", "host_loop") and (row.get("measured") or {}).get("bottleneck") == "host":
        ratio = unpinned_loop_ratio(case)
        return None if ratio is None else ("unpinned_loop", ratio)
    return None


def p90(values: Sequence[float]) -> float:
    """The 90th percentile, linear between ranks (convert.percentile: the table's summary's own)."""
    return convert.percentile(values, 0.9)


def group_summary(pairs: Sequence[Tuple[float, float]], threshold: float) -> Dict[str, Any]:
    """Pure: over (ratio - 1, error) pairs: n, Pearson's correlation, the ratio's signed median, |error| and
    |error - (ratio - 1)| as median and p90, and of the cases beyond threshold how many the move brings within it."""
    moves = [m for m, _ in pairs]
    errs = [e for _, e in pairs]
    rest = [abs(e - m) for m, e in pairs]
    beyond = [(m, e) for m, e in pairs if abs(e) > threshold]
    return {"n": len(pairs), "correlation": pearson(moves, errs) if len(pairs) > 1 else float("nan"),
            "median_move": statistics.median(moves),
            "median_abs_err": statistics.median(abs(e) for e in errs), "p90_abs_err": p90([abs(e) for e in errs]),
            "median_abs_rest": statistics.median(rest), "p90_abs_rest": p90(rest),
            "beyond": len(beyond), "beyond_within_once_moved": sum(1 for m, e in beyond if abs(e - m) <= threshold)}


def p90_step_at_measured_rate(rows: Sequence[Dict[str, Any]]) -> Dict[str, Dict[str, float]]:
    """Pure: the p90 step's abs error as scored, and with the prediction's step put at the measured rate
    ((1 + step_p90_err) x (1 + throughput err) - 1: a case predicted 10% fast has its steps 10% short before its p90
    is compared), as median and p90, over the cases whose simulated p90 is on an edge (`step_p90_on_edge`) and the
    others. What the rate's move leaves of the p90 step's miss; a diagnostic."""
    out: Dict[str, Dict[str, float]] = {}
    for name, on_edge in (("not_on_edge", False), ("on_edge", True)):
        pairs = [(p["step_p90_err"], p["err"]) for p in ((r.get("pipeplan") or {}) for r in rows)
                 if p.get("step_p90_err") is not None and p.get("err") is not None
                 and bool(p.get("step_p90_on_edge")) == on_edge]
        if not pairs:
            continue
        scored = [abs(e) for e, _ in pairs]
        at_rate = [abs((1 + e) * (1 + t) - 1) for e, t in pairs]
        out[name] = {"n": len(pairs), "median": statistics.median(scored), "p90": p90(scored),
                     "median_at_rate": statistics.median(at_rate), "p90_at_rate": p90(at_rate)}
    return out


def collect(report: Dict[str, Any], calls_path: str, results_dir: str) -> Dict[str, List[Tuple[float, float]]]:
    """Each table call's cases matched to the report's rows by their rN tag: group -> [(ratio - 1, error)]."""
    rows = {r["id"]: r for r in report.get("rows") or [] if (r.get("pipeplan") or {}).get("err") is not None}
    out: Dict[str, List[Tuple[float, float]]] = {"workers": [], "pin_thread": [], "h2d_copy": [], "unpinned_loop": []}
    for name, tag in call_tags(calls_path).items():
        # one line and exit 2 where a listed call's cases.json is missing or not JSON (convert.read_call_json)
        for case in (convert.read_call_json(os.path.join(results_dir, name), "cases.json") or {}).get("cases") or []:
            row = rows.get(f"{tag}:{case.get('id', '')}")
            got = cost_move(case, row) if row else None
            if got:
                out[got[0]].append((got[1] - 1.0, float(row["pipeplan"]["err"])))
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", default=os.path.join(HERE, "results", "table-report", "report.json.gz"))
    ap.add_argument("--calls", default=os.path.join(HERE, "table_calls.txt"))
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--threshold", type=float, default=0.12)
    a = ap.parse_args(argv)
    report = convert.read_table_report(a.report, "cost_move_diagnostic")
    if report is None:
        return 2
    groups = collect(report, a.calls, a.results)
    total_beyond = sum(1 for r in report["rows"] if abs((r.get("pipeplan") or {}).get("err") or 0) > a.threshold)
    explained = 0
    for name, pairs in groups.items():
        if not pairs:
            print(f"{name}: no case")
            continue
        s = group_summary(pairs, a.threshold)
        explained += s["beyond_within_once_moved"]
        print(f"{name}-bound: {s['n']} cases; error against (ratio - 1): correlation {s['correlation']:.2f}, the "
              f"ratio's median {s['median_move'] * 100:+.1f}%; |error| {s['median_abs_err'] * 100:.1f}% / "
              f"{s['p90_abs_err'] * 100:.1f}% (median / p90), less the move {s['median_abs_rest'] * 100:.1f}% / "
              f"{s['p90_abs_rest'] * 100:.1f}%; {s['beyond']} beyond {a.threshold * 100:.0f}%, "
              f"{s['beyond_within_once_moved']} of them within it once the move is taken out")
    for name, f in p90_step_at_measured_rate(report["rows"]).items():
        print(f"p90 step, {name.replace('_', ' ')} ({f['n']} cases): {f['median'] * 100:.1f}% / {f['p90'] * 100:.1f}% "
              f"(median / p90 abs error); with the predicted step put at the measured rate "
              f"{f['median_at_rate'] * 100:.1f}% / {f['p90_at_rate'] * 100:.1f}%")
    print(f"the table: {total_beyond} cases beyond {a.threshold * 100:.0f}%; {explained} of them are bound by the "
          f"workers, the pin thread, an unpinned copy or an unpinned loop and come within it with their cost's move "
          f"from their probes taken out (a diagnostic, not a prediction)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
