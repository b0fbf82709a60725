import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import no_put_diagnostic as npd  # noqa: E402


def case(probe, after, no_put, bs=64, k=4):
    return {"id": "c", "knobs": {"batch_size": bs, "num_workers": k},
            "components": {"probe": probe, "probe_after": after, "probe_no_put": no_put}}


class PutCostTest(unittest.TestCase):
    def test_put_cost_by_hand(self):
        # by hand: getitem 1.10 / 1.30 ms with the put (mean 1.20), 1.00 without; collate 4.0 / 6.0 (mean 5.0) against
        # 3.0: a batch of 64 busy 64 x 1.2 + 5 = 81.8 ms with the put, 64 x 1.0 + 3 = 67 ms without: the put 14.8 ms
        c = case({"getitem_wall_s": 1.1e-3, "getitem_cpu_s": 1.0e-3, "collate_wall_s": 4e-3},
                 {"getitem_wall_s": 1.3e-3, "getitem_cpu_s": 1.0e-3, "collate_wall_s": 6e-3},
                 {"getitem_wall_s": 1.0e-3, "getitem_cpu_s": 0.98e-3, "collate_wall_s": 3e-3})
        r = npd.put_cost(c)
        self.assertAlmostEqual(r["with_put"]["getitem_wall_s"], 1.2e-3)
        self.assertAlmostEqual(r["getitem_wall_ratio"], 1.2)
        self.assertAlmostEqual(r["batch_busy_with_put_s"], 0.0818)
        self.assertAlmostEqual(r["batch_busy_without_put_s"], 0.067)
        self.assertAlmostEqual(r["put_cost_s_per_batch"], 0.0148)

    def test_one_probe_or_a_failed_one_still_reads(self):
        c = case({"error": "RuntimeError: x"}, {"getitem_wall_s": 2e-3, "collate_wall_s": 0.0},
                 {"getitem_wall_s": 1e-3, "collate_wall_s": 0.0}, bs=8)
        self.assertAlmostEqual(npd.put_cost(c)["put_cost_s_per_batch"], 8e-3)

    def test_missing_no_put_probe_is_none(self):
        self.assertIsNone(npd.put_cost(case({"getitem_wall_s": 1e-3}, {}, {"error": "x"})))
        self.assertIsNone(npd.put_cost(case({}, {}, {"getitem_wall_s": 1e-3})))


if __name__ == "__main__":
    unittest.main()
