"""fd_detach_diagnostic: each detach goes to the batch the pin thread takes next, and so to its sender; the sender's
state is read from its batch spans. Checked against timelines worked by hand."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fd_detach_diagnostic as fd  # noqa: E402


def timeline():
    # two workers, skip 0 from t=0. Worker 0 runs batches 0, 2 over [0, 10] and [12, 22] ms; worker 1 batches 1, 3
    # over [0, 11] and [13, 23]. The pin thread takes batch 0 at 11 ms (its two detaches 10.2-10.4 and 10.5-10.9:
    # worker 0 is between batches at 10.2 and 10.5, so idle), batch 1 at 14 ms (detaches 12.5-13.0 and 13.1-13.9:
    # worker 1 idle at 12.5, busy from 13.0, so the second is busy), batch 2 at 24 ms (one detach 23.0-23.5: worker 0
    # done at 22, idle).
    return {"skip": 0, "main": {"next_start": [0.0]},
            "workers": {"0": [[0.0, 0.010], [0.012, 0.022]], "1": [[0.0, 0.011], [0.013, 0.023]]},
            "pin_received": [[0, 0.011], [1, 0.014], [2, 0.024]],
            "fd_detach": [[0.0102, 0.0104], [0.0105, 0.0109], [0.0125, 0.0130], [0.0131, 0.0139],
                          [0.0230, 0.0235]]}


class DetachSplit(unittest.TestCase):
    def test_sender_busy_at(self):
        spans = [[0.0, 0.010], [0.012, 0.022]]
        self.assertTrue(fd.sender_busy_at(spans, 0.005))
        self.assertFalse(fd.sender_busy_at(spans, 0.011))
        self.assertTrue(fd.sender_busy_at(spans, 0.012))
        self.assertFalse(fd.sender_busy_at(spans, 0.030))
        self.assertFalse(fd.sender_busy_at(spans, -0.001))

    def test_split_by_hand(self):
        s = fd.detach_split(timeline(), 2)
        self.assertEqual(s["batches"], 3)
        self.assertAlmostEqual(s["detaches_per_batch"], 5 / 3)
        # walls 0.2, 0.4, 0.5, 0.8, 0.5 ms: 2.4 ms over 3 batches
        self.assertAlmostEqual(s["wall_s_per_batch"], 0.0024 / 3)
        self.assertEqual(s["busy"]["detaches"], 1)
        self.assertAlmostEqual(s["busy"]["mean_wall_s"], 0.0008)
        self.assertEqual(s["idle"]["detaches"], 4)
        self.assertAlmostEqual(s["idle"]["mean_wall_s"], (0.0002 + 0.0004 + 0.0005 + 0.0005) / 4)

    def test_window_and_missing_data(self):
        tl = timeline()
        tl["main"]["next_start"] = [0.0, 0.012]
        tl["skip"] = 1          # the window starts at 12 ms: the first two detaches are out
        s = fd.detach_split(tl, 2)
        self.assertEqual(s["batches"], 2)
        self.assertEqual(s["busy"]["detaches"] + s["idle"]["detaches"], 3)
        self.assertIsNone(fd.detach_split({**timeline(), "fd_detach": []}, 2))
        self.assertIsNone(fd.detach_split({**timeline(), "pin_received": []}, 2))

    def test_pin_share_of_the_step_by_hand(self):
        # run 86a's w4 repeat, rounded: 18.22 ms of pin thread CPU and 1.36 / 0.53 ms hand-overs a batch at 3,346
        # samples/s of 64: (18.22 + 0.83) / 19.127 = 0.996, the pin thread the bound in situ
        self.assertAlmostEqual(fd.pin_share_of_step(0.01822, 0.00136, 0.00053, 64, 3346.0), 0.01905 / (64 / 3346.0))
        self.assertAlmostEqual(fd.pin_share_of_step(0.01822, 0.00136, 0.00053, 64, 3346.0), 0.996, places=3)
        # a hand-over's CPU above its wall adds nothing; a missing figure gives none
        self.assertAlmostEqual(fd.pin_share_of_step(0.010, 0.001, 0.002, 64, 3200.0), 0.5)
        self.assertIsNone(fd.pin_share_of_step(0.010, None, 0.001, 64, 3200.0))
        self.assertIsNone(fd.pin_share_of_step(0.010, 0.002, 0.001, 64, None))

    def test_case_row_skips_unpinned(self):
        case = {"id": "00-x", "status": "ok", "knobs": {"pin_memory": False, "num_workers": 2}, "measured": {}}
        self.assertIsNone(fd.case_row(case))


class ReceiveSplit(unittest.TestCase):
    def test_backlogged_receives_by_hand(self):
        # one worker; batches 0-3 collate at 1, 1.5, 3, 40 ms (spans [0,1], [1,1.5], [2,3], [30,40]); the pin thread's
        # pin_memory() calls run [5,10], [12,20], [23,30], [41,45] ms and it took the batches at 4.9, 11.9, 22.9,
        # 40.9 ms. Batch 1 (received 11.9, collated at 1.5 < 10 - 8): backlogged, receive 10 -> 11.9 = 1.9 ms, the
        # worker idle at 11.7 (between [2,3] and [30,40]). Batch 2 (collated 3 < 20 - 8): receive 20 -> 22.9 = 2.9
        # ms, idle. Batch 3 collated at 40, after 30: not backlogged.
        tl = {"skip": 0, "main": {"next_start": [0.0]},
              "workers": {"0": [[0.0, 0.001], [0.001, 0.0015], [0.002, 0.003], [0.030, 0.040]]},
              "pin": [[0.005, 0.010], [0.012, 0.020], [0.023, 0.030], [0.041, 0.045]],
              "pin_received": [[0, 0.0049], [1, 0.0119], [2, 0.0229], [3, 0.0409]]}
        r = fd.receive_split(tl, 1)
        self.assertEqual(r["cycles"], 2)
        self.assertAlmostEqual(r["receive_s"], (0.0019 + 0.0029) / 2)
        self.assertAlmostEqual(r["pin_memory_s"], (0.008 + 0.007) / 2)
        self.assertEqual(r["idle"]["receives"], 2)
        self.assertEqual(r["busy"]["receives"], 0)
        self.assertIsNone(r["busy"]["mean_s"])
        # the worker inside a batch at batch 2's get: that receive counts busy
        tl["workers"]["0"][3] = [0.022, 0.040]
        r = fd.receive_split(tl, 1)
        self.assertEqual(r["busy"]["receives"], 1)
        self.assertAlmostEqual(r["busy"]["mean_s"], 0.0029)

    def test_no_data(self):
        self.assertIsNone(fd.receive_split({"pin": [], "pin_received": [], "workers": {}}, 2))


if __name__ == "__main__":
    unittest.main()
