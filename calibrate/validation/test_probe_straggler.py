#!/usr/bin/env python3
"""--probe-with-straggler (validation-runs.md run 71, finding 3): a straggler case's probes take its straggler only
when asked, with the case's own factor and spin; without the flag every probe stays the plain loader a user's
calibrate measures."""
import contextlib
import io
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_convert import load_harness  # noqa: E402  (harness.py with a numpy stub)


class ProbeStragglerTest(unittest.TestCase):
    def setUp(self):
        self.h = load_harness()

    def test_the_cases_straggler_only_under_the_flag(self):
        python_spin = {"slow_worker_factor": 2.0}
        gil_free = {"slow_worker_factor": 2.0, "slow_worker_spin": "nogil"}
        self.assertEqual(self.h.probe_straggler(python_spin, True), (2.0, True))
        self.assertEqual(self.h.probe_straggler(gil_free, True), (2.0, False))
        self.assertEqual(self.h.probe_straggler({}, True), (1.0, True))    # no straggler in the case: none
        self.assertEqual(self.h.probe_straggler(gil_free, False), (1.0, True))

    def test_the_flag_parses_and_is_off_by_default(self):
        for args, expected in ((["--probe-with-straggler"], True), ([], False)):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = self.h.main(["--out", os.devnull, "--list", "--families", "slow_worker_order", *args])
            self.assertIn(rc, (0, None), out.getvalue())
            self.assertIs(self.h.PROBE_WITH_STRAGGLER, expected)
            self.assertIn("4 cases", out.getvalue())

    def test_a_straggler_probe_leaves_worker_0_out_of_the_wander(self):
        # worker 0 at twice the others' batch would read as core wander; batches outside the window never count
        per_worker = {"0": [[0.0, 0.2], [0.2, 0.4]], "1": [[0.0, 0.1], [0.1, 0.2], [0.45, 0.6]]}
        plain = self.h.window_batch_durations(per_worker, 0.0, 0.5)
        self.assertEqual(len(plain), 2)
        self.assertEqual([round(x, 6) for x in plain[0]], [0.2, 0.2])
        self.assertEqual([round(x, 6) for x in plain[1]], [0.1, 0.1])   # [0.45, 0.6] ends past the window
        with_straggler = self.h.window_batch_durations(per_worker, 0.0, 0.5, slow_worker_factor=2.0)
        self.assertEqual([[round(x, 6) for x in w] for w in with_straggler], [[0.1, 0.1]])


if __name__ == "__main__":
    unittest.main()
