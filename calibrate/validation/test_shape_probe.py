"""Tests of shape_probe's pure parts (the probe itself needs a GPU: validation-runs.md runs 64 and 65)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shape_probe import fresh_lengths, parse_choices, ORDERS, BACKEND_NAMES  # noqa: E402


class FreshLengths(unittest.TestCase):
    def test_increasing_makes_each_new_length_the_longest_so_far(self):
        self.assertEqual(fresh_lengths(300, 7, 4, "increasing"), [300, 307, 314, 321])

    def test_decreasing_tries_the_same_block_longest_first(self):
        got = fresh_lengths(300, 7, 4, "decreasing")
        self.assertEqual(got, [321, 314, 307, 300])
        self.assertTrue(all(a > b for a, b in zip(got, got[1:])))

    def test_an_unknown_order_is_refused(self):
        with self.assertRaises(ValueError):
            fresh_lengths(300, 7, 4, "shuffled")


class ParseChoices(unittest.TestCase):
    def test_keeps_the_order_given(self):
        self.assertEqual(parse_choices("decreasing, increasing", ORDERS, "--orders"), ["decreasing", "increasing"])

    def test_names_the_bad_value_and_what_was_expected(self):
        with self.assertRaises(ValueError) as e:
            parse_choices("default,cudnn2", BACKEND_NAMES, "--backends")
        self.assertIn("cudnn2", str(e.exception))
        self.assertIn("default, cudnn, flash, efficient, math", str(e.exception))

    def test_an_empty_list_is_refused(self):
        with self.assertRaises(ValueError):
            parse_choices(" , ", ORDERS, "--orders")


if __name__ == "__main__":
    unittest.main()
