#!/usr/bin/env python3
"""Does a batch reach the pin thread in the order its worker's collate returned? Read from the loop's in-hand returns.

In an in-order loader whose pin thread is the bottleneck, batch b is in hand when the loop asks for it (next() returns
at once) exactly when the pin thread took it before batch b-1: every later batch waits in the pin thread's queue
behind the one before it. So over pairs (b-1, b), the share of b found in hand, by how much later b's collate returned
than b-1's (d), is the chance that b reached the pin thread first: a step at d = 0 if batches arrive in collate order.
Pairs behind an older batch still out (a cascade) are left out, since b is then in hand for another reason.

The eighty-third session's reading (docs/validation-runs.md, "The put's pace"), 33 pinned 8-worker in-order cases of
runs 59b1-70pt: in hand 87% at d in [-0.5, 0) ms, 65% at [0, 0.5), 37% at [0.5, 1), 14% at [1, 1.5), 5% at [1.5, 2),
1.6% beyond 3 ms: the put after the collate (the feeder thread's pickling and send) decides, and the slower worker's
puts later. Where the harness recorded the pin thread's own order (timeline pin_received, since the eighty-third
session) the share of b taken before b-1 is printed beside it, with no pair left out, and each batch's delay from its
collate's return to the pin thread's get. With --simulate, the same from the simulator's trace with each worker's
measured batch times replayed (insitu_diagnostic.py --wander replay --write-inputs), whose replayed batches put at
their own pace, and beside pin_received the simulated pin thread's own order; by default the simulator's own split of
loader.worker_s_per_batch (loader.worker_put_share, 0.67 before the hand-off since the eighty-sixth session), and with
--put-share S the key cut to S, all of it before the hand-off (1: the whole key, the simulator before). Run 78
(validation-runs.md, findings 1, 2 and 5): the pin thread takes the batches in collate order, the in-hand reading
agrees with its order pair for pair, and the older calls' curve crosses the replay's near S = 0.6. Run 79, finding 1:
over 605 batches the pin thread waited for (the w2 case), collate to get 6.16 ms at the median, the replay's 8.00 with
the whole key and 6.10 at S = 0.66. --by-case prints the waited delays and each worker's gap from a collate's return
to its next batch's start, per case (run 79, finding 2); --implied-share, per case with 50 or more waited batches, the
share at which the replay's median delay meets the measured one (run 79a 0.67, 79b 0.68).

Run from the repository root:
    python3 calibrate/validation/put_order_diagnostic.py RESULTS_DIR [RESULTS_DIR ...] [--simulate] [--split]
        [--put-share S] [--by-case] [--implied-share]
"""
import argparse
import os
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
import timeline_analysis  # noqa: E402
from replay_anatomy_diagnostic import (loop_returns_from_trace, simulated_trace, starts_by_batch,  # noqa: E402
                                       write_replay_inputs)

# bin edges of d (seconds): the later batch's collate return less the earlier one's
EDGES_S = (-0.003, -0.002, -0.0015, -0.001, -0.0005, 0.0, 0.0005, 0.001, 0.0015, 0.002, 0.003)
IN_HAND_S = 0.0005        # a next() shorter than this found its batch in hand
TOGETHER_S = 0.003        # two batches whose workers started closer than this went out together
LOOK_BACK = 8             # batches before b-1 checked for one still out (one round of 8 workers)
WAITED_MARGIN_S = 0.005   # after a pin_memory() end, the release of the worker's batch (about 4 ms at 38.5 MB)


def bin_of(d_s: float, edges: Sequence[float] = EDGES_S) -> int:
    """Pure: the bin index of d_s: 0 below edges[0], len(edges) at or above the last edge."""
    i = 0
    while i < len(edges) and d_s >= edges[i]:
        i += 1
    return i


