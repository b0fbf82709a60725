#!/usr/bin/env python3
"""Diagnostic, not a prediction: simulate each measured case with the per-sample and collate costs
measured IN SITU (inside that case's own workers, harness `measured.in_situ`) and a flat per-core speed
curve (in-situ costs already include core sharing). What error remains is the model's structure; what
goes away was the component measurements. Usage:

    python3 calibrate/validation/insitu_diagnostic.py RESULTS_DIR [--pipeplan build/cli/pipeplan] [--base table]

--base table (since the sixteenth session) starts from the case as the generated table builds it (the loop from
the host probes, the memory map, an unpinned loop's copy and release, the machine's curve) and replaces only the
workers' costs and the pin thread's with the case's own; the default starts from scenario_for's defaults (the
loop's host time the step component's alone), as every run's figure in docs/validation-runs.md until run 20.

RESULTS_DIR holds cases.json and profile.json from one device call.
"""
import argparse
import cmath
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
import timeline_analysis  # noqa: E402


def table_inputs_in_situ(case, doc, profile, cpu_curve, duty_tau_s):
    """The case's scenario as the generated table builds it (convert.table_case_inputs), and its profile as the
    table builds it from a copy of the case that carries the case's own figures where convert reads measurements
    taken beside it: an unpinned case's `.to()` and drop (harness since run 20) as its beside-loader window, a
    pinned case's pin thread CPU per batch in situ as its probes' (convert.main_side_drift). The rest, the workers'
    wander from the probes included, stays the table's (--wander case replaces the wander below)."""
    scen, prof = convert.table_case_inputs(json.loads(json.dumps(case)), doc, profile, cpu_curve, duty_tau_s)
    k, m = case["knobs"], case["measured"]
    mirror = json.loads(json.dumps(case))
    comp = mirror["components"]
    copy_s, release_s = (convert.positive_mean(m.get(key)) for key in ("copy_call_s", "release_s"))
    pin_cpu_s = m["in_situ"].get("pin_thread_cpu_s_per_batch")
    if not k.get("pin_memory") and int(k["num_workers"]) > 0 and copy_s and release_s:
        around = convert.unpinned_window_bracket(comp) or {}
        comp["host_beside_loader"] = {
            "workers": int(k["num_workers"]), "unpinned_case_like_copy_s": copy_s,
            "unpinned_case_like_release_s": release_s,
            "unpinned_case_like_host_s": max(1e-6, float(m["loop_host_s"]["mean"]) - copy_s)}
        # next()'s receive stays the table's, from the windows around the case: without it the model fell back to
        # calibrate's receive (0 ms on run 76c's profile, whose unpinned cases read 6.7% fast in situ for that;
        # more than the windows' on run 64b1's, -5.6% where -1.4% with it)
        if around.get(convert.UNPINNED_NEXT_KEY):
            comp["host_beside_loader"][convert.UNPINNED_NEXT_KEY] = around[convert.UNPINNED_NEXT_KEY]
        for name in ("unpinned_window", "unpinned_window_after"):   # the case's windows around it would win
            comp.pop(name, None)
    elif k.get("pin_memory") and pin_cpu_s:
        for name in ("probe", "probe_after"):
            if (comp.get(name) or {}).get("pin_thread_cpu_s_per_batch"):
                comp[name]["pin_thread_cpu_s_per_batch"] = pin_cpu_s
    else:
        return scen, prof or profile
    _, own = convert.table_case_inputs(mirror, doc, profile, cpu_curve, duty_tau_s)
    return scen, own or prof or profile


def loader_costs_in_situ(case, scen, base, cpu_curve):
    """Pure: the scenario with the case's own load and collate costs (`measured.in_situ`, timed inside its workers,
    or inside the main process with num_workers=0) in place of the probes'. base "table": brought to one idle core at
    the case's busy cores, by the curves the simulator applies (the dataset's own for the load), as the table's
    profile keeps the machine's curve (a main-process load as measured: see below); base "step": as measured, with no
    load curve. A cold case's wall includes the
    wait for the disk, which the simulator adds itself: its CPU time instead. The main process's collate (num_workers
    =0) is not into shared memory. Unchanged without both costs."""
    ins = case["measured"]["in_situ"]
    if not (ins.get("getitem_wall_s") and ins.get("collate_wall_s")):
        return scen
    scen = json.loads(json.dumps(scen))
    cold = case["knobs"].get("storage") == "cold"
    load_s = (ins.get("getitem_cpu_s") or ins["getitem_wall_s"]) if cold else ins["getitem_wall_s"]
    collate_s = ins["collate_wall_s"]
    workers = int(case["knobs"]["num_workers"])
    if base == "table" and workers > 0:
        # (with num_workers=0 the case's busy cores count torch's own threads inside the main process's decode,
        # which its in-situ time already holds and the simulated main thread, one core, does not slow again)
        busy = float(case["measured"].get("cpu_busy_cores") or 1.0)
        load_curve = scen["dataset"].get("load_speed_vs_busy_cores") or cpu_curve
        load_s *= convert.relative_core_speed(load_curve, busy)
        collate_s *= convert.relative_core_speed(cpu_curve, busy)
    scen["dataset"]["load_s_per_sample"]["mean"] = load_s
    scen["loader"]["collate_s_per_batch"] = collate_s
    if workers > 0:
        scen["loader"]["collate_in_shared_memory"] = True   # timed in the workers, into shared memory
    if base == "step":
        # in-situ costs already include the slowdown of the busy cores: no speed curve, neither the machine's nor the
        # dataset's own
        scen["dataset"].pop("load_speed_vs_busy_cores", None)
    return scen


