#!/usr/bin/env python3
"""The device plan's harness commands (docs/validation.md, "Device plan for the next run") parse and list cases.

A command the harness refuses costs a device call its calibration first (validation run 70's first call: 181 s), and
a misspelt family would leave it with no case; here each plan command's PIPEPLAN_HARNESS_ARGS goes through
harness.py's own parser and case list (`--list`), without torch or numpy."""
import contextlib
import io
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_convert import load_harness  # noqa: E402  (harness.py with a numpy stub)

VALIDATION_MD = os.path.join(HERE, "..", "..", "docs", "validation.md")


def plan_harness_args(markdown: str):
    """Each PIPEPLAN_HARNESS_ARGS="..." of the device plan section, split into arguments (a command may wrap
    across the page's lines)."""
    start = markdown.index("Device plan for the next run")
    end = markdown.find("\n## ", start)
    section = markdown[start:end if end >= 0 else len(markdown)]
    return [quoted.split() for quoted in re.findall(r'PIPEPLAN_HARNESS_ARGS="([^"]*)"', section)]


def list_cases(args):
    """harness.main(--list) on `args` in a freshly loaded harness (main sets module-wide windows that a second call
    would take as its defaults): (exit code, its output); argparse's refusal is exit code 2 and its line."""
    harness = load_harness()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = harness.main(["--out", os.devnull, "--list", *args])
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue() + err.getvalue()


class DevicePlanTest(unittest.TestCase):
    def test_every_plan_command_parses_and_lists_cases(self):
        with open(VALIDATION_MD) as f:
            commands = plan_harness_args(f.read())
        self.assertGreater(len(commands), 0, "the device plan names no harness command")
        for args in commands:
            with self.subTest(args=" ".join(args)):
                rc, text = list_cases(args)
                self.assertEqual(rc, 0, text)
                n = int(re.search(r"^(\d+) cases$", text, re.M).group(1))
                self.assertGreater(n, 0, text)

    def test_the_refusals_this_guards_against(self):
        # run 70's first call: a minimum window above the (default 30 s) case window
        rc, text = list_cases(["--families", "slow_worker_order", "--min-case-window-s", "40"])
        self.assertEqual(rc, 2)
        self.assertIn("--min-case-window-s 40.0", text)
        # a misspelt family: refused by name, not an empty call
        rc, text = list_cases(["--families", "slow_worker_order,pin_memory_tensr"])
        self.assertEqual(rc, 2)
        self.assertIn("unknown family pin_memory_tensr", text)
        self.assertIn("slow_worker_order", text)      # the families it knows are named

    def test_cases_indices_are_checked(self):
        rc, text = list_cases(["--families", "slow_worker_order", "--cases", "1,3"])
        self.assertEqual(rc, 0, text)
        self.assertIn("2 cases", text)
        rc, text = list_cases(["--cases", "a"])              # was a traceback
        self.assertEqual(rc, 2)
        self.assertIn("--cases a: expected comma-separated case indices", text)
        rc, text = list_cases(["--families", "slow_worker_order", "--cases", "1,9"])   # was silently 1 case
        self.assertEqual(rc, 2)
        self.assertIn("no case 9 in the list of 4", text)

    def test_budget_and_images_are_checked(self):
        for args, line in ((["--budget-s", "-5"], "--budget-s -5: expected 10 seconds"),
                           (["--n-images", "0"], "--n-images 0: expected 1 or more")):
            rc, text = list_cases(args)
            self.assertEqual(rc, 2, text)
            self.assertIn(line, text)
        self.assertEqual(list_cases(["--budget-s", "30", "--n-images", "10"])[0], 0)

    def test_plan_args_wrap_across_lines(self):
        md = ('Device plan for the next run\n1. `PIPEPLAN_HARNESS_ARGS="--families a,b --timeline\n'
              '   --min-case-window-s 20"` then\n## Next heading\nPIPEPLAN_HARNESS_ARGS="--families c"')
        self.assertEqual(plan_harness_args(md), [["--families", "a,b", "--timeline", "--min-case-window-s", "20"]])


if __name__ == "__main__":
    unittest.main()
