"""new_shape_diagnostic's pure parts: the slow launches' share and cost, the window's spans, the same-law dataset;
new_shape_replay's rebuilt samplers and run 63's steps replayed."""
import json
import os
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


class Replay(unittest.TestCase):
    """new_shape_replay: the harness's samplers rebuilt, and run 63's steps replayed against their launches."""

    RUN63 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "2026-12-05-h200-run63seq")

    def test_the_constants_and_samplers_are_the_harness_s(self):
        import new_shape_replay as rp
        from test_convert import load_harness
        h = load_harness()
        self.assertEqual(rp.SEQ_PAD_MAX_TOKENS, h.SEQ_PAD_MAX_TOKENS)
        for n, length, seed in ((50, 120, 3), (6000, 900, 7)):
            order = rp.index_order(n, seed)
            self.assertEqual([next(order) for _ in range(length)], list(h.IndexSampler(n, length, seed=seed)))

    def test_kept_samples_are_time_getitem_s(self):
        import contextlib
        import io
        import new_shape_replay as rp
        import pipeplan_probe as probe

        class Identity:
            def __len__(self):
                return 6000

            def __getitem__(self, i):
                return i

        with contextlib.redirect_stderr(io.StringIO()):
            _, kept, _ = probe.time_getitem(Identity(), n_samples=400, keep=128, seed=11)
        self.assertEqual(rp.kept_lengths(list(range(6000)), "tokens"), kept)

    def test_batches_pad_to_their_longest_or_to_max(self):
        import new_shape_replay as rp
        lengths = [5, 9, 2, 7, 3, 3]
        self.assertEqual(rp.batch_shapes(lengths, iter(range(6)), 2, 3), [(2, 9), (2, 7), (2, 3)])
        self.assertEqual(rp.batch_shapes(lengths, iter(range(6)), 3, 2, pad_to=512), [(3, 512), (3, 512)])

    def test_recorded_shapes_by_hand(self):
        import new_shape_replay as rp
        # steps on lengths 100, 200, 100, 300, 200, 300 at 4 rows, (4, 300) run before: new, new, seen, seen, seen,
        # seen; launches slow (0.1 s) where new. Skip 0, so the window is all six steps.
        case = {"knobs": {"batch_size": 4, "num_workers": 2, "kind": "tokens"},
                "components": {"sequence_shapes_run_before": [[4, 300]]},
                "measured": {"skip": 0, "timeline": {"skip": 0, "main": {
                    "copied": [0.0] * 6, "launched": [0.1, 0.1, 0.01, 0.01, 0.01, 0.01],
                    "padded_length": [100, 200, 100, 300, 200, 300]}}}}
        r = rp.replay_case(case, None, set())
        self.assertEqual(r["warm_before"], [(4, 300)])
        self.assertEqual(r["source"], "recorded")
        self.assertAlmostEqual(r["new_share"], 2 / 6)
        # six spans are too few to split (split_new_shapes needs 10): no confusion counts
        self.assertEqual(r["slow_share"], 0.0)
        self.assertNotIn("both", r)
        # the same six lengths again, all seen now and all fast: 12 spans, split at the middle of 10 and 100 ms
        case["measured"]["timeline"]["main"] = {"copied": [0.0] * 12, "launched": [0.1, 0.1] + [0.01] * 10,
                                                "padded_length": [100, 200, 100, 300, 200, 300] * 2}
        r = rp.replay_case(case, None, set())
        self.assertEqual((r["both"], r["slow_seen"], r["fast_new"], r["fast_seen"]), (2, 0, 0, 10))
        self.assertIsNone(rp.replay_case({**case, "components": {}}, None, set()))

    def test_lines_that_are_not_the_call_s_are_refused(self):
        import tempfile
        import new_shape_replay as rp
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "token_lengths.json"), "w") as f:
                json.dump({"lengths": [10, 20, 30]}, f)
            doc = {"datasets": {"tokens": {"tokens_per_sample": {"n": 3, "mean": 21.0, "max": 30}}}}
            with self.assertRaisesRegex(ValueError, "not the call's dataset"):
                rp.read_lengths(d, doc)
            doc["datasets"]["tokens"]["tokens_per_sample"]["mean"] = 20.0
            self.assertEqual(rp.read_lengths(d, doc), [10, 20, 30])

    def test_run_63_every_slow_launch_is_a_new_shape(self):
        """Run 63 (a real measurement): with the process's warm shapes, every step of the three pad-to-longest cases
        is slow where its shape is new and fast where seen; without the components' warm shapes 11 fast steps would
        be new (the b16 case's probe window ran 30 of its batches first)."""
        import new_shape_replay as rp
        from convert import read_json, stored_json_path
        doc = read_json(stored_json_path(os.path.join(self.RUN63, "cases.json")))
        lengths = rp.read_lengths(self.RUN63, doc)
        seen, cold = set(), set()
        got, off_without = [], 0
        for case in doc["cases"]:
            if case["knobs"]["kind"] != "tokens":
                continue
            r = rp.replay_case(case, lengths, seen)
            got.append((r["both"], r["slow_seen"], r["fast_new"], r["fast_seen"]))
            off_without += rp.replay_case(case, lengths, cold, components=False)["fast_new"]
        self.assertEqual(got, [(73, 0, 0, 14), (106, 0, 0, 14), (67, 0, 0, 71)])
        self.assertEqual(off_without, 11)


class InSituOverlap(unittest.TestCase):
    def test_by_hand(self):
        """10 new steps: launches 52 ms (50 more than the seen steps' 2), 57 ms to the sync; a 10 ms GPU step: the
        build plus (1 - f) x 10 ms = 57, f = (50 - (57 - 10)) / 10 = 0.3."""
        import new_shape_replay as rp
        shapes = [(4, 100 + i) for i in range(10)] + [(4, 100 + i) for i in range(10)]
        new = [True] * 10 + [False] * 10
        copied = [float(i) for i in range(20)]
        launched = [c + (0.052 if n else 0.002) for c, n in zip(copied, new)]
        synced = [c + (0.057 if n else 0.012) for c, n in zip(copied, new)]
        case = {"components": {"sequence_step_shapes": {"fit": {"fixed_s": 0.010, "per_token_s": 0.0}}},
                "measured": {"skip": 0, "timeline": {"skip": 0, "main": {"copied": copied, "launched": launched,
                                                                          "synced": synced}}}}
        self.assertAlmostEqual(rp.insitu_overlap_fraction(case, {"shapes": shapes, "new": new}), 0.3, places=6)
        self.assertIsNone(rp.insitu_overlap_fraction(case, {"shapes": shapes[:12], "new": new[:12]}))  # 2 seen


class LengthsNoLineHas(unittest.TestCase):
    """harness.lengths_no_line_has: the lengths the new-shape component steps on at the case's own rows."""

    def test_spread_over_the_free_lengths_and_none_a_line_has(self):
        from test_convert import load_harness
        h = load_harness()
        hist = [[300, 4], [301, 1], [1200, 2]]
        got = h.lengths_no_line_has(hist, 300, 1200, 4)
        # 898 free lengths (302..1199): the first, the last and two evenly between
        self.assertEqual(got, [302, 601, 900, 1199])
        self.assertFalse({300, 301, 1200} & set(got))
        # fewer free than asked: every free one
        self.assertEqual(h.lengths_no_line_has([[16, 1]], 16, 18, 4), [17, 18])
        self.assertEqual(h.lengths_no_line_has(None, 5, 9, 1), [5])
        self.assertEqual(h.lengths_no_line_has([[7, 1]], 7, 7, 2), [])


if __name__ == "__main__":
    unittest.main()
