#!/usr/bin/env python3
"""Diagnostic: does the pin-bound loader's out-of-order share follow the workers' batch-time spread, as the simulator
is given it and as the case drew it? (validation.md Next, "Run 61 ... found what sets the pin-bound p90 step", item 4.)

In a pin-bound in-order loader (8 workers, one pin thread) the loop sends an index each time it returns a batch, so
consecutive indices go out about one step apart; the later one overtakes the earlier when its worker's batch time is
shorter by more than that step. How often that happens (the out-of-order share) sets the p90 step: each overtake costs
the loop a long step (it waits two pin periods) and then a short one. So the share should follow the workers' batch
time spread over the mean step. The simulator is given the spread by the probes around the case (their wander cv x
their batch time, `components.probe` / `probe_after`), the case draws its own (read off its --timeline: the sd of every
worker batch's wall after the measured window opens).

For the table's cases of one pipeline (default: pinned tensor_f32, 8 workers, batch 64, the 5 ms GEMM step, in the
pin_memory_tensor, non_blocking_stream and sync_every families) this bins the cases by each spread over the case's
mean step and prints, per bin, the measured and simulated out-of-order shares and the p90 step's signed error; and
the correlations: the case's spread against the probes', the p90 step error against the share's miss. Binned by the
probes' spread (what the model is given) a right mechanism shows simulated = measured and no lean; binned by the
case's own, the measured share moves with it and the simulated one cannot. It also fits each share against its own
driver (simulated against the probes' spread, measured against the case's): a right sensitivity gives the same line.
Last, over every such case with the in-situ batch busy (no timeline needed), the p90 step error binned by how far the
case's batch-time sd moved from its probes', read the same way on both sides (`busy_sd_move`). Reads the generated table's report (run
`bash calibrate/validation/table.sh` first). Not a prediction: the case's spread is its own. Usage:

    python3 calibrate/validation/spread_diagnostic.py [--report calibrate/validation/results/table-report/report.json.gz]
        [--calls calibrate/validation/table_calls.txt] [--kind tensor_f32] [--workers 8] [--batch-size 64] [--step mm:5]
"""
import argparse
import os
import statistics
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
from pin_drift_diagnostic import call_tags, pearson  # noqa: E402
from timeline_analysis import least_squares_line  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = ("pin_memory_tensor", "non_blocking_stream", "sync_every")
# bins of (batch-time sd / mean step); run 61's pinned tensor cases span about 0.3-0.6
EDGES = (0.0, 0.3, 0.4, 0.5, 0.6, 0.8, float("inf"))
MIN_BATCHES = 50


def case_batch_sd_s(timeline: Dict[str, Any]) -> Optional[float]:
    """Pure: the population sd of every worker batch's wall (collate end less index received) that began after the
    measured window opened (the loop's batch `skip` in hand), all workers pooled; None with fewer than MIN_BATCHES."""
    try:
        t0 = float(timeline["main"]["next_end"][int(timeline["skip"])])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    walls = [float(b) - float(a) for ivs in (timeline.get("workers") or {}).values() for a, b in ivs if float(a) > t0]
    return statistics.pstdev(walls) if len(walls) >= MIN_BATCHES else None


def probe_batch_sd_s(components: Dict[str, Any]) -> Optional[float]:
    """Pure: the batch-time sd the simulator is given, the mean over the probes around the case of their wander cv x
    their batch time (convert feeds both to `cpu.core_speed_cv`); None without a probe that has them."""
    sds = []
    for name in ("probe", "probe_after"):
        w = (components.get(name) or {}).get("wander") or {}
        if w.get("cv") is not None and w.get("batch_s") is not None:
            sds.append(float(w["cv"]) * float(w["batch_s"]))
    return statistics.fmean(sds) if sds else None


