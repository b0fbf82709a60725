#!/usr/bin/env python3
"""Diagnostic: one straggling worker (harness families slow_worker, slow_worker_remedy), measured and simulated.

    python3 calibrate/validation/straggler_diagnostic.py RESULTS_DIR [--pipeplan build/cli/pipeplan] [--no-sim]
    python3 calibrate/validation/straggler_diagnostic.py RESULTS_DIR... --receives   # any pinned case with a timeline

Per case: the straggler's (worker 0's) mean batch time against the others', how long it sits idle between its
batches (waiting for its next index: PyTorch sends an index only when the loop takes a batch, so with prefetch_factor
2 a worker's next-but-one index leaves when its own previous batch is taken), its period from one batch's start to the
next, the throughput that period allows (one of its batches per round of num_workers batches), and the mean wait of
the loop by position in the round. The same from the simulator's trace of the case as the generated table builds it
(convert.table_case_inputs, the first seed), unless --no-sim. Validation run 54.
"""
import argparse
import bisect
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
import timeline_analysis  # noqa: E402

Span = Tuple[float, float]


def worker_rhythm(spans: Sequence[Span]) -> Optional[Dict[str, float]]:
    """One worker's batches (start, end) in order: mean batch time, mean idle between a batch's end and the next
    one's start, mean period start to start; None for under two batches."""
    if len(spans) < 2:
        return None
    n = len(spans) - 1
    return {"batch_s": statistics.mean(b - a for a, b in spans),
            "idle_s": sum(spans[i + 1][0] - spans[i][1] for i in range(n)) / n,
            "period_s": (spans[-1][0] - spans[0][0]) / n}


def round_limited_samples_per_s(period_s: float, num_workers: int, batch_size: int) -> float:
    """The throughput a worker with this period allows an in-order loader: one of its batches in each round of
    num_workers batches."""
    return num_workers * batch_size / period_s


def handover_s(ends: Sequence[float], returns: Sequence[float], worker: int, num_workers: int, skip: int
               ) -> Optional[float]:
    """One worker's mean hand-over: from its batch's collate end to the loop's next() returning that batch. In order,
    worker w's batch i is the loader's batch i * num_workers + w (PyTorch's round robin of indices); `ends` are its
    batches' collate ends, `returns` next()'s returns by step; batches before step `skip` are left out."""
    hs = [returns[s] - e for i, e in enumerate(ends)
          for s in (i * num_workers + worker,) if skip <= s < len(returns)]
    return statistics.mean(hs) if hs else None


def starved_period_s(batch_s: float, handover_s: float, prefetch_factor: int) -> float:
    """A worker's period when the loop's hand-over paces its indices: PyTorch sends the index of a worker's batch
    i + prefetch_factor when the loop takes its batch i, so each of its prefetch_factor index slots cycles through
    the batch (batch_s) and its hand-over (handover_s): period = max(batch, (batch + hand-over) / prefetch_factor)."""
    return max(batch_s, (batch_s + handover_s) / max(1, prefetch_factor))


def fifo_receive(ends: Sequence[float], pins: Sequence[Span], end: float) -> Optional[Span]:
    """The pin thread's receive of the batch whose collate ended at `end`: the pin thread takes batches first in,
    first out by their collate's end (run 54's timelines: the batches waiting at a collate end equal the pin calls
    before its own), so its call comes after one call for every batch that ended before it (`ends`, sorted), and its
    receive runs from the previous call's end (or its own collate end, if later) to its own call's start. None past
    the last call."""
    k = bisect.bisect_left(ends, end)
    if k >= len(pins):
        return None
    return max(pins[k - 1][1] if k > 0 else end, end), pins[k][0]


def receives_in_spin(workers: Dict[str, Sequence[Span]], pins: Sequence[Span], factor: float, skip_batches: int = 10
                     ) -> Optional[Dict[str, List[float]]]:
    """The pin thread's receive of each of worker 0's batches, split by whether it began inside worker 0's spin on its
    next batch (the last (1 - 1/factor) of that batch: the harness spins after the collate), matched by
    fifo_receive. Returns the receives begun in a spin ("in_spin_s"), their end against the spin's end ("after_spin_s", negative:
    before it) and the others ("other_s"); None without a straggler or pin calls."""
    w0 = workers.get("0") or []
    if factor <= 1.0 or not pins or len(w0) < skip_batches + 2:
        return None
    ends = sorted(b for spans in workers.values() for _, b in spans)
    out: Dict[str, List[float]] = {"in_spin_s": [], "after_spin_s": [], "other_s": []}
    for i in range(skip_batches, len(w0) - 1):
        receive = fifo_receive(ends, pins, w0[i][1])
        if receive is None:
            break
        receive_start, receive_end = receive
        next_start, next_end = w0[i + 1]
        spin_start = next_end - (next_end - next_start) * (1.0 - 1.0 / factor)
        if spin_start < receive_start < next_end:
            out["in_spin_s"].append(receive_end - receive_start)
            out["after_spin_s"].append(receive_end - next_end)
        else:
            out["other_s"].append(receive_end - receive_start)
    return out


