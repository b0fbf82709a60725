"""component_diagnostic's pure parts, against hand calculations."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import component_diagnostic as cd  # noqa: E402


def scenario(**loader):
    ld = {"batch_size": 64, "num_workers": 8, "pin_memory": True, "collate_s_per_batch": 0.030,
          "worker_s_per_batch": 0.004}
    ld.update(loader)
    return {"dataset": {"item_bytes": 600000, "load_s_per_sample": {"mean": 0.005}},
            "loader": ld, "training": {"host_s_per_step": 0.002}}


PROFILE = {"cpu": {"speed_vs_busy_cores": [{"busy_cores": 1, "relative_speed": 1.0},
                                           {"busy_cores": 9, "relative_speed": 0.8}]},
           "ipc": {"receive_s_per_batch": 0.005, "receive_s_per_byte": 1e-10, "shm_write_s_per_byte": 1e-9},
           "host": {"pin_copy_bytes_per_s": 1e10}}


class ModelSide(unittest.TestCase):
    def test_costs_at_the_cases_busy_cores(self):
        # at 5 busy cores the machine curve gives 0.9; batch 38.4 MB: touch 3.84 ms, pin copy 3.84 ms
        m = cd.model_components(scenario(collate_in_shared_memory=True), PROFILE, 5.0)
        self.assertAlmostEqual(m["load"], 0.005 / 0.9)
        self.assertAlmostEqual(m["collate"], 0.030 / 0.9)
        self.assertAlmostEqual(m["worker_other"], 0.004 / 0.9)
        self.assertAlmostEqual(m["loop_host"], 0.002 / 0.9)
        self.assertAlmostEqual(m["pin_thread"], (0.005 + 0.00384 + 0.00384) / 0.9)

    def test_the_floor_and_the_datasets_own_curve(self):
        # a plain-memory collate of 30 ms under the 38.4 ms floor; a dataset curve flat at 1.0
        s = scenario()
        s["dataset"]["load_speed_vs_busy_cores"] = [{"busy_cores": 1, "relative_speed": 1.0},
                                                     {"busy_cores": 9, "relative_speed": 1.0}]
        m = cd.model_components(s, PROFILE, 9.0)
        self.assertAlmostEqual(m["collate"], 0.0384 / 0.8)
        self.assertAlmostEqual(m["load"], 0.005)
        self.assertNotIn("pin_thread", cd.model_components(scenario(pin_memory=False), PROFILE, 9.0))


    def test_a_sequence_scenario_without_item_bytes(self):
        # run 64's sequence cases give dataset.sample_bytes (mean 2,000 B) instead of item_bytes: a batch of 64 is
        # 128 kB, touched at 1e-10 s a byte and copied at 1e10 B/s (12.8 us each) after the 5 ms receive
        s = scenario()
        del s["dataset"]["item_bytes"]
        s["dataset"]["sample_bytes"] = {"mean": 2000.0, "cv": 0.5}
        m = cd.model_components(s, PROFILE, 1.0)
        self.assertAlmostEqual(m["pin_thread"], 0.005 + 2 * 128000 * 1e-10)
        self.assertEqual(cd.scenario_sample_bytes({}), 0.0)


class MeasuredSide(unittest.TestCase):
    def test_in_situ_counters_and_the_loop_where_comparable(self):
        case = {"knobs": {"pin_memory": True, "non_blocking": True},
                "measured": {"in_situ": {"getitem_wall_s": 0.0055, "collate_wall_s": 0.033,
                                         "worker_other_cpu_s_per_batch": 0.004, "pin_thread_cpu_s_per_batch": 0.017},
                             "loop_host_s": {"mean": 0.0025}}}
        self.assertEqual(cd.measured_components(case), {"load": 0.0055, "collate": 0.033, "worker_other": 0.004,
                                                        "pin_thread": 0.017, "loop_host": 0.0025})
        case["knobs"]["pin_memory"] = False                 # the pageable copy is in the loop's host time
        self.assertNotIn("loop_host", cd.measured_components(case))
        # harness since run 20's plan: the .to() calls and the drop timed apart, the loop's host time less the copy
        case["measured"].update(copy_call_s={"mean": 0.0007}, release_s={"mean": 0.0042})
        got = cd.measured_components(case)
        self.assertAlmostEqual(got["loop_host"], 0.0018)
        self.assertEqual((got["copy"], got["release"]), (0.0007, 0.0042))

    def test_an_unpinned_batchs_copy_and_release_on_the_model_side(self):
        # 38.4 MB from the fresh mapping at 8 GB/s: 4.8 ms (a stream's time, unscaled); its release 0.1 ns/B at
        # one idle core, 3.84 ms, at 5 busy cores (0.9) 4.27 ms; pinned or without the split: neither
        prof = dict(PROFILE, ipc=dict(PROFILE["ipc"], release_s_per_byte=1e-10),
                    copy={"h2d_pageable_fresh_mapping": {"latency_s": 0.0, "bytes_per_s": 8e9}})
        m = cd.model_components(scenario(pin_memory=False), prof, 5.0)
        self.assertAlmostEqual(m["copy"], 0.0048)
        self.assertAlmostEqual(m["release"], 0.00384 / 0.9)
        self.assertNotIn("copy", cd.model_components(scenario(), prof, 5.0))
        self.assertNotIn("copy", cd.model_components(scenario(pin_memory=False), PROFILE, 5.0))

    def test_unpinned_loop_readings(self):
        # run 24's GIL r1 unpinned case: loop 32.81 ms a step of which .to() 7.92 -> launches 24.89; its host probes
        # 16.61 and 25.90 (mean 21.255) -> 1.171; case-like windows 26.0 and 24.0 (mean 25.0) -> 0.9956
        case = {"status": "ok", "knobs": {"pin_memory": False, "num_workers": 8},
                "measured": {"loop_host_s": {"mean": 0.03281}, "copy_call_s": {"mean": 0.00792}},
                "components": {"host_probe": {"host_s": {"mean": 0.01661}},
                               "host_probe_after": {"host_s": {"mean": 0.02590}}}}
        got = cd.unpinned_loop_readings(case)
        self.assertAlmostEqual(got["launches_s"], 0.02489)
        self.assertAlmostEqual(got["over_host_probes"], 0.02489 / 0.021255)
        self.assertNotIn("over_unpinned_windows", got)
        self.assertNotIn("beside_workers_ratio", got)
        case["components"]["host_beside_workers"] = {"ratio": 1.047}     # the interleaved probe's reading, as is
        self.assertAlmostEqual(cd.unpinned_loop_readings(case)["beside_workers_ratio"], 1.047)
        case["components"]["host_beside_workers"] = {"error": "no beside block between two alone blocks"}
        self.assertNotIn("beside_workers_ratio", cd.unpinned_loop_readings(case))
        case["components"].update(unpinned_window={"unpinned_case_like_host_s": {"mean": 0.026}},
                                  unpinned_window_after={"unpinned_case_like_host_s": {"mean": 0.024},
                                                         "error": None})
        self.assertAlmostEqual(cd.unpinned_loop_readings(case)["over_unpinned_windows"], 0.02489 / 0.025)
        # a window that failed (no figure) leaves the other alone in the mean
        case["components"]["unpinned_window_after"] = {"error": "RuntimeError: x"}
        self.assertAlmostEqual(cd.unpinned_loop_readings(case)["over_unpinned_windows"], 0.02489 / 0.026)
        # pinned, skipped, or without the split loop times: nothing to read
        self.assertIsNone(cd.unpinned_loop_readings(dict(case, knobs={"pin_memory": True})))
        self.assertIsNone(cd.unpinned_loop_readings(dict(case, status="skipped")))
        self.assertIsNone(cd.unpinned_loop_readings(dict(case, measured={"loop_host_s": {"mean": 0.03}})))

    def test_unpinned_next_readings(self):
        # run 25's one-off unpinned case: next() 1.51 ms (0.92 CPU), its windows 1.85 and 1.51 (mean 1.68); the
        # model's receive as the case profile holds it
        case = {"measured": {"data_wait_s": {"mean": 0.00151}, "data_wait_cpu_s": {"mean": 0.00092}},
                "components": {"unpinned_window": {"unpinned_case_like_next_s": {"mean": 0.00185}},
                               "unpinned_window_after": {"unpinned_case_like_next_s": {"mean": 0.00151}}}}
        got = cd.unpinned_next_readings(case, {"ipc": {"receive_s_per_batch": 0.0}})
        self.assertEqual(got["case_s"], 0.00151)
        self.assertEqual(got["case_cpu_s"], 0.00092)
        self.assertAlmostEqual(got["windows_s"], 0.00168)
        self.assertEqual(got["model_s"], 0.0)                 # a zero the model charges is a reading, not a gap
        # before run 26's plan: the case's wall alone
        self.assertEqual(cd.unpinned_next_readings({"measured": {"data_wait_s": {"mean": 0.0017}}}, None),
                         {"case_s": 0.0017})

    def test_relative_errors_on_shared_components(self):
        e = cd.relative_errors({"load": 0.006, "collate": 0.03, "pin_thread": 0.02}, {"load": 0.005, "collate": 0.0})
        self.assertEqual(set(e), {"load"})
        self.assertAlmostEqual(e["load"], 0.2)

    def test_comparable_cases(self):
        ok = {"status": "ok", "knobs": {"num_workers": 8}}
        self.assertTrue(cd.comparable(ok))
        self.assertFalse(cd.comparable(dict(ok, knobs={"num_workers": 0})))
        self.assertFalse(cd.comparable(dict(ok, knobs={"num_workers": 8, "storage": "cold"})))
        self.assertFalse(cd.comparable(dict(ok, knobs={"num_workers": 8, "epochs": 4})))
        self.assertFalse(cd.comparable(dict(ok, status="error")))


if __name__ == "__main__":
    unittest.main()
