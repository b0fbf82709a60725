#!/usr/bin/env python3
"""score_call: one device call's results scored as the generated table scores them, in one screen.

    python3 calibrate/validation/score_call.py calibrate/validation/results/2026-12-01-h200-run28gil \
        [--pipeplan build/cli/pipeplan] [--out-dir DIR] [-- extra convert.py options]

Runs convert.py on the call's cases.json (or .gz) and profile.json with the table's options (`--transport measured`,
the rest convert's defaults; 8 seeds a case) into --out-dir (default /tmp/pipeplan-score-<folder>), then prints:
  - per case: measured and predicted samples/s and the error, the p90 step measured, predicted and its error, how
    far apart the p90 steps of the window's two halves are (how precisely the case measures its own p90), and the
    memory map's wait the scenario carries where it has one;
  - the call's figures against the targets (median and p90 abs throughput error, p90 step error, min tau,
    bottleneck agreement);
  - each worker-, pin-, copy- or unpinned-loop-bound case's cost in the case over its probes' mean and its error
    less that move (cost_move_diagnostic.py: validation run 75, finding 3);
  - the memory map's stall rate: each pinned case's own (its timeline's line of host time against overlap with the
    pin thread's pin_memory()) beside the call's pin-parts probe (validation run 28, finding 1).
What a session did by hand for each call of runs 26-28. Not a diagnostic of its own: every figure is convert's.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from convert import REPO_PIPEPLAN, _pct, exit_without_pipeplan, read_json, stored_json_path  # noqa: E402  (the table's own percent format; .json, .gz or .xz)
from cost_move_diagnostic import cost_move  # noqa: E402  (the bottleneck's cost in the case over its probes)


def case_lines(report: Dict[str, Any], wait_s: Dict[str, float]) -> List[str]:
    """One line per case of a convert report (pure): id, measured / predicted samples/s, error, p90 step measured /
    predicted (ms) and its error, the window's halves' p90 difference, and the scenario's memory-map wait (ms) where
    `wait_s` (case id -> training.memory_map_wait_s) has one."""
    out = []
    for r in report.get("rows") or []:
        m, p = r["measured"], r.get("pipeplan") or {}
        if p.get("samples_per_s") is None:
            out.append(f"{r['id'][:60]:60s} {m['samples_per_s']:7.0f}  no prediction")
            continue
        halves = m.get("p90_step_halves_diff")
        line = (f"{r['id'][:60]:60s} {m['samples_per_s']:7.0f} {p['samples_per_s']:7.0f} {_pct(p.get('err')):>7s}"
                f"  p90 step {m['step_p90_s'] * 1e3:6.1f} {p['step_p90_s'] * 1e3:6.1f} ms "
                f"{_pct(p.get('step_p90_err')):>7s}  halves {_pct(halves, False):>6s}")
        if r["id"] in wait_s:
            line += f"  memory-map wait {wait_s[r['id']] * 1e3:.3f} ms"
        out.append(line)
    return out


def summary_line(report: Dict[str, Any]) -> str:
    """The call's figures against the targets (pure)."""
    s = (report.get("summary") or {}).get("pipeplan") or {}
    tau = s.get("min_family_tau")
    bn = s.get("bottleneck_agreement")
    return (f"{s.get('n', 0)} cases: median / p90 abs throughput error {_pct(s.get('median_abs_throughput_err'), False)}"
            f" / {_pct(s.get('p90_abs_throughput_err'), False)} (targets 5% / 12%); p90 step error "
            f"{_pct(s.get('p90_abs_step_p90_err'), False)} at p90, {_pct(s.get('median_abs_step_p90_err'), False)} "
            f"median (15%); min tau {'n/a' if tau is None else f'{tau:+.2f}'} (0.9); bottleneck "
            f"{'n/a' if bn is None else f'{bn * 100:.1f}%'} (90%)")


def memory_map_lines(report: Dict[str, Any]) -> List[str]:
    """The pinned cases whose timeline gives the loop's loss per second of the pin thread's pin_memory() (measured
    .pin_stall_rate) beside the call's probe reading (components.pin_parts_stall_rate; None: the probe read no
    rate) (pure)."""
    out = []
    for r in report.get("rows") or []:
        case = (r.get("measured") or {}).get("pin_stall_rate")
        if case is None:
            continue
        probe = (r.get("components") or {}).get("pin_parts_stall_rate")
        out.append(f"{r['id'][:60]:60s} case {case:.2f}  probe " + ("n/a" if probe is None else f"{probe:.2f}"))
    return out


