import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import turnaround_diagnostic as td  # noqa: E402


class TurnaroundTest(unittest.TestCase):
    def test_two_workers_by_hand(self):
        # 2 workers, prefetch 2: batch b's index goes out at the loop's take of batch b - 4, to worker b mod 2.
        # worker 0 runs batches 0, 2, 4; worker 1 runs 1, 3, 5. Loop takes (next_end) batches 0..3 at 10, 20, 30, 40.
        # worker 0: batch 2 ends at 12, its next (batch 4, index sent at take of batch 0 = 10) was out: turnaround
        #   13 - 12 = 1; batch 0 -> 2 needs the take of batch -2: before the measured window, left out.
        # worker 1: batch 3 ends at 19, its next (batch 5, sent at the take of batch 1 = 20) was not out: index-bound.
        workers = {"0": [[0.0, 5.0], [6.0, 12.0], [13.0, 18.0]], "1": [[0.0, 6.0], [7.0, 19.0], [20.2, 25.0]]}
        r = td.turnarounds(workers, [10.0, 20.0, 30.0, 40.0], prefetch_factor=2)
        self.assertEqual(r["turnaround_s"], [1.0])
        self.assertEqual(r["index_bound"], 1)
        self.assertEqual(r["n"], 2)
        # skip=1: the take of batch 0 is before the window, so worker 0's turnaround no longer counts
        r = td.turnarounds(workers, [10.0, 20.0, 30.0, 40.0], prefetch_factor=2, skip=1)
        self.assertEqual(r["turnaround_s"], [])
        self.assertEqual(r["index_bound"], 1)

    def test_index_sent_exactly_at_collate_end_counts_as_out(self):
        workers = {"0": [[0.0, 10.0], [10.5, 20.0]]}
        r = td.turnarounds(workers, [10.0], prefetch_factor=1)
        self.assertEqual(r["turnaround_s"], [0.5])

    def test_case_reading_needs_a_timeline_key_and_enough_turnarounds(self):
        # one worker, prefetch 2: batch j+1's index goes out at the take of batch j-1 (0.5 ms after its collate end,
        # 9.5 ms before batch j's), so every next index is out: 30 turnarounds of 2 ms (batch 0 -> 1 left out)
        spans = [[10.0 * j, 10.0 * j + 8.0] for j in range(32)]
        next_end = [10.0 * j + 8.5 for j in range(32)]
        case = {"id": "c", "knobs": {"num_workers": 1, "prefetch_factor": 2, "kind": "image", "in_order": True},
                "measured": {"timeline": {"workers": {"0": spans}, "main": {"next_end": next_end}, "skip": 0}},
                "components": {"in_worker": {"overhead_s_per_batch": 4.0}}}
        r = td.case_reading(case)
        self.assertEqual(r["n"], 30)
        self.assertAlmostEqual(r["median_s"], 2.0)
        self.assertAlmostEqual(r["median_over_key"], 0.5)
        self.assertEqual(r["index_bound_share"], 0.0)
        case["components"] = {}
        self.assertIsNone(td.case_reading(case))
        case["components"] = {"in_worker": {"overhead_s_per_batch": 4.0}}
        case["knobs"]["storage"] = "cold"
        self.assertIsNone(td.case_reading(case))
        # a straggler case (the harness's knob slow_worker_factor) reads nothing: its worker 0's spin is in its spans
        case["knobs"]["storage"] = "warm"
        case["knobs"]["slow_worker_factor"] = 2.0
        self.assertIsNone(td.case_reading(case))
        case["knobs"]["slow_worker_factor"] = 1.0
        self.assertIsNotNone(td.case_reading(case))

    def test_fetch_gap_by_hand(self):
        # two workers' batch spans of 70 and 72 ms; in situ 64 samples of 0.5 ms over 1 batch (32 ms) plus 35 ms of
        # collate: 67 ms timed inside a 71 ms span, 4 ms between the calls. skip=2 leaves out each worker's first
        w = {"0": [[0.0, 0.5], [1.0, 1.070]], "1": [[0.0, 0.5], [1.0, 1.072]]}
        ins = {"getitem_wall_s": 0.0005, "samples": 64, "batches": 1, "collate_wall_s": 0.035}
        self.assertAlmostEqual(td.fetch_gap_s(w, ins, skip=2), 0.004)
        self.assertIsNone(td.fetch_gap_s(w, {}, skip=2))

    def test_fetch_gap_takes_the_batch_size_over_the_counters_ratio(self):
        # the same 71 ms spans, but the window's edges cut batches: the counters saw 600 samples and 10 collates
        # (60 a batch, not 64). With the ratio: 71 - (60 x 0.5 + 35) = 6 ms, 2 ms too much; with the batch size
        # 64: 71 - (32 + 35) = 4 ms, the hand figure
        w = {"0": [[0.0, 0.5], [1.0, 1.070]], "1": [[0.0, 0.5], [1.0, 1.072]]}
        ins = {"getitem_wall_s": 0.0005, "samples": 600, "batches": 10, "collate_wall_s": 0.035}
        self.assertAlmostEqual(td.fetch_gap_s(w, ins, skip=2), 0.006)
        self.assertAlmostEqual(td.fetch_gap_s(w, ins, skip=2, samples_per_batch=64), 0.004)
        # a probe's whole batches read anywhere (worker_batch_s): the same arithmetic
        self.assertAlmostEqual(td.span_less_timed_s([0.070, 0.072], ins, 64), 0.004)
        self.assertIsNone(td.span_less_timed_s([], ins, 64))

    def test_probe_reading_by_hand(self):
        # a probe's one worker (prefetch 2), 40 batches of 10 ms each 2 ms apart; the loop takes each batch 0.5 ms
        # after its collate: every next index is out. Window from batch 10: the turnarounds of batches 11..39 whose
        # index went out at takes 9..37 -> those with source >= 10: batches 12..39, 28 of them, all 2 ms. In-situ
        # counters: 8 samples of 1 ms + 1.5 ms collate = 9.5 ms inside each 10 ms span: 0.5 ms of fetcher a batch
        spans = [[12.0e-3 * j, 12.0e-3 * j + 10.0e-3] for j in range(40)]
        takes = [12.0e-3 * j + 10.5e-3 for j in range(40)]
        ins = {"getitem_wall_s": 1.0e-3, "samples": 8 * 30, "batches": 30, "collate_wall_s": 1.5e-3}
        r = td.probe_reading({"0": spans}, takes, 2, 10, ins)
        self.assertEqual(r["turnarounds"], 28)
        self.assertAlmostEqual(r["turnaround_s"], 2.0e-3)
        self.assertEqual(r["index_bound_share"], 0.0)
        self.assertAlmostEqual(r["fetch_gap_s"], 0.5e-3)
        # too few turnarounds: no reading
        self.assertIsNone(td.probe_reading({"0": spans[:15]}, takes[:15], 2, 10, ins))

    def test_no_folder_is_exit_2(self):
        with self.assertRaises(SystemExit) as e:
            td.main(["/nonexistent/results"])
        self.assertEqual(e.exception.code, 2)
        self.assertEqual(td.main([]), 2)


if __name__ == "__main__":
    unittest.main()
