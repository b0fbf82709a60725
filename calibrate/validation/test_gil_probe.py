import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gil_probe  # noqa: E402


class HeldFromLatenessTest(unittest.TestCase):
    def test_late_wakes_add_their_lateness_beyond_the_baseline(self):
        # nine wakes 10 us late (the baseline, the median), two held up: 1.01 ms and 0.51 ms late
        lateness = [1e-5] * 9 + [1.01e-3, 0.51e-3]
        got = gil_probe.held_from_lateness(lateness)
        self.assertAlmostEqual(got["baseline_s"], 1e-5)
        self.assertEqual((got["wakes"], got["late_wakes"]), (11, 2))
        self.assertAlmostEqual(got["held_s"], 1.0e-3 + 0.5e-3)
        # half the held time (0.75 ms) is reached at the 1 ms wake (0.5 + 1.0 in order)
        self.assertAlmostEqual(got["late_weighted_median_s"], 1.0e-3)
        # many small delays (a busy scheduler's) do not move it off the long holds
        got = gil_probe.held_from_lateness([0.0] * 100 + [1e-4] * 20 + [2e-3] * 5, baseline_s=0.0)
        self.assertAlmostEqual(got["late_weighted_median_s"], 2e-3)

    def test_a_wake_just_past_the_baseline_is_the_schedulers_own(self):
        got = gil_probe.held_from_lateness([1e-5] * 5 + [2.5e-5], late_beyond_s=2e-5)   # 15 us beyond: not held
        self.assertEqual(got["late_wakes"], 0)
        self.assertEqual(got["held_s"], 0.0)
        self.assertEqual(gil_probe.held_from_lateness([])["wakes"], 0)

    def test_a_given_baseline_is_used(self):
        got = gil_probe.held_from_lateness([1e-4, 2e-4], baseline_s=0.0)
        self.assertAlmostEqual(got["held_s"], 3e-4)


class PerBatchTest(unittest.TestCase):
    def test_the_windows_figures_per_batch(self):
        figures = {"held_s": 0.06, "held_less_runqueue_s": 0.04, "wakes": 900, "late_wakes": 40}
        got = gil_probe.per_batch(figures, batches=40, main_cpu_s=0.008)
        self.assertAlmostEqual(got["held_s_per_batch"], 1.5e-3)
        self.assertAlmostEqual(got["held_less_runqueue_s_per_batch"], 1.0e-3)
        self.assertAlmostEqual(got["main_cpu_s_per_batch"], 0.2e-3)
        self.assertEqual(got["wakes"], 900)
        got = gil_probe.per_batch({"held_s": 0.01, "held_less_runqueue_s": None}, batches=0, main_cpu_s=0.0)
        self.assertIsNone(got["held_less_runqueue_s_per_batch"])
        self.assertEqual(got["batches"], 1)


class GilProbeLiveTest(unittest.TestCase):
    def test_it_reads_a_python_threads_holds(self):
        # A thread runs pure Python (holding the GIL) for 3 ms, then sleeps 7 ms (releasing it), 40 times: 120 ms
        # held. CPython's switch interval (5 ms) is longer than a hold, so the probe waits each one out. Loose
        # bounds: a loaded machine's scheduler adds its own delays (held_less_runqueue_s takes them out where
        # Linux keeps schedstat), and holds the probe wakes late into are partly missed.
        def holder():
            for _ in range(40):
                end = time.perf_counter() + 3e-3
                while time.perf_counter() < end:
                    pass
                time.sleep(7e-3)
        t = threading.Thread(target=holder)
        with gil_probe.GilProbe() as probe:
            t.start()
            t.join()
        got = probe.figures()
        self.assertGreater(got["wakes"], 40)
        self.assertGreater(got["held_s"], 0.5 * 0.120)
        # On a loaded machine the run queue's delays read as holds (3x seen on 2 cores running two simulations
        # beside the test, the fifty-ninth session): the upper bound is on the held time less them where Linux
        # keeps schedstat (0.12-0.16 s seen then), else on the raw figure
        bounded = got["held_less_runqueue_s"] if got.get("held_less_runqueue_s") is not None else got["held_s"]
        self.assertLess(bounded, 2.5 * 0.120)
        self.assertLess(got["held_s"], got["window_s"])
        self.assertGreater(got["late_weighted_median_s"], 0.5e-3)   # about half a 3 ms hold, not a scheduler's blip


if __name__ == "__main__":
    unittest.main()
