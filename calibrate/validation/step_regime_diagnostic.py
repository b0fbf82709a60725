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
"""
import argparse
import bisect
import math
import os
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


def ratio_pairs(rows: Sequence[Dict], knobs: Dict) -> List[Tuple[float, float]]:
    """(measured, simulated) p90/mean step of the rows whose knobs match every given knob."""
    out = []
    for row in rows:
        p, m, k = row.get("pipeplan") or {}, row.get("measured") or {}, row.get("knobs") or {}
        if any(k.get(name) != want for name, want in knobs.items()):
            continue
        try:
            out.append((m["step_p90_s"] / m["step_mean_s"], p["step_p90_s"] / p["step_mean_s"]))
        except (KeyError, TypeError, ZeroDivisionError):
            continue
    return out


def load_report(directory: str) -> Optional[Dict]:
    """The pooled report, report.json or its .gz (convert.read_json); None where neither is there."""
    path = os.path.join(directory, "report.json")
    if not os.path.exists(path) and not os.path.exists(path + ".gz"):
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
    a = ap.parse_args(argv)
    knobs = {"kind": a.kind, "batch_size": a.batch_size, "num_workers": a.workers, "pin_memory": bool(a.pin),
             "storage": a.storage}
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
