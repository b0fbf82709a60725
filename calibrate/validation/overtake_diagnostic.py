#!/usr/bin/env python3
"""Why an in-order loader's batches overtake each other, per case, from the harness's --timeline.

With in_order=True a batch that finishes before the one ahead of it waits, and the loop then takes a long step and a
short one; its p90 step follows how often that happens (validation run 61, findings 2-5). PyTorch's _next_data sends
one index each time it returns a batch, so two batches returned back to back send two indices almost together, and
those overtake each other far more often than indices sent a pin period apart. Per case this prints:

- the measured out-of-order share (timeline_analysis.out_of_order_share over the whole timeline);
- the overtakes of consecutive batches whose indices were sent under GAP apart against those sent farther apart
  (overtakes_by_send_gap);
- the workers' log batch time autocorrelation at 1, 2 and 4 of a worker's batches (insitu_diagnostic's pooled, around
  the common mean: a worker's memory counted in batches);
- the share of the workers' wander they show at the same time (timeline_analysis.common_share) over the whole case
  and read in windows of 1.5, 4 and 8 s (windowed_common_share: how long a window must be to see it).

With --simulated the same split of overtakes by send gap is read from the simulator's trace of each case as the table
builds it (seed 1, the steps past the first fifth), beside the measured: does the model's loop send indices together
after an overtake as often, and do those overtake again as often (validation run 62, finding 3)?

Run from the repository root: python3 calibrate/validation/overtake_diagnostic.py RESULTS_DIR [--gap-ms 2]
    [--simulated [--pipeplan build/cli/pipeplan] [--steps N]]
    python3 calibrate/validation/overtake_diagnostic.py --family sync_every [--knob sync_every] RESULTS_DIR ...
        (pooled over the calls, measured against simulated: run 62, finding 3's table)
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
import insitu_diagnostic  # noqa: E402
import timeline_analysis  # noqa: E402

WINDOWS_S = (1.5, 4.0, 8.0)


def batch_spans(timeline: Dict[str, Any]) -> Dict[int, Sequence[float]]:
    """Pure: batch index -> its worker's (first __getitem__, collate end), in order and round robin: batch j is worker
    j mod n's (j // n)-th in the timeline, which counts from the loader's first batch."""
    workers = timeline.get("workers") or {}
    n = len(workers)
    out: Dict[int, Sequence[float]] = {}
    for w, spans in workers.items():
        for k, span in enumerate(spans):
            out[k * n + int(w)] = span
    return out


def overtakes_by_send_gap(timeline: Dict[str, Any], prefetch_factor: int, gap_s: float) -> Optional[Dict[str, Any]]:
    """Pure: for consecutive batches (j, j + 1) both sent by the loop (j >= prefetch_factor x workers: sent when the
    loop took batch j - that, main next_end) and both finished, how many finished in reverse order, split by whether
    their indices went out less than gap_s apart. None without such pairs."""
    next_end = ((timeline.get("main") or {}).get("next_end")) or []
    spans = batch_spans(timeline)
    ahead = prefetch_factor * len(timeline.get("workers") or {})
    close = far = close_over = far_over = 0
    for j in range(ahead, len(next_end) + ahead - 1):
        if j + 1 not in spans or j not in spans or j + 1 - ahead >= len(next_end):
            continue
        overtaken = spans[j + 1][1] < spans[j][1]
        if next_end[j + 1 - ahead] - next_end[j - ahead] < gap_s:
            close, close_over = close + 1, close_over + overtaken
        else:
            far, far_over = far + 1, far_over + overtaken
    if close + far == 0:
        return None
    return {"close": close, "close_overtaken": close_over, "far": far, "far_overtaken": far_over,
            "close_share": close_over / close if close else None, "far_share": far_over / far if far else None}


def timeline_from_trace(events: Sequence[Dict[str, Any]], num_workers: int, skip_share: float = 0.2
                        ) -> Optional[Dict[str, Any]]:
    """Pure: the simulator's Perfetto events as a harness timeline ({"workers": {w: [(start, end) per batch]}, "main":
    {"next_end": [...]}}, seconds), from the batch the first skip_share of the loop's returns reach on (the start-up's
    fill left out, as the table's steady window). A worker's batch spans its per-sample loads and its collate (events
    on thread "worker W" carrying args.batch); next() on the main thread carries the batch it returned. None unless
    batches run round robin (batch j on worker j mod n), as in-order dispatch does."""
    by_worker, returned = timeline_analysis.trace_batches(events)
    spans = {b: span for (_, b), span in by_worker.items()}
    worker_of = {b: w for (w, b) in by_worker}
    if not returned or any(worker_of[b] != b % num_workers for b in worker_of):
        return None
    first = int(skip_share * (max(returned) + 1)) // num_workers * num_workers
    last = max(b for b in spans if b in returned)
    workers = {str(w): [tuple(spans[b]) for b in range(first + w, last + 1, num_workers) if b in spans]
               for w in range(num_workers)}
    next_end = [returned[b] for b in range(first, last + 1) if b in returned]
    return {"workers": workers, "main": {"next_end": next_end}}


def return_gap_quantile(next_end: Sequence[float], q: float) -> Optional[float]:
    """Pure: the q-quantile (nearest rank below) of the time between the loop's consecutive batch returns. Its low
    end is the loop's turnaround when the next batch is already in hand (after an overtake), which sets how close
    together the two indices go out. None with fewer than 10 gaps."""
    gaps = sorted(b - a for a, b in zip(next_end, next_end[1:]))
    return gaps[int(q * (len(gaps) - 1))] if len(gaps) >= 10 else None


def with_profile_sets(profile: Dict[str, Any], sets: Sequence[str]) -> Dict[str, Any]:
    """Pure: a copy of `profile` with each "section.key=number" set (a what-if, e.g. ipc.receive_gil_share=0), or
    "section.key=none" removed (e.g. ipc.receive_gil_s_per_batch=none: the table's hold off, the share's whole
    receive back). Raises ValueError on a malformed setting."""
    out = json.loads(json.dumps(profile))
    for item in sets:
        path, sep, value = item.partition("=")
        keys = path.split(".")
        if not sep or len(keys) < 2 or not all(keys):
            raise ValueError(f"{item!r}: expected section.key=number")
        node = out
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        if value == "none":
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = float(value)
    return out


def simulated_trace(case: Dict[str, Any], doc: Dict[str, Any], profile: Dict[str, Any], pipeplan: str,
                    steps: int, profile_sets: Sequence[str] = (), scenario_sets: Sequence[str] = ()
                    ) -> Optional[List[Dict[str, Any]]]:
    """The simulator's Perfetto events for the case as the table builds it (seed 1), with the profile settings given
    on top (with_profile_sets) and the scenario keys (pipeplan simulate --set KEY=VALUE); None (and a line on stderr)
    where pipeplan fails."""
    cpu_curve = (profile.get("cpu") or {}).get("speed_vs_busy_cores") or []
    tau = convert.calls_duty_time_constant([(doc.get("components") or {}, profile)])
    scen, prof = convert.table_case_inputs(case, doc, profile, cpu_curve, tau)
    prof = with_profile_sets(prof or profile, profile_sets) if profile_sets else prof
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, n) for n in ("s.json", "p.json", "r.json", "t.json")]
        json.dump(scen, open(paths[0], "w"))
        json.dump(prof or profile, open(paths[1], "w"))
        steps_arg = ["--steps", str(steps)] if steps else []   # else the scenario's: the case's own window
        sets = [arg for kv in scenario_sets for arg in ("--set", kv)]
        run = subprocess.run([pipeplan, "simulate", paths[0], "--profile", paths[1], *steps_arg, *sets,
                              "--seed", "1", "--format", "json", "-o", paths[2], "--trace", paths[3]],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{case['id']}: pipeplan failed: {run.stderr.strip()}", file=sys.stderr)
            return None
        trace = json.load(open(paths[3]))
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def simulated_by_gap(case: Dict[str, Any], doc: Dict[str, Any], profile: Dict[str, Any], pipeplan: str,
                     steps: int, gap_s: float, profile_sets: Sequence[str] = (),
                     scenario_sets: Sequence[str] = ()) -> Optional[Dict[str, Any]]:
    """overtakes_by_send_gap on the simulator's trace of the case as the table builds it (seed 1), with the
    profile settings and scenario keys given on top (simulated_trace)."""
    knobs = case.get("knobs") or {}
    events = simulated_trace(case, doc, profile, pipeplan, steps, profile_sets, scenario_sets)
    if events is None:
        return None
    timeline = timeline_from_trace(events, int(knobs.get("num_workers") or 0))
    if timeline is None:
        return None
    split = overtakes_by_send_gap(timeline, int(knobs.get("prefetch_factor") or 2), gap_s)
    return dict(split, turnaround_p10_s=return_gap_quantile(timeline["main"]["next_end"], 0.1)) if split else None


def windowed_common_share(per_worker_spans: Sequence[Sequence[Sequence[float]]], window_s: float) -> Optional[float]:
    """Pure: the mean of timeline_analysis.common_share over consecutive windows of window_s from the first batch's
    start, each taking the batches wholly inside it. None where no window has a reading."""
    starts = [s[0] for w in per_worker_spans for s in w]
    ends = [s[1] for w in per_worker_spans for s in w]
    if not starts:
        return None
    t, last, shares = min(starts), max(ends), []
    while t + window_s <= last:
        inside = [[s for s in w if s[0] >= t and s[1] <= t + window_s] for w in per_worker_spans]
        cs = timeline_analysis.common_share(inside)
        if cs:
            shares.append(cs["share"])
        t += window_s
    return statistics.fmean(shares) if shares else None


def case_figures(case: Dict[str, Any], gap_s: float) -> Optional[Dict[str, Any]]:
    """The figures above for one case with an in-order, multi-worker timeline; None otherwise."""
    knobs = case.get("knobs") or {}
    timeline = (case.get("measured") or {}).get("timeline") or {}
    workers = timeline.get("workers") or {}
    if case.get("status") != "ok" or len(workers) < 2 or knobs.get("in_order", True) is False:
        return None
    spans = batch_spans(timeline)
    done = [spans[j][1] if j in spans else None for j in range(max(spans) + 1)] if spans else []
    walls = [w for w in insitu_diagnostic.timeline_worker_walls(case).values() if len(w) >= 8]
    acf = insitu_diagnostic.pooled_autocorrelation(walls, (1, 2, 4))[2] if len(walls) >= 2 else None
    per_worker = [spans_of for _, spans_of in sorted(workers.items(), key=lambda kv: int(kv[0]))]
    return {"out_of_order": timeline_analysis.out_of_order_share(done),
            "turnaround_p10_s": return_gap_quantile((timeline.get("main") or {}).get("next_end") or [], 0.1),
            "by_gap": overtakes_by_send_gap(timeline, int(knobs.get("prefetch_factor") or 2), gap_s),
            "autocorrelation": acf, "common_share": insitu_diagnostic.case_common_share(case),
            "windowed_common_share": {w: windowed_common_share(per_worker, w) for w in WINDOWS_S}}


def _f(x: Optional[float], fmt: str = "{:+.2f}") -> str:
    return fmt.format(x) if x is not None else "n/a"


def pooled_split(splits: Sequence[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """Pure: overtakes_by_send_gap's counts summed over cases, with the pooled shares: the share of pairs sent
    close, of those overtaken, and of those sent apart overtaken. None without pairs."""
    tot = {k: sum(int(s[k]) for s in splits) for k in ("close", "close_overtaken", "far", "far_overtaken")}
    n = tot["close"] + tot["far"]
    if n == 0:
        return None
    return dict(tot, sent_close_share=tot["close"] / n,
                close_share=tot["close_overtaken"] / tot["close"] if tot["close"] else None,
                far_share=tot["far_overtaken"] / tot["far"] if tot["far"] else None,
                overtaken_share=(tot["close_overtaken"] + tot["far_overtaken"]) / n)


def summary(results_dirs: Sequence[str], family: str, knob: str, gap_s: float, pipeplan: str, steps: int,
            profile_sets: Sequence[str] = (), scenario_sets: Sequence[str] = ()) -> int:
    """Prints, per value of `knob` over the `family` cases of the calls given, the pooled send-gap split and the
    median returns' gap p10, measured and simulated (validation run 62, finding 3's table)."""
    groups: Dict[str, Dict[str, List[Any]]] = {}
    for rd in results_dirs:
        doc = convert.read_call_json(rd, "cases.json")
        profile = convert.read_call_json(rd, "profile.json")
        for c in doc["cases"]:
            if c.get("family") != family:
                continue
            fig = case_figures(c, gap_s)
            if fig is None or not fig["by_gap"]:
                continue
            sg = simulated_by_gap(c, doc, profile, pipeplan, steps, gap_s, profile_sets, scenario_sets)
            if sg is None:
                continue
            g = groups.setdefault(str((c.get("knobs") or {}).get(knob)), {"m": [], "s": [], "mt": [], "st": []})
            g["m"].append(fig["by_gap"])
            g["s"].append(sg)
            g["mt"].append(fig["turnaround_p10_s"])
            g["st"].append(sg["turnaround_p10_s"])
    print(f"{family}, by {knob}: consecutive pairs whose indices went out under {gap_s * 1e3:g} ms apart (share of "
          f"pairs; of those overtaken), pairs sent apart overtaken, all pairs overtaken, the loop's returns' gap p10 "
          f"(median over cases); measured | simulated (seed 1)")
    for value, g in sorted(groups.items()):
        line = f"{knob}={value} ({len(g['m'])} cases):"
        for label, split, turn in (("measured", pooled_split(g["m"]), g["mt"]), ("simulated", pooled_split(g["s"]), g["st"])):
            turns = [t for t in turn if t is not None]
            med = statistics.median(turns) if turns else None
            line += (f"  {label} {_f(split['sent_close_share'], '{:.1%}')} ({_f(split['close_share'], '{:.0%}')}), "
                     f"{_f(split['far_share'], '{:.1%}')}, {_f(split['overtaken_share'], '{:.1%}')}, {_ms(med)}"
                     if split else f"  {label} n/a")
        print(line)
    return 0


def _ms(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{1e3 * x:.2f} ms"


def add_simulated_options(ap: argparse.ArgumentParser) -> None:
    """The what-ifs on the simulated side and the simulator to run, as this diagnostic and handoff_diagnostic take
    them: --profile-set (with_profile_sets), --set (pipeplan simulate --set) and --pipeplan."""
    ap.add_argument("--profile-set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="a what-if on the simulated side, on top of each case's profile (repeatable; a number, or "
                         "none to remove the key; e.g. ipc.receive_gil_share=0: validation run 62, finding 6)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="scenario_set",
                    help="a scenario key on the simulated side, on top of each case's (pipeplan simulate --set; "
                         "repeatable; e.g. training.back_to_back_host_factor=0.69: validation run 62, finding 10)")
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)


def check_simulated_options(ap: argparse.ArgumentParser, a: argparse.Namespace, simulates: bool) -> None:
    """A malformed --profile-set, or a missing --pipeplan where the run `simulates`, gets one line and exit 2
    before anything runs."""
    try:
        with_profile_sets({}, a.profile_set)
    except ValueError as e:
        ap.error(f"--profile-set {e}")
    if simulates:
        convert.exit_without_pipeplan(ap.prog, a.pipeplan)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", nargs="+", help="one call's results folder (several with --family)")
    ap.add_argument("--family", default=None,
                    help="pool this family's cases over every call given, measured against simulated, by --knob "
                         "(validation run 62, finding 3: --family sync_every over results/sync-every-calls.txt)")
    ap.add_argument("--knob", default="sync_every", help="with --family, split by this knob (default %(default)s)")
    add_simulated_options(ap)
    ap.add_argument("--gap-ms", type=float, default=2.0,
                    help="indices sent closer than this count as sent together (default %(default)s ms)")
    ap.add_argument("--simulated", action="store_true",
                    help="also read the split from the simulator's trace of each case as the table builds it")
    ap.add_argument("--steps", type=int, default=0,
                    help="simulated steps with --simulated (default: the scenario's, the case's own; a trace whose "
                         "batches are not dealt round robin, as after an epoch's end, is left out)")
    a = ap.parse_args(argv)
    check_simulated_options(ap, a, bool(a.family or a.simulated))   # the summary simulates
    if a.family:
        return summary(a.results_dir, a.family, a.knob, a.gap_ms / 1e3, a.pipeplan, a.steps, a.profile_set,
                       a.scenario_set)
    if len(a.results_dir) != 1:
        ap.error("one results folder, or several with --family")
    doc = convert.read_call_json(a.results_dir[0], "cases.json")
    profile = convert.read_call_json(a.results_dir[0], "profile.json") if a.simulated else {}
    print(f"{'case':52s} {'ooo':>5s}  overtaken: sent < {a.gap_ms:g} ms | farther   lag 1/2/4 (a worker's batches)"
          f"   common share: case | in {' / '.join(f'{w:g}' for w in WINDOWS_S)} s   returns' gap p10")
    for c in doc["cases"]:
        fig = case_figures(c, a.gap_ms / 1e3)
        if fig is None:
            continue
        g = fig["by_gap"] or {}
        gap = (f"{g.get('close_overtaken', 0)}/{g.get('close', 0)} ({_f(g.get('close_share'), '{:.0%}')}) | "
               f"{g.get('far_overtaken', 0)}/{g.get('far', 0)} ({_f(g.get('far_share'), '{:.0%}')})")
        acf = " / ".join(_f(x) for x in fig["autocorrelation"]) if fig["autocorrelation"] else "n/a"
        win = " / ".join(_f(fig["windowed_common_share"][w]) for w in WINDOWS_S)
        print(f"{c['id'][:52]:52s} {_f(fig['out_of_order'], '{:.1%}'):>5s}  {gap:28s} {acf:22s}"
              f" {_f(fig['common_share'])} | {win}   {_ms(fig['turnaround_p10_s'])}")
        if a.simulated:
            sg = simulated_by_gap(c, doc, profile, a.pipeplan, a.steps, a.gap_ms / 1e3, a.profile_set,
                                  a.scenario_set)
            if sg is not None:
                sim_ooo = ((sg["close_overtaken"] + sg["far_overtaken"]) / (sg["close"] + sg["far"])
                           if sg["close"] + sg["far"] else None)
                print(f"{'  simulated (seed 1)':52s} {_f(sim_ooo, '{:.1%}'):>5s}  "
                      f"{sg['close_overtaken']}/{sg['close']} ({_f(sg['close_share'], '{:.0%}')}) | "
                      f"{sg['far_overtaken']}/{sg['far']} ({_f(sg['far_share'], '{:.0%}')})"
                      f"{'':58s}{_ms(sg['turnaround_p10_s'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