def in_hand_pairs(start: Dict[int, float], done: Dict[int, float], called: Dict[int, float],
                  returned: Dict[int, float], first: int, last: int
                  ) -> List[Tuple[float, bool, bool]]:
    """Pure: for each batch b in first..last whose pair (b-1, b) is not behind an older batch still out (none of the
    LOOK_BACK batches before b-1 collated after b-1 or b), (d, in hand, started together): d = done[b] - done[b-1],
    in hand whether the loop's next() for b returned within IN_HAND_S, together whether b's worker started within
    TOGETHER_S of b-1's."""
    out = []
    for b in range(max(first, LOOK_BACK + 1), last + 1):
        older = range(b - 1 - LOOK_BACK, b - 1)
        if any(x not in done for x in older) or b - 1 not in done or b not in done:
            continue
        if b not in called or b not in returned:
            continue
        if any(done[x] > min(done[b], done[b - 1]) for x in older):
            continue
        together = b in start and b - 1 in start and start[b] - start[b - 1] < TOGETHER_S
        out.append((done[b] - done[b - 1], returned[b] - called[b] < IN_HAND_S, together))
    return out


def curve(pairs: Sequence[Tuple[float, bool, bool]], together: Optional[bool] = None,
          edges: Sequence[float] = EDGES_S) -> List[Tuple[int, int]]:
    """Pure: per bin of d, (in hand, pairs); together None takes every pair, True / False only those."""
    counts = [[0, 0] for _ in range(len(edges) + 1)]
    for d, hand, tog in pairs:
        if together is not None and tog != together:
            continue
        c = counts[bin_of(d, edges)]
        c[0] += int(hand)
        c[1] += 1
    return [(a, n) for a, n in counts]


def eligible(knobs: Dict[str, Any], timeline: Optional[Dict[str, Any]]) -> bool:
    """Pure: a pinned, in-order, multi-worker case with a timeline that has the pin thread's calls."""
    return bool(timeline and timeline.get("pin") and knobs.get("pin_memory") and knobs.get("in_order", True)
                and int(knobs.get("num_workers") or 0) > 1)


def measured_pairs(case: Dict[str, Any]) -> List[Tuple[float, bool, bool]]:
    """Pure: in_hand_pairs from a case's timeline (harness --timeline), over its steady window."""
    tl = case["measured"]["timeline"]
    start, done = starts_by_batch(tl["workers"], int(case["knobs"]["num_workers"]))
    ns, ne = tl["main"]["next_start"], tl["main"]["next_end"]
    n = min(len(ns), len(ne))
    return in_hand_pairs(start, done, dict(enumerate(ns[:n])), dict(enumerate(ne[:n])), int(tl["skip"]), n - 1)


def received_pairs(case: Dict[str, Any]) -> Tuple[List[Tuple[float, bool, bool]], List[float]]:
    """Pure: from a case whose timeline has pin_received (harness since the eighty-third session: each batch's index as
    the pin thread took it off the result queue, and when), over its steady window: (d, b taken before b-1, started
    together) for every consecutive pair, no cascade filter needed, and each batch's delay from its collate's
    return to the pin thread's get. Empty without pin_received."""
    tl = case["measured"]["timeline"]
    rec = tl.get("pin_received") or []
    if not rec:
        return [], []
    start, done = starts_by_batch(tl["workers"], int(case["knobs"]["num_workers"]))
    got = {int(i): float(t) for i, t in rec}
    skip = int(tl["skip"])
    delays = [got[b] - done[b] for b in sorted(got) if b >= skip and b in done]
    return order_pairs(start, done, [int(i) for i, _ in rec], skip), delays


def order_pairs(start: Dict[int, float], done: Dict[int, float], taken: Sequence[int],
                skip: int) -> List[Tuple[float, bool, bool]]:
    """Pure: for every consecutive pair (b-1, b) from the skip on, both collated, (d = done[b] - done[b-1], b taken
    before b-1 in `taken` (the pin thread's order), whether their workers started within TOGETHER_S)."""
    pos = {b: k for k, b in enumerate(taken)}
    pairs = []
    for b in sorted(pos):
        if b - 1 < skip or b - 1 not in pos or b not in done or b - 1 not in done:
            continue
        together = b in start and b - 1 in start and start[b] - start[b - 1] < TOGETHER_S
        pairs.append((done[b] - done[b - 1], pos[b] < pos[b - 1], together))
    return pairs


