"""A helper thread that does part of PyTorch's pin thread's work beside a training loop (torch-free).

Run 16 (docs/validation-runs.md, finding 2): a ResNet-50 loop beside a pinning DataLoader took 1.75-1.93x its host time
alone, more than the pin thread's GIL-held receive (unpickling, the fd, the mapping) explains; its copy and the
release of the worker's batch run with the GIL released. The harness component `host_beside_pin_parts` runs the
loop beside a PaceThread that takes each batch from an unpinned DataLoader and does one part of that work (receive
and drop; receive, copy into a pinned buffer allocated once, and drop), one batch per loop step: against the real
pinning loader, the loop's slowdown beside each tells the receive, the copy and the pin loop's own machinery (its
queue, the caching host allocator) apart.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Iterator, List, Optional, Tuple


class PaceThread:
    """Takes batches from `source` on its own thread, calls `work(batch)` on each, drops it, and hands the loop one
    token per batch through a queue of `ahead` slots, as the pin thread hands over pinned batches (prefetch keeps it
    at most a few ahead). `cpu_s` holds the thread's CPU per batch (time.thread_time: receive, work and release).
    `on_start` runs first on the thread (the pin thread's thread-local setup).
    Use as a context manager; `tokens()` is the loop's iterator. The thread never blocks for longer than `poll_s`
    without checking that it should stop, so leaving the context never hangs on a full queue."""

    def __init__(self, source: Iterator[Any], work: Optional[Callable[[Any], None]] = None, ahead: int = 2,
                 poll_s: float = 0.05, on_start: Optional[Callable[[], None]] = None):
        self.source, self.work, self.poll_s, self.on_start = source, work, poll_s, on_start
        self.q: "queue.Queue[int]" = queue.Queue(maxsize=max(1, ahead))
        self.stop = threading.Event()
        self.cpu_s: List[float] = []
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._run, name="pace-thread", daemon=True)

    def _run(self) -> None:
        try:
            if self.on_start is not None:      # thread-local setup, e.g. torch.set_num_threads(1) as the pin thread
                self.on_start()
            while not self.stop.is_set():
                c0 = time.thread_time()
                batch = next(self.source)
                if self.work is not None:
                    self.work(batch)
                del batch                      # the release, on this thread, as pin_memory's rebinding does
                self.cpu_s.append(time.thread_time() - c0)
                while not self.stop.is_set():
                    try:
                        self.q.put(1, timeout=self.poll_s)
                        break
                    except queue.Full:
                        continue
        except BaseException as e:             # StopIteration or a worker's error: the loop's next token raises it
            self.error = e
            self.stop.set()

    def tokens(self) -> Iterator[int]:
        """One token per batch the thread finished; re-raises the thread's error once it has stopped."""
        while True:
            try:
                yield self.q.get(timeout=self.poll_s)
            except queue.Empty:
                if self.stop.is_set():
                    raise RuntimeError(f"pace thread stopped: {self.error!r}")

    def __enter__(self) -> "PaceThread":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=10.0)


def spanned(work: Callable[[Any], None], spans: List[Tuple[float, float]]) -> Callable[[Any], None]:
    """`work` wrapped so that each call appends its (start, end), perf_counter, to `spans`: the helper's work spans
    that timeline_analysis reads the loop's steps against."""
    def timed(batch: Any) -> None:
        a = time.perf_counter()
        work(batch)
        spans.append((a, time.perf_counter()))
    return timed


def thread_minor_faults(tid: int, proc_root: str = "/proc/self/task") -> Optional[int]:
    """Minor page faults so far of one thread of this process (its native id: threading.get_native_id()), from
    /proc/self/task/<tid>/stat (field 10, minflt), or None where that file cannot be read (not Linux). A fault
    on the loop's own heap needs the process's memory map; their count per step says how often the loop needs it
    (run 17, finding 1: the loop stalls while the pin thread maps, touches and unmaps workers' batches)."""
    try:
        with open(f"{proc_root}/{tid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: count fields after its closing one
    rest = stat[stat.rfind(")") + 2:].split()
    try:
        return int(rest[10 - 3])                # fields 3.. follow the name; minflt is field 10
    except (IndexError, ValueError):
        return None

