#!/usr/bin/env python3
"""Diagnostic: how much of a prediction's miss is the machine moving between the probe before a case and
the probe after it. convert.py predicts each case from the mean of its two probes (`probe_bracket`); this
predicts it again from each probe alone, everything else as convert does (transport drift, wander, duty
curve), and asks whether the measurement falls between the two. A high share inside with a wide interval
says the inputs moved during the case and the model between them holds; a measurement outside both says the
model (or something neither probe saw) is off. Usage:

    python3 calibrate/validation/bracket_diagnostic.py RESULTS_DIR [RESULTS_DIR ...] [--pipeplan build/cli/pipeplan]

Each RESULTS_DIR holds cases.json and profile.json from one device call (harness since run 10: probes before
and after each case).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402


def one_probe_case(case: Dict[str, Any], which: str) -> Dict[str, Any]:
    """The case as if only one of its probes had been taken: "before" keeps `probe`, "after" puts
    `probe_after` in its place; either way no bracket is left for convert to average. An unpinned case's own
    copy-and-release windows (unpinned_window and unpinned_window_after, harness since run 23's plan) go the same
    way."""
    c = json.loads(json.dumps(case))
    comp = c["components"]
    for first, second in (("probe", "probe_after"), ("unpinned_window", "unpinned_window_after")):
        if which == "after" and second in comp:
            comp[first] = comp[second]
        comp.pop(second, None)
    return c


def bracketed(case: Dict[str, Any]) -> bool:
    comp = case.get("components") or {}
    keys = ("getitem_wall_s", "collate_wall_s")
    before, after = comp.get("probe") or {}, comp.get("probe_after") or {}
    return all(before.get(k) for k in keys) and all(after.get(k) for k in keys) \
        and before.get("workers") == after.get("workers")


def inside(x: float, lo: float, hi: float) -> bool:
    return min(lo, hi) <= x <= max(lo, hi)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dirs", nargs="+")
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)
    ap.add_argument("--seeds", type=int, default=8, help="seeds 1..N averaged, as convert.py (default %(default)s)")
    a = ap.parse_args()
    convert.exit_without_pipeplan("bracket_diagnostic", a.pipeplan)
    jobs = []
    calls = convert.load_calls(a.results_dirs)
    duty_taus = convert.loaded_duty_time_constants(calls)   # as the table: per GPU kind of the calls given
    for d, doc, profile, cpu_curve in calls:
        for c in doc.get("cases") or []:
            if c.get("status") == "ok" and bracketed(c):
                jobs.append((os.path.basename(os.path.normpath(d)), c, doc, profile, cpu_curve))
    if not jobs:
        print("bracket_diagnostic: no case with probes before and after it", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        def predict(job, which: str) -> Optional[Tuple[float, float]]:
            tag, c, doc, profile, cpu_curve = job
            v = c if which == "both" else one_probe_case(c, which)
            scen, prof = convert.table_case_inputs(v, doc, profile, cpu_curve, duty_taus.get(convert.call_gpu(doc)))
            stem = os.path.join(tmp, f"{tag}-{c['id']}-{which}")
            json.dump(scen, open(stem + ".json", "w"))
            json.dump(prof if prof is not None else profile, open(stem + ".profile.json", "w"))
            out = convert.simulate_replicated(a.pipeplan, stem + ".json", stem + ".profile.json", 300, max(1, a.seeds))
            if "error" in out:
                print(f"{c['id']} ({which}): pipeplan failed: {out['error']}", file=sys.stderr)
                return None
            r = out["result"]
            return r["throughput"]["samples_per_s"], r["step_time_s"]["p90"]

        with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
            preds = list(pool.map(lambda jw: predict(*jw), [(j, w) for j in jobs for w in ("both", "before", "after")]))

    thr_in = p90_in = n = 0
    widths, errs_both = [], []
    for i, (tag, c, *_rest) in enumerate(jobs):
        both, before, after = preds[3 * i: 3 * i + 3]
        if None in (both, before, after):
            continue
        n += 1
        m_thr = c["measured"]["throughput_samples_per_s"]
        m_p90 = c["measured"]["step_time_s"]["p90"]
        t_in = inside(m_thr, before[0], after[0])
        s_in = inside(m_p90, before[1], after[1])
        thr_in += t_in
        p90_in += s_in
        widths.append(abs(before[0] - after[0]) / m_thr)
        errs_both.append(abs(both[0] - m_thr) / m_thr)
        print(f"{tag.split('-')[-1]:8s} {c['id'][:52]:52s} {m_thr:7.0f}  before {before[0]:7.0f} after {after[0]:7.0f} "
              f"both {both[0]:7.0f} {'in ' if t_in else 'out'}   p90 {1e3 * m_p90:6.1f}  "
              f"{1e3 * before[1]:6.1f} {1e3 * after[1]:6.1f} {'in' if s_in else 'out'}")
    if n:
        print(f"{n} bracketed cases: throughput inside the two probes' predictions in {thr_in} ({100 * thr_in / n:.0f}%), "
              f"their gap median {100 * statistics.median(widths):.1f}% of the measured (p90 "
              f"{100 * convert.percentile(widths, 0.9):.1f}%); p90 step inside in {p90_in} ({100 * p90_in / n:.0f}%); "
              f"the bracket's mean as convert predicts: median |err| {100 * statistics.median(errs_both):.1f}% "
              "(a diagnostic, not a prediction)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
