#!/usr/bin/env python3
"""Diagnostic: does the loop wait out the pin thread's release of a worker's batch? (validation-runs.md run 72, finding 5)

    python3 calibrate/validation/release_hold_diagnostic.py RESULTS_DIR... [--min-steps 5] [--simulated]

For every pinned case with a timeline (harness --timeline): the loop's `.item()` waits (launched -> synced) split by
whether a pin_memory() call ended inside them. A wait that takes in a pin_memory() end and then returns a fixed time
after that end, where the others do not, is a loop wanting the GIL back while the pin thread holds it after the copy:
the release of the worker's shared-memory batch, which the simulator holds the GIL for (ipc.release_holds_gil).
Printed per case: how many waits took in an end, their median length, the median (p10, p90) from that end to the
wait's return, and the other waits' median. Compare the "after the end" figure with the call's calibrated release
of a batch (profile ipc.release_s_per_byte x the batch's bytes).

With --simulated, each case's loop pieces (next(), the .to() call, the launches) split by whether the release began
inside them, measured (a pin_memory() end: the release follows it) and simulated (the case as the generated table
builds it, one seed: the trace's "release the worker's batch" spans against the loop's pieces): how often the loop is
in its Python when the release begins, and how long such a piece then takes (validation-runs.md run 72, finding 5:
on run 71's fast lease the simulated loop met it twice as often as the measured one). The measured next() runs from
its call to its return, its wait for the batch included; the simulated one is the loader's Python after the batch
is there (the trace's wait for it is a span of its own), so only .to() and the launches compare one for one.
"""
import argparse
import bisect
import json
import os
import statistics
import sys
import tempfile
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


# The loop's Python pieces: the harness's timeline marks (start, end) and the simulator's trace span of each.
MEASURED_PIECES = (("next()", "next_start", "next_end"), (".to()", "next_end", "copied"),
                   ("launches", "copied", "launched"))
SIMULATED_PIECES = (("next()", "next(): the loader's own Python"), (".to()", ".to(): the copy call"),
                    ("launches", "training step (python)"))
SIMULATED_RELEASE = "release the worker's batch (holds the GIL)"


def pieces_by_release_start(pieces: Sequence[Tuple[float, float]], release_starts: Sequence[float]
                            ) -> Tuple[List[float], List[float]]:
    """Pure: the lengths of the loop's pieces ((start, end) each) in which a release began (a time in
    release_starts inside it), and of the others."""
    starts = sorted(release_starts)
    hit: List[float] = []
    miss: List[float] = []
    for a, b in pieces:
        k = bisect.bisect_left(starts, a)
        (hit if k < len(starts) and starts[k] < b else miss).append(b - a)
    return hit, miss


def pieces_line(label: str, split: Dict[str, Tuple[List[float], List[float]]]) -> str:
    """Pure: one line of the pieces with a release begun inside them, by piece: count of all, median ms, and the
    others' median."""
    parts = []
    for name, (hit, miss) in split.items():
        n = len(hit) + len(miss)
        parts.append(f"{name} {len(hit)} of {n}" + (f" {statistics.median(hit) * 1e3:.2f} ms" if hit else "")
                     + (f" (others {statistics.median(miss) * 1e3:.2f})" if miss else ""))
    return f"{label}: the release began inside " + "; ".join(parts)


def measured_pieces(case: Dict) -> Optional[Dict[str, Tuple[List[float], List[float]]]]:
    """A pinned case's measured loop pieces split by a pin_memory() end inside them (None without a timeline)."""
    t = ((case.get("measured") or {}).get("timeline")) or {}
    main, pins = t.get("main") or {}, t.get("pin") or []
    if not pins or any(k not in main for _, a, b in MEASURED_PIECES for k in (a, b)):
        return None
    skip = int(t.get("skip") or 0)
    ends = [float(e) for _, e in pins]
    return {name: pieces_by_release_start(list(zip(main[a][skip:], main[b][skip:])), ends)
            for name, a, b in MEASURED_PIECES}


def simulated_pieces(case: Dict, doc: Dict, profile: Dict, pipeplan: str, tmp: str
                     ) -> Optional[Dict[str, Tuple[List[float], List[float]]]]:
    """The same from the simulator's trace of the case as the generated table builds it (its first seed, past the
    first fifth of the steps); None where pipeplan fails."""
    cpu_curve = (profile.get("cpu") or {}).get("speed_vs_busy_cores") or []
    tau = convert.calls_duty_time_constant([(doc.get("components") or {}, profile)])
    scen, prof = convert.table_case_inputs(case, doc, profile, cpu_curve, tau)
    paths = [os.path.join(tmp, n) for n in ("s.json", "p.json", "t.json")]
    with open(paths[0], "w") as f:
        json.dump(scen, f)
    with open(paths[1], "w") as f:
        json.dump(prof or profile, f)
    run = convert.run_pipeplan(pipeplan, paths[0], paths[1], extra=["--trace", paths[2]])
    if "error" in run:
        print(f"{case['id']}: pipeplan failed: {run['error']}", file=sys.stderr)
        return None
    trace = convert.read_json(paths[2])
    events = [e for e in (trace["traceEvents"] if isinstance(trace, dict) else trace) if e.get("ph") == "X"]
    starts = [e["ts"] / 1e6 for e in events if e["name"] == SIMULATED_RELEASE]
    out = {}
    for name, span in SIMULATED_PIECES:
        pieces = sorted((e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6) for e in events if e["name"] == span)
        out[name] = pieces_by_release_start(pieces[len(pieces) // 5:], starts)
    return out


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
    ap.add_argument("--simulated", action="store_true",
                    help="also each case's loop pieces split by the release's start, measured and simulated")
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)
    a = ap.parse_args(argv)
    if a.min_steps < 1:
        print(f"release_hold_diagnostic: --min-steps {a.min_steps}: expected an integer >= 1", file=sys.stderr)
        return 2
    if a.simulated:
        convert.exit_without_pipeplan("release_hold_diagnostic", a.pipeplan)
    for rd in a.results_dir:
        doc = convert.read_call_json(rd, "cases.json")
        profile = convert.read_call_json(rd, "profile.json")
        ipc = (profile or {}).get("ipc") or {}
        print(f"{rd}: calibrate's release {ipc.get('release_s_per_byte', 'not measured')} s/B")
        for case in (doc or {}).get("cases") or []:
            line = case_line(case, a.min_steps)
            if not line:
                continue
            print("  " + line)
            if a.simulated:
                measured = measured_pieces(case)
                with tempfile.TemporaryDirectory() as tmp:
                    simulated = simulated_pieces(case, doc, profile, a.pipeplan, tmp)
                if measured:
                    print("    " + pieces_line("measured", measured))
                if simulated:
                    print("    " + pieces_line("simulated", simulated))
    return 0


if __name__ == "__main__":
    sys.exit(main())