def shuffled(series: Sequence[float], rng: random.Random) -> List[float]:
    """A worker's batch times in random order: the same values (its spread and shape), no memory from batch to
    batch."""
    out = list(series)
    rng.shuffle(out)
    return out


def pooled(per_worker: Sequence[Sequence[float]], rng: random.Random) -> List[List[float]]:
    """All workers' batch times shuffled together and dealt back in each worker's count: the same values, no
    memory and no worker of its own speed (what a wander common to no one and lasting no time would give)."""
    flat = [v for w in per_worker for v in w]
    rng.shuffle(flat)
    out, i = [], 0
    for w in per_worker:
        out.append(flat[i:i + len(w)])
        i += len(w)
    return out


def lognormal_like(series: Sequence[float], rng: random.Random, memory: bool = False) -> List[float]:
    """Lognormal draws with the series' own log mean and log sd (population), as many as it has: its level and spread,
    not its values' shape. memory: an AR(1) in batch count with the series' own lag-one (log, its mean out; kept in
    [0, 0.95]) instead of independent draws."""
    n = len(series)
    if n < 2:
        return list(series)
    y = [math.log(v) for v in series]
    mu = sum(y) / n
    sd = math.sqrt(sum((v - mu) ** 2 for v in y) / n)
    rho = 0.0
    if memory and sd > 0:
        rho = sum((y[t] - mu) * (y[t + 1] - mu) for t in range(n - 1)) / sum((v - mu) ** 2 for v in y)
        rho = min(0.95, max(0.0, rho))
    x, out = rng.gauss(0.0, 1.0), []
    for _ in range(n):
        out.append(math.exp(mu + sd * x))
        x = rho * x + math.sqrt(1.0 - rho * rho) * rng.gauss(0.0, 1.0)
    return out


