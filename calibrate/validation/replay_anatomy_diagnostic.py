#!/usr/bin/env python3
"""What is left of a pinned in-order case's p90 step miss once each worker plays back its own measured batch times.

`insitu_diagnostic.py R --base table --wander replay` takes the workers' spread out of the question: what it still
misses is the rest of the pipeline (the pin thread, the loop, the index hand-out). This reads, per pinned case with a
timeline (harness --timeline), measured against the simulator's trace of the same replayed inputs (seed 1):

- the pin thread's cycle: from one pin_memory() call's end to the next one's (pin-bound, the step's pace), its cv,
  and the pin-bound probes' around the case (convert.probe_pin_cycle_cv; harness since the eighty-second session,
  n/a before): whether the probes foresee the case's own spread, which the simulator takes as
  cpu.pin_thread_speed_cv;
- the out-of-order share: consecutive batches whose worker finished the later one first (the simulated figure is
  the report's loader.out_of_order_fraction, the mean over --seeds seeds);
- the hand-outs sent together: consecutive batches whose workers started under 2 ms apart. An index-starved worker
  starts when the loop returns the batch 16 before (prefetch 2 x 8 workers), so these are the loop's back-to-back
  returns after an overtake, whose two indices go out together and overtake again (validation run 61, finding 3);
- the loop's returns that found their batch in hand, in three kinds (in_hand_returns): the batch overtook the one
  before it; in order; behind the GIL (a long turn before the call: measured, the pin thread's free of a worker's
  batch held the GIL at the loop's .item() return or launches and then handed the batch over, which the simulator
  draws as a wait for the batch);
- with sync_every=1, the share of in-hand steps whose .item() ran over the waited steps' median plus 1 ms.

The eighty-second session's reading over the 33 pinned 8-worker tensor cases of runs 59b1, 61b1, 62b1, 64b1 and 70pt
(docs/validation-runs.md, "Replayed workers: what is left"): pin_memory_tensor's p90 step is unbiased (-0.5% signed),
non_blocking_stream -4.2%, sync_every (s0, s8) -9.2%, sync_every's simulated out-of-order share below the measured
in 12 of 12 cases (0.121 against 0.144 at mean). The eighty-third session found why (validation-runs.md "The put's
pace"): the replayed batches reached the pin thread in collate order, where the measured ones reach it after their
put, the slower worker's later. With the put at each batch's pace: +4.2%, +2.0% and -0.6% signed, sync_every's share
0.145 against 0.144.

Run from the repository root (about 10 s a call on 2 cores):
    python3 calibrate/validation/replay_anatomy_diagnostic.py RESULTS_DIR [RESULTS_DIR ...] [--seeds 4]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
import timeline_analysis  # noqa: E402
from timeline_analysis import cv, pin_cycles  # noqa: E402  (the pin cycle's readers, shared with the in-situ diagnostic)

HERE = os.path.dirname(os.path.abspath(__file__))
# consecutive batches whose workers started closer than this went out together (the loop's turnaround after an
# overtake is 1.5-2 ms measured, a pin period 15-20 ms)
TOGETHER_S = 0.002


def starts_by_batch(per_worker: Dict[Any, Sequence[Sequence[float]]], num_workers: int
                    ) -> Tuple[Dict[int, float], Dict[int, float]]:
    """Pure: the harness's worker intervals ({worker: [[first __getitem__ start, collate end], ...]}) as {batch:
    start} and {batch: end}. In order, with every worker alive, PyTorch hands index i to worker i mod num_workers
    (_worker_queue_idx_cycle), so worker w's j-th batch is j x num_workers + w."""
    start: Dict[int, float] = {}
    done: Dict[int, float] = {}
    for w, spans in per_worker.items():
        for j, (a, b) in enumerate(spans):
            start[j * num_workers + int(w)] = float(a)
            done[j * num_workers + int(w)] = float(b)
    return start, done


def together_share(start: Dict[int, float], first: int, last: int, together_s: float = TOGETHER_S
                   ) -> Optional[float]:
    """Pure: of the consecutive batches (b, b+1) with first <= b < last and both starts known, the share whose
    workers started less than together_s apart. None without a pair."""
    gaps = [start[b + 1] - start[b] for b in range(first, last) if b in start and b + 1 in start]
    if not gaps:
        return None
    return sum(1 for g in gaps if g < together_s) / len(gaps)


def ooo_share(done: Dict[int, float], first: int, last: int) -> Optional[float]:
    """Pure: timeline_analysis.out_of_order_share over batches first..last (inclusive) by batch number."""
    return timeline_analysis.out_of_order_share([done.get(b) for b in range(first, last + 1)])


