"""The harness's record of the order batches reach the pin thread (PinThreadMeter's wrapper on torch's
_pin_memory_loop), run on a stand-in module and queue: harness.py needs torch at import, which CI lacks, so the class
is read out of its source and run alone. A crash in the wrapper would break a measured case's pin thread on the GPU
machine, so the surprises (a queue that takes no attribute, items that are not (index, data)) are checked too."""
import ast
import os
import time
import types
import unittest
from typing import List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))


def pin_thread_meter():
    with open(os.path.join(HERE, "harness.py")) as f:
        tree = ast.parse(f.read())
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "PinThreadMeter"]
    assert found, "harness.py lacks PinThreadMeter"
    ns = {"time": time, "TL_PER_SLOT": 4096, "Optional": Optional, "List": List, "Tuple": Tuple, "os": os}
    exec(compile(ast.Module(body=found, type_ignores=[]), "harness.py", "exec"), ns)
    return ns["PinThreadMeter"]


class FakeQueue:
    def __init__(self, items):
        self.items = list(items)

    def get(self, timeout=None):
        return self.items.pop(0)


class SlottedQueue:
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = list(items)

    def get(self, timeout=None):
        return self.items.pop(0)


def fake_module():
    pm = types.SimpleNamespace()

    def _pin_memory_loop(in_queue, out_queue, device_id, done_event, device=None):
        while True:
            try:
                r = in_queue.get(timeout=0.1)
            except IndexError:
                return "done"
            out_queue.append(r)
    pm._pin_memory_loop = _pin_memory_loop
    return pm


class PinReceived(unittest.TestCase):
    def test_each_get_is_recorded_with_its_index_in_the_order_taken(self):
        meter = pin_thread_meter()()
        meter.received = []
        pm = fake_module()
        orig = pm._pin_memory_loop
        meter._wrap_pin_loop(pm)
        out = []
        q = FakeQueue([(1, "b1"), (0, "b0"), (2, "b2"), (None, "not a batch"), "odd"])
        self.assertEqual(pm._pin_memory_loop(q, out, 0, None), "done")
        self.assertEqual([i for i, _ in meter.received], [1, 0, 2])
        ts = [t for _, t in meter.received]
        self.assertEqual(ts, sorted(ts))
        self.assertEqual(out, [(1, "b1"), (0, "b0"), (2, "b2"), (None, "not a batch"), "odd"])  # passed on as is
        self.assertIs(meter._orig_loop, orig)
        self.assertEqual(pm._pin_memory_loop.__name__, "_pin_memory_loop")   # the thread's name follows its target's

    def test_without_a_timeline_nothing_is_recorded(self):
        meter = pin_thread_meter()()
        pm = fake_module()
        meter._wrap_pin_loop(pm)
        out = []
        pm._pin_memory_loop(FakeQueue([(0, "b0")]), out, 0, None)
        self.assertIsNone(meter.received)
        self.assertEqual(out, [(0, "b0")])

    def test_a_queue_that_takes_no_attribute_runs_the_loop_unwrapped(self):
        meter = pin_thread_meter()()
        meter.received = []
        pm = fake_module()
        meter._wrap_pin_loop(pm)
        out = []
        self.assertEqual(pm._pin_memory_loop(SlottedQueue([(0, "b0")]), out, 0, None), "done")
        self.assertEqual(out, [(0, "b0")])
        self.assertEqual(meter.received, [])

    def test_a_module_without_the_loop_is_left_alone(self):
        meter = pin_thread_meter()()
        pm = types.SimpleNamespace()
        meter._wrap_pin_loop(pm)
        self.assertFalse(hasattr(pm, "_pin_memory_loop"))
        self.assertIsNone(meter._orig_loop)


if __name__ == "__main__":
    unittest.main()


def harness_function(name):
    with open(os.path.join(HERE, "harness.py")) as f:
        tree = ast.parse(f.read())
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert found, f"harness.py lacks {name}"
    ns = {"Optional": Optional}
    exec(compile(ast.Module(body=found, type_ignores=[]), "harness.py", "exec"), ns)
    return ns[name]


class FdDetach(unittest.TestCase):
    """The receive's file-descriptor hand-overs (validation-runs.md run 83, finding 6): each DupFd.detach() call's
    wall and CPU while the meter is on, and the original put back as __exit__ does."""

    def test_each_detach_is_timed_and_the_original_comes_back(self):
        from multiprocessing import resource_sharer as rs
        real = rs.DupFd.detach
        try:
            def fake(dself):
                time.sleep(0.002)     # a wait: wall, no CPU
                return 7
            rs.DupFd.detach = fake
            meter = pin_thread_meter()()
            meter._wrap_detach()
            self.assertEqual(rs.DupFd.detach(object()), 7)
            self.assertEqual(rs.DupFd.detach(object()), 7)
            self.assertEqual(meter.detach_calls, 2)
            self.assertGreaterEqual(meter.detach_wall_s, 0.004)
            self.assertLess(meter.detach_cpu_s, meter.detach_wall_s)
            self.assertEqual(meter.snapshot()[2:], (2, meter.detach_wall_s, meter.detach_cpu_s))
            self.assertIsNone(meter.detach_intervals)            # no timeline: no intervals kept
            meter.detach_intervals = []
            rs.DupFd.detach(object())
            (a, b), = meter.detach_intervals
            self.assertGreaterEqual(b - a, 0.002)
            self.assertEqual(meter.detach_calls, 3)
            meter._rs.DupFd.detach = meter._orig_detach     # as __exit__ does
            self.assertIs(rs.DupFd.detach, fake)
        finally:
            rs.DupFd.detach = real

    def test_pin_thread_figures_by_hand(self):
        figures = harness_function("pin_thread_figures")
        # 10 batches: 10 pin_memory() calls of 0.5 ms, 20 ms of pin thread CPU; 20 fd hand-overs of 30 ms wall and
        # 4 ms CPU in all: 2 a batch, 3 ms of wall and 0.4 ms of CPU a batch
        got = figures((5, 1.0, 100, 2.0, 0.5), (15, 1.005, 120, 2.03, 0.504), 3.0, 3.2, 10)
        self.assertAlmostEqual(got["pin_copy_s_per_batch"], 0.0005)
        self.assertAlmostEqual(got["pin_thread_cpu_s_per_batch"], 0.02)
        self.assertAlmostEqual(got["fd_detach_calls_per_batch"], 2.0)
        self.assertAlmostEqual(got["fd_detach_wall_s_per_batch"], 0.003)
        self.assertAlmostEqual(got["fd_detach_cpu_s_per_batch"], 0.0004)
        # an older meter's two-figure snapshot, or no hand-over: no fd figures
        self.assertNotIn("fd_detach_wall_s_per_batch", figures((5, 1.0), (15, 1.005), 3.0, 3.2, 10))
        self.assertNotIn("fd_detach_wall_s_per_batch",
                         figures((5, 1.0, 100, 2.0, 0.5), (15, 1.005, 100, 2.0, 0.5), 3.0, 3.2, 10))
