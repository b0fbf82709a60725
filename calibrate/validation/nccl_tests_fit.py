#!/usr/bin/env python3
"""Reads nccl-tests' output (all_reduce_perf, all_gather_perf, reduce_scatter_perf) and writes the profile's
collective models: latency_s + bytes x factor / bus_bytes_per_s, fitted on relative residuals to the out-of-place
times, with nccl-tests' own bus factor (all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n; `size` is the
whole buffer, as pipeplan counts a collective's bytes).

A run across nodes (its "#  Rank ... on HOST device ..." lines name two hosts or more) fills the profile's
`nccl.inter_node` section, which a scenario with `cluster.nodes` > 1 needs; a run on one node fills `nccl` itself.

    mpirun -np 16 -N 8 ./build/all_reduce_perf -b 1M -e 4G -f 2 -g 1 > all_reduce.log     # 2 nodes x 8 GPUs
    python3 calibrate/validation/nccl_tests_fit.py all_reduce.log [all_gather.log ...] \\
        --merge-into scenarios/profiles/h200.json --out my-cluster.json

Which collective a log holds: its "# Collective test concluded: all_reduce_perf" line, else its file name
(all_reduce*, all_gather*, reduce_scatter*), else --collective. Bad input: one line on stderr, exit 2.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_convert import fit_affine_relative  # noqa: E402

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")
MIN_POINTS = 3


class InputProblem(Exception):
    """Bad input: the message is the one line the user sees."""


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' bus factor (doc/PERFORMANCE.md): all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n."""
    if ranks <= 1:
        return 0.0
    return (2.0 if collective == "all_reduce" else 1.0) * (ranks - 1) / ranks


def collective_of(text: str, path: str, given: Optional[str]) -> Optional[str]:
    """The collective a log holds: --collective, the log's closing line, or its file name."""
    if given:
        return given
    m = re.search(r"Collective test concluded:\s*(\w+?)(?:_perf\w*)?\s*$", text, re.M)
    name = m.group(1) if m else os.path.basename(path)
    for c in COLLECTIVES:
        if name.startswith(c) or name.replace("-", "_").startswith(c):
            return c
    return None


def parse_log(text: str) -> Dict[str, Any]:
    """Pure: the ranks, the hosts and the out-of-place points of one nccl-tests log. Points: bytes, time_s,
    algbw_bytes_per_s, busbw_bytes_per_s (nccl-tests' own busbw, kept as a record)."""
    hosts: List[str] = []
    ranks = 0
    columns: Optional[List[str]] = None
    points = []
    for line in text.splitlines():
        # "#  Rank  0 Group  0 Pid 1234 on host device  0 ..." (older releases: no Group)
        m = re.match(r"#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device", line)
        if m:
            ranks += 1
            if m.group(1) not in hosts:
                hosts.append(m.group(1))
            continue
        stripped = line.lstrip("#").split()
        if line.startswith("#") and "size" in stripped and "busbw" in stripped:
            columns = stripped  # the header: size count type redop root time algbw busbw #wrong time ...
            continue
        if line.startswith("#") or not stripped or columns is None:
            continue
        if not stripped[0].isdigit():
            continue
        try:
            size = float(stripped[columns.index("size")])
            t = columns.index("time") if "time" in columns else columns.index("cputime")
            time_us = float(stripped[t])
            algbw = float(stripped[columns.index("algbw")])
            busbw = float(stripped[columns.index("busbw")])
        except (ValueError, IndexError):
            continue  # a line cut short, or N/A where a size was skipped
        if size > 0 and time_us > 0:
            points.append({"bytes": size, "time_s": time_us * 1e-6, "algbw_bytes_per_s": algbw * 1e9,
                           "busbw_bytes_per_s": busbw * 1e9})
    return {"ranks": ranks, "hosts": hosts, "points": points}


def fit_collective(collective: str, ranks: int, points: Sequence[Dict[str, float]]) -> Optional[Dict[str, Any]]:
    """Pure: {latency_s, bus_bytes_per_s, rel_rmse, points} for time = latency + bytes x factor / bus, or None."""
    f = bus_factor(collective, ranks)
    if f <= 0 or len(points) < MIN_POINTS:
        return None
    fit = fit_affine_relative([p["bytes"] * f for p in points], [p["time_s"] for p in points])
    if fit is None:
        return None
    a, b, rel = fit
    return {"latency_s": a, "bus_bytes_per_s": 1.0 / b, "rel_rmse": rel, "points": list(points)}


