#!/usr/bin/env python3
"""Diagnostic: is the p90 step-time miss a regime the model picks wrong?

Run 53's look at the pooled table (validation.md "Next"): where the two halves of a case agree on the p90 step,
the p90 step error is still large both ways at a right mean, and the warm tensor_f32, batch 64, eight-worker pinned
cases have a measured p90/mean step that is bimodal across calls: a steady regime (every step waits about the same,
p90/mean near 1.1) and an alternating one (one step in a few waits about twice, near 1.9). This prints, for the
table's cases that match the given knobs, the histogram of the measured and the simulated p90/mean, their
correlation, and how often both fall on the same side of a split between the regimes.

    python3 calibrate/validation/step_regime_diagnostic.py [--report calibrate/validation/results/table-report]
        [--kind tensor_f32] [--batch-size 64] [--workers 8] [--pin 1] [--storage warm] [--split 1.5]

Reads report.json or report.json.gz (table.sh keeps it gzipped); runs no simulation.

With --timelines it reads instead the measured cases' worker timelines (harness --timeline) of the calls in
table_calls.txt that match the knobs, and prints what sets the regime (validation-runs.md run 54): how often a
batch finished after the one behind it (batch j is worker j mod W's, PyTorch's in-order round robin), the spread of
the workers' own mean batch times (a worker slow for the whole window) against the batches' spread inside one worker,
how well the two halves of the window agree on which workers are slow, and the best single threshold on the
period / total spread that tells the steady cases (p90/mean below 1.3) from the alternating ones (1.7 or more).
"""
import argparse
import bisect
import math
import os
import statistics
import sys
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
from pin_drift_diagnostic import pearson as _pearson  # noqa: E402

BIN_EDGES = (1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5)


def histogram(values: Sequence[float], edges: Sequence[float] = BIN_EDGES) -> List[int]:
    """Counts in [e0, e1), [e1, e2), ... and a last bin from the last edge up; values below e0 count in the first."""
    counts = [0] * len(edges)
    for v in values:
        counts[max(0, bisect.bisect_right(edges, v) - 1)] += 1
    return counts


def pearson(a: Sequence[float], b: Sequence[float]) -> Optional[float]:
    """Pearson's r (pin_drift_diagnostic's); None for under two points or no spread in either."""
    if len(a) < 2 or len(a) != len(b):
        return None
    r = _pearson(a, b)
    return None if math.isnan(r) else r


def same_regime_fraction(pairs: Sequence[Tuple[float, float]], split: float) -> Optional[float]:
    """Share of (measured, simulated) p90/mean pairs on the same side of split."""
    if not pairs:
        return None
    return sum(1 for m, s in pairs if (m >= split) == (s >= split)) / len(pairs)


def plain_loader(knobs: Dict) -> bool:
    """An in-order loader with no harness-made straggler (families slow_worker*, in_order): the regime question is
    about the loaders users run as they are."""
    return knobs.get("in_order", True) is not False and float(knobs.get("slow_worker_factor", 1.0)) == 1.0


def matching_rows(rows: Sequence[Dict], knobs: Dict):
    """(measured, pipeplan) of the plain-loader rows whose knobs match every given knob."""
    for row in rows:
        k = row.get("knobs") or {}
        if plain_loader(k) and all(k.get(name) == want for name, want in knobs.items()):
            yield row.get("measured") or {}, row.get("pipeplan") or {}


def ratio_pairs(rows: Sequence[Dict], knobs: Dict) -> List[Tuple[float, float]]:
    """(measured, simulated) p90/mean step of the rows whose knobs match every given knob."""
    out = []
    for m, p in matching_rows(rows, knobs):
        try:
            out.append((m["step_p90_s"] / m["step_mean_s"], p["step_p90_s"] / p["step_mean_s"]))
        except (KeyError, TypeError, ZeroDivisionError):
            continue
    return out


def overtaken_pairs(rows: Sequence[Dict], knobs: Dict) -> List[Tuple[float, float, float]]:
    """(measured, simulated share of batches overtaken, simulated p90/mean step) of the matching rows that have both
    shares (the report's out_of_order_fraction)."""
    out = []
    for m, p in matching_rows(rows, knobs):
        try:
            out.append((float(m["out_of_order_fraction"]), float(p["out_of_order_fraction"]),
                        p["step_p90_s"] / p["step_mean_s"]))
        except (KeyError, TypeError, ZeroDivisionError):
            continue
    return out


