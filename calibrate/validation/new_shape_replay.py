#!/usr/bin/env python3
"""new_shape_replay: each step of a sequence case, new batch shape or seen, replayed from the batches the harness
actually ran, against the step's measured launch (validation run 63).

    python3 calibrate/validation/new_shape_replay.py calibrate/validation/results/2026-12-05-h200-run63seq

new_shape_diagnostic.py simulates a dataset of the same law; this replays the call's own batches. The harness's
tokens dataset is a fixed draw (gen_tokens: numpy's default_rng(77)), so its lines' lengths are known
(`token_lengths.json` in the result folder, re-drawn with numpy; its mean and longest must match what the call
recorded), and every sampler in the harness is Python's seeded `random` (IndexSampler, time_getitem), so the index
order of each batch the process ran is known too. The process's plan cache is keyed by the batch's shape (rows,
padded length); a shape is new the first time the process runs it:
  - before the case: the step fit's shapes (its component's points), the components' resident batch (sample_batch: the
    first rows of comp_load's kept samples), host_beside_loader's case-like window where the case has that component
    (30 steps on the batches of IndexSampler(n, seed=7) after 2 x num_workers dropped), and every step of the cases
    before it in the call;
  - in the case: its own batches, IndexSampler(n, seed=index + 17 x repeat), bs lines each, padded to their longest.
Per case: the measured window's steps split into slow and fast launches (new_shape_diagnostic's split), against new
and seen; the agreement says whether the plan cache keyed by shape is the whole effect. Pad-to-max cases have one
shape and are listed for completeness.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from convert import read_json, stored_json_path  # noqa: E402
from new_shape_diagnostic import split_new_shapes  # noqa: E402
from sequence_fit import component_fit, fitted_step_s  # noqa: E402

# harness.py's constants this replays (kept equal by test_new_shape.py); the step fit's shapes are read from each
# call's own sequence_step_shapes component (they grew in the sixty-third session)
HOST_WINDOW_STEPS = 30          # _loop_on_a_gpu_batch's window (full mode)
LOAD_SAMPLES = {"tokens": 400, "tokens_pad512": 400}
LOAD_KEEP, LOAD_WARMUP, LOAD_SEED = 128, 5, 11
SEQ_PAD_MAX_TOKENS = 512


def index_order(n: int, seed: int) -> Iterator[int]:
    """Pure: harness.IndexSampler(n, length, seed)'s first iteration, without its length cut: seeded permutations of
    range(n) back to back."""
    rng = random.Random(seed * 1000003 + 0)
    while True:
        perm = list(range(n))
        rng.shuffle(perm)
        yield from perm


def batch_shapes(lengths: Sequence[int], order: Iterator[int], rows: int, batches: int,
                 pad_to: int = 0) -> List[Tuple[int, int]]:
    """Pure: the (rows, padded length) of `batches` batches of `rows` consecutive indices from `order`: padded to
    their longest (pad_collate), or to `pad_to` (PadToMaxCollate)."""
    out = []
    for _ in range(batches):
        longest = max(lengths[next(order)] for _ in range(rows))
        out.append((rows, pad_to if pad_to else longest))
    return out


def kept_lengths(lengths: Sequence[int], kind: str) -> List[int]:
    """Pure: the lengths of comp_load's kept samples (time_getitem: Random(11).sample of warm-up + timed indices,
    the first 128 timed kept), whose first rows make sample_batch's resident batch."""
    n = len(lengths)
    total = LOAD_WARMUP + LOAD_SAMPLES.get(kind, 300)
    idx = random.Random(LOAD_SEED).sample(range(n), total) if total <= n else None
    if idx is None:
        rng = random.Random(LOAD_SEED)
        idx = [rng.randrange(n) for _ in range(total)]
    return [lengths[i] for i in idx[LOAD_WARMUP:LOAD_WARMUP + LOAD_KEEP]]


