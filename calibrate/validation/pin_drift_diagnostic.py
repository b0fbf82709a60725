#!/usr/bin/env python3
"""Diagnostic: how much of each pinned case's throughput error is its pin thread moving between its probes and the
case (validation-runs.md run 36, finding 1). convert charges the pin thread the CPU per batch its two probes read
(`components.probe` and `probe_after`, each `pin_thread_cpu_s_per_batch`); the harness also counted it inside the
case (`measured.in_situ.pin_thread_cpu_s_per_batch`). In a pin-bound case a 1.1x dearer pin thread in the case
means 10% fewer samples/s than predicted, so the table's error should follow (ratio - 1) with slope near 1: a
slope near 1 says the model carries the cost into throughput as the pipeline does, and the intercept is what is
left to the model. Reads the generated table's report for the errors (run `bash calibrate/validation/table.sh`
first), so it scores exactly what the page shows. Usage:

    python3 calibrate/validation/pin_drift_diagnostic.py RESULTS_DIR [RESULTS_DIR ...] \
        [--report calibrate/validation/results/table-report/report.json]

Each RESULTS_DIR must be listed in calibrate/validation/table_calls.txt (its line gives the rN tag of its rows).
It also prints how far apart the pin thread's readings are (spread_readings, run 37, finding 5) and, per call, the
pin-bound tensors' a and b (pin_bound_factors, run 37, finding 2); with --report pointing at a variant's report
(table.sh --OPTIONS writes /tmp/pipeplan-table-variant/report.json) it scores that variant the same way.

--gil PIPEPLAN also simulates each pin-bound tensor case once from the scenario the report's run wrote (the report's
folder, scenarios/TAG_ID.json and .profile.json) and fits what is left of its error beside the drift,
error - (ratio - 1), against the simulated pin thread's wait for the GIL (the report's gil.pin_thread_wait_fraction),
pooled and within each call (validation-runs.md run 38, finding 6).
"""
import argparse
import math
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
from timeline_analysis import least_squares_line  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def pin_thread_ratio(case: Dict[str, Any]) -> Optional[float]:
    """The pin thread's CPU per batch inside the case over the mean of its probes before and after; None for a case
    without pinning, without one of the three readings, or not measured."""
    if not (case.get("knobs") or {}).get("pin_memory") or "measured" not in case:
        return None
    in_case = ((case["measured"] or {}).get("in_situ") or {}).get("pin_thread_cpu_s_per_batch")
    comps = case.get("components") or {}
    probes = [(comps.get(name) or {}).get("pin_thread_cpu_s_per_batch") for name in ("probe", "probe_after")]
    if not in_case or not all(probes):
        return None
    return float(in_case) / (sum(float(p) for p in probes) / 2.0)


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> Tuple[float, float, float]:
    """Least-squares line y = slope x + intercept (timeline_analysis's line) and Pearson's correlation; at least
    two pairs with distinct x needed."""
    if len(xs) != len(ys):
        raise ValueError("linear_fit needs as many y as x")
    line = least_squares_line(xs, ys, min_points=2)
    if line is None:
        raise ValueError("linear_fit needs two or more pairs with distinct x")
    mx, my, slope = line
    return slope, my - slope * mx, pearson(xs, ys)


def call_tags(table_calls_path: str) -> Dict[str, str]:
    """Result folder name -> its rN tag in the generated table (the order of table_calls.txt, comments skipped)."""
    tags = {}
    with open(table_calls_path) as f:
        for line in f:
            name = line.strip()
            if name and not name.startswith("#"):
                tags[name] = f"r{len(tags) + 1}"
    return tags


def pairs_for_call(cases: List[Dict[str, Any]], errors: Dict[str, float]) -> List[Tuple[str, float, float]]:
    """(case id, pin thread ratio - 1, table throughput error) for each pinned case with both."""
    out = []
    for case in cases:
        ratio = pin_thread_ratio(case)
        err = errors.get(case.get("id", ""))
        if ratio is not None and err is not None:
            out.append((case["id"], ratio - 1.0, err))
    return out


def pin_bound_factors(case: Dict[str, Any], predicted_samples_per_s: Optional[float]) -> Optional[Tuple[float, float]]:
    """(a, b) of a pinned case (validation-runs.md run 37, finding 2), where predicted over measured throughput is
    (pin_thread_ratio) x a x b in a pin-bound case: a, the measured batch period over the case's own pin thread CPU
    per batch (how much of the wall the pin thread is off its CPU or idle); b, the probes' mean pin thread CPU per
    batch over the predicted batch period (how the simulator's pin period stands to the probes' reading). None
    without the readings or a prediction."""
    ratio = pin_thread_ratio(case)
    m = case.get("measured") or {}
    in_case = (m.get("in_situ") or {}).get("pin_thread_cpu_s_per_batch")
    thr, bs = m.get("throughput_samples_per_s"), (case.get("knobs") or {}).get("batch_size")
    if not (ratio and in_case and thr and bs and predicted_samples_per_s):
        return None
    probes_s = float(in_case) / ratio
    return (float(bs) / float(thr)) / float(in_case), probes_s * float(predicted_samples_per_s) / float(bs)


