"""insitu_diagnostic's table base against the generated table's own inputs (run 20's GIL call, kept in the repo)."""
import json
import math
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402
import insitu_diagnostic as diag
import timeline_analysis  # noqa: E402

CALL = os.path.join(HERE, "results", "2026-11-30-h200-run20gil")


def lag_one(series):
    y = [math.log(v) for v in series]
    m = sum(y) / len(y)
    y = [v - m for v in y]
    return sum(y[t] * y[t + 1] for t in range(len(y) - 1)) / sum(v * v for v in y)


class Surrogates(unittest.TestCase):
    # a slow sine in log time, 64 batches, 4 periods: lag-one cos(2 pi 4 / 64) = 0.924 up to the end effect
    series = [math.exp(0.1 * math.sin(2 * math.pi * 4 * t / 64)) for t in range(64)]

    def test_worker_level_cv_takes_the_spread_of_the_means_less_their_sampling(self):
        # two steady workers at 1 s and 2 s: no spread within, so the level is all the means' spread:
        # var(0, ln 2) = ln(2)^2 / 2 in log, cv sqrt(exp(that) - 1)
        want = math.sqrt(math.exp(math.log(2) ** 2 / 2) - 1)
        self.assertAlmostEqual(diag.worker_level_cv([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]), want)
        # the same means, spread within each worker alone: no level
        self.assertEqual(diag.worker_level_cv([[1.0, 2.0, 1.0, 2.0], [2.0, 1.0, 2.0, 1.0]]), 0.0)
        # a worker with fewer than three batches does not count, and one worker has no spread across workers
        self.assertIsNone(diag.worker_level_cv([[1.0, 1.0, 1.0], [2.0, 2.0]]))

    def test_repeat_walls_take_the_donors_shape_at_this_cases_level(self):
        # this case's walls average 1 s; the donor's 8/3 s: its walls scaled by 3/8, each worker's kept apart
        out = diag.repeat_walls({0: [1.0, 1.0], 1: [1.0, 1.0]}, {0: [2.0, 4.0], 1: [2.0]})
        self.assertEqual(sorted(out), [0, 1])
        for got, want in zip(out[0] + out[1], [0.75, 1.5, 0.75]):
            self.assertAlmostEqual(got, want)

    def test_both_keep_the_values(self):
        for f in (diag.shuffled, diag.phase_randomized):
            self.assertEqual(sorted(f(self.series, random.Random(1))), sorted(self.series))

    def test_a_single_frequency_keeps_its_memory_under_new_phases(self):
        # one Fourier line: a new phase only shifts the sine, so the surrogate is the same sine shifted (its values
        # remapped by rank onto the original's): lag-one as the original's, up to the rank step (a shift off the
        # sampling grid takes values the grid's sine does not have: 0.903 against 0.924 for this seed)
        got = diag.phase_randomized(self.series, random.Random(3))
        self.assertAlmostEqual(lag_one(got), lag_one(self.series), delta=0.03)
        self.assertGreater(lag_one(self.series), 0.9)

    def test_shuffling_removes_the_memory(self):
        # over 20 shuffles the mean lag-one of a permutation is -1/(n-1) for any values: about -0.016 here
        r = [lag_one(diag.shuffled(self.series, random.Random(k))) for k in range(20)]
        self.assertLess(abs(sum(r) / len(r)), 0.1)

    def test_pooling_deals_all_values_back_in_each_workers_count(self):
        workers = [[1.0, 2.0, 3.0], [10.0, 20.0], [5.0]]
        got = diag.pooled(workers, random.Random(2))
        self.assertEqual([len(w) for w in got], [3, 2, 1])
        self.assertEqual(sorted(v for w in got for v in w), [1.0, 2.0, 3.0, 5.0, 10.0, 20.0])

    def test_lognormal_like_keeps_level_spread_and_memory(self):
        # 4,000 draws of an AR(1) in log time (lag-one 0.6, log sd 0.1 around ln 0.05): the surrogate's log mean, log
        # sd and lag-one come back within sampling error (sd of a lag-one estimate about 1 / sqrt(n) = 0.016)
        rng = random.Random(5)
        x, y = 0.0, []
        for _ in range(4000):
            y.append(math.log(0.05) + 0.1 * x)
            x = 0.6 * x + math.sqrt(1 - 0.36) * rng.gauss(0, 1)
        series = [math.exp(v) for v in y]
        for memory, want_lag in ((True, 0.6), (False, 0.0)):
            got = [math.log(v) for v in diag.lognormal_like(series, random.Random(9), memory)]
            mu = sum(got) / len(got)
            self.assertAlmostEqual(mu, math.log(0.05), delta=0.01)
            self.assertAlmostEqual(math.sqrt(sum((v - mu) ** 2 for v in got) / len(got)), 0.1, delta=0.01)
            self.assertAlmostEqual(lag_one([math.exp(v) for v in got]), want_lag, delta=0.06)

    def test_surrogate_replay_keeps_each_entry_and_its_count(self):
        replay = [{"worker": 0, "batch_s": [0.1, 0.2, 0.3, 0.4]}, {"worker": 1, "batch_s": [1.0, 2.0]}]
        for variant in diag.SURROGATES:
            got = diag.surrogate_replay(replay, variant, random.Random(4))
            self.assertEqual([r["worker"] for r in got], [0, 1], variant)
            self.assertEqual([len(r["batch_s"]) for r in got], [4, 2], variant)
        got = diag.surrogate_replay(replay, "replay-shuffled", random.Random(4))
        self.assertEqual(sorted(got[1]["batch_s"]), [1.0, 2.0])   # shuffled within its own worker

    def test_joint_phases_keep_the_workers_together(self):
        # two workers with the same series: one draw of phases for both gives both the same surrogate (their
        # correlation 1 kept); separate draws give two different ones. A third worker one batch longer keeps its
        # last batch at the end, as measured.
        longer = self.series + [2.0]
        got = diag.phase_randomized_joint([self.series, self.series, longer], random.Random(6))
        self.assertEqual(got[0], got[1])
        self.assertEqual(got[2][:64], got[0])
        self.assertEqual(got[2][64], 2.0)
        self.assertNotEqual(got[0], self.series)
        apart = [diag.phase_randomized(self.series, random.Random(k)) for k in (6, 7)]
        self.assertNotEqual(apart[0], apart[1])

    def test_wander_parts_fit_recovers_a_known_process(self):
        # 8 workers x 400 batches drawn from known parts (level share 0.2, fast 0.5 at lag-one 0.6, slow 0.3 at
        # 0.95): the grid fit over the pooled autocorrelation gives them back within sampling error
        truth = {"log_mean": math.log(0.08), "log_var": 0.02, "level_share": 0.2, "fast_share": 0.5,
                 "rho_fast": 0.6, "slow_share": 0.3, "rho_slow": 0.95}
        drawn = diag.wander_parts_surrogate([[1.0] * 400] * 8, truth, random.Random(11))
        got = diag.fit_wander_parts(drawn)
        self.assertAlmostEqual(got["log_mean"], truth["log_mean"], delta=0.05)
        self.assertAlmostEqual(got["log_var"], truth["log_var"], delta=0.006)
        self.assertAlmostEqual(got["rho_fast"], 0.6, delta=0.15)
        self.assertAlmostEqual(got["fast_share"], 0.5, delta=0.15)
        self.assertAlmostEqual(got["level_share"] + got["slow_share"], 0.5, delta=0.15)
        self.assertEqual([len(w) for w in drawn], [400] * 8)

    def test_parts_less_common_takes_from_slow_then_level_then_fast(self):
        fit = {"log_mean": 0.0, "log_var": 0.02, "level_share": 0.2, "fast_share": 0.5, "rho_fast": 0.6,
               "slow_share": 0.3, "rho_slow": 0.9}
        got = diag.parts_less_common(fit, 0.4)          # 0.3 from the slow part, 0.1 from the level
        self.assertAlmostEqual(got["slow_share"], 0.0)
        self.assertAlmostEqual(got["level_share"], 0.1)
        self.assertAlmostEqual(got["fast_share"], 0.5)
        self.assertAlmostEqual(got["common_share"], 0.4)
        self.assertAlmostEqual(diag.parts_less_common(fit, -0.2)["common_share"], 0.0)   # a negative share: none
        self.assertAlmostEqual(diag.parts_less_common(fit, 1.5)["common_share"], 0.95)   # capped below all
        self.assertEqual(fit["slow_share"], 0.3)                                         # the input is left alone

    def test_common_part_is_what_timeline_analysis_reads_back(self):
        # 8 workers in lockstep (batch k of every worker over [k, k + 1) s); a common share of 0.4 drawn, measured
        # back by timeline_analysis.common_share (cov with the other workers' mean over var): about 0.4; none: about 0
        fit = diag.parts_less_common({"log_mean": math.log(0.08), "log_var": 0.02, "level_share": 0.0,
                                      "fast_share": 0.6, "rho_fast": 0.3, "slow_share": 0.4, "rho_slow": 0.9}, 0.4)
        for share, want in ((fit, 0.4), (dict(fit, common_share=0.0, slow_share=0.4), 0.0)):
            drawn = diag.wander_parts_surrogate([[1.0] * 600] * 8, share, random.Random(5))
            intervals = [[(k + 0.5 - d / 2, k + 0.5 + d / 2) for k, d in enumerate(w)] for w in drawn]
            got = timeline_analysis.common_share(intervals)["share"]
            self.assertAlmostEqual(got, want, delta=0.08)

    def test_call_walls_leave_the_case_out_and_take_its_load_only(self):
        def case(kind, walls, status="ok"):
            return {"status": status, "knobs": {"kind": kind},
                    "measured": {"timeline": {"workers": {str(w): [[t, t + d] for t, d in enumerate(series)]
                                                          for w, series in enumerate(walls)}}}}
        me = case("image", [[0.1] * 10, [0.1] * 10])
        same = case("image", [[0.2] * 10, [0.4] * 10])            # mean 0.3: over it 2/3 and 4/3
        other_kind = case("tensor_f32", [[0.5] * 10, [0.5] * 10])
        short = case("image", [[0.3] * 5, [0.3] * 5])            # under 8 batches a worker: left out
        failed = case("image", [[0.3] * 10, [0.3] * 10], status="failed")
        got = diag.call_walls_less(me, [me, same, other_kind, short, failed])
        self.assertEqual(len(got), 2)
        self.assertAlmostEqual(got[0][0], 2 / 3)
        self.assertAlmostEqual(got[1][0], 4 / 3)
        self.assertEqual(diag.call_walls_less(me, [me]), [])

    def test_call_common_share_is_the_median_of_the_others(self):
        # three other image cases whose 4 workers slow together in steps (share 1), alone (about 0) and a mix; the
        # case itself (all together) is not counted
        rng = random.Random(2)
        def case(kind, shared):
            levels = [math.exp(0.2 * math.sin(k / 5.0)) for k in range(120)]
            workers = {}
            for w in range(4):
                own = [math.exp(rng.gauss(0.0, 0.2)) for _ in range(120)]
                series = [0.05 * (lv if shared == 1 else o if shared == 0 else math.sqrt(lv * o))
                          for lv, o in zip(levels, own)]
                workers[str(w)] = [[k + 0.5 - d / 2, k + 0.5 + d / 2] for k, d in enumerate(series)]
            return {"status": "ok", "knobs": {"kind": kind}, "measured": {"timeline": {"workers": workers}}}
        me, together, alone, mixed = case("image", 1), case("image", 1), case("image", 0), case("image", 0.5)
        got = diag.call_common_share_less(me, [me, together, alone, mixed, case("tokens", 1)])
        self.assertAlmostEqual(got, diag.case_common_share(mixed))
        self.assertIsNone(diag.call_common_share_less(me, [me]))

    def test_pooled_values_follow_the_drawn_ranks(self):
        drawn = [[3.0, 1.0], [2.0, 4.0]]
        measured = [[10.0, 40.0], [30.0, 20.0]]
        self.assertEqual(diag.with_pooled_values(drawn, measured), [[30.0, 10.0], [20.0, 40.0]])

    def test_wander_parts_in_the_simulators_two_parts(self):
        # batches of 0.1 s; fast share 0.6 at lag-one 0.5, level 0.1 and slow 0.3 at 0.9 of a log variance 0.02; 16
        # samples of 4 ms at cv 0.5 add (4 x 0.004 x 0.5 / 0.1)^2 = 0.0064 (log1p: 0.00638) the simulator draws itself
        fit = {"log_mean": 0.0, "log_var": 0.02, "level_share": 0.1, "fast_share": 0.6, "rho_fast": 0.5,
               "slow_share": 0.3, "rho_slow": 0.9}
        scen = {"dataset": {"load_s_per_sample": {"mean": 0.004, "cv": 0.5}}, "loader": {"batch_size": 16}}
        cpu = {"core_speed_fast_side": 0.2}
        diag.set_wander_parts(cpu, fit, [[0.1] * 10, [0.1] * 10], scen, {})
        self.assertAlmostEqual(cpu["core_speed_cv"], math.sqrt(math.expm1(0.012 - math.log1p(0.0064))), places=6)
        self.assertAlmostEqual(cpu["core_speed_correlation_s"], 0.1 / math.log(2.0), places=6)
        self.assertAlmostEqual(cpu["core_speed_slow_cv"], math.sqrt(math.expm1(0.008)), places=6)
        # one slow part for level and slow: lag-one (0.002 + 0.006 x 0.9) / 0.008 = 0.925
        self.assertAlmostEqual(cpu["core_speed_slow_correlation_s"], 0.1 / -math.log(0.925), places=6)
        self.assertNotIn("core_speed_fast_side", cpu)
        # counted in batches: N = -1 / ln(lag-one), 1 / ln 2 for the fast part, 1 / -ln 0.925 for the slow one
        diag.set_wander_parts(cpu, fit, [[0.1] * 10, [0.1] * 10], scen, {}, in_batches=True)
        self.assertAlmostEqual(cpu["core_speed_correlation_batches"], 1.0 / math.log(2.0), places=6)
        self.assertAlmostEqual(cpu["core_speed_slow_correlation_batches"], 1.0 / -math.log(0.925), places=6)

    def test_split_normal_takes_the_measured_sides(self):
        # measured: a split normal in log time around ln 0.1, sigma 0.05 on the slow side and 0.15 on the fast side;
        # drawn: plain lognormal draws of another level and spread. The result keeps the draws' order and takes the
        # measured median and p10 / p90 sides (0.15 x 1.2816 below, 0.05 x 1.2816 above) within sampling error.
        rng = random.Random(12)
        measured = [[math.exp(math.log(0.1) + (0.05 if z > 0 else 0.15) * z) for z in
                     (rng.gauss(0, 1) for _ in range(2500))] for _ in range(4)]
        drawn = [[math.exp(0.3 * rng.gauss(0, 1)) for _ in range(2500)] for _ in range(4)]
        got = diag.with_split_normal(drawn, measured)
        flat = sorted(math.log(v) for w in got for v in w)
        q = lambda p: flat[int(p * len(flat))]  # noqa: E731
        self.assertAlmostEqual(q(0.5), math.log(0.1), delta=0.01)
        self.assertAlmostEqual(q(0.9) - q(0.5), 0.05 * 1.2816, delta=0.01)
        self.assertAlmostEqual(q(0.5) - q(0.1), 0.15 * 1.2816, delta=0.02)
        self.assertEqual(sorted(range(2500), key=lambda t: got[0][t]), sorted(range(2500), key=lambda t: drawn[0][t]))

    def test_short_series_pass_through(self):
        self.assertEqual(diag.phase_randomized([1.0, 2.0, 3.0], random.Random(0)), [1.0, 2.0, 3.0])


