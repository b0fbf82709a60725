#!/usr/bin/env python3
"""The replay bench for a model of the workers' wander: the batch_size family's p90 step in situ, signed error per
batch size, over the calls that ran it with --timeline.

insitu_diagnostic.py --base table --family batch_size --wander W on each call, in parallel; prints each batch size's
signed median and the spread of the p90 step error, and the throughput's. A wander model is judged by its signed
medians near 0 at every batch size, beside --wander replay (each worker's measured batch times played back, the
bench's reference: validation run 58, finding 1). Run from the repository root:

    python3 calibrate/validation/wander_bench.py --wander replay-phase --seeds 8
"""
import argparse
import concurrent.futures
import os
import random
import re
import statistics
import subprocess
import sys
from typing import Dict, List, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
# the calls whose batch_size family has timelines (validation run 58, finding 1; runs 59 and 60's A2 with 4 s probes)
CALLS = ("run11a", "run12a2", "run13a2", "run14a2", "run16a2", "run44a2", "run46a2", "run47a2", "run49a2",
         "run50a2", "run52a2", "run53a2", "run59a2", "run60a2", "run60a2b")
LINE = re.compile(r"^(\S+)\s+(\d+)\s+(\d+)\s+([+-]?\d+\.\d)%\s+p90 step\s+([\d.]+)\s+([\d.]+) ms\s+([+-]?\d+\.\d)%")
BATCH = re.compile(r"-b(\d+)-")


def call_dir(call: str) -> str:
    hits = [d for d in sorted(os.listdir(os.path.join(HERE, "results"))) if d.endswith("-" + call)]
    if len(hits) != 1:
        raise SystemExit(f"wander_bench: results/*-{call}: {len(hits)} directories, expected one")
    return os.path.join(HERE, "results", hits[0])


def parse(out: str) -> List[Tuple[int, float, float]]:
    """Pure: (batch size, throughput error %, p90 step error %) of each case line insitu_diagnostic printed."""
    rows = []
    for line in out.splitlines():
        m = LINE.match(line)
        b = BATCH.search(line)
        if m and b:
            rows.append((int(b.group(1)), float(m.group(4)), float(m.group(7))))
    return rows


def median_standard_error(values: Sequence[float], resamples: int = 2000, seed: int = 1) -> float:
    """Pure: the bootstrap standard error of the median (seeded): how far apart two variants' medians must be to
    tell them apart on these cases (b128's 11 cases: about 14 points)."""
    rng = random.Random(seed)
    meds = [statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples)]
    return statistics.pstdev(meds)


def summary(rows: Sequence[Tuple[int, float, float]]) -> Dict[int, Tuple[int, float, float, float, float, float]]:
    """Pure: per batch size (cases, signed median throughput error, signed median / p10 / p90 p90-step error, the
    p90-step median's bootstrap standard error)."""
    out = {}
    for b in sorted({r[0] for r in rows}):
        thr = [r[1] for r in rows if r[0] == b]
        step = sorted(r[2] for r in rows if r[0] == b)
        q = lambda p: step[min(len(step) - 1, int(p * len(step)))]  # noqa: E731
        out[b] = (len(step), statistics.median(thr), statistics.median(step), q(0.1), q(0.9),
                  median_standard_error(step))
    return out


def run_one(call: str, wander: str, seeds: int, pipeplan: str) -> str:
    cmd = [sys.executable, os.path.join(HERE, "insitu_diagnostic.py"), call_dir(call), "--base", "table",
           "--family", "batch_size", "--wander", wander, "--seeds", str(seeds), "--pipeplan", pipeplan]
    return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wander", default="replay", help="insitu_diagnostic.py's --wander (default %(default)s)")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--pipeplan", default="build/cli/pipeplan")
    ap.add_argument("--calls", default=",".join(CALLS))
    a = ap.parse_args()
    calls = [c for c in a.calls.split(",") if c]
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        outs = list(pool.map(lambda c: run_one(c, a.wander, a.seeds, a.pipeplan), calls))
    rows = [r for o in outs for r in parse(o)]
    print(f"wander {a.wander}, {a.seeds} seeds, {len(calls)} calls, {len(rows)} cases (signed errors, in situ)")
    print("batch  cases  throughput median  p90 step median (se)  p10 .. p90")
    for b, (n, thr, med, lo, hi, se) in summary(rows).items():
        print(f"b{b:<5d} {n:5d}  {thr:+16.1f}%  {med:+14.1f}% ({se:4.1f})  {lo:+.1f} .. {hi:+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
