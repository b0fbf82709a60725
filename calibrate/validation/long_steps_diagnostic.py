#!/usr/bin/env python3
"""Diagnostic: where a case's long steps come from, read off its timeline (harness --timeline).

A step is long when the loop's time from one next() to the following one exceeds 1.5x the window's median step
(the simulator's own definition, sim/step_stats.hpp kLongStepOverMedian). When about a tenth of the steps are long the
p90 step lands on the short or on the long ones depending on that share (validation.md "Where it stands"). An in-order
loader hands batches out in index order and index i goes to worker i mod num_workers, so a long step caused by a
batch that a worker finished after the one behind it (out of order, `out_of_order_share`) falls on the same position
of the workers' round each time that worker is slow. Per case this prints the long steps' share, how many of them
the busiest position in the round holds (one in num_workers if they fell anywhere) and the most common gaps between
long steps (multiples of num_workers: the round); pooled, their medians. With --report (convert's report.json of
the same calls) it also pools the share of batches finished before the one ahead of them, measured against simulated
(validation-runs.md run 41, finding 6).

    python3 calibrate/validation/long_steps_diagnostic.py [RESULTS_DIR ...] [--kind tensor_f32] [--workers 8]
        [--step mm:5] [--pinned yes|no|any] [--report calibrate/validation/results/table-report/report.json]

Without RESULTS_DIR it reads every call listed in calibrate/validation/table_calls.txt. Nothing is simulated.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402
from timeline_analysis import LONG_STEP_OVER_MEDIAN, MIN_STEPS, long_step_anatomy, timeline_long_steps  # noqa: E402,F401


def case_matches(case: Dict[str, Any], kind: str, workers: int, step: str, pinned: str) -> bool:
    """Pure: whether a measured case is of the pipeline asked for (pinned: yes, no or any)."""
    k = case.get("knobs") or {}
    if k.get("kind") != kind or int(k.get("num_workers") or 0) != workers or k.get("step") != step:
        return False
    return pinned == "any" or bool(k.get("pin_memory")) == (pinned == "yes")


def case_anatomy(case: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """A case's long_step_anatomy from its timeline's measured window (its `skip` warm-up steps left out)."""
    return timeline_long_steps((case.get("measured") or {}).get("timeline") or {},
                               int((case.get("knobs") or {}).get("num_workers") or 0))


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="*", help="result folders holding cases.json (or cases.json.gz)")
    ap.add_argument("--kind", default="tensor_f32")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--step", default="mm:5")
    ap.add_argument("--pinned", choices=["yes", "no", "any"], default="yes")
    ap.add_argument("--report", help="convert's report.json of the same calls: the out-of-order share measured "
                    "against simulated, over the matching rows")
    ap.add_argument("--calls", default=os.path.join(HERE, "table_calls.txt"),
                    help="calls to read when no RESULTS_DIR is given (default: the generated table's)")
    args = ap.parse_args(argv)
    dirs = list(args.results)
    if not dirs:
        try:
            dirs = convert.table_call_dirs(args.calls)
        except OSError as e:
            print(f"long_steps_diagnostic: {args.calls}: {e.strerror}; expected the table's list of calls",
                  file=sys.stderr)
            return 2
    found: List[Dict[str, Any]] = []
    for d in dirs:
        for c in convert.read_call_json(d, "cases.json").get("cases") or []:
            if not case_matches(c, args.kind, args.workers, args.step, args.pinned):
                continue
            a = case_anatomy(c)
            if a is not None:
                found.append(dict(a, call=os.path.basename(os.path.normpath(d)), id=c.get("id", "?")))
    what = f"{args.kind}, {args.workers} workers, step {args.step}, pinned {args.pinned}"
    if not found:
        print(f"long_steps_diagnostic: no case of {what} with a timeline of {MIN_STEPS} steps or more")
        return 0
    print(f"{what}: long steps (over {LONG_STEP_OVER_MEDIAN}x the median step) per case")
    print(f"{'call':28s} {'case':44s} {'steps':>5s} {'long':>6s} {'top pos':>7s}  gaps (steps: count)")
    for a in found:
        top = "n/a" if a["top_position_share"] is None else f"{a['top_position_share']:.2f}"
        gaps = ", ".join(f"{g}: {n}" for g, n in a["gaps"])
        print(f"{a['call'][:28]:28s} {a['id'][:44]:44s} {a['steps']:5d} {a['long_share']:6.3f} {top:>7s}  {gaps}")
    shares = [a["long_share"] for a in found]
    tops = [a["top_position_share"] for a in found if a["top_position_share"] is not None]
    print(f"{len(found)} cases: long share median {statistics.median(shares):.3f} "
          f"(above 0.10 in {sum(1 for s in shares if s > 0.10)}); the busiest position of the round holds "
          + (f"{statistics.median(tops):.2f} of the long steps at median (1/{args.workers} if anywhere)"
             if tops else "n/a"))
    if args.report:
        try:
            rows = convert.read_json(args.report).get("rows") or []
        except (OSError, ValueError, AttributeError) as e:
            print(f"long_steps_diagnostic: {args.report}: cannot read a report's rows ({e})", file=sys.stderr)
            return 2
        pairs = [(r["measured"]["out_of_order_fraction"], r["pipeplan"]["out_of_order_fraction"]) for r in rows
                 if case_matches(r, args.kind, args.workers, args.step, args.pinned)
                 and (r.get("measured") or {}).get("out_of_order_fraction") is not None
                 and (r.get("pipeplan") or {}).get("out_of_order_fraction") is not None]
        if pairs:
            print(f"report: {len(pairs)} rows, batches finished before the one ahead of them: measured "
                  f"{statistics.median(m for m, _ in pairs):.3f} median, simulated "
                  f"{statistics.median(p for _, p in pairs):.3f}; simulated above measured in "
                  f"{sum(1 for m, p in pairs if p > m)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