@unittest.skipUnless(convert.stored_json_path(os.path.join(CALL, "cases.json")),
                     "run 20's results not in this checkout")
class TableBase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc = convert.read_json(os.path.join(CALL, "cases.json"))
        cls.profile = convert.read_json(os.path.join(CALL, "profile.json"))
        cls.curve = cls.profile["cpu"]["speed_vs_busy_cores"]

    def case(self, pinned: bool):
        return next(c for c in self.doc["cases"] if c["status"] == "ok" and bool(c["knobs"]["pin_memory"]) == pinned)

    def test_the_pinned_cases_main_side_is_its_own_and_the_rest_the_tables(self):
        c = self.case(True)
        table_scen, table_prof = convert.table_case_inputs(json.loads(json.dumps(c)), self.doc, self.profile, self.curve)
        scen, prof = diag.table_inputs_in_situ(c, self.doc, self.profile, self.curve, None)
        self.assertEqual(scen, table_scen)        # the loop from the host probes, the memory map: as the table
        self.assertEqual(scen["training"]["host_s_per_step"], convert.host_probe_bracket_s(c["components"]))
        self.assertTrue(scen["training"]["host_needs_memory_map"])
        # the pin thread's work a batch (receive, touch, copy into pinned memory) scaled by the case's own pin
        # thread CPU, not the probes' (convert.transport_profile: receive + rest = the pin loop's time x drift, brought
        # to one idle core at busy cores that move a little with it: within 1%)
        probes = [c["components"][k]["pin_thread_cpu_s_per_batch"] for k in ("probe", "probe_after")]
        own = c["measured"]["in_situ"]["pin_thread_cpu_s_per_batch"]
        bb = float(c["components"]["collate"]["batch_bytes"]["mean"])

        def pin_thread_s(p):
            return (p["ipc"]["receive_s_per_batch"] + p["ipc"]["receive_s_per_byte"] * bb
                    + bb / p["host"]["pin_copy_bytes_per_s"])
        self.assertAlmostEqual(pin_thread_s(prof) / pin_thread_s(table_prof), own / (sum(probes) / 2), delta=0.01)
        self.assertEqual(prof["cpu"]["core_speed_cv"], table_prof["cpu"]["core_speed_cv"])   # the probes' wander

    def test_an_unpinned_cases_copy_and_drop_are_its_own(self):
        c = self.case(False)
        table_scen, table_prof = convert.table_case_inputs(json.loads(json.dumps(c)), self.doc, self.profile, self.curve)
        scen, prof = diag.table_inputs_in_situ(c, self.doc, self.profile, self.curve, None)
        self.assertEqual(scen, table_scen)
        bb = float(c["components"]["collate"]["batch_bytes"]["mean"])
        copy_s, release_s = c["measured"]["copy_call_s"]["mean"], c["measured"]["release_s"]["mean"]
        # the copy curve at the batch's bytes gives the case's own .to() (9.19 ms), not the window's (9.12)
        curve = prof["copy"]["h2d_pageable_fresh_mapping"]
        self.assertAlmostEqual(convert.copy_curve_time_s(curve, bb), copy_s, places=9)
        self.assertNotAlmostEqual(convert.copy_curve_time_s(table_prof["copy"]["h2d_pageable_fresh_mapping"], bb),
                                  copy_s, places=5)
        # the drop (7.34 ms) per byte, brought to one idle core by the machine's curve at the window's few busy cores
        # (within a few percent of 1 on this profile), and no longer the window's 7.13 ms
        speed = prof["ipc"]["release_s_per_byte"] * bb / release_s
        self.assertAlmostEqual(speed, 1.0, delta=0.05)
        self.assertNotAlmostEqual(prof["ipc"]["release_s_per_byte"], table_prof["ipc"]["release_s_per_byte"], places=14)
        # the rest of the profile is the table's
        self.assertEqual(prof["ipc"]["receive_s_per_batch"], table_prof["ipc"]["receive_s_per_batch"])



