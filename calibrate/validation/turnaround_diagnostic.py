#!/usr/bin/env python3
"""A worker's turnaround after its collate, measured, against the key the simulator puts on its path.

In a PyTorch worker, collate_fn returns, the batch goes to data_queue.put() (the queue's feeder thread pickles it into
shared memory and sends it beside the worker's main thread), and the worker takes its next index from index_queue.get()
and calls __getitem__ again. The simulator runs the whole of loader.worker_s_per_batch (the in-worker component's
process CPU a batch beyond __getitem__ and collate: the key) on the worker's path before the next index
(loader.worker_turnaround_share 1, the default); the what-if below 1 keeps that share on the path and runs the rest on
a feeder beside it.

From a case's timeline (harness --timeline): each worker's batch spans (first __getitem__ start, collate end) and the
loop's next() returns. In order, with every worker alive, batch b is worker b mod n's, and its index goes out when the
loop takes batch b - prefetch_factor x n (PyTorch's _try_put_index, same worker). Where that index was already out
when the worker's previous collate ended, the gap to the worker's next __getitem__ is its turnaround alone: what of
the key sits on the worker's path. Where it was not, the worker waited for its index (index-bound), and the gap from
the index's send to the __getitem__ is the index's trip (timeline_analysis.index_round_trip_s, 0.2-0.3 ms).

Per case: the index-bound share, the turnaround's p10 / median / p90 and the median over the key, and the batch's
span less what the in-situ counters time inside it (the fetcher's own loop between __getitem__ calls, fetch_gap_s);
then the medians by data kind. The eighty-ninth session's reading over the table's 576 in-order warm cases with a timeline
(docs/validation-runs.md run 82, finding 2): image 0.86 ms, 0.22 of the key; tensor_f32 2.64 ms, 0.50 of it.

Run from the repository root (about a minute for the whole table):
    python3 calibrate/validation/turnaround_diagnostic.py RESULTS_DIR [RESULTS_DIR ...]
    python3 calibrate/validation/turnaround_diagnostic.py --table     (every call in table_calls.txt)
"""
import argparse
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

HERE = os.path.dirname(os.path.abspath(__file__))
# fewer turnarounds than this in a case read nothing (a pin-bound 8-worker loader is index-bound almost throughout)
MIN_TURNAROUNDS = 20


def turnarounds(workers: Dict[Any, Sequence[Sequence[float]]], next_end: Sequence[float], prefetch_factor: int,
                skip: int = 0) -> Dict[str, Any]:
    """Pure: an in-order case's worker spans ({worker: [[first __getitem__ start, collate end], ...]}) and the loop's
    next() returns (batch 0 first) -> {"turnaround_s": [collate end to the next __getitem__ where the next index was
    already out], "index_bound": count of the others, "n": both}. Only batches whose index went out at or after the
    loop's batch `skip` (the measured window) count."""
    n = len(workers)
    out: List[float] = []
    bound = 0
    if n == 0 or prefetch_factor < 1:
        return {"turnaround_s": out, "index_bound": 0, "n": 0}
    for w, spans in workers.items():
        w = int(w)
        for j in range(len(spans) - 1):
            source = (j + 1) * n + w - prefetch_factor * n   # the batch whose take sent this worker's next index
            if source < skip or source >= len(next_end):
                continue
            if next_end[source] <= spans[j][1]:
                out.append(float(spans[j + 1][0]) - float(spans[j][1]))
            else:
                bound += 1
    return {"turnaround_s": out, "index_bound": bound, "n": len(out) + bound}


