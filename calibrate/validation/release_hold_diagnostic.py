#!/usr/bin/env python3
"""Diagnostic: does the loop wait out the pin thread's release of a worker's batch? (validation-runs.md run 72, finding 5)

    python3 calibrate/validation/release_hold_diagnostic.py RESULTS_DIR... [--min-steps 5]

For every pinned case with a timeline (harness --timeline): the loop's `.item()` waits (launched -> synced) split by
whether a pin_memory() call ended inside them. A wait that takes in a pin_memory() end and then returns a fixed time
after that end, where the others do not, is a loop wanting the GIL back while the pin thread holds it after the copy:
the release of the worker's shared-memory batch, which the simulator holds the GIL for (ipc.release_holds_gil).
Printed per case: how many waits took in an end, their median length, the median (p10, p90) from that end to the
wait's return, and the other waits' median. Compare the "after the end" figure with the call's calibrated release
of a batch (profile ipc.release_s_per_byte x the batch's bytes).
"""
import argparse
import bisect
import os
import statistics
import sys
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402


def quantile(xs: Sequence[float], p: float) -> float:
    """Pure: the p-quantile of xs by rank (the value below which a share p of them lie), xs not empty."""
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def waits_by_pin_end(main: Dict[str, List[float]], pin_spans: Sequence[Sequence[float]], skip: int
                     ) -> Tuple[List[Tuple[float, float]], List[float]]:
    """Pure: the loop's .item() waits (main's launched[i] -> synced[i], steps from `skip` on) split by whether a
    pin_memory() call (pin_spans: [start, end] each, seconds on the loop's clock) ended inside them: those that did as
    (wait length, its return less the last such end), the others as their lengths."""
    ends = sorted(float(e) for _, e in pin_spans)
    took_in: List[Tuple[float, float]] = []
    others: List[float] = []
    for i in range(skip, min(len(main["launched"]), len(main["synced"]))):
        a, b = float(main["launched"][i]), float(main["synced"][i])
        k = bisect.bisect_right(ends, b) - 1
        if k >= 0 and ends[k] > a:
            took_in.append((b - a, b - ends[k]))
        else:
            others.append(b - a)
    return took_in, others


def case_line(case: Dict, min_steps: int) -> Optional[str]:
    """One pinned case's line (None without a timeline, a pin thread's spans, or min_steps waits taking in an end)."""
    t = ((case.get("measured") or {}).get("timeline")) or {}
    main, pins = t.get("main") or {}, t.get("pin") or []
    if not (case.get("knobs") or {}).get("pin_memory") or not pins or "synced" not in main or "launched" not in main:
        return None
    took_in, others = waits_by_pin_end(main, pins, int(t.get("skip") or 0))
    if len(took_in) < min_steps:
        return None
    after = [x[1] * 1e3 for x in took_in]
    other = f"{statistics.median(others) * 1e3:.1f} ms" if others else "none"
    return (f"{case['id']}: {len(took_in)} waits took in a pin_memory() end: {statistics.median(x[0] for x in took_in) * 1e3:.1f} ms, "
            f"returning {statistics.median(after):.2f} ms after it (p10 {quantile(after, 0.1):.2f}, p90 "
            f"{quantile(after, 0.9):.2f}); {len(others)} others {other}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", nargs="+", help="device calls' result folders (cases.json or its .gz / .xz)")
    ap.add_argument("--min-steps", type=int, default=5, help="least waits taking in an end for a case's line")
    a = ap.parse_args(argv)
    if a.min_steps < 1:
        print(f"release_hold_diagnostic: --min-steps {a.min_steps}: expected an integer >= 1", file=sys.stderr)
        return 2
    for rd in a.results_dir:
        doc = convert.read_call_json(rd, "cases.json")
        profile = convert.read_call_json(rd, "profile.json")
        ipc = (profile or {}).get("ipc") or {}
        print(f"{rd}: calibrate's release {ipc.get('release_s_per_byte', 'not measured')} s/B")
        for case in (doc or {}).get("cases") or []:
            line = case_line(case, a.min_steps)
            if line:
                print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
