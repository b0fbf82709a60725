#!/usr/bin/env python3
"""Where DataLoader workers sit idle in a measured case (harness.py --timeline).

    python3 calibrate/validation/timeline_analysis.py calibrate/validation/results/<run>/cases.json

For each case with a timeline, over the measured window (after the prefetch fill):
  - worker busy: the fraction of the window each worker spends between a batch's first __getitem__
    and its collate's return (then averaged over workers);
  - index-starved: the part of the idle time a worker spends waiting for its next index, which
    PyTorch sends (`_try_put_index`) only when the loop takes a batch, and only while fewer than
    prefetch_factor x num_workers batches are outstanding;
  - delivery: from a batch being ready (collated, and asked for by the loop) to the loop having it:
    the worker's put, the pin_memory thread (receive, pin) and the main thread's receive.
Batch j of a single-epoch, in-order loader goes to worker j mod num_workers (PyTorch's round robin),
and its index leaves when the loop takes batch j - prefetch_factor x num_workers.
"""
import argparse
import bisect
import collections
import json
import math
import statistics
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from pipeplan_probe import summarize, worker_spread


def overlap(a: float, b: float, lo: float, hi: float) -> float:
    return max(0.0, min(b, hi) - max(a, lo))


def thread_names(events: Sequence[Dict[str, Any]]) -> Dict[Any, str]:
    """Pure: the simulator's Perfetto events' thread names by tid (their "thread_name" metadata events)."""
    return {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}


def pin_thread_batch_spans(events: Sequence[Dict[str, Any]]) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """Pure: (batch, event) for each complete span on the simulator's pin_memory thread that carries args.batch."""
    names = thread_names(events)
    for e in events:
        b = (e.get("args") or {}).get("batch")
        if e.get("ph") == "X" and b is not None and names.get(e.get("tid"), "").startswith("pin_memory"):
            yield int(b), e


# the simulator's span for a worker's own loop after each collate, the put (sim/simulation.cpp kPutSpan)
PUT_SPAN = "worker loop (the put)"
# and the part of that loop after the hand-off, where loader.worker_put_share is below 1 (kAfterHandoffSpan)
AFTER_HANDOFF_SPAN = "worker loop (after the hand-off)"
WORKER_LOOP_SPANS = (PUT_SPAN, AFTER_HANDOFF_SPAN)


def trace_batches(events: Sequence[Dict[str, Any]]
                  ) -> Tuple[Dict[Tuple[int, int], Tuple[float, float]], Dict[int, float]]:
    """Pure: the simulator's Perfetto events (pipeplan simulate --trace) read as batches, in seconds: {(worker, batch):
    (first start, last end)} over the events on thread "worker W" carrying args.batch (a batch's per-sample loads and
    its collate are one span; the worker loop's spans after each collate, the put and any part after the hand-off, are
    left out, as the harness's timeline ends a batch at its collate's return), and {batch: end of the loop's next() that returned it}
    (main thread, args.batch)."""
    names = thread_names(events)
    spans: Dict[Tuple[int, int], Tuple[float, float]] = {}
    for e in events:
        batch = (e.get("args") or {}).get("batch")
        name = names.get(e.get("tid"), "")
        if (e.get("ph") != "X" or batch is None or not name.startswith("worker ")
                or e.get("name") in WORKER_LOOP_SPANS):
            continue
        a, z = e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6
        key = (int(name.split()[1]), int(batch))
        old = spans.get(key)
        spans[key] = (min(a, old[0]), max(z, old[1])) if old else (a, z)
    return spans, main_thread_steps(events)["next_end"]


def main_thread_steps(events: Sequence[Dict[str, Any]]) -> Dict[str, Dict[int, float]]:
    """Pure: the simulator's Perfetto events on the main thread, by step (args.batch: the step, which an in-order loop
    returns as the batch of that number), in seconds: "next_end" (the end
    of "next(): the loader's own Python", the return), "launched" (the end of "training step (python)", the last
    launch) and "wait" (the step's "wait for batch", summed)."""
    names = thread_names(events)
    out: Dict[str, Dict[int, float]] = {"next_end": {}, "launched": {}, "wait": {}}
    for e in events:
        step = (e.get("args") or {}).get("batch")
        if e.get("ph") != "X" or step is None or not names.get(e.get("tid"), "").startswith("main thread"):
            continue
        name, end = e.get("name", ""), (e["ts"] + e["dur"]) / 1e6
        if name.startswith("next()"):
            out["next_end"][int(step)] = end
        elif name.startswith("training step"):
            out["launched"][int(step)] = end
        elif name == "wait for batch":
            out["wait"][int(step)] = out["wait"].get(int(step), 0.0) + e["dur"] / 1e6
    return out


def core_wander(per_worker_durations: Sequence[Sequence[float]]) -> Optional[Dict[str, float]]:
    """The workers' batch times as calibrate reads its decode chunks (calibrate/stats.hpp
    fit_core_wander): y = ln(1 / duration) less its mean over all batches of all workers; cv =
    sqrt(exp(var y) - 1); lag-one autocorrelation within each worker, pooled; correlation time =
    -mean batch duration / ln(autocorrelation). Compare with the profile's cpu.core_speed_cv and
    core_speed_correlation_s."""
    ys = [[-math.log(d) for d in ds if d > 0] for ds in per_worker_durations]
    flat = [v for y in ys for v in y]
    if len(flat) < 4:
        return None
    m = sum(flat) / len(flat)
    ys = [[v - m for v in y] for y in ys]
    var = sum(v * v for y in ys for v in y) / len(flat)
    num = sum(y[t] * y[t + 1] for y in ys for t in range(len(y) - 1))
    den = sum(y[t] * y[t] for y in ys for t in range(len(y) - 1))
    rho = num / den if den > 0 else 0.0
    mean_d = sum(d for ds in per_worker_durations for d in ds) / len(flat)
    tau = (-mean_d / math.log(rho)) if 0 < rho < 1 else (None if rho >= 1 else 0.0)
    return dict({"cv": math.sqrt(math.expm1(var)), "lag_one_autocorrelation": rho, "batch_s": mean_d,
                 "correlation_s": tau}, **wander_shape(per_worker_durations))


