"""dispatch_model.py against hand calculations of an in-order DataLoader's dispatch (no wander: cv 0)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dispatch_model import Dispatch, ou_log_speed, run  # noqa: E402


class DispatchModelTest(unittest.TestCase):
    def test_workers_bound_runs_at_the_workers_capacity(self):
        # 4 workers of 73 ms each, nothing else slower: 4 / 0.073 batches a second
        r = run(Dispatch(workers=4, batch_s=0.073, cv=0.0, pin_s=0.0, loop_s=0.005), steps=800)
        self.assertAlmostEqual(r["batches_per_s"], 4 / 0.073, delta=0.01)

    def test_pin_thread_bound_runs_at_the_pin_threads_pace(self):
        # 8 workers of 73 ms (110/s) behind a 20 ms pin thread (50/s): every step 20 ms
        r = run(Dispatch(workers=8, batch_s=0.073, cv=0.0, pin_s=0.020, loop_s=0.005), steps=800)
        self.assertAlmostEqual(r["batches_per_s"], 50.0, delta=0.01)
        self.assertAlmostEqual(r["step_p50_s"], 0.020, places=9)

    def test_one_worker_one_slot_waits_for_its_next_index(self):
        # prefetch_factor 1, one worker: index j+1 goes out only when batch j is handed over, so the worker is idle
        # while the pin thread handles its batch: one batch per 40 + 10 ms, not per max(40, 10)
        r = run(Dispatch(workers=1, prefetch_factor=1, batch_s=0.040, cv=0.0, pin_s=0.010, loop_s=0.005), steps=500)
        self.assertAlmostEqual(r["batches_per_s"], 1 / 0.050, delta=0.01)

    def test_in_phase_workers_make_waves_of_loop_steps_and_one_wait(self):
        # 4 identical workers start together and are never short of an index (the round's indices go out while
        # they run their second batch): each 73 ms round is three steps at the loop's 11.5 ms and one of
        # 73 - 3 * 11.5 = 38.5 ms
        r = run(Dispatch(workers=4, batch_s=0.073, cv=0.0, pin_s=0.0, loop_s=0.0115), steps=800)
        self.assertAlmostEqual(r["step_p50_s"], 0.0115, places=9)
        self.assertAlmostEqual(r["step_p90_s"], 0.0385, places=9)

    def test_a_worker_waits_for_an_index_the_loop_has_not_sent_yet(self):
        # one worker, two slots, 10 ms batches behind a 25 ms pin thread, a loop that costs nothing: batches 0 and 1
        # start at 0 and 10 ms; the pin thread hands them over at 35 and 60 ms, and each hand-over sends the next
        # index, so batch 2 starts at 35 ms and batch 3 at 60, not as soon as the worker frees (20, 30 ms)
        starts = {}
        run(Dispatch(workers=1, prefetch_factor=2, batch_s=0.010, cv=0.0, pin_s=0.025, loop_s=0.0), steps=20,
            warmup=2, starts=starts)
        self.assertAlmostEqual(starts[0], 0.0)
        self.assertAlmostEqual(starts[1], 0.010)
        self.assertAlmostEqual(starts[2], 0.035)
        self.assertAlmostEqual(starts[3], 0.060)
        self.assertAlmostEqual(starts[4], 0.085)

    def test_ou_step_keeps_or_redraws(self):
        self.assertAlmostEqual(ou_log_speed(0.2, 0.0, 1.0, 0.1, 5.0), 0.2)      # no time: no move
        self.assertAlmostEqual(ou_log_speed(0.2, 1.0, 0.0, 0.1, 0.5), 0.05)     # no correlation: sigma * z


if __name__ == "__main__":
    unittest.main()
