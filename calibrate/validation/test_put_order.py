"""put_order_diagnostic's pure functions, by hand."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import put_order_diagnostic as P  # noqa: E402


def steady_pairs(n, late=None, gap_s=0.020):
    """n batches collated gap_s apart, a loop that waits for each (next() 5 ms) except the batches in `late`'s values:
    {b: (d_s, in_hand)} sets batch b's collate d_s after b-1's and whether the loop found it in hand."""
    done, start, called, returned = {}, {}, {}, {}
    t = 0.0
    for b in range(n):
        d, hand = (late or {}).get(b, (gap_s, False))
        t += d
        done[b] = t
        start[b] = t - 0.070
        called[b] = 1.0 + b * gap_s
        returned[b] = called[b] + (0.0001 if hand else 0.005)
    return start, done, called, returned


class Bins(unittest.TestCase):
    def test_edges(self):
        self.assertEqual(P.bin_of(-1.0), 0)
        self.assertEqual(P.bin_of(-0.0001), P.EDGES_S.index(0.0))
        self.assertEqual(P.bin_of(0.0), P.EDGES_S.index(0.0) + 1)
        self.assertEqual(P.bin_of(1.0), len(P.EDGES_S))


class InHandPairs(unittest.TestCase):
    def test_a_near_tie_in_hand_and_one_not(self):
        # batch 12 collated 0.3 ms after 11 and was in hand (it reached the pin thread first); batch 15 0.7 ms after
        # 14 and was not; every other pair 20 ms apart, waited for
        start, done, called, returned = steady_pairs(20, {12: (0.0003, True), 15: (0.0007, False)})
        pairs = P.in_hand_pairs(start, done, called, returned, 0, 19)
        self.assertEqual(len(pairs), 20 - (P.LOOK_BACK + 1))
        c = P.curve(pairs)
        self.assertEqual(c[P.bin_of(0.0003)], (1, 1))
        self.assertEqual(c[P.bin_of(0.0007)], (0, 1))
        self.assertEqual(c[P.bin_of(0.020)], (0, len(pairs) - 2))

    def test_a_pair_behind_an_older_batch_is_left_out(self):
        # batches collated 20 ms apart but batch 10, 50 ms late (at 250 ms, after 11 at 220 and 12 at 240): the pairs
        # (11, 12) and (12, 13) have it still out among their older batches (one of theirs collated before it), so
        # they are left out; (10, 11) keeps it as its b-1, and (13, 14) on have both collated after it
        start, done, called, returned = steady_pairs(20)
        done = {b: 0.020 * b for b in range(20)}
        done[10] += 0.050
        pairs = P.in_hand_pairs(start, done, called, returned, 0, 19)
        ds = sorted(round(d, 4) for d, _, _ in pairs)
        self.assertEqual(len(pairs), 11 - 2)              # b = 9..19 less b = 12 and 13
        self.assertEqual(ds[0], -0.03)                    # (10, 11): 220 - 250 ms
        self.assertEqual(ds.count(0.07), 1)               # (9, 10): 250 - 180 ms
        self.assertEqual(ds.count(0.02), 7)               # (8, 9) and (13, 14) .. (18, 19)

    def test_together_split(self):
        start, done, called, returned = steady_pairs(12, {11: (0.0002, True)})
        start[11] = start[10] + 0.001       # its worker started 1 ms after batch 10's
        pairs = P.in_hand_pairs(start, done, called, returned, 0, 11)
        self.assertEqual(P.curve(pairs, together=True)[P.bin_of(0.0002)], (1, 1))
        self.assertEqual(sum(n for _, n in P.curve(pairs, together=True)), 1)
        self.assertEqual(sum(n for _, n in P.curve(pairs, together=False)), len(pairs) - 1)


class Eligible(unittest.TestCase):
    def test_only_pinned_in_order_multi_worker_cases_with_pin_spans(self):
        tl = {"pin": [[0.0, 0.01]]}
        self.assertTrue(P.eligible({"pin_memory": True, "num_workers": 8}, tl))
        self.assertFalse(P.eligible({"pin_memory": False, "num_workers": 8}, tl))
        self.assertFalse(P.eligible({"pin_memory": True, "num_workers": 8, "in_order": False}, tl))
        self.assertFalse(P.eligible({"pin_memory": True, "num_workers": 1}, tl))
        self.assertFalse(P.eligible({"pin_memory": True, "num_workers": 8}, {"pin": []}))
        self.assertFalse(P.eligible({"pin_memory": True, "num_workers": 8}, None))


class ReceivedPairs(unittest.TestCase):
    def test_the_pin_threads_own_order_and_delays(self):
        # two workers; batches 0..5 collated at 10, 20, 30, 30.4, 50, 60 ms (worker b % 2); the pin thread took batch 3
        # before 2 (3 collated 0.4 ms after 2), each 2 ms after its collate but batch 2, 3 ms
        workers = {"0": [[0.0, 0.010], [0.015, 0.030], [0.035, 0.050]],
                   "1": [[0.005, 0.020], [0.016, 0.0304], [0.045, 0.060]]}
        order = [0, 1, 3, 2, 4, 5]
        when = {0: 0.012, 1: 0.022, 2: 0.033, 3: 0.0324, 4: 0.052, 5: 0.062}
        case = {"knobs": {"num_workers": 2},
                "measured": {"timeline": {"skip": 1, "workers": workers,
                                          "pin_received": [[b, when[b]] for b in order]}}}
        pairs, delays = P.received_pairs(case)
        self.assertEqual(len(pairs), 4)                    # (1,2), (2,3), (3,4), (4,5): from the skip on
        swapped = [(round(d, 4), first) for d, first, _ in pairs if first]
        self.assertEqual(swapped, [(0.0004, True)])
        self.assertEqual(len(delays), 5)
        self.assertAlmostEqual(sorted(delays)[-1], 0.003)
        self.assertAlmostEqual(sorted(delays)[0], 0.002)
        # together: batch 3's worker started 1 ms after batch 2's
        self.assertEqual([t for d, _, t in pairs], [False, True, False, False])

    def test_none_without_the_record(self):
        case = {"knobs": {"num_workers": 2}, "measured": {"timeline": {"skip": 0, "workers": {}}}}
        self.assertEqual(P.received_pairs(case), ([], []))


class WaitedDelays(unittest.TestCase):
    def test_only_batches_the_pin_thread_waited_for(self):
        # the pin thread's order 0, 1, 2, 3; its pin_memory() of each ended at 20, 40, 48, 70 ms. Batch 1 collated at
        # 30 ms (10 after 0's end: waited) and was got at 33.5; batch 2 at 42 (2 after 1's end, inside the release:
        # queued) got at 44; batch 3 at 60 (12 after 2's end) got at 62.5; batch 0 has no batch before it
        done = {0: 0.005, 1: 0.030, 2: 0.042, 3: 0.060}
        taken = [(0, 0.010), (1, 0.0335), (2, 0.044), (3, 0.0625)]
        ends = [0.020, 0.040, 0.048, 0.070]
        d = P.waited_delays(done, taken, ends, skip=0)
        self.assertEqual([round(x, 4) for x in d], [0.0035, 0.0025])
        # from the skip on only
        self.assertEqual([round(x, 4) for x in P.waited_delays(done, taken, ends, skip=2)], [0.0025])
        # a margin of 1 ms keeps batch 2 too (2 ms after 1's end)
        self.assertEqual(len(P.waited_delays(done, taken, ends, skip=0, margin_s=0.001)), 3)

    def test_the_simulated_trace(self):
        # a pin thread (tid 9) and a worker (tid 1): batch 0 collates at 0-10 ms, batch 1 at 10-30; the pin thread
        # maps batch 0 from 14 ms (done at 20), batch 1 from 36 ms (its collate ended 10 ms after 0's pin_memory end)
        ev = [{"ph": "M", "name": "thread_name", "tid": 9, "args": {"name": "pin_memory thread"}},
              {"ph": "M", "name": "thread_name", "tid": 1, "args": {"name": "worker 0"}},
              {"ph": "X", "tid": 1, "name": "load+collate", "ts": 0, "dur": 10000, "args": {"batch": 0}},
              {"ph": "X", "tid": 1, "name": "load+collate", "ts": 10000, "dur": 20000, "args": {"batch": 1}},
              {"ph": "X", "tid": 9, "name": "map, touch (holds the memory map)", "ts": 14000, "dur": 1000,
               "args": {"batch": 0}},
              {"ph": "X", "tid": 9, "name": "pin_memory", "ts": 12000, "dur": 8000, "args": {"batch": 0}},
              {"ph": "X", "tid": 9, "name": "map, touch (holds the memory map)", "ts": 36000, "dur": 1000,
               "args": {"batch": 1}},
              {"ph": "X", "tid": 9, "name": "pin_memory", "ts": 33000, "dur": 8000, "args": {"batch": 1}}]
        self.assertEqual([round(x, 4) for x in P.simulated_waited(ev, skip=0)], [0.006])


class SimulatedReceivedPairs(unittest.TestCase):
    def test_the_simulated_pin_threads_order(self):
        # two workers (tids 1, 2): batch 0 on worker 0 collates 0-10 ms, batch 1 on worker 1 0-9.8 ms (0.2 ms before
        # batch 0), batch 2 on worker 0 10-30 ms. The pin thread (tid 9) maps batch 1 first (12 ms), then 0 (20 ms),
        # then 2 (35 ms): pair (0, 1): d = -0.2 ms, 1 taken first; pair (1, 2): d = 20.2 ms, 2 taken after
        ev = [{"ph": "M", "name": "thread_name", "tid": 9, "args": {"name": "pin_memory thread"}},
              {"ph": "M", "name": "thread_name", "tid": 1, "args": {"name": "worker 0"}},
              {"ph": "M", "name": "thread_name", "tid": 2, "args": {"name": "worker 1"}},
              {"ph": "X", "tid": 1, "name": "load+collate", "ts": 0, "dur": 10000, "args": {"batch": 0}},
              {"ph": "X", "tid": 2, "name": "load+collate", "ts": 0, "dur": 9800, "args": {"batch": 1}},
              {"ph": "X", "tid": 1, "name": "load+collate", "ts": 10000, "dur": 20000, "args": {"batch": 2}}]
        for b, t in ((1, 12000), (0, 20000), (2, 35000)):
            ev.append({"ph": "X", "tid": 9, "name": "map, touch (holds the memory map)", "ts": t, "dur": 1000,
                       "args": {"batch": b}})
            ev.append({"ph": "X", "tid": 9, "name": "pin_memory", "ts": t, "dur": 5000, "args": {"batch": b}})
        pairs = [(round(d, 4), first, together) for d, first, together in P.simulated_received_pairs(ev, skip=0)]
        self.assertEqual(pairs, [(-0.0002, True, True), (0.0202, False, False)])
        # from the skip on: batch 1 is before the skip, so the pair (1, 2) is left out too
        self.assertEqual(P.simulated_received_pairs(ev, skip=2), [])


class WorkerGaps(unittest.TestCase):
    def test_each_workers_next_start_less_its_collate_end(self):
        # worker 0: collate ends at 0.010, next starts 0.0127 (2.7 ms); worker 1's spans out of order in the record
        per_worker = {"0": [[0.0, 0.010], [0.0127, 0.030]], "1": [[0.020, 0.041], [0.005, 0.018]]}
        self.assertEqual(sorted(round(g, 6) for g in P.worker_gaps(per_worker)), [0.002, 0.0027])

    def test_the_simulated_trace_by_worker(self):
        ev = [{"ph": "M", "name": "thread_name", "tid": 1, "args": {"name": "worker 0"}},
              {"ph": "X", "tid": 1, "name": "load+collate", "ts": 0, "dur": 10000, "args": {"batch": 0}},
              {"ph": "X", "tid": 1, "name": "worker loop (the put)", "ts": 10000, "dur": 5000, "args": {"batch": 0}},
              {"ph": "X", "tid": 1, "name": "load+collate", "ts": 15000, "dur": 10000, "args": {"batch": 2}}]
        spans = P.simulated_worker_spans(ev)
        self.assertEqual(spans, {0: [(0.0, 0.01), (0.015, 0.025)]})       # the put is not the batch's span
        self.assertEqual([round(g, 6) for g in P.worker_gaps(spans)], [0.005])


class ImpliedShare(unittest.TestCase):
    def test_the_share_whose_replayed_delay_is_the_measured_one(self):
        # run 79a's w2 case: 5.24 ms with the key cut to 0.5, 8.00 with the whole key, 6.16 measured:
        # 0.5 + 0.5 x (6.16 - 5.24) / (8.00 - 5.24) = 0.5 + 0.5 x 0.3333 = 0.667
        self.assertAlmostEqual(P.implied_share(6.16e-3, (0.5, 5.24e-3), (1.0, 8.00e-3)), 0.6667, places=3)
        # a measurement beyond either replay extrapolates on the same line (the delay is linear in the share)
        self.assertAlmostEqual(P.implied_share(4.0e-3, (0.5, 5.0e-3), (1.0, 7.0e-3)), 0.25)
        self.assertIsNone(P.implied_share(6.0e-3, (0.5, 5.0e-3), (1.0, 5.0e-3)))   # the share does not move it


class Options(unittest.TestCase):
    def test_a_put_share_outside_zero_to_one_is_refused_with_exit_2(self):
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
            P.main(["unused_dir", "--simulate", "--put-share", "1.5"])
        self.assertEqual(cm.exception.code, 2)
        self.assertIn("--put-share 1.5: expected a share in [0, 1]", err.getvalue())


if __name__ == "__main__":
    unittest.main()