def wander_long_key(knobs: Dict[str, Any]) -> Optional[str]:
    """Pure: the components.wander_long key of a case's loader (kind, batch size, workers, pinned; harness
    --wander-long-s, device plan item 28), or None where the reading does not apply: fewer than two workers (one series
    says nothing of the in-order loss), cold storage (its reads wait on the disk), a straggler (its own spin)."""
    nw = int(knobs.get("num_workers") or 0)
    if nw < 2 or knobs.get("storage") == "cold" or float(knobs.get("slow_worker_factor") or 1.0) > 1.0:
        return None
    return f"{knobs['kind']}/b{knobs['batch_size']}/w{nw}/{'pin' if knobs.get('pin_memory') else 'nopin'}"


def wander_shape(per_worker_durations: Sequence[Sequence[float]], lags: Sequence[int] = (1, 2, 4)
                 ) -> Dict[str, Any]:
    """What one cv and one correlation time leave out (run 58's reading of the table's cases): y = ln(1 / duration)
    less each worker's own mean, pooled. `autocorrelation_by_lag` {"1": r1, "2": r2, "4": r4}: sum y_t y_t+k over
    sum y^2 within each worker (a process with one time scale gives r_k = r_1^k; the table's b16 cases read 0.71 /
    0.55 / 0.36); `log_speed_fast_side` p90 - median and `log_speed_slow_side` median - p10 of y (a lognormal
    wander, the simulator's, has them equal; the table's 8-worker b64 cases read 0.163 against 0.119). Figures None
    where a worker lacks the batches (lag k needs k + 2) or fewer than ten batches in all."""
    ys = []
    for ds in per_worker_durations:
        y = [-math.log(d) for d in ds if d > 0]
        if y:
            m = sum(y) / len(y)
            ys.append([v - m for v in y])
    var = sum(v * v for y in ys for v in y)
    by_lag: Dict[str, Optional[float]] = {}
    for k in lags:
        num = sum(y[t] * y[t + k] for y in ys if len(y) >= k + 2 for t in range(len(y) - k))
        den = sum(v * v for y in ys if len(y) >= k + 2 for v in y)
        by_lag[str(k)] = num / den if den > 0 and var > 0 else None
    flat = sorted(v for y in ys for v in y)
    fast = slow = None
    if len(flat) >= 10:
        q = statistics.quantiles(flat, n=10)
        med = statistics.median(flat)
        fast, slow = q[8] - med, med - q[0]
    return {"autocorrelation_by_lag": by_lag, "log_speed_fast_side": fast, "log_speed_slow_side": slow}


def without_common_mode(per_worker_intervals: Sequence[Sequence[Sequence[float]]]) -> List[List[float]]:
    """Each worker's batch durations less what all workers share at the same time, as calibrate reads
    its decode chunks (calibrate/stats.hpp without_common_mode): a batch's log rate y = -ln(duration)
    against the mean over the other workers of their overlap-weighted log rate over the same interval,
    scaled by sqrt(m / (m + 1)) for m others, back into a duration around the overall mean rate."""
    iv = [[(a, b, -math.log(b - a)) for a, b in w if b > a] for w in per_worker_intervals]
    flat = [y for w in iv for _, _, y in w]
    if not flat:
        return [[] for _ in iv]
    y_mean = sum(flat) / len(flat)
    out: List[List[float]] = []
    for t, w in enumerate(iv):
        res = []
        for a, b, y in w:
            others = []
            for u, wo in enumerate(iv):
                if u == t:
                    continue
                wy = wsum = 0.0
                for a2, b2, y2 in wo:
                    ov = min(b, b2) - max(a, a2)
                    if ov > 0:
                        wy += ov * y2
                        wsum += ov
                if wsum > 0:
                    others.append(wy / wsum)
            m = len(others)
            own = (y - sum(others) / m) * math.sqrt(m / (m + 1)) if m else y - y_mean
            res.append(math.exp(-(y_mean + own)))
        out.append(res)
    return out


def common_share(per_worker_intervals: Sequence[Sequence[Sequence[float]]]) -> Optional[Dict[str, float]]:
    """How much of the workers' speed wander is shared by all of them at the same time (a machine-wide
    slow spell) rather than each worker's own (a core of its own in a slow spell). Each batch's log speed
    y = ln(1 / duration), less the mean over all batches, is set against the mean y of the other workers'
    batches whose midpoints lie within half a mean batch time of its own. share = cov(own, others) /
    var(own): near 0 when each worker wanders alone (independent wander: what the simulator models),
    near 1 when they all slow down together. corr is the plain correlation of the two."""
    pts = [(w, (a + b) / 2, -math.log(b - a)) for w, iv in enumerate(per_worker_intervals)
           for a, b in iv if b > a]
    if len(pts) < 4 or len(per_worker_intervals) < 2:
        return None
    m = sum(p[2] for p in pts) / len(pts)
    half_batch_s = sum(math.exp(-p[2]) for p in pts) / len(pts) / 2
    by_mid = sorted(pts, key=lambda p: p[1])
    mids = [p[1] for p in by_mid]
    own, others = [], []
    for w, t, y in pts:
        lo, hi = bisect.bisect_left(mids, t - half_batch_s), bisect.bisect_right(mids, t + half_batch_s)
        o = [p[2] - m for p in by_mid[lo:hi] if p[0] != w]
        if o:
            own.append(y - m)
            others.append(sum(o) / len(o))
    n = len(own)
    if n < 4:
        return None
    mo, mx = sum(own) / n, sum(others) / n
    cov = sum((a - mo) * (b - mx) for a, b in zip(own, others)) / n
    var_own = sum((a - mo) ** 2 for a in own) / n
    var_others = sum((b - mx) ** 2 for b in others) / n
    if var_own <= 0 or var_others <= 0:
        return None
    return {"share": cov / var_own, "corr": cov / math.sqrt(var_own * var_others), "n": n}


