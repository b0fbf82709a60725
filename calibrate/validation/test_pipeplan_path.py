#!/usr/bin/env python3
"""Every validation script that runs the simulator finds the checkout's pipeplan from any working folder, and a
missing or non-executable --pipeplan is one line naming it and exit code 2, before anything is read or written."""
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert  # noqa: E402

# each script with the arguments that make it simulate; "R" is a results folder that does not exist, so a script that
# read its inputs before checking --pipeplan would fail on the folder instead. The three that check their inputs
# first get a committed call's (a real one: "CALL" and "DDP").
CALL = os.path.join(HERE, "results", "2026-12-06-h100-run70so")
DDP = os.path.join(HERE, "results", "2026-12-01-h200x2-run22ddp")
SIMULATING = [
    ("convert.py", ["--cases", f"{CALL}/cases.json.xz", "--profile", f"{CALL}/profile.json", "--pipeplan", "BAD",
                    "--out-dir", "OUT"]),
    ("score_call.py", [CALL, "--pipeplan", "BAD", "--out-dir", "OUT"]),
    ("straggler_diagnostic.py", ["R", "--pipeplan", "BAD"]),
    ("bracket_diagnostic.py", ["R", "--pipeplan", "BAD"]),
    ("burst_diagnostic.py", ["R", "--pipeplan", "BAD"]),
    ("insitu_diagnostic.py", ["R", "--pipeplan", "BAD"]),
    ("recommend_check.py", ["--report", "R", "--pipeplan", "BAD"]),
    ("cold_cases.py", ["--calls", "R/calls.txt", "--pipeplan", "BAD"]),
    ("new_shape_diagnostic.py", ["R", "--pipeplan", "BAD"]),
    ("overtake_diagnostic.py", ["R", "--family", "sync_every", "--pipeplan", "BAD"]),
    ("handoff_diagnostic.py", ["R", "--simulated", "--pipeplan", "BAD"]),
    ("ddp_convert.py", ["--cases", f"{DDP}/ddp_cases.json", "--pipeplan", "BAD", "--out-dir", "OUT"]),
]


def placeholder(arg: str, bad: str, out: str, missing: str) -> str:
    """SIMULATING's placeholders: BAD the missing binary, OUT the output folder, R (or R/...) the missing results."""
    if arg in ("BAD", "OUT"):
        return bad if arg == "BAD" else out
    if arg == "R" or arg.startswith("R/"):
        return missing + arg[1:]
    return arg


class PipeplanPathTest(unittest.TestCase):
    def test_default_is_the_checkouts_build_from_any_folder(self):
        self.assertTrue(os.path.isabs(convert.REPO_PIPEPLAN))
        self.assertEqual(convert.REPO_PIPEPLAN,
                         os.path.normpath(os.path.join(HERE, "..", "..", "build", "cli", "pipeplan")))

    def test_problem_line(self):
        with tempfile.TemporaryDirectory() as d:
            plain = os.path.join(d, "pipeplan")
            with open(plain, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            why = convert.pipeplan_problem(plain)       # a file, not executable
            self.assertIn(plain, why)
            self.assertIn("not an executable file", why)
            os.chmod(plain, os.stat(plain).st_mode | stat.S_IXUSR)
            self.assertIsNone(convert.pipeplan_problem(plain))
            self.assertIsNotNone(convert.pipeplan_problem(d))     # a folder is not a binary, executable bit or not

    def test_each_script_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "no-such-pipeplan")
            out = os.path.join(d, "out")
            for script, args in SIMULATING:
                with self.subTest(script=script):
                    argv = [placeholder(a, bad, out, os.path.join(d, "no-results")) for a in args]
                    run = subprocess.run([sys.executable, os.path.join(HERE, script), *argv], cwd=d,
                                         capture_output=True, text=True, timeout=120)
                    self.assertEqual(run.returncode, 2, run.stderr)
                    lines = run.stderr.strip().splitlines()
                    self.assertEqual(len(lines), 1, run.stderr)
                    self.assertIn(f"--pipeplan {bad}", lines[0])
                    self.assertFalse(os.path.exists(out), "nothing written before the check")


if __name__ == "__main__":
    unittest.main()