class LoaderCostsInSitu(unittest.TestCase):
    """loader_costs_in_situ against hand-built cases: the workers' own costs, or the main process's with
    num_workers=0 (run 45's A1 w0 case: the in-situ diagnostic had left its load at the probes')."""
    CURVE = [{"busy_cores": 1, "relative_speed": 1.0}, {"busy_cores": 9, "relative_speed": 0.8}]

    def case(self, workers, busy=9.0, storage="warm"):
        return {"knobs": {"num_workers": workers, "storage": storage},
                "measured": {"cpu_busy_cores": busy,
                             "in_situ": {"getitem_wall_s": 0.0040, "getitem_cpu_s": 0.0035, "collate_wall_s": 0.020}}}

    def scen(self):
        return {"dataset": {"load_s_per_sample": {"mean": 0.0050, "cv": 0.1}},
                "loader": {"collate_s_per_batch": 0.030}}

    def test_workers_costs_go_to_one_idle_core_at_the_cases_busy_cores(self):
        out = diag.loader_costs_in_situ(self.case(8), self.scen(), "table", self.CURVE)
        # 9 busy cores: relative speed 0.8 by the machine's curve (no dataset curve here)
        self.assertAlmostEqual(out["dataset"]["load_s_per_sample"]["mean"], 0.0040 * 0.8)
        self.assertAlmostEqual(out["loader"]["collate_s_per_batch"], 0.020 * 0.8)
        self.assertTrue(out["loader"]["collate_in_shared_memory"])

    def test_the_main_process_load_is_taken_as_measured(self):
        # num_workers=0: the case's busy cores (torch's threads in the main process's decode) are not a slowdown
        # the simulated main thread applies again; the collate is not into shared memory
        base = self.scen()
        out = diag.loader_costs_in_situ(self.case(0, busy=14.5), base, "table", self.CURVE)
        self.assertAlmostEqual(out["dataset"]["load_s_per_sample"]["mean"], 0.0040)
        self.assertAlmostEqual(out["loader"]["collate_s_per_batch"], 0.020)
        self.assertNotIn("collate_in_shared_memory", out["loader"])
        self.assertAlmostEqual(base["dataset"]["load_s_per_sample"]["mean"], 0.0050)   # the input is left alone

    def test_a_cold_case_takes_its_cpu_and_a_case_without_costs_is_unchanged(self):
        out = diag.loader_costs_in_situ(self.case(4, busy=1.0, storage="cold"), self.scen(), "step", self.CURVE)
        self.assertAlmostEqual(out["dataset"]["load_s_per_sample"]["mean"], 0.0035)
        bare = {"knobs": {"num_workers": 8}, "measured": {"in_situ": {"getitem_wall_s": 0.004}}}
        self.assertEqual(diag.loader_costs_in_situ(bare, self.scen(), "table", self.CURVE), self.scen())


