#!/usr/bin/env python3
"""pipeplan fidelity harness: real PyTorch input pipelines, measured on the GPU machine.

Generates its own data (JPEGs, .npy tensors, token text), runs real training loops
(torch DataLoader with worker processes, PIL decode + torchvision transforms, pin_memory,
.to('cuda', non_blocking=...) with or without a side copy stream, a real GPU step), and
measures per case the steady-state step time and throughput, plus the component costs a
user can measure alone (one sample's __getitem__ in one process, collate, batch bytes,
the synthetic-data GPU step, the loop's host time per step, worker start-up).

Output: one JSON file (--out), rewritten after every case so a kill keeps what finished.
See docs/validation.md for the methods and for how convert.py turns it into predictions.

    PYTHONUNBUFFERED=1 python3 calibrate/validation/harness.py --out cases.json --budget-s 420
    python3 calibrate/validation/harness.py --quick --out smoke.json          # ~2 minutes
    python3 calibrate/validation/harness.py --cpu-test --quick --out t.json   # no GPU: code paths only
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import gc
import hashlib
import json
import math
import multiprocessing as mp
import os
import platform
import statistics
import random
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from typing import List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeplan_probe import (cpu_model, drop_page_cache, insitu_diff, json_default, process_cpu_s, summarize,  # noqa: E402
                            time_cold, time_collate, time_getitem, worker_spread, workers_cpu_per_batch, workers_cpu_s)
from pipeplan_probe import tensors_in, to_device  # noqa: E402  (a collated batch's tensors; its move to a device)
from pipeplan_probe import steady_state_skip  # noqa: E402  (the loader's fill left out: job_check.py's rule too)
from pipeplan_probe import new_shape_lengths, time_new_shapes  # noqa: E402  (the user helper's new-shape timing, the component's too)
from gil_probe import GilProbe, per_batch as gil_probe_figures  # noqa: E402  (how long a GIL-wanting thread waits beside the pin thread)
from sequence_fit import fit_sequence_step, fit_sequence_step_with_floor  # noqa: E402  (convert refits with them)
from timeline_analysis import p90_halves  # noqa: E402  (the window's own precision on its p90 step, every case)

import numpy as np  # noqa: E402

SCHEMA = "pipeplan-validation-cases/1"
T_START = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T_START:7.1f}s] {msg}", flush=True)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ============================================================================ data generation
# Runs in a multiprocessing pool forked before CUDA is touched.
def _gen_jpeg(args):
    from PIL import Image
    path, seed, w, h = args
    rng = np.random.default_rng(seed)
    gh, gw = int(rng.integers(3, 9)), int(rng.integers(3, 9))
    low = rng.integers(0, 256, size=(gh, gw, 3), dtype=np.uint8)
    img = Image.fromarray(low).resize((w, h), Image.BICUBIC)
    a = np.asarray(img, dtype=np.int16) + rng.normal(0.0, 22.0, size=(h, w, 3)).astype(np.int16)
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(path, format="JPEG", quality=90)
    return os.path.getsize(path)


def _gen_npy(args):
    path, seed, shape, dtype = args
    rng = np.random.default_rng(seed)
    if dtype == "uint8":
        arr = rng.integers(0, 256, size=shape, dtype=np.uint8)
    else:
        arr = rng.standard_normal(size=shape, dtype=np.float32)
    np.save(path, arr)
    return os.path.getsize(path)


def gen_images(root, n, pool):
    d = os.path.join(root, "jpeg")
    os.makedirs(d, exist_ok=True)
    rng = random.Random(1234)
    jobs = []
    for i in range(n):
        # ImageNet-like: mostly ~500x375 / 375x500, some smaller
        w, h = rng.choice([(500, 375), (500, 375), (500, 333), (375, 500), (400, 300), (500, 400)])
        jobs.append((os.path.join(d, f"{i:06d}.jpg"), 1000 + i, w, h))
    sizes = pool.map(_gen_jpeg, jobs, chunksize=16)
    return [j[0] for j in jobs], sizes


def gen_tensors(root, name, n, shape, dtype, pool):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    jobs = [(os.path.join(d, f"{i:06d}.npy"), 5000 + i, shape, dtype) for i in range(n)]
    sizes = pool.map(_gen_npy, jobs, chunksize=8)
    return [j[0] for j in jobs], sizes


def gen_tokens(root, n_lines, mean_words=256, cv=0.6, vocab_size=8000):
    d = os.path.join(root, "tokens")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(77)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, size=int(rng.integers(2, 10)))) for _ in range(vocab_size)]
    vocab = list(dict.fromkeys(vocab))
    varr = np.array(vocab, dtype=object)
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(mean_words) - sigma * sigma / 2
    lengths = np.clip(rng.lognormal(mu, sigma, size=n_lines).astype(int), 8, 2048)
    # Zipf-like word frequencies
    ranks = np.arange(1, len(vocab) + 1)
    p = 1.0 / ranks
    p /= p.sum()
    path = os.path.join(d, "text.txt")
    offsets, lens = [], []
    pos = 0
    with open(path, "wb") as f:
        for L in lengths:
            words = varr[rng.choice(len(vocab), size=int(L), p=p)]
            b = (" ".join(words) + "\n").encode()
            f.write(b)
            offsets.append(pos)
            lens.append(len(b))
            pos += len(b)
    return path, offsets, lens, vocab, [int(L) for L in lengths]


def token_length_stats(tokens_per_line):
    """Pure: the lines' lengths in tokens (words: TokenDataset's ids) as convert's sequence section reads them."""
    s = summarize([float(x) for x in tokens_per_line])
    # the dataset's own lengths, as (length, lines) pairs: a finite dataset has few distinct long lengths, so a batch's
    # longest repeats far more often than a continuous law's (validation run 63: new batch shapes, b128)
    counts = {}
    for x in tokens_per_line:
        counts[int(x)] = counts.get(int(x), 0) + 1
    return {"mean": s["mean"], "cv": s["cv"], "max": float(max(tokens_per_line)), "n": len(tokens_per_line),
            "histogram": [[k, counts[k]] for k in sorted(counts)]}


def lengths_no_line_has(histogram, lo: int, hi: int, count: int):
    """Pure: `count` token lengths in [lo, hi], evenly spread, that no line of the dataset has (histogram: [length,
    lines] pairs). A batch padded to its longest row has a line's length, so a pad-to-longest case never draws these:
    a probe stepping on them at the case's own rows warms none of its shapes. Fewer where [lo, hi] has fewer free."""
    taken = {int(length) for length, _ in (histogram or [])}
    free = [x for x in range(lo, hi + 1) if x not in taken]
    if len(free) <= count:
        return free
    return [free[round(i * (len(free) - 1) / (count - 1))] for i in range(count)] if count > 1 else free[:1]


# ============================================================================ datasets (picklable)
class ImageDataset:
    """torchvision-style ImageFolder item: open + PIL decode + RandomResizedCrop + flip + ToTensor + Normalize."""

    def __init__(self, paths, crop=224):
        import torchvision.transforms as T
        self.paths = list(paths)
        self.tf = T.Compose([
            T.RandomResizedCrop(crop),
            T.RandomHorizontalFlip(),
            T.ToTensor(),
            T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
        ])

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        from PIL import Image
        with open(self.paths[i], "rb") as f:
            img = Image.open(f)
            img = img.convert("RGB")
        return self.tf(img), i % 1000


class HostTensors(list):
    """Tensors a training loop leaves on the host: encoded JPEGs for torchvision.io.decode_jpeg(device="cuda"), which
    reads CPU tensors (to_device passes them through; DataLoader's pin_memory pins each and keeps the type)."""
    stays_on_host = True


class ImageBytesDataset:
    """The image kind's JPEG files as their encoded bytes (one read, a uint8 tensor of its own storage, so a worker
    can share it), for a loop that decodes on the GPU (GpuDecodeStep)."""

    def __init__(self, paths):
        self.paths = list(paths)

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        import torch
        with open(self.paths[i], "rb") as f:
            data = bytearray(f.read())
        return torch.frombuffer(data, dtype=torch.uint8).clone(), i % 1000


def bytes_collate(batch):
    """A batch of encoded JPEGs: their tensors as HostTensors (sizes differ: no stacking) and the labels."""
    import torch
    return HostTensors(b[0] for b in batch), torch.tensor([b[1] for b in batch], dtype=torch.int64)


def image_dataset_from_dir(root, crop=224):
    """The harness's JPEG dataset from a data directory it generated: device_run.sh points the user
    helper (pipeplan_probe.py --dataset calibrate/validation/harness.py:image_dataset_from_dir) at it,
    so that the helper's own worker timings run on the GPU machine too."""
    d = os.path.join(root, "jpeg")
    return ImageDataset(sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".jpg")), crop=crop)


class NpyTensorDataset:
    """Large pre-processed tensors stored one per .npy file."""

    def __init__(self, paths):
        self.paths = list(paths)

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        import torch
        return torch.from_numpy(np.load(self.paths[i])), i % 1000


# Family python_load (since run 55): per-sample work a user's pure-Python transform would do, in every worker
PY_LOAD_S_PER_SAMPLE = 0.0005


class PythonLoadDataset:
    """Another dataset's samples, each followed by `per_sample_s` of CPU work inside __getitem__: a Python loop holding
    the worker's GIL (a pure-Python transform), or hashing with the GIL released (the same work done in C). Run 55
    found a straggler's Python spin holding up the pin thread's receive of its previous batch (the fd sharer needs
    the GIL); this asks whether loads that hold the GIL in short stretches between reads do the same."""

    def __init__(self, ds, per_sample_s: float, holding_gil: bool):
        self.ds, self.per_sample_s, self.holding_gil = ds, float(per_sample_s), bool(holding_gil)

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        x = self.ds[i]
        spin_s(self.per_sample_s, self.holding_gil)
        return x


class TokenDataset:
    """Variable-length token sequences: read one text line (pread), tokenize with a word vocab."""

    def __init__(self, path, offsets, lens, vocab):
        self.path = path
        self.offsets = list(offsets)
        self.lens = list(lens)
        self.vocab = {w: j + 2 for j, w in enumerate(vocab)}
        self._fd = None
        self._pid = None

    def __len__(self):
        return len(self.offsets)

    def __getstate__(self):
        s = dict(self.__dict__)
        s["_fd"] = None
        s["_pid"] = None
        return s

    def __getitem__(self, i):
        import torch
        if self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_RDONLY)
            self._pid = os.getpid()
        line = os.pread(self._fd, self.lens[i], self.offsets[i]).decode()
        v = self.vocab
        ids = [v.get(w, 1) for w in line.split()]
        return torch.tensor(ids, dtype=torch.int64), len(ids)


SEQ_PAD_MAX_TOKENS = 512   # the tokens_pad512 kind: truncated at, and every row padded to, this many tokens


class PadToMaxCollate:
    """Truncate each sequence at max_tokens and pad every row to it (tokenizer padding="max_length",
    truncation=True) (+ the kept lengths). Picklable, for DataLoader workers."""

    def __init__(self, max_tokens):
        self.max_tokens = int(max_tokens)

    def __call__(self, batch):
        import torch
        seqs = [b[0][: self.max_tokens] for b in batch]
        out = torch.zeros((len(seqs), self.max_tokens), dtype=torch.int64)
        for j, s in enumerate(seqs):
            out[j, : s.shape[0]] = s
        return out, torch.tensor([int(s.shape[0]) for s in seqs], dtype=torch.int64)


def pad_collate(batch):
    """Pad to the longest sequence of the batch (+ lengths)."""
    import torch
    seqs = [b[0] for b in batch]
    L = max(int(s.shape[0]) for s in seqs)
    out = torch.zeros((len(seqs), L), dtype=torch.int64)
    for j, s in enumerate(seqs):
        out[j, : s.shape[0]] = s
    return out, torch.tensor([int(s.shape[0]) for s in seqs], dtype=torch.int64)


N_SLOTS = 64          # per-worker slots of the in-situ counters (worker id mod N_SLOTS)


class InSitu:
    """Counters in shared memory, written by the DataLoader workers (fork) or the main process:
    per slot [getitem wall, getitem cpu, samples, collate wall, collate cpu, batches, batch busy,
    batch busy squared]. A batch's busy time is its __getitem__ calls plus its collate, summed in
    the process that made it (`pending_s` is per process: each forked worker has its own copy);
    its spread across batches is what in-order delivery turns into idle workers."""
    FIELDS = 8

    def __init__(self):
        self.arr = mp.get_context("fork").RawArray("d", N_SLOTS * self.FIELDS)
        self.pending_s = 0.0
        self.timeline = None          # a Timeline with --timeline
        self.getitem_spans = None     # a GetitemSpans in a cold case

    @staticmethod
    def slot():
        from torch.utils.data import get_worker_info
        wi = get_worker_info()
        return 0 if wi is None else (wi.id % N_SLOTS)

    def per_worker(self, raw0, raw1):
        """[batches, batch busy sum, its squares] per worker slot between two raw() copies."""
        F = self.FIELDS
        return [[raw1[w * F + j] - raw0[w * F + j] for j in (5, 6, 7)] for w in range(N_SLOTS)]

    def raw(self):
        return list(self.arr)

    def snapshot(self):
        a = list(self.arr)
        return [sum(a[j::self.FIELDS]) for j in range(self.FIELDS)]

    @staticmethod
    def diff(s0, s1):
        return insitu_diff(s0, s1)


class PinThreadMeter:
    """The pin_memory thread's own costs in the main process: its CPU (user + system, /proc) between two
    reads, and the wall time of each pin_memory() call it makes (the copy into page-locked memory, without
    the receive from the workers' queue). PyTorch's pin loop calls its module's global `pin_memory`, so
    a wrapper put there while a DataLoader runs sees every call; `calls` stays 0 if a torch version stops
    doing so, and the figures are then left out rather than wrong."""

    def __init__(self):
        self.calls = 0
        self.wall_s = 0.0
        self._mod = None
        self._orig = None
        # --timeline (since run 24's plan): each outermost pin_memory() call's (start, end), perf_counter; the
        # copy touches the worker's shared pages first, so this is when the pin thread works on the map
        self.intervals: Optional[List[Tuple[float, float]]] = None
        # --timeline (eighty-third session): each batch the pin thread takes off the workers' result queue, (its
        # index, perf_counter when the get returned: unpickled, its storage's fd received), in the order taken: the
        # order the batches reached it, against their collates' (validation-runs.md, "The put's pace")
        self.received: Optional[List[Tuple[int, float]]] = None
        self._orig_loop = None
        self._depth = 0
        # the receive's file-descriptor hand-overs (ninetieth session; validation-runs.md run 83, finding 6): with
        # PyTorch's file_descriptor sharing strategy each storage a worker sends is rebuilt through
        # multiprocessing.resource_sharer.DupFd.detach(), which connects to the worker's sharer thread and waits for
        # it (that thread needs the busy worker's GIL); each call's wall and the calling thread's CPU inside it
        self.detach_calls = 0
        self.detach_wall_s = 0.0
        self.detach_cpu_s = 0.0
        # --timeline: each detach's (start, end), perf_counter, so its wait can be split by the sending worker's state
        self.detach_intervals: Optional[List[Tuple[float, float]]] = None
        self._rs = None
        self._orig_detach = None

    def _wrap_detach(self):
        """Times DupFd.detach() in this process while the meter is on. Any surprise leaves it as it was."""
        try:
            from multiprocessing import resource_sharer as rs
            orig = rs.DupFd.detach
        except Exception:      # noqa: BLE001 (no resource_sharer on this platform: no figures)
            return
        meter = self

        def detach(dself, *a, **kw):
            w0, c0 = time.perf_counter(), time.thread_time()
            try:
                return orig(dself, *a, **kw)
            finally:
                w1 = time.perf_counter()
                meter.detach_calls += 1
                meter.detach_wall_s += w1 - w0
                meter.detach_cpu_s += time.thread_time() - c0
                iv = meter.detach_intervals
                if iv is not None and len(iv) < 2 * TL_PER_SLOT:
                    iv.append((w0, w1))
        self._rs, self._orig_detach = rs, orig
        rs.DupFd.detach = detach

    def _wrap_pin_loop(self, pm):
        """Puts a wrapper on the module's _pin_memory_loop (the DataLoader iterator's pin thread resolves it when it
        starts the thread) that times each get from its in_queue. Any surprise in the torch version leaves the loop
        as it was: the figures are then absent, never the case broken."""
        orig_loop = getattr(pm, "_pin_memory_loop", None)
        if orig_loop is None:
            return
        meter = self

        def loop(in_queue, *a, **kw):
            try:
                orig_get = in_queue.get

                def get(*ga, **gkw):
                    r = orig_get(*ga, **gkw)
                    t = time.perf_counter()
                    rec = meter.received
                    if rec is not None and len(rec) < TL_PER_SLOT and isinstance(r, tuple) and r \
                            and isinstance(r[0], int):
                        rec.append((r[0], t))
                    return r
                in_queue.get = get
            except Exception:      # noqa: BLE001 (a queue that takes no attribute: leave it)
                pass
            return orig_loop(in_queue, *a, **kw)
        # the thread takes its name from its target's ("Thread-N (_pin_memory_loop)"), which finds it by name
        loop.__name__ = loop.__qualname__ = getattr(orig_loop, "__name__", "_pin_memory_loop")
        self._orig_loop = orig_loop
        pm._pin_memory_loop = loop

    def __enter__(self):
        import torch.utils.data._utils.pin_memory as pm
        self._mod, self._orig = pm, pm.pin_memory
        orig = pm.pin_memory
        self._wrap_pin_loop(pm)
        self._wrap_detach()

        def timed(data, *a, **kw):
            t0 = time.perf_counter()
            self._depth += 1      # pin_memory recurses into a batch's tensors through the module's global
            try:
                return orig(data, *a, **kw)
            finally:
                t1 = time.perf_counter()
                self._depth -= 1
                self.wall_s += t1 - t0
                self.calls += 1
                if self._depth == 0 and self.intervals is not None and len(self.intervals) < TL_PER_SLOT:
                    self.intervals.append((t0, t1))
        pm.pin_memory = timed
        return self

    def __exit__(self, *exc):
        self._mod.pin_memory = self._orig
        if self._orig_loop is not None:
            self._mod._pin_memory_loop = self._orig_loop
        if self._orig_detach is not None:
            self._rs.DupFd.detach = self._orig_detach
        return False

    def snapshot(self):
        return (self.calls, self.wall_s, self.detach_calls, self.detach_wall_s, self.detach_cpu_s)

    @staticmethod
    def thread_cpu_s(it) -> Optional[float]:
        """CPU seconds of a DataLoader iterator's pin_memory thread so far (None without one)."""
        th = getattr(it, "_pin_memory_thread", None)
        tid = getattr(th, "native_id", None)
        return None if tid is None else process_cpu_s(os.getpid(), tid)


# Seconds a case spends outside its measured window (run 12's logs): its probes before and after, the
# DataLoader's start and warm-up (about 6 s); the components of a (data kind, batch size) measured for
# the first time (transport, in_worker, load_scaling, worker_start, the load and collate components: 22-24 s for
# b64 images in run 45, 13-16 s for tensor_f32, tokens and tensor_u8; with probe_main_loop 34.2-37.8 s in runs
# 32-33, which FIRST_PIN_PROBES_S charges apart since run 46's plan);
# a step model measured for the first time (with its duty and burst curves: GEMM steps
# 6.5-12.8 s in runs 32-33; resnet50 16.8 s, NEW_HEAVY_STEP_S; 1.8 s more for the duty curve's longer top duty
# since run 45, duty_window_s, and 3.0 s more for its fourth duty, 0.9, since run 46's plan: run 45's GEMM steps
# took 8.3-14.3 s). A host-heavy loop with workers (ResNet-50) also
# runs four host probes before its first case of a (step, kind, batch size, workers) (host_under_load,
# host_beside_loader, host_beside_workers, host_beside_pin_parts, kept per key: 36.7 s in run 32's A1, whose
# last case started with 22 s left, took 65.6 s and ran the harness 37 s past its budget; HEAVY_PROBES_S).
CASE_SETUP_S, NEW_COMPONENTS_S, NEW_STEP_S = 6.0, 24.0, 15.0
NEW_HEAVY_STEP_S, HEAVY_PROBES_S = 22.0, 37.0
# A sequence step model's timing at SEQ_FIT_SHAPES, once per model (comp_sequence_step_shapes): twelve shapes of 13
# steps each, 9-117 ms a step on the H200 (run 63's nine took 6.5 s, plan builds included; the three added since at
# 64k positions about 2 s more)
SEQ_SHAPES_S = 15.0
SEQ_NEW_SHAPE_S = 9.0   # comp_sequence_new_shape, once per (step, kind, batch size): 16 lengths, a new and a seen step (b129: 0.3 s each; 8 lengths took 3.6 s in run 66)
# Once a call, before its first warm pinned case with workers: probe_main_loop and the one light loop's
# host_beside_pin_parts (run 45: 12.1 + 16.2, 13.0 + 17.0, 14.1 + 8.3 s). Until run 46's plan the first was folded into
# NEW_COMPONENTS_S (38 s for every new kind) and the second nowhere; run 45's later kinds took 13-16 s of components
# (tensor_f32, tokens, tensor_u8) and images 22-24, so B2b's four kinds were charged 88 s more than they took and its
# first cases got 1 s windows.
FIRST_PIN_PROBES_S = 27.0


def transport_key(knobs: dict) -> str:
    """The key a (data kind, batch size)'s components are kept under (transport, in_worker, load_scaling)."""
    return f"{knobs['kind']}/b{knobs['batch_size']}"


def step_key(knobs: dict) -> str:
    """The key a step model's component is kept under (comp_step)."""
    return f"{knobs['step']}/{knobs['kind']}/b{knobs['batch_size']}"


def heavy_probe_key(knobs: dict) -> str:
    """The key run_case keeps a host-heavy loop's host probes under (host_beside_workers and the others)."""
    return f"{step_key(knobs)}/w{knobs['num_workers']}"


def step_is_heavy(step_name: str, step_component: Optional[dict] = None) -> bool:
    """Pure: whether a step model's loop is host-heavy (host time above half its GPU time), which decides the
    host probes run_case measures around it. From its step component once measured; before that by name
    (the harness's GEMM steps, mm:N, are light; resnet50 is not)."""
    if step_component and "host_s" in step_component and "gpu_s" in step_component:
        return step_component["host_s"]["mean"] > 0.5 * step_component["gpu_s"]["mean"]
    return not (step_name.startswith("mm:") or step_name.startswith("seq:") or step_name.startswith("gpudec+"))


def skip_reason(knobs: dict, rem_s: float, components: dict, quick: bool) -> Optional[str]:
    """Pure: why a case is skipped with rem_s of the budget left (None: it runs). Too little for a measured
    window at all; a new (data kind, batch size) with workers first measures its components (transport,
    in_worker, load_scaling, step: 35-40 s in run 10, whose call A started the b128 case with 7 s left and the
    call's timeout killed it mid-component); a host-heavy loop with workers not yet probed first runs its host
    probes (about 37 s: run 32's A1 started its ResNet-50 case with 22 s left and ran 37 s past its budget)."""
    if rem_s < (1.0 if quick else 2.0):
        return ""
    comps = components or {}
    if (knobs["num_workers"] > 0 and transport_key(knobs) not in (comps.get("transport") or {})
            and rem_s < (15.0 if quick else 45.0)):
        return ", too little for its components"
    if (knobs["num_workers"] > 0 and step_is_heavy(knobs["step"], (comps.get("step") or {}).get(step_key(knobs)))
            and heavy_probe_key(knobs) not in (comps.get("host_beside_workers") or {})
            and rem_s < HEAVY_PROBES_S + CASE_SETUP_S):
        return ", too little for its host probes"
    return None


def setup_overhead_s(cases_left, components, probe_settle_s: float = 0.0, quick: bool = False) -> float:
    """Pure: the time the cases still to run will spend outside their measured windows (CASE_SETUP_S
    each, plus the settling of its two loader probes, NEW_COMPONENTS_S per (kind, batch size) with workers
    not yet measured, NEW_STEP_S per step model not yet measured (NEW_HEAVY_STEP_S for a host-heavy one) and
    HEAVY_PROBES_S per host-heavy loop with workers not yet probed, and FIRST_PIN_PROBES_S once before the first warm
    pinned case with workers while probe_main_loop is still to run: full mode only), for the harness's time allowance
    per case."""
    first_pin_probes_due = not quick and "probe_main_loop" not in (components or {}) and any(
        c["knobs"]["num_workers"] > 0 and c["knobs"]["pin_memory"] and c["knobs"].get("storage") != "cold"
        for c in cases_left)
    seen_tr = set((components or {}).get("transport") or {})
    steps = (components or {}).get("step") or {}
    seen_step = set(steps)
    seen_probes = set((components or {}).get("host_beside_workers") or {})
    seen_shapes = set((components or {}).get("sequence_step_shapes") or {})
    seen_new_shape = set((components or {}).get("sequence_new_shape") or {})
    seen_long = set((components or {}).get("wander_long") or {})
    total = FIRST_PIN_PROBES_S if first_pin_probes_due else 0.0
    for case in cases_left:
        k = case["knobs"]
        total += CASE_SETUP_S + 2 * probe_settle_s
        if not quick:  # two probes a case, each longer than the 1.5 s CASE_SETUP_S counts below four workers
            # (probe_window_s) or under --probe-window-s
            total += 2 * (probe_window_s(k["num_workers"], PROBE_WINDOW_S) - CASE_SETUP_PROBE_WINDOW_S)
        if PROBE_NO_PUT and k["num_workers"] > 0:  # the third probe: its loader's start and warm-up, settle, window
            total += NO_PUT_PROBE_START_S + probe_settle_s + (
                CASE_SETUP_PROBE_WINDOW_S if quick else probe_window_s(k["num_workers"], PROBE_WINDOW_S))
        long_key = wander_long_key(k) if WANDER_LONG_S > 0 and not quick else None
        if long_key is not None and long_key not in seen_long:  # once a call per loader setting
            total += WANDER_LONG_START_S + WANDER_LONG_S
            seen_long.add(long_key)
        tr_key, st_key = transport_key(k), step_key(k)
        heavy = step_is_heavy(k["step"], steps.get(st_key))
        if k["num_workers"] > 0 and tr_key not in seen_tr:
            total += NEW_COMPONENTS_S
            seen_tr.add(tr_key)
        if st_key not in seen_step:
            total += NEW_HEAVY_STEP_S if heavy else NEW_STEP_S
            seen_step.add(st_key)
        if k["step"].startswith("seq:") and k["step"] not in seen_shapes:
            total += SEQ_SHAPES_S
            seen_shapes.add(k["step"])
        if k["step"].startswith("seq:") and st_key not in seen_new_shape:
            total += SEQ_NEW_SHAPE_S
            seen_new_shape.add(st_key)
        if heavy and k["num_workers"] > 0 and heavy_probe_key(k) not in seen_probes:
            total += HEAVY_PROBES_S
            seen_probes.add(heavy_probe_key(k))
    return total