def receives_while_loading(workers: Dict[str, Sequence[Span]], pins: Sequence[Span], skip_batches: int = 10
                           ) -> Dict[str, List[float]]:
    """Every worker's batches matched to their pin calls (fifo_receive),
    each receive split by whether it began while its worker was inside its next batch (first __getitem__ to collate
    end: loading, maybe holding its GIL) or not ("loading_s", "other_s"). Beside loading_s, "loading_offset_s": how far
    into the worker's next batch each of those receives began (run 56 split them by it). For any case with a timeline,
    not only a straggler's."""
    ends = sorted(b for spans in workers.values() for _, b in spans)
    out: Dict[str, List[float]] = {"loading_s": [], "loading_offset_s": [], "other_s": []}
    for spans in workers.values():
        for i in range(skip_batches, len(spans) - 1):
            receive = fifo_receive(ends, pins, spans[i][1])
            if receive is None:
                continue
            next_start, next_end = spans[i + 1]
            if next_start < receive[0] < next_end:
                out["loading_s"].append(receive[1] - receive[0])
                out["loading_offset_s"].append(receive[0] - next_start)
            else:
                out["other_s"].append(receive[1] - receive[0])
    return out


def slot_cycle(w0: Sequence[Span], received: Sequence[Optional[Span]], handed: Sequence[Optional[float]],
               skip_batches: int = 10) -> Dict[str, List[float]]:
    """The straggler's index slots, batch by batch (validation-runs.md, the seventy-third session): PyTorch sends the
    index of its batch i + prefetch_factor when the loop takes its batch i, so with prefetch 2 each slot cycles through
    the batch, its wait in the pin thread's queue ("queue_s": collate end to the receive's start), the receive and pin
    ("receive_pin_s": to the pin call's end), the hand-over ("handover_s": to next() returning it) and the index's trip
    to the idle worker ("index_s": next() returning batch i to batch i + 2 starting, where the worker sat idle for it;
    "busy" counts the batches whose next-but-one index came while it was still busy). "gap_s": start to start of
    consecutive batches; "swing_s": |gap_{j+1} - gap_j|, large where the two slots alternate short and long gaps (the
    receive of one batch meeting the spin of the next: run 68's Python spin unordered, 100 and 158 ms).
    `received[i]` (receive start, pin end) and `handed[i]` are worker 0's batch i's, None where unknown."""
    out: Dict[str, List[float]] = {k: [] for k in ("queue_s", "receive_pin_s", "handover_s", "index_s", "busy",
                                                   "gap_s", "swing_s")}
    for i in range(skip_batches, len(w0) - 2):
        out["gap_s"].append(w0[i + 1][0] - w0[i][0])
        if received[i] is None or handed[i] is None:
            continue
        (start, end), (receive_start, pin_end) = w0[i], received[i]
        out["queue_s"].append(receive_start - end)
        out["receive_pin_s"].append(pin_end - receive_start)
        out["handover_s"].append(handed[i] - pin_end)
        if w0[i + 2][0] > w0[i + 1][1]:
            out["index_s"].append(w0[i + 2][0] - handed[i])
        else:
            out["busy"].append(1.0)
    out["swing_s"] = [abs(b - a) for a, b in zip(out["gap_s"], out["gap_s"][1:])]
    return out


def slot_cycle_line(label: str, c: Dict[str, List[float]]) -> str:
    """slot_cycle's medians in ms. The measured hand-over starts at the pin call's end, before the pin loop frees the
    worker's batch (run 62, finding 9), which the simulator does inside its "pin_memory" span: compare the
    receive+pin+hand-over sums, less one free, not the columns one by one."""
    m = lambda xs: 1e3 * statistics.median(xs) if xs else float("nan")  # noqa: E731
    mean = lambda xs: 1e3 * statistics.mean(xs) if xs else float("nan")  # noqa: E731
    return (f"  {label:9s} worker 0's slot, medians: queue {m(c['queue_s']):.1f} ms, receive+pin "
            f"{m(c['receive_pin_s']):.1f} (mean {mean(c['receive_pin_s']):.1f}), "
            f"hand-over {m(c['handover_s']):.1f}, index to its idle start {m(c['index_s']):.1f} "
            f"({len(c['busy'])} came while busy); gaps start to start {m(c['gap_s']):.1f} ms, swing between "
            f"consecutive gaps {m(c['swing_s']):.1f} ms (window's halves {m(first_half(c['swing_s'])):.1f} / "
            f"{m(second_half(c['swing_s'])):.1f}: a two-slot cycle held or let go)")