def is_pin_bound_tensor(case: Dict[str, Any]) -> bool:
    """The table's pin-bound tensor setting: pinned tensor_f32 at mm:5 with 8 workers."""
    k = case.get("knobs") or {}
    return bool(k.get("pin_memory")) and k.get("kind") == "tensor_f32" and k.get("step") == "mm:5" \
        and k.get("num_workers") == 8


def _abs_log(a: Any, b: Any) -> Optional[float]:
    """|ln(a / b)| for two positive readings, else None."""
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return None
    return abs(math.log(a / b)) if a > 0 and b > 0 else None


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson's correlation of two equally long sequences (nan when either does not vary)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def spread_readings(calls: Sequence[Sequence[Dict[str, Any]]]) -> Dict[str, List[float]]:
    """How far the pin thread's readings around pinned cases move, as |ln| of a ratio (validation-runs.md run 37,
    finding 4): 'halves', the two halves of one probe's window (one loader, about 0.75 s each); 'probes', the probe
    after a case over the probe before it (two loaders a case apart); 'case', the case over the mean of the two
    (pin_thread_ratio). 'lag_pairs' holds ln(ratio) of each two cases that follow one another in a call's list,
    flattened as x0, y0, x1, y1, ...: whether a case's drift says anything of the next one's."""
    out: Dict[str, List[float]] = {"halves": [], "probes": [], "case": [], "lag_pairs": []}
    for cases in calls:
        last_log_ratio = None
        for case in cases:
            ratio = pin_thread_ratio(case)
            if ratio is None:
                last_log_ratio = None
                continue
            comps = case.get("components") or {}
            before, after = comps.get("probe") or {}, comps.get("probe_after") or {}
            for probe in (before, after):
                halves = probe.get("pin_thread_cpu_s_per_batch_halves")
                if isinstance(halves, list) and len(halves) == 2:
                    v = _abs_log(halves[1], halves[0])
                    if v is not None:
                        out["halves"].append(v)
            v = _abs_log(after.get("pin_thread_cpu_s_per_batch"), before.get("pin_thread_cpu_s_per_batch"))
            if v is not None:
                out["probes"].append(v)
            out["case"].append(abs(math.log(ratio)))
            if last_log_ratio is not None:
                out["lag_pairs"] += [last_log_ratio, math.log(ratio)]
            last_log_ratio = math.log(ratio)
    return out


def spread_line(spread: Dict[str, List[float]]) -> str:
    """The spread_readings figures in one line (medians of |ln|, as percent)."""
    pct = convert.percentile
    parts = []
    for key, label in (("halves", "one probe's halves"), ("probes", "probe after over before"),
                       ("case", "case over the probes' mean")):
        v = spread[key]
        parts.append(f"{label} {100 * pct(v, 0.5):.1f}% ({len(v)})" if v else f"{label} n/a")
    pairs = spread["lag_pairs"]
    xs, ys = pairs[0::2], pairs[1::2]
    lag = f"{pearson(xs, ys):+.2f} over {len(xs)} pairs" if len(xs) >= 3 else "n/a"
    return ("the pin thread's readings apart, median |ln ratio|: " + ", ".join(parts)
            + f"; one case's ratio against the next case's: correlation {lag}")


def within_call_fit(points: Sequence[Tuple[str, float, float]]) -> Tuple[float, float, int]:
    """Pure: (slope, correlation, n) of y on x after each call's own means are taken out of both, over
    (call, x, y) points; calls with one point say nothing and are left out. A slope of -1 within calls says y falls
    one for one with x among cases that share a lease, whatever the lease's own offset."""
    by_call: Dict[str, List[Tuple[float, float]]] = {}
    for call, x, y in points:
        by_call.setdefault(call, []).append((x, y))
    dx: List[float] = []
    dy: List[float] = []
    for pts in by_call.values():
        if len(pts) < 2:
            continue
        mx = sum(p[0] for p in pts) / len(pts)
        my = sum(p[1] for p in pts) / len(pts)
        dx += [p[0] - mx for p in pts]
        dy += [p[1] - my for p in pts]
    if len(dx) < 2 or max(dx) == min(dx):  # no spread within any call: no line
        return float("nan"), float("nan"), len(dx)
    slope, _, corr = linear_fit(dx, dy)
    return slope, corr, len(dx)