def case_allowance_s(rem_s: float, cases_left, components, probe_settle_s: float = 0.0, quick: bool = False) -> float:
    """Pure: the measured window the first of cases_left gets with rem_s of the budget left: an even share of what
    their setup (setup_overhead_s) leaves, less 15%, between 1 s and CASE_WINDOW_S."""
    overhead = setup_overhead_s(cases_left, components, probe_settle_s, quick)
    return min(max((rem_s - overhead) / max(len(cases_left), 1) * 0.85, 1.0), CASE_WINDOW_S)


# The shortest measured window a case gets before later cases are left out for it (full mode). Run 45's B2b (ten cases
# and four data kinds' components in a 309 s budget) measured its first data_kind cases in 1 s windows (24 steps:
# the image case 0.85 s, -17.1% against the model where the call's others read -5% to +2%); over the table of runs
# 11-44, the cases measured in under 2 s miss 12% on throughput 19% of the time (26 of 137), the rest 12% (135 of
# 1,103). A case that is not measured costs a family one setting; one measured in a second costs it a wrong one.
MIN_CASE_WINDOW_S = 3.0


def cases_to_leave_out(rem_s: float, pending, components, probe_settle_s: float, min_window_s: float) -> list:
    """Pure: which of pending (pending[0] the case about to run) to leave out so that pending[0]'s window
    (case_allowance_s) reaches min_window_s: repeats (repeat > 0) first, then the others, the latest first; never
    pending[0]. Indices into pending, in the order left out; empty when the window is long enough already."""
    kept = list(range(len(pending)))
    order = ([i for i in reversed(kept[1:]) if pending[i].get("repeat", 0) > 0]
             + [i for i in reversed(kept[1:]) if not pending[i].get("repeat", 0) > 0])
    out = []
    for i in order:
        if case_allowance_s(rem_s, [pending[j] for j in kept], components, probe_settle_s) >= min_window_s:
            break
        kept.remove(i)
        out.append(i)
    return out


def pin_thread_figures(pin0, pin1, cpu0, cpu1, batches: int) -> dict:
    """Per-batch pin thread figures between two PinThreadMeter snapshots and thread CPU reads."""
    out = {}
    calls = pin1[0] - pin0[0]
    if calls > 0:
        out["pin_copy_s_per_batch"] = (pin1[1] - pin0[1]) / calls
        out["pin_calls"] = calls
    if cpu0 is not None and cpu1 is not None and batches > 0:
        out["pin_thread_cpu_s_per_batch"] = (cpu1 - cpu0) / batches
    if len(pin0) >= 5 and len(pin1) >= 5 and batches > 0 and pin1[2] > pin0[2]:
        # the receive's fd hand-overs (PinThreadMeter._wrap_detach): their wall and CPU a batch; the difference is
        # the wait for the worker's sharer thread
        out["fd_detach_calls_per_batch"] = (pin1[2] - pin0[2]) / batches
        out["fd_detach_wall_s_per_batch"] = (pin1[3] - pin0[3]) / batches
        out["fd_detach_cpu_s_per_batch"] = (pin1[4] - pin0[4]) / batches
    return out


def pin_cycle_figures(intervals, a: float, b: float) -> dict:
    """Pure: the pin thread's cycle inside a probe's window [a, b] from its outermost pin_memory() calls' (start, end):
    one call's end to the next one's, over the calls that end inside the window. In a pin-bound probe (the pin
    thread always has a batch waiting) this is the pin thread's own batch time, receive and free included; its cv is
    convert's --pin-cycle probes for profile cpu.pin_thread_speed_cv (since the eighty-second session: the cases' pin
    cycle spread 0.05-0.18 did not follow the workers' wander, correlation 0.08 over 33 cases; run 77's probes read it
    0.101 where their cases ran 0.145, their loop only dropping batches). {} with fewer than 3 cycles."""
    ends = sorted(z for _, z in intervals if a <= z <= b)
    cycles = [y - x for x, y in zip(ends, ends[1:])]
    if len(cycles) < 3:
        return {}
    mean = sum(cycles) / len(cycles)
    var = sum((c - mean) ** 2 for c in cycles) / len(cycles)
    lag = (sum((x - mean) * (y - mean) for x, y in zip(cycles, cycles[1:])) / (var * len(cycles))
           if var > 0 else None)
    return {"pin_cycle_s": [round(c, 6) for c in cycles], "pin_cycle_mean_s": mean,
            "pin_cycle_cv": (var ** 0.5) / mean if mean > 0 else None, "pin_cycle_lag_one": lag}


TL_PER_SLOT = 4096    # batches recorded per worker slot by --timeline
PROBE_WINDOW_S = 1.5  # a probe's timed window around each case (full mode; quick 0.6 s; --probe-window-s)
CASE_SETUP_PROBE_WINDOW_S = 1.5  # the probe window CASE_SETUP_S was sized with (run 24's allowance)
# A probe with fewer than FEW_WORKERS_FULL loading processes (0 counts as one: the main process loads) gets a longer
# window, PROBE_WINDOW_S x FEW_WORKERS_FULL / max(k, 1) (so 4x at one, 2x at two), since the fifty-third session's
# plan: a 1.5 s window of one worker reads its case's mean load with sd 6.8%, 3 s 5.2%, where eight workers' 1.5 s
# reads 4.7% (validation-runs.md run 57, finding 4; probe_window_diagnostic.py). At four and more, longer buys little.
FEW_WORKERS_FULL = 4


def probe_window_s(num_workers: int, base_s: float) -> float:
    """Pure: the timed window of a probe with num_workers workers (0: the main process loads, as one), base_s at
    FEW_WORKERS_FULL workers and more, longer in proportion below."""
    return base_s * max(1.0, FEW_WORKERS_FULL / max(int(num_workers), 1))


# --probe-settle-s: batches dropped for this long after a probe's warm-up, before its window (full mode; quick 0).
# 1 s since run 24 (finding 1): a fresh pinning loader's pin thread is dearer for about its first second (image
# probes' first half-window 1.26-1.42x the case's own, second half 0.97-1.04x); settled probes read 1.016x.
PROBE_SETTLE_S = 1.0

# --probe-with-straggler (validation-runs.md run 71, finding 3): a straggler case's probes run its straggler too
# (worker 0 slow_worker_factor times slower, its spin as the case's). The slow_worker_order family's pin thread
# read 1.050x its probes' CPU a batch in the case (median of 26 in-order cases), the other families 0.95-1.04: with
# the straggler in the probes as well, a ratio near 1 says its presence makes the pin thread dearer. Run 72 (one H100
# lease) answered: the ratio was 1.009 with the straggler in the probes (16 cases) and 1.011 without (8), so its
# presence does not raise the pin thread's CPU; it does raise the probes' pin-thread wait (2.1-3.6 ms a batch for a
# Python spin, 1.1-2.2 GIL-free, against 0.6-0.8), which the simulator adds again from loader.slow_worker. A
# diagnostic only: ingest_call refuses such a call for the table.
PROBE_WITH_STRAGGLER = False
# --host-probes-all (device plan item 24): the loop's host probes around every case, light (mm:N) loops too, not
# only host-heavy ones. The call's one step component times a light loop's launches at 0.53-1.38 ms by call where the
# cases' loops run 1.1-1.9 ms after a wait (validation-runs.md "Replayed workers: what is left", finding 6), and the
# loop's turnaround after an overtake moves sync_every's p90 step.
HOST_PROBES_ALL = False
# --probe-no-put (validation-runs.md run 81, finding 2): a third probe right after each case with workers, its
# batches dropped inside the workers, so the per-sample cost reads apart from the queue feeder's hold on the GIL
PROBE_NO_PUT = False
NO_PUT_PROBE_START_S = 1.0   # its DataLoader's fork and 2K warm-up batches, about as a probe's (CASE_SETUP_S's part)
# --wander-long-s S (device plan item 28; validation-runs.md run 82, finding 3): once a call per warm loader setting
# with two workers or more, the probe's loader (the loop dropping each batch) for S seconds, its workers' batch series
# kept (components.wander_long): the wander's memory past the 4 batches a probe's short series can read. 0: off.
WANDER_LONG_S = 0.0
WANDER_LONG_START_S = 1.5    # its DataLoader's fork and 2K warm-up batches


def wander_long_key(knobs) -> Optional[str]:
    """timeline_analysis.wander_long_key (convert reads the reading by the same key)."""
    from timeline_analysis import wander_long_key as key
    return key(knobs)


def window_batch_durations(per_worker, t0: float, t1: float, slow_worker_factor: float = 1.0):
    """Pure: each worker's batch durations inside [t0, t1] from a Timeline's per_worker(0.0) ({worker id as a
    string: [[start, end], ...]}), for the probe's wander. A straggling worker 0 (--probe-with-straggler, factor
    over 1) is left out: its batches are the knob's, not the cores' wander."""
    return [[e - s for s, e in iv if s >= t0 and e <= t1] for w, iv in per_worker.items()
            if not (slow_worker_factor > 1.0 and w == "0")]


def probe_straggler(knobs: dict, with_straggler: bool):
    """Pure: (slow_worker_factor, holds_gil) for a case's probes: the case's own straggler under
    --probe-with-straggler, else none (1.0, True)."""
    if not with_straggler:
        return 1.0, True
    return float(knobs.get("slow_worker_factor", 1.0)), knobs.get("slow_worker_spin", "python") == "python"


# --case-window-s: the most a case's measured window gets of the harness's time allowance (full mode). 30 s until run
# 28's plan; a longer window measures the case's own p90 step more precisely (validation-runs.md run 27, finding 3: the
# halves of the table's windows differ by 7.6% median, 44.9% p90) at the cost of fewer cases a call.
CASE_WINDOW_S = 30.0
CASE_STEPS_AT_30_S = 1200   # the step cap (CUDA events held) for a 30 s window, scaled with a longer one


DUTY_SETTLE_S = 0.6          # the first part of each duty, untimed: the clock settles to it


def duty_window_s(duty: float) -> float:
    """Seconds the duty curve holds a duty. 1.2 s (0.6 timed) up to 0.5; 3.0 s (2.4 timed) above it, where run 44's
    0.6 s windows caught one hump of the GPU's clock each (the step up to 1.25x its low and back: validation-runs.md
    run 44, finding 2), too short to say how often it comes; run 45's 2.4 s windows found one every 1.0 s, 0.26 s
    long (finding 2, duty_hump_diagnostic.py)."""
    return 3.0 if duty > 0.5 else 1.2


def rest_for_duty_s(busy_s: float, wall_s: float, target_duty: float) -> float:
    """The sleep after a duty-curve step that brings the window's duty so far back to the target: the GPU time so
    far over the target, less the wall time so far (both from the window's start, the step just done included).
    Until run 46 the rest filled a fixed period (rested step / target), and the step lengthens as the GPU heats:
    run 46 aimed at 0.75 and 0.9 and ran at 0.80-0.83 and 0.99-1.00, leaving the 0.93-0.97 hump band unmeasured.
    Paced on the achieved time the duty holds whatever the step does, and a sleep's overshoot is paid back by the
    next rest. calibrate's compute section paces its own curve the same way (calibrate/duty_pacing.hpp)."""
    if target_duty <= 0.0 or target_duty >= 1.0:
        return 0.0
    return max(0.0, busy_s / target_duty - wall_s)


def set_case_window(window_s: float, min_window_s: Optional[float] = None) -> None:
    """--case-window-s and --min-case-window-s (None: the shortest window as it is)."""
    global CASE_WINDOW_S, MIN_CASE_WINDOW_S
    CASE_WINDOW_S = float(window_s)
    if min_window_s is not None:
        MIN_CASE_WINDOW_S = float(min_window_s)


def set_probe_timing(window_s: float, settle_s: float = 1.0) -> None:
    """--probe-window-s: every probe's window and the case head's that is compared with it; --probe-settle-s: how
    long a probe keeps dropping batches after its warm-up before that window opens."""
    global PROBE_WINDOW_S, PROBE_SETTLE_S
    PROBE_WINDOW_S = float(window_s)
    PROBE_SETTLE_S = float(settle_s)


MIN_BATCHES_PER_WORKER = 3   # a case's measured window holds at least this many batches a worker (full mode)


_sched_getcpu = None


def current_cpu() -> int:
    """The CPU the calling thread runs on now (glibc's sched_getcpu, through ctypes; about a microsecond), -1 where
    it cannot be read."""
    global _sched_getcpu
    if _sched_getcpu is None:
        try:
            import ctypes
            _sched_getcpu = ctypes.CDLL(None).sched_getcpu
        except (OSError, AttributeError):
            _sched_getcpu = False
    if not _sched_getcpu:
        return -1
    try:
        return int(_sched_getcpu())
    except OSError:
        return -1


class Timeline:
    """--timeline: each batch's start (its first __getitem__) and end (collate returned) per worker,
    in shared memory, in perf_counter seconds (CLOCK_MONOTONIC on Linux: one clock for the forked
    workers and the main process), to see when and why workers sit idle in a case. Beside each batch (since run
    42's plan): the worker thread's CPU seconds over the same span and the CPU it ran on at its start and its end,
    to tell a slow core (CPU seconds as long as the wall) from a worker kept off its core (CPU seconds short of it),
    and whether a slow spell stays with a worker or with a CPU (validation-runs.md run 41; run 40, finding 3). Since
    run 43's plan also the worker thread's CPU clock at the batch's start, so that its CPU between one batch's end and
    the next one's start (the index's fetch, the hand-off to its feeder thread) can be told from the worker process's
    other CPU: whether the send runs in series with the loads or beside the next batch (run 42, finding 7)."""
    STRIDE = 1 + 2 * TL_PER_SLOT
    CPU_STRIDE = 4 * TL_PER_SLOT      # per batch: thread CPU seconds, CPU at the start, CPU at the end, thread clock

    def __init__(self):
        self.arr = mp.get_context("fork").RawArray("d", N_SLOTS * self.STRIDE)
        self.cpu_arr = mp.get_context("fork").RawArray("d", N_SLOTS * self.CPU_STRIDE)
        self.batch_t0 = None          # per process, as InSitu.pending_s
        self.batch_c0 = 0.0
        self.batch_cpu0 = -1

    def start(self, t):
        if self.batch_t0 is None:
            self.batch_t0 = t
            self.batch_c0 = time.thread_time()
            self.batch_cpu0 = current_cpu()

    def end(self, t):
        w = InSitu.slot()
        j = w * self.STRIDE
        n = int(self.arr[j])
        if n < TL_PER_SLOT:
            started = self.batch_t0 is not None
            self.arr[j + 1 + 2 * n] = self.batch_t0 if started else t
            self.arr[j + 2 + 2 * n] = t
            k = w * self.CPU_STRIDE + 4 * n
            self.cpu_arr[k] = time.thread_time() - self.batch_c0 if started else 0.0
            self.cpu_arr[k + 1] = self.batch_cpu0 if started else -1
            self.cpu_arr[k + 2] = current_cpu()
            self.cpu_arr[k + 3] = self.batch_c0 if started else -1.0
            self.arr[j] = n + 1
        self.batch_t0 = None

    def per_worker_cpu(self):
        """{worker id: [[thread CPU seconds, CPU at the start, CPU at the end, the thread's CPU clock at the start],
        ...]}, in the order of per_worker's batches."""
        out = {}
        for w in range(N_SLOTS):
            n = int(self.arr[w * self.STRIDE])
            if n:
                k = w * self.CPU_STRIDE
                out[str(w)] = [[round(self.cpu_arr[k + 4 * i], 6), int(self.cpu_arr[k + 4 * i + 1]),
                                int(self.cpu_arr[k + 4 * i + 2]), round(self.cpu_arr[k + 4 * i + 3], 6)]
                               for i in range(n)]
        return out

    def per_worker(self, origin_s):
        out = {}
        for w in range(N_SLOTS):
            j = w * self.STRIDE
            n = int(self.arr[j])
            if n:
                out[str(w)] = [[round(self.arr[j + 1 + 2 * i] - origin_s, 6), round(self.arr[j + 2 + 2 * i] - origin_s, 6)]
                               for i in range(n)]
        return out


def window_worker_cpus(per_worker, per_worker_cpu, t0, t1):
    """{worker: the CPUs its batches inside [t0, t1] ended on, in order, repeats dropped}, from a Timeline's
    per_worker(0.0) and per_worker_cpu(): which vCPUs a probe's workers ran on, to set beside the case's own
    timeline (run 56, finding 3). Workers with no batch inside the window are left out; -1 where the CPU was
    not read."""
    out = {}
    for w, spans in per_worker.items():
        cpus = [int(c[2]) for (s, e), c in zip(spans, per_worker_cpu.get(w, [])) if s >= t0 and e <= t1]
        ordered = [c for i, c in enumerate(cpus) if i == 0 or c != cpus[i - 1]]
        if ordered:
            out[w] = ordered
    return out


GETITEM_SPANS_PER_SLOT = 8192   # __getitem__ calls recorded per worker slot in a cold case


def mean_in_flight(spans):
    """The count of spans in flight during a span, itself included, weighted by the span's length: the integral of
    the count squared over the integral of the count (each span's own length plus its overlap with every other,
    summed, over the summed lengths). calibrate's readers_in_flight_mean for its threads' reads, the simulator's
    storage.readers_in_flight_mean for its workers'. 0.0 without a span of positive length."""
    events = []
    for a, b in spans:
        if b > a:
            events.append((a, 1))
            events.append((b, -1))
    events.sort()
    count, last, sq, lin = 0, None, 0.0, 0.0
    for t, d in events:
        if last is not None and count > 0:
            sq += count * count * (t - last)
            lin += count * (t - last)
        count += d
        last = t
    return sq / lin if lin > 0 else 0.0


def spans_in_window(arr, stride, n_slots, t0, t1):
    """The (start, end) spans a GetitemSpans array holds (per slot: the count, then start, end pairs) that start at
    or after t0 and end by t1."""
    out = []
    for w in range(n_slots):
        j = w * stride
        for k in range(int(arr[j])):
            a, b = arr[j + 1 + 2 * k], arr[j + 2 + 2 * k]
            if a >= t0 and b <= t1:
                out.append((a, b))
    return out


class GetitemSpans:
    """Cold cases (forty-seventh session): each __getitem__ call's start and end per worker slot, in shared memory,
    perf_counter seconds (one clock for the forked workers), up to GETITEM_SPANS_PER_SLOT a slot. The calls in flight
    during a call are what the simulator counts as storage.getitem_in_flight_mean; a getitem is its file's read and
    its load, so this is not the reads alone (validation-runs.md run 52, finding 1)."""

    def __init__(self, per_slot=GETITEM_SPANS_PER_SLOT):
        self.per_slot = per_slot
        self.stride = 1 + 2 * per_slot
        self.arr = mp.get_context("fork").RawArray("d", N_SLOTS * self.stride)

    def record(self, slot, t0, t1):
        j = slot * self.stride
        n = int(self.arr[j])
        if n < self.per_slot:
            self.arr[j + 1 + 2 * n] = t0
            self.arr[j + 2 + 2 * n] = t1
            self.arr[j] = n + 1

    def in_window(self, t0, t1):
        return spans_in_window(self.arr, self.stride, N_SLOTS, t0, t1)


class InstrumentedDataset:
    def __init__(self, ds, insitu):
        self.ds, self.insitu = ds, insitu

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        w0, c0 = time.perf_counter(), time.thread_time()
        if self.insitu.timeline is not None:
            self.insitu.timeline.start(w0)
        x = self.ds[i]
        w1, c1 = time.perf_counter(), time.thread_time()
        slot = InSitu.slot()
        a, j = self.insitu.arr, slot * InSitu.FIELDS
        if self.insitu.getitem_spans is not None:
            self.insitu.getitem_spans.record(slot, w0, w1)
        a[j] += w1 - w0
        a[j + 1] += c1 - c0
        a[j + 2] += 1
        self.insitu.pending_s += w1 - w0
        return x


_SPIN_BUFFER = b"\0" * (256 << 10)


def spin_s(seconds: float, holding_gil: bool = True) -> float:
    """Keep this thread's core busy for `seconds` of wall time (no sleep: a straggler's extra work is CPU work, as the
    simulator's loader.slow_worker stretches a worker's CPU time); returns perf_counter at the end. holding_gil: a
    Python loop, which keeps its process's other threads (the result queue's feeder, the fd sharer) waiting for the
    GIL up to the switch interval; else hashing a 256 KiB buffer, which hashlib does with the GIL released."""
    end = time.perf_counter() + max(0.0, seconds)
    now = time.perf_counter()
    while now < end:
        if not holding_gil:
            hashlib.sha256(_SPIN_BUFFER)
        now = time.perf_counter()
    return now


def straggler_extra_s(busy_s: float, factor: float, worker_id: Optional[int]) -> float:
    """The knob slow_worker_factor: worker 0's extra time on a batch whose own busy time (its __getitem__ calls
    and collate) was busy_s, so that its batches take factor x as long; 0 for the other workers, in the main
    process (worker_id None) and for factors up to 1."""
    return (factor - 1.0) * busy_s if worker_id == 0 and factor > 1.0 else 0.0


def _worker_id() -> Optional[int]:
    from torch.utils.data import get_worker_info
    info = get_worker_info()
    return None if info is None else int(info.id)


class InstrumentedCollate:
    def __init__(self, fn, insitu, slow_worker_factor: float = 1.0, slow_worker_gil: bool = True,
                 drop_batch: bool = False):
        self.fn, self.insitu, self.slow_worker_factor = fn, insitu, float(slow_worker_factor)
        self.slow_worker_gil = bool(slow_worker_gil)
        # drop_batch (the no-put probe, --probe-no-put): collate as usual, then hand the loader a bare int, so the
        # worker's queue feeder pickles nothing into shared memory beside the worker's next __getitem__ calls
        self.drop_batch = bool(drop_batch)

    def __call__(self, batch):
        fn = self.fn
        if fn is None:
            from torch.utils.data import default_collate
            fn = default_collate
        w0, c0 = time.perf_counter(), time.thread_time()
        out = fn(batch)
        w1, c1 = time.perf_counter(), time.thread_time()
        a, j = self.insitu.arr, InSitu.slot() * InSitu.FIELDS
        a[j + 3] += w1 - w0
        a[j + 4] += c1 - c0
        a[j + 5] += 1
        busy = self.insitu.pending_s + (w1 - w0)
        a[j + 6] += busy
        a[j + 7] += busy * busy
        self.insitu.pending_s = 0.0
        if self.slow_worker_factor > 1.0:
            # a straggler (family slow_worker): after the in-situ sums above, which stay the workers' own costs,
            # so that the converter's costs are the others' and the knob alone makes worker 0 slower
            extra_s = straggler_extra_s(busy, self.slow_worker_factor, _worker_id())
            if extra_s > 0.0:
                w1 = spin_s(extra_s, self.slow_worker_gil)
        if self.insitu.timeline is not None:
            self.insitu.timeline.end(w1)
        if self.drop_batch:
            del out
            return 0
        return out


class TrivialDataset:
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return i


class CachedDataset:
    """Returns already-loaded samples: a DataLoader over it measures the transport alone
    (collate into shared memory, worker -> main hand-over, pinning), not the loading."""

    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return self.samples[i % len(self.samples)]


class IndexSampler:
    """Fresh seeded permutation(s) each epoch; `length` indices per epoch.

    replacement=False with length > n concatenates permutations (no repeats within n).
    """

    def __init__(self, n, length, seed=0):
        self.n, self.length, self.seed, self.epoch = n, length, seed, 0

    def __iter__(self):
        rng = random.Random(self.seed * 1000003 + self.epoch)
        self.epoch += 1
        out = []
        while len(out) < self.length:
            perm = list(range(self.n))
            rng.shuffle(perm)
            out.extend(perm)
        return iter(out[: self.length])

    def __len__(self):
        return self.length


# ============================================================================ device abstraction
class HostEvent:
    """Stand-in for torch.cuda.Event in --cpu-test mode."""

    def __init__(self):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


class Dev:
    def __init__(self, torch, cpu_test):
        self.torch = torch
        self.cpu = cpu_test
        self.device = torch.device("cpu" if cpu_test else "cuda")
        self._side = None
        self.sleep_cycles_per_s = None

    def event(self):
        return HostEvent() if self.cpu else self.torch.cuda.Event(enable_timing=True)

    def sync(self):
        if not self.cpu:
            self.torch.cuda.synchronize()

    def side_stream(self):
        if self.cpu:
            return None
        if self._side is None:
            self._side = self.torch.cuda.Stream()
        return self._side

    def calibrate_sleep(self):
        """cycles per second of torch.cuda._sleep, to hold the stream while the host enqueues."""
        if self.cpu or not hasattr(self.torch.cuda, "_sleep"):
            return
        t = self.torch
        t.cuda._sleep(1000)
        self.sync()
        e0, e1 = self.event(), self.event()
        cycles = 20_000_000
        e0.record()
        t.cuda._sleep(cycles)
        e1.record()
        self.sync()
        ms = e0.elapsed_time(e1)
        if ms > 0:
            self.sleep_cycles_per_s = cycles / (ms / 1e3)

    def hold_stream(self, seconds):
        """Queue a spin kernel of `seconds` so that the host's launches that follow queue up."""
        if self.sleep_cycles_per_s:
            self.torch.cuda._sleep(int(self.sleep_cycles_per_s * seconds))
            return True
        return False


def _spin_until(stop):
    """A CPU-bound child for host_under_load: pure Python, no CUDA, until `stop` is set."""
    x = 0
    while not stop.is_set():
        for i in range(20000):
            x += i * i
    return x


def _stream_memory_until(stop, nbytes=64 << 20):
    """A memory-bound child for host_under_load: copies one `nbytes` buffer into another (C memcpy, the traffic a
    worker's collate and the pin thread's copy make: 38.5 MB per batch, several times over) until `stop` is set.
    Returns the bytes copied."""
    src, dst = bytearray(b"\x5a") * nbytes, bytearray(nbytes)
    copied = 0
    while not stop.is_set():
        dst[:] = src
        copied += nbytes
    return copied


def memory_map_verdict_note(parts):
    """The memory-map verdict for host_beside_pin_parts' log line (pipeplan_probe.memory_map_needed, convert's rule):
    "; 8.20 ms a step slower beside it (t 14.3, 1.90 needed; 5.19 beside the receive alone): needs the map"."""
    from pipeplan_probe import memory_map_needed
    v = memory_map_needed(parts.get("pin_memory_interleaved") or {})
    if v is None:
        return "; no verdict on the memory map"
    note = f"; {v['excess_s'] * 1e3:.2f} ms a step slower beside it (t {v['t']:.1f}, {v['t_min']:.2f} needed"
    if v.get("receive_excess_s") is not None:
        note += f"; {v['receive_excess_s'] * 1e3:.2f} beside the receive alone"
    return note + ("): needs the map" if v["needed"] else "): does not need the map")


