#!/usr/bin/env python3
"""When a pinning loader's loop gets its batch, and what the pin thread's receive costs the loop, from the
harness's --timeline (pinned cases with workers).

The timeline times each pin_memory() call of the pin thread (timeline["pin"]: the copy into page-locked memory, not
the receive before it nor the free of the worker's batch and the put after it) and each next() of the loop. For each
next() that waited (a pin_memory() call ended while it was blocked) this reads:

- the hand-off delay: from the end of the last pin_memory() before next() returned to that return. PyTorch's pin
  loop frees the worker's batch (munmap of its shared pages) and puts the pinned one on its queue after pin_memory();
- the lead: from that return to the start of the pin thread's next pin_memory() call (its receive of the next batch);
- the pin thread's gap: from one pin_memory() call's end to the next one's start (free, put, receive);
- the loop's time from next()'s return to its last launch (.to() and the step's launches), in the steps whose next()
  waited (their ops run right after the hand-off, beside the pin thread's receive of the next batch) and in those
  that found the batch in hand (run a batch later, beside pin_memory(), which holds no GIL), and their difference.

The fifty-ninth session's reading (validation-runs.md run 62, finding 9): the hand-off delay grows with the batch's
bytes (about 2 / 3.6 / 7 / 13 ms for 9.6-77 MB image batches, 7.4 ms for 38.5 MB tensor batches) and is the same
whether or not the pin thread receives another batch right after: it is the free, not a wait for the GIL. The loop's
ops right after the hand-off take 1.41-1.55 ms (median over cases) in sync_every s0 / s1 / s8 alike; the simulator's
took 2.8 ms with the whole fixed receive held, within 0.03 ms with a 0.48 ms hold (ipc.receive_gil_s_per_batch).

Run from the repository root:
    python3 calibrate/validation/handoff_diagnostic.py --family sync_every RESULTS_DIR ...   (pooled by --knob)
    python3 calibrate/validation/handoff_diagnostic.py RESULTS_DIR                            (per case)
    ... --simulated [--profile-set ipc.receive_gil_s_per_batch=0.00048]   (the same from the simulator's trace)
"""
import argparse
import bisect
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
import overtake_diagnostic  # noqa: E402
import timeline_analysis  # noqa: E402


def handoff_delays(timeline: Dict[str, Any]) -> Optional[Dict[str, List[float]]]:
    """Pure: {"delay": [...], "lead": [...], "gap": [...]} in seconds over the steady window (the loop's steps from
    timeline["skip"] on; the pin thread's gaps that start inside it), for the next() calls that waited for a
    pin_memory() call to end (see the module's doc). None without pin spans or a loop."""
    pin = timeline.get("pin") or []
    main = timeline.get("main") or {}
    starts, ends = main.get("next_start") or [], main.get("next_end") or []
    if len(pin) < 2 or not ends:
        return None
    skip = int(timeline.get("skip") or 0)
    pin_starts = [a for a, _ in pin]
    pin_ends = [b for _, b in pin]
    delay: List[float] = []
    lead: List[float] = []
    for i in range(skip, min(len(starts), len(ends))):
        j = bisect.bisect_right(pin_ends, ends[i]) - 1
        if j < 0 or pin_ends[j] < starts[i]:
            continue  # the batch was in hand (or pinned) before next() was called
        delay.append(ends[i] - pin_ends[j])
        k = bisect.bisect_right(pin_starts, ends[i])
        if k < len(pin_starts):
            lead.append(pin_starts[k] - ends[i])
    t0 = ends[skip] if skip < len(ends) else ends[0]
    gap = [pin[j][0] - pin[j - 1][1] for j in range(1, len(pin)) if pin[j - 1][1] >= t0]
    return {"delay": delay, "lead": lead, "gap": gap}


IN_HAND_S = 3e-4  # a next() shorter than this found its batch in hand (the pin thread's hand-off waits are ms)


def _excess(waited: Sequence[float], in_hand: Sequence[float], least: int) -> Optional[Dict[str, Any]]:
    if len(waited) < least or len(in_hand) < least:
        return None
    w, h = statistics.median(waited), statistics.median(in_hand)
    return {"waited_s": w, "in_hand_s": h, "excess_s": w - h, "n_waited": len(waited), "n_in_hand": len(in_hand)}