def simulated_pin_gil_wait(pipeplan: str, scenarios_dir: str, tag: str, case_id: str) -> Optional[float]:
    """The simulated pin thread's share of the window spent waiting for the GIL in one case, from the scenario
    (and its profile) the report's run wrote; None when the scenario is missing or the run fails."""
    base = os.path.join(scenarios_dir, f"{tag}_{case_id}")
    if not os.path.isfile(base + ".json"):
        return None
    profile = base + ".profile.json" if os.path.isfile(base + ".profile.json") else None
    wait = convert._get(convert.run_pipeplan(pipeplan, base + ".json", profile).get("result"),
                        "gil.pin_thread_wait_fraction")
    return float(wait) if isinstance(wait, (int, float)) else None


def ratios_by_order(cases: Sequence[Dict[str, Any]]) -> Dict[str, List[float]]:
    """Pure: pin_thread_ratio of each pinned case, grouped by the case's loader.in_order ("in order", "unordered");
    cases without the three readings are left out."""
    out: Dict[str, List[float]] = {"in order": [], "unordered": []}
    for c in cases:
        r = pin_thread_ratio(c)
        if r is not None:
            out["in order" if (c.get("knobs") or {}).get("in_order", True) else "unordered"].append(r)
    return out


def print_ratios(results_dirs: Sequence[str]) -> int:
    for rdir in results_dirs:
        try:
            data = convert.read_call_json(rdir, "cases.json")
        except (OSError, ValueError) as e:
            print(f"pin_drift_diagnostic: {rdir}: cannot read cases.json ({e}); expected a call's results folder",
                  file=sys.stderr)
            return 2
        cases = data["cases"] if isinstance(data, dict) else data
        for c in cases:
            r = pin_thread_ratio(c)
            if r is not None:
                print(f"{os.path.basename(os.path.normpath(rdir))}:{c.get('id', '')}: pin thread {r:5.3f}x "
                      "its probes")
        for order, rs in ratios_by_order(cases).items():
            if rs:
                print(f"  {order}: median {convert.percentile(rs, 0.5):.3f} over {len(rs)} case(s)")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results_dirs", nargs="+")
    ap.add_argument("--report", default=os.path.join(HERE, "results", "table-report", "report.json"))
    ap.add_argument("--table-calls", default=os.path.join(HERE, "table_calls.txt"))
    ap.add_argument("--gil", metavar="PIPEPLAN", help="the pipeplan binary: also fit the pin-bound tensors' error "
                    "beside the drift against the simulated pin thread's wait for the GIL (run 38, finding 6)")
    ap.add_argument("--ratios-only", action="store_true",
                    help="only each pinned case's pin thread over its probes, and their median in order and "
                         "unordered, for any call (table or not; device plan item 16, validation-runs.md run 71)")
    args = ap.parse_args(argv)
    if args.ratios_only:
        return print_ratios(args.results_dirs)
    if args.gil and not (os.path.isfile(args.gil) and os.access(args.gil, os.X_OK)):
        print(f"pin_drift_diagnostic: --gil {args.gil}: not an executable file; expected the pipeplan binary "
              "(build/cli/pipeplan)", file=sys.stderr)
        return 2
    try:
        tags = call_tags(args.table_calls)
    except OSError as e:
        print(f"pin_drift_diagnostic: {args.table_calls}: {e.strerror}; expected the table's list of calls",
              file=sys.stderr)
        return 2
    try:
        report = convert.read_json(args.report)
        rows = report.get("rows") or []
    except (OSError, ValueError, AttributeError) as e:
        print(f"pin_drift_diagnostic: {args.report}: cannot read a report's rows ({e}); expected convert's "
              "report.json (bash calibrate/validation/table.sh writes it)", file=sys.stderr)
        return 2
    points: List[Tuple[str, str, float, float]] = []
    all_cases: List[List[Dict[str, Any]]] = []
    call_factors: List[Tuple[str, str, float, float, int]] = []
    gil_points: List[Tuple[str, float, float]] = []
    scenarios_dir = os.path.join(os.path.dirname(os.path.abspath(args.report)), "scenarios")
    for rdir in args.results_dirs:
        name = os.path.basename(os.path.normpath(rdir))
        tag = tags.get(name)
        if tag is None:
            print(f"pin_drift_diagnostic: {name} is not in {args.table_calls}; expected a call the table pools",
                  file=sys.stderr)
            return 2
        errors = {row["id"].split(":", 1)[1]: row["pipeplan"]["err"] for row in rows
                  if row["id"].split(":", 1)[0] == tag and (row.get("pipeplan") or {}).get("err") is not None}
        predicted = {row["id"].split(":", 1)[1]: row["pipeplan"].get("samples_per_s") for row in rows
                     if row["id"].split(":", 1)[0] == tag and (row.get("pipeplan") or {}).get("err") is not None}
        if not errors:
            print(f"pin_drift_diagnostic: {args.report} has no rows tagged {tag} ({name}); expected the table "
                  "regenerated after the call was added (bash calibrate/validation/table.sh)", file=sys.stderr)
            return 2
        data = convert.read_call_json(rdir, "cases.json")
        cases = data["cases"] if isinstance(data, dict) else data
        pts = pairs_for_call(cases, errors)
        all_cases.append(cases)
        factors = [f for f in (pin_bound_factors(c, predicted.get(c.get("id", ""))) for c in cases
                                if is_pin_bound_tensor(c)) if f is not None]
        if factors:
            call_factors.append((tag, name, convert.percentile([f[0] for f in factors], 0.5),
                                 convert.percentile([f[1] for f in factors], 0.5), len(factors)))
        for cid, dev, err in pts:
            print(f"{tag}:{cid[:60]:60s} pin thread {1 + dev:5.3f}x its probes   error {100 * err:+6.1f}%")
        if args.gil:
            bound = {c.get("id") for c in cases if is_pin_bound_tensor(c)}
            for cid, dev, err in pts:
                wait = simulated_pin_gil_wait(args.gil, scenarios_dir, tag, cid) if cid in bound else None
                if wait is not None:
                    gil_points.append((tag, wait, err - dev))
        points += [(tag, cid, dev, err) for cid, dev, err in pts]
    if len(points) < 2:
        print("pin_drift_diagnostic: fewer than two pinned cases with both readings; nothing to fit")
        return 0
    print(spread_line(spread_readings(all_cases)))
    for tag, name, a_med, b_med, n in call_factors:
        print(f"{tag}:{name}: pin-bound tensors ({n}): a (batch period / the case's pin CPU) {a_med:.3f}, "
              f"b (the probes' pin CPU / the predicted period) {b_med:.3f}")
    if len(call_factors) > 1:
        bs = [f[3] for f in call_factors]
        mean_b = sum(bs) / len(bs)
        sd_b = math.sqrt(sum((b - mean_b) ** 2 for b in bs) / len(bs))
        print(f"b over {len(bs)} calls: median {convert.percentile(bs, 0.5):.3f}, {min(bs):.3f}-{max(bs):.3f}, "
              f"sd {100 * sd_b:.1f}%")
    xs, ys = [p[2] for p in points], [p[3] for p in points]
    slope, intercept, corr = linear_fit(xs, ys)
    abs_err = [abs(y) for y in ys]
    rest = [abs(y - x) for x, y in zip(xs, ys)]
    print(f"{len(points)} pinned cases: error = {slope:.2f} x (ratio - 1) {100 * intercept:+.1f}%, "
          f"correlation {corr:.2f}")
    pct = convert.percentile
    print(f"ratio p10 / median / p90: {1 + pct(xs, 0.1):.3f} / {1 + pct(xs, 0.5):.3f} / {1 + pct(xs, 0.9):.3f}")
    print(f"|error| median / p90: {100 * pct(abs_err, 0.5):.1f}% / {100 * pct(abs_err, 0.9):.1f}%; less the ratio's "
          f"part |error - (ratio - 1)|: {100 * pct(rest, 0.5):.1f}% / {100 * pct(rest, 0.9):.1f}%")
    if args.gil:
        if len(gil_points) < 2:
            print(f"GIL: fewer than two pin-bound tensor cases simulated from {scenarios_dir}; nothing to fit")
            return 0
        gx, gy = [p[1] for p in gil_points], [p[2] for p in gil_points]
        head = (f"GIL: {len(gil_points)} pin-bound tensor cases, the simulated pin thread waiting for the GIL "
                f"{100 * pct(gx, 0.1):.2f} / {100 * pct(gx, 0.5):.2f} / {100 * pct(gx, 0.9):.2f}% of the window "
                f"(p10 / median / p90)")
        if max(gx) == min(gx):
            # the model since run 38's finding 6: the pin thread never waits for the loop, nothing to fit against
            print(f"{head}, the same in every case; error - (ratio - 1): median {100 * pct(gy, 0.5):+.1f}%")
            return 0
        g_slope, g_icpt, g_corr = linear_fit(gx, gy)
        w_slope, w_corr, w_n = within_call_fit(gil_points)
        print(f"{head}; error - (ratio - 1) = {g_slope:.2f} x that {100 * g_icpt:+.1f}%, correlation "
              f"{g_corr:.2f}; within calls ({w_n} cases) slope {w_slope:.2f}, correlation {w_corr:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