def in_hand_returns(next_start: Dict[int, float], next_end: Dict[int, float], done: Dict[int, float], first: int,
                    last: int, in_hand_s: float = 0.0005, long_turn_s: float = 0.001) -> Dict[str, int]:
    """Pure: the loop's returns of batches first..last that found the batch in hand (next() under in_hand_s), in
    three kinds:
    - behind_gil: the loop's turn since its previous return (previous return to this call) ran over the waited
      returns' median turn plus long_turn_s. Measured, these are mostly the pin thread's free of a worker's batch
      holding the GIL at the loop's .item() return or launches, after which it hands the batch over: the loop
      waited for its batch, but behind the GIL (eighty-second session: 74-91% of the in-hand steps with a long
      .item() were followed by another in-hand return, 7-21% by a wait). The simulator draws that time as a wait for
      the batch, so the kind is for the measured side.
    - overtook: the batch overtook the one before it (its worker finished it first);
    - in_order: the rest, a batch in hand without overtaking the one before: a cascade behind a late batch that
      several overtook, or a loop slower than the pin thread for a while.
    Each in-hand return sends its index right after the one before, so these set how many hand-outs go out
    together a round later."""
    turns = [next_start[b] - next_end[b - 1] for b in range(first + 1, last + 1)
             if b in next_start and b in next_end and b - 1 in next_end and next_end[b] - next_start[b] >= in_hand_s]
    bar = statistics.median(turns) + long_turn_s if turns else float("inf")
    out = {"overtook": 0, "in_order": 0, "behind_gil": 0}
    for b in range(first + 1, last + 1):
        if b not in next_start or b not in next_end or next_end[b] - next_start[b] >= in_hand_s:
            continue
        if b - 1 in next_end and next_start[b] - next_end[b - 1] > bar:
            out["behind_gil"] += 1
        elif b in done and b - 1 in done and done[b] < done[b - 1]:
            out["overtook"] += 1
        else:
            out["in_order"] += 1
    return out


def loop_returns_from_trace(events: Sequence[Dict[str, Any]]) -> Tuple[Dict[int, float], Dict[int, float]]:
    """Pure: the simulated loop's next() per batch, {batch: called} and {batch: returned}: from the start of its
    wait (or of its own Python where it did not wait) to the end of the wait (or the call itself)."""
    names = timeline_analysis.thread_names(events)
    called: Dict[int, float] = {}
    returned: Dict[int, float] = {}
    for e in events:
        b = (e.get("args") or {}).get("batch")
        if e.get("ph") != "X" or b is None or names.get(e.get("tid"), "") != "main thread (training loop)":
            continue
        if e["name"] in ("wait for batch", "next(): the loader's own Python"):
            called[b] = min(called.get(b, float("inf")), e["ts"] / 1e6)
        if e["name"] == "wait for batch":
            returned[b] = max(returned.get(b, 0.0), (e["ts"] + e["dur"]) / 1e6)
    for b, t in called.items():
        returned.setdefault(b, t)
    return called, returned


def long_sync_share(in_hand_s: Sequence[float], waited_s: Sequence[float], extra_s: float = 0.001
                    ) -> Optional[float]:
    """Pure: the share of the in-hand steps whose sync (last launch returned to .item() returned) took over the
    waited steps' median plus extra_s. None without both kinds. The eighty-second session read 0.51-0.57 measured in
    six pinned s1 cases (none of the waited steps), the steps whose .item() returned inside the pin thread's free of
    a worker's batch (which holds the GIL: validation run 74)."""
    if not in_hand_s or not waited_s:
        return None
    bar = statistics.median(waited_s) + extra_s
    return sum(1 for x in in_hand_s if x > bar) / len(in_hand_s)


def measured_syncs(timeline: Dict[str, Any], in_hand_s: float = 0.0005) -> Tuple[List[float], List[float]]:
    """Pure: the steady window's syncs (launched to synced) of the steps whose batch was in hand and of those that
    waited for it; empty where the timeline has no launches (harness before run 24)."""
    m = timeline["main"]
    if "launched" not in m or "synced" not in m:
        return [], []
    n = min(len(m["next_start"]), len(m["next_end"]), len(m["launched"]), len(m["synced"]))
    in_hand, waited = [], []
    for i in range(int(timeline["skip"]), n):
        (in_hand if m["next_end"][i] - m["next_start"][i] < in_hand_s else waited).append(m["synced"][i] - m["launched"][i])
    return in_hand, waited


