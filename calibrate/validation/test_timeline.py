#!/usr/bin/env python3
"""timeline_analysis.analyse against a hand-made timeline (plain Python, no torch)."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pipeplan_probe as P  # noqa: E402
import timeline_analysis as T  # noqa: E402


class TimelineTest(unittest.TestCase):
    def test_hand_made_two_workers(self):
        # 2 workers, prefetch_factor 1: batch j on worker j % 2; the index of batch j leaves when
        # the loop takes batch j - 2. Worker 0 makes batches 0, 2, 4 in [0,1], [1,2], [3,4];
        # worker 1 makes 1, 3, 5 in [0,2], [2,4], [4,6]. The loop takes batch j at next_end[j].
        tl = {"skip": 1,
              "main": {"next_start": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
                       "next_end":   [1.0, 2.0, 3.0, 4.0, 4.0, 6.0],
                       "launched":   [1.0, 2.0, 3.0, 4.0, 4.0, 6.0],
                       "synced":     [1.0, 2.0, 3.0, 4.0, 4.0, 6.0]},
              "workers": {"0": [[0.0, 1.0], [1.0, 2.0], [3.0, 4.0]],
                          "1": [[0.0, 2.0], [2.0, 4.0], [4.0, 6.0]]}}
        r = T.analyse(tl, num_workers=2, prefetch_factor=1)
        # window [synced[0], synced[5]] = [1, 6], 5 s. Worker 0 busy [1,2] + [3,4] = 2 s -> 0.4;
        # its gap [2,3] waits for the index of batch 4, sent when the loop took batch 2 at t=3:
        # all of it index-starved. Worker 1 busy [2,4] + [4,6] + [1,2] = 5 s -> 1.0.
        self.assertAlmostEqual(r["busy_by_worker"][0], 0.4)
        self.assertAlmostEqual(r["busy_by_worker"][1], 1.0)
        self.assertAlmostEqual(r["worker_idle"], (0.2 + 0.0) / 2)
        self.assertAlmostEqual(r["worker_index_starved"], (0.2 + 0.0) / 2)
        # steps 1..5: batch 1 done at 2 (asked at 1: late), 2 done 2 (asked 2), 3 done 4 (asked 3:
        # late), 4 done 4 (asked 4), 5 done 6 (asked 5: late) -> 3 of 5 wait on a worker
        self.assertAlmostEqual(r["steps_waiting_on_a_worker"], 0.6)
        self.assertAlmostEqual(r["delivery_s"]["max"], 1.0)    # batch 2: ready at 2, taken at 3
        # batches 1..5 finished at 2, 2, 4, 4, 6: never one before the batch ahead of it (ties are in order)
        self.assertEqual(r["out_of_order_share"], 0.0)
        # out of order, a batch goes to the next worker with a free slot: who made batch j is unknown, so
        # nothing that needs it is given; the workers' own busy shares stay
        u = T.analyse(tl, num_workers=2, prefetch_factor=1, in_order=False)
        self.assertAlmostEqual(u["busy_by_worker"][0], 0.4)
        for key in ("out_of_order_share", "worker_index_starved", "delivery_s", "steps_waiting_on_a_worker"):
            self.assertIsNone(u[key], key)

    def test_loop_between_batches_by_hand(self):
        # steady steps from index 1: the loop asks for batch j+1 at next_start[j+1] after receiving
        # batch j at next_end[j]: 1.3-1.2, 2.5-2.0, 3.2-3.0 -> 0.1, 0.5, 0.2 -> median 0.2
        tl = {"skip": 1, "main": {"next_start": [0.0, 1.0, 1.3, 2.5, 3.2],
                                  "next_end": [0.5, 1.2, 2.0, 3.0, 3.5]}}
        self.assertAlmostEqual(T.loop_s_between_batches(tl), 0.2)
        tl["skip"] = 4
        self.assertIsNone(T.loop_s_between_batches(tl))

    def test_without_common_mode_as_calibrate(self):
        # four workers with the same batches at the same times (durations 1.0 and 1.5 alternating):
        # everything is shared -> every batch at the overall mean rate, sqrt(1.5) (calibrate's test)
        iv, t = [], 0.0
        for d in (1.0, 1.5, 1.0, 1.5, 1.0, 1.5):
            iv.append((t, t + d))
            t += d
        out = T.without_common_mode([iv] * 4)
        for w in out:
            for d in w:
                self.assertAlmostEqual(d, math.sqrt(1.5))
        self.assertAlmostEqual(T.core_wander(out)["cv"], 0.0)
        # two workers, one steady, one alternating: worker 1's batch [0, 1] (y 0) against worker 0's
        # rate over [0, 1] (y -ln 2, one batch of 2 s): own = (0 + ln 2) * sqrt(1/2)
        out = T.without_common_mode([[(0.0, 2.0), (2.0, 4.0)], [(0.0, 1.0), (1.0, 3.0), (3.0, 4.0)]])
        ys = [-math.log(2.0), -math.log(2.0), 0.0, -math.log(2.0), 0.0]
        y_mean = sum(ys) / 5
        self.assertAlmostEqual(-math.log(out[1][0]) - y_mean, math.log(2.0) * math.sqrt(0.5))

    def test_out_of_order_share_by_hand(self):
        # pairs with both times known: (1, 3) in order, (3, 2) swapped, (2, 4) in order; 4 -> None and
        # None -> 5 are left out: 1 of 3
        self.assertAlmostEqual(T.out_of_order_share([1.0, 3.0, 2.0, 4.0, None, 5.0]), 1 / 3)
        self.assertIsNone(T.out_of_order_share([1.0]))

    def test_worker_spread_less_the_batch_noise(self):
        # w0 batches 0.5, 1.5, 0.5, 1.5 (mean 1, variance 0.25), w1 the same + 1 (mean 2): means
        # spread 0.5 around 1.5 (variance 0.25), noise 0.25 / 4 per worker -> sqrt(0.1875) / 1.5
        r = P.worker_spread([[4, 4.0, 0.25 + 2.25 + 0.25 + 2.25], [4, 8.0, 2.25 + 6.25 + 2.25 + 6.25]])
        self.assertAlmostEqual(r["worker_spread_cv"], 0.1875 ** 0.5 / 1.5)
        self.assertAlmostEqual(r["worker_spread_cv_raw"], 0.5 / 1.5)
        self.assertEqual(r["batch_busy_by_worker_s"], [1.0, 2.0])
        self.assertIsNone(P.worker_spread([[4, 4.0, 5.0], [1, 2.0, 4.0]]))   # one worker with 2+ batches

    def test_core_wander_as_calibrate_reads_it(self):
        # one worker, log rates (2, 1, -1, -2) x 0.01 around a common level: lag-one
        # autocorrelation (2 - 1 + 2) / (4 + 1 + 1) = 0.5 (calibrate's CoreWander test)
        d = [math.exp(-0.01 * y) for y in (2.0, 1.0, -1.0, -2.0)]
        w = T.core_wander([d])
        self.assertAlmostEqual(w["lag_one_autocorrelation"], 0.5)
        self.assertAlmostEqual(w["correlation_s"], -(sum(d) / 4) / math.log(0.5))
        self.assertAlmostEqual(w["cv"], math.sqrt(math.expm1(1e-4 * (4 + 1 + 1 + 4) / 4)))

    def test_wander_shape_by_hand(self):
        # one worker, log speeds alternating +a, -a over 8 batches (mean 0): r_k = sum y_t y_t+k / sum y^2 =
        # (-1)^k (8 - k) / 8
        a = 0.1
        d = [math.exp(-a if t % 2 == 0 else a) for t in range(8)]
        w = T.wander_shape([d])
        self.assertAlmostEqual(w["autocorrelation_by_lag"]["1"], -7 / 8)
        self.assertAlmostEqual(w["autocorrelation_by_lag"]["2"], 6 / 8)
        self.assertAlmostEqual(w["autocorrelation_by_lag"]["4"], 4 / 8)
        self.assertIsNone(w["log_speed_fast_side"])   # fewer than ten batches
        # ten batches, nine at one speed and one fast by 1.0 in log speed: y = -0.1 (x9), 0.9 less the mean 0.1;
        # deciles (exclusive, positions 1.1 and 9.9 of 10): p10 -0.1, p90 -0.1 + 0.9 x 1.0 = 0.8, median -0.1
        d = [1.0] * 9 + [math.exp(-1.0)]
        w = T.wander_shape([d])
        self.assertAlmostEqual(w["log_speed_fast_side"], 0.9)
        self.assertAlmostEqual(w["log_speed_slow_side"], 0.0)
        # lag 4 needs six batches of a worker: a worker of three counts for no lag but lag one
        w = T.wander_shape([[1.0, 2.0, 1.0]])
        self.assertIsNotNone(w["autocorrelation_by_lag"]["1"])
        self.assertIsNone(w["autocorrelation_by_lag"]["2"])
        self.assertIsNone(w["autocorrelation_by_lag"]["4"])
        self.assertIn("log_speed_fast_side", T.core_wander([d]))   # core_wander carries the shape

    def test_common_share_tells_a_machine_wide_spell_from_each_workers_own(self):
        # two workers, back-to-back batches of equal slots. Machine-wide: both have the same
        # duration in every slot (alternating 1 and 2 s, slots aligned) -> share 1. Own: worker 1's
        # slow batches fall where worker 0's are fast -> the same time sees opposite speeds: share -1.
        def worker(durations):
            t, iv = 0.0, []
            for d in durations:
                iv.append((t, t + d))
                t += d
            return iv
        pattern = [1.0, 1.0, 2.0, 2.0] * 6
        both = T.common_share([worker(pattern), worker(pattern)])
        self.assertAlmostEqual(both["share"], 1.0, places=6)
        self.assertAlmostEqual(both["corr"], 1.0, places=6)
        # worker 1: 2, 2, 1, 1, ... runs in anti-phase: over each 6 s both complete a 1+1+2+2 cycle
        # shifted by half a cycle; its slow batches overlap worker 0's fast ones
        opposite = T.common_share([worker(pattern), worker([2.0, 2.0, 1.0, 1.0] * 6)])
        self.assertLess(opposite["share"], -0.5)
        self.assertIsNone(T.common_share([worker(pattern)]))             # one worker: nothing to share

    def test_two_speed_states_finds_two_speeds_and_not_one_bump(self):
        # deterministic samples: a fast state (1 s) 60% of batches and a slow one (1.3 s) 40%, each with
        # a small spread (normal quantiles, sd 0.02 in log); then one normal bump with the same total spread
        from statistics import NormalDist
        q = [NormalDist().inv_cdf((i + 0.5) / 150) for i in range(150)]
        fast = [math.exp(0.02 * q[int(i * 150 / 90)]) for i in range(90)]
        slow = [1.3 * math.exp(0.02 * q[int(i * 150 / 60)]) for i in range(60)]
        r = T.two_speed_states(fast + slow)
        self.assertGreater(r["delta_bic"], 100)
        self.assertAlmostEqual(r["slow_share"], 0.4, places=2)
        self.assertAlmostEqual(r["fast_over_slow"], 1.3, places=2)
        sd = math.sqrt(0.4 * 0.6) * math.log(1.3)                       # the two-speed set's log sd
        bump = T.two_speed_states([math.exp(sd * z) for z in q])
        self.assertLess(bump["delta_bic"], 10)
        self.assertIsNone(T.two_speed_states([1.0] * 10))               # too few batches

    def test_refuses_a_timeline_that_does_not_match_the_workers(self):
        tl = {"skip": 1, "main": {"next_start": [0, 1, 2], "next_end": [1, 2, 3], "launched": [1, 2, 3],
                                  "synced": [1, 2, 3]}, "workers": {"0": [[0, 1]]}}
        self.assertIsNone(T.analyse(tl, num_workers=2, prefetch_factor=1))


class IndexRoundTrip(unittest.TestCase):
    def test_hand_made_two_workers(self):
        # two workers, prefetch 2: batch j's take sends index j + 4 to worker j % 2. Worker 0 holds batches 0, 2, 4;
        # worker 1 holds 1, 3, 5. The loop takes batch 0 at 1.0 s: worker 0's batch 2 ended at 0.9 (idle), and its
        # batch 4 starts at 1.0003: 0.3 ms. Batch 1 taken at 1.1: worker 1's batch 3 ends at 1.2 (still busy): not
        # counted. Later takes have no batch j + 4 in the lists.
        tl = {"main": {"next_end": [1.0, 1.1, 1.2, 1.3]},
              "workers": {"0": [[0.0, 0.5], [0.5, 0.9], [1.0003, 1.5]],
                          "1": [[0.0, 0.6], [0.6, 1.2], [1.2, 1.7]]}}
        rt = T.index_round_trip_s(tl, 2)
        self.assertEqual(len(rt), 1)
        self.assertAlmostEqual(rt[0], 0.0003)

    def test_no_data(self):
        self.assertEqual(T.index_round_trip_s({}, 2), [])
        self.assertEqual(T.index_round_trip_s({"main": {"next_end": [1.0]}, "workers": {"0": [[0, 1]]}}, 0), [])


class PinOverlap(unittest.TestCase):
    def test_hand_example(self):
        # steps of 10 s: next() at 0, batch in hand at 4 (wait 4), launches until 8 (host 4), sync to 10
        starts = [0.0, 10.0, 20.0, 30.0]
        ends = [4.0, 14.0, 24.0, 34.0]
        launched = [8.0, 18.0, 28.0, 38.0]
        synced = [10.0, 20.0, 30.0, 40.0]
        tl = {"skip": 1, "main": {"next_start": starts, "next_end": ends, "launched": launched, "synced": synced},
              # window [10, 40]: a copy inside a wait (11-13), one across a wait and the host work (13-16: 1 s
              # wait, 2 s host), one in the sync (38.5-39.5), one before the window (2-3: left out)
              "pin": [[2.0, 3.0], [11.0, 13.0], [13.0, 16.0], [38.5, 39.5]]}
        r = T.pin_overlap(tl)
        self.assertAlmostEqual(r["pin_s"], 6.0)
        self.assertAlmostEqual(r["pin_busy_share"], 6.0 / 30.0)
        self.assertAlmostEqual(r["pin_during_wait_share"], 3.0 / 6.0)
        self.assertAlmostEqual(r["pin_during_host_share"], 2.0 / 6.0)
        self.assertAlmostEqual(r["host_share_of_window"], 12.0 / 30.0)
        self.assertAlmostEqual(r["wait_share_of_window"], 12.0 / 30.0)

    def test_without_pin_intervals(self):
        tl = {"skip": 1, "main": {"next_start": [0.0, 1.0], "next_end": [0.5, 1.5], "launched": [0.8, 1.8],
                                  "synced": [1.0, 2.0]}}
        self.assertIsNone(T.pin_overlap(tl))


class WaitingSteps(unittest.TestCase):
    def test_one_wait_a_round_of_eight(self):
        # 8 workers in step: a 70 ms wait every 8th step, 30 ms of loop each step. Steps from the skip (2) on:
        # 16 steps, 2 of them waiting -> 12.5%; the mean step (30 x 16 + 70 x 2) / 16 = 38.75 ms, a quarter of it
        # 9.7 ms: the 2 ms waits of the others do not count
        starts, ends, t = [], [], 0.0
        for j in range(19):
            wait = 0.070 if j % 8 == 7 else 0.002
            starts.append(t)
            ends.append(t + wait)
            t += wait + 0.030 - (0.002 if wait == 0.002 else 0.0)
        tl = {"skip": 2, "main": {"next_start": starts, "next_end": ends}}
        self.assertAlmostEqual(T.waiting_step_share(tl), 2 / 16)
        # a stricter threshold (over 3x the mean step) counts none
        self.assertEqual(T.waiting_step_share(tl, fraction=3.0), 0.0)
        # too few steady steps: no figure
        self.assertIsNone(T.waiting_step_share({"skip": 17, "main": {"next_start": starts, "next_end": ends}}))


class P90Halves(unittest.TestCase):
    def test_a_window_whose_long_steps_all_fall_in_one_half(self):
        # 40 steady steps of 10 ms, then 40 whose every 5th is 30 ms (the rest 10 ms), after a skip of 3 steps.
        # First half: all 10 ms -> p90 10 ms. Second half: 8 of 40 at 30 ms (20%), so its p90 (numpy 'linear',
        # rank 0.9 x 39 = 35.1 of the sorted 32 x 10 ms then 8 x 30 ms) is 30 ms. Difference 20 over a mean of 20.
        steps = [0.010] * 3 + [0.010] * 40 + [0.030 if j % 5 == 4 else 0.010 for j in range(40)]
        starts = [0.0]
        for s in steps:
            starts.append(starts[-1] + s)
        r = T.p90_step_halves({"skip": 3, "main": {"next_start": starts}})
        self.assertAlmostEqual(r["first_p90_s"], 0.010)
        self.assertAlmostEqual(r["second_p90_s"], 0.030)
        self.assertAlmostEqual(r["rel_diff"], 1.0)
        self.assertEqual(r["steps_per_half"], 40)
        # steady steps spread evenly: the halves agree
        even = [0.0]
        for j in range(83):
            even.append(even[-1] + (0.030 if j % 5 == 4 else 0.010))
        self.assertAlmostEqual(T.p90_step_halves({"skip": 3, "main": {"next_start": even}})["rel_diff"], 0.0)
        # fewer than 20 steps a half: no figure
        self.assertIsNone(T.p90_step_halves({"skip": 3, "main": {"next_start": starts[:42]}}))

    def test_the_pure_halves_of_a_step_list_as_the_harness_keeps_them(self):
        # the same second window as a plain list of step times (harness: the GPU-side intervals of every case):
        # 40 steps of 10 ms, then 40 whose every 5th is 30 ms -> p90s 10 and 30 ms, difference 1.0 of their mean;
        # an odd step at the end is left out so the halves are equal
        steps = [0.010] * 40 + [0.030 if j % 5 == 4 else 0.010 for j in range(40)] + [0.5]
        r = T.p90_halves(steps)
        self.assertAlmostEqual(r["first_p90_s"], 0.010)
        self.assertAlmostEqual(r["second_p90_s"], 0.030)
        self.assertAlmostEqual(r["rel_diff"], 1.0)
        self.assertEqual(r["steps_per_half"], 40)
        self.assertIsNone(T.p90_halves([0.010] * 39))

class LoopStall(unittest.TestCase):
    def test_each_batch_finished_in_a_step_adds_its_cost(self):
        # 12 steps of 10 s from t=0: batch in hand at 10j, host work 2 s plus 0.5 s for each worker batch finished
        # from 0.02 s before it to its end; batches: none, one or two a step in turn
        ends, launched, done = [], [], []
        for j in range(12):
            n = j % 3
            t = 10.0 * j
            done += [t + 0.1 + 0.1 * i for i in range(n)]
            ends.append(t)
            launched.append(t + 2.0 + 0.5 * n)
        tl = {"skip": 1, "main": {"next_end": ends, "launched": launched},
              "workers": {"0": [[d - 0.05, d] for d in done]}}
        r = T.loop_stall_per_batch(tl)
        self.assertEqual(r["steps"], 11)
        self.assertAlmostEqual(r["alone_s"], 2.0)
        self.assertAlmostEqual(r["stall_s_per_batch"], 0.5)
        self.assertAlmostEqual(r["batches_per_step"], sum(j % 3 for j in range(1, 12)) / 11)

    def test_too_few_steps_or_no_variation(self):
        tl = {"skip": 0, "main": {"next_end": [0.0, 1.0], "launched": [0.5, 1.5]}, "workers": {}}
        self.assertIsNone(T.loop_stall_per_batch(tl))
        tl = {"skip": 0, "main": {"next_end": [float(j) for j in range(12)], "launched": [j + 0.5 for j in range(12)]},
              "workers": {}}
        self.assertIsNone(T.loop_stall_per_batch(tl))              # no batch finished in any step: no slope


class StallLineTest(unittest.TestCase):
    def test_a_loop_at_a_quarter_speed_beside_the_work(self):
        # 12 loop steps, each 20 ms of its own work; the other thread works 0, 4 or 8 ms inside step j (j % 3), and
        # the loop makes a quarter of its progress meanwhile, so the step lasts 20 + 0.75 x overlap ms
        loop, work, t = [], [], 0.0
        for j in range(12):
            ov = 0.004 * (j % 3)
            d = 0.020 + 0.75 * ov
            if ov:
                work.append((t + 0.001, t + 0.001 + ov))
            loop.append((t, t + d))
            t += d + 0.005                                   # a gap between steps: work there is not counted
            work.append((t - 0.004, t - 0.001))
        r = T.stall_line(loop, work)
        self.assertEqual(r["steps"], 12)
        self.assertAlmostEqual(r["base_s"], 0.020)
        self.assertAlmostEqual(r["slope"], 0.75)
        self.assertAlmostEqual(r["overlap_s_per_step"], 0.004)  # 0, 4, 8 ms in turn

    def test_a_span_straddling_two_steps_counts_in_each(self):
        loop = [(float(j), j + 0.5) for j in range(10)] + [(10.0, 11.0)]
        r = T.stall_line(loop, [(0.25, 1.25)] + [(j + 0.1, j + 0.2) for j in range(2, 11)], min_steps=11)
        # step 0 overlaps [0.25, 0.5], step 1 [1.0, 1.25]; steps 2-10 one 0.1 s span each
        self.assertEqual(r["steps"], 11)
        self.assertAlmostEqual(r["overlap_s_per_step"], (0.25 + 0.25 + 9 * 0.1) / 11)

    def test_too_few_steps_or_no_variation(self):
        self.assertIsNone(T.stall_line([(0.0, 1.0)] * 5, [(0.1, 0.2)]))
        self.assertIsNone(T.stall_line([(float(j), j + 0.5) for j in range(12)], []))   # never any overlap

    def test_from_a_timeline(self):
        ends = [0.1 * j for j in range(12)]
        launched = [e + 0.02 + (0.75 * 0.01 if j % 2 else 0.0) for j, e in enumerate(ends)]
        pin = [(e + 0.005, e + 0.015) for j, e in enumerate(ends) if j % 2]
        tl = {"skip": 3, "main": {"next_end": ends, "launched": launched}, "pin": pin}
        self.assertIsNone(T.loop_stall_per_pin_overlap(tl))     # 9 steps after the skip: too few for a line
        tl["skip"] = 0
        r = T.loop_stall_per_pin_overlap(tl)
        self.assertAlmostEqual(r["slope"], 0.75)
        self.assertAlmostEqual(r["base_s"], 0.02)
        self.assertIsNone(T.loop_stall_per_pin_overlap({"skip": 0, "main": tl["main"]}))

class SyncWaitSpells(unittest.TestCase):
    def timeline(self, waits, skip=2):
        launched = [float(i) for i in range(len(waits))]
        return {"skip": skip, "main": {"launched": launched, "synced": [l + w for l, w in zip(launched, waits)]}}

    def test_spells_by_hand(self):
        # 2 warm-up steps, then 30 steps: 10 ms waits with one spell of 5 steps at 11.5 ms (1.5 ms over the median):
        # long share 5/30, longest run 5; the waits' mean 10.25 ms, variance 0.3125 ms^2, and the lag-one sum has 4
        # pairs inside the spell (+1.25 x +1.25 ms), 2 at its edges (-0.25 x +1.25) and 23 outside (+0.0625):
        # (6.25 - 0.625 + 1.4375) / 29 / 0.3125 = 0.779
        waits = [0.05, 0.05] + [0.010] * 10 + [0.0115] * 5 + [0.010] * 15
        s = T.sync_wait_spells(self.timeline(waits))
        self.assertEqual(s["steps"], 30)
        self.assertAlmostEqual(s["p50_s"], 0.010)
        self.assertAlmostEqual(s["p90_s"], 0.0115)
        self.assertAlmostEqual(s["long_share"], 5 / 30)
        self.assertEqual(s["longest_run"], 5)
        self.assertAlmostEqual(s["lag_one"], (6.25 - 0.625 + 1.4375) / 29 / 0.3125, places=6)
        # the same five long steps spread apart: no run, and the autocorrelation falls below zero
        spread = [0.05, 0.05] + ([0.010] * 5 + [0.0115]) * 5
        s = T.sync_wait_spells(self.timeline(spread))
        self.assertEqual(s["longest_run"], 1)
        self.assertLess(s["lag_one"], 0.0)

    def test_none_without_enough_synced_steps(self):
        self.assertIsNone(T.sync_wait_spells(self.timeline([0.01] * 21)))   # 19 after the skip
        self.assertIsNone(T.sync_wait_spells({"skip": 0, "main": {"next_start": [0.0]}}))


class BatchCpuSplitTest(unittest.TestCase):
    def test_a_slow_core_shows_between_cpus_and_on_the_core(self):
        # two workers, each 12 batches of 1 s wall; worker "0" runs its first 6 on CPU 3 and its last 6 on CPU 5,
        # worker "1" its first 6 on CPU 5 and its last 6 on CPU 3. CPU 5 is slow: its batches take 1.5 s, all of it
        # on the core (CPU seconds = wall); CPU 3's take 1 s, 0.9 s of it on the core.
        workers, cpu = {"0": [], "1": []}, {"0": [], "1": []}
        for w, first, second in (("0", 3, 5), ("1", 5, 3)):
            t = 0.0
            for k in range(12):
                c = first if k < 6 else second
                wall = 1.5 if c == 5 else 1.0
                workers[w].append([t, t + wall])
                cpu[w].append([wall if c == 5 else 0.9, c, c])
                t += wall
        r = T.batch_cpu_split(workers, cpu, 0.0, 100.0)
        self.assertEqual(r["batches"], 24)
        # off the core: 12 x 0.1 s of 12 x 1 + 12 x 1.5 = 30 s of wall
        self.assertAlmostEqual(r["off_core_share"], 1.2 / 30.0)
        # the slowest tenth (the longest 3 of 24 batches: from rank int(0.9 x 24) = 21 on, all CPU 5's) ran on the
        # core the whole time; the other 21 (9 of 1.5 s, 12 of 1 s) average 25.5 / 21 s
        self.assertAlmostEqual(r["slowest_tenth_on_core"], 1.0)
        self.assertAlmostEqual(r["rest_on_core"], (9 * 1.5 + 12 * 0.9) / 25.5)
        self.assertAlmostEqual(r["slowest_tenth_over_rest"], 1.5 / (25.5 / 21))
        # between CPUs: means 1.0 and 1.5, cv = 0.25 / 1.25; between workers: both 1.25, no spread
        self.assertAlmostEqual(r["spread_between_cpus_cv"], 0.2)
        self.assertAlmostEqual(r["spread_between_workers_cv"], 0.0)
        self.assertAlmostEqual(r["moved_within_batch_share"], 0.0)
        self.assertAlmostEqual(r["new_cpu_share"], 2 / 24)   # each worker changed CPU once

    def test_the_worker_threads_cpu_between_batches(self):
        # worker 0: batches of 1 s wall and 0.9 s CPU, 0.5 s apart; its thread's CPU clock at each start 10.0, 10.95,
        # 11.9: 0.05 s of CPU between batches (the clock ran 0.95 s from one start to the next, 0.9 of it in the
        # batch). Worker 1's entries are the older three-field kind: left out. The window [0, 4] holds worker 0's
        # three batches, so two pairs.
        workers = {"0": [[0.0, 1.0], [1.5, 2.5], [3.0, 4.0]], "1": [[0.0, 1.0], [1.2, 2.2]]}
        cpu = {"0": [[0.9, 0, 0, 10.0], [0.9, 0, 0, 10.95], [0.9, 0, 0, 11.9]], "1": [[0.9, 1, 1], [0.9, 1, 1]]}
        r = T.between_batches_cpu(workers, cpu, 0.0, 4.0)
        self.assertEqual(r["pairs"], 2)
        self.assertAlmostEqual(r["cpu_s_median"], 0.05)
        self.assertAlmostEqual(r["wall_s_median"], 0.5)
        # the last batch past the window's end: one pair; none with three-field entries only
        self.assertEqual(T.between_batches_cpu(workers, cpu, 0.0, 3.5)["pairs"], 1)
        self.assertIsNone(T.between_batches_cpu({"1": workers["1"]}, {"1": cpu["1"]}, 0.0, 4.0))
        # a start clock of -1 (a batch the harness saw end without its start) breaks the pair
        cpu["0"][1][3] = -1.0
        self.assertIsNone(T.between_batches_cpu(workers, cpu, 0.0, 4.0))

    def test_batches_outside_the_window_or_without_cpu_data_are_left_out(self):
        workers = {"0": [[float(k), k + 1.0] for k in range(12)]}
        cpu = {"0": [[1.0, 0, 1]] * 12}   # each batch began on CPU 0 and ended on CPU 1
        r = T.batch_cpu_split(workers, cpu, 1.0, 11.0)
        self.assertEqual(r["batches"], 10)
        self.assertAlmostEqual(r["moved_within_batch_share"], 1.0)
        self.assertIsNone(r["spread_between_cpus_cv"])   # no batch stayed on one CPU
        self.assertIsNone(T.batch_cpu_split(workers, {}, 0.0, 100.0))


class InterleavedStallRate(unittest.TestCase):
    def test_drift_cancels_between_neighbours(self):
        # The loop drifts: its step alone is 20 ms + 1 ms per block. Beside the helper it also loses 0.75 ms per ms
        # of the helper's work inside the step, and the helper works 8 ms of each step. Blocks of 4 steps,
        # A B A B A: the beside blocks (index 1 and 3) take 21 + 6 and 23 + 6 ms a step; their neighbours' means are
        # (20 + 22) / 2 = 21 and (22 + 24) / 2 = 23, so each excess is 6 ms over 8 ms of overlap: 0.75.
        # Without the interleaving (all beside against the first alone block) the drift would read 7 ms: 0.875.
        blocks, work, t = [], [], 0.0
        for i in range(5):
            beside = i % 2 == 1
            step = 0.020 + 0.001 * i + (0.75 * 0.008 if beside else 0.0)
            spans = []
            for j in range(4):
                spans.append((t, t + step))
                if beside:
                    work.append((t + 0.001, t + 0.009))    # 8 ms inside the step
                t += step + 0.002                          # a gap between steps (the loss.item() wait)
            if beside:
                # the helper finishes the batch it took last as the next (alone) block begins: that block's first
                # step overlaps it and is left out of the alone mean
                work.append((t + 0.001, t + 0.004))
            blocks.append({"beside": beside, "spans": spans})
        r = T.interleaved_stall_rate(blocks, work)
        self.assertAlmostEqual(r["rate"], 0.75)
        self.assertEqual(r["blocks"], 2)
        for rate in r["block_rates"]:
            self.assertAlmostEqual(rate, 0.75)
        self.assertAlmostEqual(r["overlap_s_per_step"], 0.008)
        self.assertAlmostEqual(r["alone_s"], 0.022)
        # a beside block without an alone block after it counts nothing; no alone blocks at all: no figure
        self.assertEqual(T.interleaved_stall_rate(blocks[:4], work)["blocks"], 1)
        self.assertIsNone(T.interleaved_stall_rate([b for b in blocks if b["beside"]], work))
        # no work inside the beside steps: no rate
        self.assertIsNone(T.interleaved_stall_rate(blocks, []))

    def test_interleaved_host_ratio_by_hand(self):
        # The loop drifts 1 ms a block (20, 21, 22, ... ms alone) and runs 5% slower beside the workers. Each alone
        # block's first two steps still have the workers busy (finishing the batches the beside block asked for)
        # and run 30 ms: they are left out. Beside block 1: 21 x 1.05 over (20 + 22) / 2 = 21 -> 1.05; block 3 the
        # same over 23. Against the first alone block alone the drift would read 22.05 / 20 = 1.10.
        blocks, t = [], 0.0
        for i in range(5):
            beside = i % 2 == 1
            steps = []
            for j in range(6):
                if beside:
                    d, busy = (0.020 + 0.001 * i) * 1.05, 6.5
                elif j < 2 and i > 0:
                    d, busy = 0.030, 3.0
                else:
                    d, busy = 0.020 + 0.001 * i, 0.02
                steps.append((t, t + d, busy))
                t += d + 0.002
            blocks.append({"beside": beside, "steps": steps})
        r = T.interleaved_host_ratio(blocks)
        self.assertAlmostEqual(r["ratio"], 1.05)
        self.assertEqual(r["blocks"], 2)
        for x in r["block_ratios"]:
            self.assertAlmostEqual(x, 1.05)
        self.assertAlmostEqual(r["alone_s"], 0.022)
        self.assertAlmostEqual(r["beside_busy_workers"], 6.5)
        self.assertEqual(r["alone_clear_steps"], 6 + 4 + 4)
        # without CPU readings an alone block keeps its second half: here that is its clear steps anyway
        bare = [{"beside": b["beside"], "steps": [(s, e, None) for s, e, _ in b["steps"]]} for b in blocks]
        self.assertAlmostEqual(T.interleaved_host_ratio(bare)["ratio"], 1.05)
        self.assertIsNone(T.interleaved_host_ratio(bare)["beside_busy_workers"])
        # an alone neighbour with fewer than min_clear idle steps cannot be a base; no alone blocks: no figure
        self.assertIsNone(T.interleaved_host_ratio(blocks, min_clear=5))   # blocks 2 and 4 have 4 clear steps
        self.assertEqual(T.interleaved_host_ratio(blocks[:3] + [blocks[0]], min_clear=4)["blocks"], 1)
        self.assertIsNone(T.interleaved_host_ratio([b for b in blocks if b["beside"]]))

    def test_span_overlaps_by_hand(self):
        # work [1, 3] and [5, 6]; loop spans [0, 2] -> 1, [2, 5.5] -> 1 + 0.5, [7, 8] -> 0
        self.assertEqual(T.span_overlaps([(0, 2), (2, 5.5), (7, 8)], [(5, 6), (1, 3)]), [1.0, 1.5, 0.0])



class LeastSquaresLine(unittest.TestCase):
    def test_line_through_points_by_hand(self):
        # y = 2x + 1 at x = 0, 1, 2: means (1, 3), slope 2
        self.assertEqual(T.least_squares_line([0.0, 1.0, 2.0], [1.0, 3.0, 5.0], 3), (1.0, 3.0, 2.0))

    def test_none_for_an_x_that_never_varies_even_where_its_float_mean_misses_it(self):
        # fmean([0.4] * 3) is 0.4000000000000001: sxx came out about 1e-32, not 0, and the slope was noise (0.25)
        self.assertIsNone(T.least_squares_line([0.4, 0.4, 0.4], [0.1, 0.1, 0.1], 3))
        self.assertIsNone(T.least_squares_line([0.0, 1.0], [1.0, 3.0], 3))


class TraceBatches(unittest.TestCase):
    def test_a_replayed_batch_ends_at_its_collate_not_its_put(self):
        # worker 0's batch 0: loads and collate 0-20 ms, then its put 20-23 ms (a replayed batch's worker loop) and
        # the loop's part after the hand-off 23-24 ms (loader.worker_put_share below 1); the harness's timeline ends a
        # batch at its collate's return, so both are left out
        meta = [{"ph": "M", "name": "thread_name", "pid": 0, "tid": t, "args": {"name": n}}
                for t, n in ((1, "main thread (training loop)"), (3, "worker 0"))]
        ev = meta + [{"ph": "X", "pid": 0, "tid": 3, "name": "load+collate (replayed)", "ts": 0.0, "dur": 20e3,
                      "args": {"batch": 0}},
                     {"ph": "X", "pid": 0, "tid": 3, "name": T.PUT_SPAN, "ts": 20e3, "dur": 3e3,
                      "args": {"batch": 0}},
                     {"ph": "X", "pid": 0, "tid": 3, "name": T.AFTER_HANDOFF_SPAN, "ts": 23e3, "dur": 1e3,
                      "args": {"batch": 0}}]
        spans, _ = T.trace_batches(ev)
        self.assertEqual(list(spans), [(0, 0)])
        self.assertAlmostEqual(spans[(0, 0)][0], 0.0)
        self.assertAlmostEqual(spans[(0, 0)][1], 0.020)


if __name__ == "__main__":
    unittest.main()
