#!/usr/bin/env python3
"""pipeplan_probe: measure a Dataset's per-sample and per-batch costs for pipeplan.

Wraps your own Dataset (anything with __len__ and __getitem__) and collate_fn, measures on
this machine, in this one process, what pipeplan's scenario needs:

  dataset.load_s_per_sample     mean and cv of one __getitem__ (read + decode + augment)
  dataset.item_bytes            bytes of one sample as collated into the batch
  dataset.num_samples           len(dataset)
  dataset.sample_bytes          bytes read from storage per sample (only if you say how:
                                --sample-bytes N or a sample_bytes_fn)
  loader.collate_s_per_batch    CPU time of collate_fn for one batch

With torch installed, __getitem__ and collate are also timed inside ONE DataLoader worker
(a forked process writing its batches into fresh shared memory), and those means go into the
fragment: that is what a worker pays (docs/validation.md). With --num-workers K (your
DataLoader's), they are also timed with K workers loading at once, and the fragment takes the
per-sample cost at K with dataset.load_speed_vs_busy_cores relative to it: one worker samples one
core, whose speed on a VM can be 20% off the average of K (validation runs 6 and 7).

and writes them as a scenario fragment (JSON) to merge into a pipeplan scenario. With --cold (root, or
--cold-files naming the dataset's files) it also times __getitem__ with the page cache dropped, one reader, and with
--profile (pipeplan calibrate's) writes storage.read_latency_s: a cold file's wait beyond its bytes at the profile's
one-reader stream rate (cold_read_latency_s; the validation's cold cases take theirs the same way). With --open-files
(and --samples-per-file for shards) it times the files' open alone and writes storage.open_latency_s, the open's
wait on a network file system (time_opens), moved out of the per-sample cost.

Method. Samples are drawn at random (seeded) without replacement; the first few calls are
a warm-up and are not counted (imports, caches, lazy file handles). Each __getitem__ is
timed alone with time.perf_counter. Torch, when present, is limited to one intra-op thread
(torch.set_num_threads(1)) as it is inside a DataLoader worker. Collate is timed on batches
of the measured samples. Every mean is reported with its coefficient of variation and its
standard error (stddev / sqrt(n)): a few hundred samples can still be 5-20% off for
heavy-tailed datasets, so look at stderr_rel before trusting the third digit.

Use as a module:

    from pipeplan_probe import probe, scenario_fragment
    res = probe(my_dataset, collate_fn=my_collate, batch_size=64, n_samples=300)
    print(json.dumps(scenario_fragment(res), indent=2))

or as a script:

    python3 pipeplan_probe.py --dataset mypkg.data:make_dataset [--collate mypkg.data:collate] \
        --batch-size 64 --samples 300 --out fragment.json

where make_dataset is a callable returning the Dataset (or the Dataset object itself).
Nothing here needs a GPU; torch is only needed for torch's default_collate.

Your training step (--step mypkg.train:make_step, or time_step and training_fragment as a module): make_step()
returns a function of no arguments that runs one step on a batch already on the device and returns the loss.
Timed in a plain loop that syncs each step (loss.item()): each call's launches (training.host_s_per_step), the
loop's wall a step, and with CUDA the step's GPU time alone (training.step_s), the stream held by a spin kernel
while the launches queue. Where the launches outlast the GPU step, the loop's wall less the launches is the GPU
work launched last that a sync waits for (training.launch_tail_s; docs/validation-runs.md, run 25).

New batch shapes (--shape-step mypkg.train:make_shape_step, or time_new_shapes and new_shape_fragment as a module):
make_shape_step() returns a function of (rows, length) that runs one step on a batch of that shape (a dummy batch is
fine) and returns the loss. At 16 lengths spread over the upper half of your dataset's lengths (--lengths, or the
timed samples' with --sequence), each on a shape never run and then again: a step on a new shape builds its kernel
plans first (cuDNN's attention graphs, cudnn.benchmark, torch.compile's recompiles; 100-150 ms on the H200 with
scaled_dot_product_attention, validation run 63), and the median extra host time is sequence.new_shape_host_s.
Then the step by shape (time_step_shapes, step_shapes_fragment): the batch's rows, twice and four times them
(--shape-fit-rows for a sweep's own batch sizes; a shape out of GPU memory is left out) at four of the dataset's
lengths (25th, 50th, 90th and 99th percentiles), each timed after one untimed step on its shape, fitted as
the validation fits its decoder (sequence_fit: fixed + per position + per squared row length, with a latency floor
where it earns one); the fragment's training.step_s is then the fit's fixed part, and sequence.step_s_per_token,
step_s_per_token_squared and step_s_floor the rest, since a step timed on one batch is one shape's (validation run 65,
finding 3: at b128 one batch 40% longer than the job's mean).

The memory map (--memory-map, with --step, --dataset and --num-workers K): a Python-heavy step (a ResNet-50's) slows
while PyTorch's pin thread maps, touches and unmaps the workers' batches. Your step runs in blocks of 8 alone and 8
beside a thread that takes each batch from DataLoader(your dataset, K workers, pin_memory=False) and pin_memory()s
it, in turn: each beside block against its two alone neighbours gives the loop's loss per second of that work inside
its steps. The loop needs the map where those blocks run slower than alone at 95% and the loss is under the work's own
time (a light loop loses more: the interpreter lock behind the receive) (training.host_needs_memory_map,
memory_map_wait_s; docs/scenario.md). Blocks beside the receive alone (the batch taken and dropped) alternate with
them and say how much of the loss comes with the receive. The validation
harness's same probe read 0.73 / 0.84 / 0.92 where the real pinned cases' own timelines read 0.73-0.79 / 0.89 / 0.79
(docs/validation-runs.md, run 28). Needs CUDA.

The loop's own side (--main-loop, with --dataset and --num-workers K): DataLoader(your dataset, K workers,
pin_memory=True) in four windows, drop, copy, drop, copy: the loop thread's CPU a batch in the drop windows is its
Python in next() (loader.main_next_s_per_batch), each copy window's median .to(device, non_blocking=True) call its
copy call (transfer.copy_call_s_per_batch). A loop that syncs every step leaves the GPU idle for both (validation
runs 42 and 43). Over the same windows it times the receive's file-descriptor hand-overs (each DupFd.detach() in the
pin thread waits for the sending worker): their wall less CPU is the pin thread's time off its core a batch, which
the validation table reads from its probes by default since run 86; --pin-wait-from-hand-overs writes it as
loader.pin_thread_wait_s_per_batch (off by default: on run 68's job it took the prediction from -6.5% / -7.9% to
-9.5% / -10.9%, validation-runs.md run 87, finding 3). Needs CUDA.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import math
import os
import random
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

__all__ = ["summarize", "nbytes_of", "time_getitem", "time_collate", "time_in_worker", "process_cpu_s", "probe",
           "insitu_diff", "workers_cpu_s", "workers_cpu_per_batch", "json_default",
           "scenario_fragment", "load_callable", "time_step", "gpu_step_time_s", "training_fragment",
           "merge_fragments", "scenario_with", "time_step_beside_pin", "memory_map_fragment", "tensors_in"]


# ----------------------------------------------------------------------------- statistics
def summarize(xs: Sequence[float]) -> Dict[str, float]:
    """mean, sample stddev, cv, standard error of the mean, p50, p90, min, max, n."""
    n = len(xs)
    if n == 0:
        return {"n": 0, "mean": float("nan"), "std": float("nan"), "cv": float("nan"),
                "stderr": float("nan"), "stderr_rel": float("nan"), "p50": float("nan"),
                "p90": float("nan"), "min": float("nan"), "max": float("nan")}
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    std = math.sqrt(var)
    s = sorted(xs)
    stderr = std / math.sqrt(n)
    return {"n": n, "mean": mean, "std": std,
            "cv": std / mean if mean > 0 else float("nan"),
            "stderr": stderr, "stderr_rel": stderr / mean if mean > 0 else float("nan"),
            "p50": _quantile(s, 0.5), "p90": _quantile(s, 0.9),
            "min": s[0], "max": s[-1]}


def _quantile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default 'linear')."""
    n = len(sorted_xs)
    if n == 0:
        return float("nan")
    if n == 1:
        return float(sorted_xs[0])
    pos = q * (n - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return float(sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * frac)


# ----------------------------------------------------------------------------- bytes
def nbytes_of(obj: Any) -> int:
    """Bytes of the tensors/arrays/buffers in a (nested) batch or sample.

    torch tensors: numel * element_size; numpy arrays: nbytes; bytes/bytearray/memoryview:
    len; lists, tuples and dicts are walked; numbers and strings count 0 (they are not
    what moves through shared memory in bulk).
    """
    if obj is None:
        return 0
    if hasattr(obj, "element_size") and hasattr(obj, "numel"):   # torch.Tensor
        try:
            return int(obj.numel()) * int(obj.element_size())
        except Exception:  # pragma: no cover
            return 0
    if hasattr(obj, "nbytes") and not isinstance(obj, (bytes, bytearray, memoryview)):
        try:
            return int(obj.nbytes)                               # numpy array
        except Exception:  # pragma: no cover
            return 0
    if isinstance(obj, (bytes, bytearray)):
        return len(obj)
    if isinstance(obj, memoryview):
        return obj.nbytes
    if isinstance(obj, dict):
        return sum(nbytes_of(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(nbytes_of(v) for v in obj)
    return 0


def sequence_length_of(sample: Any) -> Optional[int]:
    """Pure: a token sample's length: its `input_ids` (a dict, as Hugging Face's tokenizers return), else its first
    element (a tuple or list of tensors), else the sequence itself (a tensor or array: its first dimension; a list of
    ints: its length). None where none of these is found."""
    if isinstance(sample, dict):
        return sequence_length_of(sample["input_ids"]) if "input_ids" in sample else None
    shape = getattr(sample, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    if isinstance(sample, (list, tuple)) and sample:
        if all(isinstance(x, int) for x in sample):
            return len(sample)
        return sequence_length_of(sample[0])
    return None


def token_cost_split(lengths: Sequence[float], times_s: Sequence[float]) -> Optional[Dict[str, float]]:
    """Pure: a sample's __getitem__ time as a fixed part plus a part per token (the tokenizer's), fitted by least
    squares over (length, time) pairs: {"fixed_s", "per_token_s", "token_share"} (the per-token part's share of the
    mean sample's time). A negative part is dropped (0) and the other refitted. None with fewer than 10 pairs or
    lengths that do not vary."""
    pts = [(float(n), float(t)) for n, t in zip(lengths, times_s) if n and n > 0 and t >= 0]
    if len(pts) < 10:
        return None
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx <= 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx
    a = my - b * mx
    if b < 0:
        a, b = my, 0.0
    elif a < 0:
        a, b = 0.0, sum(x * y for x, y in pts) / sum(x * x for x, _ in pts)
    mean_t = a + b * mx
    return {"fixed_s": a, "per_token_s": b, "token_share": (b * mx / mean_t) if mean_t > 0 else 0.0}


def sequence_section(lengths: Sequence[float], item_bytes: Sequence[float], collate: str = "pad_to_longest",
                     max_tokens: int = 0) -> Optional[Dict[str, Any]]:
    """Pure: the scenario's `sequence` section from samples' lengths in tokens and their bytes: the lengths'
    distribution (lognormal by mean and cv), the bytes a token position takes (the samples' bytes over their tokens:
    every tensor a sample carries, input_ids, attention_mask, labels), the collate and truncation asked for. None
    without lengths or bytes."""
    pairs = [(float(n), float(b)) for n, b in zip(lengths, item_bytes) if n and n > 0]
    if not pairs or sum(b for _, b in pairs) <= 0:
        return None
    st = summarize([n for n, _ in pairs])
    out: Dict[str, Any] = {"tokens_per_sample": _dist(st["mean"], st["cv"]), "collate": collate,
                           "bytes_per_token": round(sum(b for _, b in pairs) / sum(n for n, _ in pairs), 4)}
    if max_tokens:
        out["max_tokens"] = int(max_tokens)
    return out


def length_histogram(lengths: Sequence[float]) -> List[List[int]]:
    """Pure: a dataset's lengths in tokens as sequence.tokens_per_sample_histogram's [tokens, samples] pairs, in
    increasing order (lengths under 1 token count as 1). The whole dataset's, not the timed samples': a sample of it
    has fewer distinct long lengths, and a batch's longest (its shape) repeats as often as those do."""
    counts: Dict[int, int] = {}
    for x in lengths:
        n = max(1, int(round(float(x))))
        counts[n] = counts.get(n, 0) + 1
    return [[k, counts[k]] for k in sorted(counts)]


def read_lengths_file(path: str) -> List[float]:
    """The --lengths file: a JSON array of numbers, or one number a line (blank lines and # comments skipped).
    Raises ValueError naming the file and the first bad entry."""
    with open(path) as f:
        text = f.read()
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}); expected an array of lengths")
        out = []
        for i, x in enumerate(data):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 1:
                raise ValueError(f"{path}: [{i}] is {json.dumps(x)}; expected a length in tokens >= 1")
            out.append(float(x))
    else:
        out = []
        for i, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                x = float(line)
            except ValueError:
                x = float("nan")
            if not math.isfinite(x) or x < 1:
                raise ValueError(f"{path}: line {i} is {line!r}; expected a length in tokens >= 1")
            out.append(x)
    if not out:
        raise ValueError(f"{path}: no lengths; expected one length in tokens per sample of the dataset")
    return out


# ----------------------------------------------------------------------------- timing
def _one_thread():
    """Limit torch to one intra-op thread as in a DataLoader worker; return a restorer."""
    try:
        import torch  # noqa: F401
    except Exception:
        return lambda: None
    import torch
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    return lambda: torch.set_num_threads(old)


def time_getitem(dataset, n_samples: int = 300, warmup: int = 5, seed: int = 0,
                 keep: int = 0, max_seconds: Optional[float] = None,
                 clock: Callable[[], float] = time.perf_counter, raw_times: Optional[List[float]] = None,
                 one_thread: bool = True):
    """Time dataset[i] for n_samples random indices (after `warmup` untimed calls). one_thread: torch limited to
    one thread, as in a worker (False: this process's threads, as num_workers=0 loads).

    Returns (summary dict of seconds, list of kept samples (up to `keep`), item bytes list); `raw_times`, when
    given, receives every timed call's seconds in order (the kept samples are the first of them).
    Stops early, after at least 30 timed samples, once max_seconds have passed.
    """
    n = len(dataset)
    rng = random.Random(seed)
    total = warmup + n_samples
    if total <= n:
        idx = rng.sample(range(n), total)
    else:
        idx = [rng.randrange(n) for _ in range(total)]
    restore = _one_thread() if one_thread else (lambda: None)
    times: List[float] = []
    kept: List[Any] = []
    item_bytes: List[int] = []
    t_begin = clock()
    try:
        for j, i in enumerate(idx):
            t0 = clock()
            s = dataset[i]
            t1 = clock()
            if j < warmup:
                continue
            times.append(t1 - t0)
            if raw_times is not None:
                raw_times.append(t1 - t0)
            item_bytes.append(nbytes_of(s))
            if len(kept) < keep:
                kept.append(s)
            if (max_seconds is not None and len(times) >= 30
                    and clock() - t_begin > max_seconds):
                break
    finally:
        restore()
    return summarize(times), kept, item_bytes


def drop_page_cache(paths: Sequence[str] = (), system_wide: bool = True) -> Dict[str, Any]:
    """Make files cold: sync, posix_fadvise(DONTNEED) on each of `paths`, and (system_wide) echo 3 > drop_caches,
    root only, which also drops the cached directory entries and inodes a first open pays for. Returns {"method": what was done, "cold": whether every file the dataset reads is now out of the page
    cache (drop_caches worked, or every path given was advised out), "files_advised": n}."""
    os.sync()
    n = 0
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                n += 1
            finally:
                os.close(fd)
        except Exception:
            pass
    method = [f"posix_fadvise(DONTNEED) on {n} files"]
    dropped = False
    if system_wide:
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            method.append("echo 3 > /proc/sys/vm/drop_caches")
            dropped = True
        except Exception as e:
            method.append(f"drop_caches not possible: {e.__class__.__name__}")
    return {"method": "; ".join(method), "cold": dropped or (len(paths) > 0 and n == len(paths)),
            "files_advised": n}


def time_cold(dataset, paths: Sequence[str] = (), n_samples: int = 120, seed: int = 99,
              max_seconds: Optional[float] = 6.0, system_wide: bool = True) -> Dict[str, Any]:
    """Time dataset[i] with the page cache dropped first (drop_page_cache), no warm-up, one reader, as the
    validation harness's `load_cold` component does. Adds cpu_s_per_sample (this thread's user + kernel time over
    the same calls: a buffered cold read also costs kernel CPU) and how the cache was dropped. Only the first
    reads of a file are cold: a dataset far smaller than n_samples files reads some warm."""
    drop = drop_page_cache(paths, system_wide=system_wide)
    cpu0 = time.thread_time()
    summ, _, _ = time_getitem(dataset, n_samples=n_samples, warmup=0, seed=seed, max_seconds=max_seconds)
    summ["cpu_s_per_sample"] = (time.thread_time() - cpu0) / max(summ["n"], 1)
    summ["method"] = drop["method"]
    summ["cold"] = drop["cold"]
    return summ


def cold_read_latency_s(wall_s: float, cpu_s: float, file_bytes: float, stream_bytes_per_s: float,
                        floor_s: float = 0.0) -> Optional[float]:
    """A file's wait when read cold, beyond its bytes at one reader's stream rate: the scenario's
    storage.read_latency_s (paid once a file; docs/scenario.md). wall_s, cpu_s: one cold __getitem__'s wall and
    CPU time; file_bytes: the bytes it reads; stream_bytes_per_s: calibrate's storage.stream_read_bytes_per_s.
    Never below floor_s (the profile's per-request latency: fio's random 4 KiB reads). None without the inputs."""
    if stream_bytes_per_s is None or stream_bytes_per_s <= 0 or file_bytes is None or file_bytes <= 0:
        return None
    return max(float(floor_s or 0.0), wall_s - cpu_s - file_bytes / stream_bytes_per_s)


def time_opens(paths: Sequence[str], max_files: int = 200, max_seconds: float = 5.0) -> Dict[str, Any]:
    """Each file's open and close (os.open, os.close: no read), up to max_files of `paths` in order, one process,
    timed in wall (perf_counter) and in this thread's CPU (thread_time). On a network file system the wall beyond the
    CPU is the metadata round trip an open waits, cached data or not (NFS's close-to-open attribute check, a Lustre
    open RPC): wait_s_per_open, the scenario's storage.open_latency_s. On a local file system it is a few
    microseconds."""
    walls, cpus = [], []
    deadline = time.perf_counter() + max_seconds
    for path in list(paths)[:max_files]:
        c0, w0 = time.thread_time(), time.perf_counter()
        fd = os.open(path, os.O_RDONLY)
        os.close(fd)
        w1, c1 = time.perf_counter(), time.thread_time()
        walls.append(w1 - w0)
        cpus.append(c1 - c0)
        if w1 > deadline:
            break
    n = len(walls)
    if n == 0:
        return {"n": 0}
    wall, cpu = sum(walls) / n, sum(cpus) / n
    return {"n": n, "wall_s_per_open": wall, "cpu_s_per_open": cpu, "wait_s_per_open": open_wait_s(wall, cpu)}


def open_wait_s(wall_s: float, cpu_s: float) -> float:
    """An open's wait without a core: its wall less its CPU, never below 0 (thread_time's tick can exceed a local
    open's wall). Pure."""
    return max(0.0, wall_s - cpu_s)


def default_collate_fn():
    from torch.utils.data import default_collate
    return default_collate


def time_collate(samples: Sequence[Any], batch_size: int, collate_fn=None,
                 n_batches: int = 30, warmup: int = 2, seed: int = 0,
                 max_seconds: Optional[float] = None,
                 clock: Callable[[], float] = time.perf_counter, one_thread: bool = True):
    """Time collate_fn on n_batches batches drawn (with replacement) from `samples`.

    one_thread: torch limited to one thread, as in a worker (False: this process's threads, as
    num_workers=0 collates). Returns (summary of seconds per batch, summary of batch bytes).
    """
    if collate_fn is None:
        collate_fn = default_collate_fn()
    if not samples:
        raise ValueError("time_collate needs at least one sample")
    rng = random.Random(seed + 1)
    restore = _one_thread() if one_thread else (lambda: None)
    times: List[float] = []
    sizes: List[float] = []
    t_begin = clock()
    try:
        for j in range(warmup + n_batches):
            batch = [samples[rng.randrange(len(samples))] for _ in range(batch_size)]
            t0 = clock()
            out = collate_fn(batch)
            t1 = clock()
            if j < warmup:
                continue
            times.append(t1 - t0)
            sizes.append(float(nbytes_of(out)))
            del out
            if (max_seconds is not None and len(times) >= 8
                    and clock() - t_begin > max_seconds):
                break
    finally:
        restore()
    return summarize(times), summarize(sizes)


# ----------------------------------------------------------------------------- in a worker
_SLOTS = 64  # per-worker slots of the shared counters: workers never write the same double


def _slot() -> int:
    """Offset of this process's 4 counters: its DataLoader worker id (0 in the main process)."""
    try:
        from torch.utils.data import get_worker_info
        wi = get_worker_info()
    except ImportError:
        wi = None
    return 4 * ((wi.id % _SLOTS) if wi is not None else 0)


class _TimedDataset:
    """Adds each __getitem__'s wall time to counters 0/1 of this worker's slot in a shared array
    (fork-inherited)."""

    def __init__(self, dataset, arr):
        self.dataset, self.arr = dataset, arr

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        t0 = time.perf_counter()
        x = self.dataset[i]
        j = _slot()
        self.arr[j] += time.perf_counter() - t0
        self.arr[j + 1] += 1
        return x


class _TimedCollate:
    """Adds each collate's wall time to counters 2/3 of this worker's slot."""

    def __init__(self, fn, arr):
        self.fn, self.arr = fn, arr

    def __call__(self, batch):
        fn = self.fn or default_collate_fn()
        t0 = time.perf_counter()
        out = fn(batch)
        j = _slot()
        self.arr[j + 2] += time.perf_counter() - t0
        self.arr[j + 3] += 1
        return out


def time_in_worker(dataset, collate_fn=None, batch_size: int = 64, n_batches: int = 8, seed: int = 0,
                   max_seconds: float = 10.0, num_workers: int = 1) -> Optional[Dict[str, float]]:
    """__getitem__ and collate timed inside torch DataLoader worker processes (num_workers of them
    loading at once, one by default), as a worker pays them (forked process, torch one thread,
    collate into fresh shared memory). None without torch.

    On an H200 machine the single-process timings were 10-20% off the in-worker per-sample cost,
    and collate of small batches up to 5x low; and one worker samples one core, whose speed on a
    VM can be 20% off the average of several: the harness's probe at the job's own worker count
    matched the job's in-situ cost within 0.91-1.14 (docs/validation-runs.md, run 7)."""
    try:
        import multiprocessing as mp
        from torch.utils.data import DataLoader, RandomSampler
    except ImportError:
        return None
    arr = mp.get_context("fork").RawArray("d", 4 * _SLOTS)
    import torch
    gen = torch.Generator().manual_seed(seed)
    # indices for more batches than are taken: an exhausted iterator shuts its worker down, and
    # /proc then loses the worker's CPU time before it is read
    k = max(1, int(num_workers))
    warm = 1 if k == 1 else 2 * k     # every worker past its start-up (fork, copy-on-write faults)
    sampler = RandomSampler(dataset, replacement=True, num_samples=(warm + n_batches + 2 * k + 2) * batch_size,
                            generator=gen)
    dl = DataLoader(_TimedDataset(dataset, arr), batch_size=batch_size, sampler=sampler, num_workers=k,
                    prefetch_factor=2, collate_fn=_TimedCollate(collate_fn, arr), multiprocessing_context="fork")
    it = iter(dl)
    for _ in range(warm):  # start-up and the first batches are left out
        next(it)
    base = list(arr)
    pids = [w.pid for w in it._workers]
    cpu0 = workers_cpu_s(pids)
    t0 = time.perf_counter()
    n = 0
    for _ in it:
        n += 1
        if n >= n_batches or (n >= 3 and time.perf_counter() - t0 > max_seconds):
            break
    diff = [b - a for a, b in zip(base, list(arr))]
    d = [sum(diff[j::4]) for j in range(4)]   # summed over the workers' slots
    cpu1 = workers_cpu_s(pids)
    del it, dl
    if d[1] <= 0 or d[3] <= 0:
        return None
    res = {"getitem_s": d[0] / d[1], "collate_s": d[2] / d[3], "samples": int(d[1]), "batches": int(d[3]),
           "workers": k}
    if cpu0 is not None and cpu1 is not None:
        # the worker's other CPU per batch: index fetch, pickling for the main process, the loop
        res["overhead_s_per_batch"] = max(0.0, (cpu1 - cpu0 - d[0] - d[2]) / d[3])
    return res


def process_cpu_s(pid: int, tid: Optional[int] = None) -> Optional[float]:
    """User + system CPU seconds of a process, all threads, or of its thread `tid` alone (Linux /proc);
    None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def cpu_model() -> Optional[str]:
    """The CPU's model name from /proc/cpuinfo; None where there is none (not Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def json_default(o: Any) -> Any:
    """json.dump's fallback for the harnesses' documents: numpy and torch scalars by value,
    non-finite floats as null, anything else by its text."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def insitu_diff(s0: Sequence[float], s1: Sequence[float]) -> Dict[str, Any]:
    """Per-sample and per-batch figures between two snapshots of the harness's in-situ counters:
    sums of [getitem wall, getitem cpu, samples, collate wall, collate cpu, batches, batch busy,
    batch busy squared], a batch's busy time being its __getitem__ calls plus its collate."""
    d = [b - a for a, b in zip(s0, s1)]
    d += [0.0] * (8 - len(d))
    busy_mean = d[6] / d[5] if d[5] and d[6] > 0 else None
    busy_cv = None
    if d[5] > 1 and busy_mean:
        busy_cv = math.sqrt(max(0.0, d[7] / d[5] - busy_mean ** 2)) / busy_mean
    return {"getitem_wall_s": d[0] / d[2] if d[2] else None,
            "getitem_cpu_s": d[1] / d[2] if d[2] else None, "samples": int(d[2]),
            "collate_wall_s": d[3] / d[5] if d[5] else None,
            "collate_cpu_s": d[4] / d[5] if d[5] else None, "batches": int(d[5]),
            "batch_busy_s": busy_mean, "batch_busy_cv": busy_cv}


def worker_spread(per_worker: Sequence[Sequence[float]]) -> Optional[Dict[str, Any]]:
    """How unequal the workers of one loader were: per worker [batches, sum of batch busy times,
    sum of their squares] -> each worker's mean batch time and the spread of those means across
    workers (coefficient of variation), less what the batch-to-batch noise alone gives (the
    variance of a worker's mean is its batches' variance / their count). Compare with the
    slow part of the cores' wandering speed (profile cpu.core_speed_cv, core_speed_correlation_s).
    None with fewer than two workers of two batches or more."""
    means, noise = [], []
    for b, s, ss in per_worker:
        if b >= 2 and s > 0:
            m = s / b
            means.append(m)
            noise.append(max(0.0, ss / b - m * m) / b)
    if len(means) < 2:
        return None
    grand = sum(means) / len(means)
    between = sum((m - grand) ** 2 for m in means) / len(means)
    return {"batch_busy_by_worker_s": [round(m, 6) for m in means],
            "worker_spread_cv": math.sqrt(max(0.0, between - sum(noise) / len(noise))) / grand,
            "worker_spread_cv_raw": math.sqrt(between) / grand}


def workers_cpu_s(pids: Sequence[int],
                  read: Callable[[int], Optional[float]] = process_cpu_s) -> Optional[float]:
    """Total CPU seconds (all threads) of the given worker processes; None if any cannot be read. `read` is the
    per-process reading (beside_workers passes its finer /proc/<pid>/schedstat one)."""
    if not pids:
        return None
    total = 0.0
    for pid in pids:
        c = read(pid)
        if c is None:
            return None
        total += c
    return total


def workers_cpu_per_batch(cpu0: Optional[float], cpu1: Optional[float], d: Dict[str, Any]) -> Dict[str, Any]:
    """The workers' whole CPU per batch over the window, and what of it is neither __getitem__ nor
    collate (queue handling, pickling for the main process, freeing): the in-situ counterpart of
    loader.worker_s_per_batch."""
    if cpu0 is None or cpu1 is None or not d.get("batches") or d.get("getitem_cpu_s") is None:
        return {}
    per_batch = (cpu1 - cpu0) / d["batches"]
    inside = (d["getitem_cpu_s"] * d["samples"] + (d.get("collate_cpu_s") or 0.0) * d["batches"]) / d["batches"]
    return {"worker_process_cpu_s_per_batch": per_batch, "worker_other_cpu_s_per_batch": per_batch - inside}



# ----------------------------------------------------------------------------- probe
def probe(dataset, collate_fn=None, batch_size: int = 64, n_samples: int = 300,
          n_batches: int = 30, seed: int = 0, sample_bytes: Optional[float] = None,
          sample_bytes_fn: Optional[Callable[[int], float]] = None,
          max_seconds: Optional[float] = None, in_worker: bool = True,
          num_workers: Optional[int] = None, cold: bool = False,
          cold_paths: Sequence[str] = (), sequence: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Measure one dataset; return a dict of results (see scenario_fragment). num_workers: the
    job's DataLoader workers; with more than one, the costs are also timed with that many workers
    loading at once (what the fragment then uses). cold: also time __getitem__ with the page cache
    dropped (time_cold; last, so the warm timings above read a warm cache), cold_paths: the files the
    dataset reads (advised out of the cache without root; their mean size is the sample's bytes read when
    neither sample_bytes nor sample_bytes_fn says otherwise: one file a sample). sequence: token samples of varying
    length ({"collate": ..., "max_tokens": ...}): every timed sample's length is read (sequence_length_of) for the
    fragment's `sequence` section in place of dataset.item_bytes."""
    keep = n_samples if sequence is not None else min(n_samples, max(batch_size, 64))
    raw_times: List[float] = []
    # num_workers=0: the main process loads and collates inline, with its own torch threads and into private
    # memory (the validation harness's inline probe, since run 12); a worker's single thread and shared-memory
    # collate are not what that job pays
    inline = num_workers == 0
    load, kept, item_bytes = time_getitem(dataset, n_samples=n_samples, seed=seed,
                                          keep=keep, max_seconds=max_seconds, raw_times=raw_times,
                                          one_thread=not inline)
    coll, bbytes = time_collate(kept, batch_size, collate_fn=collate_fn,
                                n_batches=n_batches, seed=seed,
                                max_seconds=None if max_seconds is None else max_seconds / 4,
                                one_thread=not inline)
    if inline:
        in_worker = False
    res: Dict[str, Any] = {
        "inline": inline,
        "num_samples": len(dataset),
        "batch_size": batch_size,
        "load_s_per_sample": load,
        "item_bytes_per_sample": summarize([float(b) for b in item_bytes]),
        "collate_s_per_batch": coll,
        "batch_bytes": bbytes,
        "item_bytes_from_batch": bbytes["mean"] / batch_size if batch_size else float("nan"),
    }
    if sequence is not None:
        lengths = [sequence_length_of(x) for x in kept]
        res["sequence_timed_lengths"] = [n for n in lengths if n]
        sec = sequence_section([n or 0 for n in lengths], [nbytes_of(x) for x in kept],
                               sequence.get("collate", "pad_to_longest"), int(sequence.get("max_tokens") or 0))
        res["sequence"] = sec if sec else {"error": "no sample's length or bytes could be read (sequence_length_of)"}
        split = token_cost_split([n or 0 for n in lengths], raw_times[:len(kept)])
        if sec and split:
            res["sequence_token_cost"] = split
    if in_worker:
        w = time_in_worker(dataset, collate_fn, batch_size=batch_size, seed=seed)
        if w is not None:
            res["in_worker"] = w
            if num_workers and num_workers > 1:
                wk = time_in_worker(dataset, collate_fn, batch_size=batch_size, seed=seed + 1,
                                    n_batches=max(8, 2 * num_workers), num_workers=num_workers)
                if wk is not None:
                    res["in_workers"] = wk
    if sample_bytes_fn is not None:
        rng = random.Random(seed + 2)
        idx = [rng.randrange(len(dataset)) for _ in range(min(len(dataset), 500))]
        res["sample_bytes"] = summarize([float(sample_bytes_fn(i)) for i in idx])
    elif sample_bytes is not None:
        res["sample_bytes"] = {"mean": float(sample_bytes), "cv": 0.0}
    elif cold_paths:
        sizes = [float(os.path.getsize(p)) for p in cold_paths]
        res["sample_bytes"] = dict(summarize(sizes), source="mean size of the cold files (one file a sample)")
    if cold:
        res["load_cold"] = time_cold(dataset, paths=cold_paths, seed=seed + 99,
                                   max_seconds=6.0 if max_seconds is None else min(max_seconds, 6.0))
    return res


def _dist(mean: float, cv: float) -> Dict[str, Any]:
    cv = 0.0 if (cv is None or not math.isfinite(cv)) else float(cv)
    return {"mean": float(mean), "cv": round(cv, 4), "kind": "lognormal"}


def cold_latency_of(res: Dict[str, Any], profile: Optional[Dict[str, Any]]) -> Optional[float]:
    """storage.read_latency_s from a probe result's cold timing (cold_read_latency_s), with the stream rate and
    the per-request floor from a pipeplan hardware profile; None without a cold timing, the sample's bytes
    read or the profile's stream rate."""
    lc = res.get("load_cold") or {}
    if not lc.get("cold") or not isinstance(lc.get("mean"), (int, float)) or "sample_bytes" not in res:
        return None
    storage = (profile or {}).get("storage") or {}
    return cold_read_latency_s(lc["mean"], lc["cpu_s_per_sample"], res["sample_bytes"]["mean"],
                               float(storage.get("stream_read_bytes_per_s") or 0.0),
                               float(storage.get("read_latency_s") or 0.0))


def scenario_fragment(res: Dict[str, Any], profile: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The pipeplan-scenario/1 keys that a probe result fills (merge into a scenario). With a cold timing
    and the machine's profile (pipeplan calibrate), also storage.read_latency_s (cold_latency_of)."""
    # Inside a worker is what a DataLoader worker pays; the spread comes from the single timings. An inline probe
    # (num_workers=0) has no worker: its in-process timings, with the process's threads, are the job's own.
    w = {} if res.get("inline") else (res.get("in_worker") or {})
    load_mean = w.get("getitem_s") or res["load_s_per_sample"]["mean"]
    collate_mean = w.get("collate_s") or res["collate_s_per_batch"]["mean"]
    ds: Dict[str, Any] = {
        "num_samples": int(res["num_samples"]),
        "load_s_per_sample": _dist(load_mean, res["load_s_per_sample"]["cv"]),
        "item_bytes": max(1, int(round(res["item_bytes_from_batch"]))),
    }
    wk = res.get("in_workers") or {}
    k = int(wk.get("workers") or 1)
    if k > 1 and wk.get("getitem_s") and w.get("getitem_s"):
        # the cost at the job's own worker count, and the dataset's speed curve relative to it: the
        # simulator gives back the K-worker cost at K busy cores and the one-worker cost alone
        ds["load_s_per_sample"] = _dist(wk["getitem_s"], res["load_s_per_sample"]["cv"])
        ds["load_speed_vs_busy_cores"] = [{"busy_cores": 1, "relative_speed": round(wk["getitem_s"] / w["getitem_s"], 4)},
                                          {"busy_cores": k, "relative_speed": 1.0}]
    if "sample_bytes" in res:
        ds["sample_bytes"] = _dist(res["sample_bytes"]["mean"], res["sample_bytes"].get("cv", 0.0))
    frag: Dict[str, Any] = {
        "dataset": ds,
        "loader": dict({"batch_size": int(res["batch_size"]), "collate_s_per_batch": float(collate_mean)},
                       # timed inside a worker, into shared memory: pipeplan takes it as is (docs/scenario.md)
                       **({"collate_in_shared_memory": True} if w.get("collate_s") else {}),
                       **({"worker_s_per_batch": round(float(w["overhead_s_per_batch"]), 6)}
                          if w.get("overhead_s_per_batch") is not None else {})),
    }
    latency = cold_latency_of(res, profile)
    if latency is not None:
        frag["storage"] = {"read_latency_s": round(latency, 9)}
    opens = res.get("opens") or {}
    if opens.get("n"):
        # the timed __getitem__ waited its file's open too: that wait moves out of the per-sample CPU cost into the
        # open's own key, which the simulator pays without a core (a sample: 1 / samples_per_file of an open)
        per_file = int(res.get("samples_per_file") or 1)
        wait = float(opens["wait_s_per_open"])
        frag.setdefault("storage", {})["open_latency_s"] = round(wait, 9)
        ds["samples_per_file"] = per_file
        level = float(ds["load_s_per_sample"]["mean"])
        ds["load_s_per_sample"] = dict(ds["load_s_per_sample"], mean=max(level - wait / per_file, 1e-3 * level))
    if (res.get("sequence") or {}).get("tokens_per_sample"):
        # a batch's bytes come from its shape (padded tokens x bytes_per_token), not from item_bytes
        ds.pop("item_bytes", None)
        frag["sequence"] = dict(res["sequence"])
        split = res.get("sequence_token_cost") or {}
        if split.get("token_share", 0.0) > 0.0:
            # the tokenizer's share of a sample's time (fitted over the timed samples' lengths) becomes a cost per
            # token, at the level the fragment's per-sample cost was measured (in a worker where timed there)
            level = float(ds["load_s_per_sample"]["mean"])
            share = float(split["token_share"])
            mean_tokens = float(res["sequence"]["tokens_per_sample"]["mean"])
            # (a fixed part fitted to 0 keeps a thousandth: pipeplan needs a positive per-sample cost)
            ds["load_s_per_sample"] = dict(ds["load_s_per_sample"], mean=level * max(1.0 - share, 1e-3))
            frag["sequence"]["load_s_per_token"] = round(level * share / mean_tokens, 12)
        if res.get("sequence_dataset_lengths"):
            frag["sequence"].pop("tokens_per_sample", None)
            frag["sequence"]["tokens_per_sample_histogram"] = res["sequence_dataset_lengths"]
    return frag


# ----------------------------------------------------------------------------- the training step
def _default_sync(out: Any) -> None:
    """Wait for the device as a training loop's loss.item() does: the result's .item() where it has one, then
    torch.cuda.synchronize() where CUDA is up (nothing on a CPU-only machine)."""
    if hasattr(out, "item"):
        out.item()
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except ImportError:
        pass


def gpu_step_time_s(step_fn: Callable[[], Any], n_steps: int = 10, max_retries: int = 6) -> Optional[Dict[str, Any]]:
    """The step's GPU time, as the validation harness times it. Isolated (launch overhead excluded): a spin kernel
    (torch.cuda._sleep) holds the stream while the step's launches queue behind it, and CUDA events around the step
    read its kernels back to back; the hold grows until the launches fit inside it (at most max_retries times: a
    step whose launches fill CUDA's launch queue never fits, and gets no isolated time). Sustained: n_steps steps
    back to back after a warm-up, an event after each, no sync (a GPU under sustained load may run at lower
    clocks: the H200 ran a 25 ms GEMM step in 29.9 ms back to back; validation run 12). {"isolated_s": summary or
    None, "sustained_s": summary}, or None without CUDA (or without torch.cuda._sleep)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or not hasattr(torch.cuda, "_sleep"):
        return None
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    cycles = 20_000_000
    e0.record()
    torch.cuda._sleep(cycles)
    e1.record()
    torch.cuda.synchronize()
    cycles_per_s = cycles / (e0.elapsed_time(e1) / 1e3)
    hold_s, isolated, retries = 0.05, [], 0
    while len(isolated) < n_steps and retries <= max_retries:
        torch.cuda.synchronize()
        torch.cuda._sleep(int(cycles_per_s * hold_s))
        e0.record()
        h0 = time.perf_counter()
        step_fn()
        h1 = time.perf_counter()
        e1.record()
        torch.cuda.synchronize()
        if h1 - h0 > 0.8 * hold_s:                 # the launches outlasted the hold: again, longer
            hold_s, retries = 3 * (h1 - h0), retries + 1
            continue
        isolated.append(e0.elapsed_time(e1) / 1e3)
    evs = [torch.cuda.Event(enable_timing=True) for _ in range(n_steps + 1)]
    for _ in range(3):
        step_fn()
    evs[0].record()
    for j in range(n_steps):
        step_fn()
        evs[j + 1].record()
    torch.cuda.synchronize()
    return {"isolated_s": summarize(isolated) if isolated else None,
            "sustained_s": summarize([evs[j].elapsed_time(evs[j + 1]) / 1e3 for j in range(n_steps)])}


def time_step(step_fn: Callable[[], Any], n_steps: int = 20, warmup: int = 3,
              sync: Optional[Callable[[Any], None]] = None, gpu: bool = True) -> Dict[str, Any]:
    """Your training step, for the scenario's training section. step_fn() runs one step on a batch already on the
    device (forward, backward, optimizer step) and returns what sync(result) waits on (default: its .item(), then
    torch.cuda.synchronize()). In a plain loop that syncs every step, as a loss.item() does, it times each step's
    call (host_s: its launches, the Python a step costs the loop's thread) and the loop's wall a step (loop_step_s:
    the launches, then the wait at the sync), and, with CUDA and gpu=True, the step's GPU time alone
    (gpu_step_time_s). training_fragment turns them into scenario keys."""
    sync = sync or _default_sync
    for _ in range(warmup):
        sync(step_fn())
    host = []
    t0 = time.perf_counter()
    for _ in range(n_steps):
        h0 = time.perf_counter()
        out = step_fn()
        host.append(time.perf_counter() - h0)
        sync(out)
    res: Dict[str, Any] = {"host_s": summarize(host), "loop_step_s": (time.perf_counter() - t0) / n_steps,
                           "steps": n_steps}
    g = gpu_step_time_s(step_fn) if gpu else None
    if g is not None:
        res["gpu_step_s"] = g
    return res


def training_fragment(res: Dict[str, Any]) -> Dict[str, Any]:
    """The scenario keys a time_step result fills: training.host_s_per_step (the launches' mean); training.step_s,
    where the GPU was timed, by the harness's rule: the sustained back-to-back interval where the launches stay well
    ahead (under 0.8 of it: the GPU's time under load), else the isolated GPU time (a host-bound step's interval is
    the host's); and, where the launches outlast the isolated GPU step, training.launch_tail_s: the loop's wall a
    step less its launches, the GPU work still to run when the last launch returns, which a sync waits for
    (docs/scenario.md; validation run 25: a ResNet-50 step on the H200, 1.4-1.5 ms at 18 ms of launches). Where the
    GPU outlasts the launches that difference is the GPU's own time, which step_s holds: no tail."""
    host = float(res["host_s"]["mean"])
    tr: Dict[str, Any] = {"host_s_per_step": round(host, 6)}
    g = res.get("gpu_step_s") or {}
    iso = (g.get("isolated_s") or {}).get("mean")
    sus = (g.get("sustained_s") or {}).get("mean")
    if sus and host < 0.8 * sus:
        tr["step_s"] = round(float(sus), 6)
    elif iso:
        tr["step_s"] = round(float(iso), 6)
        if host > iso:
            tr["launch_tail_s"] = round(max(0.0, float(res["loop_step_s"]) - host), 6)
    return {"training": tr}


# ----------------------------------------------------------------------------- the DataLoader's own transport
# calibrate's ipc and host sections time the hand-off in C (a file descriptor, a mapping, a memcpy into pinned
# memory); the DataLoader's receive (unpickling, rebuilding the storage) and pin_memory() of a fresh mapping cost
# more. On the validation table a calibrated profile as it stands over-predicts the pinned tensor cases by +30%
# (signed median; validation-runs.md, the user's path); the harness's `transport` component, measured the same way
# as time_transport, is what the table folds in (convert.transport_profile).
TRANSPORT_WORKERS = 12          # enough workers over cached samples that the main side is the limit
TRANSPORT_CACHED_SAMPLES = 128  # the harness's cache of loaded samples
TRANSPORT_WINDOW_S = 0.8        # each of the three timed windows (the harness's full mode)


def time_transport(dataset, collate_fn=None, batch_size: int = 64, num_workers: int = TRANSPORT_WORKERS,
                   window_s: float = TRANSPORT_WINDOW_S, seed: int = 0, pin: Optional[bool] = None) -> Dict[str, Any]:
    """The DataLoader's transport as the validation harness's `transport` component measures it: TRANSPORT_CACHED_SAMPLES
    of your samples, a DataLoader over them with num_workers workers and your collate_fn, iterated without using the
    batches; per batch, after 10 warm-up batches, the median of 3 windows: pin_memory off (the receive) and on (the
    receive and the pin thread's work, with its pin_memory() calls and its CPU); with each the loop thread's or the
    pin thread's CPU a batch. pin: None pins where CUDA is there. Needs torch."""
    import torch
    from torch.utils.data import DataLoader
    harness = _validation_module("harness")
    rng = random.Random(seed + 5)
    cached = harness.CachedDataset([dataset[rng.randrange(len(dataset))]
                                    for _ in range(max(TRANSPORT_CACHED_SAMPLES, batch_size))])
    pin = torch.cuda.is_available() if pin is None else pin
    res: Dict[str, Any] = {"num_workers": num_workers, "batch_size": batch_size,
                           "method": f"DataLoader({TRANSPORT_CACHED_SAMPLES} cached samples, batch_size={batch_size}, "
                                     f"num_workers={num_workers}, prefetch_factor=2, your collate_fn); iterate without "
                                     f"using the batch; seconds per batch after 10 warm-up batches, median of 3 "
                                     f"windows (the validation harness's transport component)"}
    for pinned in ((False, True) if pin else (False,)):
        dl = DataLoader(cached, batch_size=batch_size, num_workers=num_workers, prefetch_factor=2, pin_memory=pinned,
                        collate_fn=collate_fn or default_collate_fn(), multiprocessing_context="fork")
        with (harness.PinThreadMeter() if pinned else contextlib.nullcontext()) as meter:
            it = iter(dl)
            for _ in range(10):
                next(it)
            p0, c0 = (meter.snapshot(), harness.PinThreadMeter.thread_cpu_s(it)) if pinned else (None, None)
            main0, n_all, windows = time.thread_time(), 0, []
            for _w in range(3):
                n, a = 0, time.perf_counter()
                while n < 8 or time.perf_counter() - a < window_s:
                    batch = next(it)
                    if n == 0 and _w == 0:
                        res["batch_bytes"] = float(nbytes_of(batch))
                    del batch
                    n += 1
                windows.append((time.perf_counter() - a) / n)
                n_all += n
            if pinned:
                res.update(harness.pin_thread_figures(p0, meter.snapshot(), c0,
                                                      harness.PinThreadMeter.thread_cpu_s(it), n_all))
            else:
                res["receive_cpu_s_per_batch"] = (time.thread_time() - main0) / n_all
        del it, dl
        res["pin_s_per_batch" if pinned else "receive_s_per_batch"] = sorted(windows)[1]
    return res


def profile_with_transport(profile: Dict[str, Any], transport: Dict[str, Any], worker_collate_s: float,
                           receive_gil_s: Optional[float] = None,
                           pin_cpu_beside_loader_s: Optional[float] = None) -> Dict[str, Any]:
    """Your calibrated profile with the DataLoader's own transport in its ipc receive costs and
    host.pin_copy_bytes_per_s, folded as the validation table folds its transport component (convert.transport_profile
    on the loops' CPU clock, brought back to one idle core at the busy cores they ran at; worker_collate_s: a
    batch's collate inside one worker), and, where given, the receive's GIL hold (ipc.receive_gil_s_per_batch: the
    validation's 0.48 ms, measured from the H200 host's timelines and checked on an H100 host, not here).
    pin_cpu_beside_loader_s: the pin thread's CPU a batch beside your real loader (--main-loop), where measured: the
    transport's main-side costs are scaled by it over the transport's own pin-thread CPU, as the table scales them
    to the probes around each case (convert.main_side_drift), once here. ValueError without the pinned half
    (pin_s_per_batch: it needs a CUDA GPU)."""
    if not transport.get("pin_s_per_batch") or not transport.get("batch_bytes"):
        raise ValueError("the transport has no pinned half (pin_memory needs a CUDA GPU) or no batch bytes")
    convert = _validation_module("convert")
    tr = convert.transport_on_cpu_clock(transport)
    factor = loader_scale(transport, pin_cpu_beside_loader_s)
    if factor is not None:
        tr = convert.transport_scaled(tr, factor)
    out = convert.transport_profile(profile, tr, float(transport["batch_bytes"]), worker_collate_s)
    if receive_gil_s is not None:
        out.setdefault("ipc", {})["receive_gil_s_per_batch"] = float(receive_gil_s)
    out.setdefault("provenance", {})["note"] = (
        f"pipeplan_probe.py --transport on {time.strftime('%Y-%m-%d')}: ipc receive costs and host.pin_copy_bytes_per_s "
        f"from your DataLoader's transport ({transport['num_workers']} workers over cached samples, batch "
        f"{transport['batch_size']})" + (f", scaled by {factor:.3f} to its pin thread's CPU beside your loader "
                                         "(--main-loop)" if factor is not None else "")
        + (f"; ipc.receive_gil_s_per_batch {receive_gil_s * 1e3:.2f} ms, the validation's "
                                         "(not measured here)" if receive_gil_s is not None else "")
        + f"; the rest as calibrated. Before: {(profile.get('provenance') or {}).get('note', '')}")
    return out


def loader_scale(transport: Dict[str, Any], pin_cpu_beside_loader_s: Optional[float]) -> Optional[float]:
    """Pure: the pin thread's CPU a batch beside your loader (--main-loop) over the transport's own over cached
    samples, the factor the fold scales the main side by; None where either is missing."""
    ref = float(transport.get("pin_thread_cpu_s_per_batch") or 0.0)
    return pin_cpu_beside_loader_s / ref if (pin_cpu_beside_loader_s and ref > 0) else None


def main_loop_for_fold(transport: bool, profile_out: Optional[str], num_workers: Optional[int], main_loop: bool,
                       no_main_loop: bool) -> bool:
    """Pure: whether --transport --profile-out should run --main-loop itself (not asked for, not refused, and your
    worker count given). The fold scaled to the pin thread beside your own loader came within 1% of a measured job
    where the unscaled fold was -4% (run 68) and +6.3% (run 67): the pin thread's cost beside a real loader against
    over cached samples moved 0.95x to 1.1-1.24x between those leases, which only the job's own loader tells."""
    return bool(transport and profile_out and num_workers and num_workers >= 1 and not main_loop and not no_main_loop)


def fold_scaling_text(transport: Dict[str, Any], pin_cpu_beside_loader_s: Optional[float]) -> str:
    """Pure: what the fold's line adds about its scaling to the user's own loader: the factor where --main-loop
    read the pin thread beside it, else that it is not scaled and by how much that has mattered (the table's
    drift, 1.116 at median over 565 pinned cases; the example job +6.3% unscaled in run 67, -4.2% in run 68)."""
    factor = loader_scale(transport, pin_cpu_beside_loader_s)
    if factor is not None:
        return (f", scaled by {factor:.3f} to the pin thread's CPU beside your loader "
                f"({pin_cpu_beside_loader_s * 1e3:.2f} against "
                f"{float(transport['pin_thread_cpu_s_per_batch']) * 1e3:.2f} ms a batch over cached samples)")
    return ("; not scaled to your own loader (give --num-workers K, which runs --main-loop: over cached samples "
            "the pin thread worked about 12% cheaper at median in the validation, and a pinned tensor job came out "
            "+6.3% unscaled in run 67, -4.2% in run 68, within 1% scaled)")


# ----------------------------------------------------------------------------- new batch shapes
# A step on a batch shape (rows x padded length) its process has not run builds kernel plans keyed by that shape
# first (cuDNN's attention graphs, cudnn.benchmark's search, torch.compile's recompiles): 100-150 ms of host time on
# the H200 with scaled_dot_product_attention, where the same shape again launched in 10 ms (validation run 63). The
# validation harness's sequence_new_shape component times it the same way. 16 lengths: one process's new shapes
# spread 105-236 ms on run 66's H100 (validation-runs.md run 66, finding 1), so the median of 8 moved by about 15%
# from draw to draw; 16 take it to about 10% for 2-4 s more.
NEW_SHAPE_LENGTHS = 16


def new_shape_lengths(lengths: Sequence[float], n: int = NEW_SHAPE_LENGTHS) -> List[int]:
    """Pure: n distinct lengths to time new shapes at: the dataset's lengths' 50th to 95th percentiles (the padded
    length of a batch is its longest, so the upper half is what a job meets), each at least 1 and one above the one
    before where two quantiles coincide; without lengths, n evenly from 300 to 727 tokens (the harness's)."""
    xs = sorted(float(x) for x in lengths if x and x > 0)
    if not xs:
        return [300 + round(427 * j / max(1, n - 1)) for j in range(n)]
    out: List[int] = []
    for j in range(n):
        q = 0.5 + 0.45 * j / max(1, n - 1)
        x = max(1, int(round(_quantile(xs, q))))
        if out and x <= out[-1]:
            x = out[-1] + 1
        out.append(x)
    return out


def time_new_shapes(shape_step_fn: Callable[[int, int], Any], rows: int, lengths: Sequence[int],
                    sync: Optional[Callable[[Any], None]] = None,
                    clock: Callable[[], float] = time.perf_counter) -> Dict[str, Any]:
    """What your step costs the first time it meets a batch shape. shape_step_fn(rows, length) runs one training step
    on a batch of that shape (a dummy batch is fine: the plans depend on the shape, not the tokens) and returns what
    sync waits on. After two warm-up steps at a shape not timed (the process's first steps build its handles), each
    length runs on a shape never run, then on the same shape again; host = the call's span (its launches: where the
    plans are built), wall = to the sync. sequence.new_shape_host_s is the median of new minus seen host time."""
    sync = sync or _default_sync
    warm = max(lengths) + 1
    for _ in range(2):
        sync(shape_step_fn(rows, warm))

    def timed(length: int) -> Tuple[float, float]:
        a = clock()
        out = shape_step_fn(rows, length)
        b = clock()
        sync(out)
        return b - a, clock() - a

    new, seen = [], []
    for length in lengths:
        new.append(timed(length))
        seen.append(timed(length))
    extra_host = [n[0] - s[0] for n, s in zip(new, seen)]
    interval = median_interval(extra_host)
    return {"rows": rows, "lengths": list(lengths),
            # where the median new-minus-seen host time lies (its order statistics' 90% interval): the spread of one
            # process's new shapes (run 66: 105-236 ms) makes a few lengths' median a range
            "new_shape_host_s_interval": list(interval) if interval else None,
            "new_host_s": [x[0] for x in new], "new_wall_s": [x[1] for x in new],
            "seen_host_s": [x[0] for x in seen], "seen_wall_s": [x[1] for x in seen],
            "new_shape_host_s": statistics.median(extra_host),
            "new_shape_wall_s": statistics.median(n[1] - s[1] for n, s in zip(new, seen))}


def median_interval(xs: Sequence[float], coverage: float = 0.9) -> Optional[Tuple[float, float, float]]:
    """Pure: a distribution-free interval for the median of the law xs were drawn from, from their order statistics:
    [x(k), x(n-k+1)] (1-based, sorted) with the largest k whose two tails P(Binomial(n, 1/2) <= k - 1) hold at most
    1 - coverage together; (low, high, the interval's own coverage 1 - 2 P(B <= k - 1)). None where even the
    sample's whole range falls short (fewer than 5 values at 90%: 1 - 2 / 2^n). One process's new shapes spread
    105-236 ms on run 66's H100, so the median of a few lengths is a range, not a figure (validation-runs.md run 66,
    finding 1)."""
    v = sorted(float(x) for x in xs)
    n = len(v)
    tail, k = 0.0, 0
    while True:
        nxt = tail + math.comb(n, k) / 2.0 ** n      # P(B <= k)
        if 2.0 * nxt > 1.0 - coverage:
            break
        tail, k = nxt, k + 1
    if k == 0:
        return None
    return v[k - 1], v[n - k], 1.0 - 2.0 * tail


def new_shape_overlap(res: Dict[str, Any]) -> Optional[float]:
    """Pure: the share of a new shape's step GPU time that ran while its plans built (sequence.
    new_shape_gpu_overlap_fraction), from a time_new_shapes result: a new step's wall is the build plus the GPU time
    not run during it, and a seen step's wall stands for its GPU time g (a step that waits on its GPU), so per length
    f = (C + seen wall - new wall) / seen wall, C the host time's extra; the median, within 0..1. None without walls."""
    out = []
    for nh, sh, nw, sw in zip(res.get("new_host_s") or [], res.get("seen_host_s") or [], res.get("new_wall_s") or [],
                              res.get("seen_wall_s") or []):
        if sw > 0:
            out.append((nh - sh + sw - nw) / sw)
    if not out:
        return None
    return min(1.0, max(0.0, statistics.median(out)))


def new_shape_fragment(res: Dict[str, Any]) -> Dict[str, Any]:
    """The scenario keys a time_new_shapes result fills: sequence.new_shape_host_s (its median extra host time, 0
    where a new shape costs no more than a seen one: no plan cache keyed by shape) and, where part of the step ran
    during the build, sequence.new_shape_gpu_overlap_fraction."""
    seq = {"new_shape_host_s": round(max(0.0, float(res["new_shape_host_s"])), 6)}
    f = new_shape_overlap(res)
    if f:
        seq["new_shape_gpu_overlap_fraction"] = round(f, 4)
    return {"sequence": seq}


# The step's GPU time as a function of the batch's shape (sequence.step_s_per_token, step_s_per_token_squared,
# step_s_floor): a step timed on one batch is one shape's, and the validation found one batch 40% longer than a
# case's mean batch at b128 (validation-runs.md run 65, finding 3). Three row counts (the batch, twice and four times
# it: STEP_FIT_ROW_FACTORS) at four of the dataset's lengths (STEP_FIT_QUANTILES: the short, the median, the long and
# the longest batches a job pads to), each step timed after one untimed step on its shape (so a new shape's plan
# build stays out of it). Rows above the batch's, not below: a smaller batch's kernels do not fill the GPU, and a fit
# bent by them misses larger ones. Run 66's H100 (validation-runs.md run 66, finding 3): the decoder timed at 8 and
# 16 rows fitted 510 ns a position and missed the harness's 32-128-row points by -4% to -29%; at 16, 32 and 64 rows
# (the last two the harness's points of the same lease) 899 ns and a 9.1 ms floor, within 0.7% at 128 rows.
STEP_FIT_QUANTILES = (0.25, 0.5, 0.9, 0.99)
STEP_FIT_DEFAULT_LENGTHS = (256, 512, 1024, 2048)
STEP_FIT_ROW_FACTORS = (1, 2, 4)


def _row_counts(text: str) -> List[int]:
    """argparse type: a comma-separated list of positive row counts."""
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive integers separated by commas, e.g. 16,32,64")
    return out


def step_fit_shapes(rows: int, lengths: Sequence[float],
                    row_counts: Optional[Sequence[int]] = None) -> List[Tuple[int, int]]:
    """Pure: the (rows, length) shapes to time the step at for its fit: row_counts (default rows x
    STEP_FIT_ROW_FACTORS), at the dataset's lengths' STEP_FIT_QUANTILES (distinct, each at least 1; without lengths
    STEP_FIT_DEFAULT_LENGTHS)."""
    xs = sorted(float(x) for x in lengths if x and x > 0)
    picked: List[int] = []
    for q in STEP_FIT_QUANTILES if xs else ():
        x = max(1, int(round(_quantile(xs, q))))
        if x not in picked:
            picked.append(x)
    if len(picked) < 2:
        picked = list(STEP_FIT_DEFAULT_LENGTHS)
    counts = sorted({max(1, int(r)) for r in (row_counts or [max(1, rows) * f for f in STEP_FIT_ROW_FACTORS])})
    return [(r, n) for r in counts for n in picked]


def _out_of_memory(e: BaseException) -> bool:
    """Pure: whether an exception is the GPU's allocator refusing (torch.cuda.OutOfMemoryError, or the RuntimeError
    older torch raised), so the shape is left out of the fit rather than ending the probe."""
    return type(e).__name__ == "OutOfMemoryError" or "out of memory" in str(e).lower()


def time_step_shapes(shape_step_fn: Callable[[int, int], Any], shapes: Sequence[Tuple[int, int]],
                     sync: Optional[Callable[[Any], None]] = None, repeats: int = 5,
                     clock: Callable[[], float] = time.perf_counter,
                     gpu_time: Optional[Callable[[Callable[[], Any]], Optional[Dict[str, Any]]]] = None
                     ) -> Dict[str, Any]:
    """Your step's time at each (rows, length) in shapes, and its fit (sequence_fit.fit_sequence_step_with_floor,
    the validation's form): per shape one untimed step (its plans), then the GPU time where gpu_time gives one (by
    default gpu_step_time_s: sustained back-to-back, else isolated), else the median wall of `repeats` steps each to
    its sync. {"points": [{"rows", "tokens", "step_s", "source"}], "fit": ... or None}."""
    sync = sync or _default_sync
    gpu_time = gpu_step_time_s if gpu_time is None else gpu_time
    points, skipped = [], []
    for rows, length in shapes:
        try:
            sync(shape_step_fn(rows, length))
        except Exception as e:  # noqa: BLE001 (the allocator's refusal only; anything else is re-raised)
            if not _out_of_memory(e):
                raise
            skipped.append([rows, length])
            _free_gpu_cache()
            continue
        g = gpu_time(lambda: shape_step_fn(rows, length))
        step_s, source = None, "wall to sync"
        if g:
            sustained, isolated = g.get("sustained_s") or {}, g.get("isolated_s") or {}
            step_s = sustained.get("p50") or isolated.get("p50")
            source = "GPU, sustained" if sustained.get("p50") else "GPU, isolated"
        if not step_s:
            walls = []
            for _ in range(repeats):
                a = clock()
                sync(shape_step_fn(rows, length))
                walls.append(clock() - a)
            step_s, source = statistics.median(walls), "wall to sync"
        points.append({"rows": rows, "tokens": length, "step_s": step_s, "source": source})
    from sequence_fit import fit_sequence_step_with_floor   # beside this file, standard library only
    return dict({"points": points, "fit": fit_sequence_step_with_floor(points)},
                **({"skipped_out_of_memory": skipped} if skipped else {}))


def _free_gpu_cache() -> None:
    """Return the cached blocks a refused allocation left, where torch and CUDA are there."""
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def step_shapes_fragment(res: Dict[str, Any]) -> Dict[str, Any]:
    """The scenario keys a time_step_shapes fit fills: training.step_s (the fit's fixed part: the simulator adds the
    shape's terms to it), sequence.step_s_per_token, step_s_per_token_squared and, where the fit has one,
    step_s_floor. {} without a fit."""
    fit = res.get("fit")
    if not fit:
        return {}
    seq = {"step_s_per_token": float(fit["per_token_s"]),
           "step_s_per_token_squared": float(fit.get("per_token_squared_s") or 0.0)}
    if fit.get("floor_s"):
        seq["step_s_floor"] = round(float(fit["floor_s"]), 9)
    # the simulator needs a positive fixed part; a fit through the origin keeps a microsecond (as convert does)
    return {"training": {"step_s": max(float(fit.get("fixed_s") or 0.0), 1e-6)}, "sequence": seq}


def _human_step_shapes(res: Dict[str, Any]) -> str:
    fit = res.get("fit")
    pts = ", ".join(f"{q['rows']}x{q['tokens']} {q['step_s'] * 1e3:.2f} ms" for q in res["points"])
    if not fit:
        return f"step by shape: {pts}; no fit (fewer than three shapes timed)"
    return (f"step by shape ({res['points'][0]['source']}): {pts}; fit: {fit['fixed_s'] * 1e3:.2f} ms + "
            f"{fit['per_token_s'] * 1e9:.2f} ns a position + {fit['per_token_squared_s'] * 1e12:.3f} ps a squared "
            f"length" + (f", floor {fit['floor_s'] * 1e3:.2f} ms" if fit.get("floor_s") else "")
            + f"; worst point {fit['max_rel_residual'] * 100:.1f}% off"
            + (f"; left out (out of GPU memory): {', '.join(f'{r}x{n}' for r, n in res['skipped_out_of_memory'])}"
               if res.get("skipped_out_of_memory") else ""))


def _human_new_shapes(ns: Dict[str, Any]) -> str:
    extra = [a - b for a, b in zip(ns["new_host_s"], ns["seen_host_s"])]
    ci = median_interval(extra)
    spread = (f"; per length {min(extra) * 1e3:.0f}-{max(extra) * 1e3:.0f} ms, the median within "
              f"{max(0.0, ci[0]) * 1e3:.0f}-{max(0.0, ci[1]) * 1e3:.0f} ms ({ci[2] * 100:.0f}% interval: pipeplan sweep "
              f"--vary sequence.new_shape_host_s={max(0.0, ci[0]):.3f},{max(0.0, ci[1]):.3f} brackets it)"
              if ci else "")
    return (f"new batch shapes: a step on a shape not run before {statistics.median(ns['new_host_s']) * 1e3:.1f} ms "
            f"host ({statistics.median(ns['new_wall_s']) * 1e3:.1f} ms to its sync), the same shape again "
            f"{statistics.median(ns['seen_host_s']) * 1e3:.1f} ms ({statistics.median(ns['seen_wall_s']) * 1e3:.1f}): "
            f"sequence.new_shape_host_s {max(0.0, ns['new_shape_host_s']) * 1e3:.1f} ms ({len(ns['lengths'])} lengths "
            f"{ns['lengths'][0]}..{ns['lengths'][-1]} at {ns['rows']} rows{spread})")


# ----------------------------------------------------------------------------- the memory map beside the pin thread
# The interleaved blocks, the harness's host_beside_pin_parts and --memory-map alike (validation run 28, finding 1): 8
# blocks beside the pin work and 8 beside its receive alone, between 17 alone ones, 8 steps each; a ResNet-50 step's
# spread (cv 10-15%) leaves each block's excess uncertain by about 1.6 ms against about 7 ms of stall, the rate over 8
# blocks by about 0.06.
MEMORY_MAP_BLOCK_STEPS = 8
MEMORY_MAP_ROUNDS = 8
# Whether a loop needs the memory map (validation run 30, finding 1): its blocks beside the pin work run slower than
# their alone neighbours at Student's one-sided 95%, and the loss is a rate: under the work's own time inside the
# steps (0 < rate < 1). A light loop loses more than that (mm:5: 1.45-2.21 a second of the work, run 30's matmul
# example 3.8-4.7): it waits for the interpreter lock behind the receive, outside the work's spans, which the
# simulator charges to the lock; modelled as the map it would stop the loop at every mapping. ResNet-50 loops read
# 0.63-0.94 (harness and helper, runs 28-30), mm:25 0.43 (the cases' own lines 0.42, median of 48). Two rules failed
# before it: the loop thread's page faults beside the work (copy-on-write after each window's DataLoader fork: run
# 30's late halves read 1 a step where the windows read 55-64), and the excess against the helper's receive CPU a
# batch as the lock's most (run 30's GIL2: 8.28 ms a step against 8.04 ms of receive CPU, while its cases stall).
# The blocks beside the receive alone (since the twenty-sixth session) say how much of the loss comes with the
# receive: the helper's ResNet-50 example lost 5.7-6.1 ms a step there against 6.5-6.9 beside the whole work.
# The simulator's interval between a loop's needs of the memory map when the scenario gives no count
# (models/cost_models.hpp: kMemoryMapCheckIntervalS; docs/model.md, the memory map).
MEMORY_MAP_DEFAULT_NEED_INTERVAL_S = 0.0005


def memory_map_wait_from_rate(host_s_per_step: float, needs_per_step: Optional[float], rate: float) -> float:
    """training.memory_map_wait_s for a loop that runs at (1 - rate) of its speed while the pin thread works on a
    worker's mapping: the loop needs the map every host_s_per_step / needs_per_step of its host work (the
    simulator's default interval without a count), and each need waits interval x rate / (1 - rate), the time the
    loop would have lost over that interval. rate 0.75 at a 0.45 ms interval: 1.35 ms."""
    interval = host_s_per_step / needs_per_step if needs_per_step else MEMORY_MAP_DEFAULT_NEED_INTERVAL_S
    return interval * rate / (1.0 - rate)


def _validation_module(name: str):
    """A sibling module of this file (pace_thread, timeline_analysis): they travel with it in calibrate/validation."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    return importlib.import_module(name)


def tensors_in(obj: Any) -> List[Any]:
    """The tensors of a collated batch (a tensor, or lists, tuples and dicts of them), in order."""
    if hasattr(obj, "pin_memory") and hasattr(obj, "data_ptr"):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in tensors_in(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in tensors_in(v)]
    return []


def _pin_each(batch: Any) -> None:
    """What PyTorch's pin thread does to a batch: pin_memory() on each tensor (the caching host allocator's block,
    dropped here at once)."""
    for x in tensors_in(batch):
        x.pin_memory()


def endless_batches(dl: Any, batch_size: int):
    """The loader's batches epoch after epoch (persistent workers carry over); an epoch without a whole batch would
    spin, so it raises instead."""
    while True:
        n = 0
        for batch in dl:
            n += 1
            yield batch
        if n == 0:
            raise ValueError(f"the dataset gives no whole batch of {batch_size}")


def time_step_beside_pin(step_fn: Callable[[], Any], dataset: Any, collate_fn=None, batch_size: int = 64,
                         num_workers: int = 4, sync: Optional[Callable[[Any], None]] = None,
                         block_steps: int = MEMORY_MAP_BLOCK_STEPS, rounds: int = MEMORY_MAP_ROUNDS,
                         pin: Optional[Callable[[Any], None]] = None) -> Dict[str, Any]:
    """Your step in blocks of `block_steps`, alone and beside a helper thread (torch.set_num_threads(1), as the pin
    thread) that takes each batch from DataLoader(dataset, num_workers, pin_memory=False), one batch a step, at most
    two ahead, and either pin_memory()s it (P) or drops it (R: the receive alone): A P A R A P ... A (`rounds` of
    each). Each step's call is timed (its host span); timeline_analysis reads each beside block against its alone
    neighbours (the loop's drift cancels): the P blocks' {"rate", "block_rates", "block_excess_s", "alone_s",
    "beside_s", "overlap_s_per_step", "blocks"}, the R blocks' "receive_block_excess_s", and the loop thread's minor
    faults a step alone and beside P (/proc; None off Linux). `pin` replaces the pin work (tests). {"error": why}
    where the P blocks give no reading."""
    import threading
    import torch
    from torch.utils.data import DataLoader, IterableDataset
    pace_thread = _validation_module("pace_thread")
    timeline_analysis = _validation_module("timeline_analysis")
    sync = sync or _default_sync
    dl = DataLoader(dataset, batch_size=batch_size, shuffle=not isinstance(dataset, IterableDataset), drop_last=True,
                    num_workers=num_workers, collate_fn=collate_fn, pin_memory=False, persistent_workers=True,
                    prefetch_factor=2)

    source = endless_batches(dl, batch_size)
    for _ in range(2 * num_workers):           # the workers up and their first batches through
        next(source)
    for _ in range(3):                         # the step warm, as time_step's warm-up
        sync(step_fn())
    tid = threading.get_native_id()
    work_spans: List[Tuple[float, float]] = []
    blocks: List[Dict[str, Any]] = []
    faults: Dict[bool, List[float]] = {False: [], True: []}
    pin_work = pace_thread.spanned(pin or _pin_each, work_spans)
    mode = {"pin": True}

    def work(batch):                           # the helper's mode is set before the alone block ahead of its block
        if mode["pin"]:
            pin_work(batch)
    with pace_thread.PaceThread(source, work=work, ahead=2, on_start=lambda: torch.set_num_threads(1)) as pt:
        tokens = pt.tokens()
        for i in range(4 * rounds + 1):        # A P A R A P A R ... A: P beside the pin work, R beside the receive
            kind = "alone" if i % 2 == 0 else ("pin" if (i // 2) % 2 == 0 else "receive")
            if kind == "alone":
                mode["pin"] = (i // 2) % 2 == 0   # for the beside block after this one
            spans: List[Tuple[float, float]] = []
            f0 = pace_thread.thread_minor_faults(tid)
            for _ in range(block_steps):
                if kind != "alone":
                    next(tokens)
                h0 = time.perf_counter()
                out = step_fn()
                spans.append((h0, time.perf_counter()))
                sync(out)
            f1 = pace_thread.thread_minor_faults(tid)
            if f0 is not None and f1 is not None and kind != "receive":
                faults[kind == "pin"].append((f1 - f0) / block_steps)
            blocks.append({"kind": kind, "spans": spans})
    del source, dl
    spans_of_work = list(work_spans)
    pin_blocks = [dict(b, beside=b["kind"] == "pin") for b in blocks if b["kind"] != "receive"]
    receive_blocks = [dict(b, beside=b["kind"] == "receive") for b in blocks if b["kind"] != "pin"]
    out = timeline_analysis.interleaved_stall_rate(pin_blocks, spans_of_work) or \
        {"error": "no reading: the pin work never ran inside a step, or no beside block lay between alone ones "
                  "with steps clear of it"}
    out.update({"receive_block_excess_s": [e for e, _, _, _ in
                                           timeline_analysis.interleaved_block_excess(receive_blocks, spans_of_work)],
                "block_steps": block_steps, "rounds": rounds, "num_workers": num_workers,
                "alone_faults_per_step": _mean_or_none(faults[False]),
                "beside_faults_per_step": _mean_or_none(faults[True])})
    return out


MAIN_LOOP_WINDOW_S = 1.5    # each drop or copy window of time_main_loop (the harness's probe window)
MAIN_LOOP_SETTLE_S = 1.0    # batches dropped before the first window: a fresh pin thread is dearer for about 1 s


def to_device(batch: Any, device: Any, non_blocking: bool = True) -> Any:
    """batch.to(device, non_blocking=...) on each tensor of a collated batch (tensors_in's structure: tuples, lists
    and dicts of tensors), the structure kept and anything else passed through, as a training loop moves its batch.
    The validation harness moves its batches with it too. A container marked `stays_on_host` (the harness's encoded
    JPEGs, which torchvision's GPU decode reads from the CPU) is passed through."""
    if getattr(batch, "stays_on_host", False):
        return batch
    if hasattr(batch, "pin_memory") and hasattr(batch, "data_ptr"):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(b, device, non_blocking) for b in batch)
    if isinstance(batch, dict):
        return {k: to_device(v, device, non_blocking) for k, v in batch.items()}
    return batch


def main_loop_window(source: Any, mode: str, window_s: float, copy: Optional[Callable[[Any], None]] = None,
                     sync: Optional[Callable[[], None]] = None, clock: Callable[[], float] = time.perf_counter,
                     thread_clock: Callable[[], float] = time.thread_time) -> Dict[str, Any]:
    """One window of the loop's own side of a pinning loader: take batches from `source` for window_s (at least 3):
    "drop" drops each (the loop thread's CPU per batch is then next()'s own: the in-order bookkeeping and the next
    index's hand-out), "copy" hands each to `copy` and times that call (the .to() call: dispatch, the caching
    allocator, cudaMemcpyAsync), then calls `sync` outside the timing (the transfer itself is the copy engine's,
    not the loop's host time; run 44's first GPU run timed it inside: 0.76 ms where the call is 0.15).
    {"main_loop", "batches", "window_s", "main_thread_cpu_s_per_batch" (drop windows), "copy_call_s" (copy
    windows: the median call)}."""
    calls: List[float] = []
    n, cpu0, a = 0, thread_clock(), clock()
    while n < 3 or clock() - a < window_s:
        batch = next(source)
        if mode == "copy" and copy is not None:
            c0 = clock()
            copy(batch)
            calls.append(clock() - c0)
            if sync is not None:
                sync()
        n += 1
        del batch
    out: Dict[str, Any] = {"main_loop": mode, "batches": n, "window_s": clock() - a}
    if mode == "drop":
        out["main_thread_cpu_s_per_batch"] = (thread_clock() - cpu0) / n
    else:
        out["copy_call_s"] = statistics.median(calls) if calls else None
    return out


def main_loop_figures(windows: Sequence[Dict[str, Any]]) -> Dict[str, Optional[float]]:
    """Pure: the loop thread's CPU in next() a batch (the mean of the drop windows') and the .to() call's host time
    (the mean of the copy windows' medians); None where no window has it."""
    nxt = [float(w["main_thread_cpu_s_per_batch"]) for w in windows
           if w.get("main_loop") == "drop" and (w.get("main_thread_cpu_s_per_batch") or 0) > 0]
    call = [float(w["copy_call_s"]) for w in windows if w.get("main_loop") == "copy" and (w.get("copy_call_s") or 0) > 0]
    return {"main_next_s": _mean_or_none(nxt), "copy_call_s": _mean_or_none(call)}


def fd_handover_wait_s(res: Dict[str, Any]) -> Optional[float]:
    """Pure: the pin thread's time off its core a batch in the receive's file-descriptor hand-overs (each
    DupFd.detach() waits for the sending worker's sharer thread): their wall less the pin thread's CPU inside them,
    never below 0; None where they were not timed. The validation's default reading of
    loader.pin_thread_wait_s_per_batch where the loader's probes are worker-bound (convert.fd_handover_wait_s,
    --pin-thread-wait probes-fd; validation-runs.md runs 84 and 86: 0.5-2 ms a batch, by lease and worker count)."""
    wall, cpu = res.get("fd_detach_wall_s_per_batch"), res.get("fd_detach_cpu_s_per_batch")
    if wall is None or cpu is None:
        return None
    return max(0.0, float(wall) - float(cpu))


def loop_fragment(res: Dict[str, Any], pin_wait: bool = False) -> Dict[str, Any]:
    """The scenario keys a time_main_loop result fills: loader.main_next_s_per_batch and
    transfer.copy_call_s_per_batch (docs/scenario.md), and with pin_wait (--pin-wait-from-hand-overs)
    loader.pin_thread_wait_s_per_batch from the fd hand-overs (fd_handover_wait_s); {} from a failed one. pin_wait is
    off by default: the table takes this reading by default since run 86, but on the one job checked end to end
    (run 68's, checked again with the reading in run 87) it made the prediction worse, -6.5% / -7.9% without it and
    -9.5% / -10.9% with it (validation-runs.md run 87, finding 3)."""
    f = main_loop_figures(res.get("windows") or [])
    frag: Dict[str, Any] = {}
    if f["main_next_s"] is not None:
        frag["loader"] = {"main_next_s_per_batch": round(f["main_next_s"], 7)}
    wait_s = fd_handover_wait_s(res) if pin_wait and res.get("windows") else None
    if wait_s is not None:
        frag.setdefault("loader", {})["pin_thread_wait_s_per_batch"] = round(wait_s, 7)
    if f["copy_call_s"] is not None:
        frag["transfer"] = {"copy_call_s_per_batch": round(f["copy_call_s"], 7)}
    return frag


def time_main_loop(dataset: Any, collate_fn=None, batch_size: int = 64, num_workers: int = 4,
                   window_s: float = MAIN_LOOP_WINDOW_S, settle_s: float = MAIN_LOOP_SETTLE_S) -> Dict[str, Any]:
    """Your loader as the training loop sees it: DataLoader(dataset, num_workers, pin_memory=True), 2K batches to
    bring the workers up, settle_s of dropped batches, then four windows in turn, drop, copy, drop, copy
    (main_loop_window; the copy to CUDA non_blocking, a sync after each call). The loop thread's own Python beside
    the batch's wait and its .to() call run between a sync and the next step's copy: a loop that syncs every step
    leaves the GPU idle for both (validation runs 42 and 43: 0.13-0.35 ms and 0.16-0.32 ms a batch). Needs CUDA
    (pin_memory). {"windows", "num_workers", "batch_size"}."""
    import torch
    from torch.utils.data import DataLoader, IterableDataset
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device: a pinning loader and the copy need one")
    dl = DataLoader(dataset, batch_size=batch_size, shuffle=not isinstance(dataset, IterableDataset), drop_last=True,
                    num_workers=num_workers, collate_fn=collate_fn, pin_memory=True, persistent_workers=True,
                    prefetch_factor=2)

    def copy(batch):
        to_device(batch, "cuda")
    harness = _validation_module("harness")
    # on before the loader's iterator starts its pin thread: the meter wraps the pin loop and DupFd.detach, and puts
    # them back however this ends
    with harness.PinThreadMeter() as meter:
        source = endless_batches(dl, batch_size)
        for _ in range(2 * num_workers):
            next(source)
        until = time.perf_counter() + settle_s
        while time.perf_counter() < until:
            next(source)
        mark0 = pin_thread_mark(meter)
        windows = [main_loop_window(source, mode, window_s, copy, torch.cuda.synchronize)
                   for mode in ("drop", "copy", "drop", "copy")]
        mark1 = pin_thread_mark(meter)
    del source, dl
    out = {"windows": windows, "num_workers": num_workers, "batch_size": batch_size}
    batches = sum(int(w["batches"]) for w in windows)
    # over the same windows (the validation harness's per-case probes read them the same way): the receive's fd
    # hand-overs, fd_detach_{calls,wall_s,cpu_s}_per_batch, absent where the torch version hands storages over
    # otherwise; and the pin thread's CPU a batch beside your own loader's workers: the transport over cached samples
    # reads it 12% cheaper at median over the table's pinned tensor cases (validation-runs.md, the user's path),
    # which --profile-out scales away
    out.update({k: v for k, v in pin_thread_between(harness, mark0, mark1, batches).items()
                if k.startswith("fd_detach_") or k == "pin_thread_cpu_s_per_batch"})
    return out


def pin_thread_mark(meter: Any) -> Tuple[Any, Optional[int], Optional[float]]:
    """The pin thread at one instant, for a window's edge: a harness.PinThreadMeter's totals, the pin thread's
    native id (pin_thread_native_id) and its CPU seconds so far (None without a pin thread)."""
    tid = pin_thread_native_id()
    return meter.snapshot(), tid, (process_cpu_s(os.getpid(), tid) if tid is not None else None)


def pin_thread_between(harness: Any, mark0: Tuple[Any, Optional[int], Optional[float]],
                       mark1: Tuple[Any, Optional[int], Optional[float]], batches: int) -> Dict[str, Any]:
    """Per-batch pin thread figures between two pin_thread_marks (harness.pin_thread_figures): the meter's (fd
    hand-overs, pin_memory() calls) always, the thread's CPU only where both marks saw the same pin thread (one
    restarted inside the window, at an epoch's end without persistent_workers, is another thread's clock)."""
    same = mark0[1] is not None and mark0[1] == mark1[1]
    return harness.pin_thread_figures(mark0[0], mark1[0], mark0[2] if same else None, mark1[2] if same else None,
                                      batches)


def pin_thread_native_id() -> Optional[int]:
    """The native id of this process's DataLoader pin thread (its target, torch's _pin_memory_loop, names it), or
    None where none runs or the name does not say."""
    import threading
    for t in threading.enumerate():
        if "_pin_memory_loop" in (t.name or "") and getattr(t, "native_id", None):
            return int(t.native_id)
    return None


def _mean_or_none(xs: Sequence[float]) -> Optional[float]:
    return sum(xs) / len(xs) if xs else None


# Student's t, one-sided 95%, by degrees of freedom 1-10 (tables); beyond, the Cornish-Fisher expansion to 1 / df^2
# (df 11: 1.795 against the table's 1.796; df 14: 1.761).
_T95_ONE_SIDED = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812)


def student_t_95(df: int) -> float:
    """Student's t quantile, one-sided 95%, at `df` degrees of freedom (df >= 1)."""
    if df <= len(_T95_ONE_SIDED):
        return _T95_ONE_SIDED[df - 1]
    z = 1.6449
    return z + (z ** 3 + z) / (4.0 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96.0 * df ** 2)


def block_excess_s(res: Dict[str, Any], key: str = "block_excess_s") -> List[float]:
    """The beside blocks' excess a step over their alone neighbours, finite ones: `block_excess_s` (beside the pin
    work; recorded since the twenty-sixth session, before it each block's rate times the mean overlap, what the
    rate was made of up to the blocks' own overlap) or `receive_block_excess_s` (beside the receive alone)."""
    xs = res.get(key)
    if xs is None and key == "block_excess_s":
        ov = res.get("overlap_s_per_step")
        xs = [r * ov for r in (res.get("block_rates") or []) if r is not None] if isinstance(ov, (int, float)) else []
    return [float(x) for x in (xs or []) if isinstance(x, (int, float)) and math.isfinite(x)]


def memory_map_needed(res: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Whether the loop needs the memory map, from an interleaved reading (time_step_beside_pin): its blocks beside
    the pin work slower than alone at Student's one-sided 95% (their mean excess over its standard error), and the
    rate a rate (0 < rate < 1): {"needed", "excess_s" (mean), "t", "t_min", "rate", "blocks", and
    "receive_excess_s" (the mean beside the receive alone) where measured}. None with fewer than 3 blocks or no
    rate. 8 blocks 10 ms slower on average with sd 2 ms: t 14.1, needed at rate 0.9; not at rate 2.2."""
    xs, rate = block_excess_s(res), res.get("rate")
    if len(xs) < 3 or not isinstance(rate, (int, float)) or not math.isfinite(rate):
        return None
    mean = sum(xs) / len(xs)
    se = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) / len(xs))
    t = mean / se if se > 0 else math.copysign(math.inf, mean)
    t_min = student_t_95(len(xs) - 1)
    out = {"needed": t >= t_min and 0.0 < rate < 1.0, "excess_s": mean, "t": t, "t_min": t_min,
           "rate": float(rate), "blocks": len(xs)}
    rx = block_excess_s(res, "receive_block_excess_s")
    if rx:
        out["receive_excess_s"] = sum(rx) / len(rx)
    return out


def memory_map_fragment(res: Dict[str, Any]) -> Dict[str, Any]:
    """The scenario keys a time_step_beside_pin result fills. Where the loop needs the memory map
    (memory_map_needed): training.host_needs_memory_map and training.memory_map_wait_s = interval x r / (1 - r) at
    the simulator's default need interval (memory_map_wait_from_rate, the converter's too: r 0.75 at 0.5 ms is
    1.5 ms). Where it does not: host_needs_memory_map false. Without a verdict (too few blocks): nothing (the
    simulator's default, no stall)."""
    verdict = memory_map_needed(res)
    if verdict is None:
        return {}
    if not verdict["needed"]:
        return {"training": {"host_needs_memory_map": False}}
    wait_s = memory_map_wait_from_rate(float(res.get("alone_s") or 0.0), None, verdict["rate"])   # default interval
    return {"training": {"host_needs_memory_map": True, "memory_map_wait_s": round(wait_s, 7)}}


def merge_fragments(a: Dict[str, Any], b: Dict[str, Any]) -> Dict[str, Any]:
    """Two fragments' sections side by side (a section both have: b's keys added to a's)."""
    out = json.loads(json.dumps(a))
    for sec, keys in b.items():
        out.setdefault(sec, {}).update(keys)
    return out


# ----------------------------------------------------------------------------- CLI
def write_whole(path: str, text: str) -> None:
    """Write `text` to `path` whole or not at all (a temporary file beside it, renamed over it)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def build_dataset(spec: str, args_json: str = "[]") -> Any:
    """The Dataset `spec` names: module:callable called with the JSON list args_json, or module:object used as is
    (anything with __getitem__)."""
    obj = load_callable(spec)
    return obj(*json.loads(args_json)) if callable(obj) and not hasattr(obj, "__getitem__") else obj


def steady_state_skip(num_workers: int, prefetch_factor: Optional[int]) -> int:
    """Steps left out of a measured loop before its steady state: the loader's first fill (prefetch_factor x
    num_workers batches in flight, the one in hand and the next), at least 5. The validation harness's cases and
    job_check.py's loop use it, as pipeplan's default training.warmup_steps does (without the floor)."""
    return max((prefetch_factor or 0) * num_workers + 2, 5)


def load_callable(spec: str):
    """'package.module:attr' (attr may be dotted) -> object; a file path works as module."""
    if ":" not in spec:
        raise ValueError(f"expected module:callable, got {spec!r}")
    mod_name, attr = spec.split(":", 1)
    if mod_name.endswith(".py") or os.sep in mod_name:
        path = os.path.abspath(mod_name)
        sp = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
        if sp is None or sp.loader is None:
            raise ImportError(f"cannot load {path}")
        mod = importlib.util.module_from_spec(sp)
        sys.modules[sp.name] = mod
        sp.loader.exec_module(mod)
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        mod = importlib.import_module(mod_name)
    obj = mod
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _human(res: Dict[str, Any]) -> str:
    ld, co, bb = res["load_s_per_sample"], res["collate_s_per_batch"], res["batch_bytes"]
    lines = [
        f"samples in dataset     {res['num_samples']}",
        f"__getitem__            {ld['mean']*1e3:.3f} ms  cv {ld['cv']:.2f}  stderr {ld['stderr_rel']*100:.1f}%  (n={ld['n']})",
        f"collate (batch {res['batch_size']:>4})    {co['mean']*1e3:.3f} ms  cv {co['cv']:.2f}  stderr {co['stderr_rel']*100:.1f}%  (n={co['n']})",
        f"batch bytes            {bb['mean']:.0f}  ({res['item_bytes_from_batch']:.0f} per sample)",
        (f"the loop's own capacity {1.0/ld['mean']:.1f} samples/s (load only, inline: num_workers=0, this "
         f"process's threads: the fragment's)" if res.get("inline") else
         f"one worker's capacity  {1.0/ld['mean']:.1f} samples/s (load only, one idle core)"),
    ]
    return "\n".join(lines)


def expand_file_specs(flag: str, specs: Sequence[str]) -> Optional[List[str]]:
    """The files a list of paths or globs (** allowed) names, in order; None (after one line on stderr naming the flag
    and the spec) where a spec matches no file."""
    import glob
    paths: List[str] = []
    for spec in specs:
        found = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
        if not found:
            print(f"pipeplan_probe: {flag} {spec!r}: no files match; expected the dataset's files (paths or globs)",
                  file=sys.stderr)
            return None
        paths.extend(found)
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=None,
                    help="module:callable returning the Dataset (or module:object); this or --step")
    ap.add_argument("--step", default=None,
                    help="module:callable returning your training step as a function of no arguments: one step on a "
                         "batch already on the device (forward, backward, optimizer step), returning the loss; fills "
                         "training.host_s_per_step, step_s (with CUDA) and launch_tail_s")
    ap.add_argument("--step-args", default="[]", help="JSON list of positional args for the --step callable")
    ap.add_argument("--steps", type=int, default=20, help="timed steps of the --step loop")
    ap.add_argument("--memory-map", action="store_true",
                    help="with --step, --dataset and --num-workers K: also time the step alone and beside a thread "
                         "pin_memory()ing your loader's batches in interleaved blocks; fills "
                         "training.host_needs_memory_map and memory_map_wait_s (needs CUDA)")
    ap.add_argument("--main-loop", action="store_true",
                    help="with --dataset and --num-workers K: also time the training loop's own side of your pinning "
                         "loader, its Python in next() and the batch's .to() call; fills loader.main_next_s_per_batch "
                         "and transfer.copy_call_s_per_batch (needs CUDA); it also times the receive's fd hand-overs "
                         "and prints them")
    ap.add_argument("--pin-wait-from-hand-overs", action="store_true",
                    help="with --main-loop: also write the hand-overs' wall less CPU as "
                         "loader.pin_thread_wait_s_per_batch, as the validation table reads its probes by default "
                         "since run 86 (off by default: run 87's job check read worse with it)")
    ap.add_argument("--no-main-loop", action="store_true",
                    help="with --transport --profile-out and --num-workers K: do not run --main-loop for the fold's "
                         "scaling (it runs by default there: validation run 68)")
    ap.add_argument("--dataset-args", default="[]",
                    help="JSON list of positional args for the dataset callable")
    ap.add_argument("--collate", default=None, help="module:callable collate_fn "
                    "(default: torch.utils.data.default_collate)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--samples", type=int, default=300, help="timed __getitem__ calls")
    ap.add_argument("--batches", type=int, default=30, help="timed collate calls")
    ap.add_argument("--sample-bytes", type=float, default=None,
                    help="bytes read from storage per sample (mean), if known")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=None)
    ap.add_argument("--num-workers", type=int, default=None,
                    help="your DataLoader's num_workers: also time that many workers loading at once (needs torch); "
                         "0: the main process loads inline, timed here with this process's torch threads and no "
                         "worker")
    ap.add_argument("--no-worker", action="store_true",
                    help="skip the timing inside one DataLoader worker (needs torch; used for the fragment when present)")
    ap.add_argument("--cold", action="store_true",
                    help="also time __getitem__ cold (page cache dropped: root, or --cold-files) and, with --profile, "
                         "write storage.read_latency_s")
    ap.add_argument("--cold-files", nargs="+", default=None, metavar="PATH_OR_GLOB",
                    help="the files your dataset reads (paths, or quoted globs with ** allowed): advised out of the "
                         "page cache without root; their mean size is the bytes a sample reads unless --sample-bytes "
                         "says otherwise")
    ap.add_argument("--open-files", nargs="+", default=None, metavar="PATH_OR_GLOB",
                    help="the dataset's files (paths, or quoted globs with ** allowed): time their open and close "
                         "(no read) and write storage.open_latency_s, the wait a file's open costs on a network file "
                         "system, taken out of the per-sample cost")
    ap.add_argument("--samples-per-file", type=int, default=1,
                    help="samples a file holds (1: a file a sample; a tar shard's sample count): "
                         "dataset.samples_per_file, with --open-files")
    ap.add_argument("--profile", default=None,
                    help="pipeplan calibrate's hardware profile (JSON): its storage stream rate turns the cold "
                         "timing into storage.read_latency_s")
    ap.add_argument("--transport", action="store_true",
                    help="with --dataset: also time the DataLoader's own hand-off of your batches (12 workers over "
                         "cached samples: the receive, and with CUDA the pin thread's work), as the validation "
                         "harness's transport component does (needs torch)")
    ap.add_argument("--profile-out", default=None, metavar="PROFILE.json",
                    help="with --transport and --profile: write --profile with the transport folded into its ipc "
                         "receive costs and host.pin_copy_bytes_per_s (and the validation's receive GIL hold): the "
                         "profile to simulate your job with (a calibrated profile alone over-predicted pin-bound "
                         "loaders by 15-30%%; validation-runs.md, the user's path and runs 67-68); with --num-workers K it "
                         "also runs --main-loop and scales the fold to your own loader's pin-thread cost, as the "
                         "validation table scales it")
    ap.add_argument("--out", default=None, help="write the scenario fragment here (JSON)")
    ap.add_argument("--base", default=None, metavar="SCENARIO.json",
                    help="a whole scenario to merge the measured keys into (the measured ones replace its own, section "
                         "by section; loader.batch_size and, with --num-workers, loader.num_workers follow this run): "
                         "--out is then a scenario pipeplan simulate runs as is")
    ap.add_argument("--raw", default=None, help="also write the full measurement (JSON)")
    ap.add_argument("--sequence", default=None, choices=["pad_to_longest", "pad_to_max", "pack"],
                    help="token samples of varying length: read each timed sample's length (its input_ids, first "
                         "tensor or list) and write the scenario's sequence section with this collate instead of "
                         "dataset.item_bytes (docs/scenario.md, sequence)")
    ap.add_argument("--max-tokens", type=int, default=0,
                    help="with --sequence: truncation, pad_to_max's length or pack's row (sequence.max_tokens)")
    ap.add_argument("--lengths", default=None, metavar="FILE",
                    help="with --sequence: the whole dataset's lengths in tokens (a JSON array, or one a line; e.g. "
                         "from a datasets column: json.dump([len(x) for x in ds['input_ids']], f)), written as "
                         "sequence.tokens_per_sample_histogram instead of the timed samples' mean and cv: batch "
                         "shapes repeat as often as the dataset's long lengths do")
    ap.add_argument("--shape-step", default=None, metavar="module:callable",
                    help="time what your step costs on a batch shape it has not run (sequence.new_shape_host_s): "
                         "callable(*step_args) returns a function of (rows, length) running one step on a batch of "
                         "that shape and returning the loss")
    ap.add_argument("--shape-rows", type=int, default=None,
                    help="with --shape-step: the batch's rows (default --batch-size)")
    ap.add_argument("--shape-fit-rows", default=None, type=_row_counts, metavar="R1,R2,...",
                    help="with --shape-step: the row counts the step-by-shape fit times (default the batch's rows, "
                         "twice and four times them; give the batch sizes a sweep will try)")
    ap.add_argument("--pad-to-multiple-of", type=int, default=0,
                    help="with --sequence pad_to_longest: collate's pad_to_multiple_of (sequence.pad_to_multiple_of)")
    a = ap.parse_args(argv)
    if not a.dataset and not a.step and not a.shape_step:
        print("pipeplan_probe: nothing to measure; expected --dataset, --step and/or --shape-step module:callable",
              file=sys.stderr)
        return 2
    if a.transport and not a.dataset:
        print("pipeplan_probe: --transport: needs --dataset (the samples it hands off)", file=sys.stderr)
        return 2
    if a.profile_out and not (a.transport and a.profile):
        print(f"pipeplan_probe: --profile-out {a.profile_out}: needs --transport and --profile (got --transport "
              f"{a.transport}, --profile {a.profile!r}); expected the calibrated profile to fold the transport into",
              file=sys.stderr)
        return 2
    for flag, path in (("--out", a.out), ("--raw", a.raw), ("--profile-out", a.profile_out)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            print(f"pipeplan_probe: {flag} {path}: its folder does not exist; expected a path in an existing folder",
                  file=sys.stderr)
            return 2
    cold_paths = expand_file_specs("--cold-files", a.cold_files or [])
    if cold_paths is None:
        return 2
    open_paths = expand_file_specs("--open-files", a.open_files or [])
    if open_paths is None:
        return 2
    if a.samples_per_file < 1:
        print(f"pipeplan_probe: --samples-per-file {a.samples_per_file}: expected a whole number >= 1", file=sys.stderr)
        return 2
    profile = None
    if a.cold and not cold_paths and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        print("pipeplan_probe: --cold: cannot drop the page cache (/proc/sys/vm/drop_caches is not writable); "
              "expected root, or --cold-files GLOB naming the dataset's files", file=sys.stderr)
        return 2
    if a.profile:
        profile, why = _read_json_object(a.profile)
        if why:
            print(f"pipeplan_probe: {a.profile}: cannot read the profile: {why}", file=sys.stderr)
            return 2
        rate = (profile.get("storage") or {}).get("stream_read_bytes_per_s")
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate <= 0:
            print(f"pipeplan_probe: {a.profile}: $.storage.stream_read_bytes_per_s = {json.dumps(rate)}; expected a "
                  f"positive number (a profile from pipeplan calibrate)", file=sys.stderr)
            return 2
    base = None
    if a.base:
        base, why = _read_json_object(a.base)
        if why:
            print(f"pipeplan_probe: --base {a.base}: cannot read the scenario: {why}; expected a pipeplan-scenario/1 "
                  f"JSON object", file=sys.stderr)
            return 2
    if a.memory_map and (not a.step or not a.dataset or not a.num_workers or a.num_workers < 1):
        print(f"pipeplan_probe: --memory-map: needs --step, --dataset and --num-workers K >= 1 (got --step "
              f"{a.step!r}, --dataset {a.dataset!r}, --num-workers {a.num_workers!r}); expected all three: your step "
              f"runs beside a pin thread working on your loader's batches", file=sys.stderr)
        return 2
    if a.sequence in ("pad_to_max", "pack") and a.max_tokens < 1:
        print(f"pipeplan_probe: --sequence {a.sequence}: needs --max-tokens N >= 1 (got {a.max_tokens}); expected the "
              f"length every row is {'packed' if a.sequence == 'pack' else 'padded'} to", file=sys.stderr)
        return 2
    if (a.lengths or a.pad_to_multiple_of) and not a.sequence:
        print(f"pipeplan_probe: --lengths / --pad-to-multiple-of: need --sequence (got --lengths {a.lengths!r}, "
              f"--pad-to-multiple-of {a.pad_to_multiple_of}); expected token samples", file=sys.stderr)
        return 2
    if a.pad_to_multiple_of < 0:
        print(f"pipeplan_probe: --pad-to-multiple-of {a.pad_to_multiple_of}: expected an integer >= 0", file=sys.stderr)
        return 2
    a.dataset_lengths = None
    if a.lengths:
        try:
            a.dataset_lengths = read_lengths_file(a.lengths)
        except (OSError, ValueError, UnicodeDecodeError) as e:
            print(f"pipeplan_probe: --lengths {e}", file=sys.stderr)
            return 2
    if main_loop_for_fold(a.transport, a.profile_out, a.num_workers, a.main_loop, a.no_main_loop):
        a.main_loop = True
        print("pipeplan_probe: --profile-out with --num-workers: also running --main-loop, so that the fold follows "
              "the pin thread beside your own loader (--no-main-loop to skip)", file=sys.stderr)
    if a.main_loop and (not a.dataset or not a.num_workers or a.num_workers < 1):
        print(f"pipeplan_probe: --main-loop: needs --dataset and --num-workers K >= 1 (got --dataset {a.dataset!r}, "
              f"--num-workers {a.num_workers!r}); expected both: the loop's side of a loader with workers",
              file=sys.stderr)
        return 2
    if a.pin_wait_from_hand_overs and not a.main_loop:
        print("pipeplan_probe: --pin-wait-from-hand-overs: needs --main-loop (got none); expected --main-loop, whose "
              "windows time the hand-overs", file=sys.stderr)
        return 2
    if a.shape_fit_rows and not a.shape_step:
        print("pipeplan_probe: --shape-fit-rows: given without --shape-step (the rows its step-by-shape fit times)",
              file=sys.stderr)
        return 2
    if a.shape_step and a.shape_rows is not None and a.shape_rows < 1:
        print(f"pipeplan_probe: --shape-rows {a.shape_rows}: expected an integer >= 1", file=sys.stderr)
        return 2
    try:
        step_fn = build_step(a.step, a.step_args, "--step", "a function of no arguments")
        shape_step_fn = build_step(a.shape_step, a.step_args, "--shape-step", "a function of (rows, length)")
    except ValueError as e:  # bad input: exit 2 like pipeplan
        print(f"pipeplan_probe: {e}", file=sys.stderr)
        return 2
    frag: Dict[str, Any] = {}
    res: Dict[str, Any] = {}
    if a.dataset:
        try:
            ds = build_dataset(a.dataset, a.dataset_args)
            coll = load_callable(a.collate) if a.collate else None
        except Exception as e:  # bad input: exit 2 like pipeplan
            print(f"pipeplan_probe: cannot load dataset/collate: {e}", file=sys.stderr)
            return 2
        res = measure_dataset(a, ds, coll, cold_paths, profile, open_paths)
        frag = scenario_fragment(res, profile)
    if step_fn is not None:
        st = time_step(step_fn, n_steps=a.steps)
        res["step"] = st
        print(_human_step(st), file=sys.stderr)
        frag = merge_fragments(frag, training_fragment(st))
    if shape_step_fn is not None:
        known = a.dataset_lengths or res.get("sequence_timed_lengths") or []
        ns = time_new_shapes(shape_step_fn, a.shape_rows or a.batch_size, new_shape_lengths(known))
        res["new_shapes"] = ns
        print(_human_new_shapes(ns), file=sys.stderr)
        frag = merge_fragments(frag, new_shape_fragment(ns))
        # the step by shape (after the new-shape timing, so its own untimed steps do not warm the lengths timed there)
        ss = time_step_shapes(shape_step_fn, step_fit_shapes(a.shape_rows or a.batch_size, known,
                                                             a.shape_fit_rows))
        res["step_shapes"] = ss
        print(_human_step_shapes(ss), file=sys.stderr)
        frag = merge_fragments(frag, step_shapes_fragment(ss))
    if a.memory_map:
        mm = measure_memory_map(a, step_fn, ds, coll)
        res["memory_map"] = mm
        frag = merge_fragments(frag, memory_map_fragment(mm))
    if a.main_loop:
        ml = measure_main_loop(a, ds, coll)
        res["main_loop"] = ml
        frag = merge_fragments(frag, loop_fragment(ml, pin_wait=a.pin_wait_from_hand_overs))
    profile_out_missing = None
    if a.transport:
        tr = measure_transport(a, ds, coll)
        res["transport"] = tr
        if a.profile_out and "error" in tr:
            profile_out_missing = f"the transport was not measured ({tr['error']})"
        elif a.profile_out:
            try:
                worker_collate_s = float((res.get("in_worker") or {}).get("collate_s")
                                         or res["collate_s_per_batch"]["mean"])
                beside_s = (res.get("main_loop") or {}).get("pin_thread_cpu_s_per_batch")
                folded = profile_with_transport(
                    profile, tr, worker_collate_s, receive_gil_s=_validation_module("convert").H200_RECEIVE_GIL_S,
                    pin_cpu_beside_loader_s=beside_s)
                write_whole(a.profile_out, json.dumps(folded, indent=2) + "\n")
                print(f"profile                {a.profile_out}: {a.profile} with the transport folded in"
                      + fold_scaling_text(tr, beside_s), file=sys.stderr)
            except (ValueError, KeyError) as e:
                profile_out_missing = str(e)
    if base is not None:
        frag = scenario_with(base, frag, batch_size=a.batch_size if a.dataset else None, num_workers=a.num_workers)
    text = json.dumps(frag, indent=2)
    if a.out:
        write_whole(a.out, text + "\n")   # a killed probe leaves no half-written fragment
    else:
        print(text)
    if a.raw:
        write_whole(a.raw, json.dumps(res, indent=2))   # whole or not at all, as --out
    if profile_out_missing:
        print(f"pipeplan_probe: --profile-out {a.profile_out}: not written: {profile_out_missing}", file=sys.stderr)
        return 3
    return 0


def guarded(measure: Callable[..., Dict[str, Any]], human: Callable[[Dict[str, Any]], str],
            **kw: Any) -> Dict[str, Any]:
    """measure(**kw), or {"error": why} where it raises (no torch, no CUDA: the rest of the probe stands without
    it); its human summary on stderr either way."""
    try:
        res = measure(**kw)
    except Exception as e:
        res = {"error": f"{e.__class__.__name__}: {e}"}
    print(human(res), file=sys.stderr)
    return res


def measure_transport(a: argparse.Namespace, ds: Any, coll: Any) -> Dict[str, Any]:
    """--transport as the CLI asked for it; {"error": why} without torch."""
    return guarded(time_transport, _human_transport, dataset=ds, collate_fn=coll, batch_size=a.batch_size,
                   seed=a.seed)


def _human_transport(tr: Dict[str, Any]) -> str:
    if "receive_s_per_batch" not in tr:
        return f"DataLoader transport   not measured ({tr.get('error', 'no reading')})"
    line = (f"DataLoader transport   receive {tr['receive_s_per_batch'] * 1e3:.2f} ms a batch "
            f"({tr.get('receive_cpu_s_per_batch', float('nan')) * 1e3:.2f} ms of the loop's CPU)")
    if tr.get("pin_s_per_batch"):
        line += (f", receive + pin {tr['pin_s_per_batch'] * 1e3:.2f} ms (pin_memory() "
                 f"{tr.get('pin_copy_s_per_batch', float('nan')) * 1e3:.2f} ms, the pin thread's CPU "
                 f"{tr.get('pin_thread_cpu_s_per_batch', float('nan')) * 1e3:.2f} ms)")
    else:
        line += "; not pinned (no CUDA)"
    return line + f", {tr['num_workers']} workers over cached samples"


def build_step(spec: Optional[str], args_json: str, flag: str, expected: str) -> Optional[Callable[..., Any]]:
    """The step function that `spec` (module:callable) returns when called with --step-args; None without a spec.
    ValueError with one line naming the flag, the spec and what was expected where it cannot be built."""
    if not spec:
        return None
    try:
        fn = load_callable(spec)(*json.loads(args_json))
        if not callable(fn):
            raise TypeError(f"{spec}(...) returned {type(fn).__name__}, not a function")
        return fn
    except Exception as e:
        raise ValueError(f"{flag} {spec}: cannot build the step: {e}; expected module:callable returning {expected}")


def _read_json_object(path: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """(the JSON object in `path`, None), or (None, why not) for a file that is missing, not JSON or not an object."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return None, str(e)
    return (doc, None) if isinstance(doc, dict) else (None, f"$ is a JSON {type(doc).__name__}, not an object")


def scenario_with(base: Dict[str, Any], frag: Dict[str, Any], batch_size: Optional[int] = None,
                  num_workers: Optional[int] = None) -> Dict[str, Any]:
    """A whole scenario: `base` with the measured fragment's keys in place of its own, section by section, and the
    batch size and worker count the measurement ran with (None: the base's). Its description says what was
    measured."""
    out = merge_fragments(base, frag)
    if "sequence" in frag:
        (out.get("dataset") or {}).pop("item_bytes", None)   # pipeplan takes one or the other
    ld = out.setdefault("loader", {})
    if batch_size is not None:
        ld["batch_size"] = int(batch_size)
    if num_workers is not None:
        ld["num_workers"] = int(num_workers)
    measured = ", ".join(f"{sec}.{k}" for sec, keys in frag.items() for k in keys)
    note = f"measured by pipeplan_probe.py on {time.strftime('%Y-%m-%d')}: {measured}"
    out["description"] = (str(base.get("description") or "").rstrip() + " " if base.get("description") else "") + \
        f"[{note}]"
    return out


def _human_step(st: Dict[str, Any]) -> str:
    h = st["host_s"]
    lines = [f"training step          launches {h['mean']*1e3:.3f} ms  cv {h['cv']:.2f}  (n={h['n']}); loop with a sync "
             f"each step {st['loop_step_s']*1e3:.3f} ms a step"]
    g = st.get("gpu_step_s")
    if g is None:
        lines.append("GPU step               not measured (no CUDA): training.step_s and launch_tail_s left to you")
    else:
        tr = training_fragment(st)["training"]
        iso, sus = g.get("isolated_s"), g["sustained_s"]
        if "launch_tail_s" in tr:
            verdict = (f"host-bound, step_s the isolated time; the sync waits {tr['launch_tail_s']*1e3:.3f} ms for the "
                       "work launched last (training.launch_tail_s)")
        elif tr.get("step_s") == round(sus["mean"], 6):
            verdict = "the launches well ahead: step_s the back-to-back time"
        elif "step_s" in tr:
            verdict = "step_s the isolated time"
        else:
            verdict = "training.step_s left to you (no isolated time, and the launches are not well ahead)"
        lines.append("GPU step               isolated "
                     + (f"{iso['mean']*1e3:.3f} ms" if iso else "n/a (the launches never fit behind the hold)")
                     + f", back to back {sus['mean']*1e3:.3f} ms: {verdict}")
    return "\n".join(lines)


def measure_memory_map(a: argparse.Namespace, step_fn: Callable[[], Any], ds: Any, coll: Any) -> Dict[str, Any]:
    """--memory-map as the CLI asked for it, its human summary on stderr; {"error": why} without CUDA or where
    the blocks give no reading (the fragment then has none of its keys)."""
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device: pin_memory() needs one")
        mm = time_step_beside_pin(step_fn, ds, collate_fn=coll, batch_size=a.batch_size, num_workers=a.num_workers)
    except Exception as e:                     # the rest of the probe stands without it
        mm = {"error": f"{e.__class__.__name__}: {e}"}
    print(_human_memory_map(mm), file=sys.stderr)
    return mm


def measure_main_loop(a: argparse.Namespace, ds: Any, coll: Any) -> Dict[str, Any]:
    """--main-loop as the CLI asked for it, its human summary on stderr; {"error": why} without CUDA (the fragment
    then has none of its keys)."""
    return guarded(time_main_loop, _human_main_loop, dataset=ds, collate_fn=coll, batch_size=a.batch_size,
                   num_workers=a.num_workers)


def _human_main_loop(ml: Dict[str, Any]) -> str:
    f = main_loop_figures(ml.get("windows") or [])
    if f["main_next_s"] is None and f["copy_call_s"] is None:
        return f"main loop              not measured ({ml.get('error', 'no reading')}): its keys left to you"

    def ms(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{x * 1e3:.3f} ms"
    line = (f"main loop              next() {ms(f['main_next_s'])} of the loop thread's CPU a batch, the .to() call "
            f"{ms(f['copy_call_s'])} ({len(ml.get('windows') or [])} windows, {ml.get('num_workers')} workers, pinned)")
    wait_s = fd_handover_wait_s(ml)
    if wait_s is not None:
        line += (f"; the pin thread's fd hand-overs {ms(wait_s)} a batch off its core "
                 f"({ml['fd_detach_calls_per_batch']:.2f} a batch, {ms(ml['fd_detach_wall_s_per_batch'])} wall; "
                 f"--pin-wait-from-hand-overs writes it as loader.pin_thread_wait_s_per_batch)")
    return line


def _human_memory_map(mm: Dict[str, Any]) -> str:
    if "rate" not in mm:
        return f"memory map             not measured ({mm.get('error', 'no reading')}): its keys left to you"
    tr = memory_map_fragment(mm).get("training", {})
    line = (f"memory map             step {mm['alone_s']*1e3:.2f} ms alone, {mm['beside_s']*1e3:.2f} beside pin_memory() "
            f"({mm['overlap_s_per_step']*1e3:.2f} ms of it inside a step): loses {mm['rate']:.2f} per second of it "
            f"over {mm['blocks']} blocks")
    verdict = memory_map_needed(mm)
    if verdict is None:
        return line + "; no verdict (under 3 blocks beside the pin work)"
    line += f" ({verdict['excess_s']*1e3:.2f} ms a step slower, t {verdict['t']:.1f}, {verdict['t_min']:.2f} needed"
    if verdict.get("receive_excess_s") is not None:
        line += f"; {verdict['receive_excess_s']*1e3:.2f} ms beside the receive alone"
    line += ")"
    if tr.get("host_needs_memory_map"):
        return line + f"; needs the map: training.memory_map_wait_s {tr['memory_map_wait_s']*1e3:.3f} ms"
    if verdict["t"] >= verdict["t_min"]:
        return line + ("; does not need the map (host_needs_memory_map false): it loses more than the work's own "
                       "time, the interpreter lock behind the receive, which the simulator charges to the lock")
    return line + "; does not need the map (host_needs_memory_map false)"


def measure_dataset(a: argparse.Namespace, ds: Any, coll: Any, cold_paths: List[str],
                    profile: Optional[Dict[str, Any]], open_paths: Sequence[str] = ()) -> Dict[str, Any]:
    """The dataset's probe as the CLI asked for it, its human summary on stderr."""
    res = probe(ds, collate_fn=coll, batch_size=a.batch_size, n_samples=a.samples,
                n_batches=a.batches, seed=a.seed, sample_bytes=a.sample_bytes,
                max_seconds=a.max_seconds, in_worker=not a.no_worker, num_workers=a.num_workers,
                cold=a.cold, cold_paths=cold_paths,
                sequence={"collate": a.sequence, "max_tokens": a.max_tokens} if a.sequence else None)
    print(_human(res), file=sys.stderr)
    if open_paths:
        # opened after the warm timings: the files' data is cached, as the in-worker __getitem__ found it
        res["opens"] = time_opens(open_paths)
        res["samples_per_file"] = int(a.samples_per_file)
        op = res["opens"]
        print(f"file open (no read)     {op['wall_s_per_open']*1e6:.1f} us wall, {op['cpu_s_per_open']*1e6:.1f} us CPU "
              f"over {op['n']} files: storage.open_latency_s {op['wait_s_per_open']*1e6:.1f} us, "
              f"{a.samples_per_file} sample(s) a file", file=sys.stderr)
    sq = res.get("sequence") or {}
    if sq.get("tokens_per_sample") and a.pad_to_multiple_of > 1:
        sq["pad_to_multiple_of"] = int(a.pad_to_multiple_of)
    if sq.get("tokens_per_sample") and getattr(a, "dataset_lengths", None):
        # the fragment takes the dataset's own lengths (scenario_fragment swaps them in); the timed samples' mean
        # still prices a token of __getitem__
        res["sequence_dataset_lengths"] = length_histogram(a.dataset_lengths)
        print(f"sequence               {len(a.dataset_lengths):,} lengths from {a.lengths} "
              f"({len(res['sequence_dataset_lengths']):,} distinct): the fragment's tokens_per_sample_histogram",
              file=sys.stderr)
    if sq.get("tokens_per_sample"):
        print(f"sequence               {sq['tokens_per_sample']['mean']:.1f} tokens a sample (cv "
              f"{sq['tokens_per_sample']['cv']:.2f}), {sq['bytes_per_token']:g} bytes a token position; "
              f"collate {sq['collate']}: the fragment's sequence section", file=sys.stderr)
    elif sq:
        print(f"sequence               {sq['error']}", file=sys.stderr)
    if "in_worker" in res:
        w = res["in_worker"]
        print(f"inside one worker      __getitem__ {w['getitem_s']*1e3:.3f} ms, collate {w['collate_s']*1e3:.3f} ms "
              f"({w['samples']} samples): used for the fragment", file=sys.stderr)
    if "in_workers" in res:
        w = res["in_workers"]
        print(f"inside {w['workers']} workers at once  __getitem__ {w['getitem_s']*1e3:.3f} ms ({w['samples']} samples): "
              f"the fragment's per-sample cost, with the speed curve relative to it", file=sys.stderr)
    if "load_cold" in res:
        lc = res["load_cold"]
        print(f"cold __getitem__        {lc['mean']*1e3:.3f} ms (CPU {lc['cpu_s_per_sample']*1e3:.3f} ms, n={lc['n']}) "
              f"after {lc['method']}", file=sys.stderr)
        latency = cold_latency_of(res, profile)
        if latency is not None:
            print(f"cold wait per file     {latency*1e3:.3f} ms beyond its bytes at the stream rate: "
                  f"storage.read_latency_s", file=sys.stderr)
        else:
            print("cold wait per file     not written: it needs --profile and the bytes a sample reads "
                  "(--sample-bytes or --cold-files)", file=sys.stderr)
    return res


if __name__ == "__main__":
    sys.exit(main())
