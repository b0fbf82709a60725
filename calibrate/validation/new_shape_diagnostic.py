#!/usr/bin/env python3
"""new_shape_diagnostic: how often a sequence case's steps met a batch shape they had not run, measured against
simulated (validation run 63).

    python3 calibrate/validation/new_shape_diagnostic.py calibrate/validation/results/2026-12-05-h200-run63seq \
        [--seeds 4] [--pipeplan build/cli/pipeplan]

A step on a new shape spends 100-150 ms of host time building kernel plans before its kernels; one on a shape already
run launches in about 10 ms. Per seq:N case of the call:
  - measured: the share of the window's steps whose launches (timeline: `copied` to `launched`) were slow, split at
    the geometric middle of the launches' 5th and 95th percentiles (no split where those are within 3x: one shape,
    or none new); the in-situ cost of a new shape (median slow launch minus median fast one);
  - simulated: convert's scenario (the table's options) over the case's own steps, with sequence.new_shape_host_s
    from the case's sequence_new_shape component where the harness measured it (run 64 on), else the in-situ cost
    (labelled: a diagnostic of the model's shape count, not a prediction); and the lengths from the case's length
    histogram where recorded, else a dataset of the component's n lines drawn from the same law as the harness's
    gen_tokens (lognormal by the lengths' mean and cv, cut to 8..max) with Python's generator: the same law and size,
    not the same lines (labelled);
  - the simulated share of new shapes per step, samples/s and p90 step (mean over seeds) against measured.
The histogram's lines are dealt without replacement, as the harness's sampler deals a permutation each pass
(`--replacement`: drawn independently instead).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402
from convert import read_json, stored_json_path  # noqa: E402


def launch_spans_s(case: Dict[str, Any]) -> List[float]:
    """Pure: the measured window's launch spans (timeline main: copied -> launched), seconds."""
    m = case.get("measured") or {}
    tl = m.get("timeline") or {}
    main = tl.get("main") or {}
    skip = int(tl.get("skip") or m.get("skip") or 0)
    pairs = list(zip(main.get("copied") or [], main.get("launched") or []))[skip:]
    return [b - a for a, b in pairs if a is not None and b is not None]


def split_new_shapes(spans: List[float]) -> Tuple[float, Optional[float]]:
    """Pure: (share of slow spans, median slow minus median fast) with the split at the geometric middle of the 5th
    and 95th percentiles; (0, None) when those are within 3x of each other (no bimodality) or too few spans."""
    if len(spans) < 10:
        return 0.0, None
    s = sorted(spans)
    lo, hi = s[int(0.05 * (len(s) - 1))], s[int(0.95 * (len(s) - 1))]
    if lo <= 0 or hi < 3 * lo:
        return 0.0, None
    cut = math.sqrt(lo * hi)
    slow = [x for x in s if x > cut]
    fast = [x for x in s if x <= cut]
    if not slow or not fast:
        return len(slow) / len(s), None
    return len(slow) / len(s), statistics.median(slow) - statistics.median(fast)


def same_law_histogram(tokens: Dict[str, Any], seed: int = 77) -> List[List[int]]:
    """A dataset of tokens['n'] lengths from the harness's law (lognormal with the component's mean and cv, cut to
    8..max), drawn with Python's generator, as [length, count] pairs: the same law and size, not the same lines."""
    rng = random.Random(seed)
    cv, mean = float(tokens.get("cv") or 0.0), float(tokens["mean"])
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean) - sigma * sigma / 2
    top = int(tokens.get("max") or 2048)
    counts: Dict[int, int] = {}
    for _ in range(int(tokens.get("n") or 1000)):
        x = min(top, max(8, int(rng.lognormvariate(mu, sigma))))
        counts[x] = counts.get(x, 0) + 1
    return [[k, counts[k]] for k in sorted(counts)]


