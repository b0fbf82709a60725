"""release_gil_probe.py's pure parts, checked by hand (the frees themselves need torch: device plan item 19)."""
import contextlib
import importlib.util
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import release_gil_probe as probe  # noqa: E402


class SummaryTest(unittest.TestCase):
    def test_a_free_that_holds_the_gil_reads_its_wall_less_the_idle_floor(self):
        # three frees of 4, 5 and 6 ms; the probe saw 15.3 ms held over them and 0.3 ms over three idle pauses:
        # 15.3 / 3 - 0.3 / 3 = 5.0 ms a free, the median wall 5.0 ms, so 1.0 of it
        s = probe.summarise({"idle": [], "shared": [0.004, 0.005, 0.006]}, {"idle": 0.0003, "shared": 0.0153},
                            {"idle": 3, "shared": 3})
        self.assertAlmostEqual(s["shared"]["held_ms_per_free"], 5.0, places=9)
        self.assertAlmostEqual(s["shared"]["wall_ms"], 5.0, places=9)
        self.assertAlmostEqual(s["shared"]["held_over_wall"], 1.0, places=9)
        # the idle kind keeps its own floor and has no wall
        self.assertAlmostEqual(s["idle"]["held_ms_per_free"], 0.1, places=9)
        self.assertIsNone(s["idle"]["wall_ms"])
        self.assertIsNone(s["idle"]["held_over_wall"])

    def test_a_free_that_releases_the_gil_reads_about_nothing(self):
        s = probe.summarise({"idle": [], "private": [0.002, 0.002]}, {"idle": 0.0002, "private": 0.0002},
                            {"idle": 2, "private": 2})
        self.assertAlmostEqual(s["private"]["held_ms_per_free"], 0.0, places=9)
        self.assertAlmostEqual(s["private"]["held_over_wall"], 0.0, places=9)

    def test_one_line_a_kind_in_the_kinds_order(self):
        s = probe.summarise({"private": [0.002], "shared": [0.005]}, {"private": 0.0, "shared": 0.005},
                            {"private": 1, "shared": 1})
        lines = probe.report_lines(s)
        self.assertEqual(len(lines), 2)
        self.assertTrue(lines[0].startswith("shared "))
        self.assertIn("GIL held 5.00 ms a free (1.00 of the wall)", lines[0])
        self.assertTrue(lines[1].startswith("private "))

    def test_a_free_that_takes_nothing_has_no_ratio(self):
        # run 74: the tensor freed with its storage kept took 3 us and the probe's floor made its ratio -0.75
        s = probe.summarise({"idle": [], "shared_tensor": [3e-6, 3e-6]}, {"idle": 0.0002, "shared_tensor": 0.00019},
                            {"idle": 2, "shared_tensor": 2})
        self.assertAlmostEqual(s["shared_tensor"]["held_ms_per_free"], -0.005, places=9)
        self.assertIsNone(s["shared_tensor"]["held_over_wall"])
        self.assertNotIn("of the wall", probe.report_lines(s)[0])

    def test_the_touched_free_comes_between_the_storage_and_the_private_one(self):
        walls = {k: [0.001] for k in ("private", "shared_touched", "shared_storage")}
        s = probe.summarise(walls, {k: 0.0 for k in walls}, {k: 1 for k in walls})
        self.assertEqual([line.split()[0] for line in probe.report_lines(s)],
                         ["shared_storage", "shared_touched", "private"])


class CommandLineTest(unittest.TestCase):
    def test_bad_sizes_are_one_line_and_exit_2(self):
        for args in (["--mb", "0"], ["--rounds", "0"], ["--per-round", "-1"]):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(probe.main(args), 2)
            self.assertEqual(len(err.getvalue().strip().splitlines()), 1, err.getvalue())
            self.assertIn("expected a positive number", err.getvalue())

    @unittest.skipIf(importlib.util.find_spec("torch") is not None, "torch is here: the probe would run")
    def test_without_torch_it_says_where_to_run_it(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(probe.main([]), 3)
        self.assertIn("needs torch", err.getvalue())


if __name__ == "__main__":
    unittest.main()