def busy_sd_move(case: Dict[str, Any]) -> Optional[float]:
    """Pure: how far the case's batch-time sd moved from its probes', read the same way on both sides (no timeline
    needed): the in-situ batch busy sd (`measured.in_situ` batch_busy_s x batch_busy_cv, a batch's getitem calls plus
    its collate, over the whole window) over the mean of the probes' own, less one; None without them. (The probes'
    wander cv that the simulator takes is a different reading of the same spread, so it is not the base here.)"""
    ins = (case.get("measured") or {}).get("in_situ") or {}
    if not ins.get("batch_busy_cv") or not ins.get("batch_busy_s"):
        return None
    around = [float(c["batch_busy_cv"]) * float(c["batch_busy_s"])
              for c in ((case.get("components") or {}).get(n) or {} for n in ("probe", "probe_after"))
              if c.get("batch_busy_cv") and c.get("batch_busy_s")]
    if not around or statistics.fmean(around) <= 0:
        return None
    return float(ins["batch_busy_cv"]) * float(ins["batch_busy_s"]) / statistics.fmean(around) - 1.0


MOVE_EDGES = (-float("inf"), -0.2, -0.1, 0.0, 0.1, 0.2, float("inf"))


def move_table(moves: Sequence[Tuple[float, float]], edges: Sequence[float] = MOVE_EDGES) -> List[Dict[str, Any]]:
    """Pure: over (spread move, p90 step error) pairs, per bin of the move (empty bins left out): n and the error's
    signed median."""
    return [{"lo": lo, "hi": hi, "n": len(inside), "p90_err": statistics.median(e for _, e in inside)}
            for (lo, hi), inside in binned(moves, lambda pair: pair[0], edges)]


def move_label(lo: float, hi: float) -> str:
    """Pure: a move bin's label in percent ("below -20%", "-10% to +0%", "+20% and more")."""
    if lo == -float("inf"):
        return f"below {hi * 100:+.0f}%"
    if hi == float("inf"):
        return f"{lo * 100:+.0f}% and more"
    return f"{lo * 100:+.0f}% to {hi * 100:+.0f}%"


def bin_of(value: float, edges: Sequence[float] = EDGES) -> Tuple[float, float]:
    """Pure: the [lo, hi) bin of edges that holds value (the last bin when beyond)."""
    for lo, hi in zip(edges, edges[1:]):
        if lo <= value < hi:
            return lo, hi
    return edges[-2], edges[-1]


def binned(items: Sequence[Any], value: Callable[[Any], float], edges: Sequence[float]
           ) -> List[Tuple[Tuple[float, float], List[Any]]]:
    """Pure: the items grouped by the bin_of edges their value falls in, low to high, empty bins left out."""
    groups: Dict[Tuple[float, float], List[Any]] = {}
    for item in items:
        groups.setdefault(bin_of(value(item), edges), []).append(item)
    return sorted(groups.items())


def bin_table(points: Sequence[Dict[str, float]], key: str, edges: Sequence[float] = EDGES
              ) -> List[Dict[str, Any]]:
    """Pure: per bin of points[key] (low to high, empty bins left out): n, the median measured and simulated
    out-of-order shares and the p90 step's signed median error."""
    return [{"lo": lo, "hi": hi, "n": len(inside),
             "measured_share": statistics.median(p["measured_share"] for p in inside),
             "simulated_share": statistics.median(p["simulated_share"] for p in inside),
             "p90_err": statistics.median(p["p90_err"] for p in inside)}
            for (lo, hi), inside in binned(points, lambda p: p[key], edges)]