def simulated_syncs(events: Sequence[Dict[str, Any]], skip: int) -> Tuple[List[float], List[float]]:
    """Pure: the same from the simulator's trace: each step's "sync (.item())" span plus the loop's wait for the GIL
    the pin thread's release holds (where .item()'s return met it), split by whether the step's next() waited."""
    names = timeline_analysis.thread_names(events)
    steps: Dict[int, Dict[str, float]] = {}
    for e in events:
        b = (e.get("args") or {}).get("batch")
        if e.get("ph") != "X" or b is None or names.get(e.get("tid"), "") != "main thread (training loop)":
            continue
        d = steps.setdefault(int(b), {})
        d[e["name"]] = d.get(e["name"], 0.0) + e["dur"] / 1e6
    in_hand, waited = [], []
    for b, d in steps.items():
        if b < skip or "sync (.item())" not in d:
            continue
        sync = d["sync (.item())"] + d.get("wait for the GIL (the pin thread's release of a worker's batch)", 0.0)
        (waited if "wait for batch" in d else in_hand).append(sync)
    return in_hand, waited


def measured_anatomy(timeline: Dict[str, Any], num_workers: int) -> Dict[str, Optional[float]]:
    """Pure: the module's three figures from one case's timeline over its steady window (from timeline["skip"])."""
    skip = int(timeline["skip"])
    ns = timeline["main"]["next_start"]
    last = len(ns) - 1
    start, done = starts_by_batch(timeline["workers"], num_workers)
    ne = timeline["main"]["next_end"]
    return {"pin_cycle_cv": timeline_analysis.case_pin_cycle_cv(timeline),
            "out_of_order": ooo_share(done, skip, last),
            "together": together_share(start, skip, last),
            "in_hand": in_hand_returns(dict(enumerate(ns)), dict(enumerate(ne)), done, skip, min(last, len(ne) - 1)),
            "long_sync": long_sync_share(*measured_syncs(timeline))}


def simulated_anatomy(events: Sequence[Dict[str, Any]], skip: int, n_batches: int) -> Dict[str, Optional[float]]:
    """Pure: the same figures from the simulator's trace (pipeplan simulate --trace): workers' spans by batch
    (timeline_analysis.trace_batches), the pin thread's "pin_memory" spans (its whole cycle: receive, copy,
    release; their ends are what pin_cycles reads), the loop's steady window from batch `skip`'s return."""
    spans, next_end = timeline_analysis.trace_batches(events)
    start = {b: v[0] for (_, b), v in spans.items()}
    done = {b: v[1] for (_, b), v in spans.items()}
    pin = [(e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6) for e in events
           if e.get("ph") == "X" and e.get("name") == "pin_memory"]
    lo = next_end.get(skip, 0.0)
    hi = max(next_end.values()) if next_end else 0.0
    called, returned = loop_returns_from_trace(events)
    return {"pin_cycle_cv": cv(pin_cycles(pin, lo, hi)),
            "out_of_order": ooo_share(done, skip, n_batches - 1),
            "together": together_share(start, skip, n_batches - 1),
            "in_hand": in_hand_returns(called, returned, done, skip, n_batches - 1),
            "long_sync": long_sync_share(*simulated_syncs(events, skip))}


def write_replay_inputs(results: str, inputs: str, pipeplan: str, put_share: Optional[float] = None) -> Optional[str]:
    """Each pinned case's scenario and profile with its workers' measured batch times replayed, as the in-situ
    diagnostic builds them (insitu_diagnostic.py --base table --wander replay --write-inputs; put_share its
    --put-share, None for the simulator's own split), under inputs as <case id>.scenario.json and .profile.json.
    None, or the tail of its error where it failed."""
    r = subprocess.run([sys.executable, os.path.join(HERE, "insitu_diagnostic.py"), results, "--seeds", "1",
                        "--base", "table", "--wander", "replay", "--pipeplan", pipeplan, "--write-inputs", inputs]
                       + ([] if put_share is None else ["--put-share", repr(put_share)]),
                       capture_output=True, text=True)
    return r.stderr.strip()[-300:] if r.returncode != 0 else None


def simulated_trace(pipeplan: str, scenario: str, profile: str, tmp: str) -> Optional[List[Dict[str, Any]]]:
    """The simulator's trace events (seed 1) of one scenario and profile; None where pipeplan failed."""
    trace = os.path.join(tmp, "trace.json")
    t = subprocess.run([pipeplan, "simulate", scenario, "--profile", profile, "--seed", "1", "--trace", trace,
                        "--format", "json", "-o", os.path.join(tmp, "r.json")], capture_output=True, text=True)
    if t.returncode != 0:
        return None
    with open(trace) as f:
        events = json.load(f)
    return events["traceEvents"] if isinstance(events, dict) else events


def _fmt(x: Optional[float], spec: str = ".3f") -> str:
    return format(x, spec) if x is not None else "n/a"


def _pair(counts: Dict[str, int]) -> str:
    return f"{counts['overtook']} / {counts['in_order']} / {counts['behind_gil']}"