def waited_delays(done: Dict[int, float], taken: Sequence[Tuple[int, float]],
                  pin_ends: Sequence[float], skip: int, margin_s: float = WAITED_MARGIN_S) -> List[float]:
    """Pure: the put's latency where nothing queued ahead of it. taken: (batch, when the pin thread had it: its get
    returned, unpickled) in the pin thread's order; pin_ends: when its pin_memory() of each batch ended, in the same
    order. For each batch from the skip on whose collate returned margin_s or more after the pin thread ended the
    previous batch's pin_memory() (the release of the worker's batch follows that call on the pin thread: margin_s
    covers it, so the thread was back in its get, waiting), the delay from that collate's return to the get's: the put
    (the feeder's pickling and send) and the receive (the pipe read, the storage's fd from the worker), no queue."""
    out = []
    for k in range(1, min(len(taken), len(pin_ends))):
        b, got = taken[k]
        if b < skip or b not in done or done[b] < pin_ends[k - 1] + margin_s:
            continue
        out.append(got - done[b])
    return out


def measured_waited(case: Dict[str, Any]) -> List[float]:
    """Pure: waited_delays from a case's timeline with pin_received (harness since the eighty-third session)."""
    tl = case["measured"]["timeline"]
    rec = tl.get("pin_received") or []
    if not rec:
        return []
    _, done = starts_by_batch(tl["workers"], int(case["knobs"]["num_workers"]))
    return waited_delays(done, [(int(i), float(t)) for i, t in rec], [float(e) for _, e in tl.get("pin") or []],
                         int(tl["skip"]))


def _simulated_pin_takes(events: Sequence[Dict[str, Any]]
                         ) -> Tuple[Dict[int, float], Dict[int, float], Dict[int, float], Dict[int, float]]:
    """Pure: from the simulator's trace, each batch's worker start and collate end, when the pin thread had it (its
    receive ended: its map and touch begins, as the harness's pin_memory() call begins with the touch) and when it
    was done with it (its pin_memory span's end, the release included)."""
    spans, _ = timeline_analysis.trace_batches(events)
    start = {b: v[0] for (_, b), v in spans.items()}
    done = {b: v[1] for (_, b), v in spans.items()}
    got: Dict[int, float] = {}
    end: Dict[int, float] = {}
    for b, e in timeline_analysis.pin_thread_batch_spans(events):
        if e["name"].startswith("map, touch"):
            got[b] = e["ts"] / 1e6
        elif e["name"] == "pin_memory":
            end[b] = (e["ts"] + e["dur"]) / 1e6
    return start, done, got, end


def simulated_waited(events: Sequence[Dict[str, Any]], skip: int) -> List[float]:
    """Pure: waited_delays from the simulator's trace (the margin is only conservative here: the span's end includes
    the release)."""
    _, done, got, end = _simulated_pin_takes(events)
    order = sorted((b for b in got if b in end), key=lambda b: got[b])
    return waited_delays(done, [(b, got[b]) for b in order], [end[b] for b in order], skip)


def worker_gaps(per_worker: Dict[Any, Sequence[Sequence[float]]]) -> List[float]:
    """Pure: for each worker's consecutive batches ([[first __getitem__ start, collate end], ...], in order), the next
    batch's start less this batch's collate end: the worker's own loop after a collate (the put() call, the index's
    receive) and any wait for its next index. Where the worker never waits for an index (worker-bound, prefetch
    ahead), its low deciles are the loop's serial part, which the simulator models as the whole
    loader.worker_s_per_batch (run 79, finding 2)."""
    out = []
    for spans in per_worker.values():
        ordered = sorted((float(a), float(z)) for a, z in spans)
        out += [nxt[0] - cur[1] for cur, nxt in zip(ordered, ordered[1:])]
    return out


