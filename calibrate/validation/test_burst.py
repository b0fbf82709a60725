"""burst_diagnostic's pure parts, against hand calculations."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import burst_diagnostic as bd  # noqa: E402


class CompletionGaps(unittest.TestCase):
    def test_evenly_spread_completions_have_no_spread(self):
        g = bd.completion_gaps([0.3, 0.1, 0.2, 0.4])          # order does not matter
        self.assertEqual(g["n"], 3)
        self.assertAlmostEqual(g["mean_s"], 0.1)
        self.assertAlmostEqual(g["cv"], 0.0)
        self.assertEqual(g["tiny_share"], 0.0)

    def test_a_burst(self):
        # four workers finishing together every 0.4 s: gaps 0, 0, 0, 0.4, 0, 0, 0 -> mean 0.4/7,
        # population sd sqrt(mean of squares - mean^2) = sqrt(0.16/7 - (0.4/7)^2), cv = sqrt(7 - 1) = 2.449
        g = bd.completion_gaps([0.0, 0.0, 0.0, 0.0, 0.4, 0.4, 0.4, 0.4])
        self.assertAlmostEqual(g["mean_s"], 0.4 / 7)
        self.assertAlmostEqual(g["cv"], 6 ** 0.5)
        self.assertAlmostEqual(g["tiny_share"], 6 / 7)

    def test_too_few(self):
        self.assertIsNone(bd.completion_gaps([1.0, 2.0]))
        self.assertIsNone(bd.completion_gaps([1.0, 1.0, 1.0]))   # no time between them


class Completions(unittest.TestCase):
    def test_measured_after_the_window_opens(self):
        tl = {"skip": 1, "main": {"next_end": [0.5, 1.0, 1.2]},
              "workers": {"0": [[0.1, 0.9], [0.9, 1.3]], "1": [[0.2, 1.1], [1.1, 1.6]]}}
        self.assertEqual(sorted(bd.measured_completions(tl)), [1.1, 1.3, 1.6])

    def test_simulated_from_the_trace_after_the_warmup_share(self):
        ev = [{"name": "load+collate", "ph": "X", "ts": ts, "dur": 100_000} for ts in (0, 100_000, 500_000, 800_000)]
        ev.append({"name": "pin_memory", "ph": "X", "ts": 850_000, "dur": 10})
        # active 0 .. 0.9 s; spans starting after 0.18 s: 0.5 and 0.8 s, ending 0.6 and 0.9 s
        self.assertEqual(bd.simulated_completions({"traceEvents": ev}), [0.6, 0.9])
        self.assertEqual(bd.simulated_completions({"traceEvents": []}), [])


if __name__ == "__main__":
    unittest.main()