RUN76C = os.path.join(HERE, "results", "2026-12-06-h100-run76c")


@unittest.skipUnless(convert.stored_json_path(os.path.join(RUN76C, "cases.json")),
                     "run 76c's results not in this checkout")
class UnpinnedNextInSitu(unittest.TestCase):
    """Run 76c's unpinned case, whose windows around it timed next(): in situ replaces its .to() and drop and keeps
    next()'s receive from those windows, as the table does (until the eightieth session it fell to calibrate's
    receive, 0 ms on this profile, and the case read 6.7% fast in situ against 2.0% slow out of sample)."""

    def test_the_receive_stays_the_windows(self):
        doc = convert.read_json(os.path.join(RUN76C, "cases.json"))
        profile = convert.read_json(os.path.join(RUN76C, "profile.json"))
        curve = profile["cpu"]["speed_vs_busy_cores"]
        c = next(c for c in doc["cases"] if c["status"] == "ok" and not c["knobs"]["pin_memory"])
        _, table_prof = convert.table_case_inputs(json.loads(json.dumps(c)), doc, profile, curve)
        _, prof = diag.table_inputs_in_situ(c, doc, profile, curve, None)
        windows_next_s = convert.unpinned_window_bracket(c["components"])[convert.UNPINNED_NEXT_KEY]["mean"]
        self.assertGreater(windows_next_s, 0.001)             # 1.14 and 1.20 ms a step around case 01
        # both brought to one idle core by the machine's curve at busy cores that differ only by the case's collate
        self.assertAlmostEqual(prof["ipc"]["receive_s_per_batch"] / table_prof["ipc"]["receive_s_per_batch"], 1.0,
                               delta=0.01)
        # while the copy is the case's own .to()
        bb = float(c["components"]["collate"]["batch_bytes"]["mean"])
        self.assertAlmostEqual(convert.copy_curve_time_s(prof["copy"]["h2d_pageable_fresh_mapping"], bb),
                               c["measured"]["copy_call_s"]["mean"], places=9)


