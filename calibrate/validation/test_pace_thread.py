"""Unit tests of pace_thread.PaceThread (torch-free): one token per batch, never more than `ahead` batches
ahead of the loop (plus the one it holds), errors reach the loop, and leaving the context never hangs."""
from __future__ import annotations

import itertools
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pace_thread import PaceThread, thread_minor_faults  # noqa: E402


class PaceThreadTest(unittest.TestCase):
    def test_one_token_per_batch_and_bounded_ahead(self):
        seen = []
        with PaceThread(itertools.count(), work=seen.append, ahead=2) as pt:
            toks = pt.tokens()
            for _ in range(10):
                next(toks)
            time.sleep(0.2)                    # let the thread run ahead as far as it can
            done = len(pt.cpu_s)
        # 10 taken, 2 waiting in the queue, 1 finished and waiting for a slot: at most 13 batches done
        self.assertGreaterEqual(done, 10)
        self.assertLessEqual(done, 13)
        self.assertEqual(seen[:10], list(range(10)))
        self.assertTrue(all(c >= 0.0 for c in pt.cpu_s))

    def test_the_sources_end_reaches_the_loop(self):
        with PaceThread(iter([1, 2, 3]), ahead=4) as pt:
            toks = pt.tokens()
            got = [next(toks) for _ in range(3)]
            with self.assertRaises(RuntimeError) as cm:
                next(toks)
        self.assertEqual(got, [1, 1, 1])
        self.assertIn("StopIteration", str(cm.exception))

    def test_on_start_runs_first_on_the_thread(self):
        import threading
        order = []
        with PaceThread(iter([1, 2]), work=lambda b: order.append(("work", threading.current_thread().name)),
                        on_start=lambda: order.append(("start", threading.current_thread().name))) as pt:
            toks = pt.tokens()
            next(toks)
            next(toks)
        self.assertEqual(order[0], ("start", "pace-thread"))
        self.assertEqual([o[0] for o in order], ["start", "work", "work"])

    def test_leaving_with_a_full_queue_does_not_hang(self):
        t0 = time.perf_counter()
        with PaceThread(itertools.count(), ahead=1, poll_s=0.01) as pt:
            time.sleep(0.05)                   # the queue is full and the thread waits for a slot
        self.assertLess(time.perf_counter() - t0, 1.0)
        self.assertFalse(pt.thread.is_alive())


class ThreadMinorFaultsTest(unittest.TestCase):
    def test_field_ten_after_a_name_with_spaces_and_parentheses(self):
        import tempfile
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "42"))
            # pid (comm) state ppid pgrp session tty_nr tpgid flags minflt ...: minflt = 1234
            with open(os.path.join(root, "42", "stat"), "w") as f:
                f.write("42 (pt data (pin) x) S 1 42 42 0 -1 4194560 1234 0 5 0 10 3 0 0 20 0 9 0 100")
            self.assertEqual(thread_minor_faults(42, root), 1234)
            self.assertIsNone(thread_minor_faults(43, root))          # no such thread

    def test_this_threads_faults_grow_when_it_touches_new_pages(self):
        import threading
        tid = threading.get_native_id()
        before = thread_minor_faults(tid)
        if before is None:
            self.skipTest("no /proc/self/task on this system")
        import mmap
        m = mmap.mmap(-1, 256 * 4096)
        for i in range(0, 256 * 4096, 4096):                 # first touch of 256 fresh pages
            m[i] = 1
        after = thread_minor_faults(tid)
        m.close()
        self.assertGreaterEqual(after - before, 200)


if __name__ == "__main__":
    unittest.main()