def first_half(xs: Sequence[float]) -> List[float]:
    return list(xs[:len(xs) // 2])


def second_half(xs: Sequence[float]) -> List[float]:
    return list(xs[len(xs) // 2:])


def quantile(values: Sequence[float], q: float) -> float:
    """The q quantile by nearest rank below (no interpolation): enough for a diagnostic's p50 and p90."""
    v = sorted(values)
    return v[int(q * (len(v) - 1))] if v else float("nan")


# where in the next batch a receive began, in seconds: its first 5 ms, 5-30 ms, later (run 56, finding 5)
RECEIVE_OFFSET_EDGES_S = (0.005, 0.030)


def receives_by_offset(r: Dict[str, List[float]]) -> Dict[str, List[float]]:
    """receives_while_loading's loading receives grouped by how far into the next batch they began
    (RECEIVE_OFFSET_EDGES_S), then the others."""
    lo, hi = RECEIVE_OFFSET_EDGES_S
    out: Dict[str, List[float]] = {f"<{lo * 1e3:g} ms": [], f"{lo * 1e3:g}-{hi * 1e3:g} ms": [], f">{hi * 1e3:g} ms": []}
    keys = list(out)
    for d, off in zip(r["loading_s"], r["loading_offset_s"]):
        out[keys[0] if off < lo else keys[1] if off < hi else keys[2]].append(d)
    out["not loading"] = list(r["other_s"])
    return out


def receives_line(label: str, groups: Dict[str, List[float]]) -> str:
    return label + "; ".join(f"{k}: n={len(v)} p50 {1e3 * quantile(v, 0.5):.1f} p90 {1e3 * quantile(v, 0.9):.1f} ms"
                             for k, v in groups.items() if v)


def waits_by_position(next_start: Sequence[float], in_hand: Sequence[float], num_workers: int, skip: int
                      ) -> List[float]:
    """The loop's mean wait for a batch (next() called to batch in hand) by the batch's position j mod num_workers."""
    out = [[] for _ in range(num_workers)]
    for j in range(skip, min(len(next_start), len(in_hand))):
        out[j % num_workers].append(in_hand[j] - next_start[j])
    return [statistics.mean(w) if w else float("nan") for w in out]


def measured_rows(case: Dict) -> Optional[Dict]:
    tl, k = case["measured"].get("timeline"), case["knobs"]
    if not tl:
        return None
    nw, skip = int(k["num_workers"]), int(tl["skip"])
    rhythm = [worker_rhythm([tuple(s[:2]) for s in tl["workers"][str(w)][skip // nw:]]) for w in range(nw)]
    if any(r is None for r in rhythm):
        return None
    ends0 = [s[1] for s in tl["workers"]["0"]]
    factor = float(k.get("slow_worker_factor", 1.0))
    pins = [tuple(x) for x in tl.get("pin") or []]
    recv = receives_in_spin({w: [tuple(x[:2]) for x in sp] for w, sp in tl["workers"].items()}, pins, factor)
    ends = sorted(b for spans in tl["workers"].values() for _, b in (x[:2] for x in spans))
    received: List[Optional[Span]] = []
    handed: List[Optional[float]] = []
    returns = tl["main"]["next_end"]
    in_order = bool(k.get("in_order", True))
    for i, end in enumerate(ends0):
        call = bisect.bisect_left(ends, end)    # the pin thread's call for this batch (fifo_receive's matching)
        r = fifo_receive(ends, pins, end)
        received.append(None if r is None else (r[0], pins[call][1]))
        # next() returns the batches as pinned out of order; in order, worker 0's i-th is the round robin's i * nw
        step = i * nw if in_order else call
        handed.append(returns[step] if step < len(returns) else None)
    return {"rhythm": rhythm, "waits": waits_by_position(tl["main"]["next_start"], tl["main"]["next_end"], nw, skip),
            "receives": recv, "cycle": slot_cycle([tuple(x[:2]) for x in tl["workers"]["0"]], received, handed),
            "handover_s": handover_s(ends0, tl["main"]["next_end"], 0, nw, skip),
            "samples_per_s": case["measured"]["throughput_samples_per_s"]}


def trace_slot_inputs(events: Sequence[Dict], batches: Sequence[int], steps: Sequence[float], in_order: bool
                      ) -> Tuple[List[Optional[Span]], List[Optional[float]]]:
    """Pure: slot_cycle's inputs from the simulator's trace for the given batch ids (worker 0's, in order): each
    batch's (first span on the pin_memory thread, end of its "pin_memory" span) and the end of the next() that
    returned it: `steps[j]` is step j's; in order step j returns batch j, out of order the j-th batch pinned."""
    first: Dict[int, float] = {}
    pinned: Dict[int, float] = {}
    for b, e in timeline_analysis.pin_thread_batch_spans(events):
        a = e["ts"] / 1e6
        first[b] = min(first.get(b, a), a)
        if e.get("name") == "pin_memory":
            pinned[b] = a + e["dur"] / 1e6
    step_of = {b: j for j, b in enumerate(sorted(pinned, key=pinned.get))} if not in_order else {b: b for b in pinned}
    received = [(first[b], pinned[b]) if b in pinned else None for b in batches]
    def returned(b: int) -> Optional[float]:
        j = step_of.get(b)
        t = steps[j] if j is not None and j < len(steps) else None
        return None if t is None or math.isnan(t) else t   # NaN: a step the trace never returned
    handed = [returned(b) for b in batches]
    return received, handed


def simulated_rows(case: Dict, doc: Dict, profile: Dict, pipeplan: str, tmp: str) -> Optional[Dict]:
    cpu_curve = (profile.get("cpu") or {}).get("speed_vs_busy_cores") or []
    tau = convert.calls_duty_time_constant([(doc.get("components") or {}, profile)])
    scen, prof = convert.table_case_inputs(case, doc, profile, cpu_curve, tau)
    paths = [os.path.join(tmp, n) for n in ("s.json", "p.json", "r.json", "t.json")]
    json.dump(scen, open(paths[0], "w"))
    json.dump(prof or profile, open(paths[1], "w"))
    run = subprocess.run([pipeplan, "simulate", paths[0], "--profile", paths[1], "--format", "json", "-o", paths[2],
                          "--trace", paths[3]], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"{case['id']}: pipeplan failed: {run.stderr.strip()}", file=sys.stderr)
        return None
    trace = json.load(open(paths[3]))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    nw = int(case["knobs"]["num_workers"])
    # (worker, batch) -> its span (a per-sample load and its collate are one batch); batch -> end of next()
    per_batch, returned = timeline_analysis.trace_batches(events)
    rhythm = []
    for w in range(nw):
        spans = [per_batch[k] for k in sorted(per_batch) if k[0] == w]
        rhythm.append(worker_rhythm(spans[len(spans) // 5:]))   # past the start, as the measured window
    if any(r is None for r in rhythm):
        return None
    keys0 = sorted(k for k in per_batch if k[0] == 0)
    skip = len(keys0) // 5 * nw                    # past the start, as the rhythm
    steps = [returned.get(b, float("nan")) for b in range(max(returned) + 1)] if returned else []
    ends0 = [per_batch[k][1] for k in keys0]
    # the simulator numbers batches as the loader does, so worker 0's batch i is batch i * nw only in order
    h = handover_s(ends0, steps, 0, nw, skip) if all(k[1] == i * nw for i, k in enumerate(keys0)) else None
    received, handed = trace_slot_inputs(events, [k[1] for k in keys0], steps,
                                         bool(case["knobs"].get("in_order", True)))
    return {"rhythm": rhythm, "waits": None, "handover_s": None if h is None or h != h else h,
            "cycle": slot_cycle([per_batch[k] for k in keys0], received, handed, len(keys0) // 5),
            "samples_per_s": json.load(open(paths[2]))["throughput"]["samples_per_s"]}


def line(label: str, rows: Dict, nw: int, bs: int, in_order: bool, pf: int = 2) -> str:
    r0, others = rows["rhythm"][0], rows["rhythm"][1:]
    text = (f"  {label:9s} {rows['samples_per_s']:6.0f} samples/s; worker 0 batch {1e3 * r0['batch_s']:6.1f} ms "
            f"(others {1e3 * statistics.mean(r['batch_s'] for r in others):5.1f}), idle {1e3 * r0['idle_s']:5.1f} ms, "
            f"period {1e3 * r0['period_s']:6.1f} ms")
    if in_order:   # out of order, worker 0 no longer owns one batch in every round
        text += f" -> at most {round_limited_samples_per_s(r0['period_s'], nw, bs):6.0f} samples/s"
        if rows.get("handover_s") is not None:
            starved = starved_period_s(r0["batch_s"], rows["handover_s"], pf)
            text += (f"; hand-over {1e3 * rows['handover_s']:5.1f} ms -> period max(batch, (batch + hand-over) / "
                     f"{pf}) = {1e3 * starved:5.1f} ms")
    if rows["waits"]:
        text += "; wait by position " + " ".join(f"{1e3 * w:.1f}" for w in rows["waits"]) + " ms"
    recv = rows.get("receives")
    if recv and (recv["in_spin_s"] or recv["other_s"]):
        med = lambda xs: 1e3 * statistics.median(xs) if xs else float("nan")  # noqa: E731
        text += (f"\n            the pin thread's receives of worker 0's batches: {len(recv['in_spin_s'])} begun in its"
                 f" spin on the next, {med(recv['in_spin_s']):.1f} ms (ending {med(recv['after_spin_s']):+.1f} ms"
                 f" from the spin's end), {len(recv['other_s'])} others {med(recv['other_s']):.1f} ms (medians)")
    return text


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir", nargs="+", help="one call's results (with --receives: one or more, pooled)")
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)
    ap.add_argument("--no-sim", action="store_true")
    ap.add_argument("--cycle", action="store_true",
                    help="also worker 0's index slot batch by batch (slot_cycle): its batches' wait in the pin "
                         "thread's queue, receive and pin, hand-over, the index's trip, and how its gaps alternate")
    ap.add_argument("--receives", action="store_true",
                    help="every pinned case with a timeline: the pin thread's receives begun while their worker was "
                         "loading its next batch (by how far into it) against the others, per case and pooled over "
                         "the calls given, then stop")
    a = ap.parse_args(argv)
    if not (a.no_sim or a.receives):
        convert.exit_without_pipeplan("straggler_diagnostic", a.pipeplan)
    if a.receives:
        pooled: Dict[str, List[float]] = {}
        # every call read before any line is printed: a missing or bad one is one line and exit 2, nothing half-shown
        docs = [convert.read_call_json(results_dir, "cases.json") for results_dir in a.results_dir]
        for doc in docs:
            for c in doc["cases"]:
                tl = (c.get("measured") or {}).get("timeline") if c.get("status") == "ok" else None
                if not tl or not tl.get("pin"):
                    continue
                r = receives_while_loading({w: [tuple(x[:2]) for x in sp] for w, sp in tl["workers"].items()},
                                           [tuple(x) for x in tl["pin"]])
                groups = receives_by_offset(r)
                for k, v in groups.items():
                    pooled.setdefault(k, []).extend(v)
                if r["loading_s"] and r["other_s"]:
                    print(receives_line(f"{c['id']}: begun while the worker loads, by how far into its batch: ",
                                        groups))
        if len(a.results_dir) > 1:
            print(receives_line(f"pooled over {len(a.results_dir)} calls: ", pooled))
        return 0
    if len(a.results_dir) != 1:
        print("straggler_diagnostic.py: give one results directory (several only with --receives)", file=sys.stderr)
        return 2
    results_dir = a.results_dir[0]
    doc = convert.read_call_json(results_dir, "cases.json")       # missing or bad: one line, exit 2
    profile = convert.read_call_json(results_dir, "profile.json")
    with tempfile.TemporaryDirectory() as tmp:
        for c in doc["cases"]:
            if c.get("status") != "ok" or int(c["knobs"].get("num_workers", 0)) < 2:
                continue
            meas = measured_rows(c)
            if meas is None:
                continue
            nw, bs = int(c["knobs"]["num_workers"]), int(c["knobs"]["batch_size"])
            print(f"{c['id']} (factor {c['knobs'].get('slow_worker_factor', 1.0):g})")
            in_order = bool(c["knobs"].get("in_order", True))
            pf = int(c["knobs"].get("prefetch_factor") or 2)
            print(line("measured", meas, nw, bs, in_order, pf))
            sim = None if a.no_sim else simulated_rows(c, doc, profile, a.pipeplan, tmp)
            if sim:
                print(line("simulated", sim, nw, bs, in_order, pf))
            if a.cycle:
                print(slot_cycle_line("measured", meas["cycle"]))
                if sim:
                    print(slot_cycle_line("simulated", sim["cycle"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
