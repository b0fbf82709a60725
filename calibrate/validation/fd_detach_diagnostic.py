#!/usr/bin/env python3
"""The receive's file-descriptor hand-overs, split by the sending worker's state (device plan item 30).

With PyTorch's file_descriptor sharing strategy each storage a worker puts on the result queue is rebuilt in the
receiving thread (the pin thread of a pinned loader) through multiprocessing.resource_sharer.DupFd.detach(): it
connects to the sending worker's resource_sharer thread, which must take that worker's GIL to answer. Run 83
(validation-runs.md, finding 6) found the pin thread's cycle, where its next batch was waiting, 1.08x its CPU at 4
workers (about 1.4 ms a batch more); the hypothesis is this hand-over, slow while the sender runs its next batch's
Python. The harness (since the ninetieth session) times each detach() in the main process: in situ
fd_detach_{calls,wall_s,cpu_s}_per_batch and, with --timeline, timeline.fd_detach (each call's start and end).

Per pinned case this prints the detaches a batch, their wall and CPU, and their wall split by whether the sending
worker was inside a batch (first __getitem__ to collate end) when the detach began, against the pin thread's
backlogged cycle less its CPU (dispatch_model.backlog_service_s). A diagnostic: no model reads it.

    python3 calibrate/validation/fd_detach_diagnostic.py calibrate/validation/results/2026-12-0?-h100-run84*/
"""
import argparse
import bisect
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dispatch_model  # noqa: E402


def sender_busy_at(worker_spans: Sequence[Sequence[float]], t: float) -> bool:
    """Pure: whether time t falls inside one of a worker's batch spans (first __getitem__ start to collate end)."""
    starts = [a for a, _ in worker_spans]
    i = bisect.bisect_right(starts, t) - 1
    return i >= 0 and worker_spans[i][0] <= t <= worker_spans[i][1]


def detach_split(timeline: Dict[str, Any], num_workers: int) -> Optional[Dict[str, Any]]:
    """Pure: a pinned case's timeline -> its detaches over the loop's steady window (from timeline["skip"]'s next()
    on), each given to the batch the pin thread took next (the first pin_received at or after the detach's end: the
    get returns once the batch is unpickled) and so to its sender (batch j is worker j mod n's); their count a batch
    and mean wall, over all and split by the sender's state at the detach's start: 'busy' inside a batch span,
    'idle' between them (its put, or waiting for an index). None without fd_detach or pin_received."""
    det, rec = timeline.get("fd_detach") or [], timeline.get("pin_received") or []
    workers = timeline.get("workers") or {}
    if not det or not rec or num_workers < 1 or not workers:
        return None
    lo = timeline["main"]["next_start"][int(timeline.get("skip") or 0)]
    rec_t = [t for _, t in rec]
    walls: Dict[str, List[float]] = {"busy": [], "idle": []}
    batches = set()
    for a, b in det:
        if a < lo:
            continue
        i = bisect.bisect_left(rec_t, b)
        if i >= len(rec):
            continue
        idx = int(rec[i][0])
        batches.add(idx)
        spans = workers.get(str(idx % num_workers)) or []
        walls["busy" if sender_busy_at(spans, a) else "idle"].append(b - a)
    n = len(batches)
    if n == 0:
        return None
    every = walls["busy"] + walls["idle"]
    out: Dict[str, Any] = {"batches": n, "detaches_per_batch": len(every) / n,
                           "wall_s_per_batch": sum(every) / n, "mean_wall_s": statistics.fmean(every)}
    for state, ws in walls.items():
        out[state] = {"detaches": len(ws), "mean_wall_s": statistics.fmean(ws) if ws else None,
                      "median_wall_s": statistics.median(ws) if ws else None}
    return out


def receive_split(timeline: Dict[str, Any], num_workers: int, put_margin_s: float = 0.008,
                  before_get_s: float = 0.0002) -> Optional[Dict[str, Any]]:
    """Pure: a pinned case's timeline (any call with pin_received, since the eighty-third session) -> the pin
    thread's receive where its next batch was waiting (the cycles dispatch_model.backlog_service_s counts: the batch
    collated more than put_margin_s before the previous pin_memory() ended), from that end to the get's return
    (the put of the batch before, the get, the unpickle with its fd hand-overs), and the pin_memory() call's wall
    after it; the receives split by the sender's state before_get_s before the get returned, when its hand-over
    runs. The hand-over hypothesis (run 83, finding 6) predicts the receives from a busy sender the longer. None
    without the data."""
    pins, rec = timeline.get("pin") or [], timeline.get("pin_received") or []
    workers = timeline.get("workers") or {}
    if not workers:
        return None
    recv: Dict[str, List[float]] = {"busy": [], "idle": []}
    pin_wall: List[float] = []
    for i in dispatch_model.backlogged_cycles(timeline, num_workers, put_margin_s):
        idx = int(rec[i][0])
        busy = sender_busy_at(workers.get(str(idx % num_workers)) or [], rec[i][1] - before_get_s)
        recv["busy" if busy else "idle"].append(rec[i][1] - pins[i - 1][1])
        pin_wall.append(pins[i][1] - pins[i][0])
    if not pin_wall:
        return None
    every = recv["busy"] + recv["idle"]
    out: Dict[str, Any] = {"cycles": len(every), "receive_s": statistics.fmean(every),
                           "pin_memory_s": statistics.fmean(pin_wall)}
    for state, ws in recv.items():
        out[state] = {"receives": len(ws), "mean_s": statistics.fmean(ws) if ws else None}
    return out


