#!/usr/bin/env python3
"""worker_offsets_diagnostic.py's pure parts against hand calculations (plain Python, no pipeplan)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import worker_offsets_diagnostic as W  # noqa: E402


class WorkerOffsetsTest(unittest.TestCase):
    def test_quarter_means_take_the_batches_wholly_inside_each_part(self):
        # [0, 4] in quarters of 1 s; the batch (0.9, 1.1) straddles the first edge and counts in neither
        iv = [(0.0, 0.4), (0.4, 0.9), (0.9, 1.1), (1.1, 1.5), (1.5, 1.9), (2.0, 2.2), (2.2, 2.4), (3.0, 3.5),
              (3.5, 4.0)]
        self.assertEqual([[round(x, 6) for x in q] for q in W.quarter_means([iv], 0.0, 4.0)],
                         [[0.45, 0.4, 0.2, 0.5]])
        self.assertIsNone(W.quarter_means([iv[:3]], 0.0, 4.0))  # a worker with under two batches in a part

    def test_persistent_offsets_correlate_one(self):
        # three workers at 1.0, 1.1 and 1.2 s a batch in every quarter: each slower one stays slower
        p = W.persistence([[1.0] * 4, [1.1] * 4, [1.2] * 4])
        self.assertAlmostEqual(p["adjacent"], 1.0)
        self.assertAlmostEqual(p["first_last"], 1.0)
        self.assertAlmostEqual(p["halves"], 1.0)
        # the workers' whole-window means 1.0, 1.1, 1.2: pstdev 0.08165 over 1.1
        self.assertAlmostEqual(p["spread_cv"], 0.0816497 / 1.1, places=6)

    def test_speeds_that_swap_correlate_minus_one_and_leave_no_spread(self):
        p = W.persistence([[1.0, 1.2, 1.0, 1.2], [1.2, 1.0, 1.2, 1.0], [1.1, 1.1, 1.1, 1.1]])
        self.assertAlmostEqual(p["adjacent"], -1.0)
        self.assertAlmostEqual(p["first_last"], -1.0)
        self.assertIsNone(p["halves"])  # every worker's half means are 1.1: no spread to correlate
        self.assertAlmostEqual(p["spread_cv"], 0.0)


if __name__ == "__main__":
    unittest.main()
