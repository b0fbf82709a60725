"""The training loop alone and beside a live DataLoader's workers, in short blocks in turn (torch-free).

Validation run 28, finding 4: the unpinned ResNet-50 loops launch 1.049x their host probes' time inside the case
(median of 28 cases, 0.94-1.19 at p10-p90; the ratio follows the throughput error at correlation 0.77), and the
pinned ones meet zero pin overlap at 1.10x. The probes run alone, minutes apart from the loop's in-case steps, and
the loop alone drifts 17-25 ms within a call (run 19), so a window run once beside the workers cannot tell a steady
slowdown (the workers' decode and collate on other cores taking the caches and memory bandwidth the loop's launches
need) from the drift. Here the loop runs in blocks, alone first and last, the beside blocks taking one batch a step
from the loader as the case does (the take outside the timed span), and each beside block is read against its two
alone neighbours (timeline_analysis.interleaved_host_ratio), so the drift cancels.

The catch (run 28's note): after a beside block the workers finish the batches already asked of them (prefetch_factor
x num_workers of them) into the next alone block. Each step therefore reads the workers' CPU time around its span
(/proc/<pid>/schedstat, nanoseconds; worker_cpu_s), and an alone block runs until it has `block_steps` steps with
the workers idle (under `idle_busy_workers` busy cores) or `max_alone_factor` x `block_steps` steps.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeplan_probe import workers_cpu_s as probe_workers_cpu_s  # noqa: E402  (torch-free)

IDLE_BUSY_WORKERS = 0.1          # busy cores of all workers together under which a step ran beside idle workers
BLOCK_STEPS = 16                 # steps a beside block; an alone block's steps clear of the workers
ROUNDS = 5                       # beside blocks, each between two alone blocks
MAX_ALONE_FACTOR = 4             # an alone block gives up after this many times BLOCK_STEPS steps


def process_cpu_s(pid: int, proc_root: str = "/proc") -> Optional[float]:
    """CPU seconds so far of a process's main thread from /proc/<pid>/schedstat (its first field, nanoseconds on a
    CPU: finer than /proc/<pid>/stat's 10 ms ticks, which a 25 ms step cannot use), or None where it cannot be read
    (not Linux, a kernel without schedstat, the process gone). A DataLoader worker does its work on its main thread
    (torch.set_num_threads(1) in the worker)."""
    try:
        with open(f"{proc_root}/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def workers_cpu_s(pids: Sequence[int], proc_root: str = "/proc") -> Optional[float]:
    """The workers' CPU seconds so far, summed (pipeplan_probe.workers_cpu_s with process_cpu_s's reading), or None
    when any of them cannot be read."""
    return probe_workers_cpu_s(pids, read=lambda pid: process_cpu_s(pid, proc_root))


def run_blocks(step: Callable[[], Any], finish: Callable[[Any], None], take: Callable[[], Any],
               cpu_s: Callable[[], Optional[float]], block_steps: int = BLOCK_STEPS, rounds: int = ROUNDS,
               idle_busy_workers: float = IDLE_BUSY_WORKERS, max_alone_factor: int = MAX_ALONE_FACTOR,
               clock: Callable[[], float] = time.perf_counter) -> List[Dict[str, Any]]:
    """Alone, beside, alone, ..., alone (`rounds` beside blocks). Each step: in a beside block `take()` a batch
    (and drop it) first; then the span `step()` (the loop's launches; its start to its return) with `cpu_s()` (the
    workers' CPU seconds so far) read just before and after; then `finish(out)` (the sync) outside the span.
    Returns the blocks in time order, {"beside": bool, "steps": [(start, end, busy_workers or None), ...]}, where
    busy_workers is the workers' CPU over the span's length (None where cpu_s() gives None). An alone block runs
    until it has `block_steps` steps under `idle_busy_workers`, or `max_alone_factor` x `block_steps` steps; without
    CPU readings it runs 2 x `block_steps` (timeline_analysis.interleaved_host_ratio then keeps the second half)."""
    blocks: List[Dict[str, Any]] = []
    for i in range(2 * rounds + 1):
        beside = i % 2 == 1
        steps: List[tuple] = []
        clear = 0
        while True:
            if beside:
                batch = take()
                del batch
            c0 = cpu_s()
            h0 = clock()
            out = step()
            h1 = clock()
            c1 = cpu_s()
            finish(out)
            busy = (c1 - c0) / (h1 - h0) if c0 is not None and c1 is not None and h1 > h0 else None
            steps.append((h0, h1, busy))
            if beside:
                if len(steps) >= block_steps:
                    break
                continue
            if busy is not None and busy < idle_busy_workers:
                clear += 1
            if busy is None and len(steps) >= 2 * block_steps:
                break
            if clear >= block_steps or len(steps) >= max_alone_factor * block_steps:
                break
        blocks.append({"beside": beside, "steps": steps})
    return blocks
