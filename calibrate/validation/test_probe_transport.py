"""pipeplan_probe.py --transport / --profile-out: the fold of a measured DataLoader transport into a calibrated
profile, by hand, and the CLI's refusals (no torch needed)."""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pipeplan_probe as probe  # noqa: E402

PROFILE = {"cpu": {"speed_vs_busy_cores": [{"busy_cores": 1, "relative_speed": 1.0},
                                           {"busy_cores": 16, "relative_speed": 1.0}]},
           "ipc": {"receive_s_per_batch": 8e-6, "receive_s_per_byte": 1e-10, "points": [1]},
           "host": {"pin_copy_bytes_per_s": 1e10}, "provenance": {"note": "calibrated"}}
MB = 38.5e6
TRANSPORT = {"num_workers": 12, "batch_size": 64, "batch_bytes": MB,
             "receive_s_per_batch": 0.0026, "receive_cpu_s_per_batch": 0.0024,
             "pin_s_per_batch": 0.017, "pin_thread_cpu_s_per_batch": 0.016, "pin_copy_s_per_batch": 0.0096}


class FoldTest(unittest.TestCase):
    def test_by_hand(self):
        out = probe.profile_with_transport(PROFILE, TRANSPORT, worker_collate_s=0.026, receive_gil_s=0.00048)
        # on the CPU clock (a flat speed curve: no scaling back): the receive 2.4 ms; the pin thread's rest 16 - 2.4 =
        # 13.6 ms split as calibrate splits it: touch 1e-10 x 38.5 MB = 3.85 ms, copy 38.5 MB / 10 GB/s = 3.85 ms,
        # both scaled by 13.6 / 7.7
        scale = 13.6 / 7.7
        self.assertAlmostEqual(out["ipc"]["receive_s_per_batch"], 0.0024, places=9)
        self.assertAlmostEqual(out["ipc"]["receive_s_per_byte"], 1e-10 * scale, places=15)
        self.assertAlmostEqual(out["host"]["pin_copy_bytes_per_s"] / (1e10 / scale), 1.0, places=9)
        self.assertNotIn("points", out["ipc"])
        self.assertEqual(out["ipc"]["receive_gil_s_per_batch"], 0.00048)
        self.assertIn("pipeplan_probe.py --transport", out["provenance"]["note"])
        self.assertIn("Before: calibrated", out["provenance"]["note"])
        self.assertEqual(PROFILE["ipc"]["receive_s_per_byte"], 1e-10)            # the input untouched

    def test_scaled_to_the_pin_thread_beside_the_loader(self):
        # the pin thread's CPU beside the real loader 16 x 1.116 ms against 16 over cached samples: every main-side
        # cost 1.116x (the table's median drift), then folded as above
        out = probe.profile_with_transport(PROFILE, TRANSPORT, 0.026, pin_cpu_beside_loader_s=0.016 * 1.116)
        f = 1.116
        scale = (16 * f - 2.4 * f) / 7.7
        self.assertAlmostEqual(out["ipc"]["receive_s_per_batch"], 0.0024 * f, places=9)
        self.assertAlmostEqual(out["ipc"]["receive_s_per_byte"], 1e-10 * scale, places=15)
        self.assertIn("scaled by 1.116", out["provenance"]["note"])

    def test_the_line_says_whether_the_fold_is_scaled(self):
        # 17.856 ms beside the loader against 16 over cached samples: 1.116x, both figures in ms
        self.assertEqual(probe.fold_scaling_text(TRANSPORT, 0.016 * 1.116),
                         ", scaled by 1.116 to the pin thread's CPU beside your loader (17.86 against 16.00 ms a "
                         "batch over cached samples)")
        for beside in (None, 0.0):  # --main-loop not run, or it read nothing: the user is told what that costs
            self.assertIn("not scaled to your own loader (give --num-workers K, which runs --main-loop",
                          probe.fold_scaling_text(TRANSPORT, beside))
        unpinned = {k: v for k, v in TRANSPORT.items() if not k.startswith("pin")}
        self.assertIn("not scaled", probe.fold_scaling_text(unpinned, 0.017))

    def test_the_fold_runs_the_main_loop_where_it_can(self):
        # (transport, profile_out, num_workers, main_loop asked, --no-main-loop) -> run it for the fold
        self.assertTrue(probe.main_loop_for_fold(True, "p.json", 4, False, False))
        self.assertFalse(probe.main_loop_for_fold(True, "p.json", 4, True, False))    # asked for already
        self.assertFalse(probe.main_loop_for_fold(True, "p.json", 4, False, True))    # refused
        self.assertFalse(probe.main_loop_for_fold(True, None, 4, False, False))       # no fold written
        self.assertFalse(probe.main_loop_for_fold(False, "p.json", 4, False, False))  # no transport
        for workers in (None, 0):  # an inline loader has no pin thread beside workers to read
            self.assertFalse(probe.main_loop_for_fold(True, "p.json", workers, False, False))

    def test_without_the_pinned_half(self):
        unpinned = {k: v for k, v in TRANSPORT.items() if not k.startswith("pin")}
        with self.assertRaises(ValueError):
            probe.profile_with_transport(PROFILE, unpinned, 0.026)
        self.assertIn("not pinned (no CUDA)", probe._human_transport(unpinned))
        self.assertIn("receive + pin 17.00 ms (pin_memory() 9.60 ms", probe._human_transport(TRANSPORT))
        self.assertIn("not measured (ImportError", probe._human_transport({"error": "ImportError: torch"}))


class CliTest(unittest.TestCase):
    def run_probe(self, *args):
        return subprocess.run([sys.executable, os.path.join(HERE, "pipeplan_probe.py"), *args],
                              capture_output=True, text=True, timeout=60)

    def test_refusals(self):
        p = self.run_probe("--step", "x:y", "--transport")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--transport: needs --dataset", p.stderr)
        p = self.run_probe("--dataset", "x:y", "--transport", "--profile-out", "/tmp/p.json")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--profile-out /tmp/p.json: needs --transport and --profile", p.stderr)
        p = self.run_probe("--dataset", "x:y", "--transport", "--profile", "p.json", "--profile-out",
                           "/nonexistent/dir/p.json")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--profile-out /nonexistent/dir/p.json: its folder does not exist", p.stderr)


if __name__ == "__main__":
    unittest.main()
