#!/usr/bin/env python3
"""The per-sample cost with and without the batch's put beside it, from the harness's --probe-no-put.

Each case with workers is probed right before and after it (components.probe, probe_after): its own loader, the main
loop dropping each batch, __getitem__ and collate timed inside the workers. That loader still puts every batch: the
worker's queue feeder thread pickles it into shared memory while the worker's main thread runs its next __getitem__
calls, and both want the worker's GIL. --probe-no-put adds a third probe after the case (components.probe_no_put):
the same loader with each batch dropped inside its worker after collate, so the feeder has nothing to put.

Per case this prints __getitem__'s wall and CPU time and collate's wall, with the put (the mean of the two probes) and
without it, and what the put costs the worker per batch: batch_size x the getitem wall's difference plus collate's.
The CPU time tells a GIL wait (wall up, CPU not) from a slower core (both up). This is the reading docs/status.md
Next 3 asks for: whether the probes' per-sample cost carries the feeder, which the turnaround what-if
(loader.worker_turnaround_share, the put moved off the worker's path) would then count twice.

Run from the repository root:
    python3 calibrate/validation/no_put_diagnostic.py RESULTS_DIR ...
"""
import argparse
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402


def _mean_of(probes: Sequence[Dict[str, Any]], key: str) -> Optional[float]:
    xs = [float(p[key]) for p in probes if isinstance(p.get(key), (int, float))]
    return sum(xs) / len(xs) if xs else None


def put_cost(case: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Pure: for a case with components.probe_no_put and at least one of probe / probe_after, the per-sample
    __getitem__ wall and CPU and the batch's collate wall with the put (mean of the probes) and without it, and the
    put's cost to the worker per batch (batch_size x getitem wall difference + collate wall difference), in seconds.
    None where the no-put probe or both put probes are missing or failed."""
    comps = case.get("components") or {}
    no_put = comps.get("probe_no_put") or {}
    probes = [p for p in (comps.get("probe") or {}, comps.get("probe_after") or {}) if p.get("getitem_wall_s")]
    if not no_put.get("getitem_wall_s") or not probes:
        return None
    bs = int(case["knobs"]["batch_size"])
    put = {k: _mean_of(probes, k) for k in ("getitem_wall_s", "getitem_cpu_s", "collate_wall_s")}
    bare = {k: (float(no_put[k]) if isinstance(no_put.get(k), (int, float)) else None)
            for k in ("getitem_wall_s", "getitem_cpu_s", "collate_wall_s")}
    batch_put = bs * put["getitem_wall_s"] + (put["collate_wall_s"] or 0.0)
    batch_bare = bs * bare["getitem_wall_s"] + (bare["collate_wall_s"] or 0.0)
    return {"id": case.get("id", "?"), "batch_size": bs, "num_workers": int(case["knobs"]["num_workers"]),
            "with_put": put, "without_put": bare,
            "getitem_wall_ratio": put["getitem_wall_s"] / bare["getitem_wall_s"],
            "batch_busy_with_put_s": batch_put, "batch_busy_without_put_s": batch_bare,
            "put_cost_s_per_batch": batch_put - batch_bare}


def ms(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x * 1e3:.3f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="results folders (cases.json) of calls run with --probe-no-put")
    a = ap.parse_args(argv)
    rows: List[Dict[str, Any]] = []
    for path in a.results:
        doc = convert.read_call_json(path, "cases.json") or {}
        for case in doc.get("cases") or []:
            if case.get("status") != "ok":
                continue
            r = put_cost(case)
            if r is not None:
                rows.append(r)
    if not rows:
        print("no case with components.probe_no_put (run the harness with --probe-no-put)", file=sys.stderr)
        return 1
    for r in rows:
        p, b = r["with_put"], r["without_put"]
        print(f"{r['id'][:64]}: getitem wall {ms(p['getitem_wall_s'])} with the put / {ms(b['getitem_wall_s'])} "
              f"without ({r['getitem_wall_ratio']:.3f}x), cpu {ms(p['getitem_cpu_s'])} / {ms(b['getitem_cpu_s'])}; "
              f"collate {ms(p['collate_wall_s'])} / {ms(b['collate_wall_s'])}; batch busy "
              f"{ms(r['batch_busy_with_put_s'])} / {ms(r['batch_busy_without_put_s'])} ms: the put costs the worker "
              f"{ms(r['put_cost_s_per_batch'])} ms a batch")
    ratios = [r["getitem_wall_ratio"] for r in rows]
    costs = [r["put_cost_s_per_batch"] for r in rows]
    print(f"{len(rows)} cases: getitem wall with / without the put median {statistics.median(ratios):.3f}x "
          f"(range {min(ratios):.3f}-{max(ratios):.3f}); the put's cost to the worker median "
          f"{ms(statistics.median(costs))} ms a batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
