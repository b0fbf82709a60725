"""new_shape_diagnostic's pure parts: the slow launches' share and cost, the window's spans, the same-law dataset."""
import unittest

from new_shape_diagnostic import launch_spans_s, same_law_histogram, split_new_shapes


class SplitNewShapes(unittest.TestCase):
    def test_bimodal_launches_give_the_slow_share_and_the_difference_of_medians(self):
        spans = [0.010] * 20 + [0.130] * 80   # 80 new shapes at 130 ms, 20 seen at 10 ms
        share, cost = split_new_shapes(spans)
        self.assertAlmostEqual(share, 0.8)
        self.assertAlmostEqual(cost, 0.120)

    def test_one_shape_has_no_split(self):
        self.assertEqual(split_new_shapes([0.010, 0.011, 0.012, 0.013] * 10), (0.0, None))

    def test_too_few_spans(self):
        self.assertEqual(split_new_shapes([0.01, 0.2]), (0.0, None))


class Spans(unittest.TestCase):
    def test_the_window_starts_after_skip(self):
        case = {"measured": {"skip": 1, "timeline": {"skip": 1, "main": {"copied": [0.0, 1.0, 2.0],
                                                                            "launched": [0.5, 1.25, 2.1]}}}}
        got = launch_spans_s(case)
        self.assertEqual(len(got), 2)
        self.assertAlmostEqual(got[0], 0.25)
        self.assertAlmostEqual(got[1], 0.1)


class SameLaw(unittest.TestCase):
    def test_counts_sum_to_n_within_the_cut(self):
        h = same_law_histogram({"mean": 256, "cv": 0.6, "max": 1377, "n": 6000})
        self.assertEqual(sum(c for _, c in h), 6000)
        self.assertGreaterEqual(h[0][0], 8)
        self.assertLessEqual(h[-1][0], 1377)
        mean = sum(t * c for t, c in h) / 6000
        self.assertAlmostEqual(mean, 256, delta=256 * 0.05)   # int() truncation and the cut take under 1 token


if __name__ == "__main__":
    unittest.main()
