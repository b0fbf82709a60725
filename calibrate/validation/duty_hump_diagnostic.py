#!/usr/bin/env python3
"""Diagnostic: the GPU clock's humps at a high duty, read off the duty curve's per-step times.

The harness's gpu_duty_curve launches one step every isolated_step / duty seconds and times each by CUDA events
(`steps_s`, since run 44); since run 45 it holds its top duty (about 0.83) 3.0 s, 2.4 s of it timed
(harness.duty_window_s). Run 44's 0.6 s windows caught one hump each: the step climbing to 1.20-1.25x its low and
back (validation-runs.md run 44, finding 2). This reads how often they come and how long they last: per point, the
low (10th percentile step), the high (95th), the spells of steps whose running mean over SMOOTH_S is above the
midpoint between them (gaps of up to BRIDGE_STEPS low steps bridged, spells under MIN_SPELL_S dropped: the ramp in
and out flickers), their length and the time between their starts, all
in seconds of the loop's wall (a step's wall is its GPU time over the point's achieved duty). A point whose high is
within FLAT_RATIO of its low has no humps.

    python3 calibrate/validation/duty_hump_diagnostic.py [RESULTS_DIR ...]

Without RESULTS_DIR it reads every call listed in calibrate/validation/table_calls.txt whose duty curves carry
`steps_s`. Nothing is simulated.
"""
from __future__ import annotations

import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402

BRIDGE_STEPS = 2      # low steps inside a spell that do not end it
SMOOTH_S = 0.1        # the running mean's span before the threshold: single slow steps are not humps
MIN_SPELL_S = 0.1     # shorter spells above the midpoint are flicker, not humps
FLAT_RATIO = 1.05     # high / low below this: no humps
MIN_STEPS = 20        # fewer timed steps say nothing of a period


percentile = convert.percentile   # the q-quantile (0..1), linear between order statistics


def high_spells(high: Sequence[bool], bridge: int = BRIDGE_STEPS) -> List[tuple]:
    """Pure: (first, last) step indices of each run of high steps, runs separated by at most `bridge` low steps
    merged into one."""
    spells: List[list] = []
    for i, h in enumerate(high):
        if not h:
            continue
        if spells and i - spells[-1][1] - 1 <= bridge:
            spells[-1][1] = i
        else:
            spells.append([i, i])
    return [tuple(s) for s in spells]


def running_mean(xs: Sequence[float], span: int) -> List[float]:
    """Pure: each value's mean with its neighbours, `span` values centred on it (fewer at the ends)."""
    half = max(span, 1) // 2
    return [sum(xs[max(0, i - half):i + half + 1]) / len(xs[max(0, i - half):i + half + 1]) for i in range(len(xs))]


def hump_reading(steps_s: Sequence[float], duty: float) -> Optional[Dict[str, Any]]:
    """Pure: one duty point's humps. steps_s: each timed step's GPU time; duty: the point's achieved duty (GPU time
    over wall), which gives each step's wall as its mean GPU time / duty. None with fewer than MIN_STEPS steps or a
    duty outside (0, 1]."""
    if len(steps_s) < MIN_STEPS or not 0 < duty <= 1:
        return None
    mean_s = sum(steps_s) / len(steps_s)
    wall_per_step_s = mean_s / duty
    low_s, high_s = percentile(steps_s, 0.10), percentile(steps_s, 0.95)
    out: Dict[str, Any] = {"steps": len(steps_s), "window_s": len(steps_s) * wall_per_step_s, "low_s": low_s,
                           "high_over_low": high_s / low_s, "mean_over_low": mean_s / low_s,
                           "p90_over_mean": percentile(steps_s, 0.90) / mean_s, "spells": [], "period_s": None}
    if high_s / low_s < FLAT_RATIO:
        return out
    mid_s = (low_s + high_s) / 2
    smooth = running_mean(steps_s, max(1, round(SMOOTH_S / wall_per_step_s)))
    spells = [(a, b) for a, b in high_spells([x > mid_s for x in smooth])
              if (b - a + 1) * wall_per_step_s >= MIN_SPELL_S]
    out["spells"] = [{"start_s": a * wall_per_step_s, "length_s": (b - a + 1) * wall_per_step_s,
                      "mean_over_low": statistics.mean(steps_s[a:b + 1]) / low_s,
                      "touches_edge": a == 0 or b == len(steps_s) - 1} for a, b in spells]
    out["high_share"] = sum(b - a + 1 for a, b in spells) / len(steps_s)
    starts = [s["start_s"] for s in out["spells"] if s["start_s"] > 0]   # a spell at the window's start began before it
    if len(starts) >= 2:
        out["period_s"] = statistics.median(b - a for a, b in zip(starts, starts[1:]))
    return out


def call_readings(results_dir: str) -> List[Dict[str, Any]]:
    """The humps of every duty point with per-step times in one call."""
    doc = convert.read_call_json(results_dir, "cases.json")
    curves = ((doc.get("components") or {}).get("gpu_duty_curves") or {})
    rows = []
    for key, curve in sorted(curves.items()):
        for p in curve.get("points") or []:
            r = hump_reading(p.get("steps_s") or [], float(p.get("duty") or 0))
            if r is not None:
                rows.append({"call": os.path.basename(results_dir.rstrip("/")), "step": key,
                             "target_duty": p.get("target_duty"), "duty": p.get("duty"), **r})
    return rows


def main(argv: Sequence[str]) -> int:
    dirs = list(argv) or convert.table_call_dirs(os.path.join(HERE, "table_calls.txt"))
    rows = [r for d in dirs for r in call_readings(d)]
    if not rows:
        print("no duty curve with per-step times (steps_s: runs 44 on)")
        return 1
    print(f"{'call':32} {'step':22} duty steps window  low ms  high/low mean/low p90/mean  spells (start s, length s, "
          f"mean/low)  period s")
    for r in rows:
        spells = "; ".join(f"{s['start_s']:.2f}+{s['length_s']:.2f} x{s['mean_over_low']:.2f}" for s in r["spells"])
        period = f"{r['period_s']:.2f}" if r["period_s"] is not None else "-"
        print(f"{r['call'][:32]:32} {r['step'][:22]:22} {r['duty']:.2f} {r['steps']:5d} {r['window_s']:5.2f}s "
              f"{r['low_s'] * 1e3:7.2f} {r['high_over_low']:9.3f} {r['mean_over_low']:8.3f} {r['p90_over_mean']:8.3f}  "
              f"{spells or '-'}  {period}")
    humped = [r for r in rows if r["spells"]]
    periods = [r["period_s"] for r in humped if r["period_s"] is not None]
    inner = [s["length_s"] for r in humped for s in r["spells"] if not s["touches_edge"]]
    print(f"{len(humped)} of {len(rows)} points humped (high/low >= {FLAT_RATIO}); duties of the humped "
          f"{min(r['duty'] for r in humped):.2f}-{max(r['duty'] for r in humped):.2f}" if humped else
          f"0 of {len(rows)} points humped")
    if periods:
        print(f"period (median gap between spell starts): median {statistics.median(periods):.2f} s over "
              f"{len(periods)} points, range {min(periods):.2f}-{max(periods):.2f}")
    if inner:
        print(f"spell length (spells inside the window): median {statistics.median(inner):.2f} s over {len(inner)}, "
              f"range {min(inner):.2f}-{max(inner):.2f}")
    if humped:
        print(f"high share: median {statistics.median(r['high_share'] for r in humped):.2f}; mean/low median "
              f"{statistics.median(r['mean_over_low'] for r in humped):.3f}; p90/mean median "
              f"{statistics.median(r['p90_over_mean'] for r in humped):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
