"""Does a host-bound loop launch slower without a per-step sync? (validation-runs.md run 26, finding 1)

Run 26's GIL call measured the pinned ResNet-50 loop beside 8 workers 7% slower with no sync (sync_every 0:
1,659 and 1,618 samples/s) than with a loss.item() every step (1,773 and 1,752), its launches 2.5-3.2 ms a step
dearer at the same overlap with the pin thread's pin_memory() calls. This check separates the loop from the loader:
blocks of steps alternating sync every step / no sync, first on a batch already on the GPU (no DataLoader), then
each step taking a batch from a pinning DataLoader (cached 3x224x224 float32 samples, as the harness's tensor_f32
kind) and copying it non_blocking. Per block: the mean of each step's launches (step start to its last launch
returned, perf_counter) and the block's wall a step. Prints one line a block and writes a JSON summary.

    python3 calibrate/validation/sync_check.py --out sync_check.json [--blocks 8 --steps 40 --workers 8]

CPU-only smoke test (a small model, no GPU): --device cpu --model resnet18 --batch-size 4 --steps 3 --blocks 2
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


class Cached:
    """n cached samples of 3x224x224 float32 (602,112 bytes), as the harness's tensor_f32 kind."""

    def __init__(self, n: int):
        import torch
        self.x = [torch.randn(3, 224, 224) for _ in range(16)]
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.x[i % len(self.x)].clone()


def run_block(step, batches, sync_each: bool, n: int, device: str):
    import torch
    launches = []
    t0 = time.perf_counter()
    for _ in range(n):
        x = next(batches)
        x = x.to(device, non_blocking=True).contiguous(memory_format=torch.channels_last)
        s0 = time.perf_counter()            # the launches alone, as the harness's cases time them
        loss = step(x)
        launches.append(time.perf_counter() - s0)
        if sync_each:
            float(loss.item())
        del x
    if device == "cuda":
        torch.cuda.synchronize()
    return {"sync_each_step": sync_each, "launches_s": statistics.fmean(launches),
            "launches_p50_s": statistics.median(launches), "wall_per_step_s": (time.perf_counter() - t0) / n}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--blocks", type=int, default=8, help="blocks per part, alternating sync / no sync")
    ap.add_argument("--steps", type=int, default=40, help="steps per block")
    a = ap.parse_args(argv)
    import torch
    from torch.utils.data import DataLoader
    if a.device == "cuda" and not torch.cuda.is_available():
        print("sync_check: no CUDA device", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from example_step import train_step
    step = train_step(a.model, a.device, a.batch_size)
    resident = torch.randn(a.batch_size, 3, 224, 224, device=a.device)

    def on_gpu():
        while True:
            yield resident
    out = {"model": a.model, "batch_size": a.batch_size, "workers": a.workers, "parts": {}}
    parts = [("resident", lambda: on_gpu())]
    if a.workers > 0:
        dl = DataLoader(Cached(10 ** 7), batch_size=a.batch_size, num_workers=a.workers, prefetch_factor=2,
                        pin_memory=a.device == "cuda", shuffle=False, drop_last=True)
        it = iter(dl)
        parts.append(("pinning_loader", lambda: it))
    for name, src in parts:
        g = src()
        run_block(step, g, True, 5, a.device)          # warm-up (cudnn, the loader's prefetch)
        blocks = []
        for b in range(a.blocks):
            r = run_block(step, g, b % 2 == 0, a.steps, a.device)
            blocks.append(r)
            print(f"{name:15s} block {b}: sync {'each step' if r['sync_each_step'] else 'none     '} launches "
                  f"{r['launches_s'] * 1e3:7.2f} ms (p50 {r['launches_p50_s'] * 1e3:7.2f}), wall "
                  f"{r['wall_per_step_s'] * 1e3:7.2f} ms a step", flush=True)
        s1 = [r["launches_s"] for r in blocks if r["sync_each_step"]]
        s0 = [r["launches_s"] for r in blocks if not r["sync_each_step"]]
        w1 = [r["wall_per_step_s"] for r in blocks if r["sync_each_step"]]
        w0 = [r["wall_per_step_s"] for r in blocks if not r["sync_each_step"]]
        out["parts"][name] = {"blocks": blocks, "launches_sync_s": statistics.fmean(s1),
                              "launches_nosync_s": statistics.fmean(s0), "wall_sync_s": statistics.fmean(w1),
                              "wall_nosync_s": statistics.fmean(w0)}
        print(f"{name}: launches {statistics.fmean(s1) * 1e3:.2f} ms with a sync each step, "
              f"{statistics.fmean(s0) * 1e3:.2f} ms without; wall {statistics.fmean(w1) * 1e3:.2f} / "
              f"{statistics.fmean(w0) * 1e3:.2f} ms a step", flush=True)
    with open(a.out + ".tmp", "w") as f:
        json.dump(out, f, indent=1)
    os.replace(a.out + ".tmp", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