def _mean_or_value(x: Any) -> Optional[float]:
    return x.get("mean") if isinstance(x, dict) else x


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", nargs="+", help="device calls' result folders (harness --timeline)")
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)
    ap.add_argument("--seeds", type=int, default=4, help="seeds for the p90 step and out-of-order share "
                                                         "(default %(default)s); the trace is seed 1's")
    ap.add_argument("--put-share", type=float, default=None,
                    help="as insitu_diagnostic.py's: the key cut to this share, all of it before the hand-off, the "
                         "rest off the worker's path (default: the simulator's loader.worker_put_share split)")
    a = ap.parse_args(argv)
    if a.put_share is not None and not 0.0 <= a.put_share <= 1.0:
        ap.error(f"--put-share {a.put_share}: expected a share in [0, 1]")
    convert.exit_without_pipeplan("replay_anatomy_diagnostic", a.pipeplan)
    by_family: Dict[str, List[Tuple[float, Optional[float], Optional[float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for results in a.results_dir:
            doc = convert.read_call_json(results, "cases.json")
            inputs = os.path.join(tmp, os.path.basename(os.path.normpath(results)))
            failed = write_replay_inputs(results, inputs, a.pipeplan, a.put_share)
            if failed is not None:
                print(f"{results}: insitu_diagnostic.py failed: {failed}", file=sys.stderr)
                return 2
            print(f"== {results}")
            print(f"{'case':44s} {'p90 step':>8s}  {'pin cycle cv':>20s}  {'out of order':>13s}  {'sent together':>13s}"
                  f"  {'in hand: overtook / in order / behind GIL':>37s}  {'long .item()':>13s}")
            print(f"{'':44s} {'err':>8s}  {'probes':>6s} {'meas':>6s} {'sim':>6s}  {'meas':>6s} {'sim':>6s}  {'meas':>6s} {'sim':>6s}"
                  f"  {'meas':>18s} {'sim':>18s}  {'meas':>6s} {'sim':>6s}")
            for c in doc["cases"]:
                k = c.get("knobs") or {}
                if (c.get("status") != "ok" or not k.get("pin_memory") or not k.get("in_order", True)
                        or int(k.get("num_workers") or 0) < 2 or not (c.get("measured") or {}).get("timeline")):
                    continue
                sp = os.path.join(inputs, f"{c['id']}.scenario.json")
                pp = os.path.join(inputs, f"{c['id']}.profile.json")
                if not os.path.exists(sp):
                    continue
                tl = c["measured"]["timeline"]
                meas = measured_anatomy(tl, int(k["num_workers"]))
                out = convert.simulate_replicated(a.pipeplan, sp, pp, 300, max(1, a.seeds))
                events = simulated_trace(a.pipeplan, sp, pp, tmp)
                if "error" in out or events is None:
                    print(f"{c['id']}: pipeplan failed")
                    continue
                sim = simulated_anatomy(events, int(tl["skip"]), len(tl["main"]["next_start"]))
                if int(k.get("sync_every", 1)) != 1:
                    # only a loop that syncs every step has a sync a step to compare
                    meas["long_sync"] = sim["long_sync"] = None
                rep = out["result"]
                sim["out_of_order"] = _mean_or_value((rep.get("loader") or {}).get("out_of_order_fraction"))
                p90_meas = c["measured"]["step_time_s"]["p90"]
                err = 100.0 * (_mean_or_value(rep["step_time_s"]["p90"]) - p90_meas) / p90_meas
                by_family.setdefault(c["family"], []).append((err, meas["out_of_order"], sim["out_of_order"]))
                probes_cv = convert.probe_pin_cycle_cv(c["components"])
                print(f"{c['id'][:44]:44s} {err:+7.1f}%  {_fmt(probes_cv):>6s} {_fmt(meas['pin_cycle_cv']):>6s} {_fmt(sim['pin_cycle_cv']):>6s}"
                      f"  {_fmt(meas['out_of_order']):>6s} {_fmt(sim['out_of_order']):>6s}"
                      f"  {_fmt(meas['together']):>6s} {_fmt(sim['together']):>6s}"
                      f"  {_pair(meas['in_hand']):>18s} {_pair(sim['in_hand']):>18s}"
                      f"  {_fmt(meas['long_sync'], '.2f'):>6s} {_fmt(sim['long_sync'], '.2f'):>6s}")
    if by_family:
        print("by family: cases, p90 step signed mean, out-of-order share measured / simulated (mean), "
              "cases simulated below measured")
        for fam, rows in sorted(by_family.items()):
            pairs = [(m, s) for _, m, s in rows if m is not None and s is not None]
            print(f"  {fam:22s} {len(rows):3d}  {statistics.fmean(e for e, _, _ in rows):+6.1f}%  "
                  + (f"{statistics.fmean(m for m, _ in pairs):.3f} / {statistics.fmean(s for _, s in pairs):.3f}  "
                     f"{sum(1 for m, s in pairs if s < m)} of {len(pairs)}" if pairs else "n/a"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