if __name__ == "__main__":
    unittest.main()


class StepBaseTransport(unittest.TestCase):
    def test_the_transport_goes_in_on_its_cpu_clock_then_to_the_cases_pin_thread(self):
        # run 86a's transport component, rounded: receive 4.64 ms wall / 4.00 CPU, receive + pin 17.73 ms wall with
        # the pin thread's CPU 16.07; the case's own pin thread 18.22 ms of CPU a batch
        tr = {"receive_s_per_batch": 0.00464, "receive_cpu_s_per_batch": 0.0040,
              "pin_s_per_batch": 0.01773, "pin_thread_cpu_s_per_batch": 0.01607}
        got = diag.in_situ_transport(tr, {"pin_thread_cpu_s_per_batch": 0.01822})
        scale = 0.01822 / 0.01607
        # the pin loop's CPU (not its wall, whose 1.66 ms beyond the CPU the scenario's pin wait carries) to 18.22 ms
        self.assertAlmostEqual(got["pin_s_per_batch"], 0.01822)
        self.assertAlmostEqual(got["receive_s_per_batch"], 0.0040 * scale)
        # the wall, scaled the same way, was 20.10 ms: the hand-overs counted once more beside the pin wait
        self.assertAlmostEqual(0.01773 * scale, 0.0201, places=4)
        # an unpinned case's receive keeps its wall (no pin thread, no wait key for it)
        self.assertAlmostEqual(diag.in_situ_transport(tr, {}, pinned=False)["receive_s_per_batch"], 0.00464)
        # without the case's pin thread CPU: the CPU clock alone; without a transport: none
        self.assertAlmostEqual(diag.in_situ_transport(tr, {})["pin_s_per_batch"], 0.01607)
        self.assertIsNone(diag.in_situ_transport(None, {"pin_thread_cpu_s_per_batch": 0.018}))
