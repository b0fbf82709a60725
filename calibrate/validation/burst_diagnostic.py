#!/usr/bin/env python3
"""Diagnostic: do the model's workers deliver batches as bursty as the real ones? In an input-bound loader
the p90 step time is set by how the workers' batch completions bunch up: evenly spread completions give
steps near the mean, completions in bursts give a few long waits. PyTorch starts every worker's first
batches at once (`_reset` puts the first prefetch_factor x num_workers indices after every worker is up),
so their phases spread only through the samples' own spread and the cores' wander; so does the model.
This compares the spread of the gaps between consecutive batch completions (all workers together), as the
case's timeline measured it (harness --timeline) and as the simulator's Perfetto trace of the same scenario
shows it (convert.case_inputs, as convert predicts the case), over a few seeds. Usage:

    python3 calibrate/validation/burst_diagnostic.py RESULTS_DIR [RESULTS_DIR ...] [--pipeplan build/cli/pipeplan]

Each RESULTS_DIR holds cases.json (with timelines) and profile.json from one device call. Cases with at
least 4 workers and one epoch are compared.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402


def completion_gaps(done_s: Sequence[float]) -> Optional[Dict[str, float]]:
    """The gaps between consecutive batch completions (sorted, all workers together): their mean, their cv
    (population sd over mean: about 0 for evenly spread completions, above 1 for bursts) and the share of
    gaps under a quarter of the mean (batches finishing nearly together). None with fewer than 3 completions."""
    t = sorted(float(x) for x in done_s)
    if len(t) < 3:
        return None
    gaps = [b - a for a, b in zip(t, t[1:])]
    mean = statistics.fmean(gaps)
    if mean <= 0:
        return None
    return {"n": len(gaps), "mean_s": mean, "cv": statistics.pstdev(gaps) / mean,
            "tiny_share": sum(g < 0.25 * mean for g in gaps) / len(gaps)}


def measured_completions(timeline: Dict[str, Any]) -> List[float]:
    """Each worker batch's collate end after the measured window opens (the loop's batch `skip` in hand)."""
    t0 = timeline["main"]["next_end"][int(timeline["skip"])]
    return [iv[1] for ivs in (timeline.get("workers") or {}).values() for iv in ivs if iv[1] > t0]


def simulated_completions(trace: Dict[str, Any], warmup_share: float = 0.2) -> List[float]:
    """The end of each worker's "load+collate" span in a pipeplan Perfetto trace, in seconds, after the
    first warmup_share of the workers' active time (their start-up and first round)."""
    spans = [e for e in trace.get("traceEvents") or [] if e.get("name") == "load+collate" and e.get("ph") == "X"]
    if not spans:
        return []
    lo = min(e["ts"] for e in spans)
    hi = max(e["ts"] + e["dur"] for e in spans)
    return [(e["ts"] + e["dur"]) / 1e6 for e in spans if e["ts"] > lo + warmup_share * (hi - lo)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dirs", nargs="+")
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)
    ap.add_argument("--seeds", type=int, default=3, help="simulated seeds per case (default %(default)s)")
    a = ap.parse_args()
    convert.exit_without_pipeplan("burst_diagnostic", a.pipeplan)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        calls = convert.load_calls(a.results_dirs)
        duty_taus = convert.loaded_duty_time_constants(calls)   # as the table: per GPU kind of the calls given
        for d, doc, profile, cpu_curve in calls:
            for c in doc.get("cases") or []:
                k = c.get("knobs") or {}
                tl = (c.get("measured") or {}).get("timeline")
                if c.get("status") != "ok" or not tl or int(k.get("num_workers", 0)) < 4 \
                        or int(k.get("epochs", 1) or 1) > 1:
                    continue
                meas = completion_gaps(measured_completions(tl))
                scen, prof = convert.table_case_inputs(c, doc, profile, cpu_curve, duty_taus.get(convert.call_gpu(doc)))
                stem = os.path.join(tmp, c["id"])
                json.dump(scen, open(stem + ".json", "w"))
                json.dump(prof if prof is not None else profile, open(stem + ".profile.json", "w"))
                sims = []
                for seed in range(1, max(1, a.seeds) + 1):
                    p = subprocess.run([a.pipeplan, "simulate", stem + ".json", "--profile", stem + ".profile.json",
                                        "--seed", str(seed), "--trace", stem + ".trace.json", "--format", "json",
                                        "-o", stem + ".out.json"], capture_output=True, text=True, timeout=300)
                    if p.returncode != 0:
                        print(f"{c['id']}: pipeplan failed: {p.stderr.strip()[:300]}", file=sys.stderr)
                        break
                    g = completion_gaps(simulated_completions(json.load(open(stem + ".trace.json"))))
                    if g:
                        sims.append(g)
                if not meas or not sims:
                    continue
                sim_cv = [s["cv"] for s in sims]
                rows.append((meas["cv"], statistics.fmean(sim_cv), min(sim_cv), max(sim_cv)))
                print(f"{os.path.basename(os.path.normpath(d))[-8:]:8s} {c['id'][:52]:52s} gap {1e3 * meas['mean_s']:6.1f} ms: "
                      f"cv measured {meas['cv']:.2f}, simulated {statistics.fmean(sim_cv):.2f} "
                      f"({min(sim_cv):.2f}-{max(sim_cv):.2f} over {len(sims)} seeds); batches finishing together "
                      f"{meas['tiny_share']:.2f} / {statistics.fmean(s['tiny_share'] for s in sims):.2f}")
    if not rows:
        print("burst_diagnostic: no case with a timeline and at least 4 workers", file=sys.stderr)
        return 2
    diffs = [s - m for m, s, _, _ in rows]
    within = sum(lo <= m <= hi for m, _, lo, hi in rows)
    print(f"{len(rows)} cases: completion-gap cv simulated minus measured, median {statistics.median(diffs):+.2f} "
          f"(measured median {statistics.median(r[0] for r in rows):.2f}); the measured inside the seeds' range in "
          f"{within} (a diagnostic, not a prediction)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
