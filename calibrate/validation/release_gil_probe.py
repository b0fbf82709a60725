#!/usr/bin/env python3
"""Which part of freeing a worker's batch holds the GIL (validation-runs.md run 72, finding 5; run 73, finding 6).

The pin thread's release of a worker's shared-memory batch holds the GIL on the validation hosts: the loop's `.item()`
returns 4.0-8.6 ms after a pin_memory() end, about calibrate's release of the batch plus the receive's 0.48 ms, and
the simulator holds it so (`ipc.release_holds_gil`). Yet PyTorch releases the GIL around a tensor's destruction
(`THPVariable_clear`, pytorch#83623). The candidate: the storage's own Python object, which PyTorch keeps alive
beside a storage with other owners, drops the last reference (and so munmaps) in its dealloc, with the GIL held.
Measured in validation run 74 (two H100 leases, torch 2.11): so it is. The shared batch's free held the GIL for 0.74-0.89 of
its wall at 9.6, 38.5 and 154 MB, the storage object's free alone the same, the tensor's alone nothing (3 us), a
private tensor's free 0.03-0.23; with its pages read first the 38.5 MB free took 3.83 ms and held 3.34 (calibrate's
release of that batch on the lease: 3.9-4.2 ms).

This frees batches one at a time in the main thread (no pin thread, no training loop) while a GilProbe thread samples
how long a thread wanting the GIL waits, and reports for each kind of free its wall time and the GIL held per free:

  shared          a batch received from a DataLoader worker (shared memory), `del batch`
  shared_tensor   the same with its untyped_storage() kept: `del batch` frees the tensor alone
  shared_storage  then `del storage`: the storage object's own free, which unmaps
  shared_touched  a batch received as `shared`, every page read first (`t.sum()`, as pin_memory()'s copy reads them:
                  the unmap then tears down populated page tables), `del batch`
  private         a tensor of the same size made in this process (`torch.empty`, filled), `del t`
  idle            the same pauses with nothing freed (the probe's own floor)

A free that holds the GIL reads a held time about its wall; one that releases it, about the idle floor.

    python3 calibrate/validation/release_gil_probe.py [--mb 38.5] [--rounds 4] [--per-round 8] [--out FILE.json]

It needs torch, and no GPU. Validation device plan item 19 runs it on the GPU machine (its own call, about 60 s).
"""
import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Dict, List, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gil_probe import GilProbe  # noqa: E402

KINDS = ("idle", "shared", "shared_tensor", "shared_storage", "shared_touched", "private")
PAUSE_S = 0.003  # between two frees, so the probe thread wakes a few dozen times in each pause
# Below this wall a free's held/wall ratio is the probe's noise over nothing (run 74: a shared tensor whose storage
# is kept frees in 3 us and read -0.75), so the summary gives none.
MIN_WALL_FOR_RATIO_MS = 0.05


def summarise(walls_s: Dict[str, Sequence[float]], held_s: Dict[str, float], frees: Dict[str, int]
              ) -> Dict[str, Dict[str, Any]]:
    """Pure: per kind, the median wall of one free (ms), the GIL held per free (ms: the probe's held time over the
    kind's windows, less the idle kind's per pause, over its frees) and held over wall (None without a wall or with one
    under MIN_WALL_FOR_RATIO_MS)."""
    floor_ms = 1e3 * held_s.get("idle", 0.0) / max(1, frees.get("idle", 0))
    out: Dict[str, Dict[str, Any]] = {}
    for kind, walls in walls_s.items():
        n = max(1, frees.get(kind, 0))
        held_ms = 1e3 * held_s.get(kind, 0.0) / n - (0.0 if kind == "idle" else floor_ms)
        wall_ms = 1e3 * statistics.median(walls) if walls else None
        out[kind] = {"frees": frees.get(kind, 0), "wall_ms": wall_ms, "held_ms_per_free": held_ms,
                     "held_over_wall": (held_ms / wall_ms) if wall_ms and wall_ms >= MIN_WALL_FOR_RATIO_MS else None}
    return out


