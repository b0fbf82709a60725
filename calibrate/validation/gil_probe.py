"""How long a thread that wants the GIL waits for it, sampled by a probe thread (stdlib only).

Validation run 62 (finding 3) found the simulated training loop waiting about 1.5 ms a step for the pin thread's
receive, because the simulator holds the GIL for the receive's whole fixed cost (`ipc.receive_s_per_batch`), while
the measured loop turned around in 1.6 ms. How much of a receive holds the GIL is what `ipc.receive_gil_share`
needs. This probe measures it the way the loop meets it: a daemon thread sleeps `interval_s` (releasing the GIL),
wakes, and notes how late it got the GIL back. A wake that falls inside another thread's hold waits out the rest of
that hold, so over a window the probes' lateness beyond their own baseline adds up to about the time others held
the GIL (less half an interval per hold; holds shorter than the interval are partly missed). The probe holds the GIL
only for a few microseconds a wake.

    with GilProbe() as probe:
        ... the work whose GIL holds are wanted ...
    figures = probe.figures()     # {"held_s", "window_s", "wakes", "late_wakes", "baseline_s", "late_weighted_median_s",
                                  #  "interval_s", "runqueue_wait_s", "held_less_runqueue_s"}

A wake can also be late for want of a CPU, which the lateness alone cannot tell from the GIL (on 2 busy cores the
live test reads 1.5x its holds). Where Linux keeps the thread's /proc schedstat (its second field: nanoseconds
waiting on a run queue), `runqueue_wait_s` is the probe thread's over the window and `held_less_runqueue_s` the
held time less it; elsewhere both are None.
"""
import os
import threading
import time
from typing import Any, Dict, List, Optional, Sequence

DEFAULT_INTERVAL_S = 1e-4
# a wake counts as held up when it is this much later than the probe's usual lateness (the scheduler's own)
LATE_BEYOND_BASELINE_S = 2e-5


def held_from_lateness(lateness_s: Sequence[float], baseline_s: Optional[float] = None,
                       late_beyond_s: float = LATE_BEYOND_BASELINE_S) -> Dict[str, float]:
    """Pure: the time others held the GIL, from the probe's wake latenesses (actual sleep less the requested). The
    baseline is the wakes' median lateness unless given (most wakes find the GIL free); wakes later than baseline +
    late_beyond_s add their lateness beyond the baseline."""
    if not lateness_s:
        return {"held_s": 0.0, "wakes": 0, "late_wakes": 0, "baseline_s": baseline_s or 0.0, "late_weighted_median_s": None}
    ordered = sorted(lateness_s)
    base = ordered[len(ordered) // 2] if baseline_s is None else baseline_s
    late = sorted(x - base for x in lateness_s if x > base + late_beyond_s)
    # the lateness below which half the held time falls (weighted by lateness, so a busy scheduler's many small
    # delays do not set it): about half a hold where holds are long and whole; near the interval or below where
    # they come in short pieces, which a 0.1 ms probe reads only in part (a loop wanting the GIL at every op waits
    # through all of them)
    total, run, weighted_median = sum(late), 0.0, None
    for x in late:
        run += x
        if run >= total / 2:
            weighted_median = x
            break
    return {"held_s": total, "wakes": len(lateness_s), "late_wakes": len(late), "baseline_s": base,
            "late_weighted_median_s": weighted_median}


def runqueue_wait_s(native_thread_id: int) -> Optional[float]:
    """A thread's time waiting on a CPU run queue so far (/proc/self/task/TID/schedstat, second field), or None."""
    try:
        with open(f"/proc/self/task/{native_thread_id}/schedstat") as f:
            fields = f.read().split()
        return int(fields[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


class GilProbe:
    """A daemon thread sampling how late it gets the GIL back after each short sleep, between __enter__ and
    __exit__."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S):
        self.interval_s = interval_s
        self._lateness: List[float] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._t0 = self._t1 = 0.0
        self._runqueue = [None, None]

    def _run(self) -> None:
        sleep, clock, out, stop = time.sleep, time.perf_counter, self._lateness, self._stop
        tid = threading.get_native_id()
        self._runqueue[0] = runqueue_wait_s(tid)
        while not stop.is_set():
            a = clock()
            sleep(self.interval_s)
            out.append(clock() - a - self.interval_s)
        self._runqueue[1] = runqueue_wait_s(tid)

    def __enter__(self) -> "GilProbe":
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="gil-probe", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self._t1 = time.perf_counter()

    def figures(self) -> Dict[str, float]:
        out = held_from_lateness(list(self._lateness))
        a, b = self._runqueue
        rq = (b - a) if a is not None and b is not None else None
        out.update(window_s=self._t1 - self._t0, interval_s=self.interval_s, runqueue_wait_s=rq,
                   held_less_runqueue_s=None if rq is None else max(0.0, out["held_s"] - rq))
        return out


def per_batch(figures: Dict[str, Any], batches: int, main_cpu_s: float) -> Dict[str, Any]:
    """Pure: GilProbe.figures() over the harness's pinned transport window (`batches` batches), per batch:
    held_s_per_batch is how long a thread wanting the GIL waited a batch beside the pin thread and the loop's
    next() (the loop's own CPU a batch there, main_cpu_s_per_batch, is the most of that the loop can hold); the pin
    thread's receive holds about held - main_cpu of it."""
    n = max(1, int(batches))
    rq = figures.get("held_less_runqueue_s")
    return dict(figures, batches=n, held_s_per_batch=figures["held_s"] / n, main_cpu_s_per_batch=main_cpu_s / n,
                held_less_runqueue_s_per_batch=None if rq is None else rq / n)
