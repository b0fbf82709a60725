#!/usr/bin/env python3
"""shape_probe: what a batch of a shape never seen before costs the harness's sequence step (validation run 63).

    python3 calibrate/validation/shape_probe.py --out $OUT/shape_probe.json   # on the GPU machine

Run 63's sequence cases (variable lengths, each batch padded to its longest row) took 100-150 ms of host time in the
step's launches where the step timed at fixed shapes took 10 ms; the steps that did take 10 ms were, it seems, those
whose padded length had come before. This probe times the step at lengths it has not seen (new) and again at the
same lengths (seen), for each scaled_dot_product_attention backend forced in turn (and the default choice), with
torch.backends.cudnn.benchmark off and on, at two batch sizes. Per setting: the host time of the call (until it
returns, the launches) and the wall to a sync, new against seen, median of the lengths tried.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--lengths", type=int, default=6, help="new lengths tried per setting")
    args = ap.parse_args()
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from harness import SequenceStep

    dev = types.SimpleNamespace(torch=torch, cpu=False, device=torch.device("cuda"))
    out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "settings": []}
    backends = [("default", None), ("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)]
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
        for name, be in backends:
            for rows in (16, 128):
                rec = {"backend": name, "cudnn_benchmark": bench, "rows": rows}
                try:
                    ctx = sdpa_kernel(be) if be is not None else _null()
                    with ctx:
                        model = SequenceStep(dev, 4)
                        for _ in range(3):
                            timed(model, rows, 256)
                        new_h, new_w, seen_h, seen_w = [], [], [], []
                        for _ in range(args.lengths):
                            length = next_len[0]
                            next_len[0] += 7
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
                    print(f"shape_probe: sdpa {name:9s} cudnn.benchmark {int(bench)} rows {rows:3d}: new length host "
                          f"{rec['new_host_s']*1e3:7.1f} ms wall {rec['new_wall_s']*1e3:7.1f}; seen host "
                          f"{rec['seen_host_s']*1e3:6.1f} wall {rec['seen_wall_s']*1e3:6.1f}", flush=True)
                except Exception as e:   # a forced backend that cannot run this shape says so and the rest go on
                    rec["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                    print(f"shape_probe: sdpa {name} cudnn.benchmark {int(bench)} rows {rows}: {rec['error']}",
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