def loop_excess(timeline: Dict[str, Any], least: int = 20) -> Optional[Dict[str, Any]]:
    """Pure: the loop's time from next()'s return to its last launch (.to() and the step's launches, main "next_end"
    to "launched"), median over the steps whose next() waited for the pin thread against those that found the batch
    in hand (next() under IN_HAND_S), from timeline["skip"] on. A loop that waited runs those ops right after the hand-off,
    beside the pin thread's receive of the next batch; one with its batch in hand runs them beside pin_memory(),
    which holds no GIL (the GIL-free copy). The difference is what the receive costs the loop a step (plus any cost of
    waking up). None with fewer than `least` steps of either kind."""
    main = timeline.get("main") or {}
    ns, ne, la = main.get("next_start") or [], main.get("next_end") or [], main.get("launched") or []
    waited: List[float] = []
    in_hand: List[float] = []
    for i in range(int(timeline.get("skip") or 0), min(len(ns), len(ne), len(la))):
        (in_hand if ne[i] - ns[i] < IN_HAND_S else waited).append(la[i] - ne[i])
    return _excess(waited, in_hand, least)


def pair_turnaround(timeline: Dict[str, Any], least: int = 10) -> Optional[float]:
    """Pure: the median time from the return of a batch next() waited for to the return of the next one, where that
    one was in hand (next() under IN_HAND_S): the loop's turnaround after an overtake, the pair whose two indices go
    out together. From timeline["skip"] on; None with fewer than `least` such pairs."""
    main = timeline.get("main") or {}
    ns, ne = main.get("next_start") or [], main.get("next_end") or []
    gaps = [ne[i + 1] - ne[i] for i in range(int(timeline.get("skip") or 0), min(len(ns), len(ne)) - 1)
            if ne[i] - ns[i] >= IN_HAND_S and ne[i + 1] - ns[i + 1] < IN_HAND_S]
    return statistics.median(gaps) if len(gaps) >= least else None


def _steady(steps: Sequence[int], skip_share: float) -> List[int]:
    if not steps:
        return []
    first = steps[0] + int(skip_share * (steps[-1] - steps[0] + 1))
    return [s for s in steps if s >= first]


def simulated_pair_turnaround(events: Sequence[Dict[str, Any]], skip_share: float = 0.2,
                              least: int = 10) -> Optional[float]:
    """Pure: pair_turnaround from the simulator's Perfetto events (timeline_analysis.main_thread_steps): a step waited where it has a
    "wait for batch" of IN_HAND_S or more; the first skip_share of the steps left out."""
    m = timeline_analysis.main_thread_steps(events)
    next_end, wait = m["next_end"], m["wait"]
    gaps = [next_end[s + 1] - next_end[s] for s in _steady(sorted(next_end), skip_share)
            if s + 1 in next_end and wait.get(s, 0.0) >= IN_HAND_S and wait.get(s + 1, 0.0) < IN_HAND_S]
    return statistics.median(gaps) if len(gaps) >= least else None


def simulated_loop_excess(events: Sequence[Dict[str, Any]], skip_share: float = 0.2,
                          least: int = 20) -> Optional[Dict[str, Any]]:
    """Pure: loop_excess read from the simulator's Perfetto events (timeline_analysis.main_thread_steps): per step, from
    next()'s return
    to the end of "training step (python)" (the .to() call and any wait for the GIL between), waited where the step
    has a "wait for batch" of IN_HAND_S or more; the first skip_share of the steps left out."""
    m = timeline_analysis.main_thread_steps(events)
    next_end, launched, wait = m["next_end"], m["launched"], m["wait"]
    steps = _steady(sorted(set(next_end) & set(launched)), skip_share)
    if not steps:
        return None
    waited: List[float] = []
    in_hand: List[float] = []
    for s in steps:
        (waited if wait.get(s, 0.0) >= IN_HAND_S else in_hand).append(launched[s] - next_end[s])
    return _excess(waited, in_hand, least)


def quantiles(values: Sequence[float], qs: Sequence[float] = (0.1, 0.5, 0.9)) -> Optional[List[float]]:
    """Pure: the nearest-rank-below quantiles of values; None when empty."""
    if not values:
        return None
    v = sorted(values)
    return [v[int(q * (len(v) - 1))] for q in qs]


def _q_ms(values: Sequence[float]) -> str:
    q = quantiles(values)
    return "n/a" if q is None else " / ".join(f"{1e3 * x:.2f}" for x in q)


def paired_summary(pairs: Sequence[Any]) -> str:
    """Pure: over (measured, simulated) loop_excess pairs of the same cases, the medians of the loop's time after a
    hand-off (waited) and with the batch in hand, measured and simulated, and the median of the per-case differences
    after a hand-off (what ipc.receive_gil_s_per_batch was set by: run 62, finding 9)."""
    if not pairs:
        return "no case with both"
    med = lambda xs: f"{1e3 * statistics.median(xs):.2f}"  # noqa: E731
    return (f"{len(pairs)} cases: after a hand-off measured {med([m['waited_s'] for m, _ in pairs])} / simulated "
            f"{med([s['waited_s'] for _, s in pairs])} ms (median of the differences "
            f"{med([s['waited_s'] - m['waited_s'] for m, s in pairs])}); in hand "
            f"{med([m['in_hand_s'] for m, _ in pairs])} / {med([s['in_hand_s'] for _, s in pairs])} ms")