def host_probe_note(comps):
    """The case log's note of its host probes (before, after), or "" without them."""
    parts = [f"{name} {q['host_s']['mean'] * 1e3:.2f}" for name, q in
             (("before", comps.get("host_probe") or {}), ("after", comps.get("host_probe_after") or {}))
             if "host_s" in q]
    return f"loop host alone {' / '.join(parts)} ms, " if parts else ""


def loop_parts_note(measured):
    """The case log's note of its loop per step: next() (wall, and the loop thread's CPU in it, since run 26's plan),
    the .to() calls, the rest of the launches, the drop after the sync (ms), or "" without them (harness before run
    20's plan)."""
    if "copy_call_s" not in measured or "release_s" not in measured:
        return ""
    copy_s, release_s = measured["copy_call_s"]["mean"], measured["release_s"]["mean"]
    launch_s = measured["loop_host_s"]["mean"] - copy_s
    nxt = ""
    if "data_wait_cpu_s" in measured and "data_wait_s" in measured:   # since run 26's plan
        nxt = (f"next() {measured['data_wait_s']['mean'] * 1e3:.2f} (cpu {measured['data_wait_cpu_s']['mean'] * 1e3:.2f})"
               " / ")
    faults = measured.get("loop_minor_faults_per_step")              # since run 29's session
    faults = f", {faults:.0f} faults a step" if isinstance(faults, (int, float)) else ""
    return (f"loop {nxt}.to() {copy_s * 1e3:.2f} / launches {launch_s * 1e3:.2f} / drop {release_s * 1e3:.2f} ms"
            f"{faults}, ")


def synthetic_loop_host(model, gb, steps, batches=None, spans=None):
    """The plain synthetic loop for `steps` steps, loss.item() each: each step's host time (its start to its
    last launch returned) summarized, and the wall per step. With `batches` (an iterator), each step first
    takes (and drops) one batch from it, outside the host time. With `spans` (a list), each step's host time
    is appended to it as (start, end), perf_counter."""
    host, t0 = [], time.perf_counter()
    for _ in range(steps):
        if batches is not None:
            batch = next(batches)
            del batch
        h0 = time.perf_counter()
        loss = model(gb)
        h1 = time.perf_counter()
        host.append(h1 - h0)
        if spans is not None:
            spans.append((h0, h1))
        float(loss.item())
    return summarize(host), (time.perf_counter() - t0) / steps


def touch_pages(t, batch):
    """Reads one byte of every 4 KiB page of each tensor of `batch` (GIL released inside): every page faulted in."""
    for x in tensors_in(batch):
        x.contiguous().view(-1).view(t.uint8)[::4096].max()


def copy_into_pinned(t, bufs, batch):
    """Copies each tensor of `batch` into a pinned buffer of `bufs` (by position), allocated on first use or when
    the shape or dtype changes (GIL released inside the copy)."""
    for i, x in enumerate(tensors_in(batch)):
        dst = bufs.get(i)
        if dst is None or dst.shape != x.shape or dst.dtype != x.dtype:
            dst = bufs[i] = t.empty(x.shape, dtype=x.dtype, pin_memory=True)
        dst.copy_(x)


# ============================================================================ GPU steps
class MatmulStep:
    """Controllable GPU step: k back-to-back bf16 GEMMs, k chosen so one step takes target_s.

    The step reads its input (mean of the first tensor) so that it waits for the copy.
    """

    def __init__(self, dev, target_s):
        t = dev.torch
        self.dev, self.target_s = dev, target_s
        n = 256 if dev.cpu else 4096
        dt = t.float32 if dev.cpu else t.bfloat16
        g = t.Generator(device="cpu").manual_seed(0)
        self.a = t.randn(n, n, generator=g).to(dev.device, dt)
        self.b = t.randn(n, n, generator=g).to(dev.device, dt)
        self.c = t.empty(n, n, device=dev.device, dtype=dt)
        for _ in range(3):
            t.mm(self.a, self.b, out=self.c)
        dev.sync()
        reps = 40
        e0, e1 = dev.event(), dev.event()
        e0.record()
        for _ in range(reps):
            t.mm(self.a, self.b, out=self.c)
        e1.record()
        dev.sync()
        self.per_mm_s = e0.elapsed_time(e1) / 1e3 / reps
        self.k = max(1, int(round(target_s / self.per_mm_s)))

    def __call__(self, batch):
        t = self.dev.torch
        x = batch[0] if isinstance(batch, (list, tuple)) else batch
        s = x.float().mean()
        for _ in range(self.k):
            t.mm(self.a, self.b, out=self.c)
        return s + self.c[0, 0].float() * 0.0

    def describe(self):
        return {"kind": "matmul", "target_s": self.target_s, "gemms": self.k,
                "gemm_n": int(self.a.shape[0]), "per_gemm_s": self.per_mm_s}


class GpuDecodeStep:
    """A loop that decodes on the GPU: torchvision.io.decode_jpeg(device=...) of the batch's encoded JPEGs (nvJPEG on
    a GPU), each resized to crop x crop and scaled on the device, then `inner`'s step (a MatmulStep) on the stacked
    batch (validation of training.gpu_decode_s_per_sample and gpu_decode_host_s_per_sample)."""

    def __init__(self, dev, inner, crop=224):
        self.dev, self.inner, self.crop = dev, inner, crop

    def decode(self, batch):
        from torchvision.io import ImageReadMode, decode_jpeg
        t = self.dev.torch
        F = t.nn.functional
        imgs = decode_jpeg(list(batch[0]), mode=ImageReadMode.RGB, device=self.dev.device)
        if not isinstance(imgs, (list, tuple)):
            imgs = [imgs]
        x = t.cat([F.interpolate(im.unsqueeze(0).float(), size=(self.crop, self.crop), mode="bilinear",
                                 align_corners=False) for im in imgs])
        return x.mul_(1.0 / 255.0).sub_(0.5)

    def __call__(self, batch):
        return self.inner((self.decode(batch),))

    def describe(self):
        return {"kind": "gpu_decode", "decode": "torchvision.io.decode_jpeg(device=...), ImageReadMode.RGB",
                "resize": f"interpolate to {self.crop}x{self.crop}, bilinear", "inner": self.inner.describe()}