def point(case: Dict[str, Any], row: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """Pure: one case's readings, or None where one is missing: the two spreads over its mean step, its measured and
    simulated out-of-order shares and its p90 step's error."""
    m, p = row.get("measured") or {}, row.get("pipeplan") or {}
    step_s = m.get("step_mean_s")
    timeline = (case.get("measured") or {}).get("timeline")
    if not timeline or not step_s or step_s <= 0:
        return None
    case_sd, probe_sd = case_batch_sd_s(timeline), probe_batch_sd_s(case.get("components") or {})
    values = (m.get("out_of_order_fraction"), p.get("out_of_order_fraction"), p.get("step_p90_err"))
    if case_sd is None or probe_sd is None or any(v is None for v in values):
        return None
    return {"case_spread": case_sd / step_s, "probe_spread": probe_sd / step_s, "measured_share": float(values[0]),
            "simulated_share": float(values[1]), "p90_err": float(values[2])}


def share_line(points: Sequence[Dict[str, float]], spread_key: str, share_key: str) -> Optional[Tuple[float, float]]:
    """Pure: (slope, intercept) of the least-squares line of points[share_key] on points[spread_key]; None with
    fewer than 3 points or no spread. Each share set against its own driver (the simulated one against the probes'
    spread it is given, the measured one against the case's own) says whether the model's sensitivity is right,
    free of the probes' miss of the case."""
    fit = least_squares_line([p[spread_key] for p in points], [p[share_key] for p in points], 3)
    if fit is None:
        return None
    mean_x, mean_y, slope = fit
    return slope, mean_y - slope * mean_x


def matches(row: Dict[str, Any], kind: str, workers: int, batch_size: int, step: str) -> bool:
    """Pure: a pinned case of the pipeline asked for, in one of the pin-bound in-order families."""
    k = row.get("knobs") or {}
    return (str(row.get("family", "")).split(":")[-1] in FAMILIES and bool(k.get("pin_memory")) and k.get("kind") == kind
            and k.get("num_workers") == workers and k.get("batch_size") == batch_size and k.get("step") == step)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", default=os.path.join(HERE, "results", "table-report", "report.json.gz"))
    ap.add_argument("--calls", default=os.path.join(HERE, "table_calls.txt"))
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--kind", default="tensor_f32")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--step", default="mm:5")
    a = ap.parse_args(argv)
    report = convert.read_table_report(a.report, "spread_diagnostic")
    if report is None:
        return 2
    rows = {r["id"]: r for r in report["rows"] if isinstance(r, dict) and "id" in r}
    points, moves = [], []
    for name, tag in call_tags(a.calls).items():
        for case in (convert.read_call_json(os.path.join(a.results, name), "cases.json") or {}).get("cases") or []:
            row = rows.get(f"{tag}:{case.get('id', '')}")
            if row and matches(row, a.kind, a.workers, a.batch_size, a.step):
                got = point(case, row)
                if got:
                    points.append(got)
                move, err = busy_sd_move(case), (row.get("pipeplan") or {}).get("step_p90_err")
                if move is not None and err is not None:
                    moves.append((move, float(err)))
    if len(points) < 3:
        print(f"spread_diagnostic: {len(points)} case(s) of that pipeline with a timeline; nothing to compare")
        return 0
    print(f"{len(points)} cases ({a.kind}, {a.workers} workers, batch {a.batch_size}, {a.step}, pinned; "
          f"{', '.join(FAMILIES)}) with a timeline")
    print(f"the case's batch-time sd against its probes' (each over the mean step): correlation "
          f"{pearson([p['case_spread'] for p in points], [p['probe_spread'] for p in points]):.2f}")
    print(f"the p90 step's error against the out-of-order share's miss (measured less simulated): correlation "
          f"{pearson([p['measured_share'] - p['simulated_share'] for p in points], [p['p90_err'] for p in points]):.2f}")
    for share, spread, label in (("simulated_share", "probe_spread", "simulated against the probes' spread it is given"),
                                 ("measured_share", "case_spread", "measured against the case's own spread")):
        line = share_line(points, spread, share)
        if line:
            print(f"the out-of-order share {label}: slope {line[0]:.3f}, intercept {line[1]:+.3f} (least squares)")
    for key, label in (("probe_spread", "the probes' spread (what the simulator is given)"),
                       ("case_spread", "the case's own spread")):
        print(f"binned by {label}, sd / mean step:")
        for b in bin_table(points, key):
            print(f"  {b['lo']:.1f}-{b['hi']:.1f}: {b['n']:4d} cases; out-of-order share measured "
                  f"{b['measured_share']:.3f}, simulated {b['simulated_share']:.3f}; p90 step error "
                  f"{b['p90_err'] * 100:+.1f}% signed median")
    if len(moves) >= 3:
        print(f"the case's batch-time sd over its probes', the same reading both sides (in-situ and probe batch busy), "
              f"{len(moves)} cases: the p90 step error against it less one, correlation "
              f"{pearson([m for m, _ in moves], [e for _, e in moves]):.2f}; binned:")
        for b in move_table(moves):
            print(f"  {move_label(b['lo'], b['hi']):>16}: {b['n']:4d} cases; p90 step error "
                  f"{b['p90_err'] * 100:+.1f}% signed median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
