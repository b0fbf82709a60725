#!/usr/bin/env python3
"""variant_compare: two convert reports over the same cases, side by side, as the device plan's decisions read them.

    python3 calibrate/validation/variant_compare.py BASE/report.json VARIANT/report.json [--cases]

Each device-plan item that tries a reading (validation.md items 27-30) scores the same calls twice, convert's
default and the variant (`PIPEPLAN_TABLE_CALLS=LIST bash calibrate/validation/table.sh --seeds N [options]`, the
report in /tmp/pipeplan-table-variant/report.json, copied aside between the two), and decides by one rule: the
variant is taken where it is not worse in the median and p90 abs throughput error and in the p90 step's abs error
(validation-runs.md run 84). This prints, with convert's own median and percentile, those figures for both, with the signed median error and the bottleneck
count, then says which of the rule's four figures the variant worsens; --cases adds one line a case (the errors
under both, the p90 step's errors, the bottleneck under both). Only cases present in both reports are compared: a
case that failed in one of them is named and left out. Every figure is computed here from the reports' rows (not
their summaries), so both sides are counted over the same cases.

Exit codes: 0; 2 bad input (one line naming the file and what was expected).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from convert import median, percentile, read_json  # noqa: E402  (the table's own statistics; .json, .gz or .xz)

# the rule's figures, in the order they are printed; each "lower is better"
RULE_FIGURES = ("median_abs_err", "p90_abs_err", "median_abs_step_p90_err", "p90_abs_step_p90_err")


class BadInput(Exception):
    """One line for stderr, exit 2."""


def case_key(row: Dict[str, Any]) -> str:
    """Pure: a case's key across reports: its id, led by its family's call prefix (r12:) where the id lacks it
    (convert's pooled reports already prefix the id; the same bare id recurs in several calls)."""
    cid, call = str(row.get("id")), str(row.get("family", "")).split(":")[0]
    return cid if cid.startswith(call + ":") else f"{call}:{cid}"


def scored_rows(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Pure: the report's cases that pipeplan scored (a throughput error present), by case_key."""
    out = {}
    for r in report.get("rows") or []:
        p = r.get("pipeplan") or {}
        if p.get("err") is not None:
            out[case_key(r)] = r
    return out


def figures(rows: Sequence[Dict[str, Any]]) -> Dict[str, Optional[float]]:
    """Pure: the decision's figures over rows: median and p90 abs throughput error, signed median, median and p90
    abs p90-step error (over the rows that have one), bottleneck agreement count and the count of rows."""
    errs = [float(r["pipeplan"]["err"]) for r in rows]
    steps = [abs(float(r["pipeplan"]["step_p90_err"])) for r in rows
             if r["pipeplan"].get("step_p90_err") is not None]
    if not errs:
        return {k: None for k in RULE_FIGURES + ("signed_median_err", "bottleneck_ok", "n")}
    return {
        "n": len(errs),
        "median_abs_err": median([abs(e) for e in errs]),
        "p90_abs_err": percentile([abs(e) for e in errs], 0.9),
        "signed_median_err": median(errs),
        "median_abs_step_p90_err": median(steps),
        "p90_abs_step_p90_err": percentile(steps, 0.9),
        "bottleneck_ok": sum(1 for r in rows if r["pipeplan"].get("bottleneck_ok")),
    }


def worsened(base: Dict[str, Optional[float]], variant: Dict[str, Optional[float]]) -> List[str]:
    """Pure: the rule's figures (RULE_FIGURES) where the variant is higher than the base."""
    return [k for k in RULE_FIGURES
            if base.get(k) is not None and variant.get(k) is not None and variant[k] > base[k]]


def compare(base: Dict[str, Any], variant: Dict[str, Any]) -> Tuple[Dict[str, Any], List[str], List[str]]:
    """Pure: (figures of base and variant over their common cases, the common keys in order, the keys scored in
    only one of them)."""
    b, v = scored_rows(base), scored_rows(variant)
    common = sorted(set(b) & set(v))
    only = sorted(set(b) ^ set(v))
    return ({"base": figures([b[k] for k in common]), "variant": figures([v[k] for k in common])}, common, only)


def _pct(x: Optional[float], signed: bool = False) -> str:
    return "n/a" if x is None else (f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%")


def summary_lines(figs: Dict[str, Any]) -> List[str]:
    out = ["reading | abs throughput error median / p90 | signed median | p90 step abs error median / p90 | "
           "bottleneck"]
    for name in ("base", "variant"):
        f = figs[name]
        out.append(f"{name} | {_pct(f['median_abs_err'])} / {_pct(f['p90_abs_err'])} | "
                   f"{_pct(f['signed_median_err'], True)} | {_pct(f['median_abs_step_p90_err'])} / "
                   f"{_pct(f['p90_abs_step_p90_err'])} | {f['bottleneck_ok']} of {f['n']}")
    return out


def case_lines(base: Dict[str, Any], variant: Dict[str, Any], keys: Sequence[str]) -> List[str]:
    b, v = scored_rows(base), scored_rows(variant)
    out = ["case | err base / variant | p90 step err base / variant | bottleneck right base / variant"]
    for k in keys:
        pb, pv = b[k]["pipeplan"], v[k]["pipeplan"]
        out.append(f"{k} | {_pct(pb['err'], True)} / {_pct(pv['err'], True)} | "
                   f"{_pct(pb.get('step_p90_err'), True)} / {_pct(pv.get('step_p90_err'), True)} | "
                   f"{'yes' if pb.get('bottleneck_ok') else 'no'} / {'yes' if pv.get('bottleneck_ok') else 'no'}")
    return out


def _load(path: str) -> Dict[str, Any]:
    try:
        rep = read_json(path)
    except (OSError, ValueError) as e:
        raise BadInput(f"variant_compare: {path}: {e}; expected a convert report (report.json, .gz or .xz)")
    if not isinstance(rep, dict) or not isinstance(rep.get("rows"), list):
        raise BadInput(f"variant_compare: {path}: $.rows missing or not a list; expected a convert report")
    return rep


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base", help="convert's report.json with the default options")
    ap.add_argument("variant", help="convert's report.json with the variant's options, the same calls")
    ap.add_argument("--cases", action="store_true", help="one line a case as well")
    a = ap.parse_args(argv)
    try:
        base, variant = _load(a.base), _load(a.variant)
    except BadInput as e:
        print(e, file=sys.stderr)
        return 2
    figs, common, only = compare(base, variant)
    if not common:
        print(f"variant_compare: {a.base} and {a.variant} share no scored case; expected two reports over the same "
              f"calls", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(figs)))
    w = worsened(figs["base"], figs["variant"])
    print("the variant worsens: " + (", ".join(w) if w else "none of the rule's figures") +
          f" ({len(common)} cases in both)")
    if only:
        print(f"scored in only one report (left out): {', '.join(only)}")
    if a.cases:
        print("\n".join(case_lines(base, variant, common)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
