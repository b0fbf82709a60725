"""wander_bench.py's reading of insitu_diagnostic's lines and its per-batch-size summary (hand-computed)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wander_bench as bench  # noqa: E402

LINES = """\
00-batch_size-image-b16-w8-pf2-pin-nb-default-s1-mm6.25-warm    1373    1389   +1.2%   p90 step   34.9   34.5 ms   -1.2%
01-batch_size-image-b32-w8-pf2-pin-nb-default-s1-mm12.5-warm    1324    1341   +1.3%   p90 step   69.9   74.4 ms   +6.4%
02-batch_size-image-b64-w8-pf2-pin-nb-default-s1-mm25-warm-r    1356    1300   -4.1%   p90 step  135.5  120.0 ms  -11.4%
03-batch_size-image-b64-w8-pf2-pin-nb-default-s1-mm25-warm      1274    1300   +2.0%   p90 step  153.9  160.0 ms   +4.0%
05-batch_size-image-b64-w8-pf2-pin-nb-default-s1-mm25-warm-r    1401    1410   +0.6%   p90 step   95.8   99.0 ms   +3.3%
throughput: median |err| 1.3%, p90 2.0%; p90 step time: median |err| 4.0%, p90 11.4% over 5 cases
"""


class Bench(unittest.TestCase):
    def test_parse_reads_each_case_line_and_its_batch_size(self):
        rows = bench.parse(LINES)
        self.assertEqual([r[0] for r in rows], [16, 32, 64, 64, 64])
        self.assertEqual(rows[2], (64, -4.1, -11.4))

    def test_summary_is_the_signed_median_per_batch_size(self):
        got = bench.summary(bench.parse(LINES))
        self.assertEqual(got[64][0], 3)
        self.assertAlmostEqual(got[64][1], 0.6)   # median of -4.1, +2.0, +0.6
        self.assertAlmostEqual(got[64][2], 3.3)   # median of -11.4, +4.0, +3.3
        self.assertEqual(got[16][2], -1.2)
        self.assertEqual(got[16][5], 0.0)         # one case: every resample's median is that case

    def test_median_standard_error_scales_as_the_spread(self):
        # the bootstrap se of a median is about 1.25 sd / sqrt(n) for normal values: 41 evenly spread quantiles of a
        # standard normal (sd about 1) give about 0.2; the same values x 10 give 10 times that (same seed)
        from statistics import NormalDist
        vals = [NormalDist().inv_cdf((i + 0.5) / 41) for i in range(41)]
        se = bench.median_standard_error(vals)
        self.assertGreater(se, 0.12)
        self.assertLess(se, 0.3)
        self.assertAlmostEqual(bench.median_standard_error([10 * v for v in vals]), 10 * se, places=9)


if __name__ == "__main__":
    unittest.main()
