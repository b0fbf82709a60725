"""probe_window_diagnostic's pure parts and its command line, against hand calculations."""
import io
import json
import lzma
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_window_diagnostic as pw  # noqa: E402


class WindowRatios(unittest.TestCase):
    def test_a_slow_second_window(self):
        # batches every 0.25 s from 0 to 2.0: window [0,1) holds 4 of 0.1 s, [1,2) holds 4 of 0.2 s; the batch
        # starting at 2.0 opens a third window that the starts do not run past, so it is left out. The mean over
        # all 9 batches is (0.4 + 0.8 + 0.2) / 9 = 1.4 / 9.
        batches = [(0.25 * i, 0.1) for i in range(4)] + [(1.0 + 0.25 * i, 0.2) for i in range(4)] + [(2.0, 0.2)]
        r = pw.window_ratios(batches, 1.0)
        self.assertEqual(len(r), 2)
        self.assertAlmostEqual(r[0], 0.1 / (1.4 / 9))
        self.assertAlmostEqual(r[1], 0.2 / (1.4 / 9))

    def test_even_speed_reads_one(self):
        batches = [(0.1 * i, 0.3) for i in range(50)]
        self.assertEqual([round(x, 12) for x in pw.window_ratios(batches, 1.5)], [1.0, 1.0, 1.0])

    def test_too_little(self):
        self.assertEqual(pw.window_ratios([(0.0, 0.1)], 1.0), [])
        self.assertEqual(pw.window_ratios([(0.0, 0.1), (0.5, 0.1)], 1.0), [])  # shorter than one window


class Halves(unittest.TestCase):
    def test_a_worker_that_stays_slow(self):
        # worker A 0.1 s throughout, worker B 0.3 s throughout (8 batches each): mean 0.2, halves 0.5/0.5 and 1.5/1.5
        f, s = pw.worker_halves([[0.1] * 8, [0.3] * 8])
        self.assertEqual([round(x, 12) for x in f], [0.5, 1.5])
        self.assertEqual([round(x, 12) for x in s], [0.5, 1.5])

    def test_a_machine_wide_drift_between_halves_does_not_enter(self):
        # both workers 1.5x slower in the second half: over each half's own mean A reads 0.5 then 0.5, B 1.5 then 1.5
        # (over the case's mean, 0.25 in all, they would read 0.4 / 0.6 and 1.2 / 1.8)
        f, s = pw.worker_halves([[0.1] * 4 + [0.15] * 4, [0.3] * 4 + [0.45] * 4])
        self.assertEqual([round(x, 12) for x in f], [0.5, 1.5])
        self.assertEqual([round(x, 12) for x in s], [0.5, 1.5])

    def test_short_workers_left_out(self):
        f, s = pw.worker_halves([[0.1] * 7, [0.2] * 8])
        self.assertEqual(len(f), 1)
        self.assertAlmostEqual(f[0], 1.0)


class VcpuSplitHalf(unittest.TestCase):
    def test_fixed_fast_and_slow_vcpus_correlate(self):
        speeds = {0: 0.9, 1: 1.0, 2: 1.1, 3: 1.2}
        cases = [{c: [v] for c, v in speeds.items()} for _ in range(4)]
        self.assertAlmostEqual(pw.vcpu_split_half(cases)["r"], 1.0)

    def test_swapped_speeds_anticorrelate(self):
        a = {0: [0.9], 1: [1.0], 2: [1.1]}
        b = {0: [1.1], 1: [1.0], 2: [0.9]}
        v = pw.vcpu_split_half([a, b])
        self.assertEqual(v["cpus"], 3)
        self.assertAlmostEqual(v["r"], -1.0)

    def test_too_few_cpus(self):
        self.assertIsNone(pw.vcpu_split_half([{0: [1.0], 1: [1.1]}, {0: [1.0], 1: [1.2]}]))


def timeline_case(n_workers: int, family: str = "num_workers") -> dict:
    # each worker: 30 batches 0.2 s apart, CPU 0.2 s, on CPU = its id
    workers = {str(w): [[0.2 * i, 0.2 * i + 0.19] for i in range(30)] for w in range(n_workers)}
    cpu = {str(w): [[0.2, w, w, 0.0] for _ in range(30)] for w in range(n_workers)}
    return {"id": f"x-{family}", "family": family, "status": "ok",
            "knobs": {"kind": "image", "num_workers": n_workers},
            "measured": {"timeline": {"workers": workers, "workers_cpu": cpu}}}


class CommandLine(unittest.TestCase):
    def run_main(self, args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = pw.main(args)
        return rc, out.getvalue(), err.getvalue()

    def test_missing_folder_is_one_line_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out, err = self.run_main([os.path.join(d, "nope")])
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertIn("nope", err)

    def test_even_cases_read_no_spread(self):
        with tempfile.TemporaryDirectory() as d:
            with lzma.open(os.path.join(d, "cases.json.xz"), "wt") as f:
                json.dump({"cases": [timeline_case(8), timeline_case(8), timeline_case(2),
                                     timeline_case(8, "slow_worker")]}, f)
            rc, out, err = self.run_main([d])
        self.assertEqual(rc, 0, err)
        line = next(ln for ln in out.splitlines() if ln.startswith("image  8+"))
        self.assertIn("0.0% (  2 cases)", line)  # the straggler case is not counted
        # one two-worker case spans 5.8 s: three 1.5 s windows, fewer than the 5 a cell needs
        self.assertTrue(next(ln for ln in out.splitlines() if ln.startswith("image  2-4")).split()[2] == "n/a")

    def test_no_timelines_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "cases.json"), "w") as f:
                json.dump({"cases": [{"id": "a", "knobs": {"num_workers": 8}, "measured": {}}]}, f)
            rc, out, err = self.run_main([d])
        self.assertEqual(rc, 2)
        self.assertIn("no case with a workers_cpu timeline", err)


if __name__ == "__main__":
    unittest.main()