def simulated_worker_spans(events: Sequence[Dict[str, Any]]) -> Dict[int, List[Tuple[float, float]]]:
    """Pure: the simulator's trace as the harness's per-worker intervals {worker: [(start, collate end), ...]}."""
    spans, _ = timeline_analysis.trace_batches(events)
    out: Dict[int, List[Tuple[float, float]]] = {}
    for (w, _b), v in spans.items():
        out.setdefault(w, []).append(v)
    return out


def implied_share(measured_s: float, low: Tuple[float, float], high: Tuple[float, float]) -> Optional[float]:
    """Pure: the put share whose replayed delay equals the measured one, the delay being linear in the share (the put
    is share x key x the batch's pace, the receive after it the same at any share): low and high are (share, replayed
    median delay) at two shares. None where the two delays are equal (the share does not move the delay)."""
    (s0, d0), (s1, d1) = low, high
    if d1 == d0:
        return None
    return s0 + (s1 - s0) * (measured_s - d0) / (d1 - d0)


MIN_WAITED_FOR_SHARE = 50     # waited batches a case needs before --implied-share reads it
IMPLIED_SHARES = (0.5, 1.0)   # the two replays --implied-share interpolates between


def implied_shares(path: str, cases: Sequence[Dict[str, Any]], pipeplan: str, tmp: str
                   ) -> List[Tuple[str, float, Optional[float], Optional[float], Optional[float]]]:
    """(case id, measured median delay, replayed median at IMPLIED_SHARES[0], at [1], the implied share) for each
    case with pin_received and MIN_WAITED_FOR_SHARE waited batches or more, from two replays of the call with the
    key cut to each share (insitu_diagnostic.py --put-share)."""
    want = {c["id"]: sorted(measured_waited(c)) for c in cases}
    want = {k: v for k, v in want.items() if len(v) >= MIN_WAITED_FOR_SHARE}
    if not want:
        return []
    medians: Dict[str, List[Optional[float]]] = {k: [] for k in want}
    for share in IMPLIED_SHARES:
        inputs = os.path.join(tmp, f"share-{share:g}-" + os.path.basename(os.path.normpath(path)))
        if write_replay_inputs(path, inputs, pipeplan, share) is not None:
            return []
        for c in cases:
            if c["id"] not in want:
                continue
            scen = os.path.join(inputs, c["id"] + ".scenario.json")
            ev = (simulated_trace(pipeplan, scen, scen.replace(".scenario.json", ".profile.json"), tmp)
                  if os.path.isfile(scen) else None)
            got = sorted(simulated_waited(ev, int(c["measured"]["timeline"]["skip"]))) if ev else []
            medians[c["id"]].append(got[len(got) // 2] if got else None)
    out = []
    for cid, xs in want.items():
        m = xs[len(xs) // 2]
        d0, d1 = medians[cid]
        both = d0 is not None and d1 is not None      # each replay read some waited batch
        out.append((cid, m, d0, d1, implied_share(m, (IMPLIED_SHARES[0], d0), (IMPLIED_SHARES[1], d1)) if both else None))
    return out


def simulated_received_pairs(events: Sequence[Dict[str, Any]], skip: int) -> List[Tuple[float, bool, bool]]:
    """Pure: order_pairs in the order the simulated pin thread took the batches, as received_pairs measures it."""
    start, done, got, _ = _simulated_pin_takes(events)
    return order_pairs(start, done, sorted(got, key=lambda b: got[b]), skip)


def simulated_pairs(events: Sequence[Dict[str, Any]], skip: int) -> List[Tuple[float, bool, bool]]:
    """Pure: the same from the simulator's trace (a batch ends at its collate: timeline_analysis.trace_batches)."""
    spans, _ = timeline_analysis.trace_batches(events)
    start = {b: v[0] for (_, b), v in spans.items()}
    done = {b: v[1] for (_, b), v in spans.items()}
    called, returned = loop_returns_from_trace(events)
    return in_hand_pairs(start, done, called, returned, skip, max(done) if done else -1)


def _label(i: int, edges: Sequence[float]) -> str:
    lo = f"{edges[i - 1] * 1e3:.1f}" if i > 0 else "-inf"
    hi = f"{edges[i] * 1e3:.1f}" if i < len(edges) else "inf"
    return f"[{lo}, {hi}) ms"


def _deciles_ms(xs: Sequence[float], unit: str = "") -> str:
    """"p10 X{unit}, median Y, p90 Z" of xs in milliseconds (the unit written once, after the first figure)."""
    q = sorted(xs)
    return f"p10 {1e3 * q[len(q) // 10]:.2f}{unit}, median {1e3 * q[len(q) // 2]:.2f}, p90 {1e3 * q[9 * len(q) // 10]:.2f}"


def print_curves(rows: Sequence[Tuple[str, List[Tuple[int, int]]]], edges: Sequence[float] = EDGES_S) -> None:
    print(f"{'d (later collate less earlier)':32s}" + "".join(f"{name:>24s}" for name, _ in rows))
    for i in range(len(edges) + 1):
        cells = []
        for _, c in rows:
            a, n = c[i]
            cells.append(f"{a:5d} / {n:5d} = {a / n:.3f}" if n else f"{'n/a':>21s}")
        print(f"{_label(i, edges):32s}" + "".join(f"{x:>24s}" for x in cells))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", nargs="+", help="device calls' result folders (harness --timeline)")
    ap.add_argument("--simulate", action="store_true",
                    help="also the simulator's curve with each worker's measured batch times replayed (one seed)")
    ap.add_argument("--split", action="store_true", help="also by whether the two batches' workers started together")
    ap.add_argument("--put-share", type=float, default=None,
                    help="with --simulate: the key (loader.worker_s_per_batch) cut to this share, all of it put "
                         "after each replayed collate (insitu_diagnostic.py --put-share; 1: the whole key before the "
                         "hand-off); default the simulator's own split (loader.worker_put_share, 0.67)")
    ap.add_argument("--by-case", action="store_true",
                    help="also, per case: the waited batches' delay from collate to the pin thread's get and each "
                         "worker's gap from a collate's return to its next batch's start, measured (and with "
                         "--simulate, replayed)")
    ap.add_argument("--implied-share", action="store_true",
                    help="also, per case with 50 or more waited batches: the put share at which the replay's median "
                         "collate-to-get delay equals the measured one (two replays, the key cut to 0.5 and to 1, "
                         "interpolated; device plan item 25)")
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)
    a = ap.parse_args(argv)
    if a.put_share is not None and not 0.0 <= a.put_share <= 1.0:
        ap.error(f"--put-share {a.put_share}: expected a share in [0, 1]")
    if a.simulate or a.implied_share:
        convert.exit_without_pipeplan("put_order_diagnostic", a.pipeplan)
    measured: List[Tuple[float, bool, bool]] = []
    simulated: List[Tuple[float, bool, bool]] = []
    received: List[Tuple[float, bool, bool]] = []
    delays: List[float] = []
    waited: List[float] = []            # the put and receive where the pin thread waited (pin_received)
    sim_waited: List[float] = []
    sim_received: List[Tuple[float, bool, bool]] = []
    by_case: Dict[str, Dict[str, List[float]]] = {}   # --by-case: case id -> name -> seconds
    shares: List[Tuple[str, float, Optional[float], Optional[float], Optional[float]]] = []   # --implied-share
    docs = [(path, convert.read_call_json(path, "cases.json")) for path in a.results_dir]  # a bad folder: one line
    with tempfile.TemporaryDirectory() as tmp:
        for path, doc in docs:
            cases = [c for c in doc["cases"] if c.get("status") == "ok"
                     and eligible(c.get("knobs") or {}, (c.get("measured") or {}).get("timeline"))]
            for c in cases:
                measured += measured_pairs(c)
                got, late = received_pairs(c)
                received += got
                delays += late
                case_waited = measured_waited(c)
                waited += case_waited
                by_case[c["id"]] = {"waited": case_waited, "gap": worker_gaps(c["measured"]["timeline"]["workers"])}
            if a.implied_share and cases:
                shares += implied_shares(path, cases, a.pipeplan, tmp)
            if not a.simulate or not cases:
                continue
            inputs = os.path.join(tmp, os.path.basename(os.path.normpath(path)))
            failed = write_replay_inputs(path, inputs, a.pipeplan, a.put_share)
            if failed is not None:
                print(f"put_order_diagnostic: {path}: insitu_diagnostic.py failed: {failed}", file=sys.stderr)
                return 1
            for c in cases:
                scen = os.path.join(inputs, c["id"] + ".scenario.json")
                if not os.path.isfile(scen):
                    continue
                ev = simulated_trace(a.pipeplan, scen, scen.replace(".scenario.json", ".profile.json"), tmp)
                if ev is None:
                    print(f"put_order_diagnostic: {c['id']}: pipeplan failed", file=sys.stderr)
                    return 1
                tl = c["measured"]["timeline"]
                simulated += simulated_pairs(ev, int(tl["skip"]))
                by_case[c["id"]]["sim_gap"] = worker_gaps(simulated_worker_spans(ev))
                if tl.get("pin_received"):     # beside the measured figure only
                    by_case[c["id"]]["sim_waited"] = simulated_waited(ev, int(tl["skip"]))
                    sim_waited += by_case[c["id"]]["sim_waited"]
                    sim_received += simulated_received_pairs(ev, int(tl["skip"]))
    rows = [("measured", curve(measured))]
    if a.simulate:
        rows.append(("simulated (replayed)" if a.put_share is None else f"replayed, put {a.put_share:g}",
                     curve(simulated)))
    if received:
        rows.append(("taken first (received)", curve(received)))
    if sim_received:
        rows.append(("taken first (simulated)", curve(sim_received)))
    if a.split:
        rows += [("measured, together", curve(measured, True)), ("measured, apart", curve(measured, False))]
    print(f"{len(measured)} measured pairs" + (f", {len(simulated)} simulated" if a.simulate else "")
          + (f", {len(received)} with the pin thread's own order (pin_received)" if received else ""))
    print_curves(rows)
    if delays:
        # pin-bound, mostly the batch's wait in the pin thread's queue; the low end is the put and the pipe
        print(f"collate's return to the pin thread's get: min {1e3 * min(delays):.2f} ms, {_deciles_ms(delays)} "
              f"({len(delays)} batches; where the pin thread is the bottleneck, mostly the wait in its queue)")
    for name, xs in (("measured", waited), ("simulated (replayed)", sim_waited)):
        if xs:
            print(f"batches the pin thread waited for ({name}): collate's return to the get (put and receive, no queue):"
                  f" {_deciles_ms(xs, ' ms')} ({len(xs)} batches)")
    if a.by_case:
        print_by_case(by_case)
    ms = lambda x: "n/a" if x is None else f"{1e3 * x:.2f}"      # noqa: E731
    for cid, m, d0, d1, s in shares:
        print(f"{cid[:60]}: implied put share {'n/a' if s is None else f'{s:.2f}'} (measured median {ms(m)} ms; "
              f"replayed with the key cut to {IMPLIED_SHARES[0]:g}: {ms(d0)}, to {IMPLIED_SHARES[1]:g}: {ms(d1)})")
    return 0


def print_by_case(by_case: Dict[str, Dict[str, List[float]]]) -> None:
    labels = (("waited", "waited, measured"), ("sim_waited", "replayed"), ("gap", "worker gap, measured"),
              ("sim_gap", "replayed"))
    for cid, got in by_case.items():
        parts = [f"{label} {_deciles_ms(got[k])} ms (n={len(got[k])})" for k, label in labels if got.get(k)]
        print(f"{cid[:60]}: " + "; ".join(parts or ["no batches"]))


if __name__ == "__main__":
    sys.exit(main())
