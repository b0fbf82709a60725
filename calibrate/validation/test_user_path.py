"""Tests of user_path.py's pure parts (no simulator)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import user_path  # noqa: E402

TABLE_SCENARIO = {
    "schema": "pipeplan-scenario/1", "description": "measured case r1:05",
    "dataset": {"num_samples": 30000, "item_bytes": 602120, "sample_bytes": {"mean": 93000, "cv": 0.15},
                "load_s_per_sample": {"mean": 0.0035, "cv": 0.2}, "load_speed_vs_busy_cores": [
                    {"busy_cores": 1, "relative_speed": 1.0}, {"busy_cores": 8, "relative_speed": 0.8}]},
    "loader": {"batch_size": 64, "num_workers": 8, "pin_memory": True, "prefetch_factor": 2,
               "collate_s_per_batch": 0.026, "collate_in_shared_memory": True, "worker_s_per_batch": 0.005,
               "pin_thread_wait_s_per_batch": 0.0007, "main_next_s_per_batch": 0.00016, "worker_start_s": 0.07},
    "transfer": {"non_blocking": True, "copy_stream": "default", "copy_call_s_per_batch": 0.00028},
    "training": {"step_s": 0.030, "step_cv": 0.05, "host_s_per_step": 0.002, "sync_every_steps": 1, "steps": 400,
                 "warmup_steps": 18, "step_s_vs_gpu_duty": [{"duty": 0, "step_s": 0.025}, {"duty": 1, "step_s": 0.03}],
                 "gpu_duty_time_constant_s": 0.045, "host_needs_memory_map": False},
}
FRAGMENT = {"dataset": {"num_samples": 7000, "load_s_per_sample": {"mean": 0.0037, "cv": 0.13},
                        "item_bytes": 602000,
                        "load_speed_vs_busy_cores": [{"busy_cores": 1, "relative_speed": 1.12},
                                                     {"busy_cores": 8, "relative_speed": 1.0}]},
            "loader": {"batch_size": 64, "collate_s_per_batch": 0.022, "collate_in_shared_memory": True,
                       "worker_s_per_batch": 0.0033}}


class UserScenarioTest(unittest.TestCase):
    def test_the_helper_s_keys_in_the_harness_s_out(self):
        s = user_path.user_scenario(TABLE_SCENARIO, FRAGMENT)
        self.assertEqual(s["dataset"]["load_s_per_sample"], {"mean": 0.0037, "cv": 0.13})
        self.assertEqual(s["dataset"]["item_bytes"], 602000)
        self.assertEqual(s["dataset"]["load_speed_vs_busy_cores"][0]["relative_speed"], 1.12)
        self.assertEqual(s["dataset"]["num_samples"], 30000)          # the case's run, not the helper's dataset
        self.assertEqual((s["loader"]["collate_s_per_batch"], s["loader"]["worker_s_per_batch"]), (0.022, 0.0033))
        for key in ("pin_thread_wait_s_per_batch", "main_next_s_per_batch", "worker_start_s"):
            self.assertNotIn(key, s["loader"])
        self.assertNotIn("copy_call_s_per_batch", s["transfer"])       # the helper ran without --main-loop
        for key in ("step_s_vs_gpu_duty", "gpu_duty_time_constant_s", "step_cv"):
            self.assertNotIn(key, s["training"])                       # the profile's duty shape applies
        self.assertEqual((s["training"]["step_s"], s["training"]["host_s_per_step"]), (0.030, 0.002))
        self.assertEqual(s["loader"]["num_workers"], 8)
        self.assertIn("user path", s["description"])
        self.assertEqual(TABLE_SCENARIO["loader"]["pin_thread_wait_s_per_batch"], 0.0007)   # the input untouched

    def test_the_main_loop_s_keys_where_the_helper_timed_them(self):
        frag = dict(FRAGMENT, loader=dict(FRAGMENT["loader"], main_next_s_per_batch=0.0002),
                    transfer={"copy_call_s_per_batch": 0.0001})
        s = user_path.user_scenario(TABLE_SCENARIO, frag)
        self.assertEqual(s["loader"]["main_next_s_per_batch"], 0.0002)
        self.assertEqual(s["transfer"]["copy_call_s_per_batch"], 0.0001)

    def test_no_workers_takes_the_collate_alone(self):
        t = dict(TABLE_SCENARIO, loader=dict(TABLE_SCENARIO["loader"], num_workers=0))
        s = user_path.user_scenario(t, FRAGMENT)
        self.assertEqual(s["loader"]["collate_s_per_batch"], 0.022)
        self.assertNotIn("worker_s_per_batch", s["loader"])
        self.assertNotIn("collate_in_shared_memory", s["loader"])
        # the helper run with --num-workers 0: the in-process timings, no worker curve
        s = user_path.user_scenario(t, FRAGMENT, {"load_s": 0.0032, "load_cv": 0.1, "collate_s": 0.009})
        self.assertEqual(s["dataset"]["load_s_per_sample"]["mean"], 0.0032)
        self.assertNotIn("load_speed_vs_busy_cores", s["dataset"])
        self.assertEqual(s["loader"]["collate_s_per_batch"], 0.009)
        case = {"components": {"load": {"mean": 0.004, "default_threads": {"mean": 0.0032, "cv": 0.1}},
                               "collate": {"default_threads": {"mean": 0.009}}}}
        self.assertEqual(user_path.inline_timings(case), {"load_s": 0.0032, "load_cv": 0.1, "collate_s": 0.009})
        self.assertIsNone(user_path.inline_timings({"components": {"load": {"mean": 0.004}}}))

    def test_gil_hold_only_with_a_pin_thread(self):
        prof = {"ipc": {"receive_s_per_batch": 0.002}}
        held = user_path.with_gil_hold(prof, TABLE_SCENARIO, 0.00048)
        self.assertEqual(held["ipc"]["receive_gil_s_per_batch"], 0.00048)
        self.assertNotIn("receive_gil_s_per_batch", prof["ipc"])
        unpinned = dict(TABLE_SCENARIO, loader=dict(TABLE_SCENARIO["loader"], pin_memory=False))
        self.assertIs(user_path.with_gil_hold(prof, unpinned, 0.00048), prof)


class ProfilePartsTest(unittest.TestCase):
    CALIBRATED = {"cpu": {"core_speed_cv": 0.11, "core_speed_correlation_s": 1.0, "speed_vs_busy_cores": [1]},
                  "ipc": {"receive_s_per_batch": 8e-6, "receive_s_per_byte": 1.8e-10, "points": [1, 2]},
                  "host": {"pin_copy_bytes_per_s": 9.5e9, "memcpy_bytes_per_s": 1e10}}
    CASE = {"cpu": {"core_speed_cv": 0.15, "core_speed_correlation_s": 0.6, "speed_vs_busy_cores": [1]},
            "ipc": {"receive_s_per_batch": 2.6e-3, "receive_s_per_byte": 2.3e-10, "receive_gil_s_per_batch": 4.8e-4},
            "host": {"pin_copy_bytes_per_s": 7.2e9, "memcpy_bytes_per_s": 1e10}}

    def test_each_part_alone(self):
        w = user_path.profile_parts(self.CALIBRATED, self.CASE, ["wander"])
        self.assertEqual((w["cpu"]["core_speed_cv"], w["cpu"]["core_speed_correlation_s"]), (0.15, 0.6))
        self.assertEqual(w["ipc"], self.CALIBRATED["ipc"])
        t = user_path.profile_parts(self.CALIBRATED, self.CASE, ["transport"])
        self.assertEqual((t["ipc"]["receive_s_per_batch"], t["host"]["pin_copy_bytes_per_s"]), (2.6e-3, 7.2e9))
        self.assertNotIn("points", t["ipc"])                  # the case's profile dropped calibrate's points
        self.assertNotIn("receive_gil_s_per_batch", t["ipc"])
        self.assertEqual(t["cpu"]["core_speed_cv"], 0.11)
        g = user_path.profile_parts(self.CALIBRATED, self.CASE, ["transport", "gil"])
        self.assertEqual(g["ipc"]["receive_gil_s_per_batch"], 4.8e-4)
        self.assertEqual(self.CALIBRATED["ipc"]["receive_s_per_batch"], 8e-6)      # the input untouched


class CasesAndSummaryTest(unittest.TestCase):
    def test_user_cases(self):
        ok = {"status": "ok", "knobs": {"kind": "image", "storage": "warm", "batch_size": 64, "step": "mm:25"}}
        self.assertTrue(user_path.user_case(ok))
        for change in ({"storage": "cold"}, {"batch_size": 128}, {"kind": "tensor_f32"},
                       {"slow_worker_factor": 3.0}, {"step": "gpudec+mm:25"}):
            self.assertFalse(user_path.user_case(dict(ok, knobs=dict(ok["knobs"], **change))), change)
        self.assertFalse(user_path.user_case(dict(ok, status="error")))
        self.assertTrue(user_path.helper_fragment_usable(FRAGMENT))
        self.assertFalse(user_path.helper_fragment_usable({"dataset": {}}))

    def test_errors_summary_by_hand(self):
        rows = [{"k": {"thr_err": e, "p90_err": p, "bottleneck_ok": b}}
                for e, p, b in ((0.01, 0.1, True), (-0.02, -0.2, True), (0.05, 0.3, False), (-0.10, 0.0, True))]
        rows.append({"k": None})                                         # no prediction: left out
        s = user_path.errors_summary(rows, "k")
        self.assertEqual(s["n"], 4)
        self.assertAlmostEqual(s["median_abs_thr"], 0.035)              # |errors| 1, 2, 5, 10%: (2 + 5) / 2
        self.assertAlmostEqual(s["signed_median_thr"], -0.005)          # -10, -2, 1, 5: (-2 + 1) / 2
        self.assertAlmostEqual(s["median_abs_step_p90"], 0.15)
        self.assertAlmostEqual(s["bottleneck"], 0.75)


if __name__ == "__main__":
    unittest.main()
