"""bracket_diagnostic's pure parts: a case rebuilt from one of its two probes."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bracket_diagnostic as bd  # noqa: E402
import convert  # noqa: E402


def case(before, after):
    comp = {"probe": before}
    if after is not None:
        comp["probe_after"] = after
    return {"id": "x", "components": comp}


class OneProbe(unittest.TestCase):
    def test_each_side_is_what_convert_uses_alone(self):
        before = {"workers": 8, "getitem_wall_s": 0.004, "collate_wall_s": 0.020}
        after = {"workers": 8, "getitem_wall_s": 0.006, "collate_wall_s": 0.030}
        c = case(before, after)
        self.assertTrue(bd.bracketed(c))
        # convert averages the two: 5 ms and 25 ms
        both = convert.probe_bracket(c["components"]["probe"], c["components"]["probe_after"])
        self.assertAlmostEqual(both["getitem_wall_s"], 0.005)
        b, a = bd.one_probe_case(c, "before"), bd.one_probe_case(c, "after")
        self.assertNotIn("probe_after", b["components"])
        self.assertNotIn("probe_after", a["components"])
        self.assertEqual(b["components"]["probe"]["getitem_wall_s"], 0.004)
        self.assertEqual(a["components"]["probe"]["getitem_wall_s"], 0.006)
        self.assertEqual(c["components"]["probe_after"]["getitem_wall_s"], 0.006)   # the case itself untouched

    def test_an_unpinned_cases_own_windows_go_with_its_probes(self):
        before = {"workers": 8, "getitem_wall_s": 0.004, "collate_wall_s": 0.020}
        c = case(before, dict(before, getitem_wall_s=0.006))
        c["components"]["unpinned_window"] = {"workers": 8, "unpinned_case_like_copy_s": {"mean": 0.006}}
        c["components"]["unpinned_window_after"] = {"workers": 8, "unpinned_case_like_copy_s": {"mean": 0.007}}
        b, a = bd.one_probe_case(c, "before"), bd.one_probe_case(c, "after")
        self.assertEqual(b["components"]["unpinned_window"]["unpinned_case_like_copy_s"]["mean"], 0.006)
        self.assertEqual(a["components"]["unpinned_window"]["unpinned_case_like_copy_s"]["mean"], 0.007)
        self.assertNotIn("unpinned_window_after", a["components"])
        self.assertNotIn("unpinned_window_after", b["components"])

    def test_not_bracketed_without_a_whole_second_probe_at_the_same_workers(self):
        before = {"workers": 8, "getitem_wall_s": 0.004, "collate_wall_s": 0.020}
        self.assertFalse(bd.bracketed(case(before, None)))
        self.assertFalse(bd.bracketed(case(before, {"error": "RuntimeError: x"})))
        self.assertFalse(bd.bracketed(case(before, dict(before, workers=4))))

    def test_inside_either_order(self):
        self.assertTrue(bd.inside(5.0, 6.0, 4.0))
        self.assertTrue(bd.inside(4.0, 4.0, 6.0))
        self.assertFalse(bd.inside(6.5, 4.0, 6.0))


if __name__ == "__main__":
    unittest.main()
