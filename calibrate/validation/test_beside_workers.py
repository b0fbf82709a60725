"""Unit tests of beside_workers (torch-free): the workers' CPU from /proc/<pid>/schedstat, and run_blocks' block
order, its takes (one a beside step, none alone) and its alone blocks that wait for idle workers."""
from __future__ import annotations

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import beside_workers as BW  # noqa: E402


class SchedstatTest(unittest.TestCase):
    def test_reads_nanoseconds_and_sums_workers(self):
        with tempfile.TemporaryDirectory() as root:
            for pid, ns in ((11, "1500000000 7 3\n"), (12, "250000000 1 1\n")):
                os.makedirs(f"{root}/{pid}")
                with open(f"{root}/{pid}/schedstat", "w") as f:
                    f.write(ns)
            self.assertAlmostEqual(BW.process_cpu_s(11, root), 1.5)
            self.assertAlmostEqual(BW.workers_cpu_s([11, 12], root), 1.75)
            self.assertIsNone(BW.process_cpu_s(13, root))          # gone: None, not a crash
            self.assertIsNone(BW.workers_cpu_s([11, 13], root))    # one unreadable: no sum

    @unittest.skipUnless(os.path.exists("/proc/self/schedstat"), "needs Linux schedstat")
    def test_this_process_counts_its_own_cpu(self):
        a = BW.process_cpu_s(os.getpid())
        x = 0
        for i in range(2_000_000):                 # some CPU on this (main) thread
            x += i
        b = BW.process_cpu_s(os.getpid())
        self.assertGreater(b, a)


class RunBlocksTest(unittest.TestCase):
    def test_block_order_takes_and_idle_wait(self):
        # A fake loop: each step lasts 10 ms of a fake clock. The workers are busy (4 cores) through each beside
        # step and the first 3 steps of the alone block after it (finishing their prefetch), then idle.
        clock = [0.0]
        state = {"beside": False, "since_beside": 99, "cpu": 0.0, "takes": 0}

        def take():
            state["takes"] += 1
            state["beside"], state["since_beside"] = True, 0
            return object()

        def step():
            clock[0] += 0.010
            busy = 4.0 if state["beside"] or state["since_beside"] < 3 else 0.0
            state["cpu"] += busy * 0.010
            return None

        def finish(_):
            if not state["beside"]:
                state["since_beside"] += 1
            state["beside"] = False

        blocks = BW.run_blocks(step, finish, take, lambda: state["cpu"], block_steps=4, rounds=2,
                               clock=lambda: clock[0])
        self.assertEqual([b["beside"] for b in blocks], [False, True, False, True, False])
        self.assertEqual(state["takes"], 2 * 4)                     # one take a beside step, none alone
        self.assertEqual([len(b["steps"]) for b in blocks], [4, 4, 7, 4, 7])   # 3 busy + 4 idle after a beside one
        busy = [round(s[2], 6) for s in blocks[2]["steps"]]
        self.assertEqual(busy, [4.0, 4.0, 4.0, 0.0, 0.0, 0.0, 0.0])
        # the cap: workers that never go idle end an alone block at max_alone_factor x block_steps
        blocks = BW.run_blocks(step, finish, take, lambda: state["cpu"] + clock[0] * 8.0, block_steps=4, rounds=1,
                               max_alone_factor=3, clock=lambda: clock[0])
        self.assertEqual([len(b["steps"]) for b in blocks], [12, 4, 12])
        # without CPU readings: alone blocks of 2 x block_steps, busy None
        blocks = BW.run_blocks(step, finish, take, lambda: None, block_steps=4, rounds=1, clock=lambda: clock[0])
        self.assertEqual([len(b["steps"]) for b in blocks], [8, 4, 8])
        self.assertTrue(all(s[2] is None for b in blocks for s in b["steps"]))


def _torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


class _BusyDataset:
    """Each sample costs its worker about 2 ms of CPU (a pure-Python loop), as decode would."""
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        x = 0
        for j in range(40_000):
            x += j
        return i


@unittest.skipUnless(_torch() and os.path.exists("/proc/self/schedstat"), "needs torch and Linux schedstat")
class RealWorkersTest(unittest.TestCase):
    def test_real_dataloader_workers_read_busy_then_idle(self):
        # What the harness does, on CPU: 2 real DataLoader workers; the beside steps keep them busy, and each alone
        # block waits until they have finished what was asked of them, then counts idle steps.
        import time
        from torch.utils.data import DataLoader
        dl = DataLoader(_BusyDataset(), batch_size=4, num_workers=2, prefetch_factor=2)
        it = iter(dl)
        for _ in range(4):
            next(it)
        pids = [w.pid for w in it._workers]
        self.assertEqual(len(pids), 2)
        self.assertIsNotNone(BW.workers_cpu_s(pids))

        def step():
            time.sleep(0.01)                   # the loop's launches; the workers' CPU is what is read around it
        blocks = BW.run_blocks(step, lambda _: None, lambda: next(it), lambda: BW.workers_cpu_s(pids),
                               block_steps=6, rounds=2)
        del it, dl
        beside = [s[2] for b in blocks if b["beside"] for s in b["steps"]]
        alone_tail = [s[2] for b in blocks if not b["beside"] for s in b["steps"][-3:]]
        self.assertGreater(sorted(beside)[len(beside) // 2], 0.3)        # the workers work through beside steps
        self.assertTrue(all(x < BW.IDLE_BUSY_WORKERS for x in alone_tail))   # and an alone block ends idle
        import timeline_analysis as T
        r = T.interleaved_host_ratio(blocks, BW.IDLE_BUSY_WORKERS)
        self.assertEqual(r["blocks"], 2)
        self.assertGreater(r["ratio"], 0.5)


if __name__ == "__main__":
    unittest.main()