def _ms_or_na(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{1e3 * x:.2f}"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", nargs="+", help="one call's results folder (several with --family)")
    ap.add_argument("--family", default=None,
                    help="pool these families' cases (comma-separated) over every call given, by --knob")
    ap.add_argument("--knob", default="sync_every", help="with --family, split by this knob (default %(default)s)")
    ap.add_argument("--simulated", action="store_true",
                    help="also the loop's excess from the simulator's trace of each case as the table builds it "
                         "(seed 1; overtake_diagnostic.simulated_trace)")
    overtake_diagnostic.add_simulated_options(ap)   # --profile-set, --set, --pipeplan: with --simulated
    a = ap.parse_args(argv)
    if not a.family and len(a.results_dir) != 1:
        ap.error("one results folder, or several with --family")
    overtake_diagnostic.check_simulated_options(ap, a, a.simulated)
    groups: Dict[str, Dict[str, List[float]]] = {}
    print("hand-off delay (pin_memory() end -> next() return) | lead (return -> next pin_memory()) | the pin "
          "thread's gap, ms, p10 / p50 / p90; the loop's excess: next() return -> last launch, waited less in hand, "
          "ms (median; simulated with --simulated)")
    for rd in a.results_dir:
        doc = convert.read_call_json(rd, "cases.json")
        profile = convert.read_call_json(rd, "profile.json") if a.simulated else {}
        for c in doc["cases"]:
            if a.family and c.get("family") not in a.family.split(","):
                continue
            tl = (c.get("measured") or {}).get("timeline") or {}
            got = handoff_delays(tl)
            if not got or not got["delay"]:
                continue
            ex = loop_excess(tl)
            sim = None
            events_turn = None
            if a.simulated and ex is not None:
                events = overtake_diagnostic.simulated_trace(c, doc, profile, a.pipeplan, 0, a.profile_set,
                                                             a.scenario_set)
                sim = simulated_loop_excess(events) if events else None
                events_turn = simulated_pair_turnaround(events) if events else None
            if a.family:
                g = groups.setdefault(str((c.get("knobs") or {}).get(a.knob)),
                                      {"delay": [], "lead": [], "gap": [], "cases": [], "excess": [], "sim": [],
                                       "pairs": []})
                for k in ("delay", "lead", "gap"):
                    g[k].extend(got[k])
                g["cases"].append(1.0)
                if ex is not None:
                    g["excess"].append(ex["excess_s"])
                if sim is not None:
                    g["sim"].append(sim["excess_s"])
                    g["pairs"].append((ex, sim))
                turn = pair_turnaround(tl)
                if turn is not None:
                    g.setdefault("turn", []).append(turn)
                if events_turn is not None:
                    g.setdefault("sim_turn", []).append(events_turn)
            else:
                steps = max(1, len((tl.get("main") or {}).get("next_end") or []) - int(tl.get("skip") or 0))
                print(f"{c['id'][:60]:60s} {_q_ms(got['delay'])} | {_q_ms(got['lead'])} | {_q_ms(got['gap'])}"
                      f"   waited {len(got['delay']) / steps:.0%}   excess {_ms_or_na(ex and ex['excess_s'])}"
                      + (f" / simulated {_ms_or_na(sim and sim['excess_s'])}" if a.simulated else ""))
    for value, g in sorted(groups.items()):
        line = (f"{a.family} {a.knob}={value} ({len(g['cases'])} cases, {len(g['delay'])} returns): "
                f"{_q_ms(g['delay'])} | {_q_ms(g['lead'])} | {_q_ms(g['gap'])}; excess {_q_ms(g['excess'])}")
        if a.simulated:
            line += f" ({len(g['excess'])} cases), simulated {_q_ms(g['sim'])} ({len(g['sim'])})"
        print(line)
        if a.simulated and g["pairs"]:
            print("    " + paired_summary(g["pairs"]))
        if g.get("turn"):
            line = (f"    the turnaround after an overtake (a waited return to the next, in hand), median over cases: "
                    f"measured {1e3 * statistics.median(g['turn']):.2f} ms ({len(g['turn'])} cases)")
            if a.simulated and g.get("sim_turn"):
                line += f", simulated {1e3 * statistics.median(g['sim_turn']):.2f} ms ({len(g['sim_turn'])})"
            print(line)
    if a.simulated and len(groups) > 1:
        print("all: " + paired_summary([p for g in groups.values() for p in g["pairs"]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