class SequenceStep:
    """A small decoder stack whose GPU time follows its batch's shape (validation of pipeplan's sequence section): an
    embedding, `layers` blocks of causal self-attention (scaled_dot_product_attention) and an MLP, bf16 autocast,
    SGD. Its time is a fixed part, a part per token position (the linear layers) and a part per squared row length
    (attention): sequence.step_s_per_token and step_s_per_token_squared. Padded positions cost as real ones."""
    D, HEADS, VOCAB = 1024, 8, 8192
    # Every (rows, padded length) any SequenceStep of this process has run: the plans a step builds for a new shape
    # are the process's (cuDNN's graph cache), so a case meets as new only the shapes not in here when it starts
    # (the fit's shapes, the probes' batches, an earlier repeat's); run_case records it for convert
    SHAPES_RUN = set()

    def __init__(self, dev, layers):
        t = dev.torch
        nn = t.nn
        self.dev, self.layers = dev, layers
        self.d = 128 if dev.cpu else self.D
        t.manual_seed(0)
        d = self.d
        self.emb = nn.Embedding(self.VOCAB, d)
        self.blocks = nn.ModuleList(
            nn.ModuleDict({"ln1": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d), "proj": nn.Linear(d, d),
                           "ln2": nn.LayerNorm(d), "up": nn.Linear(d, 4 * d), "down": nn.Linear(4 * d, d)})
            for _ in range(layers))
        self.model = nn.ModuleList([self.emb, self.blocks]).to(dev.device)
        self.model.train()
        self.opt = t.optim.SGD(self.model.parameters(), lr=1e-4)

    def __call__(self, batch):
        t = self.dev.torch
        F = t.nn.functional
        ids = batch[0] if isinstance(batch, (list, tuple)) else batch
        ids = ids.clamp(max=self.VOCAB - 1)
        B, L = int(ids.shape[0]), int(ids.shape[1])
        SequenceStep.SHAPES_RUN.add((B, L))
        h, d = self.HEADS, self.d
        with t.autocast(device_type=self.dev.device.type, dtype=t.bfloat16):
            x = self.emb(ids)
            for blk in self.blocks:
                qkv = blk["qkv"](blk["ln1"](x)).view(B, L, 3, h, d // h).permute(2, 0, 3, 1, 4)
                a = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
                x = x + blk["proj"](a.transpose(1, 2).reshape(B, L, d))
                x = x + blk["down"](F.gelu(blk["up"](blk["ln2"](x))))
            loss = x.float().pow(2).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def describe(self):
        return {"kind": "decoder", "layers": self.layers, "d_model": self.d, "heads": self.HEADS,
                "vocab": self.VOCAB, "attention": "scaled_dot_product_attention(is_causal=True)",
                "autocast": "bf16", "optimizer": "SGD"}


# (rows, tokens a row) the sequence step is timed at for its fit (comp_sequence_step_shapes): rows x length from 4k to
# 131k positions, lengths 128-2048, so both the per-position and the per-squared-length terms are pinned down. Since
# the sixty-third session three more at 64k positions (64 x 1,024, 128 x 512, 32 x 2,048): run 63's fit was linear
# to 32k positions and 14% under at 131k (128 x 1,024), where its b128 case's steps lie; these say whether the step
# grows faster than its positions there, or with the squared length
SEQ_FIT_SHAPES = ((16, 256), (16, 1024), (32, 128), (32, 512), (32, 1024), (8, 2048), (64, 512), (128, 256),
                  (128, 1024), (64, 1024), (128, 512), (32, 2048))


def sustained_step_s(dev, model, gb, n_warm, n):
    """Steps back to back on batch `gb`, no sync between: `n_warm` first (a GPU under sustained load may run at lower
    clocks than one isolated step), then the intervals between CUDA events around `n` more. Returns (their summary,
    the last loss)."""
    evs = [dev.event() for _ in range(n + 1)]
    dev.sync()
    loss = None
    for _ in range(n_warm):
        loss = model(gb)
    evs[0].record()
    for j in range(n):
        loss = model(gb)
        evs[j + 1].record()
    dev.sync()
    return summarize([evs[j].elapsed_time(evs[j + 1]) / 1e3 for j in range(n)]), loss


class ResNetStep:
    """torchvision ResNet (50 on GPU), bf16 autocast, channels_last, SGD momentum."""

    def __init__(self, dev, arch="resnet50"):
        import torchvision
        t = dev.torch
        if dev.cpu:
            arch = "resnet18"
        self.dev, self.arch = dev, arch
        t.manual_seed(0)
        self.model = getattr(torchvision.models, arch)(num_classes=1000).to(dev.device)
        self.model = self.model.to(memory_format=t.channels_last)
        self.model.train()
        self.opt = t.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        if not dev.cpu:
            t.backends.cudnn.benchmark = True

    def __call__(self, batch):
        t = self.dev.torch
        x, y = batch[0], batch[1]
        x = x.contiguous(memory_format=t.channels_last)
        with t.autocast(device_type=self.dev.device.type, dtype=t.bfloat16):
            out = self.model(x)
            loss = t.nn.functional.cross_entropy(out.float(), y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def describe(self):
        return {"kind": "torchvision", "arch": self.arch, "autocast": "bf16",
                "memory_format": "channels_last", "optimizer": "SGD(momentum=0.9)"}


# ============================================================================ harness
def cpu_stat():
    try:
        with open("/proc/stat") as f:
            parts = f.readline().split()[1:]
        v = [int(x) for x in parts]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return sum(v), idle
    except Exception:
        return None


def per_cpu_stat():
    """{cpu number: (busy ticks, steal ticks)} from /proc/stat's cpuN lines (busy: all but idle and iowait; steal:
    time the hypervisor ran something else while this vCPU wanted to run), or None."""
    try:
        out = {}
        with open("/proc/stat") as f:
            for line in f:
                if not line.startswith("cpu") or line.startswith("cpu "):
                    continue
                parts = line.split()
                v = [int(x) for x in parts[1:]]
                idle = v[3] + (v[4] if len(v) > 4 else 0)
                out[int(parts[0][3:])] = (sum(v[:8]) - idle, v[7] if len(v) > 7 else 0)
        return out
    except (OSError, ValueError):
        return None


def per_cpu_seconds(s0, s1):
    """Pure: {"busy_s": [...], "steal_s": [...]} per CPU (in CPU order) between two per_cpu_stat() readings, in
    seconds (USER_HZ ticks), or None where either is missing or they name different CPUs."""
    if not s0 or not s1 or set(s0) != set(s1):
        return None
    hz = os.sysconf("SC_CLK_TCK")
    cpus = sorted(s0)
    return {"busy_s": [round((s1[c][0] - s0[c][0]) / hz, 3) for c in cpus],
            "steal_s": [round((s1[c][1] - s0[c][1]) / hz, 3) for c in cpus]}


def busy_cores(s0, s1, ncpu):
    if not s0 or not s1:
        return None
    tot, idle = s1[0] - s0[0], s1[1] - s0[1]
    return None if tot <= 0 else (tot - idle) / tot * ncpu


def machine_info(torch, dev):
    info = {"hostname": socket.gethostname(), "platform": platform.platform(),
            "python": platform.python_version(), "cpu_count": os.cpu_count()}
    try:
        info["cpu_cores"] = len(os.sched_getaffinity(0))
    except Exception:
        info["cpu_cores"] = os.cpu_count()
    cpu_name = cpu_model()
    if cpu_name:
        info["cpu_model"] = cpu_name
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    info["memory_bytes"] = int(line.split()[1]) * 1024
                    break
    except Exception:
        pass
    info["torch"] = torch.__version__
    try:
        import torchvision
        import PIL
        info["torchvision"] = torchvision.__version__
        info["pillow"] = PIL.__version__
    except Exception:
        pass
    info["numpy"] = np.__version__
    if not dev.cpu:
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cuda_runtime"] = torch.version.cuda
        info["gpu_count"] = torch.cuda.device_count()
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            info["driver"] = out.stdout.strip().splitlines()[0] if out.stdout.strip() else None
        except Exception:
            info["driver"] = None
    else:
        info["gpu"] = None
        info["note"] = "--cpu-test: no GPU; numbers test code paths only"
    return info


def warm_files(paths):
    """Read every file once so that it is in the page cache again."""
    from concurrent.futures import ThreadPoolExecutor

    def rd(p):
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(rd, paths))


class Harness:
    def __init__(self, args):
        import torch
        self.t = torch
        self.args = args
        self.dev = Dev(torch, args.cpu_test)
        self.quick = args.quick
        self.budget_s = args.budget_s
        self.t0 = time.perf_counter()
        self.crop = 64 if args.cpu_test else 224
        self.doc = {"schema": SCHEMA, "started": now_iso(), "finished": None,
                    "status": "running", "mode": "quick" if self.quick else "full",
                    "budget_s": self.budget_s, "command": " ".join([sys.executable] + sys.argv),
                    "machine": None, "datasets": {}, "components": {"load": {}, "load_cold": {},
                    "collate": {}, "step": {}, "worker_start": None, "transport": {},
                                   "in_worker": {}, "load_scaling": {}},
                    "methods": METHODS,
                    "cases": []}
        self.datasets = {}
        self.steps = {}
        self.samples_cache = {}
        self._light_pin_parts = False    # host_beside_pin_parts run for a light (GEMM) loop in this call yet

    # ------------------------------------------------------------------ bookkeeping
    def elapsed(self):
        return time.perf_counter() - self.t0

    def remaining(self):
        return self.budget_s - self.elapsed()

    def save(self):
        path = self.args.out
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.doc, f, indent=1, default=json_default)
        os.replace(tmp, path)

    # ------------------------------------------------------------------ data
    def make_data(self):
        root = self.args.data_dir
        os.makedirs(root, exist_ok=True)
        q = self.quick
        # 7,000 images: the cold-cache image case reads each file once, and with 3,500 (until run 8) only
        # 18 steps followed the prefetch fill, too short for a steady state (run 6: cold faster than warm)
        n_img = self.args.n_images or (1200 if q else 7000)
        n_t32 = 2000 if q else 3200
        n_t8 = 400 if q else 1000
        n_tok = 2000 if q else 6000
        if self.args.cpu_test:
            n_img, n_t32, n_t8, n_tok = min(n_img, 300), 200, 100, 500
        t0 = time.perf_counter()
        ctx = mp.get_context("fork")
        with ctx.Pool(max(1, min(16, os.cpu_count() or 1))) as pool:
            paths, sizes = gen_images(root, n_img, pool)
            self.datasets["image"] = ImageDataset(paths, crop=self.crop)
            self._ds_info("image", paths, sizes, f"JPEG q90, ~500x375, RandomResizedCrop({self.crop})+flip+ToTensor+Normalize")
            shp = (3, self.crop, self.crop)
            p32, s32 = gen_tensors(root, "tensor_f32", n_t32, shp, "float32", pool)
            self.datasets["tensor_f32"] = NpyTensorDataset(p32)
            self._ds_info("tensor_f32", p32, s32, f"np.load of float32 {shp} .npy")
            for name, gil in (("tensor_f32_py", True), ("tensor_f32_pyfree", False)):
                self.datasets[name] = PythonLoadDataset(self.datasets["tensor_f32"], PY_LOAD_S_PER_SAMPLE, gil)
                self._ds_info(name, p32, s32, f"tensor_f32 then {1e3 * PY_LOAD_S_PER_SAMPLE:g} ms of "
                              + ("a Python loop (GIL held)" if gil else "hashing (GIL released)") + " a sample")
            p8, s8 = gen_tensors(root, "tensor_u8", n_t8, shp, "uint8", pool)
            self.datasets["tensor_u8"] = NpyTensorDataset(p8)
            self._ds_info("tensor_u8", p8, s8, f"np.load of uint8 {shp} .npy")
        path, offs, lens, vocab, tokens_per_line = gen_tokens(root, n_tok)
        self.datasets["tokens"] = TokenDataset(path, offs, lens, vocab)
        self._ds_info("tokens", [path], lens, "pread one text line, word-vocab tokenize; pad-to-longest collate")
        # the image kind's files as encoded bytes, for a loop that decodes on the GPU (GpuDecodeStep)
        self.datasets["image_bytes"] = ImageBytesDataset(self.datasets["image"].paths)
        self._ds_info("image_bytes", self.datasets["image"].paths, [os.path.getsize(p) for p in self.datasets["image"].paths],
                      "the JPEG files' encoded bytes (one read); decoded on the GPU by the loop "
                      "(torchvision.io.decode_jpeg(device='cuda'))")
        # the same lines, truncated at and padded to SEQ_PAD_MAX_TOKENS (convert: sequence.collate pad_to_max)
        self.datasets["tokens_pad512"] = self.datasets["tokens"]
        self._ds_info("tokens_pad512", [path], lens, "pread one text line, word-vocab tokenize; truncate at and pad "
                      f"every row to {SEQ_PAD_MAX_TOKENS} tokens")
        for kind in ("tokens", "tokens_pad512"):
            self.doc["datasets"][kind]["tokens_per_sample"] = token_length_stats(tokens_per_line)
        self.doc["datasets"]["tokens_pad512"]["max_tokens"] = SEQ_PAD_MAX_TOKENS
        os.sync()
        log(f"data generated in {time.perf_counter() - t0:.1f}s: "
            + ", ".join(f"{k} n={v['n']} mean {v['sample_bytes']['mean']/1e3:.0f} kB"
                        for k, v in self.doc["datasets"].items()))
        self.save()

    def _ds_info(self, kind, paths, sizes, desc):
        s = summarize([float(x) for x in sizes])
        self.doc["datasets"][kind] = {"n": len(sizes), "sample_bytes": {"mean": s["mean"], "cv": s["cv"]},
                                      "dir": os.path.dirname(paths[0]), "what": desc}
        self._paths = getattr(self, "_paths", {})
        self._paths[kind] = list(paths)

    def collate_fn(self, kind):
        if kind == "image_bytes":
            return bytes_collate
        if kind == "tokens_pad512":
            return PadToMaxCollate(SEQ_PAD_MAX_TOKENS)
        return pad_collate if kind == "tokens" else None

    # ------------------------------------------------------------------ components
    def comp_load(self, kind):
        c = self.doc["components"]["load"]
        if kind not in c:
            n = {"image": 400, "tensor_f32": 300, "tensor_u8": 300, "tokens": 400, "tokens_pad512": 400}.get(kind, 300)
            if self.quick:
                n = n // 2
            t0 = time.perf_counter()
            summ, kept, ib = time_getitem(self.datasets[kind], n_samples=n, keep=128, seed=11,
                                          max_seconds=8.0 if self.quick else 15.0)
            self.samples_cache[kind] = kept
            summ["item_bytes_mean"] = sum(ib) / len(ib) if ib else None
            summ["method"] = "single process, torch 1 thread, random indices, 5 warm-up calls, perf_counter per __getitem__, page cache warm"
            # the same with this process's default torch threads, as num_workers=0 runs it
            old = self.t.get_num_threads()
            t1 = time.perf_counter()
            n_def = 0
            for j in range(5 + 80):
                a = time.perf_counter()
                self.datasets[kind][(j * 7919) % len(self.datasets[kind])]
                if j >= 5:
                    summ.setdefault("_def", []).append(time.perf_counter() - a)
                    n_def += 1
                if time.perf_counter() - t1 > 3.0 and n_def >= 20:
                    break
            dd = summarize(summ.pop("_def"))
            summ["default_threads"] = {"threads": old, "mean": dd["mean"], "cv": dd["cv"],
                                       "stderr_rel": dd["stderr_rel"], "n": dd["n"]}
            c[kind] = summ
            log(f"component load[{kind}]: {summ['mean']*1e3:.3f} ms/sample cv {summ['cv']:.2f} "
                f"stderr {summ['stderr_rel']*100:.1f}% n={summ['n']}; with {old} torch threads "
                f"{dd['mean']*1e3:.3f} ms ({time.perf_counter()-t0:.1f}s)")
        return c[kind]

    def comp_load_cold(self, kind):
        c = self.doc["components"]["load_cold"]
        if kind not in c:
            # the same timing a user's pipeplan_probe --cold takes; its CPU time (user + kernel) matters: a
            # buffered cold read costs CPU in the kernel beside its wait (run 9, cold tensor case in situ: 0.81
            # ms CPU against 0.62 warm)
            summ = time_cold(self.datasets[kind], paths=self._paths[kind], n_samples=60 if self.quick else 120,
                             seed=99, max_seconds=6.0)
            summ["method"] = ("as load, after " + summ["method"]
                              + "; cpu_s_per_sample: thread_time over the same calls")
            # The same with the files' pages dropped and their inodes and directory entries kept (no drop_caches;
            # drop_page_cache has just opened every path), other files (seed 98): calibrate's small files, dropped so,
            # wait 0.07 ms a 64 KiB file alone against this component's 0.5 ms a 93 kB JPEG (validation run 52). A
            # case reads thousands of files, so their inode blocks warm within it; this says what the lone timing's
            # per-file wait owes to the cold metadata. A diagnostic: convert does not read it.
            pages_note = ""
            try:                            # a diagnostic: never costs the case
                pages = time_cold(self.datasets[kind], paths=self._paths[kind], n_samples=60 if self.quick else 120,
                                  seed=98, max_seconds=6.0, system_wide=False)
                summ["pages_only"] = {"mean": pages["mean"], "cpu_s_per_sample": pages["cpu_s_per_sample"],
                                      "n": pages["n"], "method": pages["method"] + " (inodes and dentries kept)"}
                pages_note = (f"; pages only (inodes kept): {pages['mean']*1e3:.3f} ms/sample "
                              f"(cpu {pages['cpu_s_per_sample']*1e3:.3f}) n={pages['n']}")
            except Exception as e:
                summ["pages_only"] = {"error": f"{e.__class__.__name__}: {e}"}
            c[kind] = summ
            log(f"component load_cold[{kind}]: {summ['mean']*1e3:.3f} ms/sample (cpu {summ['cpu_s_per_sample']*1e3:.3f}) "
                f"cv {summ['cv']:.2f} n={summ['n']}" + pages_note)
        return c[kind]

    def comp_collate(self, kind, bs):
        key = f"{kind}/b{bs}"
        c = self.doc["components"]["collate"]
        if key not in c:
            self.comp_load(kind)
            ct, bb = time_collate(self.samples_cache[kind], bs, collate_fn=self.collate_fn(kind),
                                  n_batches=15 if self.quick else 30, seed=5,
                                  max_seconds=3.0 if self.quick else 6.0)
            # num_workers=0 collates in the main process with its default torch threads
            cd, _ = time_collate(self.samples_cache[kind], bs, collate_fn=self.collate_fn(kind),
                                 n_batches=8 if self.quick else 15, seed=6, max_seconds=2.0, one_thread=False)
            c[key] = {"s_per_batch": ct, "batch_bytes": bb,
                      "default_threads": {"threads": self.t.get_num_threads(), "mean": cd["mean"], "cv": cd["cv"]},
                      "method": "collate_fn in the main process (plain memory, not worker shared memory), torch 1 thread; "
                                "default_threads: the same with this process's torch threads"}
            log(f"component collate[{key}]: {ct['mean']*1e3:.3f} ms cv {ct['cv']:.2f}, batch {bb['mean']/1e6:.2f} MB")
        return c[key]

    def step_model(self, name):
        if name not in self.steps:
            if name.startswith("mm:"):
                self.steps[name] = MatmulStep(self.dev, float(name[3:]) / 1e3)
            elif name.startswith("seq:"):
                self.steps[name] = SequenceStep(self.dev, int(name[4:]))
            elif name.startswith("gpudec+"):
                self.steps[name] = GpuDecodeStep(self.dev, self.step_model(name[len("gpudec+"):]), crop=self.crop)
            elif name in ("resnet50",):
                self.steps[name] = ResNetStep(self.dev, name)
            else:
                raise ValueError(f"unknown step {name}")
        return self.steps[name]

    def sample_batch(self, kind, bs):
        self.comp_load(kind)
        kept = self.samples_cache[kind]
        coll = self.collate_fn(kind)
        if coll is None:
            from torch.utils.data import default_collate
            coll = default_collate
        return coll([kept[j % len(kept)] for j in range(bs)])

    def gpu_rest_curve(self, model, gb, key, n_warm, host_s):
        """One step's GPU time after the GPU rested for 10, 30, 100 and 300 ms following sustained load
        (twice each; once per call, on the first step model measured). The H200 ran mm:25 in 25.8 ms
        inside cases whose GPU rested and 29.9 ms in busy ones, 24.9 isolated and 29.7 sustained alone
        (run 11): this curve is what a model of that needs (the time constant). Kept, not used yet; never
        costs the component (errors are recorded instead)."""
        dev = self.dev
        t0 = time.perf_counter()
        points = []
        try:
            hold_s = max(3 * host_s, 0.005)          # the launches queue behind a spin kernel, as "isolated"
            for rest_s in (0.01, 0.03, 0.1, 0.3):
                for _ in range(2):
                    dev.sync()
                    for _ in range(n_warm):              # sustained load first
                        model(gb)
                    dev.sync()
                    time.sleep(rest_s)                   # the GPU idles
                    held = dev.hold_stream(hold_s)
                    e0, e1 = dev.event(), dev.event()
                    e0.record()
                    model(gb)
                    e1.record()
                    dev.sync()
                    points.append({"rest_s": round(rest_s + (hold_s if held else 0.0), 4),
                                   "gpu_s": e0.elapsed_time(e1) / 1e3})
        except Exception as e:                           # never costs the step component
            return {"step": key, "error": f"{e.__class__.__name__}: {e}"}
        log(f"component gpu_rest_curve[{key}]: " + ", ".join(f"{q['rest_s']*1e3:.0f} ms rest -> {q['gpu_s']*1e3:.2f} ms"
                                                            for q in points) + f" ({time.perf_counter()-t0:.1f}s)")
        return {"step": key, "points": points,
                "method": "sustained back-to-back steps for about 0.3 s, sync, host sleep (GPU idle), then one step "
                          "queued behind a spin kernel (as the isolated time); rest_s includes the spin"}

    def gpu_burst_ramp(self, model, gb, key, host_s, n_steps=8, bursts=3):
        """Each step's GPU time in a burst of n_steps back-to-back steps after 0.3 s of rest (median per position
        over `bursts` bursts), the launches queued behind a short spin kernel so that the GPU never waits for the
        host. Run 14 found the loop inside input-bound cases climbing from near the isolated time to near the
        sustained one within three steps after every wait (mm:25: 26.1, 26.8, 28.3, 28.9, 29.2 ms by position,
        validation-runs.md run 14, finding 11): convert fits the GPU's duty time constant to this, with the rest curve.
        Once per step model whose host fits in half a step (since run 15; about 1-3 s); never costs the step
        component (errors recorded)."""
        dev = self.dev
        t0 = time.perf_counter()
        try:
            per_position = [[] for _ in range(n_steps)]
            hold_s = max(3 * host_s, 0.005)          # covers the first launches; the host then stays ahead
            for _ in range(bursts):
                dev.sync()
                time.sleep(0.3)                          # the GPU rests
                held = dev.hold_stream(hold_s)
                evs = [dev.event() for _ in range(n_steps + 1)]
                evs[0].record()
                for j in range(n_steps):
                    model(gb)
                    evs[j + 1].record()
                dev.sync()
                for j in range(n_steps):
                    per_position[j].append(evs[j].elapsed_time(evs[j + 1]) / 1e3)
            points = [{"position": j, "gpu_s": float(np.median(v))} for j, v in enumerate(per_position)]
        except Exception as e:                           # never costs the step component
            return {"step": key, "error": f"{e.__class__.__name__}: {e}"}
        log(f"component gpu_burst_ramp[{key}]: " + ", ".join(f"{q['gpu_s'] * 1e3:.2f}" for q in points)
            + f" ms by position after 0.3 s rest ({time.perf_counter() - t0:.1f}s)")
        return {"step": key, "points": points, "held_stream": bool(held),
                "method": f"{bursts} bursts of {n_steps} back-to-back steps, each after 0.3 s of rest, the launches "
                          "queued behind a spin kernel; CUDA events between steps; median per position"}

    def gpu_duty_curve(self, model, gb, key):
        """The step's GPU time at steady duties 0.25, 0.5, 0.75 and 0.9: steps launched periodically, the host
        sleeping between them (the GPU idle), for duty_window_s per duty, all but its first DUTY_SETTLE_S timed
        by events; the duty achieved is the steps' GPU time over the wall time of the timed part. Run 12 found the loop's step
        inside the cases climbing with the GPU's busy share from the isolated time to the sustained one
        (mm:25: 26.0 ms at busy 0.12-0.21, 28.2-29.0 at 0.60-0.75, 30.0 at 0.95); convert models it as a
        line between the two ends unless this curve is there (`training.step_s_vs_gpu_duty`). Once per
        step model (since run 14; the call's first until then); never costs the step component (errors
        recorded)."""
        dev = self.dev
        t0 = time.perf_counter()
        points = []
        try:
            # 0.9 since run 46's plan: run 45's 2.4 s windows at 0.83 found humps every 1.0 s, and the table's
            # compute-bound cases at a GPU busy share of 0.93-0.97 a p90 step 1.09x their mean that the model, flat
            # there, under-predicts (signed -4 to -9%), at 0.97-0.99 1.02x: where the humps stop is unmeasured
            for duty in (0.25, 0.5, 0.75, 0.9):
                times, spans = [], []
                window_busy_s = 0.0   # GPU time of every step in this window, the settling ones too
                start = time.perf_counter()
                while time.perf_counter() - start < duty_window_s(duty):
                    a = time.perf_counter()
                    e0, e1 = dev.event(), dev.event()
                    e0.record()
                    model(gb)
                    e1.record()
                    dev.sync()
                    step_gpu_s = e0.elapsed_time(e1) / 1e3
                    window_busy_s += step_gpu_s
                    # paced on the steps' achieved time since run 47 (rest_for_duty_s says why)
                    rest = rest_for_duty_s(window_busy_s, time.perf_counter() - start, duty)
                    if rest > 0:
                        time.sleep(rest)
                    if a - start >= DUTY_SETTLE_S:  # the clock settled to this duty
                        times.append(step_gpu_s)
                        spans.append(time.perf_counter() - a)
                if len(times) >= 3:
                    # each step's own time too (since run 44's plan): run 43's tensor_u8 loop at duty 0.85 ran
                    # its GPU step at the rested time or near the sustained one in spells (validation-runs.md run
                    # 43, finding 3), where the curve's mean alone makes every step the same
                    points.append({"target_duty": duty, "duty": round(sum(times) / sum(spans), 4),
                                   "step_s": sum(times) / len(times), "steps": len(times),
                                   "step_p90_s": float(np.percentile(times, 90)),
                                   "steps_s": [round(x, 7) for x in times]})
        except Exception as e:                           # never costs the step component
            return {"step": key, "points": points, "error": f"{e.__class__.__name__}: {e}"}
        log(f"component gpu_duty_curve[{key}]: " + ", ".join(f"duty {q['duty']:.2f} -> {q['step_s']*1e3:.2f} ms "
                                                             f"(p90 {q['step_p90_s']*1e3:.2f})" for q in points)
            + f" ({time.perf_counter()-t0:.1f}s)")
        return {"step": key, "points": points,
                "method": "steps launched one after another, the host sleeping after each as long as brings the "
                          "window's GPU time / wall back to the duty (sync after each; a fixed period until run 46),"
                          f" {duty_window_s(0.25):.1f} s per duty ({duty_window_s(0.75):.1f} s at the top one), "
                          f"all but the first {DUTY_SETTLE_S:.1f} s timed: GPU event time per step, duty = GPU time "
                          "/ wall"}

    def probe_main_loop(self, kind, bs, k, nb):
        """Does what the main loop does with a batch change the pin thread's cost? Runs 11-12 found the
        probes' pin thread CPU per batch 2-18% above the case's own (mean per call), all of it outside
        pin_memory() (the receive), while the copy and the workers agreed. The probe's main loop drops each
        batch; the case's copies it to the GPU and steps. Four probe windows alternate: drop, copy
        (batch.to(device, non_blocking as the case) and a sync, no step), drop, copy; each also splits its
        pin thread CPU into the window's two halves (a start-up transient would show in the first). Once per
        call, on the first pinned case with workers; about 8 s; never costs the case (errors recorded)."""
        t0 = time.perf_counter()
        dev = self.dev
        call_s: List[float] = []        # each .to() call's host time, until it returns (the copy enqueued)

        def copy(batch):
            c0 = time.perf_counter()
            to_device(batch, dev.device, nb)
            call_s.append(time.perf_counter() - c0)
            dev.sync()
        windows = []
        try:
            for consume_name in ("drop", "copy", "drop", "copy"):
                call_s.clear()
                q = self._time_k_workers(kind, bs, k, window_s=1.5, seed=43, pin=True,
                                         consume=copy if consume_name == "copy" else None)
                windows.append({"main_loop": consume_name, "batches": q.get("batches"),
                                # since run 43's plan (validation-runs.md run 42, finding 8): the loop's host time
                                # in the .to() call of a pinned batch, the other half of the gap between a sync
                                # and the next step's copy (warm-up and settling batches included)
                                "copy_call_s": float(np.median(call_s)) if call_s else None,
                                "pin_thread_cpu_s_per_batch": q.get("pin_thread_cpu_s_per_batch"),
                                "pin_copy_s_per_batch": q.get("pin_copy_s_per_batch"),
                                "pin_thread_cpu_s_per_batch_halves": q.get("pin_thread_cpu_s_per_batch_halves"),
                                "main_thread_cpu_s_per_batch": q.get("main_thread_cpu_s_per_batch"),
                                # since run 77 (the probes read the pin cycle's spread a third below their cases'):
                                # whether a loop that copies and syncs beside the pin thread widens it
                                "pin_cycle_cv": q.get("pin_cycle_cv"),
                                "collate_wall_s": q.get("collate_wall_s")})
        except Exception as e:                           # never costs the case
            return {"kind": kind, "batch_size": bs, "workers": k, "windows": windows,
                    "error": f"{e.__class__.__name__}: {e}"}

        def ms(x):
            return "n/a" if x is None else f"{x * 1e3:.2f}"
        log(f"component probe_main_loop[{kind}/b{bs}/w{k}]: pin thread CPU per batch " + ", ".join(
            f"{w['main_loop']} {ms(w['pin_thread_cpu_s_per_batch'])} (halves "
            + "/".join(ms(h) for h in (w["pin_thread_cpu_s_per_batch_halves"] or [None, None])) + "; pin cycle cv "
            + ("n/a" if w.get("pin_cycle_cv") is None else f"{w['pin_cycle_cv']:.3f}") + ")"
            for w in windows) + "; the .to() call " + ", ".join(ms(w.get("copy_call_s")) for w in windows
                                                              if w["main_loop"] == "copy")
            + f" ms ({time.perf_counter() - t0:.1f}s)")
        return {"kind": kind, "batch_size": bs, "workers": k, "non_blocking": nb, "windows": windows,
                "method": "the case's probe (K workers, pinned, 2K warm-up batches, 1.5 s window) four times: the main "
                          "loop drops each batch, or copies it to the GPU and syncs (no step); alternating"}

    def comp_step(self, step_name, kind, bs):
        key = f"{step_name}/{kind}/b{bs}"
        c = self.doc["components"]["step"]
        if key in c:
            return c[key]
        dev = self.dev
        t0 = time.perf_counter()
        model = self.step_model(step_name)
        gb = to_device(self.sample_batch(kind, bs), dev.device, False)
        if isinstance(model, GpuDecodeStep):
            # the step alone, on a batch already decoded: its decode is the gpu_decode component (convert's
            # training.gpu_decode_* keys), and nvJPEG may wait on the stream a held-stream timing holds
            gb, model = (model.decode(gb),), model.inner
        for _ in range(3):
            loss = model(gb)
        float(loss.item())
        dev.sync()
        reps = 8 if self.quick else 15
        gpu, host = [], []
        hold = 0.05
        for r in range(reps + 1):
            dev.sync()
            held = dev.hold_stream(hold)
            e0, e1 = dev.event(), dev.event()
            e0.record()
            h0 = time.perf_counter()
            loss = model(gb)
            h1 = time.perf_counter()
            e1.record()
            dev.sync()
            if held and (h1 - h0) > 0.8 * hold:      # host slower than the hold: redo, longer
                hold = 3 * (h1 - h0)
                continue
            if r == 0:
                continue
            gpu.append(e0.elapsed_time(e1) / 1e3)
            host.append(h1 - h0)
        # the same launches right after another step's, no sync between (the stream still held): a loop that does not
        # sync launches a batch it already has so. validation-runs.md run 62, finding 9: those ops took 0.75-0.85 ms
        # in the cases against 1.04-1.07 after a sync (host_s is the launches after a sync); the model charges host_s
        # to both. Never fails the component.
        after_launch: List[float] = []
        try:
            for r in range(reps + 1):
                dev.sync()
                dev.hold_stream(max(hold, 0.05))
                loss = model(gb)
                a1 = time.perf_counter()
                loss = model(gb)
                a2 = time.perf_counter()
                dev.sync()
                if r > 0:
                    after_launch.append(a2 - a1)
        except Exception as e:  # noqa: BLE001 - a diagnostic figure, not the component's
            log(f"component step[{key}]: launches after launches not timed: {e!r}")
            after_launch = []
        # sustained: back-to-back steps, no sync, events between steps, after ~0.3 s of warm-up load
        # (a GPU under sustained load may run at lower clocks than one isolated step)
        n_sus = 12 if self.quick else 25
        n_warm = max(3, int(0.3 / max(sum(gpu) / max(len(gpu), 1), 1e-3)))
        sus, loss = sustained_step_s(dev, model, gb, n_warm, n_sus)
        # the user's quickest test: the synthetic-data loop as is, loss.item() every step
        n_loop = 10 if self.quick else 20
        dev.sync()
        l0 = time.perf_counter()
        for _ in range(n_loop):
            loss = model(gb)
            float(loss.item())
        dev.sync()
        loop_s = (time.perf_counter() - l0) / n_loop
        g, h = summarize(gpu), summarize(host)
        if not self.quick and "gpu_rest_curve" not in self.doc["components"]:
            self.doc["components"]["gpu_rest_curve"] = self.gpu_rest_curve(model, gb, key, n_warm, h["mean"])
        if not self.quick and h["mean"] < 0.5 * g["mean"] and not step_name.startswith("seq:"):
            # only where the host's launches fit well inside a step (a host-bound step has no GPU duty to set);
            # not for a sequence step, whose cases convert without a duty curve (its fit is back to back).
            # One per step model (since run 14; about 4 s each): run 13 found the shape depends on the step's
            # length (a 25 ms step keeps 0.07 of its sustained excess at duty 0.25, a 5 ms step 0.35-0.42);
            # gpu_duty_curve stays the call's first, as convert read it until then
            curve = self.gpu_duty_curve(model, gb, key)
            self.doc["components"].setdefault("gpu_duty_curves", {})[key] = curve
            self.doc["components"].setdefault("gpu_burst_ramps", {})[key] = self.gpu_burst_ramp(model, gb, key, h["mean"])
            self.doc["components"].setdefault("gpu_duty_curve", curve)
        gpu_bound = h["mean"] < 0.8 * sus["mean"]
        c[key] = {"gpu_s": g, "host_s": h, "host_after_launch_s": summarize(after_launch) if after_launch else None,
                  "synthetic_loop_step_s": loop_s,
                  "sustained_interval_s": sus, "sustained_is_gpu_time": gpu_bound,
                  "step_s": sus["mean"] if gpu_bound else g["mean"],
                  "step_cv": sus["cv"] if gpu_bound else g["cv"],
                  "step_s_method": ("sustained back-to-back interval (host well ahead: GPU time under "
                                    "sustained load)" if gpu_bound else
                                    "isolated held-stream GPU time (the host is too slow for the "
                                    "back-to-back interval to show GPU time)"),
                  "model": model.describe(), "held_stream": bool(dev.sleep_cycles_per_s),
                  "method": ("GPU time between CUDA events around one step whose launches were queued "
                             "behind a torch.cuda._sleep spin kernel (launch overhead excluded); host time = "
                             "perf_counter from step start to last launch returned; loop = plain synthetic loop "
                             "with loss.item() each step")}
        del gb
        log(f"component step[{key}]: gpu isolated {g['mean']*1e3:.2f} ms cv {g['cv']:.3f}, sustained "
            f"{sus['mean']*1e3:.2f} ms, host {h['mean']*1e3:.2f} ms"
            + (f" ({summarize(after_launch)['mean']*1e3:.2f} right after another step's)" if after_launch else "")
            + f", synthetic loop {loop_s*1e3:.2f} "
            f"ms/step -> step_s {c[key]['step_s']*1e3:.2f} ms ({time.perf_counter()-t0:.1f}s)")
        return c[key]

    def comp_gpu_decode(self, step_name, kind, bs):
        """A GPU-decode step's decode alone (GpuDecodeStep.decode on a sample batch of encoded JPEGs): the call's host
        time (perf_counter to its return) and its wall to the stream's end (a sync after it), median of several after
        three warm-up decodes; convert takes host / bs as training.gpu_decode_host_s_per_sample and (wall - host) / bs
        as gpu_decode_s_per_sample (the GPU work still running when the call returns)."""
        key = f"{step_name}/{kind}/b{bs}"
        c = self.doc["components"].setdefault("gpu_decode", {})
        if key in c:
            return c[key]
        dev = self.dev
        model = self.step_model(step_name)
        batch = to_device(self.sample_batch(kind, bs), dev.device, False)
        for _ in range(3):
            model.decode(batch)
        dev.sync()
        host, wall = [], []
        for _ in range(6 if self.quick else 15):
            dev.sync()
            h0 = time.perf_counter()
            model.decode(batch)
            h1 = time.perf_counter()
            dev.sync()
            h2 = time.perf_counter()
            host.append(h1 - h0)
            wall.append(h2 - h0)
        hs, ws = summarize(host), summarize(wall)
        c[key] = {"host_s": hs, "wall_s": ws, "batch_size": bs, "model": model.describe(),
                  "method": "GpuDecodeStep.decode (decode_jpeg(device=...) + resize + scale) on a sample batch of "
                            "encoded JPEGs on the host: perf_counter to the call's return (host) and to a sync after it "
                            "(wall), 3 warm-up decodes"}
        log(f"component gpu_decode[{key}]: host {hs['mean']*1e3:.2f} ms, wall {ws['mean']*1e3:.2f} ms a batch of {bs} "
            f"({hs['mean']/bs*1e6:.1f} / {max(0.0, ws['mean'] - hs['mean'])/bs*1e6:.1f} us a sample host / GPU after)")
        return c[key]

    def comp_sequence_step_shapes(self, step_name):
        """A sequence step model's GPU time at SEQ_FIT_SHAPES (synthetic token ids already on the GPU), sustained back
        to back as comp_step's step_s, and its fit (fit_sequence_step): convert's sequence.step_s_per_token,
        step_s_per_token_squared and the fixed training.step_s. Once per step model."""
        c = self.doc["components"].setdefault("sequence_step_shapes", {})
        if step_name in c:
            return c[step_name]
        t, dev = self.t, self.dev
        t0 = time.perf_counter()
        model = self.step_model(step_name)
        points = []
        for rows, tokens in SEQ_FIT_SHAPES:
            if dev.cpu:
                rows, tokens = max(1, rows // 8), max(8, tokens // 8)
            g = t.Generator(device="cpu").manual_seed(rows * 100000 + tokens)
            ids = t.randint(2, 8000, (rows, tokens), generator=g, dtype=t.int64).to(dev.device)
            gb = (ids, t.full((rows,), tokens, dtype=t.int64).to(dev.device))
            sus, loss = sustained_step_s(dev, model, gb, 3, 4 if self.quick else 10)
            points.append({"rows": rows, "tokens": tokens, "step_s": sus["mean"], "cv": sus["cv"]})
            del gb, ids
        float(loss.item())
        fit = fit_sequence_step(points)
        floored = fit_sequence_step_with_floor(points)   # what convert uses (validation run 63, finding 8)
        c[step_name] = {"points": points, "fit": fit, "fit_with_floor": floored, "model": model.describe(),
                        "method": "synthetic token ids (rows x tokens) on the GPU; 3 warm-up steps, then the mean "
                                  "interval between CUDA events around back-to-back steps (no sync between); "
                                  "fit_sequence_step: fixed + per position + per squared row length, relative "
                                  "least squares"}
        if fit:
            log(f"component sequence_step_shapes[{step_name}]: fixed {fit['fixed_s']*1e3:.2f} ms, "
                f"{fit['per_token_s']*1e9:.1f} ns a position, {fit['per_token_squared_s']*1e12:.3f} ps a squared "
                f"length; worst point {fit['max_rel_residual']*100:.1f}% off ({time.perf_counter()-t0:.1f}s)"
                + (f"; with a floor of {floored['floor_s']*1e3:.2f} ms: {floored['fixed_s']*1e3:.2f} ms, "
                   f"{floored['per_token_s']*1e9:.1f} ns, {floored['per_token_squared_s']*1e12:.3f} ps, worst "
                   f"{floored['max_rel_residual']*100:.1f}% off" if floored and floored.get("floor_s") else ""))
        return c[step_name]

    def comp_sequence_new_shape(self, step_name, kind, bs):
        """What the step costs the first time it sees a batch shape (validation run 63: variable-length batches' steps
        took 100-150 ms of host time in their launches where repeated shapes took 10): the host time of the call (until
        it returns: the launches) and its wall to a sync, at 16 lengths it has not run, then again at each, after two
        warm-up steps at the longest + 1 (the user helper's pipeplan_probe.time_new_shapes). Rows are bs + 1, a shape
        the case never draws, so the probe warms none of the case's shapes. convert takes the median of (new - seen)
        host time as sequence.new_shape_host_s."""
        key = f"{step_name}/{kind}/b{bs}"
        c = self.doc["components"].setdefault("sequence_new_shape", {})
        if key in c:
            return c[key]
        t, dev = self.t, self.dev
        t0 = time.perf_counter()
        model = self.step_model(step_name)
        rows = bs + 1
        # 16 lengths from 300 to 727 since the sixty-ninth session (8 before: run 66's spread, NEW_SHAPE_LENGTHS)
        lengths = new_shape_lengths([]) if not dev.cpu else [16 + 3 * j for j in range(4)]

        def batch(n_rows, length):
            g = t.Generator(device="cpu").manual_seed(n_rows * 100000 + length)
            ids = t.randint(2, 8000, (n_rows, length), generator=g, dtype=t.int64).to(dev.device)
            return ids, t.full((n_rows,), length, dtype=t.int64).to(dev.device)

        def timed(length, n_rows=rows):
            gb = batch(n_rows, length)
            dev.sync()
            a = time.perf_counter()
            model(gb)
            b = time.perf_counter()
            dev.sync()
            return b - a, time.perf_counter() - a

        # since the sixty-eighth session the user helper's own procedure (pipeplan_probe.time_new_shapes: two
        # warm-up steps at the longest length + 1 first, so no timed length is the longest the process has run),
        # where this component tried its lengths in increasing order, each the longest so far, and read b16 at
        # 154-165 ms against 105-136 in situ (validation-runs.md runs 64-65, finding 1). The timed batches are
        # built beforehand, outside the timed spans, as before
        built = {(rows, length): batch(rows, length) for length in lengths}
        dev.sync()

        def shape_step(n_rows, length):
            gb = built.get((n_rows, length))
            return model(gb if gb is not None else batch(n_rows, length))

        res = time_new_shapes(shape_step, rows, lengths, sync=lambda _out: dev.sync())
        # since the sixty-seventh session: the same at the case's own rows, on lengths no line has (so the case
        # never draws them): run 64's b16 cost at 17 rows was 22% over the in-situ one at 16 (validation-runs.md run
        # 64, finding 1). Recorded beside, not used by convert until a run compares the two.
        at_case_rows = None
        try:
            hist = ((self.doc["datasets"].get(kind) or {}).get("tokens_per_sample") or {}).get("histogram")
            # never the pad-to-512 kind's one padded length either
            free = [x for x in (lengths_no_line_has(hist, 300, 1200, 4) if not dev.cpu
                                else lengths_no_line_has(hist, 16, 120, 2)) if x != SEQ_PAD_MAX_TOKENS]
            if free:
                pairs = [(timed(length, bs), timed(length, bs)) for length in free]
                at_case_rows = {"rows": bs, "lengths": free,
                                "new_shape_host_s": statistics.median(n[0] - s_[0] for n, s_ in pairs),
                                "new_shape_wall_s": statistics.median(n[1] - s_[1] for n, s_ in pairs)}
        except Exception as e:                 # a diagnostic: never costs the component
            at_case_rows = {"error": f"{e.__class__.__name__}: {e}"}
        c[key] = {"rows": rows, "lengths": lengths, "at_case_rows": at_case_rows,
                  **{k: res[k] for k in ("new_host_s", "new_wall_s", "seen_host_s", "seen_wall_s",
                                         "new_shape_host_s", "new_shape_wall_s", "new_shape_host_s_interval")},
                  "warm_up_length": max(lengths) + 1,
                  "method": "pipeplan_probe.time_new_shapes: two warm-up steps at the longest length + 1, then per "
                            "length the step on a shape never run (rows x length), then on the same shape; host = "
                            "the call's perf_counter span (its launches), wall = to a sync; medians of new minus "
                            "seen"}
        log(f"component sequence_new_shape[{key}]: a new shape's step host {statistics.median(c[key]['new_host_s'])*1e3:.1f} ms "
            f"(wall {statistics.median(c[key]['new_wall_s'])*1e3:.1f}), a seen one {statistics.median(c[key]['seen_host_s'])*1e3:.1f} "
            f"(wall {statistics.median(c[key]['seen_wall_s'])*1e3:.1f}): {c[key]['new_shape_host_s']*1e3:.1f} ms more host a new "
            f"shape" + (f" (median within {c[key]['new_shape_host_s_interval'][0]*1e3:.1f}-"
                        f"{c[key]['new_shape_host_s_interval'][1]*1e3:.1f}, "
                        f"{c[key]['new_shape_host_s_interval'][2]*100:.0f}%)"
                        if c[key].get("new_shape_host_s_interval") else "")
            + f", {c[key]['new_shape_wall_s']*1e3:.1f} ms more wall ({len(lengths)} lengths at {rows} rows, "
            f"{time.perf_counter()-t0:.1f}s)"
            + (f"; at {bs} rows on {len(at_case_rows['lengths'])} lengths no line has: "
               f"{at_case_rows['new_shape_host_s']*1e3:.1f} ms more host"
               if at_case_rows and "new_shape_host_s" in at_case_rows else
               f"; at {bs} rows: {at_case_rows}" if at_case_rows else ""))
        return c[key]

    def comp_host_under_load(self, step_name, kind, bs, busy):
        """The training loop's own host time with `busy` other cores busy, against the same loop alone,
        measured back to back: run 9's ResNet-50 loop took 1.1-1.5x its time alone inside a real pipeline
        (2.7 to 8 busy cores), not understood. If `busy` spinning processes (pure Python, like a worker's
        share of the CPU, no DataLoader) slow it as much, the cause is the cores (SMT siblings, clocks);
        if not, it is the DataLoader's own machinery in the main process. Per step: perf_counter from the
        step's start to its last launch returned, in the plain loop with loss.item() every step.
        Since run 16 also with `busy` processes streaming memory (a 64 MiB memcpy over and over: the collate and
        pin copies' traffic, which flushes the caches the interpreter and the dispatcher run from), and alone
        once more at the end: run 15 found the loop's host time alone 16.6 and 20.8 ms 1.5 s apart in one call
        while its in-situ launch repeated within 3% across runs (validation-runs.md run 15, finding 5)."""
        key = f"{step_name}/{kind}/b{bs}/busy{busy}"
        c = self.doc["components"].setdefault("host_under_load", {})
        if key in c:
            return c[key]
        dev = self.dev
        model = self.step_model(step_name)
        gb = to_device(self.sample_batch(kind, bs), dev.device, False)
        for _ in range(3):
            float(model(gb).item())
        n = 8 if self.quick else 20

        def loop():
            return synthetic_loop_host(model, gb, n)
        alone_host, alone_loop = loop()
        ctx = mp.get_context("fork")

        def beside(target):
            stop = ctx.Event()
            procs = [ctx.Process(target=target, args=(stop,), daemon=True) for _ in range(busy)]
            for pr in procs:
                pr.start()
            try:
                time.sleep(0.3)
                return loop()
            finally:
                stop.set()
                for pr in procs:
                    pr.join(timeout=5)
                    if pr.is_alive():
                        pr.kill()
        loaded_host, loaded_loop = beside(_spin_until)
        streamed_host, streamed_loop = beside(_stream_memory_until)
        after_host, after_loop = loop()
        del gb

        def ratio(x):
            return x["mean"] / alone_host["mean"] if alone_host["mean"] else None
        c[key] = {"busy_processes": busy, "alone_host_s": alone_host, "alone_loop_step_s": alone_loop,
                  "loaded_host_s": loaded_host, "loaded_loop_step_s": loaded_loop, "host_ratio": ratio(loaded_host),
                  "streamed_host_s": streamed_host, "streamed_loop_step_s": streamed_loop,
                  "streamed_host_ratio": ratio(streamed_host),
                  "alone_after_host_s": after_host, "alone_after_loop_step_s": after_loop,
                  "method": "plain synthetic loop (loss.item() each step), host = step start to last launch "
                            "returned; alone, with `busy` forked processes spinning in pure Python, with `busy` "
                            "forked processes copying a 64 MiB buffer over and over (since run 16), alone again"}
        log(f"component host_under_load[{key}]: host {alone_host['mean']*1e3:.2f} ms alone, "
            f"{loaded_host['mean']*1e3:.2f} ms with {busy} busy processes (x{c[key]['host_ratio']:.2f}), "
            f"{streamed_host['mean']*1e3:.2f} ms with {busy} streaming memory (x{c[key]['streamed_host_ratio']:.2f}), "
            f"{after_host['mean']*1e3:.2f} ms alone again; loop {alone_loop*1e3:.2f} / {loaded_loop*1e3:.2f} / "
            f"{streamed_loop*1e3:.2f} / {after_loop*1e3:.2f} ms per step")
        return c[key]

    def _loop_on_a_gpu_batch(self, step_name, kind, bs):
        """The step's model, a batch of `kind` already on the GPU, three warm-up steps, and how many steps a
        host-time window takes (8 quick, 30 full): what the loops beside a DataLoader run."""
        self.comp_load(kind)
        model = self.step_model(step_name)
        gb = to_device(self.sample_batch(kind, bs), self.dev.device, False)
        for _ in range(3):
            float(model(gb).item())
        return model, gb, (8 if self.quick else 30)

    def comp_host_probe(self, step_name, kind, bs):
        """The training loop's host time alone, right before a host-heavy case (components.host_probe) and right
        after it (host_probe_after), since run 20's plan: the plain synthetic loop on a batch already on the GPU,
        20 steps (8 quick), about 0.6 s for ResNet-50. The loop alone drifts 17-25 ms within one call (run 19's GIL
        call: 17.3 and 24.5 ms in one component, eight seconds apart) and the call-wide median the converter takes
        missed the GIL call's cases, whose loop ran 24-32 ms in situ; the loader's probes bracket each case for the
        same reason (run 9). Never cached: each case gets its own."""
        model, gb, _ = self._loop_on_a_gpu_batch(step_name, kind, bs)
        n = 8 if self.quick else 20
        host, loop = synthetic_loop_host(model, gb, n)
        del gb
        return {"host_s": host, "loop_step_s": loop, "steps": n,
                "method": "plain synthetic loop (loss.item() each step) alone on a batch already on the GPU, 3 "
                          "warm-up steps; host = step start to last launch returned; right before or after the case"}

    def _unpinned_window_after(self, case):
        """The unpinned window again right after a case that had one before (components.unpinned_window_after); a
        failure is recorded and never costs the case."""
        k = case["knobs"]
        try:
            case["components"]["unpinned_window_after"] = self.comp_unpinned_window(
                k["step"], k["kind"], k["batch_size"], k["num_workers"], seed=200 + int(case.get("index") or 0))
        except Exception as e:
            case["components"]["unpinned_window_after"] = {"error": f"{e.__class__.__name__}: {e}"}

    def _host_probe_after(self, case):
        """The host probe again right after a case that had one before (components.host_probe_after); a failure is
        recorded and never costs the case."""
        k = case["knobs"]
        try:
            case["components"]["host_probe_after"] = self.comp_host_probe(k["step"], k["kind"], k["batch_size"])
        except Exception as e:
            case["components"]["host_probe_after"] = {"error": f"{e.__class__.__name__}: {e}"}

    def _copied_window(self, model, gb, n, kind, bs, nw, dataset, sampler, nb, step_on_copy):
        """`n` steps of a loop that takes an unpinned batch from a DataLoader (`nw` workers, as the case), copies it
        to the GPU (non_blocking `nb`), runs the step (on the copied batch when `step_on_copy`, as the case does,
        else on the resident `gb`) and drops the batch after the sync: copy, host and release timed apart, the loop
        thread's minor faults a step counted."""
        from torch.utils.data import DataLoader
        from pace_thread import thread_minor_faults
        tid = threading.get_native_id()
        dl = DataLoader(dataset, batch_size=bs, sampler=sampler, num_workers=nw, prefetch_factor=2,
                        pin_memory=False, drop_last=True, collate_fn=self.collate_fn(kind))
        it = iter(dl)
        for _ in range(2 * nw):                    # the workers up (this empties the prefetch slots)
            next(it)
        # Since run 26 (validation-runs.md, finding 3): let the workers refill their 2 slots each before the timing, or
        # the first steps' next() waits for them (run 26's mm:5 windows: a few next() of 11-53 ms, mean 2.2-3.2 ms
        # against the case's 1.5-2.1 at the same CPU). Two batches per worker in parallel, a quarter more for margin.
        busy = (self.doc["components"].get("in_worker", {}).get(f"{kind}/b{bs}") or {}).get("batch_busy_s")
        time.sleep(min(3.0, 2.5 * busy) if busy else 1.0)
        copy_s, release_s, host_s, next_s, next_cpu_s = [], [], [], [], []
        f0 = thread_minor_faults(tid)
        for _ in range(n):
            w0, c0 = time.perf_counter(), time.thread_time()
            batch = next(it)                       # the batch's receive: unpickling, mapping the worker's memory
            next_cpu_s.append(time.thread_time() - c0)
            a = time.perf_counter()
            next_s.append(a - w0)
            on_gpu = to_device(batch, self.dev.device, nb)
            b = time.perf_counter()
            loss = model(on_gpu if step_on_copy else gb)
            h = time.perf_counter()
            float(loss.item())
            del on_gpu, loss
            r0 = time.perf_counter()
            del batch                              # the release of the touched mapping, on the loop's thread
            release_s.append(time.perf_counter() - r0)
            copy_s.append(b - a)
            host_s.append(h - b)
        f1 = thread_minor_faults(tid)
        del it, dl
        return {"host_s": summarize(host_s), "copy_s": summarize(copy_s), "release_s": summarize(release_s),
                "next_s": summarize(next_s), "next_cpu_s": summarize(next_cpu_s),
                # each step's next() wall and CPU (the mean hides whether a few waits for a worker carry it)
                "next_s_per_step": [round(x, 6) for x in next_s],
                "next_cpu_s_per_step": [round(x, 6) for x in next_cpu_s],
                "loop_minor_faults_per_step": (f1 - f0) / n if f0 is not None and f1 is not None else None}

    def comp_unpinned_window(self, step_name, kind, bs, nw, seed):
        """An unpinned case's copy and release on the loop's thread, right before the case (components
        unpinned_window) and right after it (unpinned_window_after), since run 23's plan: host_beside_loader's
        case-like window (the case's file-reading dataset, non_blocking=True, the step on the copied batch) again,
        about 1.5 s. host_beside_loader's one window at the call's start read 12% (copy) and 10-20% (release)
        cheaper than the unpinned mm:5 cases' own in runs 21 and 22 (validation-runs.md run 22, finding 4), and those
        cases were all predicted fast; the loader's probes bracket each case for the same reason (run 9). Same keys
        as host_beside_loader's, which convert reads. Never cached: each case gets its own."""
        model, gb, n = self._loop_on_a_gpu_batch(step_name, kind, bs)
        ds = self.datasets[kind]
        sampler = IndexSampler(len(ds), (n + 4 * nw + 2) * bs, seed=seed)
        t0 = time.perf_counter()
        w = self._copied_window(model, gb, n, kind, bs, nw, ds, sampler, True, True)
        del gb
        log(f"component unpinned_window[{step_name}/{kind}/b{bs}/w{nw}]: next {w['next_s']['mean'] * 1e3:.2f} (cpu "
            f"{w['next_cpu_s']['mean'] * 1e3:.2f}), copy {w['copy_s']['mean'] * 1e3:.2f}, "
            f"release {w['release_s']['mean'] * 1e3:.2f}, host {w['host_s']['mean'] * 1e3:.2f} ms a step "
            f"({time.perf_counter() - t0:.1f}s)")
        return {"workers": nw, "steps": n, "unpinned_case_like_copy_s": w["copy_s"],
                "unpinned_case_like_release_s": w["release_s"], "unpinned_case_like_host_s": w["host_s"],
                "unpinned_case_like_loop_minor_faults_per_step": w["loop_minor_faults_per_step"],
                # since run 26's plan: next()'s wall and the loop thread's CPU in it (the batch's receive)
                "unpinned_case_like_next_s": w["next_s"], "unpinned_case_like_next_cpu_s": w["next_cpu_s"],
                "unpinned_case_like_next_s_per_step": w["next_s_per_step"],
                "unpinned_case_like_next_cpu_s_per_step": w["next_cpu_s_per_step"],
                "method": "host_beside_loader's case-like window alone (next(), copy, host and release timed apart)"}

    def comp_host_beside_loader(self, step_name, kind, bs, nw):
        """The training loop's own host time per step beside a live DataLoader (since run 16): alone, then taking
        each step's batch from a DataLoader over already-loaded samples (`nw` workers collating, as the case)
        with pin_memory=True (the pin thread receives and pins beside the loop) and with pin_memory=False (the
        loop's next() receives; excluded from the host time). The batch is dropped: the step runs on a batch
        already on the GPU, so no copy enters the host time. Run 15 (validation-runs.md, finding 5): the pinned
        ResNet-50 loop launched in 1.2-1.4x its time alone in situ, the unpinned one about 1.0-1.1x once its
        copy is taken out; if the pinned loop here is slower than the unpinned one, the pin thread's GIL
        handoffs cost the loop more than the receive time the model holds the GIL for."""
        key = f"{step_name}/{kind}/b{bs}/w{nw}"
        c = self.doc["components"].setdefault("host_beside_loader", {})
        if key in c:
            return c[key]
        from torch.utils.data import DataLoader
        model, gb, n = self._loop_on_a_gpu_batch(step_name, kind, bs)

        def loop(it):
            return synthetic_loop_host(model, gb, n, it)[0]
        t0 = time.perf_counter()
        res = {"workers": nw, "steps": n, "alone_host_s": loop(None)}
        for pin in (True, False):
            dl = DataLoader(CachedDataset(self.samples_cache[kind]), batch_size=bs, num_workers=nw,
                            prefetch_factor=2, pin_memory=pin, collate_fn=self.collate_fn(kind))
            it = iter(dl)
            for _ in range(2 * nw):                # the workers up and the prefetch slots full
                next(it)
            res["pinned_host_s" if pin else "unpinned_host_s"] = loop(it)
            del it, dl
        # The unpinned case's own work on the loop's thread (run 17, finding 2: its loop 8-10 ms slower in situ
        # than its host time plus calibrate's fresh-mapping copy and release): each step copies its batch to the
        # GPU (pageable, from the worker's fresh mapping) and drops it after the step, each part timed.
        def copied_window(name, copy_key, release_key, dataset, sampler, nb, step_on_copy):
            w = self._copied_window(model, gb, n, kind, bs, nw, dataset, sampler, nb, step_on_copy)
            res[f"{name}_host_s"], res[copy_key], res[release_key] = w["host_s"], w["copy_s"], w["release_s"]
            res[f"{name}_loop_minor_faults_per_step"] = w["loop_minor_faults_per_step"]
            res[f"{name}_next_s"], res[f"{name}_next_cpu_s"] = w["next_s"], w["next_cpu_s"]   # since run 26's plan
        copied_window("unpinned_copied", "unpinned_copy_s", "unpinned_release_s",   # run 18's keys
                      CachedDataset(self.samples_cache[kind]), None, False, False)
        # Run 18 (finding 2): that window's host + copy stayed 7-9 ms a step under the GIL call's unpinned cases. What
        # the case does differently, all at once: its dataset reads the files in the workers, its copy is
        # non_blocking=True and its step runs on the copied batch.
        ds = self.datasets[kind]
        sampler = IndexSampler(len(ds), (n + 4 * nw + 2) * bs, seed=7)
        try:                                       # new in run 19's plan: never costs the component's other windows
            copied_window("unpinned_case_like", "unpinned_case_like_copy_s", "unpinned_case_like_release_s",
                          ds, sampler, True, True)
        except Exception as e:
            res["unpinned_case_like_error"] = f"{e.__class__.__name__}: {e}"
        res["alone_again_host_s"] = loop(None)
        del gb
        res["method"] = ("plain synthetic loop (loss.item() each step) on a batch already on the GPU; host = step start "
                         "to last launch returned; alone, then each step taking (and dropping) a batch from a "
                         "DataLoader(cached samples, num_workers as the case, pin_memory True, then False), then "
                         "unpinned with each batch copied to the GPU before the step and dropped after it (copy, "
                         "host and release timed apart; the loop thread's minor faults a step), then the same as the "
                         "case does it (since run 19: the case's file-reading dataset, non_blocking=True, the step on "
                         "the copied batch; unpinned_case_like_*), alone again")
        c[key] = res

        def ms(x):
            return f"{x['mean'] * 1e3:.2f}" if x else "n/a"
        res_get = res.get
        log(f"component host_beside_loader[{key}]: host {ms(res['alone_host_s'])} ms alone, "
            f"{ms(res['pinned_host_s'])} beside a pinning loader, {ms(res['unpinned_host_s'])} beside an unpinned one, "
            f"{ms(res['unpinned_copied_host_s'])} beside an unpinned one whose batch it copies (copy "
            f"{ms(res['unpinned_copy_s'])}, release {ms(res['unpinned_release_s'])}, faults "
            f"{res['unpinned_copied_loop_minor_faults_per_step']}/step), {ms(res_get('unpinned_case_like_host_s'))} as "
            f"the case (files, non_blocking, step on the copy: copy {ms(res_get('unpinned_case_like_copy_s'))}, release "
            f"{ms(res_get('unpinned_case_like_release_s'))}, faults "
            f"{res_get('unpinned_case_like_loop_minor_faults_per_step', res_get('unpinned_case_like_error'))}/step), {ms(res['alone_again_host_s'])} alone again ({time.perf_counter() - t0:.1f}s)")
        return c[key]

    def _warm_unpinned_loader(self, kind, bs, nw):
        """DataLoader(cached samples, `nw` workers, the case's collate, pin_memory=False) and its iterator, the
        workers up (2 x nw batches taken): the source of host_beside_pin_parts' helper thread."""
        from torch.utils.data import DataLoader
        dl = DataLoader(CachedDataset(self.samples_cache[kind]), batch_size=bs, num_workers=nw,
                        prefetch_factor=2, pin_memory=False, collate_fn=self.collate_fn(kind))
        it = iter(dl)
        for _ in range(2 * nw):
            next(it)
        return dl, it

    def _pin_memory_interleaved(self, model, gb, kind, bs, nw):
        """The loop alone and beside a helper thread that takes each batch from an unpinned DataLoader (cached
        samples, `nw` workers) and pin_memory()s it, in blocks of MEMORY_MAP_BLOCK_STEPS steps, alone first and last
        (MEMORY_MAP_ROUNDS blocks beside it, as many beside the receive alone since the twenty-sixth session): the
        user helper's pipeplan_probe.time_step_beside_pin with the harness's loop (the step on a batch already on the
        GPU, loss.item() each step) and the case's cached samples (since run 29's session; run 29's GIL call ran the
        helper on the GPU: rate 1.01 against this component's 0.84 in the same call, both within the blocks'
        spread). Its loop-thread fault counts per block come with it."""
        from pipeplan_probe import time_step_beside_pin
        return time_step_beside_pin(lambda: model(gb), CachedDataset(self.samples_cache[kind]),
                                    collate_fn=self.collate_fn(kind), batch_size=bs, num_workers=nw,
                                    sync=lambda loss: float(loss.item()))   # its pin work: pin_memory() each tensor

    def comp_host_beside_pin_parts(self, step_name, kind, bs, nw):
        """The training loop's host time beside a thread doing one part of the pin thread's work (since run 17;
        pace_thread.PaceThread, one batch per loop step, at most two ahead, torch.set_num_threads(1) on the thread
        as PyTorch's pin loop sets it). Each part, in this order:
          receive       take a batch from an unpinned DataLoader (cached samples, `nw` workers, as the case), drop
                        it: the receive (GIL-held) and the release of pages never touched;
          touch         also read one byte of every 4 KiB page of the batch (GIL-free): the first-touch faults on
                        the worker's shared mapping and the release of touched pages, without the copy's traffic;
          copy          also copy the batch into a pinned buffer allocated once (GIL-free): PyTorch's pin loop
                        without its caching host allocator;
          private_copy  no DataLoader: copy a private, already-touched batch into the pinned buffer: the copy's
                        CPU and memory traffic alone, no receive, no faults, no release;
          pin_memory    receive and x.pin_memory() as the pin loop does (caching host allocator), drop both;
          private_map   no DataLoader: allocate a fresh private tensor of the batch's bytes (an anonymous mapping
                        above glibc's 32 MiB mmap threshold), touch every page, free it (munmap): the mapping work
                        on the process's own memory, no shared memory (since run 18's plan).
        The helper's CPU per batch (thread_time, median) with each, and the loop thread's minor page faults per
        step in every window (run 30, finding 1: copy-on-write after each part's DataLoader fork, not the loop's stalls;
        the late half of each window reads the steady state). Run 17's first reading (B2): the loop took
        18.6 ms alone, 22.1 beside receive, 30.6 beside copy, 33.5 beside a pinning DataLoader: the GIL-free copy
        slowed it by 8.5 ms. touch and private_copy tell the shared mapping's faults and release (the process's
        memory-map lock) from the copy's CPU and memory traffic."""
        key = f"{step_name}/{kind}/b{bs}/w{nw}"
        c = self.doc["components"].setdefault("host_beside_pin_parts", {})
        if key in c:
            return c[key]
        import itertools
        from pace_thread import PaceThread, spanned, thread_minor_faults
        from timeline_analysis import stall_line
        t = self.t
        model, gb, n = self._loop_on_a_gpu_batch(step_name, kind, bs)
        t0 = time.perf_counter()
        tid = threading.get_native_id()
        res = {"workers": nw, "steps": n}

        def timed_loop(name, tokens=None, spans=None):
            # the window in two halves, faults counted in each (since run 29's session): a DataLoader forked right
            # before the window makes the loop's first writes to each page copy-on-write faults, which stop once its
            # working set is copied (a CPU loop here: 26 a step for 10 steps after the fork, then 0.1). Run 29's
            # third GIL call read 60 a step beside the parts that fork a loader and 1 / 1 in the interleaved blocks,
            # which fork theirs before warming up: the late half says whether the loop faults in steady state.
            spans = [] if spans is None else spans
            half = n // 2
            f0 = thread_minor_faults(tid)
            _, wall_early = synthetic_loop_host(model, gb, half, tokens, spans)
            f1 = thread_minor_faults(tid)
            _, wall_late = synthetic_loop_host(model, gb, n - half, tokens, spans)
            f2 = thread_minor_faults(tid)
            res[f"{name}_host_s"] = summarize([e - s for s, e in spans[-n:]])
            counted = None not in (f0, f1, f2)
            res[f"{name}_loop_minor_faults_per_step"] = (f2 - f0) / n if counted else None
            res[f"{name}_loop_minor_faults_per_step_late"] = (f2 - f1) / (n - half) if counted else None
            return (wall_early * half + wall_late * (n - half)) / n
        timed_loop("alone")
        bufs = {}

        def copy_to_pinned(batch):
            copy_into_pinned(t, bufs, batch)   # touches every page of the source

        def touch(batch):
            touch_pages(t, batch)

        def pin(batch):
            for x in tensors_in(batch):
                x.pin_memory()                 # the caching host allocator's block, dropped at once

        def one_thread():
            t.set_num_threads(1)               # as torch.utils.data._utils.pin_memory._pin_memory_loop

        private = self.sample_batch(kind, bs)  # a collated batch in this process's own (touched) memory
        private_bytes = sum(x.numel() * x.element_size() for x in tensors_in(private))

        def map_touch_unmap(_batch):
            x = t.empty(private_bytes, dtype=t.uint8)   # fresh anonymous mapping (above the mmap threshold)
            x[::4096].fill_(1)                 # first touch of every page, GIL released inside
            del x                              # munmap, GIL released (THPVariable_clear)
        parts = (("receive", None, True), ("touch", touch, True), ("copy", copy_to_pinned, True),
                 ("private_copy", copy_to_pinned, False), ("pin_memory", pin, True),
                 ("private_map", map_touch_unmap, False))
        stall_lines = []
        for part, work, from_loader in parts:
            dl = it = None
            if from_loader:                    # the helper then paces one batch a loop step
                dl, it = self._warm_unpinned_loader(kind, bs, nw)
            src = it if from_loader else itertools.repeat(private)
            # since run 26 (validation-runs.md, finding 2): the helper's work spans and the loop's host spans, for the
            # loop's loss per second of the work inside its steps (timeline_analysis.stall_line), as the pinned
            # ResNet-50 cases' timelines give it against their pin_memory() calls (0.74-0.77 in runs 24-26)
            work_spans, loop_spans = [], []
            with PaceThread(src, work=spanned(work, work_spans) if work else None, ahead=2,
                            on_start=one_thread) as pt:
                wall = timed_loop(part, pt.tokens(), loop_spans)
            if work:
                line = stall_line(loop_spans, list(work_spans), min_steps=8)
                res[f"{part}_loop_stall_per_work_overlap"] = line
                if line:
                    stall_lines.append(f"{part} {line['base_s'] * 1e3:.2f} + {line['slope']:.2f} x "
                                       f"{line['overlap_s_per_step'] * 1e3:.2f}")
            cpu = sorted(pt.cpu_s[1:]) or sorted(pt.cpu_s)   # the first batch allocates the pinned buffers
            res[f"{part}_loop_s_per_step"] = wall
            res[f"{part}_thread_cpu_s_per_batch"] = cpu[len(cpu) // 2] if cpu else None
            del it, dl, src
        bufs.clear()
        timed_loop("alone_again")
        # since run 27 (validation-runs.md, finding 1): the parts above run one after another over about 8 s while the
        # loop alone drifts (16 -> 23 ms in B2's), and the line fitted within one part is no rate (its helper's
        # work inside a step barely varies). Here the loop runs alone and beside the pin_memory helper in short
        # blocks in turn, alone first and last, and each beside block is read against its two neighbours
        # (timeline_analysis.interleaved_stall_rate): convert's memory_map_rate prefers this reading.
        try:
            res["pin_memory_interleaved"] = self._pin_memory_interleaved(model, gb, kind, bs, nw)
        except Exception as e:                 # a diagnostic: the parts above stand without it
            res["pin_memory_interleaved"] = {"error": f"{e.__class__.__name__}: {e}"}
        del gb, private
        iv = res.get("pin_memory_interleaved") or {}
        if iv.get("rate") is not None:
            log(f"component host_beside_pin_parts[{key}]: interleaved, {iv['blocks']} blocks of "
                f"{iv['block_steps']} steps beside pin_memory(): alone {iv['alone_s'] * 1e3:.2f} ms, beside "
                f"{iv['beside_s'] * 1e3:.2f} ms, the helper's work {iv['overlap_s_per_step'] * 1e3:.2f} ms a step: "
                f"rate {iv['rate']:.2f} (blocks {', '.join('n/a' if r is None else f'{r:.2f}' for r in iv['block_rates'])}"
                f"); the loop's minor faults a step alone / beside: "
                + " / ".join("n/a" if iv.get(f) is None else f"{iv[f]:.0f}"
                             for f in ("alone_faults_per_step", "beside_faults_per_step"))
                + memory_map_verdict_note(res))
        res["method"] = ("plain synthetic loop (loss.item() each step) on a batch already on the GPU; host = step start "
                         "to last launch returned; alone, then each step taking a token from a helper thread "
                         "(torch.set_num_threads(1)) that takes a batch from DataLoader(cached samples, num_workers as "
                         "the case, pin_memory=False) and drops it (receive), reads a byte a page (touch), copies it "
                         "into a pinned buffer (copy), copies a private touched batch instead (private_copy), "
                         "pin_memory()s it (pin_memory), or maps, touches and frees a private region of the batch's "
                         "bytes (private_map), at most 2 batches ahead; the helper's CPU per batch (thread_time, "
                         "median); alone again; the loop thread's minor faults per step in each window (/proc); then "
                         "pin_memory_interleaved: blocks of steps alone and beside the pin_memory helper in turn "
                         "(and beside the receive alone, since the twenty-sixth session)")
        c[key] = res

        def ms(x):
            return f"{x['mean'] * 1e3:.2f}" if isinstance(x, dict) else (f"{x * 1e3:.2f}" if x is not None else "n/a")
        beside = ", ".join(f"{part} {ms(res[part + '_host_s'])} (CPU {ms(res[part + '_thread_cpu_s_per_batch'])})"
                           for part, _w, _l in parts)
        faults = ", ".join(f"{name} {res[name + '_loop_minor_faults_per_step']:.0f}"
                           f" (late half {res[name + '_loop_minor_faults_per_step_late']:.0f})"
                           for name in ["alone"] + [p for p, _w, _l in parts] + ["alone_again"]
                           if res.get(name + "_loop_minor_faults_per_step") is not None)
        log(f"component host_beside_pin_parts[{key}]: host {ms(res['alone_host_s'])} ms alone; beside a thread doing "
            f"{beside}; {ms(res['alone_again_host_s'])} alone again; the loop's minor faults a step: {faults or 'n/a'}; "
            f"host ms = base + slope x the helper's work inside the step: {'; '.join(stall_lines) or 'n/a'} "
            f"({time.perf_counter() - t0:.1f}s)")
        return c[key]

    def comp_host_beside_workers(self, step_name, kind, bs, nw):
        """The training loop's host time beside the case's workers alone, in blocks alone and beside in turn (since
        run 29's session; validation-runs.md run 28, finding 4): beside_workers.run_blocks with the case's own dataset
        (its files, its decode) behind DataLoader(num_workers as the case, pin_memory=False: no pin thread, no
        copy), each beside step taking one batch and dropping it before its span, the loop on a batch already on the
        GPU; the workers' CPU around each span from /proc/<pid>/schedstat. timeline_analysis.interleaved_host_ratio:
        the loop's host time beside the workers over its time alone, the drift cancelled between neighbours."""
        key = f"{step_name}/{kind}/b{bs}/w{nw}"
        c = self.doc["components"].setdefault("host_beside_workers", {})
        if key in c:
            return c[key]
        from torch.utils.data import DataLoader
        import beside_workers as BW
        from timeline_analysis import interleaved_host_ratio
        model, gb, _ = self._loop_on_a_gpu_batch(step_name, kind, bs)
        t0 = time.perf_counter()
        steps = BW.ROUNDS * BW.BLOCK_STEPS + 4 * nw + 2
        ds = self.datasets[kind]
        dl = DataLoader(ds, batch_size=bs, sampler=IndexSampler(len(ds), steps * bs, seed=11), num_workers=nw,
                        prefetch_factor=2, pin_memory=False, drop_last=True, collate_fn=self.collate_fn(kind))
        it = iter(dl)
        for _ in range(2 * nw):                    # the workers up and their first batches through
            next(it)
        pids = [w.pid for w in getattr(it, "_workers", [])]
        blocks = BW.run_blocks(lambda: model(gb), lambda loss: float(loss.item()), lambda: next(it),
                               lambda: BW.workers_cpu_s(pids) if pids else None)
        del it, dl, gb
        res = interleaved_host_ratio(blocks, BW.IDLE_BUSY_WORKERS) or \
            {"error": "no beside block between two alone blocks with steps clear of the workers"}
        res.update({"workers": nw, "block_steps": BW.BLOCK_STEPS, "rounds": BW.ROUNDS,
                    "alone_steps": sum(len(b["steps"]) for b in blocks if not b["beside"]),
                    # from the steps: after `del it` the workers are gone and /proc has nothing to read
                    "worker_cpu_read": any(busy is not None for b in blocks for _, _, busy in b["steps"]),
                    "method": "plain synthetic loop (loss.item() each step) on a batch already on the GPU; host = step "
                              "start to last launch returned; blocks alone / beside DataLoader(the case's dataset, "
                              "num_workers as the case, pin_memory=False) in turn, each beside step taking and "
                              "dropping one batch outside its span; alone steps counted only with the workers idle "
                              "(their CPU around the span, /proc/<pid>/schedstat)"})
        c[key] = res
        if res.get("ratio") is not None:
            busy = res["beside_busy_workers"]
            log(f"component host_beside_workers[{key}]: {res['blocks']} beside blocks of {BW.BLOCK_STEPS} steps: host "
                f"{res['alone_s'] * 1e3:.2f} ms alone, {res['beside_s'] * 1e3:.2f} beside {nw} workers "
                f"({'n/a' if busy is None else f'{busy:.1f}'} busy): ratio {res['ratio']:.3f} (blocks "
                f"{', '.join(f'{r:.3f}' for r in res['block_ratios'])}; "
                f"{res['alone_clear_steps']} of {res['alone_steps']} alone steps clear) ({time.perf_counter() - t0:.1f}s)")
        else:
            log(f"component host_beside_workers[{key}]: {res.get('error')} ({time.perf_counter() - t0:.1f}s)")
        return c[key]

    def comp_transport(self, kind, bs):
        """Main-process cost per batch of receiving (and pinning) a batch from the workers, as
        PyTorch does it: a DataLoader over already-loaded samples with many workers, so the main
        side is the limit; per-batch time with pin_memory off (receive) and on (receive + pin)."""
        key = f"{kind}/b{bs}"
        c = self.doc["components"]["transport"]
        if key in c:
            return c[key]
        from torch.utils.data import DataLoader
        self.comp_load(kind)
        res = {"num_workers": 12, "method": "DataLoader(cached samples, batch_size=bs, num_workers=12, prefetch_factor=2, "
               "collate_fn as the case); iterate without using the batch; "
               "seconds per batch after 10 warm-up batches, median of 3 windows"}
        t0 = time.perf_counter()
        for pin in (False, True):
            dl = DataLoader(CachedDataset(self.samples_cache[kind]), batch_size=bs, num_workers=12,
                            prefetch_factor=2, pin_memory=pin, collate_fn=self.collate_fn(kind))
            with (PinThreadMeter() if pin else contextlib.nullcontext()) as meter:
                it = iter(dl)
                for _ in range(10):
                    next(it)
                windows = []
                p0, c0 = (meter.snapshot(), PinThreadMeter.thread_cpu_s(it)) if meter else (None, None)
                main0, n_all = time.thread_time(), 0
                for _w in range(3):
                    n, a = 0, time.perf_counter()
                    while n < 8 or time.perf_counter() - a < (0.4 if self.quick else 0.8):
                        next(it)
                        n += 1
                    windows.append((time.perf_counter() - a) / n)
                    n_all += n
                if meter:
                    # the same pin-thread figures as each pinned case's in_situ, for a like-for-like check
                    res.update(pin_thread_figures(p0, meter.snapshot(), c0, PinThreadMeter.thread_cpu_s(it), n_all))
                if pin:
                    # one more window, apart from the figures above (the probe costs a few percent of a core): a
                    # probe thread samples how long a thread wanting the GIL waits beside the pin thread's receive
                    # (validation run 62, finding 3: what ipc.receive_gil_share needs); it never fails the component
                    try:
                        n, a, main0 = 0, time.perf_counter(), time.thread_time()
                        with GilProbe() as gil:
                            while n < 8 or time.perf_counter() - a < (0.4 if self.quick else 0.8):
                                next(it)
                                n += 1
                        res["gil_probe"] = gil_probe_figures(gil.figures(), n, time.thread_time() - main0)
                    except Exception as e:  # noqa: BLE001
                        res["gil_probe"] = {"error": repr(e)}
                else:
                    # the main thread's CPU per batch received: the probes' like-for-like figure when unpinned
                    res["receive_cpu_s_per_batch"] = (time.thread_time() - main0) / n_all
            del it, dl
            gc.collect()
            res["pin_s_per_batch" if pin else "receive_s_per_batch"] = sorted(windows)[1]
        c[key] = res
        extra = ""
        if "pin_copy_s_per_batch" in res:
            extra += f", of which pin_memory() {res['pin_copy_s_per_batch']*1e3:.2f}"
        if "pin_thread_cpu_s_per_batch" in res:
            extra += f", pin thread CPU {res['pin_thread_cpu_s_per_batch']*1e3:.2f}"
        g = res.get("gil_probe") or {}
        if g.get("held_s_per_batch") is not None:
            rq = g.get("held_less_runqueue_s_per_batch")
            wm = g.get("late_weighted_median_s")
            extra += (f"; a GIL-wanting thread waited {g['held_s_per_batch']*1e3:.2f} ms a batch (the loop's own "
                      f"CPU {g['main_cpu_s_per_batch']*1e3:.2f}; less run-queue waits "
                      f"{'n/a' if rq is None else '%.2f' % (rq * 1e3)}; half of it in waits over "
                      f"{'n/a' if wm is None else '%.2f' % (wm * 1e3)} ms)")
        log(f"component transport[{key}]: receive {res['receive_s_per_batch']*1e3:.2f} ms/batch, "
            f"receive+pin {res['pin_s_per_batch']*1e3:.2f} ms/batch{extra} ({time.perf_counter()-t0:.1f}s)")
        return res

    def _time_in_one_worker(self, kind, bs, n_batches, min_s):
        """__getitem__ and collate timed inside ONE DataLoader worker (first batch left out), and the
        worker process's CPU per batch beyond both (from /proc)."""
        from torch.utils.data import DataLoader
        insitu = InSitu()
        ds = self.datasets[kind]
        # indices for more batches than are taken: the worker must still be alive when its CPU time
        # is read at the end (an exhausted iterator shuts its workers down, and /proc loses them;
        # runs 4 and 5 lost worker_s_per_batch that way for every batch size but one)
        sampler = IndexSampler(len(ds), (n_batches + 4) * bs, seed=23)
        dl = DataLoader(InstrumentedDataset(ds, insitu), batch_size=bs, sampler=sampler, num_workers=1,
                        prefetch_factor=2, collate_fn=InstrumentedCollate(self.collate_fn(kind), insitu))
        t0 = time.perf_counter()
        it = iter(dl)
        next(it)                      # worker start-up and first batch left out
        s0 = insitu.snapshot()
        pid = it._workers[0].pid
        cpu0 = process_cpu_s(pid)
        n = 0
        for _ in it:
            n += 1
            if n >= n_batches or (n >= 3 and time.perf_counter() - t0 > min_s):
                break
        s1 = insitu.snapshot()
        cpu1 = process_cpu_s(pid)
        del it, dl
        gc.collect()
        res = InSitu.diff(s0, s1)
        # The worker process's whole CPU per batch (all its threads: the loop, the queue's feeder
        # thread pickling each batch) beyond __getitem__ and collate: loader.worker_s_per_batch.
        # Batches counted by collate calls; the worker runs ahead by its prefetch, so the window
        # holds the collates of the batches it produced in it.
        if cpu0 is not None and cpu1 is not None and res["batches"] and res["getitem_cpu_s"] is not None:
            per_batch = (cpu1 - cpu0) / res["batches"]
            res["process_cpu_s_per_batch"] = per_batch
            res["overhead_s_per_batch"] = max(0.0, per_batch - res["getitem_cpu_s"] * res["samples"] / res["batches"]
                                              - (res["collate_cpu_s"] or 0.0))
        res["seconds"] = time.perf_counter() - t0
        return res

    def comp_in_worker(self, kind, bs):
        """__getitem__ and collate timed inside ONE DataLoader worker process, nothing else
        running: the per-sample and per-batch costs as a worker pays them (forked process, torch
        1 thread, collate into fresh shared memory), which the main-process timings miss by
        10-20% (getitem) and up to 5x (collate of small batches) on the H200 machine."""
        key = f"{kind}/b{bs}"
        c = self.doc["components"]["in_worker"]
        if key in c:
            return c[key]
        res = self._time_in_one_worker(kind, bs, n_batches=12, min_s=2.0 if self.quick else 4.0)
        res["method"] = ("DataLoader(dataset, batch_size, num_workers=1, collate_fn as the case): perf_counter and "
                         "thread_time around each __getitem__ and collate_fn inside the one worker, first batch left out")
        c[key] = res
        if res["getitem_wall_s"] and res["collate_wall_s"]:
            log(f"component in_worker[{key}]: getitem {res['getitem_wall_s']*1e3:.3f} ms, collate "
                f"{res['collate_wall_s']*1e3:.2f} ms ({res['samples']} samples, {res['seconds']:.1f}s)")
        return res

    def _probe_cold_no_gpu(self, case):
        """Right after a cold case (forty-eighth session): the whole cache dropped again, the case's loader without
        its pin thread and without a GPU (each batch dropped), 1 s timed after 2K warm-up batches: the workers' wait
        a file (getitem wall less CPU) on the same files at the same count with nothing else running. Against the
        case's own in-situ wait, it says whether the cold tensor workers' 1.2x over the simulator (validation run 52,
        finding 1) comes with the GPU step, the pin thread and the copies, or with the files and the readers alone.
        1 s keeps the window's files unread (3,200 tensor files at about 2,000 a second, less the warm-up's).
        Recorded as components.probe_cold_no_gpu; a failure is recorded and never costs the case."""
        k = case["knobs"]
        if self.quick or k["num_workers"] <= 0 or case.get("status") != "ok":
            return
        try:
            drop_page_cache(self._paths[k["kind"]])
            res = self._time_k_workers(k["kind"], k["batch_size"], k["num_workers"], window_s=1.0, seed=43)
            res["method"] = ("right after the cold case, the page cache dropped again: DataLoader(dataset, batch_size, "
                             "num_workers as the case, prefetch_factor=2, no pin_memory, the case's collate_fn), the main "
                             "loop drops each batch, no GPU work; getitem timed inside the workers for about 1 s after "
                             "2K warm-up batches")
            case["components"]["probe_cold_no_gpu"] = res
            if res.get("getitem_wall_s") and res.get("getitem_cpu_s") is not None:
                log(f"component probe_cold_no_gpu[{k['kind']}/b{k['batch_size']}/w{k['num_workers']}]: getitem "
                    f"{res['getitem_wall_s']*1e3:.3f} ms (cpu {res['getitem_cpu_s']*1e3:.3f}): waits "
                    f"{(res['getitem_wall_s'] - res['getitem_cpu_s'])*1e3:.3f} ms a file with no GPU or pin thread")
        except Exception as e:
            case["components"]["probe_cold_no_gpu"] = {"error": f"{e.__class__.__name__}: {e}"}

    def _probe_after(self, case):
        """The case's probe again, right after it (components.probe_after); a failure is recorded and never costs
        the case."""
        k = case["knobs"]
        try:
            case["components"]["probe_after"] = self.comp_probe(k["kind"], k["batch_size"], k["num_workers"],
                                                                pin=k["pin_memory"] and k["num_workers"] > 0,
                                                                straggler=probe_straggler(k, PROBE_WITH_STRAGGLER))
        except Exception as e:
            case["components"]["probe_after"] = {"error": f"{e.__class__.__name__}: {e}"}

    def _wander_long(self, case):
        """Once a call per warm loader setting with two workers or more (wander_long_key; --wander-long-s, device plan
        item 28): the probe's loader, the loop dropping each batch, for WANDER_LONG_S seconds, its workers' batch
        walls kept in order (components.wander_long[key].worker_batch_s) with their autocorrelation to lag 16: the
        wander's memory, which a probe's 17-49 batches a worker cannot read past lag 4 (validation-runs.md run 82,
        finding 3). A failure is recorded and never costs the case."""
        k = case["knobs"]
        key = wander_long_key(k)
        store = self.doc["components"].setdefault("wander_long", {})
        if key is None or key in store:
            return
        try:
            res = self._time_k_workers(k["kind"], k["batch_size"], k["num_workers"], window_s=WANDER_LONG_S, seed=59,
                                       pin=bool(k["pin_memory"]))
            series = res.get("worker_batch_s") or []
            if series:
                from timeline_analysis import wander_shape
                res["autocorrelation_by_lag"] = wander_shape(series, (1, 2, 4, 8, 16))["autocorrelation_by_lag"]
            res["method"] = (f"once a call for {key}, after its first case: the probe's loader (DataLoader(dataset, "
                             "batch_size, num_workers, prefetch_factor=2, pin_memory as the case, the case's "
                             f"collate_fn), the loop dropping each batch, for about {WANDER_LONG_S:g} s after 2K "
                             "warm-up batches; worker_batch_s: each worker's batch walls in order")
            store[key] = res
            acf = res.get("autocorrelation_by_lag") or {}
            log(f"component wander_long[{key}]: {res.get('batches')} batches in {res.get('window_s', 0):.1f} s, "
                "autocorrelation at lags 1/2/4/8/16 "
                + " / ".join("n/a" if acf.get(str(g)) is None else f"{acf[str(g)]:.2f}" for g in (1, 2, 4, 8, 16)))
        except Exception as e:
            store[key] = {"error": f"{e.__class__.__name__}: {e}"}

    def _probe_no_put(self, case):
        """The case's loader once more right after it, its batches collated and then dropped inside the workers
        (components.probe_no_put; --probe-no-put, validation-runs.md run 81, finding 2): the workers' __getitem__
        and collate with no batch put into shared memory beside them, against the probes' with it. Its difference is
        what the queue feeder's put costs the worker (its GIL, its core), which the probes' per-sample cost carries
        and the turnaround what-if (loader.worker_turnaround_share) would count twice. A failure is recorded and
        never costs the case."""
        k = case["knobs"]
        try:
            window_s = 0.6 if self.quick else probe_window_s(k["num_workers"], PROBE_WINDOW_S)
            res = self._time_k_workers(k["kind"], k["batch_size"], k["num_workers"], window_s=window_s, seed=43,
                                       pin=False, settle_s=PROBE_SETTLE_S, drop_batch=True)
            res["method"] = ("right after the case (and its probe_after): the probe's loader (DataLoader(dataset, "
                             "batch_size, num_workers as the case, prefetch_factor=2, the case's collate_fn) with "
                             "each batch collated, timed and then dropped inside its worker (the loader carries a "
                             f"bare int), pin_memory off; about {window_s:g} s after 2K warm-up batches")
            case["components"]["probe_no_put"] = res
        except Exception as e:
            case["components"]["probe_no_put"] = {"error": f"{e.__class__.__name__}: {e}"}

    def comp_probe(self, kind, bs, num_workers, pin=False, straggler=(1.0, True)):
        """The case's own loader, timed right before the case (about 1 s after warm-up, never cached):
        num_workers workers with the case's batch size and collate_fn, each batch dropped by the main
        loop; getitem and collate timed inside the workers. Two things the run-6 one-worker probe
        got wrong: the machine's speed drifts over a call (run 5: the same case's in-situ
        __getitem__ 3.70 ms, then 4.45 ms four minutes later), and one worker samples ONE virtual
        core, whose speed on this VM differs from the average of K by up to 20% (run 6: the
        one-worker probe against the case's in-situ cost, 0.73 to 1.16 for image w8), so a
        one-worker base times a curve misses by as much. K workers measure the cost at the case's
        own concurrency; the converter uses the curves only for the shape around it."""
        # Each worker's speed wanders (cv ~0.14, correlation ~0.7 s, run 8), so K workers over a window W
        # average it to about 0.14 x sqrt(2 x 0.7 / (K x W)): +-6% for 8 workers and 1 s (run 7's probes:
        # 0.91-1.14 of the case's in-situ cost), +-3.7% for 2.5 s. Since run 10 the probe runs before and
        # after the case (probe_after) for 1.5 s each: 3 s in all, spread around the case in time.
        # Since run 11 the probe also pins when its case pins, and reports the main side's CPU per batch (the
        # pin thread's, or the main thread's receive without pinning): the pin-thread check of 2026-11-30
        # found that cost drifting by up to 20% within a call, as the workers' does, while the transport
        # component measures it once per batch size.
        window_s = 0.6 if self.quick else probe_window_s(num_workers, PROBE_WINDOW_S)
        res = self._time_k_workers(kind, bs, num_workers, window_s=window_s, seed=41, pin=pin,
                                   settle_s=PROBE_SETTLE_S, straggler=straggler)
        res["method"] = ("right before the case: DataLoader(dataset, batch_size, num_workers as the case, prefetch_factor=2, "
                         "pin_memory as the case (since run 11), the case's collate_fn), the main loop drops each batch; "
                         f"getitem and collate timed inside the workers (InSitu) after 2K warm-up batches, for about {window_s:g} s "
                         "(at least 3 batches; 1 s until run 8, 2.5 s in run 9; since run 10 once before and once after the "
                         f"case; since run 58 {FEW_WORKERS_FULL} / max(workers, 1) times longer below {FEW_WORKERS_FULL} workers); main side: the pin thread's CPU per batch (pinned) or the main thread's (not pinned)"
                         + (f"; the window opened {PROBE_SETTLE_S:g} s after the warm-up (--probe-settle-s)"
                            if PROBE_SETTLE_S > 0 else "")
                         + (f"; worker 0 a straggler as its case's, factor {straggler[0]:g} "
                            f"({'Python spin' if straggler[1] else 'GIL-free'}; --probe-with-straggler), its batches "
                            "left out of the wander" if straggler[0] > 1.0 else ""))
        if straggler[0] > 1.0:
            res["slow_worker_factor"] = straggler[0]
            res["slow_worker_spin"] = "python" if straggler[1] else "nogil"
        return res

    def _time_k_workers(self, kind, bs, k, window_s, seed, pin=False, consume=None, settle_s=0.0,
                        straggler=(1.0, True), drop_batch=False):
        """getitem and collate per call inside k workers loading at once, the main loop dropping each
        batch: after 2k warm-up batches (every worker past its start-up: fork, copy-on-write
        faults), for window_s seconds and at least 3 batches. With pin, the DataLoader pins, and the
        pin thread's CPU per batch is reported; the main thread's CPU per batch always is. consume (since
        run 13): what the main loop does with each batch instead of dropping it (probe_main_loop)."""
        from torch.utils.data import DataLoader
        ds = self.datasets[kind]
        insitu = InSitu()
        # each worker's batch times, for their wander around the case (since run 12; convert's probe_wander), and the
        # CPUs its workers ran on (since run 56's plan: a one-worker probe read 35% slower than its case right after
        # it, in a fresh process, so the speed may go with the vCPU)
        insitu.timeline = Timeline() if k >= 1 else None
        sampler = IndexSampler(len(ds), 1 << 20, seed=seed + k)
        # k = 0 (since run 12): the main process loads inline, as a num_workers=0 case does; DataLoader
        # refuses a prefetch_factor without workers
        dl = DataLoader(InstrumentedDataset(ds, insitu), batch_size=bs, sampler=sampler, num_workers=k,
                        prefetch_factor=2 if k > 0 else None, pin_memory=pin and k > 0,
                        collate_fn=InstrumentedCollate(self.collate_fn(kind), insitu, straggler[0], straggler[1],
                                                       drop_batch=drop_batch))
        # the loop's take of every batch from the first (perf_counter after next()): which of a worker's next indices
        # were out when its collate ended, for its turnaround (turnaround_diagnostic.probe_reading; eighty-ninth session)
        takes = []
        with (PinThreadMeter() if pin and k > 0 else contextlib.nullcontext()) as meter:
            t0 = time.perf_counter()
            it = iter(dl)
            for _ in range(max(1, 2 * k)):
                next(it)
                takes.append(time.perf_counter())
            # --probe-settle-s (run 24's plan): keep dropping batches this long before the window opens, to test
            # whether the image probes' dearer pin thread (run 13 finding 1; run 23 finding 6: 1.21x the cases')
            # is a transient of a loader just started
            settle_until = time.perf_counter() + settle_s
            while time.perf_counter() < settle_until:
                batch = next(it)
                takes.append(time.perf_counter())
                if consume is not None:
                    consume(batch)
                del batch
            window_from_batch = len(takes)
            s0 = insitu.snapshot()
            p0, c0 = (meter.snapshot(), PinThreadMeter.thread_cpu_s(it)) if meter else (None, None)
            if meter:
                meter.intervals = []          # the window's pin_memory() calls: the pin thread's cycle (pin_cycle_figures)
                # the window's receives and fd hand-overs, to split the hand-overs by the sender's state
                # (fd_detach_diagnostic.detach_split; ninety-first session, device plan item 30)
                meter.received = []
                meter.detach_intervals = []
            main0 = time.thread_time()
            a = time.perf_counter()
            n = 0
            half = None                       # (batches, pin thread CPU) at the window's middle
            while n < 3 or time.perf_counter() - a < window_s:
                batch = next(it)
                takes.append(time.perf_counter())
                if consume is not None:
                    consume(batch)
                del batch
                n += 1
                if half is None and meter and time.perf_counter() - a >= window_s / 2:
                    half = (n, PinThreadMeter.thread_cpu_s(it))
            main1 = time.thread_time()
            b = time.perf_counter()
            s1 = insitu.snapshot()
            c1 = PinThreadMeter.thread_cpu_s(it) if meter else None
            pin_fig = pin_thread_figures(p0, meter.snapshot(), c0, c1, n) if meter else {}
            if meter:
                pin_fig.update(pin_cycle_figures(meter.intervals, a, b))
            if half is not None and None not in (c0, c1, half[1]) and 0 < half[0] < n:
                # a start-up transient would make the first half dearer (since run 13)
                pin_fig["pin_thread_cpu_s_per_batch_halves"] = [(half[1] - c0) / half[0],
                                                                (c1 - half[1]) / (n - half[0])]
        del it, dl
        gc.collect()
        d = InSitu.diff(s0, s1)
        wander = worker_cpus = durations = turnaround = fd_split = None
        if insitu.timeline is not None:
            per_worker = insitu.timeline.per_worker(0.0)
            worker_cpus = window_worker_cpus(per_worker, insitu.timeline.per_worker_cpu(), a, b)
            if straggler[0] <= 1.0 and not drop_batch and len(per_worker) == k:
                # the worker's path between two batches (validation-runs.md run 82, finding 2): its turnaround where
                # the next index was out, and the fetcher's gaps between __getitem__ calls; a dropped batch has no put
                try:  # a reading beside the probe: its failure never costs the probe
                    from turnaround_diagnostic import probe_reading
                    turnaround = probe_reading(per_worker, takes, 2, window_from_batch, d, samples_per_batch=bs)
                except Exception as e:
                    turnaround = {"error": f"{e.__class__.__name__}: {e}"}
            if meter and meter.detach_intervals:
                try:  # a reading beside the probe: its failure never costs the probe
                    from fd_detach_diagnostic import detach_split
                    fd_split = detach_split({"skip": 0, "main": {"next_start": [a]}, "workers": per_worker,
                                             "pin_received": list(meter.received or []),
                                             "fd_detach": [iv for iv in meter.detach_intervals if iv[1] <= b]}, k)
                except Exception as e:
                    fd_split = {"error": f"{e.__class__.__name__}: {e}"}
            if k > 1:
                # the workers' batches inside the window, read as the cases' timelines are (timeline_analysis)
                from timeline_analysis import core_wander
                durations = window_batch_durations(per_worker, a, b, straggler[0])
                wander = core_wander(durations)
        window_s = b - a
        # the cores busy in the window as the simulator counts them (its dataset curve's axis, since run 13's
        # finding 2): the workers inside __getitem__ and collate, plus the main process's pin and main threads
        busy_workers = busy_cores = None
        if window_s > 0:
            busy_workers = (d["samples"] * (d["getitem_wall_s"] or 0.0)
                            + d["batches"] * (d["collate_wall_s"] or 0.0)) / window_s
            main_side = ((main1 - main0) + ((c1 - c0) if meter and None not in (c0, c1) else 0.0)) / window_s
            # inline (k = 0) the main thread's CPU already holds the loads
            busy_cores = main_side if k == 0 else busy_workers + main_side
        return dict({"workers": k, "getitem_wall_s": d["getitem_wall_s"], "getitem_cpu_s": d["getitem_cpu_s"],
                     "window_s": window_s, "busy_workers": busy_workers, "busy_cores": busy_cores,
                     "collate_wall_s": d["collate_wall_s"], "samples": d["samples"], "batches": n,
                     # each batch's busy time (its __getitem__ calls + collate) over all workers: its spread
                     # is the workers' wander around the case (convert's probe_wander; since run 12)
                     "batch_busy_s": d.get("batch_busy_s"), "batch_busy_cv": d.get("batch_busy_cv"),
                     "wander": wander, "worker_cpus": worker_cpus,
                     # each worker's batch walls inside the window, in order (since run 58's session): the raw series
                     # behind `wander`, so a wander model fitted later can read the probes without a device run
                     "worker_batch_s": ([[round(x, 6) for x in w] for w in durations] if durations else None),
                     # the worker's path between two batches (turnaround_diagnostic.probe_reading), None without one
                     "turnaround": turnaround,
                     # the window's fd hand-overs split by the sending worker's state (fd_detach_diagnostic), None
                     # unpinned or without a hand-over
                     "fd_detach_split": fd_split,
                     "seconds": time.perf_counter() - t0, "pin_memory": bool(meter),
                     "main_thread_cpu_s_per_batch": (main1 - main0) / n}, **pin_fig)

    def comp_load_scaling(self, kind, bs):
        """__getitem__ timed inside K workers loading at once (K = 1, 4, 8, cores), with the case's
        batch size and collate_fn, each batch received by a main loop that drops it: this dataset's
        per-sample cost as cores fill (memory-bound loads slow more than JPEG decode) ->
        dataset.load_speed_vs_busy_cores, and the K = 1 point as the per-sample cost itself.
        Absolute cost and curve come from one measurement in the case's own context: run 4 showed
        that what a worker does beside __getitem__ changes its cost (a 602 KB tensor load took
        0.23 ms with batches of 8 dropped unseen, 0.65 ms when the worker collates 38.5 MB batches),
        and one-worker measurements taken minutes apart differed by up to 20% (3.7 vs 4.4 ms per
        image), so a curve taken from one run and a base from another carry that drift."""
        key = f"{kind}/b{bs}"
        c = self.doc["components"]["load_scaling"]
        if key in c:
            return c[key]
        cores = os.cpu_count() or 1
        window_s = 0.6 if self.quick else 1.0     # per K; one per (kind, batch size) since run 5
        points = []
        t0 = time.perf_counter()
        for k in sorted({1, 4, 8, cores}):
            if k > cores:
                continue
            q = self._time_k_workers(kind, bs, k, window_s, seed=31)
            if q["getitem_wall_s"]:
                points.append({"workers": k, "getitem_s": q["getitem_wall_s"], "getitem_cpu_s": q["getitem_cpu_s"],
                               "collate_s": q["collate_wall_s"], "samples": q["samples"], "batches": q["batches"],
                               "busy_cores": q["busy_cores"]})
        if points:
            one = points[0]["getitem_s"]
            for q in points:
                q["relative_speed"] = one / q["getitem_s"]
        res = {"points": points, "batch_size": bs, "collate": "the case's collate_fn",
               "method": f"DataLoader(dataset, batch_size={bs}, num_workers=K, prefetch_factor=2, the case's collate_fn), "
                         "the main loop drops each batch: getitem and collate timed inside the workers (InSitu), after 2K "
                         f"warm-up batches, for {window_s} s (at least 3 batches) per K"}
        c[key] = res
        log(f"component load_scaling[{key}]: " + ", ".join(f"{q['workers']}w {q['getitem_s']*1e3:.3f} ms "
                                                          f"({q['relative_speed']:.2f}"
                                                          + (f", {q['busy_cores']:.1f} busy" if q.get("busy_cores") else "")
                                                          + ")" for q in points)
            + f" ({time.perf_counter()-t0:.1f}s)")
        return res

    def comp_worker_start(self):
        if self.doc["components"]["worker_start"] is not None:
            return self.doc["components"]["worker_start"]
        from torch.utils.data import DataLoader
        ns = [1, 4, 8] if self.quick else [1, 4, 8, 16]
        pts = []
        for n in ns:
            dl = DataLoader(TrivialDataset(), batch_size=1, num_workers=n)
            a = time.perf_counter()
            it = iter(dl)
            b = time.perf_counter()
            next(it)
            c = time.perf_counter()
            del it
            gc.collect()
            pts.append({"num_workers": n, "iter_s": b - a, "first_batch_s": c - b, "total_s": c - a})
        xs = [p["num_workers"] for p in pts]
        ys = [p["total_s"] for p in pts]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else ys[0]
        res = {"per_worker_s": max(slope, 0.0), "intercept_s": my - slope * mx, "points": pts,
               "method": "iter(DataLoader(trivial dataset, num_workers=N)) + first batch, fork, "
                         "this process (CUDA initialised); per_worker_s = least-squares slope over N"}
        self.doc["components"]["worker_start"] = res
        log(f"component worker_start: {res['per_worker_s']*1e3:.1f} ms/worker + {res['intercept_s']*1e3:.1f} ms")
        return res

    # ------------------------------------------------------------------ one case
    def run_case(self, case, allowance_s):
        t, dev = self.t, self.dev
        from torch.utils.data import DataLoader
        k = case["knobs"]
        kind, bs, nw = k["kind"], k["batch_size"], k["num_workers"]
        pf = k["prefetch_factor"] if nw > 0 else None
        epochs = k.get("epochs", 1)
        steps_per_epoch = k.get("steps_per_epoch")

        comps = {}
        comps["load"] = self.comp_load(kind)
        comps["collate"] = self.comp_collate(kind, bs)
        comps["step"] = self.comp_step(k["step"], kind, bs)
        if k["step"].startswith("seq:"):
            comps["sequence_step_shapes"] = self.comp_sequence_step_shapes(k["step"])
            comps["sequence_new_shape"] = self.comp_sequence_new_shape(k["step"], kind, bs)
        if k["step"].startswith("gpudec+"):
            comps["gpu_decode"] = self.comp_gpu_decode(k["step"], kind, bs)
        heavy = step_is_heavy(k["step"], comps["step"])
        if nw > 0 and heavy:
            try:                                   # a host-heavy loop (ResNet-50): does the CPU slow it?
                comps["host_under_load"] = self.comp_host_under_load(k["step"], kind, bs, nw)
            except Exception as e:                 # a diagnostic: never costs the case
                comps["host_under_load"] = {"error": f"{e.__class__.__name__}: {e}"}
        if nw > 0 and (heavy or not k["pin_memory"]):
            # the loop beside a live loader (run 15, finding 5), and since run 21's plan for every unpinned case: its
            # copy and release there are convert's input (unpinned_loop_beside_loader); run 20's unpinned mm:5
            # cases, which had no window, paid them about 20% dearer in situ than calibrate's (finding 7)
            try:
                comps["host_beside_loader"] = self.comp_host_beside_loader(k["step"], kind, bs, nw)
            except Exception as e:                 # a diagnostic: never costs the case
                comps["host_beside_loader"] = {"error": f"{e.__class__.__name__}: {e}"}
        if nw > 0 and heavy:
            try:                                   # since run 29's session (run 28, finding 4): a steady slowdown
                # beside the workers alone, or the probes' drift? blocks alone and beside them in turn
                comps["host_beside_workers"] = self.comp_host_beside_workers(k["step"], kind, bs, nw)
            except Exception as e:                 # a diagnostic: never costs the case
                comps["host_beside_workers"] = {"error": f"{e.__class__.__name__}: {e}"}
        light_key = f"{k['step']}/{kind}/b{bs}/w{nw}"
        light_done = self.doc["components"].get("host_beside_pin_parts", {})
        if nw > 0 and (heavy or (k["pin_memory"] and (light_key in light_done or not self._light_pin_parts))):
            if not heavy:
                self._light_pin_parts = True       # one light loop a call: about 17 s of its budget (run 32 A1)
            try:                                   # which part of the pin thread's work slows the loop (run 17,
                # finding 1); a light loop too since run 18's plan: convert's verdict for it from a measurement
                comps["host_beside_pin_parts"] = self.comp_host_beside_pin_parts(k["step"], kind, bs, nw)
            except Exception as e:                 # a diagnostic: never costs the case
                comps["host_beside_pin_parts"] = {"error": f"{e.__class__.__name__}: {e}"}
        comps["worker_start"] = self.comp_worker_start()
        if nw > 0:
            comps["transport"] = self.comp_transport(kind, bs)
            comps["in_worker"] = self.comp_in_worker(kind, bs)
            comps["load_scaling"] = self.comp_load_scaling(kind, bs)
        comps["sample_bytes"] = self.doc["datasets"][kind]["sample_bytes"]
        if self.doc["datasets"][kind].get("tokens_per_sample"):   # a token kind: convert's sequence section
            comps["tokens_per_sample"] = self.doc["datasets"][kind]["tokens_per_sample"]
            if self.doc["datasets"][kind].get("max_tokens"):
                comps["max_tokens"] = self.doc["datasets"][kind]["max_tokens"]
        if k.get("storage") == "cold":
            if nw > 0 and not self.quick:
                # since run 23's plan: the loader probed once more BEFORE the cold case, while the dataset is still
                # warm (the case drops the page cache right before its DataLoader, so this probe warms nothing it
                # measures). Its warm decode against the probe after the case, on the re-warmed cache, which read
                # 0.72x the warm sibling's probes (median, runs 17-22: validation-runs.md run 22, finding 3).
                try:
                    comps["probe_warm"] = self.comp_probe(kind, bs, nw, pin=k["pin_memory"])
                except Exception as e:      # never costs the case
                    comps["probe_warm"] = {"error": f"{e.__class__.__name__}: {e}"}
            comps["load_cold"] = self.comp_load_cold(kind)
        else:
            if (not self.quick and k["pin_memory"] and nw > 0
                    and "probe_main_loop" not in self.doc["components"]):
                # before the probe, so the probe still brackets its case closely
                try:
                    self.doc["components"]["probe_main_loop"] = self.probe_main_loop(kind, bs, nw, bool(k["non_blocking"]))
                except Exception as e:      # never costs the case
                    self.doc["components"]["probe_main_loop"] = {"error": f"{e.__class__.__name__}: {e}"}
            # nw == 0: the main process loads inline; the probe times that (no workers, no pin thread)
            try:
                comps["probe"] = self.comp_probe(kind, bs, nw, pin=k["pin_memory"] and nw > 0,
                                                 straggler=probe_straggler(k, PROBE_WITH_STRAGGLER))
            except Exception as e:          # the probe must never cost the case
                comps["probe"] = {"error": f"{e.__class__.__name__}: {e}"}
            if heavy or HOST_PROBES_ALL:    # the loop's own host time alone, right before the case
                try:
                    comps["host_probe"] = self.comp_host_probe(k["step"], kind, bs)
                except Exception as e:      # never costs the case
                    comps["host_probe"] = {"error": f"{e.__class__.__name__}: {e}"}
            if nw > 0 and not k["pin_memory"] and not self.quick:
                # an unpinned loop's copy and release, last before the case (light loops since run 23's plan; run
                # 22, finding 4: the call's one host_beside_loader window read cheaper than the cases). ResNet-50
                # loops too since run 25's plan (run 24, finding 4): the window's host time after the copy, beside
                # the bare host probe, tests whether the copy is what makes the unpinned loop's launches 1.0-1.4x
                # its probes
                try:
                    comps["unpinned_window"] = self.comp_unpinned_window(k["step"], kind, bs, nw,
                                                                         seed=100 + int(case.get("index") or 0))
                except Exception as e:      # never costs the case
                    comps["unpinned_window"] = {"error": f"{e.__class__.__name__}: {e}"}
        case["components"] = comps
        model = self.step_model(k["step"])

        ds = self.datasets[kind]
        if epochs > 1:
            skip = steps_per_epoch
            max_steps = epochs * steps_per_epoch
            length = steps_per_epoch * bs
        else:
            skip = steady_state_skip(nw, pf)
            # the window is bounded by time (allowance); this cap only bounds memory for events. 400 until run 20,
            # whose fast lease ran its pin-bound tensor cases' 400 steps in 11 s of a longer allowance: a longer
            # window averages the pin thread's wander within the case (run 19, finding 3)
            target = 150 if self.quick else int(CASE_STEPS_AT_30_S * max(1.0, CASE_WINDOW_S / 30.0))
            max_steps = skip + target
            ahead = (pf or 0) * nw + 2     # batches the loader has in flight beyond the one in hand
            if k.get("storage") == "cold":
                # one pass over the files, none read twice; stop before the sampler runs dry
                max_steps = min(max_steps, len(ds) // bs - ahead)
            # the sampler outlasts the measured window, so the workers never run out of indices
            # inside it (no end-of-epoch tail in a steady-state case)
            length = (max_steps + ahead) * bs
        if max_steps - skip < 3:
            raise RuntimeError(f"too few steps ({max_steps}) for skip {skip}")
        # full mode: at least MIN_BATCHES_PER_WORKER batches from every worker in the window (run 20's B2 measured
        # one image setting at 1245, 1692 and 1530 samples/s over 15, 12 and 91 steps: one or two batches a worker
        # measure the workers' phase, not their rate)
        min_measured = 8 if self.quick else max(12, MIN_BATCHES_PER_WORKER * nw)
        sampler = IndexSampler(len(ds), length, seed=case["index"] + 17 * case["repeat"])
        insitu = InSitu()
        if getattr(self.args, "timeline", False):
            insitu.timeline = Timeline()
        dl_kw = dict(batch_size=bs, sampler=sampler, num_workers=nw, pin_memory=k["pin_memory"],
                     drop_last=True, collate_fn=InstrumentedCollate(self.collate_fn(kind), insitu,
                                                                    float(k.get("slow_worker_factor", 1.0)),
                                                                    k.get("slow_worker_spin", "python") == "python"))
        ds = InstrumentedDataset(ds, insitu)
        if nw > 0:
            dl_kw["prefetch_factor"] = pf
            dl_kw["persistent_workers"] = k["persistent_workers"]
            if not k.get("in_order", True):
                dl_kw["in_order"] = False     # TypeError on torch < 2.6: the case fails with it
        if k.get("storage") == "cold":
            case["cold_method"] = drop_page_cache(self._paths[kind])["method"]
            insitu.getitem_spans = GetitemSpans()
        spans_t0 = None   # the measured window's start, for the getitem spans
        dl = DataLoader(ds, **dl_kw)

        nb = k["non_blocking"]
        side = dev.side_stream() if k["copy_stream"] == "side" else None
        se = k["sync_every"]
        events = [dev.event() for _ in range(max_steps)]
        if k["step"].startswith("seq:"):
            # the shapes whose plans this process already holds as the case starts (sequence.shapes_run_before)
            comps["sequence_shapes_run_before"] = sorted([b, n] for b, n in SequenceStep.SHAPES_RUN)
        T0, T1, T2, T3 = [], [], [], []
        TC, T4 = [], []     # since run 20's plan: the copy call returned, the batch dropped (release timed apart)
        PADDED = []         # since the sixty-third session: a token batch's padded length a step (its shape's key)
        seq_step = k["step"].startswith("seq:")
        NEXT_CPU = []       # since run 26's plan: the loop thread's CPU inside each next()
        epoch_of = []
        iter_s = []
        dev.sync()
        gc.collect()
        gc_was = gc.isenabled()
        gc.disable()      # as in most training loops' steady state: no GC pauses inside timing
        pin_meter = PinThreadMeter().__enter__() if k["pin_memory"] and nw > 0 else None
        if pin_meter is not None and insitu.timeline is not None:
            pin_meter.intervals = []
            pin_meter.received = []
            pin_meter.detach_intervals = []
        pin0 = pin1 = pcpu0 = pcpu1 = None
        # the pin thread over the measured window's first PROBE_WINDOW_S, as a probe sees it, against the rest
        # (since run 14: run 13 found the probes' receive 17-39% dearer than the image cases' own, not from
        # the probe's main loop and not within its 1.5 s; a slower transient would show here)
        head = None
        wall0 = time.perf_counter()
        stat0 = cpus0 = None
        # the loop thread's minor faults over the measured window (since run 29's session: validation-runs.md run 29,
        # finding 5): does a pinned case's loop fault in steady state, as the pin parts' windows counted it?
        from pace_thread import thread_minor_faults
        loop_tid = threading.get_native_id()
        loop_faults0 = None
        ins0 = insitu.snapshot()
        raw0 = insitu.raw()
        worker_pids: List[int] = []
        wcpu0 = None
        stopped = "max_steps"
        i = 0
        it = None
        try:
            for ep in range(epochs):
                a = time.perf_counter()
                it = iter(dl)
                iter_s.append(time.perf_counter() - a)
                n_this = steps_per_epoch if epochs > 1 else max_steps
                for j in range(n_this):
                    t0 = a if j == 0 else time.perf_counter()
                    nc0 = time.thread_time()
                    try:
                        batch = next(it)
                    except StopIteration:
                        stopped = "sampler exhausted"
                        break
                    t1 = time.perf_counter()
                    nc = time.thread_time() - nc0
                    if side is not None:
                        with t.cuda.stream(side):
                            gb = to_device(batch, dev.device, nb)
                        t.cuda.current_stream().wait_stream(side)
                        for x in tensors_in(gb):
                            if x.is_cuda:          # encoded JPEGs kept on the host (HostTensors) have no stream
                                x.record_stream(t.cuda.current_stream())
                    else:
                        gb = to_device(batch, dev.device, nb)
                    tc = time.perf_counter()
                    loss = model(gb)
                    t2 = time.perf_counter()
                    if seq_step:
                        PADDED.append(int(gb[0].shape[1]))
                    events[i].record()
                    if se > 0 and (i + 1) % se == 0:
                        float(loss.item())
                    t3 = time.perf_counter()
                    T0.append(t0), T1.append(t1), T2.append(t2), T3.append(t3)
                    NEXT_CPU.append(nc)
                    TC.append(tc)
                    epoch_of.append(ep)
                    del batch, gb
                    T4.append(time.perf_counter())
                    i += 1
                    if i == skip:
                        spans_t0 = time.perf_counter()
                        stat0 = cpu_stat()
                        cpus0 = per_cpu_stat()
                        loop_faults0 = thread_minor_faults(loop_tid)
                        ins0 = insitu.snapshot()
                        raw0 = insitu.raw()
                        worker_pids = [w.pid for w in (getattr(it, "_workers", None) or [])] if epochs == 1 else []
                        wcpu0 = workers_cpu_s(worker_pids)
                        if pin_meter is not None and epochs == 1:
                            pin0, pcpu0 = pin_meter.snapshot(), PinThreadMeter.thread_cpu_s(it)
                            head_t0 = time.perf_counter()
                    elif pin0 is not None and head is None and time.perf_counter() - head_t0 >= PROBE_WINDOW_S:
                        head = (i - skip, PinThreadMeter.thread_cpu_s(it))
                    if epochs == 1 and i >= skip + min_measured:
                        el = time.perf_counter() - wall0
                        if el > allowance_s:
                            stopped = "time allowance"
                            break
                    if time.perf_counter() - wall0 > max(3 * allowance_s, 60.0) and i > skip + 2:
                        stopped = "hard time cap"
                        break
                if stopped in ("time allowance", "hard time cap"):
                    break
                if epochs > 1 and ep < epochs - 1:
                    del it
                    it = None
            loop_faults1 = thread_minor_faults(loop_tid)
            dev.sync()
            if pin0 is not None:
                pin1, pcpu1 = pin_meter.snapshot(), PinThreadMeter.thread_cpu_s(it)
        finally:
            if pin_meter is not None:
                pin_meter.__exit__(None, None, None)
            if gc_was:
                gc.enable()
        wall_end = time.perf_counter()
        stat1 = cpu_stat()
        cpus1 = per_cpu_stat()
        ins1 = insitu.snapshot()
        spread = worker_spread(insitu.per_worker(raw0, insitu.raw())) if nw > 1 else None
        wcpu1 = workers_cpu_s(worker_pids)
        del it
        del dl
        gc.collect()
        n = i
        if n <= skip + 1:
            raise RuntimeError(f"only {n} steps ran (skip {skip})")
        # GPU-side step intervals: end-of-step events, consecutive
        gpu_iv = [events[j - 1].elapsed_time(events[j]) / 1e3 for j in range(skip, n)]
        window_s = events[skip - 1].elapsed_time(events[n - 1]) / 1e3
        host_iv = [T3[j] - T3[j - 1] for j in range(skip, n)]
        host_window = T3[n - 1] - T3[skip - 1]
        meas = n - skip
        waits = [T1[j] - T0[j] for j in range(skip, n)]
        loop = [T2[j] - T1[j] for j in range(skip, n)]
        syncs = [T3[j] - T2[j] for j in range(skip, n)]
        g = summarize(gpu_iv)
        res = {
            "steps_run": n, "skip": skip, "n_measured": meas, "stopped": stopped,
            "samples_measured": meas * bs,
            "throughput_samples_per_s": meas * bs / window_s if window_s > 0 else None,
            "throughput_host_samples_per_s": meas * bs / host_window if host_window > 0 else None,
            "step_time_s": {"mean": window_s / meas, "p50": g["p50"], "p90": g["p90"],
                            "cv": g["cv"], "min": g["min"], "max": g["max"]},
            # the p90 of the window's first and second halves (the same GPU-side intervals): how well this window
            # knows its own p90, for every case, not only those run with --timeline (the seventy-ninth session: run
            # 75's 60 s windows had no timeline, so nothing said how precise their p90 was)
            "step_p90_halves": p90_halves(gpu_iv),
            "host_step_interval_s": summarize(host_iv),
            "data_wait_s": summarize(waits),
            # the loop thread's own CPU inside next() (since run 26's plan): an unpinned batch's receive (unpickling,
            # mapping the worker's shared memory) against the wall's wait for a worker (run 25, finding 3)
            "data_wait_cpu_s": summarize([NEXT_CPU[j] for j in range(skip, n)]),
            "loop_host_s": summarize(loop),
            "sync_wait_s": summarize(syncs),
            # loop_host_s split (since run 20's plan): the .to() calls, and dropping the batch after the sync (an
            # unpinned batch's release of the worker's mapping: run 19 inferred it from the step's rest)
            "copy_call_s": summarize([TC[j] - T1[j] for j in range(skip, n)]),
            "release_s": summarize([T4[j] - T3[j] for j in range(skip, n)]),
            "loop_minor_faults_per_step": ((loop_faults1 - loop_faults0) / meas
                                           if loop_faults0 is not None and loop_faults1 is not None else None),
            "data_wait_fraction": sum(waits) / host_window if host_window > 0 else None,
            "iter_create_s": iter_s,
            "first_batch_s": T1[0] - T0[0],
            "wall_s": wall_end - wall0,
            "cpu_busy_cores": busy_cores(stat0, stat1, os.cpu_count()),
            # each CPU's busy and stolen seconds over the window (since run 42's plan): where the machine's time went
            "per_cpu": per_cpu_seconds(cpus0, cpus1),
            "in_situ": dict(InSitu.diff(ins0, ins1), **workers_cpu_per_batch(wcpu0, wcpu1, InSitu.diff(ins0, ins1)),
                            method=(
                "perf_counter and thread_time around each __getitem__ and collate_fn call inside the "
                "workers (main process when num_workers=0), summed in shared memory between the first "
                "measured step and the end; work done ahead for later steps is included; batch_busy_s/cv: "
                "a batch's getitem calls plus its collate, per batch; worker_process_cpu_s_per_batch: the "
                "worker processes' whole CPU (all threads, /proc) over the window per batch collated in it")),
            "timing": ("step intervals between CUDA events recorded on the compute stream after each "
                       "step's launches, read after a final synchronize (valid for any sync_every)"),
        }
        if spread is not None:
            res["in_situ"].update(spread)
        if insitu.getitem_spans is not None and spans_t0 is not None:
            # the workers' getitem calls in flight during a call over the measured window (a cold getitem is its read)
            spans = insitu.getitem_spans.in_window(spans_t0, wall_end)
            res["in_situ"]["getitem_in_flight_mean"] = mean_in_flight(spans)
            res["in_situ"]["getitem_spans"] = len(spans)
        if pin0 is not None and pin1 is not None:
            # the pin thread's CPU per batch handed to the loop (it works ahead by the few batches in its
            # queue: small against a window of hundreds); comparable with the transport component's
            res["in_situ"].update(pin_thread_figures(pin0, pin1, pcpu0, pcpu1, meas))
            if head is not None and None not in (pcpu0, pcpu1, head[1]) and 0 < head[0] < meas:
                res["in_situ"]["pin_thread_cpu_s_per_batch_head_rest"] = [
                    (head[1] - pcpu0) / head[0], (pcpu1 - head[1]) / (meas - head[0])]
                res["in_situ"]["pin_thread_head_s"] = PROBE_WINDOW_S
        if insitu.timeline is not None:
            r6 = lambda xs: [round(x - wall0, 6) for x in xs[:n]]  # noqa: E731
            res["timeline"] = {
                "clock": "perf_counter seconds from the loop's start; main: per step, next() called, batch in hand, .to() "
                         "returned (copied), last launch returned, after the sync, batch dropped (released); workers: "
                         "per worker id, each batch's first "
                         "__getitem__ start and collate end; workers_cpu: per worker id, in the same order, each "
                         "batch's thread CPU seconds over that span, the CPU it ran on at its start and its end "
                         "(sched_getcpu; -1 unknown) and the thread's CPU clock (time.thread_time) at its start; "
                         "pin (pinned loaders): each pin_memory() call's start and end; pin_received: each batch's "
                         "index and when the pin thread took it off the workers' result queue, in that order",
                "skip": skip, "main": {"next_start": r6(T0), "next_end": r6(T1), "copied": r6(TC), "launched": r6(T2),
                                       "synced": r6(T3), "released": r6(T4),
                                       **({"padded_length": PADDED} if PADDED else {})},
                "workers": insitu.timeline.per_worker(wall0),
                "workers_cpu": insitu.timeline.per_worker_cpu()}
            if pin_meter is not None and pin_meter.intervals is not None:
                # the pin thread's pin_memory() calls (touch and copy of each batch), for when it works on the
                # workers' mappings against the loop's host work (validation run 23, finding 5)
                res["timeline"]["pin"] = [[round(a - wall0, 6), round(b - wall0, 6)] for a, b in pin_meter.intervals]
            if pin_meter is not None and pin_meter.received:
                # each batch's index and when the pin thread took it off the result queue, in that order
                res["timeline"]["pin_received"] = [[i, round(t - wall0, 6)] for i, t in pin_meter.received]
            if pin_meter is not None and pin_meter.detach_intervals:
                # each file-descriptor hand-over in the receive (DupFd.detach(): validation-runs.md run 83, finding 6),
                # (start, end) in the order made: which batch's, from the pin_received order; the sender's state, from
                # its worker's spans
                res["timeline"]["fd_detach"] = [[round(a - wall0, 6), round(b - wall0, 6)]
                                                for a, b in pin_meter.detach_intervals]
        if epochs > 1:
            res["epochs"] = epochs
            res["steps_per_epoch"] = steps_per_epoch
            res["epoch_gap_s"] = [gpu_iv[j - skip] for j in range(skip, n)
                                  if epoch_of[j] != epoch_of[j - 1]]
        return res

    # ------------------------------------------------------------------ all
    def run(self, cases):
        t = self.t
        self.doc["machine"] = machine_info(t, self.dev)
        log(f"machine: {self.doc['machine'].get('gpu')} | {self.doc['machine'].get('cpu_model')} | "
            f"{self.doc['machine'].get('cpu_cores')} cores | torch {t.__version__}")
        self.dev.calibrate_sleep()
        self.doc["machine"]["sleep_cycles_per_s"] = self.dev.sleep_cycles_per_s
        self.doc["cases"] = cases
        self.save()
        reserve = 3.0
        for ci, case in enumerate(cases):
            if case.get("status") == "skipped":   # left out for an earlier case's window
                continue
            rem = self.remaining() - reserve
            why = skip_reason(case["knobs"], rem, self.doc["components"], self.quick)
            if why is not None:
                case["status"] = "skipped"
                case["error"] = f"budget: {self.remaining():.1f}s left{why}"
                log(f"case {ci+1}/{len(cases)} {case['id']}: skipped ({case['error']})")
                continue
            k = case["knobs"]
            # the time the cases still to come will spend outside their measured windows, so that the
            # last family is not starved (run 12's A2: three new batch sizes' components took the budget,
            # the prefetch_factor cases got 12-28 steps)
            pending = [c for c in cases[ci:] if c.get("status") != "skipped"]
            if not self.quick:
                for j in cases_to_leave_out(rem, pending, self.doc["components"], PROBE_SETTLE_S,
                                            min(MIN_CASE_WINDOW_S, CASE_WINDOW_S)):
                    out = pending[j]
                    out["status"] = "skipped"
                    out["error"] = (f"budget: {self.remaining():.1f}s left, left out so that {case['id']} and the "
                                    f"others still to run get a {MIN_CASE_WINDOW_S:.0f} s window")
                    log(f"case {cases.index(out)+1}/{len(cases)} {out['id']}: skipped ({out['error']})")
                pending = [c for c in pending if c.get("status") != "skipped"]
            allowance = case_allowance_s(rem, pending, self.doc["components"], PROBE_SETTLE_S, self.quick)
            c0 = time.perf_counter()
            try:
                case["status"] = "running"
                case["started_s"] = round(self.elapsed(), 2)
                case["measured"] = self.run_case(case, allowance)
                case["status"] = "ok"
                m = case["measured"]
                if (case["components"].get("probe") or {}).get("getitem_wall_s"):
                    # the same probe right after the case: the machine drifts by up to 24% between a probe and
                    # its case (run 9); the converter takes the mean of the two, which brackets the case in time
                    self._probe_after(case)
                    if PROBE_NO_PUT and case["knobs"]["num_workers"] > 0:
                        self._probe_no_put(case)
                    if WANDER_LONG_S > 0 and not self.quick:
                        self._wander_long(case)
                if "host_s" in (case["components"].get("host_probe") or {}):
                    self._host_probe_after(case)
                if "unpinned_case_like_copy_s" in (case["components"].get("unpinned_window") or {}):
                    self._unpinned_window_after(case)
                ins = m["in_situ"]
                pin_note = ""
                if "pin_thread_cpu_s_per_batch" in ins:
                    pin_note = f"pin thread CPU {ins['pin_thread_cpu_s_per_batch']*1e3:.2f} ms/batch"
                    if "pin_copy_s_per_batch" in ins:
                        pin_note += f" (pin_memory() {ins['pin_copy_s_per_batch']*1e3:.2f})"
                    if "fd_detach_wall_s_per_batch" in ins:
                        pin_note += (f", fd hand-overs {ins['fd_detach_wall_s_per_batch']*1e3:.2f} ms wall "
                                     f"({ins['fd_detach_cpu_s_per_batch']*1e3:.2f} CPU)")
                    if ins.get("pin_thread_cpu_s_per_batch_head_rest"):
                        hr = ins["pin_thread_cpu_s_per_batch_head_rest"]
                        pin_note += f", first {PROBE_WINDOW_S:.1f} s {hr[0]*1e3:.2f} / rest {hr[1]*1e3:.2f}"
                    for name, q in (("probe before", case["components"].get("probe") or {}),
                                    ("after", case["components"].get("probe_after") or {})):
                        if q.get("pin_thread_cpu_s_per_batch"):
                            pin_note += f"; {name} {q['pin_thread_cpu_s_per_batch']*1e3:.2f}"
                    pin_note += ", "
                log(f"case {ci+1}/{len(cases)} {case['id']}: {m['throughput_samples_per_s']:.0f} samples/s, "
                    f"step mean {m['step_time_s']['mean']*1e3:.1f} p90 {m['step_time_s']['p90']*1e3:.1f} ms, "
                    f"wait {m['data_wait_fraction']*100:.0f}%, busy cores "
                    f"{(m['cpu_busy_cores'] or 0):.1f}, in-situ getitem "
                    f"{(m['in_situ']['getitem_wall_s'] or 0)*1e3:.2f} ms (cpu {(m['in_situ']['getitem_cpu_s'] or 0)*1e3:.2f}"
                    + (f"; probe before {pr['getitem_wall_s']*1e3:.2f}" if (pr := case["components"].get("probe") or {})
                       .get("getitem_wall_s") else "")
                    + (f", after {pa['getitem_wall_s']*1e3:.2f}" if (pa := case["components"].get("probe_after") or {})
                       .get("getitem_wall_s") else "")
                    + (f", no put {pn['getitem_wall_s']*1e3:.2f}" if (pn := case["components"].get("probe_no_put")
                                                                        or {}).get("getitem_wall_s") else "")
                    + (f"; probes' busy cores {pr['busy_cores']:.1f}" if pr.get("busy_cores") else "")
                    + (f", {pa['busy_cores']:.1f}" if pa.get("busy_cores") else "")
                    + (f"; probe turnaround {pt['turnaround_s']*1e3:.2f} ms + fetcher "
                       f"{(pt.get('fetch_gap_s') or 0)*1e3:.2f}" if (pt := pr.get("turnaround") or {})
                       .get("turnaround_s") is not None else "") + "), "
                    + (f"getitem calls in flight {m['in_situ']['getitem_in_flight_mean']:.2f} "
                       f"(n={m['in_situ']['getitem_spans']}), " if m["in_situ"].get("getitem_spans") else "")
                    + pin_note + host_probe_note(case["components"]) + loop_parts_note(m)
                    + f"n={m['n_measured']} ({m['stopped']}, "
                    f"{time.perf_counter()-c0:.1f}s)")
            except Exception as e:
                case["status"] = "error"
                case["error"] = f"{e.__class__.__name__}: {e}"
                case["traceback"] = traceback.format_exc()
                log(f"case {ci+1}/{len(cases)} {case['id']}: ERROR {case['error']}")
                try:
                    self.dev.sync()
                except Exception:
                    pass
                gc.collect()
            if case["knobs"].get("storage") == "cold":
                self._probe_cold_no_gpu(case)
                w0 = time.perf_counter()
                warm_files(self._paths[case["knobs"]["kind"]])
                log(f"re-warmed the page cache for {case['knobs']['kind']} in {time.perf_counter()-w0:.1f}s")
                k = case["knobs"]
                if case["status"] == "ok" and k["num_workers"] > 0 and not self.quick:
                    # since run 17: the cold case's loader probed after it, on the re-warmed cache: its decode at the
                    # case's concurrency (a probe before would warm the cache it measures cold). Until run 16 a cold
                    # case took the one-worker in_worker cost through load_scaling, and run 16's image pair put the
                    # cold case faster than its warm sibling (the curve read 1.18x at 8 workers that call).
                    self._probe_after(case)
            case["case_wall_s"] = round(time.perf_counter() - c0, 3)
            self.save()
        self.doc["finished"] = now_iso()
        self.doc["status"] = "done"
        self.doc["elapsed_s"] = round(self.elapsed(), 1)
        self.save()
        ok = sum(1 for c in cases if c["status"] == "ok")
        log(f"done: {ok}/{len(cases)} cases ok, {self.elapsed():.1f}s; wrote {self.args.out}")


# ============================================================================ case list
BASE = dict(kind="image", batch_size=64, num_workers=8, prefetch_factor=2, pin_memory=True,
            persistent_workers=False, non_blocking=True, copy_stream="default", sync_every=1,
            step="mm:25", storage="warm")


def build_cases(quick: bool, families=None, rounds: int = 1):
    """Each family sweeps one knob around a base setting. Identical settings are measured once
    and listed in every family they belong to (also_families). Repeats get repeat ids 1, 2.
    rounds > 1: every setting is measured `rounds` times, round after round (all settings, then all
    again), in place of the base-case repeats: the machine's drift then reaches every setting of a
    family alike, and the converter ranks each setting by its mean (families whose settings lie
    3-25% apart were below one measurement's noise in runs 9 and 10). Every second round runs in the
    reverse order (since run 47, finding 6: sync_every 0 and 8, always fifth and sixth, read 3% above the
    first case): over an even count of rounds each setting's mean position in the call is the same, so a
    steady drift through the call moves every setting's mean alike."""
    fam = []

    def add(name, variants, base=None):
        b = dict(BASE if base is None else base)
        fam.append((name, [dict(b, **v) for v in variants]))

    W = [0, 2, 8, 16, 24] if quick else [0, 1, 2, 4, 8, 12, 16, 24]
    add("num_workers", [{"num_workers": w} for w in W])
    add("step", [{"step": s} for s in (["mm:5", "mm:25", "resnet50"] if quick else ["mm:5", "mm:25", "mm:60", "resnet50"])])
    tbase = dict(BASE, kind="tensor_f32", step="mm:5")
    add("pin_memory_tensor", [{"pin_memory": True}, {"pin_memory": False}], tbase)
    if not quick:
        add("pin_memory_image", [{"pin_memory": True}, {"pin_memory": False}])
    # Does a busy pin thread slow a Python-heavy loop (the GIL)? ResNet-50's loop is host-bound.
    add("pin_memory_gil", [{"pin_memory": True}, {"pin_memory": False}], dict(tbase, step="resnet50"))
    # A host-bound loop's sync waits for the kernels launched last (validation run 25, finding 1): without it the loop
    # never waits. The sync_every=1 setting is pin_memory_gil's pinned case (measured once, listed in both).
    if not quick:
        add("sync_every_gil", [{"sync_every": 1}, {"sync_every": 0}], dict(tbase, step="resnet50"))
    add("non_blocking_stream", [{"non_blocking": False, "copy_stream": "default"},
                                {"non_blocking": True, "copy_stream": "default"},
                                {"non_blocking": True, "copy_stream": "side"}], tbase)
    add("sync_every", [{"sync_every": s} for s in ([1, 0] if quick else [1, 8, 0])], tbase)
    # The pinned tensor loader with too few workers to keep its pin thread busy: the pin thread waits for most batches,
    # so with --timeline its pin_received gives each batch's put latency with no queue ahead of it
    # (put_order_diagnostic.py's waited line: is the hand-off all of loader.worker_s_per_batch or a part?), and the
    # model is tested where the workers, not the pin thread, set the pace
    add("pin_memory_few_workers", [{"num_workers": 2}, {"num_workers": 4}], tbase)
    # DataLoader(in_order=False) (torch >= 2.6): the diagnosis names it for a pin-bound loader whose
    # batches overtake each other (long step, then short ones); these families test that advice
    add("in_order", [{}, {"in_order": False}], tbase)
    # One straggling worker (worker 0 spins (factor - 1) x its batch's own time; simulator: loader.slow_worker).
    # Its batches finish after the next worker's once the lag passes the pin thread's period: the long step then
    # short one of the alternating p90 regime (validation run 54), here with a known, steady cause.
    add("slow_worker", [{}] + [{"slow_worker_factor": f} for f in ([1.5] if quick else [1.1, 1.25, 1.5, 2.0])],
        tbase)
    # What a user can do against a straggler that throttles the loader (run 54: at factor 2 its next index comes only
    # when its own batch is consumed, behind the pin thread's queue): more indices in flight, or no in-order wait
    add("slow_worker_remedy", [{}, {"prefetch_factor": 4}, {"in_order": False}], dict(tbase, slow_worker_factor=2.0))
    # Run 54's straggler idled ~20 ms between batches with indices queued: its Python spin holds its GIL, which the
    # threads that hand its batches over need. The same straggler spinning in C with the GIL released tells.
    add("slow_worker_gil", [{}, {"slow_worker_spin": "nogil"}], dict(tbase, slow_worker_factor=2.0))
    # In situ the simulator gets run 54-55's in_order=False gain against the Python-spin straggler (+15% against
    # +17%), but those cases' pin thread spent 8.5-11.4% less CPU a batch than their in-order pairs in all three pairs
    # (no straggler: median +2.4% over ten pairs), which no profile foresees. Held against GIL-free, in order or not,
    # in one call: is that the held GIL's doing (validation-runs.md, "The straggler's in_order=False gain")?
    add("slow_worker_order", [{}, {"in_order": False}, {"slow_worker_spin": "nogil"},
                              {"slow_worker_spin": "nogil", "in_order": False}], dict(tbase, slow_worker_factor=2.0))
    # Every worker's __getitem__ does 0.5 ms of Python after its read, holding its GIL or not (PythonLoadDataset):
    # does the pin thread's receive wait for a loading worker's GIL as for run 55's straggler's spin?
    add("python_load", [{}, {"kind": "tensor_f32_py"}, {"kind": "tensor_f32_pyfree"}], tbase)
    if not quick:
        add("in_order_image", [{}, {"in_order": False}])
    add("data_kind", [{"kind": "image"}, {"kind": "tensor_f32"}, {"kind": "tokens", "batch_size": 32}]
        + ([] if quick else [{"kind": "tensor_u8"}]), dict(BASE, step="mm:10"))
    # 4 workers: a short prefetch fill, so that one pass over the files leaves enough steady steps
    add("storage_tensor", [{"storage": "warm"}, {"storage": "cold"}], dict(tbase, step="mm:10", num_workers=4))
    if not quick:
        add("storage_image", [{"storage": "warm"}, {"storage": "cold"}])
    BS = [32, 128] if quick else [16, 32, 64, 128]
    add("batch_size", [{"batch_size": b, "step": f"mm:{25 * b / 64:g}"} for b in BS])
    # Variable-length sequences (pipeplan's sequence section): token batches padded to their longest at three batch
    # sizes (the longest of more samples pads more) and to a fixed 512, behind a decoder step whose GPU time follows
    # the batch's shape; GPU-bound, so the prediction is the padding and the step's fit
    add("sequence_step", [{"batch_size": b} for b in ([32, 128] if quick else [16, 32, 128])]
        + [{"kind": "tokens_pad512", "batch_size": 32}],
        dict(BASE, kind="tokens", num_workers=4, step="seq:4"))
    # JPEG decode in the workers (the image kind) against decode on the GPU by the loop (encoded bytes from the
    # workers, torchvision's decode_jpeg(device="cuda")): with 8 workers and with 4 (pipeplan's
    # training.gpu_decode_* keys)
    add("decode_device", [{}, {"kind": "image_bytes", "step": "gpudec+mm:25"}, {"num_workers": 4},
                          {"kind": "image_bytes", "step": "gpudec+mm:25", "num_workers": 4}])
    add("prefetch_factor", [{"prefetch_factor": p} for p in ([1, 4] if quick else [1, 2, 4])],
        dict(BASE, num_workers=4))
    ep = dict(epochs=3, steps_per_epoch=6) if quick else dict(epochs=4, steps_per_epoch=10)
    add("persistent_workers", [dict(ep, persistent_workers=True), dict(ep, persistent_workers=False)])
    if families:
        # a misspelt family would leave a device call with no case after its calibration: refuse it by name
        known = [name for name, _ in fam]
        unknown = [f for f in families if f not in known]
        if unknown:
            raise ValueError(f"unknown famil{'y' if len(unknown) == 1 else 'ies'} {','.join(unknown)}; expected "
                             f"some of {','.join(known)}")
        fam = [f for f in fam if f[0] in families]

    cases, by_key = [], {}
    for name, variants in fam:
        for v in variants:
            key = json.dumps(v, sort_keys=True)
            if key in by_key:
                by_key[key]["also_families"].append(name)
                continue
            c = {"id": None, "family": name, "also_families": [], "repeat": 0, "knobs": v,
                 "status": "pending"}
            by_key[key] = c
            cases.append(c)
    # repeats of the base case (and of the tensor base), spread over the run to show drift too;
    # with rounds, every setting is repeated instead
    reps = [json.dumps(dict(BASE), sort_keys=True)]
    if not quick:
        reps.append(json.dumps(dict(tbase, pin_memory=True), sort_keys=True))
    if rounds > 1:
        reps = []
        cases = [dict(c, repeat=r, knobs=dict(c["knobs"]), also_families=list(c["also_families"]))
                 for r in range(rounds) for c in (cases if r % 2 == 0 else cases[::-1])]
    rep_cases = []
    for r in ([1] if quick else [1, 2]):
        for key in reps:
            if key in by_key:
                src = by_key[key]
                rep_cases.append({"id": None, "family": src["family"], "also_families": list(src["also_families"]),
                                  "repeat": r, "knobs": dict(src["knobs"]), "status": "pending"})
    if rep_cases:
        if quick:
            cases.append(rep_cases[0])
        else:
            half = len(cases) // 2
            first = [c for c in rep_cases if c["repeat"] == 1]
            second = [c for c in rep_cases if c["repeat"] == 2]
            cases = cases[:half] + first + cases[half:] + second
    for i, c in enumerate(cases):
        c["index"] = i
        k = c["knobs"]
        c["id"] = (f"{i:02d}-{c['family']}-{k['kind']}-b{k['batch_size']}-w{k['num_workers']}"
                   f"-pf{k['prefetch_factor']}-{'pin' if k['pin_memory'] else 'nopin'}"
                   f"-{'nb' if k['non_blocking'] else 'blk'}-{k['copy_stream']}-s{k['sync_every']}"
                   f"-{k['step'].replace(':', '')}-{k['storage']}"
                   + (f"-ep{k['epochs']}x{k['steps_per_epoch']}" if k.get("epochs", 1) > 1 else "")
                   + ("-persist" if k.get("persistent_workers") and k.get("epochs", 1) > 1 else "")
                   + ("-unordered" if k.get("in_order", True) is False else "")
                   + (f"-slow{k['slow_worker_factor']:g}" if k.get("slow_worker_factor", 1.0) != 1.0 else "")
                   + ("-nogil" if k.get("slow_worker_spin", "python") == "nogil" else "")
                   + (f"-r{c['repeat']}" if c["repeat"] else ""))
    return cases


METHODS = {
    "steady_state": "the first max(prefetch_factor*num_workers+2, 5) steps are left out (prefetch fill); "
                    "multi-epoch cases leave out the whole first epoch",
    "step_time": "intervals between CUDA events recorded on the compute stream after each step; mean = "
                 "window / steps; throughput = samples / window",
    "data_wait": "perf_counter around next(iterator) in the training loop",
    "loop_host": "perf_counter from batch in hand to the step's last launch returned (includes .to() calls)",
    "copy_call": "perf_counter from batch in hand to the .to() calls returned (part of loop_host)",
    "release": "perf_counter around `del batch, gb` after the step's sync (an unpinned batch's unmap)",
    "components": "single process, torch.set_num_threads(1) as in a worker; mean, cv, stderr reported",
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="results JSON (rewritten after every case)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="wall-clock budget of the whole run, data generation included "
                         "(default 420, quick 120)")
    ap.add_argument("--quick", action="store_true", help="smoke test: fewer, shorter cases")
    ap.add_argument("--cpu-test", action="store_true", help="no GPU: exercise code paths on the CPU")
    ap.add_argument("--data-dir", default="/tmp/pipeplan-validation-data")
    ap.add_argument("--n-images", type=int, default=None)
    ap.add_argument("--families", default=None, help="comma-separated subset of families")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every setting this many times, round after round (replaces the base-case repeats)")
    ap.add_argument("--list", action="store_true", help="print the case list and exit")
    ap.add_argument("--timeline", action="store_true",
                    help="keep each case's per-step and per-worker-batch times (timeline_analysis.py reads them)")
    ap.add_argument("--cases", default=None, help="comma-separated case indices of the list to run (after --families)")
    ap.add_argument("--probe-window-s", type=float, default=PROBE_WINDOW_S,
                    help="each probe's timed window before and after a case, and the case's head measured the same "
                         "way (default %(default)s s; quick mode 0.6 s). Longer probes average more of the wander "
                         "(validation-runs.md run 23, finding 1)")
    ap.add_argument("--case-window-s", type=float, default=CASE_WINDOW_S,
                    help="the most time a case's measured window takes from the budget (default %(default)s s); "
                         "longer windows measure a case's own p90 step more precisely (validation-runs.md run 27, "
                         "finding 3), and fewer cases fit a call")
    ap.add_argument("--min-case-window-s", type=float, default=MIN_CASE_WINDOW_S,
                    help="later cases are left out (repeats first) before a case's measured window falls below this "
                         "(default %(default)s s). A case's p90 step is one realisation of its workers: another "
                         "repeat's walls miss it by 54%% at p90 in windows under 5 s and 22%% in windows of 20 s and "
                         "more (validation-runs.md run 60, finding 7), so a call for the p90 step trades cases for "
                         "windows of 12-20 s")
    ap.add_argument("--probe-settle-s", type=float, default=None,
                    help="each probe keeps dropping batches this long after its warm-up before its window opens "
                         "(default 1 s, quick mode 0; 0 until run 24, whose finding 1 found a fresh pinning loader's "
                         "pin thread dearer for about its first second: image probes read 1.15x the case unsettled, "
                         "1.016x settled)")
    ap.add_argument("--host-probes-all", action="store_true",
                    help="the loop's host probes right before and after every case, light (mm:N) loops too, not only "
                         "host-heavy ones (device plan item 24; convert's --host-from probe-bracket takes them)")
    ap.add_argument("--probe-no-put", action="store_true",
                    help="a third probe right after each case with workers: the same loader with each batch dropped "
                         "inside its worker after collate (components.probe_no_put), the per-sample cost without the "
                         "queue feeder's put beside it (validation-runs.md run 81, finding 2)")
    ap.add_argument("--wander-long-s", type=float, default=0.0, metavar="S",
                    help="once a call per warm loader setting with two workers or more, the probe's loader for S "
                         "seconds, its workers' batch series kept (components.wander_long): the wander's memory past a "
                         "probe's reach (device plan item 28; 15-20 s; default 0, off)")
    ap.add_argument("--probe-with-straggler", action="store_true",
                    help="a straggler case's probes (before and after it) run its straggler too: worker 0 "
                         "slow_worker_factor times slower with the case's spin (validation-runs.md run 71, finding 3: "
                         "is the pin thread dearer with a straggler beside it?). A diagnostic: the probes' pin thread "
                         "and wander then are not what a user's calibrate measures")
    a = ap.parse_args(argv)
    global PROBE_WITH_STRAGGLER, HOST_PROBES_ALL, PROBE_NO_PUT, WANDER_LONG_S
    PROBE_WITH_STRAGGLER = bool(a.probe_with_straggler)
    HOST_PROBES_ALL = bool(a.host_probes_all)
    PROBE_NO_PUT = bool(a.probe_no_put)
    if a.wander_long_s != 0.0 and not 5.0 <= a.wander_long_s <= 60.0:
        ap.error(f"--wander-long-s {a.wander_long_s}: expected 0 (off) or 5 to 60 seconds")
    WANDER_LONG_S = float(a.wander_long_s)
    if not 0.2 <= a.probe_window_s <= 30.0:
        ap.error(f"--probe-window-s {a.probe_window_s}: expected 0.2 to 30 seconds")
    if a.probe_settle_s is None:
        a.probe_settle_s = 0.0 if a.quick else PROBE_SETTLE_S
    if not 0.0 <= a.probe_settle_s <= 30.0:
        ap.error(f"--probe-settle-s {a.probe_settle_s}: expected 0 to 30 seconds")
    set_probe_timing(a.probe_window_s, a.probe_settle_s)
    if not 5.0 <= a.case_window_s <= 120.0:
        ap.error(f"--case-window-s {a.case_window_s}: expected 5 to 120 seconds")
    if not 1.0 <= a.min_case_window_s <= a.case_window_s:
        ap.error(f"--min-case-window-s {a.min_case_window_s}: expected 1 s up to --case-window-s "
                 f"({a.case_window_s:g} s)")
    set_case_window(a.case_window_s, a.min_case_window_s)
    if a.budget_s is None:
        a.budget_s = 120.0 if a.quick else 420.0
    if not 10.0 <= a.budget_s <= 86400.0:
        ap.error(f"--budget-s {a.budget_s:g}: expected 10 seconds up to a day (data generation alone takes about 15 s)")
    if a.n_images is not None and a.n_images < 1:
        ap.error(f"--n-images {a.n_images}: expected 1 or more (default 7000, quick 1200)")
    fams = a.families.split(",") if a.families else None
    if a.rounds < 1:
        ap.error(f"--rounds {a.rounds}: expected 1 or more")
    try:
        cases = build_cases(a.quick, fams, a.rounds)
    except ValueError as e:
        ap.error(f"--families {a.families}: {e}")
    if a.cases:
        try:
            keep = {int(x) for x in a.cases.split(",")}
        except ValueError:
            ap.error(f"--cases {a.cases}: expected comma-separated case indices (integers; --list shows them)")
        missing = sorted(keep - {c["index"] for c in cases})
        if missing:   # an index past the list would leave the call with fewer cases than asked, or none
            ap.error(f"--cases {a.cases}: no case {','.join(map(str, missing))} in the list of {len(cases)} "
                     f"(indices 0-{len(cases) - 1}{' after --families' if fams else ''})")
        cases = [c for c in cases if c["index"] in keep]
    if a.list:
        for c in cases:
            print(c["id"], "also:" + ",".join(c["also_families"]) if c["also_families"] else "")
        print(f"{len(cases)} cases")
        return 0
    import torch
    # beyond-the-cores worker counts are deliberate
    warnings.filterwarnings("ignore", message=".*worker processes in total.*")
    if not a.cpu_test and not torch.cuda.is_available():
        print("harness: no CUDA device visible (use --cpu-test to exercise code paths)", file=sys.stderr)
        return 3
    log(f"harness start: mode {'quick' if a.quick else 'full'}, budget {a.budget_s:.0f}s, {len(cases)} cases")
    h = Harness(a)
    try:
        h.make_data()
        h.run(cases)
    except KeyboardInterrupt:
        h.doc["status"] = "interrupted"
        h.save()
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
