#!/usr/bin/env python3
"""shape_probe: what a batch of a shape never seen before costs the harness's sequence step (validation run 63).

    python3 calibrate/validation/shape_probe.py --out $OUT/shape_probe.json   # on the GPU machine

Run 63's sequence cases (variable lengths, each batch padded to its longest row) took 100-150 ms of host time in the
step's launches where the step timed at fixed shapes took 10 ms; the steps that did take 10 ms were, it seems, those
whose padded length had come before. This probe times the step at lengths it has not seen (new) and again at the
same lengths (seen), for each scaled_dot_product_attention backend forced in turn (and the default choice), with
torch.backends.cudnn.benchmark off and on, at two batch sizes. Per setting: the host time of the call (until it
returns, the launches) and the wall to a sync, new against seen, median of the lengths tried.

Since the sixty-eighth session, `--orders increasing,decreasing`: the same probe with its new lengths tried in
decreasing order as well. The harness's component tries its lengths in increasing order, each new one the longest
the process has run (a CUDA caching allocator that must grow for every one), where a case's padded lengths come in
random order after its longest; run 65's b16 component read 154 ms a new shape against 105 in situ (validation-runs.md
run 65, finding 1). `--backends default` keeps a call short.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

ORDERS = ("increasing", "decreasing")
BACKEND_NAMES = ("default", "cudnn", "flash", "efficient", "math")


def fresh_lengths(start: int, step: int, n: int, order: str) -> list:
    """Pure: n lengths from start, step apart, none used before (the caller moves start past them), in the order
    tried: increasing (each new one the longest so far) or decreasing (each new one shorter than all before)."""
    if order not in ORDERS:
        raise ValueError(f"order {order!r}: expected one of {', '.join(ORDERS)}")
    block = [start + step * i for i in range(n)]
    return block if order == "increasing" else block[::-1]


def parse_choices(text: str, allowed: tuple, what: str) -> list:
    """Pure: a comma list of names, each one of allowed, in the order given."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in names if x not in allowed]
    if bad or not names:
        raise ValueError(f"{what} {text!r}: expected a comma list of {', '.join(allowed)}")
    return names


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--lengths", type=int, default=6, help="new lengths tried per setting")
    ap.add_argument("--orders", default="increasing",
                    help="comma list of the orders new lengths are tried in: increasing, decreasing")
    ap.add_argument("--backends", default=",".join(BACKEND_NAMES),
                    help="comma list of scaled_dot_product_attention backends (default: all)")
    args = ap.parse_args()
    try:
        orders = parse_choices(args.orders, ORDERS, "--orders")
        wanted = parse_choices(args.backends, BACKEND_NAMES, "--backends")
    except ValueError as e:
        ap.error(str(e))
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from harness import SequenceStep

    dev = types.SimpleNamespace(torch=torch, cpu=False, device=torch.device("cuda"))
    out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "settings": []}
    backends = [("default", None), ("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)]
    backends = [b for b in backends if b[0] in wanted]
    next_len = [300]   # every setting gets lengths no other setting used: a cache shared between them cannot hide

    def timed(model, rows, length):
        ids = torch.randint(0, 8192, (rows, length), device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model(ids)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        return t1 - t0, t2 - t0

    for bench in (False, True):
        torch.backends.cudnn.benchmark = bench
        for (name, be), order, rows in itertools.product(backends, orders, (16, 128)):
            rec = {"backend": name, "cudnn_benchmark": bench, "rows": rows, "order": order}
            try:
                ctx = sdpa_kernel(be) if be is not None else _null()
                with ctx:
                    model = SequenceStep(dev, 4)
                    for _ in range(3):
                        timed(model, rows, 256)
                    new_h, new_w, seen_h, seen_w = [], [], [], []
                    tried = fresh_lengths(next_len[0], 7, args.lengths, order)
                    next_len[0] += 7 * args.lengths
                    for length in tried:
                        h, w = timed(model, rows, length)
                        new_h.append(h)
                        new_w.append(w)
                        h, w = timed(model, rows, length)
                        seen_h.append(h)
                        seen_w.append(w)
                rec.update({k: statistics.median(v) for k, v in
                            (("new_host_s", new_h), ("new_wall_s", new_w), ("seen_host_s", seen_h),
                             ("seen_wall_s", seen_w))})
                rec["new_host_all_s"] = new_h
                rec["lengths"] = tried
                print(f"shape_probe: sdpa {name:9s} cudnn.benchmark {int(bench)} rows {rows:3d} {order}: new length host "
                      f"{rec['new_host_s']*1e3:7.1f} ms wall {rec['new_wall_s']*1e3:7.1f}; seen host "
                      f"{rec['seen_host_s']*1e3:6.1f} wall {rec['seen_wall_s']*1e3:6.1f}", flush=True)
            except Exception as e:   # a forced backend that cannot run this shape says so and the rest go on
                rec["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                print(f"shape_probe: sdpa {name} cudnn.benchmark {int(bench)} rows {rows} {order}: {rec['error']}",
                      flush=True)
            out["settings"].append(rec)
            with open(args.out, "w") as f:
                json.dump(out, f, indent=1)
    return 0


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


if __name__ == "__main__":
    sys.exit(main())