def draw_phases(n: int, rng: random.Random) -> List[complex]:
    """Unit phases for a length-n real series' frequencies 1 .. (n - 1) // 2, drawn uniformly."""
    return [cmath.exp(1j * rng.uniform(0.0, 2.0 * math.pi)) for _ in range(1, (n + 1) // 2)]


def phase_randomized(series: Sequence[float], rng: random.Random,
                     phases: Optional[Sequence[complex]] = None) -> List[float]:
    """A surrogate with the series' memory and its values (amplitude-adjusted Fourier transform, Theiler et al.
    1992): the log times' discrete Fourier amplitudes kept, their phases drawn afresh (conjugate-symmetric, so the
    result is real), transformed back, and the original values put in that result's rank order. Its
    autocorrelation at every lag is the series' own up to the rank step; the values are exactly the series'.
    phases: given instead of drawn (draw_phases(len(series))): several series shifted by the same phases keep their
    cross-correlation (Prichard and Theiler 1994)."""
    n = len(series)
    if n < 4:
        return list(series)
    if phases is None:
        phases = draw_phases(n, rng)
    y = [math.log(v) for v in series]
    spec = [sum(y[t] * cmath.exp(-2j * math.pi * k * t / n) for t in range(n)) for k in range(n)]
    new = [0j] * n
    new[0] = spec[0]
    for k in range(1, (n + 1) // 2):
        new[k] = spec[k] * phases[k - 1]
        new[n - k] = new[k].conjugate()
    if n % 2 == 0:
        new[n // 2] = spec[n // 2]
    z = [(sum(new[k] * cmath.exp(2j * math.pi * k * t / n) for k in range(n)) / n).real for t in range(n)]
    order = sorted(range(n), key=lambda t: z[t])
    values = sorted(series)
    out = [0.0] * n
    for rank, t in enumerate(order):
        out[t] = values[rank]
    return out


def phase_randomized_joint(per_worker: Sequence[Sequence[float]], rng: random.Random) -> List[List[float]]:
    """phase_randomized with one draw of phases for all workers, over their common length (the batches past it, one
    or two in a round robin, stay at the end as measured): each worker keeps its memory and values, and the workers
    keep their correlation with one another batch by batch (the table's 8-worker batch_size cases: pair r 0.10-0.14,
    validation run 59)."""
    m = min(len(w) for w in per_worker)
    phases = draw_phases(m, rng)
    return [phase_randomized(w[:m], rng, phases) + list(w[m:]) for w in per_worker]


PARTS_LAGS = (1, 2, 3, 4, 6, 8, 12, 16)
RHO_SLOW_GRID = (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 0.995)


def pooled_autocorrelation(per_worker: Sequence[Sequence[float]], lags: Sequence[int]) -> Tuple[float, float,
                                                                                                 List[float]]:
    """Pure: the workers' log batch times around their common mean (not each worker's own, so a worker's level shows
    as memory that never decays): (that mean, their variance, the autocorrelation within each worker at each lag,
    pooled over workers)."""
    ys = [[math.log(v) for v in w] for w in per_worker]
    flat = [v for y in ys for v in y]
    mu = sum(flat) / len(flat)
    var = sum((v - mu) ** 2 for v in flat) / len(flat)
    acf = []
    for k in lags:
        num = sum((y[t] - mu) * (y[t + k] - mu) for y in ys for t in range(len(y) - k))
        cnt = sum(max(0, len(y) - k) for y in ys)
        acf.append(num / cnt / var if cnt and var > 0 else 0.0)
    return mu, var, acf


def fit_wander_parts(per_worker: Sequence[Sequence[float]], lags: Sequence[int] = PARTS_LAGS,
                     with_level: bool = True) -> Dict[str, float]:
    """Pure: three parts of the workers' log batch times counted in batches, fitted to their pooled autocorrelation
    (pooled_autocorrelation) by least squares on a grid: a level each worker keeps through the case (share l), a fast
    AR(1) (share f, lag-one rho_fast) and a slower one (the rest, rho_slow). Their memory counts batches: on the
    table's 8-worker batch_size cases the lag-one is 0.71 / 0.70 / 0.64 / 0.57 at b16 / b32 / b64 / b128 where batches
    last 0.08 to 0.65 s (validation run 59). with_level=False: no level (its share 0), the fast and slow parts only
    (validation-runs.md run 82, finding 3: with the level the in-order loss came out 1-2% too large)."""
    mu, var, acf = pooled_autocorrelation(per_worker, lags)
    best = (float("inf"), 0.0, 1.0, 0.0, 0.0)
    grid_share = [i / 20 for i in range(21)]
    for rf in [0.05 * i for i in range(0, 19)]:
        for rs in RHO_SLOW_GRID:
            if rs <= rf:
                continue
            for l in (grid_share if with_level else [0.0]):
                for f in grid_share:
                    if l + f > 1.0 + 1e-9:
                        continue
                    sl = 1.0 - l - f
                    err = sum((l + f * rf ** k + sl * rs ** k - r) ** 2 for k, r in zip(lags, acf))
                    if err < best[0]:
                        best = (err, l, f, rf, rs)
    _, l, f, rf, rs = best
    return {"log_mean": mu, "log_var": var, "level_share": l, "fast_share": f, "rho_fast": rf,
            "slow_share": max(0.0, 1.0 - l - f), "rho_slow": rs}


def parts_less_common(fit: Dict[str, float], common_share: float) -> Dict[str, float]:
    """Pure: fit_wander_parts' shares with common_share (of the log variance, in [0, 0.95]) taken out for a part all
    workers share, from the slow part first, then the level, then the fast part: the shares still sum to one with
    "common_share" beside them."""
    out = dict(fit)
    left = min(max(common_share, 0.0), 0.95)
    out["common_share"] = left
    for k in ("slow_share", "level_share", "fast_share"):
        take = min(out[k], left)
        out[k] -= take
        left -= take
    out["common_share"] -= left
    return out


def common_series(n: int, fit: Dict[str, float], rng: random.Random) -> List[float]:
    """The shared part's log offsets for batches 0..n-1 of every worker: a stationary AR(1) at the slow part's lag-one
    with fit["common_share"] of the log variance. Indexed by a worker's batch count: in order and round robin the
    workers' k-th batches run at about the same time."""
    sd = math.sqrt(fit["log_var"] * fit.get("common_share", 0.0))
    rho = fit["rho_slow"]
    x, out = sd * rng.gauss(0.0, 1.0), []
    for _ in range(n):
        out.append(x)
        x = rho * x + sd * math.sqrt(1.0 - rho * rho) * rng.gauss(0.0, 1.0)
    return out


def wander_parts_surrogate(per_worker: Sequence[Sequence[float]], fit: Dict[str, float],
                           rng: random.Random) -> List[List[float]]:
    """Each worker's batch times drawn from fit_wander_parts' three parts (Gaussian in log time; stationary AR(1)s
    started at their own spread), as many as it had: the case's memory and spread, each worker a level of its own
    drawn afresh. With fit["common_share"] (parts_less_common) a fourth part, common_series, is shared by all."""
    var = fit["log_var"]
    sd_l, sd_f, sd_s = (math.sqrt(var * fit[k]) for k in ("level_share", "fast_share", "slow_share"))
    shared = (common_series(max((len(w) for w in per_worker), default=0), fit, rng)
              if fit.get("common_share", 0.0) > 0.0 else None)
    out = []
    for w in per_worker:
        level = sd_l * rng.gauss(0.0, 1.0)
        a, b = sd_f * rng.gauss(0.0, 1.0), sd_s * rng.gauss(0.0, 1.0)
        series = []
        for k in range(len(w)):
            series.append(math.exp(fit["log_mean"] + level + a + b + (shared[k] if shared else 0.0)))
            a = fit["rho_fast"] * a + sd_f * math.sqrt(1.0 - fit["rho_fast"] ** 2) * rng.gauss(0.0, 1.0)
            b = fit["rho_slow"] * b + sd_s * math.sqrt(1.0 - fit["rho_slow"] ** 2) * rng.gauss(0.0, 1.0)
        out.append(series)
    return out


def with_pooled_values(drawn: Sequence[Sequence[float]], measured: Sequence[Sequence[float]]) -> List[List[float]]:
    """Pure: the measured batch times of all workers, pooled, put in the rank order of the drawn ones (pooled too):
    the draws' memory and levels, the case's own values (their fast skew, validation run 58, finding 3)."""
    flat = [(v, i, t) for i, w in enumerate(drawn) for t, v in enumerate(w)]
    values = sorted(v for w in measured for v in w)
    out = [list(w) for w in drawn]
    for rank, (_, i, t) in enumerate(sorted(flat)):
        out[i][t] = values[rank]
    return out


def set_wander_parts(cpu: Dict[str, Any], fit: Dict[str, float], per_worker: Sequence[Sequence[float]],
                     scen: Dict[str, Any], shape: Dict[str, Any], in_batches: bool = False) -> None:
    """fit_wander_parts in the simulator's two wander parts, whose memory is in seconds: each part's correlation time
    is the case's mean batch time over -ln(its lag-one), which counts the same batches while the workers are busy.
    The fast part takes the samples' own spread off (the simulator draws it per sample); the slow part holds the
    level too (a correlation of an hour). shape: the case's own log-speed sides (timeline own_wander), scaled to the
    fast part's spread, for the split normal."""
    flat = [v for w in per_worker for v in w]
    batch_s = sum(flat) / len(flat)
    load = scen["dataset"]["load_s_per_sample"]
    sample_var = math.log1p((math.sqrt(scen["loader"]["batch_size"]) * load["mean"] * float(load.get("cv") or 0.0)
                             / batch_s) ** 2)
    var = fit["log_var"]
    fast_var = max(0.0, var * fit["fast_share"] - sample_var)
    cpu["core_speed_cv"] = math.sqrt(math.expm1(fast_var))
    cpu["core_speed_correlation_s"] = batch_s / -math.log(fit["rho_fast"]) if 0 < fit["rho_fast"] < 1 else 1e-6
    level, slow = var * fit["level_share"], var * fit["slow_share"]
    cpu["core_speed_slow_cv"] = math.sqrt(math.expm1(level + slow))
    # one part for both: the share-weighted lag-one of the two, as a correlation time
    rho = (level + slow * fit["rho_slow"]) / (level + slow) if level + slow > 0 else 0.0
    cpu["core_speed_slow_correlation_s"] = min(3600.0, batch_s / -math.log(rho)) if 0 < rho < 1 else 3600.0
    for k in ("core_speed_fast_side", "core_speed_slow_side", "core_speed_cv_spread"):
        cpu.pop(k, None)
    if in_batches:
        # the same lag-ones as the workers' own count (cpu.core_speed_correlation_batches: N = -1 / ln(lag-one))
        cpu["core_speed_correlation_batches"] = (cpu["core_speed_correlation_s"] / batch_s
                                                 if cpu["core_speed_correlation_s"] > 1e-6 else 1e-6)
        # at most the profile's bound: a cap of 3,600 s over a batch of under 3.6 ms (tokens) is a part never forgotten
        cpu["core_speed_slow_correlation_batches"] = min(cpu["core_speed_slow_correlation_s"] / batch_s, 1e6)
    fast_side, slow_side, cv = shape.get("log_speed_fast_side"), shape.get("log_speed_slow_side"), shape.get("cv")
    if fast_side and slow_side and cv:
        keep = cpu["core_speed_cv"] / cv
        cpu["core_speed_fast_side"], cpu["core_speed_slow_side"] = fast_side * keep, slow_side * keep


def with_split_normal(drawn: Sequence[Sequence[float]], measured: Sequence[Sequence[float]]) -> List[List[float]]:
    """Pure: the drawn log times (Gaussian) standardised over all workers and put through a split normal of the
    measured pooled log times' own sides (p90 - median on the slow side, median - p10 on the fast side, over 1.2816)
    around their median: a parametric stand-in for with_pooled_values' empirical marginal."""
    logs = sorted(math.log(v) for w in measured for v in w)
    q = lambda p: logs[min(len(logs) - 1, int(p * len(logs)))]  # noqa: E731
    med, slow, fast = q(0.5), (q(0.9) - q(0.5)) / 1.2816, (q(0.5) - q(0.1)) / 1.2816
    flat = [math.log(v) for w in drawn for v in w]
    mu = sum(flat) / len(flat)
    sd = math.sqrt(sum((v - mu) ** 2 for v in flat) / len(flat)) or 1.0
    return [[math.exp(med + ((math.log(v) - mu) / sd) * (slow if v > math.exp(mu) else fast)) for v in w]
            for w in drawn]


SURROGATES = ("replay-shuffled", "replay-phase", "replay-phase-joint", "replay-parts", "replay-parts-values",
              "replay-parts-split", "replay-parts-common", "replay-pooled", "replay-lognormal", "replay-lognormal-ar1")


def timeline_worker_walls(case: Dict[str, Any]) -> Dict[int, List[float]]:
    """Pure: each worker's batch walls in the case's timeline (first __getitem__ to collate end; empty spans left
    out), by worker id."""
    workers = ((case.get("measured") or {}).get("timeline") or {}).get("workers") or {}
    return {int(w): [float(r[1]) - float(r[0]) for r in iv if float(r[1]) > float(r[0])]
            for w, iv in sorted(workers.items(), key=lambda kv: int(kv[0]))}


def call_walls_less(case: Dict[str, Any], cases: Sequence[Dict[str, Any]], min_batches: int = 8) -> List[List[float]]:
    """Pure: every worker series of the call's other cases of the same kind of load with a timeline (two workers or
    more), each case's walls over its own mean wall: a stand-in for a long loader probe measured beside the case in the
    same call, out of this case (validation run 61, Next: the parts and the shared part are too slow for its own
    1.5-4 s probes). Series shorter than min_batches are left out."""
    out = []
    for d in cases:
        if d is case or d.get("status") != "ok" or (d.get("knobs") or {}).get("kind") != case["knobs"].get("kind"):
            continue
        walls = [w for w in timeline_worker_walls(d).values() if len(w) >= min_batches]
        if len(walls) < 2:
            continue
        mean = statistics.fmean(v for w in walls for v in w)
        out.extend([[v / mean for v in w] for w in walls])
    return out


def call_common_share_less(case: Dict[str, Any], cases: Sequence[Dict[str, Any]]) -> Optional[float]:
    """The median of case_common_share over the call's other cases of the same kind of load (out of this case), or
    None without one."""
    shares = [case_common_share(d) for d in cases if d is not case and d.get("status") == "ok"
              and (d.get("knobs") or {}).get("kind") == case["knobs"].get("kind")
              and len(((d.get("measured") or {}).get("timeline") or {}).get("workers") or {}) >= 2]
    shares = [x for x in shares if x is not None]
    return statistics.median(shares) if shares else None


def repeat_walls(own: Dict[int, List[float]], donor: Dict[int, List[float]]) -> Dict[int, List[float]]:
    """Pure: a repeat's worker walls (donor) brought to this case's mean wall (own): the real process of the same
    setting (each worker's level, memory and spread) in another realisation, at this case's level, so that what a
    replay of the case's own walls gains beyond it is that realisation (run 60, finding 7)."""
    own_all = [v for w in own.values() for v in w]
    donor_all = [v for w in donor.values() for v in w]
    k = statistics.fmean(own_all) / statistics.fmean(donor_all)
    return {w: [k * v for v in walls] for w, walls in donor.items()}


def worker_level_cv(per_worker: Sequence[Sequence[float]]) -> Optional[float]:
    """Pure: the spread of the workers' own levels through a case (a cv), from their batch walls: the variance of
    the workers' mean log walls less what each worker's own spread would give a mean of its n batches with the pooled
    lag-one r1 (s^2 (1 + r1) / (1 - r1) / n, the AR(1) variance of a mean; validation-runs.md run 58, finding 5), 0
    when that is all of it. None with fewer than two workers of three batches or more."""
    logs = [[math.log(v) for v in w if v > 0] for w in per_worker]
    logs = [w for w in logs if len(w) >= 3]
    if len(logs) < 2:
        return None
    means = [statistics.fmean(w) for w in logs]
    dev = [[x - m for x in w] for w, m in zip(logs, means)]
    num = sum(d[i] * d[i + 1] for d in dev for i in range(len(d) - 1))
    den = sum(x * x for d in dev for x in d)
    r1 = min(max(num / den if den > 0 else 0.0, 0.0), 0.95)
    expected = statistics.fmean(statistics.pvariance(w) * (1 + r1) / (1 - r1) / len(w) for w in logs)
    level_var = max(statistics.variance(means) - expected, 0.0)
    return math.sqrt(math.exp(level_var) - 1.0)


PARTS_SURROGATES = ("replay-parts", "replay-parts-values", "replay-parts-split", "replay-parts-common")


def surrogate_replay(replay: Sequence[Dict[str, Any]], variant: str, rng: random.Random,
                     fit: Optional[Dict[str, float]] = None) -> List[Dict[str, Any]]:
    """Pure: loader.replay_worker_batches' entries with each worker's times replaced by the variant's surrogate.
    fit: the parts variants' fit_wander_parts of these times, where the caller draws several surrogates of them
    (computed here without it)."""
    if variant in PARTS_SURROGATES:
        per_worker = [r["batch_s"] for r in replay]
        drawn = wander_parts_surrogate(per_worker, fit or fit_wander_parts(per_worker), rng)
        if variant == "replay-parts-values":
            drawn = with_pooled_values(drawn, per_worker)
        elif variant == "replay-parts-split":
            drawn = with_split_normal(drawn, per_worker)
        return [dict(r, batch_s=b) for r, b in zip(replay, drawn)]
    if variant == "replay-phase-joint":
        return [dict(r, batch_s=b) for r, b in zip(replay, phase_randomized_joint([r["batch_s"] for r in replay], rng))]
    if variant == "replay-pooled":
        return [dict(r, batch_s=b) for r, b in zip(replay, pooled([r["batch_s"] for r in replay], rng))]
    if variant in ("replay-lognormal", "replay-lognormal-ar1"):
        return [dict(r, batch_s=lognormal_like(r["batch_s"], rng, variant.endswith("ar1"))) for r in replay]
    surrogate = shuffled if variant == "replay-shuffled" else phase_randomized
    return [dict(r, batch_s=surrogate(r["batch_s"], rng)) for r in replay]


def case_common_share(case: Dict[str, Any]) -> Optional[float]:
    """timeline_analysis.common_share of the case's workers' timeline (the share of their log-speed variance they
    show at the same time), or None without one."""
    workers = ((case["measured"].get("timeline") or {}).get("workers") or {})
    cs = timeline_analysis.common_share([iv for _, iv in sorted(workers.items(), key=lambda kv: int(kv[0]))])
    return cs["share"] if cs else None


def simulate_surrogates(binary: str, scen: Dict[str, Any], profile_path: str, tmp: str, variant: str, case_id: str,
                        seeds: int, common_share: float = 0.0) -> Dict[str, Any]:
    """Seed k simulates its own surrogate draw (seeded by the case, the variant and k), so the mean over seeds
    averages the surrogates' draws as well as the simulator's; as convert.simulate_replicated otherwise. One draw
    for all seeds had moved a batch size's median by 5-10 points (validation run 58, finding 8)."""
    paths = []
    replay = scen["loader"]["replay_worker_batches"]
    # the parts' fit is the case's, not the draw's: once for all seeds (a grid search)
    fit = fit_wander_parts([r["batch_s"] for r in replay]) if variant in PARTS_SURROGATES else None
    if variant == "replay-parts-common":
        fit = parts_less_common(fit, common_share)
    for k in range(1, seeds + 1):
        rng = random.Random(f"{case_id}:{variant}:{k}")
        s_k = json.loads(json.dumps(scen))
        s_k["loader"]["replay_worker_batches"] = surrogate_replay(replay, variant, rng, fit)
        paths.append(os.path.join(tmp, f"s{k}.json"))
        with open(paths[-1], "w") as f:
            json.dump(s_k, f)
    return convert.simulate_seeds(binary, paths, profile_path, 300)


def in_situ_transport(transport: Optional[Dict[str, Any]], in_situ: Dict[str, Any],
                      pinned: bool = True) -> Optional[Dict[str, Any]]:
    """Pure: the call's transport component as --base step gives it to a case: for a pinned case on its loops' CPU
    clock, as the table takes it (the pin thread's wall beyond its CPU, the fd hand-overs and waits, is the scenario's
    pin_thread_wait_s_per_batch, so the wall counted it twice: ninety-third session, run 86a's pin thread 21.4 ms a
    batch in situ against the case's 19.05 with its hand-overs; run 76a's pinned cases -8.2% / -8.4% in situ, +0.3% /
    -0.1% on the CPU clock); an unpinned case's receive in the loop keeps the wall, as it always had here (the
    scenario carries no wait for it). Then scaled to the case's own pin thread CPU a batch where both have it
    (harness since the pin-thread check of 2026-11-30: the main side in situ, as the workers' costs)."""
    if not transport:
        return None
    tr = convert.transport_on_cpu_clock(transport) if pinned else dict(transport)
    if in_situ.get("pin_thread_cpu_s_per_batch") and tr.get("pin_thread_cpu_s_per_batch"):
        tr = convert.transport_scaled(tr, in_situ["pin_thread_cpu_s_per_batch"] / tr["pin_thread_cpu_s_per_batch"])
    return tr


def step_base_profile(base_profile: Dict[str, Any], case: Dict[str, Any]) -> Dict[str, Any]:
    """The profile --base step simulates a case on: the call's, with the transport in situ (in_situ_transport)."""
    tr = in_situ_transport(case["components"].get("transport"), case["measured"].get("in_situ") or {},
                           pinned=bool((case.get("knobs") or {}).get("pin_memory")))
    if not tr:
        return base_profile
    return convert.transport_profile(base_profile, tr, float(case["components"]["collate"]["batch_bytes"]["mean"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir")
    ap.add_argument("--pipeplan", default=convert.REPO_PIPEPLAN)
    ap.add_argument("--seeds", type=int, default=8, help="seeds 1..N averaged, as convert.py (default %(default)s)")
    ap.add_argument("--wander", choices=["profile", "case", "case-shape", "case-level", "case-parts", "case-parts-shape",
                                          "probe-parts", "case-parts-batches", "probe-parts-batches", "call-parts-batches",
                                          "replay",
                                          "replay-repeat", "replay-shuffled", "replay-phase", "replay-phase-joint",
                                          "replay-parts", "replay-parts-values", "replay-parts-split",
                                          "replay-parts-common", "replay-pooled", "replay-lognormal", "replay-lognormal-ar1"],
                    default="profile",
                    help="the workers' wander: the profile's (default), or the case's own from its timeline "
                         "(cv less the samples' spread, and its correlation time): in situ too; case-level: as case, and each "
                         "worker's own level through the case (worker_level_cv) as a slow part it never forgets; "
                         "case-shape: as case, "
                         "and its log speed's fast and slow sides (timeline_analysis.wander_shape, scaled as the cv "
                         "by what the samples' spread leaves) as the profile's cpu.core_speed_fast_side / slow_side; "
                         "call-parts-batches: as case-parts-batches, fitted out of the case to the call's other cases of the same "
                         "load (call_walls_less: each over its own mean, at this case's probes' batch time); "
                         "replay: each worker plays back its own measured batch times in order "
                         "(loader.replay_worker_batches), so what is left is the rest of the pipeline; replay-repeat: "
                         "another repeat's of the same setting in the call, brought to this case's mean wall; "
                         "replay-shuffled: each worker's times in random order (their spread, no memory); "
                         "replay-phase: a surrogate with their memory and values (phase_randomized); replay-phase-joint: the same with one "
                         "draw of phases for all workers, keeping their correlation with one another; replay-pooled: "
                         "all workers' times shuffled together (pooled); replay-parts: the three parts fit_wander_parts finds in the "
                         "workers' own times, each worker drawn alone (wander_parts_surrogate); replay-parts-common: the "
                         "same with the share of the wander the workers show at the same time (timeline_analysis."
                         "common_share) a part they all share (parts_less_common); replay-lognormal / -ar1: each worker's own "
                         "log mean and sd, lognormal draws, independent or with its own lag-one (lognormal_like); "
                         "all seeded")
    ap.add_argument("--base", choices=["step", "table"], default="step",
                    help="what the in-situ costs replace: scenario_for's defaults, whose loop is the step component's "
                         "timed alone and whose transport is calibrate's (default, as every run's figure until run "
                         "20), or the case as the generated table builds it (the loop from the host probes, the "
                         "memory map, an unpinned loop's copy and release beside a live loader, the transport "
                         "measured): then only the workers' costs and the pin thread's are the case's own")
    ap.add_argument("--common-share", default=None,
                    help="the profile's cpu.core_speed_common_share for the simulator's own wander (not the replays): "
                         "'case' for the case's own (timeline_analysis.common_share of its workers' timeline), 'call' "
                         "for the median of the call's other cases of the same load (call_common_share_less: out of "
                         "the case), or a number (default: the profile's)")
    ap.add_argument("--family", default=None, help="only the cases of this family (default: all)")
    ap.add_argument("--pin-cv", choices=["profile", "case"], default="profile",
                    help="the pin thread's own spread (profile cpu.pin_thread_speed_cv): the profile's (default; absent, "
                         "the cores' wander), or the case's own, the cv of its pin cycle in its timeline "
                         "(timeline_analysis.case_pin_cycle_cv; harness --timeline)")
    ap.add_argument("--put-share", type=float, default=None,
                    help="with a replay: the key (loader.worker_s_per_batch) cut to this share, all of it run after "
                         "each replayed batch as its put, the rest dropped (the replayed walls hold it); default: the "
                         "whole key at the simulator's loader.worker_put_share (0.67 before the hand-off, the rest "
                         "after it; validation-runs.md run 79, finding 1); 1: the whole key before the hand-off, as "
                         "before the eighty-sixth session")
    ap.add_argument("--write-inputs", default=None, metavar="DIR",
                    help="also keep each case's scenario and profile as DIR/<case id>.scenario.json and "
                         ".profile.json, to simulate one again by hand (with --trace, say)")
    a = ap.parse_args()
    convert.exit_without_pipeplan("insitu_diagnostic", a.pipeplan)
    if a.put_share is not None and not 0.0 <= a.put_share <= 1.0:
        ap.error(f"--put-share {a.put_share}: expected a share in [0, 1]")
    if a.common_share not in (None, "case", "call"):
        try:
            if not 0.0 <= float(a.common_share) <= 0.95:
                raise ValueError
        except ValueError:
            ap.error(f"--common-share {a.common_share!r}: expected case, call or a number in [0, 0.95]")
    doc = convert.read_call_json(a.results_dir, "cases.json")
    base_profile = convert.read_call_json(a.results_dir, "profile.json")
    cpu_curve = (base_profile.get("cpu") or {}).get("speed_vs_busy_cores") or []
    duty_tau_s = convert.calls_duty_time_constant([(doc.get("components") or {}, base_profile)])
    errs, step_errs = [], []
    # the cases of each setting (replay-repeat: another repeat's walls stand in for the case's own)
    by_setting: Dict[str, List[Dict[str, Any]]] = {}
    for c in doc["cases"]:
        if c.get("status") == "ok":
            by_setting.setdefault(json.dumps(c["knobs"], sort_keys=True), []).append(c)
    with tempfile.TemporaryDirectory() as tmp:
        for c in doc["cases"]:
            if c.get("status") != "ok" or (a.family and c.get("family") != a.family):
                continue
            if a.base == "table":
                scen, prof = table_inputs_in_situ(c, doc, base_profile, cpu_curve, duty_tau_s)
            else:
                scen = convert.scenario_for(c, doc["machine"])
            cold = c["knobs"].get("storage") == "cold"
            scen = loader_costs_in_situ(c, scen, a.base, cpu_curve)
            if a.base == "step":
                prof = step_base_profile(base_profile, c)
            prof = json.loads(json.dumps(prof))
            if a.base == "step":
                prof.setdefault("cpu", {})["speed_vs_busy_cores"] = [{"busy_cores": 1, "relative_speed": 1.0}]
            if a.wander in ("case", "case-shape", "case-level"):
                # the workers' own wander as the case's timeline shows it (harness --timeline), less the
                # samples' own spread, as convert's probe_wander: in situ like the costs above
                own = ((convert._timeline(c) or {}).get("own_wander") or {})
                if own.get("cv") is not None:
                    load = scen["dataset"]["load_s_per_sample"]
                    prof["cpu"]["core_speed_cv"] = convert.wander_less_samples(
                        own["cv"], scen["loader"]["batch_size"], load["mean"], float(load.get("cv") or 0.0),
                        own.get("batch_s") or 0.0)
                    if own.get("correlation_s"):
                        prof["cpu"]["core_speed_correlation_s"] = min(float(own["correlation_s"]), 60.0)
                    fast, slow = own.get("log_speed_fast_side"), own.get("log_speed_slow_side")
                    if a.wander == "case-shape" and fast and slow and own["cv"] > 0:
                        keep = prof["cpu"]["core_speed_cv"] / own["cv"]  # the wander's share of the batches' spread
                        prof["cpu"]["core_speed_fast_side"] = fast * keep
                        prof["cpu"]["core_speed_slow_side"] = slow * keep
            if a.wander == "case-level":
                # the case's one part, and each worker's own level through the case as a slow part that a worker
                # never forgets (counted in batches); the pin and main threads' slow part is white at 1 us (run 60)
                level = worker_level_cv(list(timeline_worker_walls(c).values()))
                if level:
                    prof["cpu"].update(core_speed_slow_cv=level, core_speed_slow_correlation_batches=1e6,
                                       core_speed_slow_correlation_s=1e-6)
            if a.wander in ("case-parts", "case-parts-shape", "probe-parts", "case-parts-batches",
                            "probe-parts-batches", "call-parts-batches"):
                per_worker = list(timeline_worker_walls(c).values())
                if a.wander == "call-parts-batches":
                    # out of the case: the call's other cases of this load, each over its mean, brought to this
                    # case's probes' batch time (its level is the probes' as in the table)
                    level = [float(w["batch_s"]) for k in ("probe", "probe_after")
                             for w in [((c["components"].get(k) or {}).get("wander") or {})] if w.get("batch_s")]
                    scale = statistics.fmean(level) if level else statistics.fmean(v for w in per_worker for v in w)
                    per_worker = [[scale * v for v in w] for w in call_walls_less(c, doc["cases"])]
                if a.wander.startswith("probe-parts"):
                    # out of the case: its probes' raw walls (harness since run 59), each probe's workers a series
                    per_worker = [list(map(float, w)) for k in ("probe", "probe_after")
                                  for w in ((c["components"].get(k) or {}).get("worker_batch_s") or [])]
                per_worker = [w for w in per_worker if len(w) >= 8]
                if len(per_worker) >= 2:
                    set_wander_parts(prof["cpu"], fit_wander_parts(per_worker), per_worker, scen,
                                     ((convert._timeline(c) or {}).get("own_wander") or {}) if
                                     a.wander == "case-parts-shape" else {}, a.wander.endswith("-batches"))
            own_cv = (timeline_analysis.case_pin_cycle_cv(c["measured"].get("timeline") or {})
                      if a.pin_cv == "case" and c["knobs"].get("pin_memory") else None)
            if own_cv is not None:
                prof["cpu"]["pin_thread_speed_cv"] = round(min(own_cv, 2.0), 4)
            if a.common_share is not None:
                share = (case_common_share(c) if a.common_share == "case" else
                         call_common_share_less(c, doc["cases"]) if a.common_share == "call" else float(a.common_share))
                prof["cpu"]["core_speed_common_share"] = min(max(share or 0.0, 0.0), 0.95)
            if a.wander.startswith("replay"):
                # measured walls at the case's busy cores: brought to one idle core as the in-situ costs above, since
                # the simulator slows a worker's core by the machine's curve again (base table; base step has none)
                at_busy = (convert.relative_core_speed(cpu_curve, float(c["measured"].get("cpu_busy_cores") or 1.0))
                           if a.base == "table" else 1.0)
                source = timeline_worker_walls(c)
                if a.wander == "replay-repeat":
                    donors = [walls for walls in (timeline_worker_walls(d) for d in
                                                  by_setting.get(json.dumps(c["knobs"], sort_keys=True), []) if d is not c)
                              if any(walls.values())]
                    if not donors or not any(source.values()):
                        print(f"{c['id']}: no repeat of this setting with a timeline")
                        continue
                    # the repeat with the most batches, the likeliest to cover this case's window
                    source = repeat_walls(source, max(donors, key=lambda w: sum(map(len, w.values()))))
                replay = [{"worker": w, "batch_s": [at_busy * v for v in walls]} for w, walls in source.items()]
                replay = [r for r in replay if r["batch_s"] and r["worker"] < int(c["knobs"].get("num_workers") or 0)]
                if not replay:
                    print(f"{c['id']}: no worker timeline to replay")
                    continue
                scen["loader"]["replay_worker_batches"] = replay
                if a.put_share is not None and scen["loader"].get("worker_s_per_batch"):
                    # replayed, the key is only the put after each batch; the rest is dropped, not moved after the
                    # hand-off (loader.worker_put_share, set to 1 here), since the measured walls played back
                    # already hold it
                    scen["loader"]["worker_s_per_batch"] = round(scen["loader"]["worker_s_per_batch"] * a.put_share, 7)
                    scen["loader"]["worker_put_share"] = 1.0
                if int(c["knobs"].get("epochs", 1) or 1) == 1:
                    # the measured window and no more: padded to convert's 200 steps, a short case's few batches a
                    # worker would loop and a few seconds' speed would set the pace of the whole run (run 60, finding 1)
                    scen["training"]["steps"] = int(c["measured"]["skip"]) + int(c["measured"]["n_measured"])
            if cold:
                # the case's in-situ CPU holds the page-cache fill: none on top, set in the scenario, which overrides
                # the profile's one-thread figure and (since run 47) its worker processes' figure alike
                scen.setdefault("storage", {})["buffered_read_cpu_s_per_byte"] = 0.0
            sp, pp = os.path.join(tmp, "s.json"), os.path.join(tmp, "p.json")
            json.dump(scen, open(sp, "w"))
            json.dump(prof, open(pp, "w"))
            if a.write_inputs:
                os.makedirs(a.write_inputs, exist_ok=True)
                for src, kind in ((sp, "scenario"), (pp, "profile")):
                    shutil.copyfile(src, os.path.join(a.write_inputs, f"{c['id']}.{kind}.json"))
            if a.wander in SURROGATES:
                common = (case_common_share(c) or 0.0) if a.wander == "replay-parts-common" else 0.0
                out = simulate_surrogates(a.pipeplan, scen, pp, tmp, a.wander, c["id"], max(1, a.seeds), common)
            else:
                out = convert.simulate_replicated(a.pipeplan, sp, pp, 300, max(1, a.seeds))
            if "error" in out:
                print(f"{c['id']}: pipeplan failed: {out['error']}")
                continue
            rep = out["result"]
            wrapped = (rep.get("loader") or {}).get("replay_wrapped_batches") or 0
            if wrapped > int(c["knobs"].get("num_workers") or 0) * int(c["knobs"].get("prefetch_factor") or 2):
                # more than the slots in flight at the end: the replay looped (a timeline shorter than its window)
                print(f"{c['id']}: note: {wrapped} replayed batches past a worker's measured list (played again)")
            pred = rep["throughput"]["samples_per_s"]
            meas = c["measured"]["throughput_samples_per_s"]
            errs.append(abs(pred - meas) / meas)
            p90_meas_s = c["measured"]["step_time_s"]["p90"]
            p90_pred_s = rep["step_time_s"]["p90"]
            step_errs.append(abs(p90_pred_s - p90_meas_s) / p90_meas_s)
            print(f"{c['id'][:60]:60s} {meas:7.0f} {pred:7.0f} {100 * (pred - meas) / meas:+6.1f}%   "
                  f"p90 step {1e3 * p90_meas_s:6.1f} {1e3 * p90_pred_s:6.1f} ms {100 * (p90_pred_s - p90_meas_s) / p90_meas_s:+6.1f}%")
    if errs:
        print(f"throughput: median |err| {100 * statistics.median(errs):.1f}%, p90 {100 * convert.percentile(errs, 0.9):.1f}%; "
              f"p90 step time: median |err| {100 * statistics.median(step_errs):.1f}%, p90 {100 * convert.percentile(step_errs, 0.9):.1f}% "
              f"over {len(errs)} cases (in-situ costs: a diagnostic, not a prediction)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
