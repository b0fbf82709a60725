#!/usr/bin/env python3
"""cold_cases: the table's cold-storage cases alone, scored as the table scores them, in a few minutes.

    python3 calibrate/validation/cold_cases.py [--calls table_calls.txt] [--pipeplan build/cli/pipeplan] \
        [-- extra convert.py options, e.g. --device-share follows-readers]

Picks every case with knobs.storage == "cold" from the calls listed (default: table_calls.txt, the table's own
list), writes them with their call's profile to a scratch folder, runs convert.py over them with the table's options
(`--transport measured`, convert's defaults otherwise, plus whatever follows `--`), and prints each case's signed
throughput and p90-step errors, then per dataset kind: the count, the median signed error, the median and p90 of the
absolute error. A model change that touches only cold reads (the storage model) is scored here before the whole
table (17 minutes) is run. Every figure is convert's; nothing is fitted here. Since the forty-seventh session each case
also shows its wait a file as its workers timed it (in-situ getitem wall less CPU) beside the simulated one (the
report's storage.wait_s_per_file_mean, the seeds' mean in convert's row), and each kind the median ratio of the two.
Since the forty-eighth session it shows the workers' __getitem__ calls in flight during one, as the harness counted
them and as the simulator does (storage.getitem_in_flight_mean: a batch's reads and loads), like for like, and the
simulated reads in flight during a read beside them (the device's share; the harness cannot see its reads alone),
and the case's load_cold component as a wait a file alone, with the whole cache dropped (what convert takes as the
per-file latency) and with the pages alone dropped (harness since the forty-eighth session; n/a before), and the
workers' wait a file in the harness's probe right after the case (cache dropped again, no pin thread, no GPU; same
session): beside the in-situ wait it says whether the GPU side's traffic costs the reads anything.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import convert  # noqa: E402


def cold_only(cases_doc: Dict[str, Any]) -> Dict[str, Any]:
    """The cases document with only its cold-storage cases (pure; the rest of the document kept: its components
    and machine are what convert reads beside the cases)."""
    out = dict(cases_doc)
    out["cases"] = [c for c in cases_doc.get("cases", []) if (c.get("knobs") or {}).get("storage") == "cold"]
    return out


def percentile(values: List[float], q: float) -> float:
    """The q-th percentile (0-100), linear between ranks, as the table's summary takes it."""
    v = sorted(values)
    if not v:
        return float("nan")
    pos = (len(v) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summary_by_kind(rows: List[Dict[str, Any]]) -> Dict[str, Dict[str, float]]:
    """Per dataset kind: n, the median signed throughput error, the median and p90 |error| (fractions)."""
    by: Dict[str, List[float]] = {}
    for r in rows:
        err = (r.get("pipeplan") or {}).get("err")
        if err is None:
            continue
        by.setdefault(r["knobs"]["kind"], []).append(float(err))
    return {k: {"n": len(e), "median_signed": statistics.median(e),
                "median_abs": statistics.median(abs(x) for x in e), "p90_abs": percentile([abs(x) for x in e], 90)}
            for k, e in sorted(by.items())}


def measured_wait_s_per_file(row: Dict[str, Any]) -> float | None:
    """A cold case's wait a file as its workers timed it: the in-situ getitem's wall less its CPU (the read's wait;
    a getitem reads one file), from convert's row. None where the harness did not time both."""
    m = row.get("measured") or {}
    if not m.get("load_in_situ_s"):
        return None
    return convert.wall_less_cpu_s(m["load_in_situ_s"], m.get("load_in_situ_cpu_s"))


def measured_in_flight(row: Dict[str, Any]) -> str:
    """A cold case's getitem calls in flight during a call as the harness counted them (convert's row
    measured.getitem_in_flight_mean, since the forty-seventh session), or n/a."""
    v = (row.get("measured") or {}).get("getitem_in_flight_mean")
    return "n/a" if v is None else f"{float(v):.2f}"


def fmt_ms(s) -> str:
    """Seconds as milliseconds to two places, or n/a."""
    return "n/a" if s is None else f"{float(s) * 1e3:.2f}"


def wait_ratio_by_kind(waits: List[tuple]) -> Dict[str, tuple]:
    """Per dataset kind: how many cases and the median of simulated / in-situ wait a file, over (kind, in-situ s,
    simulated s) where both are known and the in-situ wait is above 0."""
    by: Dict[str, List[float]] = {}
    for kind, measured, simulated in waits:
        if measured and simulated is not None:
            by.setdefault(kind, []).append(float(simulated) / float(measured))
    return {k: (len(v), statistics.median(v)) for k, v in sorted(by.items())}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: List[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", default=os.path.join(HERE, "table_calls.txt"))
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)
    ap.add_argument("--out-dir", default=None, help="where convert writes (default: a scratch folder, removed)")
    args = ap.parse_args(argv)
    convert.exit_without_pipeplan("cold_cases.py", args.pipeplan)
    try:
        folders = convert.table_call_dirs(args.calls)
    except OSError as e:
        print(f"cold_cases.py: {args.calls}: {e.strerror}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pipeplan-cold-") as tmp:
        convert_args: List[str] = []
        for folder in folders:
            call = os.path.basename(folder)
            try:
                doc = convert.read_json(os.path.join(folder, "cases.json"))  # or its .gz
            except (OSError, ValueError) as e:
                print(f"cold_cases.py: {folder}: {e}", file=sys.stderr)
                return 2
            cold = cold_only(doc)
            if not cold["cases"]:
                continue
            os.makedirs(os.path.join(tmp, call))
            with open(os.path.join(tmp, call, "cases.json"), "w") as f:
                json.dump(cold, f)
            convert_args += ["--cases", os.path.join(tmp, call, "cases.json"),
                             "--profile", os.path.join(folder, "profile.json")]
        if not convert_args:
            print("cold_cases.py: no cold case in the calls listed", file=sys.stderr)
            return 2
        out_dir = args.out_dir or os.path.join(tmp, "report")
        cmd = [sys.executable, os.path.join(HERE, "convert.py"), *convert_args, "--pipeplan", args.pipeplan,
               "--transport", "measured", "--out-dir", out_dir, *extra]
        run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if run.returncode != 0:
            tail = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["(no output)"]
            print(f"cold_cases.py: convert.py exit {run.returncode}: {tail[0]}", file=sys.stderr)
            return 2
        report = convert.read_json(os.path.join(out_dir, "report.json"))
        rows = report.get("rows") or []
    print(f"{'case':72s} {'meas/s':>7s} {'err':>7s}          {'p90 step':>7s}   wait a file ms: in situ / sim"
          f"   getitem calls in flight: in situ / sim   sim reads in flight"
          f"   alone, wait ms: all cold / pages only   no GPU after, wait ms")
    waits = []
    for r in rows:
        p = r.get("pipeplan") or {}
        err, p90 = p.get("err"), p.get("step_p90_err")
        wait, sim_wait = measured_wait_s_per_file(r), p.get("wait_s_per_file")
        sim_getitems, sim_reads = p.get("getitem_in_flight_mean"), p.get("readers_in_flight_mean")
        waits.append((r["knobs"]["kind"], wait, sim_wait))
        print(f"{r['id'][:72]:72s} {r['measured']['samples_per_s']:7.0f} "
              f"{'' if err is None else f'{err * 100:+6.1f}%'} p90 step "
              f"{'' if p90 is None else f'{p90 * 100:+6.1f}%'}   "
              f"{'n/a' if wait is None else f'{wait * 1e3:5.2f}'} / "
              f"{'n/a' if sim_wait is None else f'{sim_wait * 1e3:5.2f}'}"
              f"   {measured_in_flight(r)} / {'n/a' if sim_getitems is None else f'{sim_getitems:4.2f}'}"
              f"   {'n/a' if sim_reads is None else f'{sim_reads:4.2f}'}"
              f"   {fmt_ms(r['measured'].get('load_cold_wait_s'))} / {fmt_ms(r['measured'].get('load_cold_pages_only_wait_s'))}"
              f"   {fmt_ms(r['measured'].get('no_gpu_cold_wait_s'))}")
    for kind, s in summary_by_kind(rows).items():
        print(f"{kind:12s} n={s['n']:3d}  signed median {s['median_signed'] * 100:+5.1f}%  |err| median "
              f"{s['median_abs'] * 100:4.1f}%  p90 {s['p90_abs'] * 100:4.1f}%")
    for kind, (n, ratio) in wait_ratio_by_kind(waits).items():
        print(f"{kind:12s} n={n:3d}  wait a file, simulated / in situ: median {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
