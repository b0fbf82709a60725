#!/usr/bin/env python3
"""A small event model of an in-order DataLoader with a pin thread, written apart from the simulator.

It keeps only the dispatch: PyTorch's `_try_put_index` (prefetch_factor * num_workers indices out at the start, one
more each time the loop takes a batch, to the next worker in a fixed cycle), workers that run their indices one
after another, a single pin thread that serves batches in the order they arrive (FIFO), and a loop that takes them in
index order and spends a fixed time on each. A worker's batch time wanders as a log-normal Ornstein-Uhlenbeck
process (cv, correlation time), as the simulator's core wander does. No GIL, no memory map, no GPU: what the shape
of the steps owes to the dispatch alone.

Why: validation-runs.md run 42, finding 7. The 4-worker warm tensor read's steps come in waves in the simulator
(three at the loop's pace, then a wait for the round's last worker) and evenly spread in the cases. This model,
which shares no code with sim/, gives the simulator's waves for the same inputs: the waves are what the dispatch
itself does at those costs, and the cases land on the other side of the knee between the workers and the pin
thread.

    python3 calibrate/validation/dispatch_model.py --workers 4 --batch-ms 73 --cv 0.11 --pin-ms 16.5 --loop-ms 11.5

prints the median and p90 step and the throughput in batches a second, over seeds. With --replay RESULTS_DIR... each
pinned in-order case's workers are played back from its timeline, with the pin thread's measured cycles (--pin
measured, for pin-bound cases) or its CPU a batch as a constant service time (--pin cpu, for worker-bound cases, whose
cycles hold the pin thread's waits), and each case's out-of-order share is printed measured and replayed
(validation-runs.md run 83, finding 5).
"""
from __future__ import annotations

import argparse
import heapq
import math
import os
import random
import statistics
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timeline_analysis  # noqa: E402  (the timelines' shared readers; no sim/ code)


@dataclass(frozen=True)
class Dispatch:
    """Inputs, in seconds. batch_s: a worker's mean time for one batch; send_s: the worker's hand-off after it (the
    worker is busy, the batch not yet at the pin thread), with send_at_pace at each replayed batch's pace (its time
    over its worker's mean: the put, validation-runs.md "The put's pace"); pin_s: the pin thread's time per batch (0:
    no pin thread); loop_s: the loop's time per step once it holds the batch."""
    workers: int = 4
    prefetch_factor: int = 2
    batch_s: float = 0.073
    cv: float = 0.11
    correlation_s: float = 0.3
    send_s: float = 0.0
    pin_s: float = 0.016
    loop_s: float = 0.0115
    send_at_pace: bool = False


def paced_send_s(send_s: float, batch_s: float, mean_batch_s: float) -> float:
    """Pure: a worker's hand-off after a batch at that batch's pace: send_s times its time over the worker's mean."""
    return send_s * batch_s / mean_batch_s if mean_batch_s > 0 else send_s


def ou_log_speed(x: float, dt_s: float, correlation_s: float, sigma: float, z: float) -> float:
    """Pure: an Ornstein-Uhlenbeck log factor moved on by dt_s (stationary sd sigma); correlation 0 redraws it."""
    a = math.exp(-dt_s / correlation_s) if correlation_s > 0 else 0.0
    return a * x + math.sqrt(max(0.0, 1.0 - a * a)) * sigma * z