def main() -> int:
    from new_shape_replay import insitu_overlap_fraction, read_lengths, replay_case
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--overlap", choices=["component", "in-situ", "none"], default="component",
                    help="sequence.new_shape_gpu_overlap_fraction: convert's (from the new-shape component, where "
                         "measured), the case's own (replayed steps: a diagnostic), or none")
    ap.add_argument("--replacement", action="store_true",
                    help="draw the lengths independently (sequence.replacement: true) instead of dealing the dataset "
                         "without replacement as the harness's sampler does")
    ap.add_argument("--new-shape-cost", choices=["call", "case"], default="call",
                    help="convert's --new-shape-cost: the call's components pooled (the table's) or the case's own "
                         "component (default %(default)s)")
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)
    a = ap.parse_args()
    convert.exit_without_pipeplan("new_shape_diagnostic", a.pipeplan)
    cases_path = stored_json_path(os.path.join(a.results, "cases.json"))
    profile = os.path.join(a.results, "profile.json")
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([sys.executable, os.path.join(HERE, "convert.py"), "--cases", cases_path, "--profile", profile,
                            "--pipeplan", a.pipeplan, "--transport", "measured", "--seeds", "1", "--out-dir", out,
                            "--new-shape-cost", a.new_shape_cost],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print(p.stderr[-2000:], file=sys.stderr)
            return 1
        doc = read_json(cases_path)
        # the call's own lines and the shapes its process ran before each case, where the lines are known
        # (token_lengths.json: new_shape_replay.py), else a same-law dataset and no warm shapes
        try:
            lines = read_lengths(a.results, doc)
        except ValueError as e:
            print(f"new_shape_diagnostic: {e}", file=sys.stderr)
            return 2
        seen: set = set()
        print(f"{'case':58s} {'new share':>15s} {'cost ms':>15s} {'samples/s':>13s} {'p90 step ms':>15s}")
        print(f"{'':58s} {'meas    sim':>15s} {'(source)':>15s} {'meas   sim':>13s} {'meas    sim':>15s}")
        for case in doc.get("cases") or []:
            k, comp, m = case.get("knobs") or {}, case.get("components") or {}, case.get("measured") or {}
            if not str(k.get("step", "")).startswith("seq:") or case.get("status") != "ok":
                continue
            share, insitu_s = split_new_shapes(launch_spans_s(case))
            replayed = replay_case(case, lines, seen)
            warm = replayed["warm_before"] if replayed else None
            stem = os.path.join(out, "scenarios", case["id"].replace(":", "_"))
            if not os.path.exists(stem + ".json"):
                continue
            with open(stem + ".json") as f:
                scen = json.load(f)
            seq = scen.get("sequence") or {}
            if "new_shape_host_s" in seq:
                pooled = a.new_shape_cost == "call" and not comp.get("max_tokens")   # a padded kind keeps its own
                cost_src = ("the call's components" if pooled else "component") + (
                    f"; in situ {insitu_s * 1e3:.1f}" if insitu_s is not None else "")
            elif insitu_s is not None:
                seq["new_shape_host_s"], cost_src = round(insitu_s, 6), "in situ"
            else:
                cost_src = "none"
            tokens = comp.get("tokens_per_sample") or {}
            if lines and "tokens_per_sample_histogram" not in seq:
                seq.pop("tokens_per_sample", None)
                counts: Dict[int, int] = {}
                for x in lines:
                    counts[x] = counts.get(x, 0) + 1
                seq["tokens_per_sample_histogram"] = [[x, counts[x]] for x in sorted(counts)]
                cost_src += ", the call's lines"
            if a.overlap == "none":
                seq.pop("new_shape_gpu_overlap_fraction", None)
            elif a.overlap == "in-situ" and replayed:
                f = insitu_overlap_fraction(case, replayed)
                if f is not None:
                    seq["new_shape_gpu_overlap_fraction"] = round(f, 4)
                    cost_src += f", overlap {f:.2f} in situ"
            if warm is not None and "shapes_run_before" not in seq:
                seq["shapes_run_before"] = [list(x) for x in warm]
                cost_src += ", replayed warm shapes"
            if "tokens_per_sample_histogram" not in seq and tokens.get("mean"):
                seq.pop("tokens_per_sample", None)
                seq["tokens_per_sample_histogram"] = same_law_histogram(tokens)
                cost_src += ", same-law lengths"
            if "tokens_per_sample_histogram" in seq:
                seq["replacement"] = bool(a.replacement)
            scen["training"]["steps"] = int(m["skip"]) + int(m["n_measured"])
            with open(stem + ".nsd.json", "w") as f:
                json.dump(scen, f)
            sims = []
            for seed in range(1, a.seeds + 1):
                r = subprocess.run([a.pipeplan, "simulate", stem + ".nsd.json", "--profile", stem + ".profile.json",
                                    "--seed", str(seed), "--format", "json"], capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{case['id'][:58]}: simulate failed: {r.stderr.strip()[:200]}")
                    break
                sims.append(json.loads(r.stdout))
            if not sims:
                continue
            sim_share = statistics.mean((s.get("sequence") or {}).get("new_shapes_per_step", 0.0) for s in sims)
            sim_thr = statistics.mean(s["throughput"]["samples_per_s"] for s in sims)
            sim_p90 = statistics.mean(s["step_time_s"]["p90"] for s in sims)
            cost = seq.get("new_shape_host_s")
            print(f"{case['id'][:58]:58s} {share:6.2f} {sim_share:7.2f}  "
                  f"{(cost or 0) * 1e3:6.1f} ({cost_src}) {m['throughput_samples_per_s']:6.0f} {sim_thr:6.0f} "
                  f"{m['step_time_s']['p90'] * 1e3:7.1f} {sim_p90 * 1e3:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
