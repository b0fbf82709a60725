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

    def test_the_returns_gap_quantile_is_the_nearest_rank_below(self):
        ends = [0.0, 1.0, 1.5, 3.5, 3.6, 4.6, 5.6, 6.6, 7.6, 8.6, 9.6]       # gaps 1, .5, 2, .1, then six of 1
        self.assertAlmostEqual(diag.return_gap_quantile(ends, 0.0), 0.1)
        self.assertAlmostEqual(diag.return_gap_quantile(ends, 0.1), 0.1)     # int(0.1 x 9) = 0: the smallest
        self.assertAlmostEqual(diag.return_gap_quantile(ends, 0.2), 0.5)     # int(0.2 x 9) = 1
        self.assertAlmostEqual(diag.return_gap_quantile(ends, 1.0), 2.0)
        self.assertIsNone(diag.return_gap_quantile(ends[:10], 0.1))          # 9 gaps

    def test_a_simulated_trace_reads_as_a_timeline_past_the_start(self):
        # 2 workers; the simulator's events in microseconds: a batch is its loads and its collate on "worker W",
        # the loop's next() carries the batch it returned. 10 batches, batch b on worker b % 2, returned at b + 1 s.
        ev = [{"ph": "M", "name": "thread_name", "tid": 1, "args": {"name": "main thread (training loop)"}},
              {"ph": "M", "name": "thread_name", "tid": 2, "args": {"name": "worker 0"}},
              {"ph": "M", "name": "thread_name", "tid": 3, "args": {"name": "worker 1"}}]
        for b in range(10):
            t0 = b * 1e6
            ev.append({"ph": "X", "tid": 2 + b % 2, "name": "load", "ts": t0, "dur": 2e5, "args": {"batch": b}})
            ev.append({"ph": "X", "tid": 2 + b % 2, "name": "collate", "ts": t0 + 2e5, "dur": 1e5,
                       "args": {"batch": b}})
            ev.append({"ph": "X", "tid": 1, "name": "next(): the loader's own Python", "ts": t0 + 9e5, "dur": 1e5,
                       "args": {"batch": b}})
        tl = diag.timeline_from_trace(ev, 2, skip_share=0.2)
        # the first fifth of 10 returns is 2 batches, a whole round of 2 workers: from batch 2 on
        self.assertEqual(tl["main"]["next_end"], [float(b + 1) for b in range(2, 10)])
        self.assertEqual(tl["workers"]["0"][0], (2.0, 2.3))                 # batch 2: its load and collate
        self.assertEqual(len(tl["workers"]["1"]), 4)                        # batches 3, 5, 7, 9
        self.assertEqual(diag.batch_spans(tl)[1], (3.0, 3.3))               # timeline index 1 is batch 3
        # a batch on the wrong worker is not round robin: no timeline
        ev.append({"ph": "X", "tid": 2, "name": "load", "ts": 0, "dur": 1, "args": {"batch": 11}})
        self.assertIsNone(diag.timeline_from_trace(ev, 2))

    def test_profile_sets_are_a_copy_with_numbers_set(self):
        prof = {"ipc": {"receive_s_per_batch": 0.0015}}
        got = diag.with_profile_sets(prof, ["ipc.receive_gil_share=0", "cpu.core_speed_cv=0.1"])
        self.assertEqual(got["ipc"], {"receive_s_per_batch": 0.0015, "receive_gil_share": 0.0})
        self.assertEqual(got["cpu"]["core_speed_cv"], 0.1)
        self.assertNotIn("receive_gil_share", prof["ipc"])          # the original untouched
        got = diag.with_profile_sets(dict(prof, ipc={"receive_gil_s_per_batch": 0.00048}),
                                     ["ipc.receive_gil_s_per_batch=none", "ipc.y=none"])
        self.assertEqual(got["ipc"], {})                              # removed; a key not there stays out
        for bad in ("ipc.receive_gil_share", "receive_gil_share=0", "ipc.x=abc", ".x=1"):
            with self.assertRaises(ValueError):
                diag.with_profile_sets(prof, [bad])

    def test_the_split_pools_counts_not_shares(self):
        a = {"close": 10, "close_overtaken": 6, "far": 90, "far_overtaken": 9}
        b = {"close": 0, "close_overtaken": 0, "far": 100, "far_overtaken": 5}
        got = diag.pooled_split([a, b])
        self.assertEqual((got["close"], got["far"]), (10, 190))
        self.assertAlmostEqual(got["sent_close_share"], 10 / 200)
        self.assertAlmostEqual(got["close_share"], 0.6)
        self.assertAlmostEqual(got["far_share"], 14 / 190)
        self.assertAlmostEqual(got["overtaken_share"], 20 / 200)
        self.assertIsNone(diag.pooled_split([b])["close_share"])
        self.assertIsNone(diag.pooled_split([]))

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