def cost_move_lines(report: Dict[str, Any], cases_doc: Dict[str, Any]) -> List[str]:
    """Each worker-, pin-, copy- or unpinned-loop-bound case's cost in the case over its probes' mean
    (cost_move_diagnostic.cost_move) and its throughput error less (ratio - 1); [] where no case has both readings
    (pure)."""
    by_id = {c.get("id"): c for c in (cases_doc or {}).get("cases") or []}
    out = []
    for r in report.get("rows") or []:
        err = (r.get("pipeplan") or {}).get("err")
        case = by_id.get(r["id"])
        got = cost_move(case, r) if case is not None and err is not None else None
        if got:
            group, ratio = got
            out.append(f"{r['id'][:60]:60s} {group:13s} {ratio:.3f}x  error {_pct(err)}, less the move "
                       f"{_pct(err - (ratio - 1.0))}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", help="a device call's result folder (cases.json or cases.json.gz, profile.json)")
    ap.add_argument("--pipeplan", default=REPO_PIPEPLAN)
    ap.add_argument("--out-dir", default=None, help="convert's output (default /tmp/pipeplan-score-<folder>)")
    argv = list(sys.argv[1:] if argv is None else argv)
    # everything after the first "--" goes to convert untouched (argparse alone would not take "--" after an option)
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.convert_args = argv[cut + 1:]
    R = a.results_dir.rstrip("/")
    cases = stored_json_path(os.path.join(R, "cases.json"))
    profile = os.path.join(R, "profile.json")
    if cases is None or stored_json_path(profile) is None:
        print(f"score_call: {R}: expected cases.json (or cases.json.gz / .xz) and profile.json (or .xz) in it", file=sys.stderr)
        return 2
    exit_without_pipeplan("score_call", a.pipeplan)
    out = a.out_dir or os.path.join("/tmp", "pipeplan-score-" + os.path.basename(R))
    cmd = [sys.executable, os.path.join(HERE, "convert.py"), "--cases", cases, "--profile", profile,
           "--pipeplan", a.pipeplan, "--transport", "measured", "--out-dir", out] + list(a.convert_args)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        return p.returncode
    report = json.load(open(os.path.join(out, "report.json")))
    wait_s: Dict[str, float] = {}
    for r in report.get("rows") or []:             # the scenario convert wrote for the case
        path = os.path.join(out, "scenarios", r["id"].replace(":", "_") + ".json")
        if os.path.isfile(path):
            w = (json.load(open(path)).get("training") or {}).get("memory_map_wait_s")
            if w:
                wait_s[r["id"]] = float(w)
    print(f"{R} (convert: {' '.join(cmd[2:])})")
    print(f"{'case':60s} {'meas':>7s} {'pred':>7s} {'err':>7s}")
    print("\n".join(case_lines(report, wait_s)))
    print(summary_line(report))
    mm = memory_map_lines(report)
    if mm:
        print("the memory map's stall rate (the loop's loss per second of pin_memory() inside its steps):")
        print("\n".join(mm))
    moved = cost_move_lines(report, read_json(cases))
    if moved:
        print("the bottleneck's cost in the case over its probes' mean (cost_move_diagnostic.py: the error less that "
              "move is what the model leaves; a diagnostic, the in-situ reading is the case's own):")
        print("\n".join(moved))
    seq = new_shape_lines(R)
    if seq:
        print("new batch shapes, replayed (new_shape_replay.py): each step's shape new or run before, against its "
              "launch slow or fast:")
        print("\n".join(seq))
    return 0


def new_shape_lines(results: str) -> List[str]:
    """The sequence cases' replay (new_shape_replay.py) in one line each: steps new and launches slow, and the steps
    where they disagree; [] for a call without sequence cases or without what the replay needs."""
    from new_shape_replay import read_lengths, replay_case
    doc = read_json(stored_json_path(os.path.join(results, "cases.json")))
    cases = [c for c in doc.get("cases") or [] if str((c.get("knobs") or {}).get("step", "")).startswith("seq:")
             and c.get("status") == "ok"]
    if not cases:
        return []
    try:
        lengths = read_lengths(results, doc)
    except ValueError as e:
        return [f"  {e}"]
    seen: set = set()
    out = []
    for case in cases:
        r = replay_case(case, lengths, seen)
        if r is None:
            out.append(f"  {case['id'][:58]:58s} no recorded shapes and no token_lengths.json")
        elif "both" in r:
            out.append(f"  {case['id'][:58]:58s} new {r['new_share']:.2f} slow {r['slow_share']:.2f}: "
                       f"{r['slow_seen']} slow but seen, {r['fast_new']} fast but new of {r['window']}")
        else:
            out.append(f"  {case['id'][:58]:58s} new {r['new_share']:.2f}, launches all alike")
    return out


if __name__ == "__main__":
    sys.exit(main())
