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