def resident_shape(lengths: Sequence[int], kind: str, rows: int) -> Tuple[int, int]:
    kept = kept_lengths(lengths, kind)
    longest = max(kept[j % len(kept)] for j in range(rows))
    return rows, SEQ_PAD_MAX_TOKENS if kind == "tokens_pad512" else longest


def replay_case(case: Dict[str, Any], lengths: Optional[Sequence[int]], seen: Set[Tuple[int, int]],
                components: bool = True) -> Optional[Dict[str, Any]]:
    """Adds to `seen` what the process ran for this case (its components' batches unless not `components`, then its
    steps); returns the warm shapes before its steps, each step's shape and whether it was new, the steps run, and
    the measured window's split. What the harness recorded (the case's sequence_shapes_run_before, its timeline's padded_length a step;
    since the sixty-third session) is taken as is; what it did not is rebuilt from the lines' `lengths`. None where
    neither is there."""
    k, comp, m = case["knobs"], case.get("components") or {}, case.get("measured") or {}
    bs, nw, kind = int(k["batch_size"]), int(k["num_workers"]), k["kind"]
    pad_to = SEQ_PAD_MAX_TOKENS if kind == "tokens_pad512" else 0
    tl = m.get("timeline") or {}
    main = tl.get("main") or {}
    launched = main.get("launched") or []
    steps_run = len(launched)
    recorded_before, recorded_steps = comp.get("sequence_shapes_run_before"), main.get("padded_length")
    if lengths is None and (recorded_before is None or recorded_steps is None):
        return None
    if recorded_before is not None and components:
        seen.clear()
        seen.update((int(b), int(n)) for b, n in recorded_before)
    elif components:
        seen.update((int(p["rows"]), int(p["tokens"]))
                    for p in (comp.get("sequence_step_shapes") or {}).get("points") or [])
        seen.add(resident_shape(lengths, kind, bs))
        if comp.get("host_beside_loader"):
            order = index_order(len(lengths), 7)
            for _ in range(2 * nw * bs):        # the batches taken before the window, not stepped on
                next(order)
            seen.update(batch_shapes(lengths, order, bs, HOST_WINDOW_STEPS, pad_to))
    warm_before = sorted(seen)
    if recorded_steps is not None:
        shapes = [(bs, int(x)) for x in recorded_steps]
    else:
        seed = int(case.get("index", 0)) + 17 * int(case.get("repeat", 0))
        shapes = batch_shapes(lengths, index_order(len(lengths), seed), bs, steps_run, pad_to)
    new = []
    for s in shapes:
        new.append(s not in seen)
        seen.add(s)
    skip = int(tl.get("skip") or m.get("skip") or 0)
    spans = [(b - a) if a is not None and b is not None else None
             for a, b in zip(main.get("copied") or [], launched)]
    window = [(sp, nw_) for sp, nw_ in zip(spans[skip:], new[skip:]) if sp is not None]
    share, _ = split_new_shapes([sp for sp, _ in window])
    out = {"warm_before": warm_before, "shapes": shapes, "new": new, "steps": steps_run, "window": len(window),
           "new_share": sum(x for _, x in window) / max(1, len(window)), "slow_share": share,
           "source": "recorded" if recorded_steps is not None else "rebuilt from the lines"}
    if window and share > 0:
        s = sorted(sp for sp, _ in window)
        lo, hi = s[int(0.05 * (len(s) - 1))], s[int(0.95 * (len(s) - 1))]
        cut = (lo * hi) ** 0.5
        out["both"] = sum(1 for sp, x in window if sp > cut and x)
        out["slow_seen"] = sum(1 for sp, x in window if sp > cut and not x)
        out["fast_new"] = sum(1 for sp, x in window if sp <= cut and x)
        out["fast_seen"] = sum(1 for sp, x in window if sp <= cut and not x)
    return out


