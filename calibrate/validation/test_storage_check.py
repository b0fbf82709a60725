#!/usr/bin/env python3
"""storage_check.py's pure parts against calibrate's experiment as written (plain Python, no pipeplan)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import storage_check as S  # noqa: E402

# run 49's B2b profile, rounded: 256 files of 640 KiB, four threads with 0.631 ms of work a file
BUFFERED = {"files": 256, "file_bytes": 655360, "warm_cpu_s": 0.035}
POINT = {"threads": 4, "wall_s": 0.1614, "work_s_per_file": 0.000631}


class WithWorkScenarioTest(unittest.TestCase):
    def test_each_worker_reads_its_share_of_the_files_once(self):
        s = S.with_work_scenario(BUFFERED, POINT, "per_sample")
        # four workers, one batch of 64 each: the 256 files, each read once, cold
        self.assertEqual(s["loader"]["num_workers"], 4)
        self.assertEqual(s["loader"]["batch_size"], 64)
        self.assertEqual(s["training"]["steps"], 4)
        self.assertEqual(s["dataset"]["num_samples"], 256)
        self.assertEqual(s["storage"]["page_cache_hit_ratio"], 0.0)
        self.assertEqual(s["dataset"]["sample_bytes"]["mean"], 655360)
        # the work between files plus the warm re-read's CPU a file (0.035 s / 256 files) is the per-sample load,
        # as a warm getitem would measure it, without spread
        self.assertAlmostEqual(s["dataset"]["load_s_per_sample"]["mean"], 0.000631 + 0.035 / 256)
        self.assertEqual(s["dataset"]["load_s_per_sample"]["cv"], 0.0)
        self.assertEqual(s["storage"]["worker_reads"], "per_sample")
        self.assertEqual(s["storage"]["read_pieces_per_batch"], 64)  # one piece a file, as calibrate reads them
        self.assertEqual(S.with_work_scenario(BUFFERED, POINT, "per_batch")["storage"]["worker_reads"], "per_batch")

    def test_jittered_work_spreads_the_load(self):
        # 2 ms drawn uniform in [0, 4 ms): sd 2 / sqrt(3) = 1.1547 ms over a load of 2 + 0.035 / 256 ms
        point = dict(POINT, work_s_per_file=0.002, work_jitter=1.0)
        load = S.with_work_scenario(BUFFERED, point, "per_sample")["dataset"]["load_s_per_sample"]
        self.assertAlmostEqual(load["cv"], 0.0011547005 / (0.002 + 0.035 / 256), places=6)
        self.assertEqual(load["kind"], "gamma")
        self.assertEqual(S.with_work_scenario(BUFFERED, POINT, "per_sample")["dataset"]["load_s_per_sample"]["cv"], 0.0)

    def test_uneven_split_is_refused(self):
        with self.assertRaises(ValueError):
            S.with_work_scenario(BUFFERED, dict(POINT, threads=3), "per_sample")


class HeadFirstTest(unittest.TestCase):
    def test_pairs_each_head_first_point_with_the_same_readers_reading_whole(self):
        # 256 files; one reader: 0.2 s of wall, 0.08 s of CPU -> 0.12 s / 256 files = 0.469 ms a file head first,
        # against 0.1 s / 256 = 0.391 ms whole; four readers at 0.5 ms jittered: (0.3 - 0.4 / 4) / 64 = 3.125 ms
        # against (0.25 - 0.1) / 64 = 2.344 ms. The fixed 0.5 ms pause-sweep point of four readers is not a match.
        buffered = {"files": 256,
                    "pause_sweep": [{"threads": 1, "work_s_per_file": 0.0, "wall_s": 0.17, "cpu_s": 0.07},
                                    {"threads": 4, "work_s_per_file": 0.0005, "wall_s": 9.0, "cpu_s": 1.0}],
                    "pause_sweep_jittered": [{"threads": 4, "work_s_per_file": 0.0005, "work_jitter": 1.0,
                                              "wall_s": 0.25, "cpu_s": 0.4}],
                    "pause_sweep_head_first": [
                        {"threads": 1, "work_s_per_file": 0.0, "wall_s": 0.2, "cpu_s": 0.08, "head_bytes": 4096},
                        {"threads": 4, "work_s_per_file": 0.0005, "work_jitter": 1.0, "wall_s": 0.3, "cpu_s": 0.4,
                         "head_bytes": 4096},
                        {"threads": 4, "work_s_per_file": 0.002, "work_jitter": 1.0, "wall_s": 0.5, "cpu_s": 1.0,
                         "head_bytes": 4096}]}
        pairs = S.head_first_pairs(buffered)
        self.assertEqual([(t, w) for t, w, _, _ in pairs], [(1, 0.0), (4, 0.5)])  # no whole-file 2 ms jittered point
        self.assertAlmostEqual(pairs[0][2], 0.12 / 256)
        self.assertAlmostEqual(pairs[0][3], 0.10 / 256)
        self.assertAlmostEqual(pairs[1][2], 0.2 / 64)
        self.assertAlmostEqual(pairs[1][3], 0.15 / 64)
        self.assertEqual(S.head_first_pairs({"files": 256}), [])


class SteadyCoreProfileTest(unittest.TestCase):
    def test_wander_off_the_rest_kept_input_untouched(self):
        # calibrate's work is a spin on the thread's CPU clock: a fixed time whatever the core's speed
        profile = {"cpu": {"core_speed_cv": 0.079, "core_speed_correlation_s": 0.34, "core_speed_slow_cv": 0.05,
                           "cores": 16}, "storage": {"x": 1}}
        steady = S.steady_core_profile(profile)
        self.assertEqual(steady["cpu"]["core_speed_cv"], 0.0)
        self.assertEqual(steady["cpu"]["core_speed_slow_cv"], 0.0)
        self.assertEqual(steady["cpu"]["core_speed_correlation_s"], 0.34)
        self.assertEqual(steady["cpu"]["cores"], 16)
        self.assertEqual(steady["storage"], {"x": 1})
        self.assertEqual(profile["cpu"]["core_speed_cv"], 0.079)  # the call's profile is not changed

    def test_profile_without_wander_keys_gains_none(self):
        self.assertEqual(S.steady_core_profile({"cpu": {"cores": 8}}), {"cpu": {"cores": 8}})


class SummaryTest(unittest.TestCase):
    def test_groups_by_experiment_readers_and_pause_with_medians(self):
        rows = [("with_work", 4, 0.58, +10.0, 3.9, 4.0), ("with_work", 4, 0.56, -2.0, None, 4.0),
                ("with_work", 4, 0.60, +4.0, 3.7, 3.0),
                ("pause_sweep", 4, 2.0, -6.0, 3.8, 1.7), ("pause_sweep", 4, 0.0, +1.0, 4.0, 3.5)]
        lines = S.summary_lines(rows)
        self.assertEqual(len(lines), 3)  # the with_work points pool whatever their work; the pause's points do not
        self.assertIn("0.00 ms", lines[0])
        self.assertIn("+1.0% signed", lines[0])
        self.assertIn("2.00 ms", lines[1])
        self.assertIn("-6.0% signed", lines[1])
        self.assertIn("1.70", lines[1])
        with_work = lines[2]
        self.assertIn("n=  3", with_work)
        self.assertIn("+4.0% signed", with_work)   # median of +10, -2, +4
        self.assertIn("4.0% |err|", with_work)     # median of 10, 2, 4
        self.assertIn("3.80 / 3.50", with_work)    # the two points with a measured count: medians of 3.9, 3.7; 4, 3


class InFlightFormatTest(unittest.TestCase):
    def test_missing_is_na(self):
        self.assertEqual(S.fmt_in_flight(None), "n/a")
        self.assertEqual(S.fmt_in_flight(3.456), "3.46")


class LastReadEndTest(unittest.TestCase):
    def test_last_read_or_load_span_end(self):
        trace = {"traceEvents": [
            {"ph": "X", "name": "read+load (per sample)", "ts": 0, "dur": 150000},
            {"ph": "X", "name": "read", "ts": 10000, "dur": 20000},
            {"ph": "X", "name": "load+collate", "ts": 30000, "dur": 140000},  # ends at 170 ms: the last
            {"ph": "X", "name": "collate", "ts": 170000, "dur": 50000},       # not a read or a load
            {"ph": "C", "name": "batches_in_flight", "ts": 300000},
        ]}
        self.assertAlmostEqual(S.last_read_end_s(trace), 0.170)

    def test_no_read_span_is_an_error(self):
        with self.assertRaises(ValueError):
            S.last_read_end_s({"traceEvents": [{"ph": "X", "name": "collate", "ts": 0, "dur": 1}]})


if __name__ == "__main__":
    unittest.main()