def run(d: Dispatch, steps: int = 3000, seed: int = 1, warmup: int = 100, starts: Optional[Dict[int, float]] = None,
        batch_series: Optional[Sequence[Sequence[float]]] = None, pin_series: Optional[Sequence[float]] = None,
        loop_series: Optional[Sequence[float]] = None) -> Dict[str, float]:
    """Simulates `steps` steps; returns the median and p90 of the steps after `warmup` (seconds, from one batch in
    hand to the next) and the batches a second over them. starts, when given, receives each batch's start time.

    The loop's take of a batch (and so its next index) can lie ahead of the worker event being handled: the pin
    thread's FIFO sets it in the future. Each index therefore carries the time it is sent, and a worker that frees
    before that time waits for it (until the eighty-second session a busy worker took an index at its own free time,
    before the loop had sent it: pin-bound, the workers ran ahead of their indices).

    batch_series (one list per worker) and pin_series replay measured times in place of the wander and of pin_s:
    worker w's k-th batch takes batch_series[w][k] and the pin thread's k-th batch pin_series[k], each list played
    again from its start when it runs out (replay_case). loop_series likewise replays the loop's own time a step in
    place of loop_s."""
    rng = random.Random(seed)
    sigma = math.sqrt(math.log(1.0 + d.cv * d.cv)) if d.cv > 0 else 0.0
    log_speed = [rng.gauss(0.0, sigma) if sigma > 0 else 0.0 for _ in range(d.workers)]
    last_draw_s = [0.0] * d.workers

    played = [0] * d.workers

    def batch_time_s(w: int, now: float) -> float:
        if batch_series is not None:
            series = batch_series[w]
            played[w] += 1
            return float(series[(played[w] - 1) % len(series)])
        if sigma <= 0:
            return d.batch_s
        log_speed[w] = ou_log_speed(log_speed[w], now - last_draw_s[w], d.correlation_s, sigma, rng.gauss(0.0, 1.0))
        last_draw_s[w] = now
        return d.batch_s * math.exp(log_speed[w] - sigma * sigma / 2.0)   # mean batch_s

    mean_batch_s = [statistics.fmean(batch_series[w]) if batch_series is not None else d.batch_s
                    for w in range(d.workers)]
    queued: List[List[Tuple[int, float]]] = [[] for _ in range(d.workers)]   # (batch, time its index is sent)
    collate_end_s: Dict[int, float] = {}   # each batch's collate end, for the out-of-order share
    busy = [False] * d.workers
    events: List = []          # (time, order, kind, worker, batch): one kind, a batch arriving at the pin thread
    order = 0
    sent = 0
    cycle = 0

    def push(t: float, kind: str, w: int, j: int) -> None:
        nonlocal order
        heapq.heappush(events, (t, order, kind, w, j))
        order += 1

    def start(w: int, now: float) -> None:
        j, sent_s = queued[w].pop(0)
        busy[w] = True
        t0 = max(now, sent_s)
        if starts is not None:
            starts[j] = t0
        bt = batch_time_s(w, t0)
        collate_end_s[j] = t0 + bt
        send_s = paced_send_s(d.send_s, bt, mean_batch_s[w]) if d.send_at_pace else d.send_s
        push(t0 + bt + send_s, "arrive", w, j)

    def send_index(now: float) -> None:
        nonlocal sent, cycle
        w = cycle % d.workers
        cycle += 1
        queued[w].append((sent, now))
        sent += 1
        if not busy[w]:
            start(w, now)

    for _ in range(d.prefetch_factor * d.workers):
        send_index(0.0)
    pin_free_s = 0.0
    pinned = 0
    ready_s: Dict[int, float] = {}
    loop_free_s = 0.0
    in_hand_s: List[float] = []
    while len(in_hand_s) < steps:
        t, _, _, w, j = heapq.heappop(events)
        # a batch reaches the pin thread as its worker frees (its batch time and its send both done)
        busy[w] = False
        if queued[w]:
            start(w, t)
        pin_s = float(pin_series[pinned % len(pin_series)]) if pin_series else d.pin_s
        pinned += 1
        pin_free_s = max(t, pin_free_s) + pin_s        # FIFO: in the order batches arrive
        ready_s[j] = pin_free_s
        while len(in_hand_s) in ready_s:
            k = len(in_hand_s)
            got = max(ready_s.pop(k), loop_free_s)
            in_hand_s.append(got)
            # the loop's own time this step: d.loop_s, or loop_series's next value played in order (and again)
            loop_free_s = got + (float(loop_series[(len(in_hand_s) - 1) % len(loop_series)]) if loop_series
                                 else d.loop_s)
            send_index(got)     # _try_put_index after the batch is handed out
    gaps = sorted(b - a for a, b in zip(in_hand_s[warmup:], in_hand_s[warmup + 1:]))
    n = len(gaps)
    whole = n // d.workers * d.workers    # whole rounds: a window cut inside a wave would bias the rate
    # the share of consecutive batches whose collate ended in the other order, over the batches after warmup
    # (timeline_analysis.out_of_order_share: the cases' definition and the simulator's)
    done = [collate_end_s.get(j) for j in range(warmup, len(in_hand_s))]
    return {"step_p50_s": gaps[n // 2], "step_p90_s": gaps[int(0.9 * (n - 1))],
            "batches_per_s": whole / (in_hand_s[warmup + whole] - in_hand_s[warmup]),
            "out_of_order": timeline_analysis.out_of_order_share(done)}


def over_seeds(d: Dispatch, seeds: Sequence[int], steps: int = 3000) -> Dict[str, float]:
    """Pure given the seeds: the mean of run()'s figures over them."""
    rs = [run(d, steps, s) for s in seeds]
    return {k: statistics.mean(r[k] for r in rs) for k in rs[0]}


PIN_MODES = ("measured", "shuffled", "lognormal", "constant", "cpu", "wall")


def case_series(timeline: Dict[str, Any], num_workers: int) -> Dict[str, Any]:
    """Pure: from a case's timeline (harness --timeline) what replay_case plays back: each worker's batch walls in
    order (first __getitem__ start to collate end), the pin thread's cycles in order from the loop's steady window on
    (one pin_memory() call's end to the next), and the loop's own time a step (a return to its next call, median over
    the steady window)."""
    skip = int(timeline["skip"])
    main = timeline["main"]
    walls = [[b - a for a, b in timeline["workers"][str(w)]] for w in range(num_workers)]
    cycles = timeline_analysis.pin_cycles(timeline.get("pin") or [], main["next_start"][skip], math.inf)
    turns = sorted(main["next_start"][i + 1] - main["next_end"][i]
                   for i in range(skip, min(len(main["next_start"]) - 1, len(main["next_end"]))))
    own = [main["next_start"][i + 1] - main["next_end"][i]
           for i in range(skip, min(len(main["next_start"]) - 1, len(main["next_end"])))]
    return {"walls": walls, "pin_cycles": cycles, "loop_s": turns[len(turns) // 2] if turns else 0.0,
            "loop_own_s": own}


def backlog_service_s(timeline: Dict[str, Any], num_workers: int, put_margin_s: float = 0.008,
                      min_batches: int = 20) -> Optional[float]:
    """Pure: the pin thread's mean service wall a batch from a case's timeline: its cycles (one pin_memory() end to the
    next) over the steady window where the batch it served next had collated more than put_margin_s (its put's trip,
    about 3 ms, and a margin) before the cycle began, so that it was waiting: the pin thread's own time, its CPU plus
    its waits for the GIL. None under min_batches such cycles. Runs 79-83's tensor cases read 1.04-1.09x the pin
    thread's CPU a batch at 4 workers (validation-runs.md run 83, finding 6)."""
    pins = timeline.get("pin") or []
    serv = [pins[i][1] - pins[i - 1][1] for i in backlogged_cycles(timeline, num_workers, put_margin_s)]
    return statistics.fmean(serv) if serv and len(serv) >= min_batches else None


def backlogged_cycles(timeline: Dict[str, Any], num_workers: int, put_margin_s: float = 0.008) -> List[int]:
    """Pure: the indices i of a pinned case's pin cycles (the i-1-th pin_memory() call's end to the i-th's; the i-th
    call served the i-th batch received) over the steady window where the batch served had collated more than
    put_margin_s before the cycle began, so that it was waiting. Empty without the data."""
    pins, rec = timeline.get("pin") or [], timeline.get("pin_received") or []
    n = min(len(pins), len(rec))
    if n < 2 or num_workers < 1:
        return []
    done = {k * num_workers + int(w): b for w, sp in (timeline.get("workers") or {}).items()
            for k, (a, b) in enumerate(sp)}
    lo = timeline["main"]["next_start"][int(timeline.get("skip") or 0)]
    return [i for i in range(1, n)
            if pins[i][1] >= lo and rec[i][0] in done and done[rec[i][0]] + put_margin_s < pins[i - 1][1]]


def pin_series_for(cycles: Sequence[float], mode: str, rng: random.Random, service_s: Optional[float] = None
                   ) -> List[float]:
    """Pure given rng: the pin thread's times a batch for replay_case: the measured cycles in order, shuffled (their
    spread, no memory), log-normal draws of their mean and cv (no memory, no shape), or their mean throughout."""
    mean = statistics.fmean(cycles)
    if mode == "measured":
        return list(cycles)
    if mode == "shuffled":
        return rng.sample(list(cycles), len(cycles))
    if mode == "lognormal":
        cv = statistics.pstdev(cycles) / mean
        s2 = math.log1p(cv * cv)
        return [mean * math.exp(rng.gauss(0.0, math.sqrt(s2)) - s2 / 2.0) for _ in cycles]
    if mode == "constant":
        return [mean]
    if mode in ("cpu", "wall"):
        # a constant service time from outside the cycles, which in a worker-bound case hold the pin thread's waits
        # for the next batch (ninetieth session): cpu, its CPU a batch in situ; wall, its cycle where the next batch
        # was waiting (backlog_service_s), the CPU plus its waits inside the cycle
        if not service_s or service_s <= 0:
            raise ValueError(f"pin mode {mode!r} needs the pin thread's service time a batch")
        return [float(service_s)]
    raise ValueError(f"pin mode {mode!r}: expected one of {', '.join(PIN_MODES)}")


def replay_case(case: Dict[str, Any], mode: str, seed: int = 1, put_s: float = 0.0, loop_replay: bool = False
                ) -> Optional[Dict[str, float]]:
    """The dispatch of one pinned in-order case with its workers' and pin thread's measured times played back and the
    loop's measured own time a step: its p90 step against the case's. None without a timeline with pin spans.
    The eighty-second session (validation-runs.md "Replayed workers: what is left", finding 6): over the 12
    sync_every cases of runs 59b1-64b1 the measured pin cycles give the p90 step within -1.7% signed (3.3% mean abs),
    a constant pin thread -8.0%, where the simulator with the workers replayed gives -9.2%."""
    k = case.get("knobs") or {}
    tl = (case.get("measured") or {}).get("timeline") or {}
    nw = int(k.get("num_workers") or 0)
    if not k.get("pin_memory") or not k.get("in_order", True) or nw < 1 or not tl.get("pin"):
        return None
    series = case_series(tl, nw)
    if len(series["pin_cycles"]) < 10 or any(not w for w in series["walls"]):
        return None
    n = min(len(w) for w in series["walls"]) * nw
    service_s = (backlog_service_s(tl, nw) if mode == "wall" else
                 ((case.get("measured") or {}).get("in_situ") or {}).get("pin_thread_cpu_s_per_batch"))
    if mode in ("cpu", "wall") and not service_s:
        return None
    d = Dispatch(workers=nw, prefetch_factor=int(k.get("prefetch_factor") or 2), cv=0.0, pin_s=0.0,
                 loop_s=series["loop_s"], send_s=put_s, send_at_pace=True)
    r = run(d, steps=max(n - nw * d.prefetch_factor, 200), warmup=int(tl["skip"]),
            batch_series=series["walls"], pin_series=pin_series_for(series["pin_cycles"], mode, random.Random(seed), service_s),
            loop_series=series["loop_own_s"] if loop_replay else None)
    measured = float(case["measured"]["step_time_s"]["p90"])
    from replay_anatomy_diagnostic import measured_anatomy   # here: it imports convert, which needs no torch
    return {"measured_p90_s": measured, "p90_s": r["step_p90_s"], "error": (r["step_p90_s"] - measured) / measured,
            "loop_s": series["loop_s"], "out_of_order": r["out_of_order"],
            "measured_out_of_order": measured_anatomy(tl, nw)["out_of_order"]}


def replay_main(paths: Sequence[str], modes: Sequence[str], put_s: float = 0.0, loop_replay: bool = False) -> int:
    """--replay: each pinned in-order case with a timeline in the calls' results, its p90 step by pin mode, and the
    signed and abs mean error by family."""
    import convert   # noqa: E402 (beside this file; reads a call's cases.json however it is stored)
    errors: Dict[Tuple[str, str], List[float]] = {}
    docs = [(path, convert.read_call_json(path, "cases.json")) for path in paths]   # a bad folder: one line, exit 2
    print(f"{'case':52s} {'loop ms':>7s} {'measured':>8s}  " + "  ".join(f"{m:>16s}" for m in modes)
          + "  out of order: measured, then by mode")
    for path, doc in docs:
        for c in doc["cases"]:
            if c.get("status") != "ok":
                continue
            rows = {m: replay_case(c, m, put_s=put_s, loop_replay=loop_replay) for m in modes}
            if any(r is None for r in rows.values()):
                continue
            first = next(iter(rows.values()))
            mo = first["measured_out_of_order"]
            print(f"{os.path.basename(os.path.normpath(path))[-5:]}:{c['id'][:46]:46s} {first['loop_s'] * 1e3:7.2f} "
                  f"{first['measured_p90_s'] * 1e3:6.1f}ms  "
                  + "  ".join(f"{r['p90_s'] * 1e3:7.1f} ({100 * r['error']:+6.1f}%)" for r in rows.values())
                  + "  out of order " + ("n/a" if mo is None else f"{mo:.2f}") + " measured, "
                  + ", ".join("n/a" if r["out_of_order"] is None else f"{r['out_of_order']:.2f}" for r in rows.values()))
            for m, r in rows.items():
                errors.setdefault((c["family"], m), []).append(r["error"])
    for fam in sorted({f for f, _ in errors}):
        print(f"{fam:22s} " + "  ".join(
            f"{m}: {100 * statistics.fmean(errors[(fam, m)]):+.1f}% signed, "
            f"{100 * statistics.fmean(abs(e) for e in errors[(fam, m)]):.1f}% abs" for m in modes)
            + f" ({len(errors[(fam, modes[0])])} cases)")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--prefetch-factor", type=int, default=2)
    ap.add_argument("--batch-ms", type=float, default=73.0, help="a worker's mean time per batch")
    ap.add_argument("--cv", type=float, default=0.11, help="the batch time's cv (log-normal wander)")
    ap.add_argument("--correlation-s", type=float, default=0.3)
    ap.add_argument("--send-ms", type=float, default=0.0)
    ap.add_argument("--pin-ms", type=float, default=16.0, help="the pin thread's time per batch (0: none)")
    ap.add_argument("--loop-ms", type=float, default=11.5)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--replay", nargs="+", default=None, metavar="RESULTS_DIR",
                    help="instead: each pinned in-order case with a timeline in these calls, its workers' and pin "
                         "thread's measured times played back with the loop's measured own time (replay_case)")
    ap.add_argument("--put-ms", type=float, default=0.0,
                    help="with --replay, each worker's put after its batch at that batch's pace (its time over the "
                         "worker's mean), in ms at the mean: validation-runs.md \"The put's pace\" (default 0)")
    ap.add_argument("--loop-replay", action="store_true",
                    help="with --replay, the loop's measured own time a step (its next() call's start less the "
                         "previous one's return) played back in order instead of its median")
    ap.add_argument("--pin", default=",".join(PIN_MODES),
                    help=f"with --replay, the pin thread's times: any of {', '.join(PIN_MODES)}, comma-separated")
    a = ap.parse_args(argv)
    if a.replay:
        modes = [m for m in a.pin.split(",") if m]
        bad = [m for m in modes if m not in PIN_MODES]
        if bad or not modes:
            ap.error(f"--pin {a.pin!r}: expected one or more of {', '.join(PIN_MODES)}")
        if a.put_ms < 0:
            ap.error(f"--put-ms {a.put_ms}: expected >= 0")
        return replay_main(a.replay, modes, a.put_ms / 1e3, a.loop_replay)
    if a.workers < 1 or a.prefetch_factor < 1 or a.batch_ms <= 0 or a.loop_ms < 0 or a.pin_ms < 0 or a.steps < 200:
        ap.error("workers and prefetch factor >= 1, batch-ms > 0, loop-ms and pin-ms >= 0, steps >= 200")
    d = Dispatch(a.workers, a.prefetch_factor, a.batch_ms / 1e3, a.cv, a.correlation_s, a.send_ms / 1e3,
                 a.pin_ms / 1e3, a.loop_ms / 1e3)
    r = over_seeds(d, range(1, a.seeds + 1), a.steps)
    print(f"step median {r['step_p50_s'] * 1e3:.1f} ms, p90 {r['step_p90_s'] * 1e3:.1f} ms, "
          f"{r['batches_per_s']:.1f} batches/s (mean of {a.seeds} seeds, {a.steps} steps each)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
