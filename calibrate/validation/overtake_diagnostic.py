#!/usr/bin/env python3
"""Why an in-order loader's batches overtake each other, per case, from the harness's --timeline.

With in_order=True a batch that finishes before the one ahead of it waits, and the loop then takes a long step and a
short one; its p90 step follows how often that happens (validation run 61, findings 2-5). PyTorch's _next_data sends
one index each time it returns a batch, so two batches returned back to back send two indices almost together, and
those overtake each other far more often than indices sent a pin period apart. Per case this prints:

- the measured out-of-order share (timeline_analysis.out_of_order_share over the whole timeline);
- the overtakes of consecutive batches whose indices were sent under GAP apart against those sent farther apart
  (overtakes_by_send_gap);
- the workers' log batch time autocorrelation at 1, 2 and 4 of a worker's batches (insitu_diagnostic's pooled, around
  the common mean: a worker's memory counted in batches);
- the share of the workers' wander they show at the same time (timeline_analysis.common_share) over the whole case
  and read in windows of 1.5, 4 and 8 s (windowed_common_share: how long a window must be to see it).

Run from the repository root: python3 calibrate/validation/overtake_diagnostic.py RESULTS_DIR [--gap-ms 2]
"""
import argparse
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
import insitu_diagnostic  # noqa: E402
import timeline_analysis  # noqa: E402

WINDOWS_S = (1.5, 4.0, 8.0)


def batch_spans(timeline: Dict[str, Any]) -> Dict[int, Sequence[float]]:
    """Pure: batch index -> its worker's (first __getitem__, collate end), in order and round robin: batch j is worker
    j mod n's (j // n)-th in the timeline, which counts from the loader's first batch."""
    workers = timeline.get("workers") or {}
    n = len(workers)
    out: Dict[int, Sequence[float]] = {}
    for w, spans in workers.items():
        for k, span in enumerate(spans):
            out[k * n + int(w)] = span
    return out


def overtakes_by_send_gap(timeline: Dict[str, Any], prefetch_factor: int, gap_s: float) -> Optional[Dict[str, Any]]:
    """Pure: for consecutive batches (j, j + 1) both sent by the loop (j >= prefetch_factor x workers: sent when the
    loop took batch j - that, main next_end) and both finished, how many finished in reverse order, split by whether
    their indices went out less than gap_s apart. None without such pairs."""
    next_end = ((timeline.get("main") or {}).get("next_end")) or []
    spans = batch_spans(timeline)
    ahead = prefetch_factor * len(timeline.get("workers") or {})
    close = far = close_over = far_over = 0
    for j in range(ahead, len(next_end) + ahead - 1):
        if j + 1 not in spans or j not in spans or j + 1 - ahead >= len(next_end):
            continue
        overtaken = spans[j + 1][1] < spans[j][1]
        if next_end[j + 1 - ahead] - next_end[j - ahead] < gap_s:
            close, close_over = close + 1, close_over + overtaken
        else:
            far, far_over = far + 1, far_over + overtaken
    if close + far == 0:
        return None
    return {"close": close, "close_overtaken": close_over, "far": far, "far_overtaken": far_over,
            "close_share": close_over / close if close else None, "far_share": far_over / far if far else None}


def windowed_common_share(per_worker_spans: Sequence[Sequence[Sequence[float]]], window_s: float) -> Optional[float]:
    """Pure: the mean of timeline_analysis.common_share over consecutive windows of window_s from the first batch's
    start, each taking the batches wholly inside it. None where no window has a reading."""
    starts = [s[0] for w in per_worker_spans for s in w]
    ends = [s[1] for w in per_worker_spans for s in w]
    if not starts:
        return None
    t, last, shares = min(starts), max(ends), []
    while t + window_s <= last:
        inside = [[s for s in w if s[0] >= t and s[1] <= t + window_s] for w in per_worker_spans]
        cs = timeline_analysis.common_share(inside)
        if cs:
            shares.append(cs["share"])
        t += window_s
    return statistics.fmean(shares) if shares else None


def case_figures(case: Dict[str, Any], gap_s: float) -> Optional[Dict[str, Any]]:
    """The figures above for one case with an in-order, multi-worker timeline; None otherwise."""
    knobs = case.get("knobs") or {}
    timeline = (case.get("measured") or {}).get("timeline") or {}
    workers = timeline.get("workers") or {}
    if case.get("status") != "ok" or len(workers) < 2 or knobs.get("in_order", True) is False:
        return None
    spans = batch_spans(timeline)
    done = [spans[j][1] if j in spans else None for j in range(max(spans) + 1)] if spans else []
    walls = [w for w in insitu_diagnostic.timeline_worker_walls(case).values() if len(w) >= 8]
    acf = insitu_diagnostic.pooled_autocorrelation(walls, (1, 2, 4))[2] if len(walls) >= 2 else None
    per_worker = [spans_of for _, spans_of in sorted(workers.items(), key=lambda kv: int(kv[0]))]
    return {"out_of_order": timeline_analysis.out_of_order_share(done),
            "by_gap": overtakes_by_send_gap(timeline, int(knobs.get("prefetch_factor") or 2), gap_s),
            "autocorrelation": acf, "common_share": insitu_diagnostic.case_common_share(case),
            "windowed_common_share": {w: windowed_common_share(per_worker, w) for w in WINDOWS_S}}


def _f(x: Optional[float], fmt: str = "{:+.2f}") -> str:
    return fmt.format(x) if x is not None else "n/a"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir")
    ap.add_argument("--gap-ms", type=float, default=2.0,
                    help="indices sent closer than this count as sent together (default %(default)s ms)")
    a = ap.parse_args(argv)
    doc = convert.read_call_json(a.results_dir, "cases.json")
    print(f"{'case':52s} {'ooo':>5s}  overtaken: sent < {a.gap_ms:g} ms | farther   lag 1/2/4 (a worker's batches)"
          f"   common share: case | in {' / '.join(f'{w:g}' for w in WINDOWS_S)} s")
    for c in doc["cases"]:
        fig = case_figures(c, a.gap_ms / 1e3)
        if fig is None:
            continue
        g = fig["by_gap"] or {}
        gap = (f"{g.get('close_overtaken', 0)}/{g.get('close', 0)} ({_f(g.get('close_share'), '{:.0%}')}) | "
               f"{g.get('far_overtaken', 0)}/{g.get('far', 0)} ({_f(g.get('far_share'), '{:.0%}')})")
        acf = " / ".join(_f(x) for x in fig["autocorrelation"]) if fig["autocorrelation"] else "n/a"
        win = " / ".join(_f(fig["windowed_common_share"][w]) for w in WINDOWS_S)
        print(f"{c['id'][:52]:52s} {_f(fig['out_of_order'], '{:.1%}'):>5s}  {gap:28s} {acf:22s}"
              f" {_f(fig['common_share'])} | {win}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