def pin_share_of_step(pin_cpu_s: Optional[float], detach_wall_s: Optional[float], detach_cpu_s: Optional[float],
                      batch_size: int, samples_per_s: Optional[float]) -> Optional[float]:
    """Pure: the pin thread's CPU a batch plus its fd hand-overs' time off the core, over the measured time between
    batches (batch_size / samples_per_s): near 1 the pin thread bound the case, whatever its probes said (run 86:
    0.973-0.996 in five 4-worker cases whose probes were worker-bound). None where a figure is missing."""
    if not (pin_cpu_s and samples_per_s and batch_size) or detach_wall_s is None or detach_cpu_s is None:
        return None
    return (float(pin_cpu_s) + max(0.0, float(detach_wall_s) - float(detach_cpu_s))) / (batch_size / float(samples_per_s))


def case_row(case: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """One pinned case with workers -> its in situ detach figures, its timeline split, and its pin thread's
    backlogged cycle less CPU a batch; None for others."""
    k = case.get("knobs") or {}
    if not k.get("pin_memory") or int(k.get("num_workers") or 0) < 1 or case.get("status") not in (None, "ok"):
        return None
    m = case.get("measured") or {}
    ins, tl = m.get("in_situ") or {}, m.get("timeline") or {}
    row: Dict[str, Any] = {"id": case["id"], "workers": int(k["num_workers"]),
                           "detach_calls": ins.get("fd_detach_calls_per_batch"),
                           "detach_wall_s": ins.get("fd_detach_wall_s_per_batch"),
                           "detach_cpu_s": ins.get("fd_detach_cpu_s_per_batch"),
                           "pin_cpu_s": ins.get("pin_thread_cpu_s_per_batch")}
    row["pin_share"] = pin_share_of_step(row["pin_cpu_s"], row["detach_wall_s"], row["detach_cpu_s"],
                                         int(k.get("batch_size") or 0), m.get("throughput_samples_per_s"))
    # the probes' reading of the same wait, out of the case (convert.fd_handover_wait_s: --pin-thread-wait probes-fd);
    # convert is imported here and in main, so that the harness's probes, which import this module on the GPU
    # machine, do not load it
    import convert
    row["probes_wait_s"] = convert.fd_handover_wait_s(case.get("components") or {})
    row["split"] = detach_split(tl, row["workers"]) if tl else None
    row["receive"] = receive_split(tl, row["workers"]) if tl else None
    serv = dispatch_model.backlog_service_s(tl, row["workers"]) if tl.get("pin") and tl.get("pin_received") else None
    row["backlog_extra_s"] = serv - row["pin_cpu_s"] if serv is not None and row["pin_cpu_s"] else None
    return row


def ms(v: Optional[float]) -> str:
    return "-" if v is None else f"{v * 1e3:.2f}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("calls", nargs="+", help="result folders holding cases.json.xz (or cases.json)")
    a = ap.parse_args(argv)
    import convert
    docs = [(d, convert.read_call_json(d, "cases.json")) for d in a.calls]     # a bad folder: one line, exit 2
    print("case | workers | detaches/batch | detach wall/CPU ms a batch | probes' wall - CPU ms | "
          "backlogged cycle - CPU ms | "
          "detach wall ms, sender busy (n) | sender idle (n) | backlogged receive ms, sender busy (n) | "
          "sender idle (n) | pin_memory() ms | pin CPU + hand-overs over the step")
    for d, doc in docs:
        for case in doc["cases"] if isinstance(doc, dict) else doc:
            row = case_row(case)
            if row is None:
                continue
            s, rv = row["split"] or {}, row["receive"] or {}
            busy, idle = s.get("busy") or {}, s.get("idle") or {}
            rbusy, ridle = rv.get("busy") or {}, rv.get("idle") or {}
            calls = row["detach_calls"]
            share = "-" if row["pin_share"] is None else f"{row['pin_share']:.3f}"
            print(f"{os.path.basename(d.rstrip('/'))}/{row['id'][:2]} | {row['workers']} | "
                  f"{'-' if calls is None else f'{calls:.2f}'} | {ms(row['detach_wall_s'])}/{ms(row['detach_cpu_s'])}"
                  f" | {ms(row['probes_wait_s'])} | {ms(row['backlog_extra_s'])} | {ms(busy.get('mean_wall_s'))} ({busy.get('detaches', 0)}) | "
                  f"{ms(idle.get('mean_wall_s'))} ({idle.get('detaches', 0)}) | "
                  f"{ms(rbusy.get('mean_s'))} ({rbusy.get('receives', 0)}) | "
                  f"{ms(ridle.get('mean_s'))} ({ridle.get('receives', 0)}) | {ms(rv.get('pin_memory_s'))} | "
                  f"{share}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