def batch_spans(workers: Dict[str, Sequence[Sequence[float]]], num_workers: int) -> List[Tuple[float, float]]:
    """(start, end) of batch j = 0, 1, ... in index order: worker j mod W's (j // W)-th span (an in-order loader's
    round robin), as far as every worker has one."""
    per = min(len(workers[str(w)]) for w in range(num_workers))
    return [tuple(workers[str(j % num_workers)][j // num_workers][:2]) for j in range(per * num_workers)]


def overtaken_fraction(spans: Sequence[Tuple[float, float]], lo: int, hi: int) -> Optional[float]:
    """Share of batches j in [lo, hi) that finished after batch j + 1: the main loop, in order, then waits for j and
    finds j + 1 ready (a long step, then a short one)."""
    hi = min(hi, len(spans) - 1)
    if hi <= lo:
        return None
    return sum(1 for j in range(lo, hi) if spans[j][1] > spans[j + 1][1]) / (hi - lo)


def worker_spread(spans: Sequence[Tuple[float, float]], num_workers: int, lo: int, hi: int
                  ) -> Optional[Tuple[float, float, float]]:
    """(sd of the workers' mean batch times, sd of all batch times about their worker's mean, mean batch time) over
    the batches [lo, hi): the first is a worker slow for the whole window, the second its batch-to-batch wander."""
    hi = min(hi, len(spans))
    per_worker = [[spans[j][1] - spans[j][0] for j in range(lo, hi) if j % num_workers == w] for w in range(num_workers)]
    if any(len(d) < 2 for d in per_worker):
        return None
    means = [sum(d) / len(d) for d in per_worker]
    grand = sum(means) / num_workers
    between = math.sqrt(sum((m - grand) ** 2 for m in means) / num_workers)
    within = math.sqrt(sum((x - m) ** 2 for d, m in zip(per_worker, means) for x in d) / sum(len(d) for d in per_worker))
    return between, within, grand


def best_threshold(values: Sequence[float], labels: Sequence[bool]) -> Optional[Tuple[float, float, bool]]:
    """(accuracy, threshold, below) of the one cut on values that best separates the labels: label True for values
    below the threshold when `below`, else for values at or above it. None without values."""
    if not values:
        return None
    best = None
    for cut in sorted(set(values)):
        for below in (True, False):
            hits = sum(1 for v, lab in zip(values, labels) if (v < cut if below else v >= cut) == lab)
            if best is None or hits > best[0]:
                best = (hits, cut, below)
    return best[0] / len(values), best[1], best[2]


def timeline_drivers(case: Dict) -> Optional[Dict[str, float]]:
    """The measured case's regime and its drivers from its timeline; None without one (or one-epoch loaders only)."""
    m, k = case.get("measured") or {}, case.get("knobs") or {}
    tl, nw = m.get("timeline"), int(k.get("num_workers", 0))
    if not tl or nw < 2 or not tl.get("workers") or int(k.get("epochs", 1) or 1) > 1:
        return None
    spans = batch_spans(tl["workers"], nw)
    lo, hi = int(tl["skip"]), min(len(spans), len(tl["main"]["next_start"]))
    sw, ooo = worker_spread(spans, nw, lo, hi), overtaken_fraction(spans, lo, hi)
    mid = (lo + hi) // 2
    first, second = worker_spread(spans, nw, lo, mid), worker_spread(spans, nw, mid, hi)
    if sw is None or ooo is None or first is None or second is None:
        return None
    halves = pearson(*[[sum(spans[j][1] - spans[j][0] for j in range(a, b) if j % nw == w)
                        / max(1, sum(1 for j in range(a, b) if j % nw == w)) for w in range(nw)]
                       for a, b in ((lo, mid), (mid, hi))])
    step = m["step_time_s"]
    between, within, _ = sw
    return {"p90_over_mean": step["p90"] / step["mean"], "overtaken": ooo, "between_s": between, "within_s": within,
            "step_s": step["mean"], "period_over_spread": step["mean"] / math.hypot(between, within),
            "halves_r": halves if halves is not None else float("nan")}


def print_timeline_drivers(here: str, knobs: Dict) -> int:
    calls = [l.strip() for l in open(os.path.join(here, "table_calls.txt")) if l.strip() and not l.startswith("#")]
    rows = []
    for call in calls:
        path = os.path.join(here, "results", call, "cases.json")
        if convert.stored_json_path(path) is None:
            continue
        for c in convert.read_json(path).get("cases", []):
            k = c.get("knobs") or {}
            if c.get("status") == "ok" and plain_loader(k) and all(k.get(n) == v for n, v in knobs.items()):
                d = timeline_drivers(c)
                if d is not None:
                    rows.append(d)
    print(f"{len(rows)} cases with a timeline and {knobs}")
    if len(rows) < 2:
        return 0
    r = pearson([d["overtaken"] for d in rows], [d["p90_over_mean"] for d in rows])
    print(f"p90/mean against batches overtaken: r {r:.2f}")
    for name, pick in (("steady (p90/mean < 1.3)", lambda d: d["p90_over_mean"] < 1.3),
                       ("alternating (>= 1.7)", lambda d: d["p90_over_mean"] >= 1.7)):
        g = [d for d in rows if pick(d)]
        if not g:
            continue
        med = lambda key: statistics.median(d[key] for d in g)  # noqa: E731
        halves = [d["halves_r"] for d in g if not math.isnan(d["halves_r"])]
        print(f"{name}: {len(g)} cases; medians: overtaken {med('overtaken'):.3f}, step {1e3 * med('step_s'):.1f} ms, "
              f"workers' means spread {1e3 * med('between_s'):.2f} ms, within a worker {1e3 * med('within_s'):.2f} ms, "
              f"halves agree on the slow workers r {statistics.median(halves) if halves else float('nan'):.2f}")
    both = [d for d in rows if d["p90_over_mean"] < 1.3 or d["p90_over_mean"] >= 1.7]
    for key, label in (("period_over_spread", "step / total batch spread"), ("step_s", "step alone")):
        acc = best_threshold([d[key] for d in both], [d["p90_over_mean"] >= 1.7 for d in both])
        if acc:
            print(f"one threshold on {label} tells the regimes apart in {acc[0]:.0%} of {len(both)} "
                  f"(alternating {'below' if acc[2] else 'from'} {acc[1]:.3g})")
    return 0


def load_report(directory: str) -> Optional[Dict]:
    """The pooled report, report.json or its .gz (convert.read_json); None where neither is there."""
    path = os.path.join(directory, "report.json")
    if convert.stored_json_path(path) is None:
        return None
    return convert.read_json(path)


def main(argv: Optional[Sequence[str]] = None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", default=os.path.join(here, "results", "table-report"))
    ap.add_argument("--kind", default="tensor_f32")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--pin", type=int, choices=(0, 1), default=1)
    ap.add_argument("--storage", default="warm")
    ap.add_argument("--split", type=float, default=1.5, help="p90/mean between the two regimes")
    ap.add_argument("--timelines", action="store_true",
                    help="read the measured cases' timelines (table_calls.txt) for what sets the regime")
    a = ap.parse_args(argv)
    knobs = {"kind": a.kind, "batch_size": a.batch_size, "num_workers": a.workers, "pin_memory": bool(a.pin),
             "storage": a.storage}
    if a.timelines:
        return print_timeline_drivers(here, knobs)
    report = load_report(a.report)
    if report is None:
        print(f"step_regime_diagnostic.py: no report.json(.gz) in {a.report} (run bash calibrate/validation/table.sh)",
              file=sys.stderr)
        return 2
    pairs = ratio_pairs(report["rows"], knobs)
    print(f"{len(pairs)} cases with {knobs}")
    if not pairs:
        return 0
    labels = [f"[{lo:g},{hi:g})" for lo, hi in zip(BIN_EDGES, BIN_EDGES[1:])] + [f">={BIN_EDGES[-1]:g}"]
    print("p90/mean step " + " ".join(f"{l:>10s}" for l in labels))
    print("measured      " + " ".join(f"{c:10d}" for c in histogram([m for m, _ in pairs])))
    print("simulated     " + " ".join(f"{c:10d}" for c in histogram([s for _, s in pairs])))
    r = pearson([m for m, _ in pairs], [s for _, s in pairs])
    print(f"correlation measured/simulated: {'n/a' if r is None else f'{r:.2f}'}; same side of {a.split:g}: "
          f"{same_regime_fraction(pairs, a.split):.0%}")
    over = overtaken_pairs(report["rows"], knobs)
    if len(over) >= 2:
        meas, sim = sorted(o[0] for o in over), sorted(o[1] for o in over)
        ten = lambda v: (v[int(0.1 * (len(v) - 1))], v[int(0.9 * (len(v) - 1))])  # noqa: E731
        r_sim = pearson([o[1] for o in over], [o[2] for o in over])
        r_ms = pearson([o[0] for o in over], [o[1] for o in over])
        print(f"batches overtaken over {len(over)} cases, 10th-90th percentile: measured {ten(meas)[0]:.1%}-"
              f"{ten(meas)[1]:.1%}, simulated {ten(sim)[0]:.1%}-{ten(sim)[1]:.1%}; simulated p90/mean against the "
              f"simulated share r {'n/a' if r_sim is None else f'{r_sim:.2f}'}; measured against simulated share "
              f"r {'n/a' if r_ms is None else f'{r_ms:.2f}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