def insitu_overlap_fraction(case: Dict[str, Any], replayed: Dict[str, Any]) -> Optional[float]:
    """The share of a new shape's step GPU time that ran while its plans built, in the case itself (a diagnostic's
    input, not out of sample), as the simulator reads it (a new step's wall to its sync is the build plus the rest of
    the GPU time: C + (1 - f) g): C, the launches' extra on new steps (median launch, new less seen), less the new
    steps' wall beyond their GPU time (median of launch + wait to the sync less the fitted GPU time), over the new
    steps' median fitted GPU time. None without a split or the step's fit."""
    m = case.get("measured") or {}
    main = (m.get("timeline") or {}).get("main") or {}
    shapes = (case.get("components") or {}).get("sequence_step_shapes") or {}
    fit = component_fit(shapes)
    if not fit or "synced" not in main:
        return None
    skip = int((m.get("timeline") or {}).get("skip") or m.get("skip") or 0)
    rows: Dict[bool, List[Tuple[float, float, float]]] = {True: [], False: []}
    for i, (shape, is_new) in enumerate(zip(replayed["shapes"], replayed["new"])):
        if i < skip or i >= len(main["synced"]) or None in (main["copied"][i], main["launched"][i], main["synced"][i]):
            continue
        g = fitted_step_s(fit, shape[0], shape[1])
        launch = main["launched"][i] - main["copied"][i]
        rows[is_new].append((launch, main["synced"][i] - main["copied"][i] - g, g))
    if len(rows[True]) < 5 or len(rows[False]) < 5:
        return None
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    cost = med([x[0] for x in rows[True]]) - med([x[0] for x in rows[False]])
    extra = med([x[1] for x in rows[True]])
    g_new = med([x[2] for x in rows[True]])
    return min(1.0, max(0.0, (cost - extra) / g_new)) if g_new > 0 else None


def read_lengths(results: str, doc: Dict[str, Any]) -> Optional[List[int]]:
    """The dataset's lines' lengths (token_lengths.json beside the call), checked against what the call recorded."""
    path = os.path.join(results, "token_lengths.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lengths = [int(x) for x in json.load(f)["lengths"]]
    rec = ((doc.get("datasets") or {}).get("tokens") or {}).get("tokens_per_sample") or {}
    mean, top = sum(lengths) / len(lengths), max(lengths)
    if rec and (len(lengths) != int(rec.get("n", len(lengths))) or abs(mean - float(rec["mean"])) > 1e-6
                or top != int(rec.get("max", top))):
        raise ValueError(f"{path}: {len(lengths)} lines, mean {mean}, longest {top}; the call recorded "
                         f"{rec.get('n')}, {rec.get('mean')}, {rec.get('max')}: not the call's dataset")
    return lengths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--without-components", action="store_true",
                    help="leave out the components' batches before each case (what they add to the agreement)")
    a = ap.parse_args()
    doc = read_json(stored_json_path(os.path.join(a.results, "cases.json")))
    try:
        lengths = read_lengths(a.results, doc)
    except ValueError as e:
        print(f"new_shape_replay: {e}", file=sys.stderr)
        return 2
    seen: Set[Tuple[int, int]] = set()
    print(f"{'case':60s} {'steps':>5s} {'window':>6s} {'new':>5s} {'slow':>5s}  slow&new slow&seen fast&new fast&seen")
    for case in doc.get("cases") or []:
        if not str((case.get("knobs") or {}).get("step", "")).startswith("seq:") or case.get("status") != "ok":
            continue
        r = replay_case(case, lengths, seen, components=not a.without_components)
        if r is None:
            print(f"{case['id'][:60]:60s} neither recorded shapes nor token_lengths.json (the tokens dataset's "
                  f"lines' lengths in file order) beside cases.json")
            continue
        tail = (f"  {r['both']:8d} {r['slow_seen']:9d} {r['fast_new']:8d} {r['fast_seen']:9d}" if "both" in r else "")
        print(f"{case['id'][:60]:60s} {r['steps']:5d} {r['window']:6d} {r['new_share']:5.2f} {r['slow_share']:5.2f}"
              + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
