import math
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overtake_diagnostic as diag  # noqa: E402
import timeline_analysis  # noqa: E402


class OvertakeTest(unittest.TestCase):
    # 2 workers, prefetch_factor 1: batch j is worker j % 2's (j // 2)-th, and batch j's index went out when the loop
    # took batch j - 2 (main next_end). Batches 2 and 3 were sent 0.5 ms apart (the loop took 0 and 1 back to back),
    # 3 and 4 and 4 and 5 about a second apart. Batch 3 ends before 2 (overtaken, sent together), 4 after 3, 5 before 4
    # (overtaken, sent apart): 1 of 1 close, 1 of 2 far.
    TIMELINE = {"main": {"next_end": [1.0, 1.0005, 2.0, 3.0, 4.0, 5.0]},
                "workers": {"0": [[0.0, 0.5], [1.0, 1.5], [2.0, 2.5]],
                            "1": [[0.0, 0.6], [1.0, 1.4], [2.0, 2.4]]}}

    def test_batches_are_dealt_round_robin(self):
        spans = diag.batch_spans(self.TIMELINE)
        self.assertEqual(sorted(spans), [0, 1, 2, 3, 4, 5])
        self.assertEqual(spans[3], [1.0, 1.4])      # worker 1's second batch

    def test_overtakes_split_by_how_close_the_indices_went_out(self):
        got = diag.overtakes_by_send_gap(self.TIMELINE, prefetch_factor=1, gap_s=0.002)
        self.assertEqual((got["close"], got["close_overtaken"], got["far"], got["far_overtaken"]), (1, 1, 2, 1))
        self.assertEqual((got["close_share"], got["far_share"]), (1.0, 0.5))
        # with a 0.1 ms gap nothing went out together
        got = diag.overtakes_by_send_gap(self.TIMELINE, prefetch_factor=1, gap_s=0.0001)
        self.assertEqual((got["close"], got["far"], got["far_overtaken"]), (0, 3, 2))
        self.assertIsNone(diag.overtakes_by_send_gap({"main": {"next_end": [1.0]}, "workers": {}}, 1, 0.002))

    def test_windowed_common_share_over_one_window_is_the_whole(self):
        rng = random.Random(4)
        spans = []
        for _ in range(4):
            series = [0.05 * math.exp(0.2 * math.sin(k / 9.0) + rng.gauss(0.0, 0.1)) for k in range(100)]
            spans.append([[k + 0.5 - d / 2, k + 0.5 + d / 2] for k, d in enumerate(series)])
        whole = timeline_analysis.common_share(spans)["share"]
        span_s = max(s[1] for w in spans for s in w) - min(s[0] for w in spans for s in w)
        self.assertAlmostEqual(diag.windowed_common_share(spans, span_s), whole)
        self.assertIsNone(diag.windowed_common_share(spans, 0.01))     # no batch fits in a window that short
        # in 10 s windows the slow shared sine (a period of 57 batches) is mostly taken out with each window's mean
        self.assertLess(diag.windowed_common_share(spans, 10.0), whole)


if __name__ == "__main__":
    unittest.main()