def two_speed_states(durations: Sequence[float], iterations: int = 200) -> Optional[Dict[str, float]]:
    """Are the batch times one bump or two speeds? Fits y = ln(1 / duration) with one normal and with a
    mixture of two (EM, started from the lower and upper quartiles) and compares them by BIC (Schwarz:
    k ln n - 2 ln L; 2 and 5 parameters). delta_bic = BIC(one) - BIC(two): above 10 is strong evidence of
    two speeds (Kass & Raftery). Also returns the slow component's weight and the ratio of the
    components' geometric-mean speeds. A core that is either alone or sharing its physical core (an SMT
    sibling busy) would show as two speeds at a fixed ratio."""
    ys = [-math.log(d) for d in durations if d > 0]
    n = len(ys)
    if n < 20:
        return None
    mean = sum(ys) / n
    var = sum((y - mean) ** 2 for y in ys) / n
    if var <= 0:
        return None

    def normal_pdf(y: float, m: float, v: float) -> float:
        return math.exp(-(y - m) ** 2 / (2 * v)) / math.sqrt(2 * math.pi * v)

    ll_one = sum(math.log(normal_pdf(y, mean, var)) for y in ys)
    srt = sorted(ys)
    w, m1, m2, v1, v2 = 0.5, srt[n // 4], srt[(3 * n) // 4], var / 2, var / 2
    floor = var * 1e-4                                  # keeps a component from collapsing on one point
    ll_two = -math.inf
    for _ in range(iterations):
        r = []                                         # responsibility of the slow (m1) component
        ll = 0.0
        for y in ys:
            p1, p2 = w * normal_pdf(y, m1, v1), (1 - w) * normal_pdf(y, m2, v2)
            tot = p1 + p2
            if tot <= 0:
                return None
            r.append(p1 / tot)
            ll += math.log(tot)
        s1 = sum(r)
        s2 = n - s1
        if s1 < 1e-9 or s2 < 1e-9:
            break
        w = s1 / n
        m1 = sum(ri * y for ri, y in zip(r, ys)) / s1
        m2 = sum((1 - ri) * y for ri, y in zip(r, ys)) / s2
        v1 = max(floor, sum(ri * (y - m1) ** 2 for ri, y in zip(r, ys)) / s1)
        v2 = max(floor, sum((1 - ri) * (y - m2) ** 2 for ri, y in zip(r, ys)) / s2)
        if ll - ll_two < 1e-9 * abs(ll):
            ll_two = ll
            break
        ll_two = ll
    if m1 > m2:                                        # component 1 is the slow one (smaller speed)
        w, m1, m2 = 1 - w, m2, m1
    delta_bic = (2 * math.log(n) - 2 * ll_one) - (5 * math.log(n) - 2 * ll_two)
    return {"delta_bic": delta_bic, "slow_share": w, "fast_over_slow": math.exp(m2 - m1), "n": n}


def out_of_order_share(batch_done_s: Sequence[Optional[float]]) -> Optional[float]:
    """Of the consecutive batches (j, j+1) with both finish times known, the share whose worker
    finished j after j+1: the measured side of the simulator's loader.out_of_order_fraction (same
    definition, sim/arrival_order.hpp). With in_order=True each such pair costs the loop a long step
    then a short one; in run 10 the pin-bound tensor cases had 12-23% and a p90 step of 1.8-2.0x the
    mean. None without a pair."""
    pairs = [(a, b) for a, b in zip(batch_done_s, batch_done_s[1:]) if a is not None and b is not None]
    if not pairs:
        return None
    return sum(1 for a, b in pairs if a > b) / len(pairs)


def cv(values: Sequence[float]) -> Optional[float]:
    """Pure: standard deviation over mean (population), None for fewer than 2 values or a mean of 0."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.pstdev(values) / mean if mean > 0 else None


def pin_cycles(pin_spans: Sequence[Sequence[float]], lo: float, hi: float) -> List[float]:
    """Pure: the pin thread's cycles, end of one pin_memory() call to the next one's end, over the calls that end
    inside [lo, hi] (the loop's steady window)."""
    ends = sorted(b for _, b in pin_spans if lo <= b <= hi)
    return [b - a for a, b in zip(ends, ends[1:])]


def case_pin_cycle_cv(timeline: Dict[str, Any]) -> Optional[float]:
    """Pure: the cv of a case's pin cycle over its loop's steady window (timeline["skip"] to its last next() call);
    None without pin spans (an unpinned case) or with under two cycles. The case's own pin thread spread, which
    insitu_diagnostic --pin-cv case gives the simulator as cpu.pin_thread_speed_cv."""
    starts = (timeline.get("main") or {}).get("next_start") or []
    skip = int(timeline.get("skip") or 0)
    if not timeline.get("pin") or len(starts) <= skip:
        return None
    return cv(pin_cycles(timeline["pin"], starts[skip], starts[-1]))


def index_round_trip_s(timeline: Dict[str, Any], prefetch_factor: int) -> List[float]:
    """Pure: an in-order case's timeline -> for each batch the loop took while the worker that gets the next index
    (PyTorch's _try_put_index: batch j + prefetch_factor x workers, to the same worker as j) sat idle, the seconds from
    the loop's take (main `next_end[j]`) to that worker's first __getitem__ of the new batch: the index's trip through
    the index queue and the worker's pickup. The timeline's main and per-worker lists both count from batch 0 (batch
    j is worker j mod n's (j // n)-th). Run 57: 0.25-0.39 ms median, so the simulator's instant hand-off misses little.
    Empty without the data."""
    main = timeline.get("main") or {}
    workers = timeline.get("workers") or {}
    next_end = main.get("next_end") or []
    n = len(workers)
    out: List[float] = []
    if n == 0 or prefetch_factor < 1:
        return out
    for j, took_s in enumerate(next_end):
        w, k = str(j % n), j // n
        batches = workers.get(w) or []
        if k + prefetch_factor >= len(batches):
            continue
        if batches[k + prefetch_factor - 1][1] < took_s:  # the worker had finished what it held: waiting for this index
            out.append(batches[k + prefetch_factor][0] - took_s)
    return out


def loop_s_between_batches(timeline: Dict[str, Any]) -> Optional[float]:
    """Median time the training loop spent between receiving a batch and asking for the next one, over
    the steady steps: with a sync every step, the step itself as it ran inside the case (copy, launch,
    GPU step) without the wait for data."""
    main = timeline["main"]
    skip = int(timeline["skip"])
    starts, ends = main["next_start"], main["next_end"]
    loop = sorted(starts[j + 1] - ends[j] for j in range(skip, min(len(ends), len(starts)) - 1))
    if not loop:
        return None
    m = len(loop) // 2
    return loop[m] if len(loop) % 2 else 0.5 * (loop[m - 1] + loop[m])


WAITING_STEP_FRACTION = 0.25   # a step "waits" when its wait for a batch exceeds this share of the mean step


def waiting_step_share(timeline: Dict[str, Any], fraction: float = WAITING_STEP_FRACTION) -> Optional[float]:
    """The share of the steady steps whose wait for a batch (next() called to batch in hand) exceeds `fraction` of
    the mean step (next() to next()). With in-order delivery and workers in step the loop waits once a round, on
    the worker behind (run 24's image ResNet-50 case at 8 workers: one wait of 40-130 ms every 8th step, on the
    same worker for seconds at a time), so this share sits near 1/num_workers; where it is near 10% the p90 step
    falls on the edge between the short steps and the long ones (the twentieth session's note in validation-runs.md).
    None with fewer than 2 steady steps."""
    main = timeline["main"]
    skip = int(timeline["skip"])
    starts, ends = main["next_start"], main["next_end"]
    n = min(len(starts) - 1, len(ends))
    if n - skip < 2:
        return None
    mean_step = (starts[n] - starts[skip]) / (n - skip)
    if mean_step <= 0:
        return None
    return sum(1 for j in range(skip, n) if ends[j] - starts[j] > fraction * mean_step) / (n - skip)


HALVES_MIN_STEPS = 20   # steady steps in each half, at least, for its p90 to mean anything


def p90_halves(steps: Sequence[float]) -> Optional[Dict[str, float]]:
    """Pure: the p90 of the first and the second half of a case's steady step times, and their difference over their
    mean: how well the case's own window pins down its p90 step. Two halves measured back to back differ by about
    sqrt(2) x the standard error of either; the whole window's p90 has about 1/sqrt(2) of a half's, so it is uncertain
    by about half the difference (independent halves; wander slower than a half only makes the halves agree too well).
    None with fewer than HALVES_MIN_STEPS steps in a half."""
    half = len(steps) // 2
    if half < HALVES_MIN_STEPS:
        return None
    first, second = summarize(list(steps[:half]))["p90"], summarize(list(steps[half:2 * half]))["p90"]
    mean = (first + second) / 2
    if mean <= 0:
        return None
    return {"first_p90_s": first, "second_p90_s": second, "rel_diff": abs(first - second) / mean,
            "steps_per_half": half}


def p90_step_halves(timeline: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """p90_halves over the loop's steps in a case's timeline (next() to next(), the host's view of the step the
    harness times on the GPU)."""
    starts = timeline["main"]["next_start"]
    skip = int(timeline["skip"])
    return p90_halves([b - a for a, b in zip(starts[skip:], starts[skip + 1:])])


def pin_overlap(timeline: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """When the pin thread copies (its pin_memory() calls: the first touch of each worker batch's shared pages,
    the memory map's busy part) against the loop's host work (batch in hand to last launch) and its waits for a
    batch (next() called to batch in hand), over the measured window. A pin thread independent of the loop would
    copy during the loop's host work for the host work's share of the window; one whose batch the loop waits for
    copies in the waits (validation run 23, finding 5). None without pin intervals or a measured window."""
    pin = timeline.get("pin")
    main = timeline["main"]
    skip = int(timeline["skip"])
    ends, starts, launched, synced = main["next_end"], main["next_start"], main["launched"], main["synced"]
    n = len(ends)
    if not pin or n <= skip + 1 or skip < 1:
        return None
    lo, hi = synced[skip - 1], synced[n - 1]
    span = hi - lo
    if span <= 0:
        return None
    host = [(ends[j], launched[j]) for j in range(skip, n)]
    wait = [(starts[j], ends[j]) for j in range(skip, n)]
    pin_s = sum(overlap(a, b, lo, hi) for a, b in pin)
    if pin_s <= 0:
        return None
    pins = sorted(pin)

    def during(spans):
        # both lists in time order, neither overlapping itself (one pin thread, one loop): one pass, advancing
        # whichever interval ends first (convert analyses every case of the table with this)
        total, i, j = 0.0, 0, 0
        while i < len(pins) and j < len(spans):
            (a, b), (c, d) = pins[i], spans[j]
            total += overlap(max(a, c), min(b, d), lo, hi)
            if b <= d:
                i += 1
            else:
                j += 1
        return total
    return {"pin_s": pin_s, "pin_busy_share": pin_s / span,
            "pin_during_host_share": during(host) / pin_s, "pin_during_wait_share": during(wait) / pin_s,
            "host_share_of_window": sum(overlap(a, b, lo, hi) for a, b in host) / span,
            "wait_share_of_window": sum(overlap(a, b, lo, hi) for a, b in wait) / span}


def least_squares_line(xs: Sequence[float], ys: Sequence[float], min_points: int) -> Optional[Tuple[float, float, float]]:
    """(mean x, mean y, slope) of the least-squares line through the points; None with fewer than min_points or
    an x that never varies."""
    if len(xs) < min_points:
        return None
    if max(xs) == min(xs):  # an x that never varies: its float mean can miss it by an ulp, making sxx tiny, not 0
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 0:
        return None
    return mx, my, sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def loop_stall_per_batch(timeline: Dict[str, Any], lead_s: float = 0.020) -> Optional[Dict[str, float]]:
    """The loop's host time a step (batch in hand to last launch) against the worker batches finished during it
    (from lead_s before it to its end: each one soon keeps the pin thread busy on the workers' mapping), fitted
    as a line over the measured window's steps: host = alone_s + stall_s_per_batch x batches. With a pin thread
    the slope is what each batch it handles costs the loop (validation run 23, finding 6); without one it is a
    control (about 0). None with fewer than 10 steps or batches that never vary."""
    main = timeline["main"]
    skip = int(timeline["skip"])
    ends, launched = main["next_end"], main["launched"]
    done = sorted(iv[1] for ivs in (timeline.get("workers") or {}).values() for iv in ivs)
    xs: List[float] = []
    ys: List[float] = []
    lo_i = 0
    for j in range(skip, min(len(ends), len(launched))):
        a, b = ends[j] - lead_s, launched[j]
        while lo_i < len(done) and done[lo_i] < a:
            lo_i += 1
        k = lo_i
        while k < len(done) and done[k] <= b:
            k += 1
        xs.append(float(k - lo_i))
        ys.append(launched[j] - ends[j])
    fit = least_squares_line(xs, ys, 10)
    if fit is None:
        return None
    mx, my, slope = fit
    return {"steps": len(xs), "alone_s": my - slope * mx, "stall_s_per_batch": slope, "batches_per_step": mx,
            "host_s": my}


def span_overlaps(loop_spans: Sequence[Sequence[float]], work_spans: Sequence[Sequence[float]]) -> List[float]:
    """Each loop span's overlap with another thread's work spans (seconds). Pure; spans are (start, end) on one
    clock, loop spans in time order, work spans not overlapping each other."""
    work = sorted((float(a), float(b)) for a, b in work_spans)
    out: List[float] = []
    i = 0
    for a, b in loop_spans:
        while i < len(work) and work[i][1] <= a:
            i += 1
        k, ov = i, 0.0
        while k < len(work) and work[k][0] < b:
            ov += overlap(work[k][0], work[k][1], a, b)
            k += 1
        out.append(ov)
    return out


def stall_line(loop_spans: Sequence[Sequence[float]], work_spans: Sequence[Sequence[float]],
               min_steps: int = 10) -> Optional[Dict[str, float]]:
    """Each loop span's length against its overlap with another thread's work spans, fitted as a line over the
    spans: length = base_s + slope x overlap. The slope is what each second of the other thread's work inside a
    loop step costs the loop (1: the loop stops while it runs; 0: it never notices). Pure; spans are (start, end)
    on one clock, work spans in time order and not overlapping each other. None with fewer than `min_steps` spans or
    overlaps that never vary. Run 27 (finding 1): beside a helper paced by the loop the overlap barely varies and
    this slope is no rate (1.43-1.69 for pin_memory()); interleaved_stall_rate is."""
    xs = span_overlaps(loop_spans, work_spans)
    ys = [b - a for a, b in loop_spans]
    fit = least_squares_line(xs, ys, min_steps)
    if fit is None:
        return None
    mx, my, slope = fit
    return {"steps": len(xs), "base_s": my - slope * mx, "slope": slope, "overlap_s_per_step": mx, "loop_s": my}


def interleaved_block_excess(blocks: Sequence[Dict[str, Any]], work_spans: Sequence[Sequence[float]]
                             ) -> List[Tuple[float, float, float, float]]:
    """Blocks of steps run alone and beside another thread's work in turn (alone first and last: A B A ... B A), so
    that the loop's own drift cancels between neighbours. blocks: {"beside": bool, "spans": [(start, end), ...]} in
    time order. An alone block's steps that overlap any work (the helper finishing the batch it started as the
    block began) are left out of its mean. For each beside block between two alone blocks with steps clear of the
    work: (excess_s, the block's mean step less the mean of its neighbours' means; its mean overlap a step with the
    work; that base; its mean step), in order."""
    overlaps = [span_overlaps(b["spans"], work_spans) for b in blocks]
    alone_mean: List[Optional[float]] = []
    for b, ovs in zip(blocks, overlaps):
        clear = [e - s for (s, e), ov in zip(b["spans"], ovs) if ov == 0.0]
        alone_mean.append(statistics.fmean(clear) if (not b["beside"] and clear) else None)
    out = []
    for i in range(1, len(blocks) - 1):
        b = blocks[i]
        if not b["beside"] or not b["spans"] or alone_mean[i - 1] is None or alone_mean[i + 1] is None:
            continue
        base = (alone_mean[i - 1] + alone_mean[i + 1]) / 2
        mean_step = statistics.fmean(e - s for s, e in b["spans"])
        out.append((mean_step - base, statistics.fmean(overlaps[i]), base, mean_step))
    return out


def interleaved_stall_rate(blocks: Sequence[Dict[str, Any]], work_spans: Sequence[Sequence[float]]
                           ) -> Optional[Dict[str, Any]]:
    """The loop's loss per second of another thread's work inside its steps, from interleaved blocks
    (interleaved_block_excess): the beside blocks' excess summed over their mean overlap a step summed: {"rate",
    "block_rates", "block_excess_s", "alone_s", "beside_s", "overlap_s_per_step", "blocks"}. None without a beside
    block between two alone blocks that have steps clear of the work, or without overlap."""
    read = interleaved_block_excess(blocks, work_spans)
    covered = [ov for _, ov, _, _ in read]
    if not read or sum(covered) <= 0:
        return None
    excess = [e for e, _, _, _ in read]
    return {"rate": sum(excess) / sum(covered),
            "block_rates": [e / ov if ov > 0 else None for e, ov, _, _ in read], "block_excess_s": excess,
            "alone_s": statistics.fmean(base for _, _, base, _ in read),
            "beside_s": statistics.fmean(step for _, _, _, step in read),
            "overlap_s_per_step": statistics.fmean(covered), "blocks": len(read)}


def interleaved_host_ratio(blocks: Sequence[Dict[str, Any]], idle_busy_workers: float = 0.1,
                           min_clear: int = 3) -> Optional[Dict[str, Any]]:
    """The loop's host time beside a loader's busy workers over its time alone, from blocks run alone and beside in
    turn (alone first and last; beside_workers.run_blocks): {"beside": bool, "steps": [(start, end, busy_workers or
    None), ...]}. An alone block counts only its steps with the workers under `idle_busy_workers` busy cores (they
    finish what the beside block asked of them first); where no step of it has a reading, its second half. Each
    beside block with `min_clear` such steps in both neighbours: its median step over the mean of their medians
    (medians: a garbage collection or a page fault in one step is not the loop's pace). {"ratio" (the beside
    blocks' medians summed over their bases summed), "block_ratios", "alone_s", "beside_s",
    "beside_busy_workers" (median over the beside steps with a reading, or None), "alone_clear_steps", "blocks"},
    or None without a beside block between two usable alone ones."""
    def clear_steps(b):
        steps = b["steps"]
        if all(busy is None for _, _, busy in steps):
            return [e - s for s, e, _ in steps[len(steps) // 2:]]
        return [e - s for s, e, busy in steps if busy is not None and busy < idle_busy_workers]
    alone_med: List[Optional[float]] = []
    n_clear = 0
    for b in blocks:
        if b["beside"]:
            alone_med.append(None)
            continue
        c = clear_steps(b)
        n_clear += len(c)
        alone_med.append(statistics.median(c) if len(c) >= min_clear else None)
    bases, besides, ratios, busy_all = [], [], [], []
    for i in range(1, len(blocks) - 1):
        b = blocks[i]
        if not b["beside"] or not b["steps"] or alone_med[i - 1] is None or alone_med[i + 1] is None:
            continue
        base = (alone_med[i - 1] + alone_med[i + 1]) / 2
        med = statistics.median(e - s for s, e, _ in b["steps"])
        bases.append(base)
        besides.append(med)
        ratios.append(med / base)
        busy_all += [busy for _, _, busy in b["steps"] if busy is not None]
    if not bases:
        return None
    return {"ratio": sum(besides) / sum(bases), "block_ratios": ratios, "alone_s": statistics.fmean(bases),
            "beside_s": statistics.fmean(besides),
            "beside_busy_workers": statistics.median(busy_all) if busy_all else None,
            "alone_clear_steps": n_clear, "blocks": len(bases)}


def loop_stall_per_pin_overlap(timeline: Dict[str, Any]) -> Optional[Dict[str, float]]:
    """The loop's host time a step (batch in hand to last launch) against its overlap with the pin thread's
    pin_memory() calls, over the measured window (stall_line). Validation run 26, finding 2: the pinned ResNet-50
    loops of runs 24-26 lose 0.74-0.77 ms per ms of overlap, the copy out of the worker's mapping included. None
    without pin spans."""
    pin = timeline.get("pin")
    if not pin:
        return None
    main = timeline["main"]
    skip = int(timeline["skip"])
    ends, launched = main["next_end"], main["launched"]
    return stall_line([(ends[j], launched[j]) for j in range(skip, min(len(ends), len(launched)))], pin)


LONG_STEP_OVER_MEDIAN = 1.5   # sim/step_stats.hpp kLongStepOverMedian
MIN_STEPS = 40                # fewer steps say nothing about a one-in-ten share


def long_step_anatomy(next_start_s: Sequence[float], num_workers: int) -> Optional[Dict[str, Any]]:
    """Pure: from the times each step's next() was called (the measured window's), the steps' count, the long
    steps' share (over LONG_STEP_OVER_MEDIAN x the median step), the share of the long steps that the busiest
    position of the workers' round (step index mod num_workers) holds, and the three most common gaps between
    consecutive long steps, as (gap in steps, count). None with fewer than MIN_STEPS steps."""
    steps = [b - a for a, b in zip(next_start_s, next_start_s[1:])]
    if len(steps) < MIN_STEPS:
        return None
    threshold = LONG_STEP_OVER_MEDIAN * statistics.median(steps)
    longs = [i for i, s in enumerate(steps) if s > threshold]
    top = None
    if longs and num_workers > 0:
        top = collections.Counter(i % num_workers for i in longs).most_common(1)[0][1] / len(longs)
    gaps = collections.Counter(b - a for a, b in zip(longs, longs[1:])).most_common(3)
    return {"steps": len(steps), "long_share": len(longs) / len(steps), "top_position_share": top, "gaps": gaps}


def timeline_long_steps(timeline: Dict[str, Any], num_workers: int) -> Optional[Dict[str, Any]]:
    """long_step_anatomy of a case's measured window (main.next_start after its `skip` warm-up steps), or None."""
    main = timeline.get("main")
    if not isinstance(main, dict) or not main.get("next_start"):
        return None
    return long_step_anatomy(main["next_start"][int(timeline.get("skip") or 0):], num_workers)


def long_step_share(timeline: Dict[str, Any]) -> Optional[float]:
    """The measured window's long steps' share (timeline_long_steps), or None."""
    a = timeline_long_steps(timeline, 0)
    return None if a is None else a["long_share"]


def group_mean_cv(groups: Dict[Any, List[float]], min_per_group: int = 3) -> Optional[float]:
    """Pure: the spread (population cv) of the groups' means, over groups of at least min_per_group values; None
    with fewer than two such groups."""
    means = [sum(v) / len(v) for v in groups.values() if len(v) >= min_per_group]
    if len(means) < 2:
        return None
    m = sum(means) / len(means)
    return math.sqrt(sum((x - m) ** 2 for x in means) / len(means)) / m if m > 0 else None


def batch_cpu_split(workers: Dict[str, List[List[float]]], workers_cpu: Dict[str, List[List[float]]],
                    lo: float, hi: float) -> Optional[Dict[str, Any]]:
    """Pure: a timeline's batches (harness `workers`: [start, end] per worker, and `workers_cpu`: [thread CPU
    seconds, CPU at the start, CPU at the end] in the same order; since run 42's plan) inside [lo, hi] -> how much of
    their wall the workers spent off their cores, whether the slowest tenth of the batches are slow on the core or
    off it, and whether batch times differ more between CPUs or between workers (a slow spell that stays with a
    core shows as a spread between CPUs, one that stays with a worker as a spread between workers). Batches that
    started and ended on different CPUs count in the shares but not in the groups. None without such data."""
    walls, cpus, by_cpu, by_worker, moved, switched, last_cpu = [], [], {}, {}, 0, 0, {}
    for w, ivs in workers.items():
        cs = workers_cpu.get(w) or []
        for (a, b), c in zip(ivs, cs):
            if a < lo or b > hi or b <= a:
                continue
            wall, cpu_s, c0, c1 = b - a, float(c[0]), int(c[1]), int(c[2])
            walls.append(wall)
            cpus.append(cpu_s)
            if c0 != c1:
                moved += 1
            else:
                by_cpu.setdefault(c0, []).append(wall)
                by_worker.setdefault(w, []).append(wall)
            if w in last_cpu and last_cpu[w] != c0:
                switched += 1
            last_cpu[w] = c1
    if len(walls) < 10:
        return None
    order = sorted(range(len(walls)), key=lambda i: walls[i])
    slow = order[int(0.9 * len(order)):]
    rest = order[:int(0.9 * len(order))]

    def on_core(ix: Sequence[int]) -> float:
        return sum(cpus[i] for i in ix) / sum(walls[i] for i in ix)
    return {"batches": len(walls),
            "between_batches": between_batches_cpu(workers, workers_cpu, lo, hi),
            "off_core_share": 1.0 - sum(cpus) / sum(walls),
            "slowest_tenth_on_core": on_core(slow), "rest_on_core": on_core(rest),
            "slowest_tenth_over_rest": (sum(walls[i] for i in slow) / len(slow)) / (sum(walls[i] for i in rest) / len(rest)),
            "moved_within_batch_share": moved / len(walls),
            "new_cpu_share": switched / len(walls),
            "spread_between_cpus_cv": group_mean_cv(by_cpu),
            "spread_between_workers_cv": group_mean_cv(by_worker)}


def analyse(timeline: Dict[str, Any], num_workers: int, prefetch_factor: int,
            in_order: bool = True) -> Optional[Dict[str, Any]]:
    """Pure: the timeline dict of one case -> worker busy and idle shares, delivery latencies. What needs
    batch j's worker (index-starved time, delivery, steps waiting, the out-of-order share) takes PyTorch's
    round robin, which holds only in order: with in_order=False a batch goes to the next worker with a free
    slot, the timeline does not say which, and those figures are None (run 15's out-of-order cases read
    45-48% under the round-robin assumption where the model had 3-11%)."""
    main = timeline["main"]
    skip = int(timeline["skip"])
    ends, starts, synced = main["next_end"], main["next_start"], main["synced"]
    n = len(ends)
    if n <= skip + 1 or num_workers <= 0:
        return None
    lo, hi = synced[skip - 1], synced[n - 1]
    span = hi - lo
    workers = {int(w): iv for w, iv in timeline["workers"].items()}
    if sorted(workers) != list(range(num_workers)):
        return None
    busy, idle, starved, per_worker_durations, durations, windowed = [], [], [], [], [], []
    for w in range(num_workers):
        iv = workers[w]
        win = [(a, b) for a, b in iv if a >= lo and b <= hi]
        d = [b - a for a, b in win]
        per_worker_durations.append([len(d), sum(d), sum(x * x for x in d)])
        durations.append(d)
        windowed.append(win)
        busy.append(sum(overlap(a, b, lo, hi) for a, b in iv) / span)
        idle_s = starved_s = 0.0
        for k in range(1, len(iv)):
            gap0, gap1 = iv[k - 1][1], iv[k][0]
            g = overlap(gap0, gap1, lo, hi)
            if g <= 0:
                continue
            idle_s += g
            j = k * num_workers + w                   # this worker's k-th batch (round robin)
            src = j - prefetch_factor * num_workers   # the hand-off that sent its index
            if in_order and 0 <= src < n:
                sent = ends[src]
                starved_s += overlap(gap0, min(gap1, sent), lo, hi)
        idle.append(idle_s / span)
        starved.append(starved_s / span)
    # batch j was made by worker j % num_workers as its (j // num_workers)-th (round robin, one epoch)
    done_by_batch = [workers[j % num_workers][j // num_workers][1]
                     if j // num_workers < len(workers[j % num_workers]) else None for j in range(skip, n)]
    deliver, late = [], []
    for j in range(skip, n if in_order else skip):
        w, k = j % num_workers, j // num_workers
        if k >= len(workers[w]):
            break
        done = workers[w][k][1]
        ready = max(done, starts[j])
        deliver.append(ends[j] - ready)
        late.append(done > starts[j])
    nb = len(deliver)
    return {
        "window_s": span,
        "worker_busy": sum(busy) / num_workers,
        "worker_idle": sum(idle) / num_workers,
        "worker_index_starved": (sum(starved) / num_workers) if in_order else None,
        "busy_by_worker": [round(b, 3) for b in busy],
        "spread": worker_spread(per_worker_durations),
        "core_wander": core_wander(durations),
        # each worker's own wander (the shared part removed), as calibrate's logged "each thread's own"
        "own_wander": core_wander(without_common_mode(windowed)),
        "common_share": common_share(windowed),
        "two_speed_states": two_speed_states([d for ds in durations for d in ds]),
        "out_of_order_share": out_of_order_share(done_by_batch) if in_order else None,
        "delivery_s": summarize(deliver) if deliver else None,
        "steps_waiting_on_a_worker": (sum(late) / nb) if nb else None,
        "pin_overlap": pin_overlap(timeline),
        "loop_stall": loop_stall_per_batch(timeline) if "launched" in main else None,
        "loop_stall_per_pin_overlap": loop_stall_per_pin_overlap(timeline) if "launched" in main else None,
        "waiting_step_share": waiting_step_share(timeline),
        "cpu_split": (batch_cpu_split(timeline["workers"], timeline["workers_cpu"], lo, hi)
                      if timeline.get("workers_cpu") else None),
        "sync_wait": sync_wait_spells(timeline),
    }


def sync_wait_spells(timeline: Dict[str, Any], long_over_median_s: float = 0.0007) -> Optional[Dict[str, Any]]:
    """Pure: the loop's wait at each step's sync (last launch returned to the sync returned), for a loop that syncs
    every step: its p50 and p90, the share of steps waiting long_over_median_s beyond the median, the longest run of
    such steps in a row, and the lag-one autocorrelation of the waits. Run 43 (finding 3): tensor_u8's GPU-bound
    loop waited 9.84-11.67 ms (p10-p90) on an mm:10 step (9.99 ms rested, 11.79 back to back) with a lag-one
    autocorrelation of 0.35 and runs of up to 11 long steps: the GPU's clock in spells. None under 20 steps."""
    main = timeline.get("main") or {}
    if "synced" not in main or "launched" not in main:
        return None
    skip = int(timeline.get("skip") or 0)
    waits = [s - l for s, l in zip(main["synced"][skip:], main["launched"][skip:])]
    if len(waits) < 20:
        return None
    srt = sorted(waits)
    med = srt[len(srt) // 2]
    mean = sum(waits) / len(waits)
    var = sum((w - mean) ** 2 for w in waits) / len(waits)
    lag_one = (sum((waits[i] - mean) * (waits[i + 1] - mean) for i in range(len(waits) - 1))
               / ((len(waits) - 1) * var)) if var > 0 else 0.0
    longest = run = 0
    for w in waits:
        run = run + 1 if w > med + long_over_median_s else 0
        longest = max(longest, run)
    return {"steps": len(waits), "p50_s": med, "p90_s": srt[min(len(srt) - 1, int(0.9 * len(srt)))],
            "long_share": sum(w > med + long_over_median_s for w in waits) / len(waits),
            "longest_run": longest, "lag_one": lag_one}


def between_batches_cpu(workers: Dict[str, List[List[float]]], workers_cpu: Dict[str, List[List[float]]],
                        lo: float, hi: float) -> Optional[Dict[str, Any]]:
    """Pure: a worker thread's CPU and wall between one batch's end (collate returned) and its next batch's start
    (first __getitem__), over the consecutive pairs of batches inside [lo, hi] whose workers_cpu entries carry the
    thread's CPU clock at the start (the fourth field, harness since run 43's plan): CPU = next start's clock less
    (this start's clock + this batch's CPU). What the worker's own thread does between batches (the index's fetch,
    the hand-off of the batch to its feeder thread), against the model's other CPU per batch, which it runs in series
    with the loads (validation-runs.md run 42, finding 7). {"pairs", "cpu_s_median", "wall_s_median"}; None
    without such pairs."""
    cpu_gaps, wall_gaps = [], []
    for w, ivs in workers.items():
        cs = workers_cpu.get(w) or []
        for (a, b), (c, d) in zip(zip(ivs, cs), zip(ivs[1:], cs[1:])):
            if len(b) < 4 or len(d) < 4 or b[3] < 0 or d[3] < 0 or a[0] < lo or c[1] > hi:
                continue
            cpu_gaps.append(float(d[3]) - (float(b[3]) + float(b[0])))
            wall_gaps.append(c[0] - a[1])
    if not cpu_gaps:
        return None
    return {"pairs": len(cpu_gaps), "cpu_s_median": statistics.median(cpu_gaps),
            "wall_s_median": statistics.median(wall_gaps)}


def cpu_split_text(cs: Optional[Dict[str, Any]]) -> str:
    """Pure: batch_cpu_split's figures in one clause of timeline_analysis's line ('' without them)."""
    if not cs:
        return ""

    def cv(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x:.3f}"
    return (f"  workers off their cores {cs['off_core_share']:.1%} of their batches' wall; the slowest tenth "
            f"({cs['slowest_tenth_over_rest']:.2f}x the rest) on the core {cs['slowest_tenth_on_core']:.0%} "
            f"against {cs['rest_on_core']:.0%}; batch means spread {cv(cs['spread_between_cpus_cv'])} between CPUs, "
            f"{cv(cs['spread_between_workers_cv'])} between workers; {cs['new_cpu_share']:.0%} of batches on a new CPU"
            + (f"; between batches {bb['cpu_s_median'] * 1e3:.2f} ms of the worker thread's CPU in "
               f"{bb['wall_s_median'] * 1e3:.2f} ms" if (bb := cs.get("between_batches")) else ""))


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", help="harness output with --timeline")
    a = ap.parse_args(argv)
    import convert  # noqa: E402 (read_json: a call's cases.json or its .gz; not at the top: the harness imports this file)
    doc = convert.read_json(a.cases)
    rows: List[str] = []
    for c in doc.get("cases") or []:
        tl = (c.get("measured") or {}).get("timeline")
        k = c.get("knobs") or {}
        if not tl or k.get("epochs", 1) > 1:
            continue
        r = analyse(tl, int(k["num_workers"]), int(k["prefetch_factor"]), bool(k.get("in_order", True)))
        if r is None:
            continue
        d = r["delivery_s"] or {}

        def pct(x, width):
            return f"{x * 100:{width}.1f}%" if x is not None else "n/a (out of order)"
        rows.append(f"{c['id'][:58]:58s} {c['measured']['throughput_samples_per_s']:6.0f}  busy {r['worker_busy']*100:5.1f}%"
                    f"  idle {r['worker_idle']*100:5.1f}% (index-starved {pct(r['worker_index_starved'], 5)})"
                    + (f"  delivery p50 {(d.get('p50') or 0)*1e3:6.1f} ms p90 {(d.get('p90') or 0)*1e3:6.1f} ms" if d else "")
                    + f"  steps waiting on a worker {pct(r['steps_waiting_on_a_worker'], 4)}"
                    + (f" (over a quarter of the mean step: {r['waiting_step_share']:.1%})"
                       if r.get("waiting_step_share") is not None else "")
                    + f"  per worker {r['busy_by_worker']}"
                    + (f"  worker spread cv {r['spread']['worker_spread_cv']:.3f} (raw {r['spread']['worker_spread_cv_raw']:.3f})"
                       if r["spread"] else "")
                    + (f"  wander cv {r['core_wander']['cv']:.3f}, lag-one {r['core_wander']['lag_one_autocorrelation']:.2f}"
                       f" -> {r['core_wander']['correlation_s'] or 0:.2f} s" if r["core_wander"] else "")
                    + (f"  own wander cv {r['own_wander']['cv']:.3f} -> {r['own_wander']['correlation_s'] or 0:.2f} s"
                       if r.get("own_wander") else "")
                    + (f"  common to all workers {r['common_share']['share']:+.2f}" if r["common_share"] else "")
                    + (f"  out of order {r['out_of_order_share']:.0%}" if r["out_of_order_share"] is not None else "")
                    + (f"  two speeds: delta BIC {r['two_speed_states']['delta_bic']:+.0f} (strong above 10), slow {r['two_speed_states']['slow_share']:.0%},"
                       f" fast/slow {r['two_speed_states']['fast_over_slow']:.2f}" if r["two_speed_states"] else "")
                    + (f"  loop host {r['loop_stall']['host_s'] * 1e3:.1f} ms a step = {r['loop_stall']['alone_s'] * 1e3:.1f}"
                       f" + {r['loop_stall']['stall_s_per_batch'] * 1e3:.2f} ms x {r['loop_stall']['batches_per_step']:.2f}"
                       " batches finished in it" if r.get("loop_stall") else "")
                    + (f"  loop host {r['loop_stall_per_pin_overlap']['base_s'] * 1e3:.1f} ms + "
                       f"{r['loop_stall_per_pin_overlap']['slope']:.2f} x its overlap with pin_memory() "
                       f"({r['loop_stall_per_pin_overlap']['overlap_s_per_step'] * 1e3:.1f} ms a step)"
                       if r.get("loop_stall_per_pin_overlap") else "")
                    + (f"  pin thread copying {r['pin_overlap']['pin_busy_share']:.0%} of the window: "
                       f"{r['pin_overlap']['pin_during_host_share']:.0%} of it in the loop's host work (its share of the "
                       f"window {r['pin_overlap']['host_share_of_window']:.0%}), {r['pin_overlap']['pin_during_wait_share']:.0%} "
                       f"in its waits ({r['pin_overlap']['wait_share_of_window']:.0%})" if r.get("pin_overlap") else "")
                    + cpu_split_text(r.get("cpu_split"))
                    + (f"  sync wait p50 {r['sync_wait']['p50_s'] * 1e3:.2f} p90 {r['sync_wait']['p90_s'] * 1e3:.2f} ms, "
                       f"{r['sync_wait']['long_share']:.0%} long (up to {r['sync_wait']['longest_run']} in a row), "
                       f"lag-one {r['sync_wait']['lag_one']:.2f}" if r.get("sync_wait") else ""))
    print("\n".join(rows) if rows else "no case with a timeline (run harness.py with --timeline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
