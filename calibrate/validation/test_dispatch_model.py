"""dispatch_model.py against hand calculations of an in-order DataLoader's dispatch (no wander: cv 0)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random  # noqa: E402

from dispatch_model import (Dispatch, backlog_service_s, case_series, ou_log_speed, paced_send_s, pin_series_for,  # noqa: E402
                            replay_case, run)


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

    def test_replayed_times_are_played_in_order_and_again(self):
        # one worker, one slot, no loop cost: each batch is pinned after its worker's time, and the next index goes out
        # when it is handed over, so a step is the worker's batch plus the pin thread's: worker 10, 30 ms alternating,
        # pin thread 5 ms then 15 ms alternating -> steps 15, 45 ms alternating (batch 0: 10 + 5; 1: 30 + 15; ...)
        starts = {}
        r = run(Dispatch(workers=1, prefetch_factor=1, cv=0.0, pin_s=0.0, loop_s=0.0), steps=202, warmup=1,
                starts=starts, batch_series=[[0.010, 0.030]], pin_series=[0.005, 0.015])
        self.assertAlmostEqual(starts[1], 0.015)
        self.assertAlmostEqual(starts[2], 0.060)
        self.assertAlmostEqual(starts[3], 0.075)
        self.assertAlmostEqual(r["step_p90_s"], 0.045, places=9)
        self.assertAlmostEqual(r["batches_per_s"], 2 / 0.060, delta=0.01)   # 200 steps, 100 of each

    def test_out_of_order_share_by_hand(self):
        # two workers, one slot each, no pin thread or loop cost: worker 0 takes 10 ms a batch, worker 1 5 ms. Both
        # start at 0; batch 1 (worker 1) ends at 5, batch 0 at 10; the loop takes both at 10 and sends indices 2 and
        # 3, which end at 20 and 15; and so on. Every pair (2k, 2k+1) ends in the other order, every (2k+1, 2k+2) in
        # order: a share of 1/2
        r = run(Dispatch(workers=2, prefetch_factor=1, cv=0.0, pin_s=0.0, loop_s=0.0), steps=101, warmup=0,
                batch_series=[[0.010], [0.005]])
        self.assertAlmostEqual(r["out_of_order"], 0.5, places=2)
        # equal workers that start together end their pairs together: none counts as out of order (ties are in order)
        r = run(Dispatch(workers=2, prefetch_factor=1, cv=0.0, pin_s=0.0, loop_s=0.0), steps=101, warmup=0,
                batch_series=[[0.010], [0.010]])
        self.assertEqual(r["out_of_order"], 0.0)

    def test_the_put_at_the_batchs_pace(self):
        # the same worker (10, 30 ms; mean 20) with a 4 ms put at each batch's pace: 2 ms after the 10 ms batch, 6 ms
        # after the 30 ms one, so batch 1 starts at 10 + 2 + 5 = 17 ms, batch 2 at 17 + 30 + 6 + 15 = 68 ms
        self.assertAlmostEqual(paced_send_s(0.004, 0.010, 0.020), 0.002)
        self.assertAlmostEqual(paced_send_s(0.004, 0.030, 0.020), 0.006)
        starts = {}
        run(Dispatch(workers=1, prefetch_factor=1, cv=0.0, pin_s=0.0, loop_s=0.0, send_s=0.004, send_at_pace=True),
            steps=20, warmup=1, starts=starts, batch_series=[[0.010, 0.030]], pin_series=[0.005, 0.015])
        self.assertAlmostEqual(starts[1], 0.017)
        self.assertAlmostEqual(starts[2], 0.068)

    def test_a_cases_series_from_its_timeline(self):
        # 2 workers; the loop's steady window from step 1 (skip 1): pin calls ending at 0.04 (before), 0.06, 0.08,
        # 0.11 -> cycles 20, 30 ms; the loop's own time from each return to its next call: 1, 3 ms -> median 3
        tl = {"skip": 1,
              "workers": {"0": [[0.0, 0.02], [0.05, 0.07]], "1": [[0.0, 0.03]]},
              "pin": [[0.03, 0.04], [0.05, 0.06], [0.07, 0.08], [0.10, 0.11]],
              "main": {"next_start": [0.0, 0.05, 0.081, 0.111], "next_end": [0.045, 0.08, 0.108, 0.112]}}
        got = case_series(tl, 2)
        self.assertEqual(len(got["walls"][0]), 2)
        self.assertAlmostEqual(got["walls"][1][0], 0.03)
        self.assertEqual(len(got["pin_cycles"]), 2)
        self.assertAlmostEqual(got["pin_cycles"][0], 0.02)
        self.assertAlmostEqual(got["pin_cycles"][1], 0.03)
        self.assertAlmostEqual(got["loop_s"], 0.003)

    def test_pin_series_modes(self):
        cycles = [0.010, 0.020, 0.030]
        rng = random.Random(1)
        self.assertEqual(pin_series_for(cycles, "measured", rng), cycles)
        self.assertEqual(sorted(pin_series_for(cycles, "shuffled", rng)), cycles)
        self.assertEqual(pin_series_for(cycles, "constant", rng), [0.020])
        drawn = pin_series_for(cycles * 2000, "lognormal", rng)
        self.assertAlmostEqual(sum(drawn) / len(drawn), 0.020, delta=0.0005)   # mean kept
        with self.assertRaises(ValueError):
            pin_series_for(cycles, "none", rng)
        # the pin thread's CPU a batch as its service time, whatever the cycles (which hold its waits too)
        self.assertEqual(pin_series_for(cycles, "cpu", rng, 0.018), [0.018])
        with self.assertRaises(ValueError):
            pin_series_for(cycles, "cpu", rng)

    def test_backlog_service_by_hand(self):
        # one worker whose batches all collated at 0 (so each waits well over the margin), a pin thread ending its
        # calls every 20 ms from 0.1 s: 29 cycles of 20 ms over the window; with a batch collated after the previous
        # call's end the cycle holds a wait and is left out
        pins = [[0.1 + 0.02 * i - 0.005, 0.1 + 0.02 * i] for i in range(30)]
        tl = {"skip": 0, "main": {"next_start": [0.0]}, "pin": pins, "pin_received": [[i, p[0]] for i, p in
                                                                                        enumerate(pins)],
              "workers": {"0": [[0.0, 0.0] for _ in range(30)]}}
        self.assertAlmostEqual(backlog_service_s(tl, 1), 0.020)
        # batch 29 collated at 0.655 s, under the 8 ms margin before call 28's end (0.66 s): its cycle is left out
        tl["workers"]["0"][29] = [0.0, 0.655]
        self.assertAlmostEqual(backlog_service_s(tl, 1), 0.020)
        self.assertIsNone(backlog_service_s(tl, 1, min_batches=29))
        self.assertIsNone(backlog_service_s({"pin": [], "pin_received": []}, 1))

    def test_replay_case_needs_a_pinned_timeline(self):
        self.assertIsNone(replay_case({"knobs": {"pin_memory": False, "num_workers": 2}, "measured": {}}, "measured"))

    def test_ou_step_keeps_or_redraws(self):
        self.assertAlmostEqual(ou_log_speed(0.2, 0.0, 1.0, 0.1, 5.0), 0.2)      # no time: no move
        self.assertAlmostEqual(ou_log_speed(0.2, 1.0, 0.0, 0.1, 0.5), 0.05)     # no correlation: sigma * z


if __name__ == "__main__":
    unittest.main()
