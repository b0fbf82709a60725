#!/usr/bin/env python3
"""`pipeplan recommend` against the worker sweeps measured on the GPU (no GPU needed here).

    python3 calibrate/validation/recommend_check.py [--report calibrate/validation/results/table-report]
        [--pipeplan build/cli/pipeplan] [--starts 2,4] [--profile-from case|call] [--md FILE]

For every call's num_workers family in the generated table's report (`bash calibrate/validation/table.sh` writes it,
with each case's scenario and profile under scenarios/), it starts `pipeplan recommend` from the cases below the
knee (num_workers in --starts), as a user whose job runs there would, and reads the worker count it recommends
against what the same call measured at each count:
  - measured at the recommendation over the best measured in the family (the measured rates interpolated linearly
    between the counts measured: a lower bound where the count falls between a worker-bound point and the GPU's
    plateau, since the rate against workers is concave there, min(workers x a worker's rate, the GPU's); beyond the
    largest count, the largest count's rate: flagged);
  - the measured knee: the fewest measured workers within KNEE_WITHIN of the best (the repeats spread a few
    percent, so a closer knee would be noise).
A recommendation is honest when it reaches the plateau (near 1.0) without asking for many more workers than the knee.
Changes other than num_workers are listed; the sweeps measured nothing to check them against.

Then the pin_memory families (a pinned and an unpinned case, same call, each maybe repeated): from each unpinned
first case, does recommend turn pin_memory on, and did the call measure the pinned setting faster (the means of
the repeats; within PIN_TIE of each other counts as a tie, where either answer is right)?

Then the other knobs' families (prefetch_factor, persistent_workers, in_order, the copy's non_blocking and stream):
from each setting a family measured, recommend with `--knobs` limited to the family's knobs (the family measured
nothing else), and the setting it lands on against the family's measured settings (knob_verdict), with the call's
own repeat spread (the largest, as the table's tau within noise; at least PIN_TIE) as what the ground truth can
tell apart.

Last, recommend's steadier-steps round (since the fiftieth session): from each in-order case of a family that also
measured in_order=False (in_order, in_order_image, slow_worker_remedy), recommend with `--knobs loader.in_order`, and
whether it names in_order=False (for the rate or as the steadier change) against what the call measured: a p90 step
cut by at least STEP_CUT at a rate not clearly lower (steadier_verdict).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402

KNEE_WITHIN = 0.03   # the measured knee: the fewest workers within 3% of the family's best measured rate
PIN_TIE = 0.05       # pinned and unpinned closer than this (a setting's repeats spread 5.5% cv): a tie


def measured_by_workers(rows: Sequence[Dict]) -> Dict[int, float]:
    """The family's measured throughput per worker count, the mean of its repeats."""
    by: Dict[int, List[float]] = {}
    for r in rows:
        by.setdefault(int(r["knobs"]["num_workers"]), []).append(float(r["measured"]["samples_per_s"]))
    return {w: statistics.fmean(v) for w, v in sorted(by.items())}


def family_settings(fam: Dict, rows: Dict[str, Dict]) -> List[Dict]:
    """Each setting a family measured: its first case, its measured rate the mean over the setting's repeats. A
    family lists only each setting's first case (its repeats sit in later rows); the table's `measured_means`
    average them. A report without those (a hand-made one) gives each case's own rate."""
    means = fam.get("measured_means")
    if not means or len(means) != len(fam["cases"]):
        return [rows[c] for c in fam["cases"] if c in rows]
    return [dict(rows[c], measured=dict(rows[c]["measured"], samples_per_s=float(m)))
            for c, m in zip(fam["cases"], means) if c in rows]


def rate_at(curve: Dict[int, float], workers: int) -> Tuple[float, bool]:
    """The measured rate at `workers`, linear between the measured counts; beyond the largest, the largest's
    (True: extrapolated). Below the smallest, the smallest's (True)."""
    ws = sorted(curve)
    if workers in curve:
        return curve[workers], False
    if workers > ws[-1]:
        return curve[ws[-1]], True
    if workers < ws[0]:
        return curve[ws[0]], True
    hi = next(w for w in ws if w > workers)
    lo = max(w for w in ws if w < workers)
    f = (workers - lo) / (hi - lo)
    return curve[lo] + f * (curve[hi] - curve[lo]), False


def knee(curve: Dict[int, float], within: float = KNEE_WITHIN) -> int:
    """The fewest measured workers whose rate is within `within` of the best."""
    best = max(curve.values())
    return min(w for w, v in curve.items() if v >= (1.0 - within) * best)


def pin_verdict(measured_gain: float, recommends_pin: bool, tie: float = PIN_TIE) -> str:
    """"right", "wrong" or "tie" (either answer right) for recommend's pin_memory answer against the measured gain
    of pinning (pinned mean over unpinned mean, less 1)."""
    if abs(measured_gain) < tie:
        return "tie"
    return "right" if recommends_pin == (measured_gain > 0) else "wrong"