def case_reading(case: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Pure: one measured case -> its turnaround figures against its key, or None where it has no reading (no
    workers, out of order, cold, a straggler, no timeline or key, under MIN_TURNAROUNDS turnarounds)."""
    k = case.get("knobs") or {}
    nw = int(k.get("num_workers") or 0)
    # a straggler's knob is slow_worker_factor (the harness's; "slow_worker" is the scenario's key, never a case's
    # knob: before the ninetieth session the check read it, and 21 straggler cases of 8 tensor workers came in)
    if (nw == 0 or not k.get("in_order", True) or k.get("storage") == "cold"
            or float(k.get("slow_worker_factor") or 1.0) != 1.0):
        return None
    tl = (case.get("measured") or {}).get("timeline") or {}
    workers, next_end = tl.get("workers") or {}, (tl.get("main") or {}).get("next_end") or []
    key_s = ((case.get("components") or {}).get("in_worker") or {}).get("overhead_s_per_batch")
    if len(workers) != nw or not next_end or not key_s:
        return None
    r = turnarounds(workers, next_end, int(k.get("prefetch_factor") or 2), int(tl.get("skip") or 0))
    t = sorted(r["turnaround_s"])
    if len(t) < MIN_TURNAROUNDS:
        return None
    median = statistics.median(t)
    return {"id": case.get("id"), "kind": k.get("kind"), "num_workers": nw, "key_s": float(key_s),
            "index_bound_share": r["index_bound"] / r["n"], "n": len(t), "p10_s": t[len(t) // 10],
            "median_s": median, "p90_s": t[(9 * len(t)) // 10], "median_over_key": median / float(key_s),
            "fetch_gap_s": fetch_gap_s(workers, (case.get("measured") or {}).get("in_situ") or {},
                                       int(tl.get("skip") or 0), k.get("batch_size"))}


def fetch_gap_s(workers: Dict[Any, Sequence[Sequence[float]]], in_situ: Dict[str, Any], skip: int = 0,
                samples_per_batch: Optional[int] = None) -> Optional[float]:
    """Pure: a batch's span in the timeline (first __getitem__ start to collate end, the worker's batches from the
    measured window on) less what the in-situ counters time inside it (samples_per_batch x the mean __getitem__ wall,
    plus the mean collate wall): the fetcher's own Python between __getitem__ calls, which neither the probes'
    per-sample cost nor the simulator has. None without the counters or spans. samples_per_batch is the batch size:
    the counters' samples / batches (the fallback) counts the calls that ended inside the window, so the batches its
    edges cut make it wrong by up to workers x batch size / batches: in an 8-worker image probe of 1.5 s (about 36
    batches) +-10% of 64 samples at 4.4 ms, which read gaps of -16 to +19 ms (run 83)."""
    return span_less_timed_s([float(b) - float(a) for w, sp in workers.items() for (a, b) in sp[skip // len(workers):]]
                             if workers else [], in_situ, samples_per_batch)


def span_less_timed_s(spans: Sequence[float], in_situ: Dict[str, Any], samples_per_batch: Optional[int] = None
                      ) -> Optional[float]:
    """Pure: the mean of whole batches' spans less the in-situ counters' time inside one (fetch_gap_s), for spans
    read anywhere: a case's timeline or a probe's worker_batch_s."""
    g, c = in_situ.get("getitem_wall_s"), in_situ.get("collate_wall_s")
    if not spans or not g or c is None:
        return None
    if samples_per_batch:
        per_batch = float(samples_per_batch)
    elif in_situ.get("batches") and in_situ.get("samples"):
        per_batch = in_situ["samples"] / in_situ["batches"]
    else:
        return None
    return statistics.mean(spans) - (float(g) * per_batch + float(c))


def _median(xs: Sequence[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


def _ms(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x * 1e3:.2f}"


def probe_reading(per_worker: Dict[Any, Sequence[Sequence[float]]], takes: Sequence[float], prefetch_factor: int,
                  window_from_batch: int, in_situ: Dict[str, Any], samples_per_batch: Optional[int] = None
                  ) -> Optional[Dict[str, Any]]:
    """Pure: the same reading from a probe (harness._time_k_workers with a Timeline): its workers' batch spans
    ({worker: [[start, end], ...]} from its first batch), the main loop's takes of every batch from the first
    (perf_counter after each next()), and the first batch of its window (the takes before it are warm-up). Returns
    the median turnaround, how many, the index-bound share and the fetcher's gap a batch (fetch_gap_s over the
    window's batches), or None under MIN_TURNAROUNDS turnarounds. The probe's loop drops each batch, so where its
    workers outrun the pin thread they wait for their index: those batches are counted apart, as in a case."""
    r = turnarounds(per_worker, takes, prefetch_factor, window_from_batch)
    t = sorted(r["turnaround_s"])
    if len(t) < MIN_TURNAROUNDS:
        return None
    n = len(per_worker)
    first_round = window_from_batch // n if n else 0
    in_window = {w: sp[first_round:] for w, sp in per_worker.items()}
    return {"turnaround_s": statistics.median(t), "turnaround_p10_s": t[len(t) // 10],
            "turnaround_p90_s": t[(9 * len(t)) // 10], "turnarounds": len(t),
            "index_bound_share": r["index_bound"] / r["n"],
            "fetch_gap_s": fetch_gap_s(in_window, in_situ, 0, samples_per_batch)}


def table_results() -> List[str]:
    """The result folders table_calls.txt lists, in order."""
    with open(os.path.join(HERE, "table_calls.txt")) as f:
        names = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    return [os.path.join(HERE, "results", n) for n in names]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="*", help="results folders (cases.json) of calls run with --timeline")
    ap.add_argument("--table", action="store_true", help="every call table_calls.txt lists")
    ap.add_argument("--quiet", action="store_true", help="only the summary by kind")
    a = ap.parse_args(argv)
    import convert  # here, not at the top: the harness imports probe_reading on the GPU machine
    paths = list(a.results) + (table_results() if a.table else [])
    if not paths:
        print("turnaround_diagnostic: name results folders or --table", file=sys.stderr)
        return 2
    rows: List[Dict[str, Any]] = []
    for path in paths:
        doc = convert.read_call_json(path, "cases.json") or {}
        for case in doc.get("cases") or []:
            r = case_reading(case) if case.get("status") == "ok" else None
            if r is None:
                continue
            r["call"] = os.path.basename(os.path.normpath(path))
            rows.append(r)
            if not a.quiet:
                print(f"{r['call']} {str(r['id'])[:48]} w{r['num_workers']}: index-bound {r['index_bound_share']:.2f}; "
                      f"turnaround p10 / median / p90 {r['p10_s'] * 1e3:.2f} / {r['median_s'] * 1e3:.2f} / "
                      f"{r['p90_s'] * 1e3:.2f} ms over {r['n']}, key {r['key_s'] * 1e3:.2f} ms "
                      f"({r['median_over_key']:.2f} of it); the fetcher between __getitem__ calls "
                      f"{_ms(r['fetch_gap_s'])} ms a batch")
    if not rows:
        print("no in-order warm case with a timeline, a key and enough turnarounds (harness --timeline)",
              file=sys.stderr)
        return 1
    by_kind: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        by_kind.setdefault(str(r["kind"]), []).append(r)
    for kind, rs in sorted(by_kind.items(), key=lambda kv: -len(kv[1])):
        print(f"{kind}: {len(rs)} cases, turnaround median {statistics.median(r['median_s'] for r in rs) * 1e3:.2f} ms, "
              f"key {statistics.median(r['key_s'] for r in rs) * 1e3:.2f} ms, turnaround over key median "
              f"{statistics.median(r['median_over_key'] for r in rs):.2f}; the fetcher between __getitem__ calls "
              f"{_ms(_median([r['fetch_gap_s'] for r in rs if r['fetch_gap_s'] is not None]))} ms a batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