def report_lines(summary: Dict[str, Dict[str, Any]]) -> List[str]:
    """Pure: one line a kind."""
    lines = []
    for kind in KINDS:
        s = summary.get(kind)
        if not s:
            continue
        wall = "n/a" if s["wall_ms"] is None else f"{s['wall_ms']:.2f} ms"
        ratio = "" if s["held_over_wall"] is None else f" ({s['held_over_wall']:.2f} of the wall)"
        lines.append(f"{kind:15s} {s['frees']:3d} frees, wall {wall}, GIL held {s['held_ms_per_free']:.2f} ms a free{ratio}")
    return lines


def measure(mb: float, rounds: int, per_round: int) -> Dict[str, Any]:
    """The frees, timed (needs torch)."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    floats = int(mb * 1e6 / 4)

    class Batches(Dataset):
        def __len__(self):
            return 1 << 20

        def __getitem__(self, i):
            return torch.full((floats,), float(i % 7))

    walls: Dict[str, List[float]] = {k: [] for k in KINDS}
    held: Dict[str, float] = {k: 0.0 for k in KINDS}
    frees: Dict[str, int] = {k: 0 for k in KINDS}

    def window(kind: str, objects: List[Any]) -> None:
        # objects freed one at a time, a pause after each; the probe's held time over the window is the kind's
        with GilProbe() as probe:
            for _ in range(per_round):
                obj = objects.pop() if objects else None
                t0 = time.perf_counter()
                del obj
                t1 = time.perf_counter()
                if kind != "idle":
                    walls[kind].append(t1 - t0)
                time.sleep(PAUSE_S)
        held[kind] += probe.figures()["held_s"]
        frees[kind] += per_round

    # batch_size=None: each item goes to the main process as the worker made it (one tensor in shared memory)
    dl = DataLoader(Batches(), batch_size=None, num_workers=1, prefetch_factor=2, pin_memory=False)
    it = iter(dl)
    for _ in range(3):  # the worker's start-up
        next(it)
    for _ in range(rounds):
        window("idle", [])
        window("shared", [next(it) for _ in range(per_round)])
        got = [next(it) for _ in range(per_round)]
        storages = [t.untyped_storage() for t in got]
        window("shared_tensor", got)
        window("shared_storage", storages)
        touched = [next(it) for _ in range(per_round)]
        for t in touched:
            t.sum()  # fault every page in, as the pin thread's copy does
        window("shared_touched", touched)
        private = [torch.empty(floats).fill_(1.0) for _ in range(per_round)]
        window("private", private)
    del it, dl
    return {"torch": torch.__version__, "sharing_strategy": torch.multiprocessing.get_sharing_strategy(),
            "batch_mb": mb, "rounds": rounds, "per_round": per_round,
            "summary": summarise(walls, held, frees)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=38.5, help="the batch's size, MB (the validation's tensor_f32 b64: 38.5)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--per-round", type=int, default=8, help="frees of a kind in one window")
    ap.add_argument("--out", help="also write the figures as JSON")
    a = ap.parse_args(argv)
    for name, value, ok in (("--mb", a.mb, a.mb > 0), ("--rounds", a.rounds, a.rounds >= 1),
                            ("--per-round", a.per_round, a.per_round >= 1)):
        if not ok:
            print(f"release_gil_probe: {name} {value}: expected a positive number", file=sys.stderr)
            return 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print("release_gil_probe: needs torch (run it on the GPU machine: validation device plan item 19)",
              file=sys.stderr)
        return 3
    res = measure(a.mb, a.rounds, a.per_round)
    print(f"torch {res['torch']}, sharing strategy {res['sharing_strategy']}, {a.mb:g} MB batches")
    for line in report_lines(res["summary"]):
        print(line)
    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f, indent=1)
        os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