# A family's suffix -> the scenario keys it varies and the report's knob name of each (a missing in_order is
# PyTorch's default, True).
KNOB_FAMILIES = {
    "prefetch_factor": (("loader.prefetch_factor", "prefetch_factor"),),
    "persistent_workers": (("loader.persistent_workers", "persistent_workers"),),
    "in_order": (("loader.in_order", "in_order"),),
    "in_order_image": (("loader.in_order", "in_order"),),
    "non_blocking_stream": (("transfer.non_blocking", "non_blocking"), ("transfer.copy_stream", "copy_stream")),
}


def knob_text(value) -> str:
    """A knob's value as recommend's JSON writes it ("true", "4", "side")."""
    return str(value).lower()


def setting_of(knobs: Dict, keys: Sequence[Tuple[str, str]]) -> Tuple[str, ...]:
    """A case's setting of a family's knobs, as recommend writes them."""
    return tuple(knob_text(knobs.get(name, True if name == "in_order" else None)) for _, name in keys)


def knob_verdict(means: Dict[Tuple[str, ...], float], recommended: Tuple[str, ...], tie: float = PIN_TIE) -> str:
    """recommend's setting against a family's measured means per setting: "unmeasured" (the family did not measure
    it), "tie" (every measured setting within `tie` of the best: any answer is right), "right" (it measured within
    `tie` of the best) or "wrong"."""
    if recommended not in means:
        return "unmeasured"
    best = max(means.values())
    if min(means.values()) >= (1.0 - tie) * best:
        return "tie"
    return "right" if means[recommended] >= (1.0 - tie) * best else "wrong"


# The p90 step cut recommend's steadier round asks for (cli/recommend_command.cpp kMinStepCut).
STEP_CUT = 0.25


def steadier_verdict(p90_change: float, rate_change: float, names_unordered: bool, tie: float = PIN_TIE) -> str:
    """Whether recommend was right to name in_order=False or not, from the measured changes in_order=False made to
    the p90 step time and to the rate (relative): worth naming where it cut the p90 step by STEP_CUT or more at a
    rate not lower by more than `tie`, or raised the rate by more than `tie`. 'right', 'missed' (worth naming, not
    named) or 'false alarm' (named, not worth it)."""
    worth = (p90_change <= -STEP_CUT and rate_change > -tie) or rate_change > tie
    if worth == names_unordered:
        return "right"
    return "missed" if worth else "false alarm"