def nccl_section(logs: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Pure: the profile's nccl fragment from parsed logs (each with `collective`, `ranks`, `hosts`, `points`, `path`).
    All logs must come from one layout (same ranks and hosts). Raises InputProblem."""
    ranks = {lg["ranks"] for lg in logs}
    nodes = {len(lg["hosts"]) for lg in logs}
    if len(ranks) != 1 or len(nodes) != 1:
        raise InputProblem("the logs ran on different layouts (ranks " + ", ".join(str(r) for r in sorted(ranks)) +
                           "; nodes " + ", ".join(str(n) for n in sorted(nodes)) + "): expected one job's runs")
    n_ranks, n_nodes = ranks.pop(), nodes.pop()
    models: Dict[str, Any] = {}
    for lg in logs:
        if lg["collective"] in models:
            raise InputProblem(f"{lg['path']}: a second {lg['collective']} log: expected one log per collective")
        fit = fit_collective(lg["collective"], n_ranks, lg["points"])
        if fit is None:
            raise InputProblem(f"{lg['path']}: {len(lg['points'])} usable sizes over {n_ranks} rank(s): expected "
                               f"{MIN_POINTS} or more sizes (-b 1M -e 4G -f 2) on 2 or more ranks, times growing "
                               "with the size")
        models[lg["collective"]] = fit
    source = "nccl-tests: " + ", ".join(os.path.basename(lg["path"]) for lg in logs)
    if n_nodes >= 2:
        return {"inter_node": {"nodes": n_nodes, "gpus": n_ranks, "source": source, **models}}
    return {"measured": True, "gpus": n_ranks, **models}


def merged(base: Dict[str, Any], nccl: Dict[str, Any]) -> Dict[str, Any]:
    """Pure: the base profile with the fitted collectives in its nccl section: an inter_node fit replaces only
    nccl.inter_node, an on-node fit the on-node models (its inter_node kept); a note in its provenance."""
    out = json.loads(json.dumps(base))
    sec = out.get("nccl") if isinstance(out.get("nccl"), dict) else {}
    if "inter_node" in nccl:
        sec["inter_node"] = nccl["inter_node"]
    else:
        kept = {"inter_node": sec["inter_node"]} if "inter_node" in sec else {}
        sec = {**nccl, **kept}
    out["nccl"] = sec
    prov = out.setdefault("provenance", {})
    if isinstance(prov, dict):
        note = "nccl " + ("inter_node " if "inter_node" in nccl else "") + "from nccl_tests_fit.py"
        prov["note"] = (prov["note"] + "; " if prov.get("note") else "") + note
    return out


def read_log(path: str, collective: Optional[str]) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise InputProblem(f"{path}: cannot read ({e.strerror}): expected an nccl-tests output file") from e
    c = collective_of(text, path, collective)
    if c is None:
        raise InputProblem(f"{path}: cannot tell the collective (no 'Collective test concluded' line, a file name "
                           "not starting with all_reduce, all_gather or reduce_scatter): expected --collective")
    parsed = parse_log(text)
    if parsed["ranks"] == 0:
        raise InputProblem(f"{path}: no '#  Rank N Group G Pid P on HOST device D' lines: expected nccl-tests' "
                           "full output (its header names each rank's host)")
    return {**parsed, "collective": c, "path": path}


def write_atomically(obj: Any, path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".nccl_tests_fit.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+", help="nccl-tests output files, one per collective")
    ap.add_argument("--collective", choices=COLLECTIVES, default=None,
                    help="the collective, where one log's closing line and name do not say")
    ap.add_argument("--merge-into", default=None, metavar="PROFILE.json",
                    help="write this profile with the fitted nccl models in it (else only the fragment)")
    ap.add_argument("--out", default=None, help="write here (default: stdout)")
    args = ap.parse_args(argv)
    try:
        logs = [read_log(p, args.collective) for p in args.logs]
        fragment = {"nccl": nccl_section(logs)}
        if args.merge_into:
            try:
                with open(args.merge_into, encoding="utf-8") as f:
                    base = json.load(f)
            except (OSError, ValueError) as e:
                raise InputProblem(f"{args.merge_into}: cannot read it as JSON ({e}): expected a pipeplan profile") from e
            if not isinstance(base, dict):
                raise InputProblem(f"{args.merge_into}: not a JSON object: expected a pipeplan profile")
            out = merged(base, fragment["nccl"])
        else:
            out = fragment
    except InputProblem as e:
        print(f"nccl_tests_fit: {e}", file=sys.stderr)
        return 2
    if args.out:
        write_atomically(out, args.out)
    else:
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
    for name, m in (fragment["nccl"].get("inter_node") or fragment["nccl"]).items():
        if isinstance(m, dict) and "bus_bytes_per_s" in m:
            print(f"nccl_tests_fit: {name}: latency {m['latency_s'] * 1e6:.1f} us, bus {m['bus_bytes_per_s'] / 1e9:.1f} "
                  f"GB/s (rel rmse {m['rel_rmse']:.3f}, {len(m['points'])} sizes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
