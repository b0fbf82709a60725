"""release_hold_diagnostic.py: the loop's .item() waits split by a pin_memory() end inside them, by hand."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import release_hold_diagnostic as rh  # noqa: E402


def timeline(launched, synced, pins, skip=0):
    return {"main": {"launched": launched, "synced": synced}, "pin": pins, "skip": skip}


class WaitsByPinEnd(unittest.TestCase):
    # Three steps: the first wait (0.000-0.004) takes in no end; the second (0.010-0.021) takes in the pin call that
    # ended at 0.013, returning 8 ms after it; the third (0.030-0.034) none (the call ending at 0.035 is after it).
    # A skipped first step is left out.
    def test_splits_the_waits_by_an_end_inside_them(self):
        main = {"launched": [0.000, 0.010, 0.030], "synced": [0.004, 0.021, 0.034]}
        pins = [[0.003, 0.013], [0.025, 0.035]]
        took_in, others = rh.waits_by_pin_end(main, pins, 0)
        self.assertEqual(len(took_in), 1)
        self.assertAlmostEqual(took_in[0][0], 0.011)
        self.assertAlmostEqual(took_in[0][1], 0.008)
        self.assertEqual([round(x, 6) for x in others], [0.004, 0.004])
        took_in, others = rh.waits_by_pin_end(main, pins, 1)
        self.assertEqual((len(took_in), len(others)), (1, 1))

    def test_two_ends_in_one_wait_count_from_the_last(self):
        took_in, _ = rh.waits_by_pin_end({"launched": [0.0], "synced": [0.020]}, [[0.0, 0.005], [0.006, 0.012]], 0)
        self.assertAlmostEqual(took_in[0][1], 0.008)

    def test_quantile_by_rank(self):
        self.assertEqual(rh.quantile([5, 1, 3, 2, 4], 0.1), 1)
        self.assertEqual(rh.quantile([5, 1, 3, 2, 4], 0.9), 5)


class PiecesByReleaseStart(unittest.TestCase):
    # Pieces 0-1, 2-3 and 4-6 ms; releases begin at 0.5 and 6.0 ms (6.0 is the last piece's end: not inside it).
    def test_splits_the_pieces_by_a_release_begun_inside(self):
        hit, miss = rh.pieces_by_release_start([(0.000, 0.001), (0.002, 0.003), (0.004, 0.006)], [0.006, 0.0005])
        self.assertEqual([round(x, 6) for x in hit], [0.001])
        self.assertEqual([round(x, 6) for x in miss], [0.001, 0.002])

    def test_the_line_counts_and_takes_medians_by_piece(self):
        line = rh.pieces_line("measured", {"launches": ([0.004, 0.005, 0.006], [0.0005]), ".to()": ([], [0.0001])})
        self.assertEqual(line, "measured: the release began inside launches 3 of 4 5.00 ms (others 0.50); "
                               ".to() 0 of 1 (others 0.10)")

    def test_measured_pieces_read_the_timeline_marks(self):
        main = {"next_start": [0.0, 0.010], "next_end": [0.001, 0.011], "copied": [0.002, 0.012],
                "launched": [0.006, 0.013]}
        split = rh.measured_pieces({"measured": {"timeline": {"main": main, "pin": [[0.0, 0.003]], "skip": 0}}})
        self.assertEqual(len(split["launches"][0]), 1)        # the end at 3 ms falls in step 0's launches (2-6 ms)
        self.assertAlmostEqual(split["launches"][0][0], 0.004)
        self.assertEqual(len(split[".to()"][0]), 0)
        self.assertIsNone(rh.measured_pieces({"measured": {"timeline": {"main": {}, "pin": []}}}))


class Main(unittest.TestCase):
    def test_a_call_folder_prints_its_pinned_cases(self):
        main = {"launched": [0.01 * i for i in range(10)], "synced": [0.01 * i + 0.009 for i in range(10)]}
        pins = [[0.01 * i, 0.01 * i + 0.001] for i in range(1, 10, 2)]   # an end 8 ms before every odd wait's return
        cases = {"cases": [{"id": "00-pinned", "knobs": {"pin_memory": True},
                            "measured": {"timeline": timeline(main["launched"], main["synced"], pins)}},
                           {"id": "01-unpinned", "knobs": {"pin_memory": False}, "measured": {}}]}
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "cases.json"), "w") as f:
                json.dump(cases, f)
            with open(os.path.join(d, "profile.json"), "w") as f:
                json.dump({"ipc": {"release_s_per_byte": 1.8e-10}}, f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(rh.main([d]), 0)
        text = out.getvalue()
        self.assertIn("calibrate's release 1.8e-10 s/B", text)
        self.assertIn("00-pinned: 5 waits took in a pin_memory() end: 9.0 ms, returning 8.00 ms after it", text)
        self.assertIn("5 others 9.0 ms", text)
        self.assertNotIn("01-unpinned", text)

    @unittest.skipUnless(os.access(os.path.join(HERE, "..", "..", "build", "cli", "pipeplan"), os.X_OK),
                         "needs build/cli/pipeplan")
    def test_simulated_splits_a_real_calls_cases(self):
        # run 72b: its four in-order cases (the unordered ones' waits take in too few ends for a line), measured and
        # simulated lines side by side (run 72, finding 5)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(rh.main([os.path.join(HERE, "results", "2026-12-06-h100-run72b"), "--simulated"]), 0)
        text = out.getvalue()
        self.assertEqual(text.count("    measured: the release began inside next() "), 4, text)
        self.assertEqual(text.count("    simulated: the release began inside next() "), 4, text)
        for case in ("00-", "02-", "05-", "07-"):
            self.assertIn("\n  " + case + "slow_worker_order", text)

    def test_a_bad_minimum_is_one_line_and_exit_2(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(rh.main(["x", "--min-steps", "0"]), 2)
        self.assertEqual(err.getvalue().count("\n"), 1)


if __name__ == "__main__":
    unittest.main()