def recommend(binary: str, scenario: str, profile: Optional[str], knobs: Sequence[str] = ()) -> Dict:
    cmd = [binary, "recommend", scenario, "--format", "json"]
    if profile:
        cmd += ["--profile", profile]
    if knobs:
        cmd += ["--knobs", ",".join(knobs)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    return json.loads(p.stdout)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", default="calibrate/validation/results/table-report")
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)
    ap.add_argument("--starts", default="2,4", help="the worker counts recommend starts from (default %(default)s)")
    ap.add_argument("--md", help="also write the table as markdown to this file")
    ap.add_argument("--profile-from", choices=["case", "call"], default="case",
                    help="case: each case's profile as the table built it (the transport scaled by the probes around "
                         "that case); call: the call's calibrated profile.json as it is, what a user's own "
                         "`pipeplan calibrate` gives (default %(default)s)")
    a = ap.parse_args(argv)
    convert.exit_without_pipeplan("recommend_check", a.pipeplan)
    starts = {int(x) for x in a.starts.split(",")}
    report = convert.read_json(os.path.join(a.report, "report.json"))  # or its .gz (table.sh keeps the table's so)
    rows = {r["id"]: r for r in report["rows"] if r.get("pipeplan")}
    scen_dir = os.path.join(a.report, "scenarios")
    call_dirs = {c["tag"]: c["results"] for c in (report.get("meta") or {}).get("calls") or []}
    call_profiles: Dict[str, str] = {}   # --profile-from call: each call's profile as pipeplan reads it

    def recommend_from(row_id: str, knobs: Sequence[str] = ()) -> Dict:
        """recommend on the case's scenario as the table wrote it, with the profile --profile-from names."""
        stem = os.path.join(scen_dir, row_id.replace(":", "_"))
        if a.profile_from == "call":
            tag = row_id.split(":")[0]
            if tag not in call_profiles:      # one plain copy a call (profile.json kept as xz since the 86th session)
                given = os.path.join(call_dirs[tag], "profile.json")
                call_profiles[tag] = convert.plain_json_path(given, convert.read_json(given),
                                                             os.path.join(scen_dir, f"_{tag}.call.profile.json"))
            prof = call_profiles[tag]
        else:
            prof = stem + ".profile.json" if os.path.isfile(stem + ".profile.json") else None
        return recommend(a.pipeplan, stem + ".json", prof, knobs)
    lines = ["| call | start | recommended | measured there / best (linear between counts: a lower bound) | measured knee (within 3%) | workers over the knee |",
             "|---|---|---|---|---|---|"]
    fractions, over = [], []
    for name, fam in report["families"].items():
        if not name.endswith(":num_workers"):
            continue
        members = family_settings(fam, rows)
        curve = measured_by_workers(members)
        if len(curve) < 4:
            continue
        best, k = max(curve.values()), knee(curve)
        for r in members:
            w0 = int(r["knobs"]["num_workers"])
            if w0 not in starts or int(r.get("repeat") or 0) != 0:
                continue
            out = recommend_from(r["id"])
            tag = name.split(":")[0]
            if "error" in out:
                lines.append(f"| {tag} | w{w0} | failed: {out['error']} | | | |")
                continue
            rec = out["recommended"]["set"]
            w = int(rec.get("loader.num_workers", w0))
            at, extrapolated = rate_at(curve, w)
            others = ", ".join(f"{key.split('.')[-1]}={v}" for key, v in rec.items() if key != "loader.num_workers")
            fractions.append(at / best)
            over.append(w - k)
            lines.append(f"| {tag} | w{w0} ({curve.get(w0, 0):,.0f}/s) | w{w}" + (f", {others}" if others else "")
                         + f" | {at / best:.3f}" + (" (beyond the sweep)" if extrapolated else "")
                         + f" | w{k} ({best:,.0f}/s best) | {w - k:+d} |")
    if fractions:
        lines.append("")
        lines.append(f"{len(fractions)} starts: measured at the recommendation / best measured: median "
                     f"{statistics.median(fractions):.3f}, min {min(fractions):.3f}; workers over the measured knee: "
                     f"median {statistics.median(over):+.0f}, range {min(over):+d} to {max(over):+d}")
    lines += ["", "| call | family | unpinned start | recommended | pinned measured over unpinned | verdict |",
              "|---|---|---|---|---|---|"]
    verdicts: Dict[str, int] = {}
    for name, fam in report["families"].items():
        if ":pin_memory_" not in name:
            continue
        members = family_settings(fam, rows)
        pinned = [r["measured"]["samples_per_s"] for r in members if r["knobs"]["pin_memory"]]
        unpinned = [r for r in members if not r["knobs"]["pin_memory"]]
        if not pinned or not unpinned:
            continue
        gain = statistics.fmean(pinned) / statistics.fmean(r["measured"]["samples_per_s"] for r in unpinned) - 1.0
        start = min(unpinned, key=lambda r: int(r.get("repeat") or 0))
        out = recommend_from(start["id"])
        tag, family = name.split(":", 1)
        if "error" in out:
            lines.append(f"| {tag} | {family} | | failed: {out['error']} | {gain:+.1%} | |")
            continue
        rec = out["recommended"]["set"]
        pins = str(rec.get("loader.pin_memory", "false")).lower() == "true"
        v = pin_verdict(gain, pins)
        verdicts[v] = verdicts.get(v, 0) + 1
        shown = ", ".join(f"{key.split('.')[-1]}={val}" for key, val in rec.items()) or "no change"
        lines.append(f"| {tag} | {family} | {start['measured']['samples_per_s']:,.0f}/s | {shown} | {gain:+.1%} | {v} |")
    if verdicts:
        lines.append("")
        lines.append(f"pin_memory: {sum(verdicts.values())} unpinned starts: " + ", ".join(
            f"{verdicts.get(v, 0)} {v}" for v in ("right", "tie", "wrong")) + f" (a tie: within {PIN_TIE:.0%})")
    lines += ["", "| call | family | start | measured there | recommended (only the family's knobs) | measured there / best "
              "| verdict |", "|---|---|---|---|---|---|---|"]
    knob_verdicts: Dict[str, int] = {}
    for name, fam in report["families"].items():
        tag, family = name.split(":", 1)
        keys = KNOB_FAMILIES.get(family)
        if not keys:
            continue
        members = family_settings(fam, rows)
        by: Dict[Tuple[str, ...], List[float]] = {}
        for r in members:
            by.setdefault(setting_of(r["knobs"], keys), []).append(float(r["measured"]["samples_per_s"]))
        means = {k: statistics.fmean(v) for k, v in by.items()}
        if len(means) < 2:
            continue
        best = max(means.values())

        def shown(setting: Tuple[str, ...]) -> str:
            return ", ".join(f"{n}={v}" for (_, n), v in zip(keys, setting))
        for r in members:
            if int(r.get("repeat") or 0) != 0:
                continue
            start = setting_of(r["knobs"], keys)
            out = recommend_from(r["id"], [k for k, _ in keys])
            if "error" in out:
                lines.append(f"| {tag} | {family} | {shown(start)} | {means[start]:,.0f}/s | failed: {out['error']} | | |")
                continue
            rec_set = out["recommended"]["set"]
            rec = tuple(knob_text(rec_set.get(k, v)) for (k, _), v in zip(keys, start))
            # the ground truth orders settings only beyond its call's repeat spread (as the table's tau within noise)
            v = knob_verdict(means, rec, max(PIN_TIE, fam.get("ground_truth_noise") or 0.0))
            knob_verdicts[v] = knob_verdicts.get(v, 0) + 1
            there = f"{means[rec] / best:.3f}" if rec in means else "not measured"
            lines.append(f"| {tag} | {family} | {shown(start)} | {means[start]:,.0f}/s | "
                         f"{'no change' if rec == start else shown(rec)} | {there} | {v} |")
    if knob_verdicts:
        lines.append("")
        lines.append(f"other knobs: {sum(knob_verdicts.values())} starts: " + ", ".join(
            f"{knob_verdicts.get(v, 0)} {v}" for v in ("right", "tie", "wrong", "unmeasured"))
            + f" (right: the setting it lands on measured within the call's repeat spread, at least {PIN_TIE:.0%}, of "
              f"the family's best; a tie: every measured setting within it)")
    lines += ["", "| call | family | in order: p90 step, rate | in_order=False measured: p90 step, rate | recommend "
              "(--knobs loader.in_order) | verdict |", "|---|---|---|---|---|---|"]
    steady_verdicts: Dict[str, int] = {}
    mean = lambda rs, key: statistics.fmean(float(r["measured"][key]) for r in rs)  # noqa: E731
    for name, fam in report["families"].items():
        tag, family = name.split(":", 1)
        if family not in ("in_order", "in_order_image", "slow_worker_remedy", "slow_worker_order"):
            continue
        all_members = family_settings(fam, rows)
        # slow_worker_order holds the straggler's GIL in two of its cases and not in the others: pair like with like
        spin_of = lambda r: str(r["knobs"].get("slow_worker_spin", "python"))  # noqa: E731
        for spin in sorted({spin_of(r) for r in all_members}):
            members = [r for r in all_members if spin_of(r) == spin]
            label = family if spin == "python" else f"{family} (spin {spin})"
            base = [r for r in members if r["knobs"].get("in_order", True) is not False
                    and int(r["knobs"].get("prefetch_factor", 2)) == 2]
            unordered = [r for r in members if r["knobs"].get("in_order", True) is False]
            if not base or not unordered:
                continue
            p90_change = mean(unordered, "step_p90_s") / mean(base, "step_p90_s") - 1.0
            rate_change = mean(unordered, "samples_per_s") / mean(base, "samples_per_s") - 1.0
            start = min(base, key=lambda r: int(r.get("repeat") or 0))
            out = recommend_from(start["id"], ["loader.in_order"])
            if "error" in out:
                lines.append(f"| {tag} | {label} | | | failed: {out['error']} | |")
                continue
            by_rate = str(out["recommended"]["set"].get("loader.in_order", "true")).lower() == "false"
            st = out.get("steadier") or {}
            as_steadier = st.get("key") == "loader.in_order" and str(st.get("to")).lower() == "false"
            v = steadier_verdict(p90_change, rate_change, by_rate or as_steadier,
                                 max(PIN_TIE, fam.get("ground_truth_noise") or 0.0))
            steady_verdicts[v] = steady_verdicts.get(v, 0) + 1
            said = ("in_order=False for the rate" if by_rate else
                    f"steadier: in_order=False, p90 step {1e3 * st['step_time_p90_s_before']:.1f} -> "
                    f"{1e3 * st['step_time_p90_s']:.1f} ms" if as_steadier else "nothing")
            lines.append(f"| {tag} | {label} | {1e3 * mean(base, 'step_p90_s'):.1f} ms, {mean(base, 'samples_per_s'):,.0f}/s "
                         f"| {1e3 * mean(unordered, 'step_p90_s'):.1f} ms ({p90_change:+.0%}), {rate_change:+.1%} | {said} | {v} |")
    if steady_verdicts:
        lines.append("")
        lines.append(f"in_order=False (rate or steadier steps): {sum(steady_verdicts.values())} families: " + ", ".join(
            f"{steady_verdicts.get(v, 0)} {v}" for v in ("right", "missed", "false alarm"))
            + f" (worth naming: the p90 step cut {STEP_CUT:.0%} or more at a rate not lower beyond the call's repeat "
              f"spread, or the rate raised beyond it)")
    text = "\n".join(lines)
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
