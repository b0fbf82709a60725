"""ingest_call.py: a call's files into a results folder as the table keeps them (cases.json.xz, run_meta.json),
refusals in one line with nothing written."""
import contextlib
import io
import json
import lzma
import os
import stat
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ingest_call  # noqa: E402
import convert  # noqa: E402
from convert import read_json, read_stored_text  # noqa: E402


class IngestCallTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.src = os.path.join(self.tmp.name, "out")
        self.results = os.path.join(self.tmp.name, "results")
        os.makedirs(self.src)
        os.makedirs(self.results)
        self.cases = {"machine": {"gpu": "H100"}, "cases": [{"id": "00-x", "status": "ok"}]}
        with open(os.path.join(self.src, "cases.json"), "w") as f:
            json.dump(self.cases, f)
        for name, text in (("profile.json", "{}"), ("harness.log", "log\n"), ("env.txt", "env\n")):
            with open(os.path.join(self.src, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(self.src, name), 0o444)        # the device's files come back read-only
        self.calls = os.path.join(self.tmp.name, "table_calls.txt")
        with open(self.calls, "w") as f:
            f.write("# calls\n2026-12-05-h100-run65sw\n")

    def tearDown(self):
        self.tmp.cleanup()

    def run_main(self, *extra, name="2026-12-05-h100-run66seq", src=None):
        err = io.StringIO()
        out = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = ingest_call.main(["--from", src or self.src, "--name", name, "--command", "bash device_run.sh",
                                   "--timeout-s", "600", "--results", self.results, "--table-calls", self.calls,
                                   *extra])
        return rc, err.getvalue()

    def test_a_call_as_the_table_keeps_it(self):
        reply = os.path.join(self.tmp.name, "reply.json")
        with open(reply, "w") as f:
            json.dump({"rc": 0, "wall_s": 512.8, "warm": True, "lease": {"held_s": 1029.4}, "output_tail": "..."}, f)
        rc, err = self.run_main("--reply", reply, "--table")
        self.assertEqual((rc, err), (0, ""))
        dest = os.path.join(self.results, "2026-12-05-h100-run66seq")
        self.assertEqual(sorted(os.listdir(dest)),
                         ["cases.json.xz", "harness.log.xz", "notes.tar.xz", "profile.json.xz"])
        self.assertEqual(read_stored_text(os.path.join(dest, "env.txt")), "env\n")     # in the notes archive
        self.assertEqual(read_json(os.path.join(dest, "cases.json")), self.cases)      # what convert reads
        with lzma.open(os.path.join(dest, "cases.json.xz")) as f:
            self.assertEqual(json.load(f), self.cases)
        self.assertEqual(read_stored_text(os.path.join(dest, "harness.log")), "log\n")     # kept as xz, read as is
        meta = read_json(os.path.join(dest, "run_meta.json"))
        self.assertEqual(meta, {"command": "bash device_run.sh", "timeout_s": 600, "rc": 0, "wall_s": 512.8,
                                "warm": True, "lease": {"held_s": 1029.4}})      # not the reply's output_tail
        for name in os.listdir(dest):
            self.assertTrue(os.stat(os.path.join(dest, name)).st_mode & stat.S_IWUSR, name)
        with open(self.calls) as f:
            self.assertEqual(f.read().splitlines()[-2:], ["2026-12-05-h100-run65sw", "2026-12-05-h100-run66seq"])
        # a second ingest of the same name is refused, and the table lists it once
        rc, err = self.run_main("--table")
        self.assertEqual(rc, 2)
        self.assertIn("already there", err)
        self.assertEqual(ingest_call.with_call_listed(["a\n", "b"], "b"), ["a\n", "b"])
        self.assertEqual(ingest_call.with_call_listed(["a"], "b"), ["a\n", "b\n"])

    def test_refusals_write_nothing(self):
        os.remove(os.path.join(self.src, "profile.json"))
        rc, err = self.run_main()
        self.assertEqual(rc, 2)
        self.assertIn("no profile.json (the call did not finish", err)
        self.assertEqual(os.listdir(self.results), [])
        rc, err = self.run_main(name="run66")
        self.assertEqual(rc, 2)
        self.assertIn("--name 'run66': expected DATE-GPU-RUN", err)
        rc, err = self.run_main(src=os.path.join(self.tmp.name, "nowhere"))
        self.assertIn("not a folder", err)
        with open(os.path.join(self.src, "profile.json"), "w") as f:
            f.write("{}")
        with open(os.path.join(self.src, "cases.json"), "w") as f:
            json.dump({"cases": "none"}, f)
        rc, err = self.run_main()
        self.assertEqual(rc, 2)
        self.assertIn("$.cases is missing or not a list", err)
        self.assertEqual(os.listdir(self.results), [])
        with open(self.calls) as f:
            self.assertNotIn("run66", f.read())

    def test_a_call_whose_probes_ran_the_straggler_stays_out_of_the_table(self):
        doc = {"cases": [{"id": "00-x", "components": {"probe": {"workers": 8}}},
                         {"id": "01-y", "components": {"probe": {"workers": 8},
                                                       "probe_after": {"slow_worker_factor": 2.0}}}]}
        self.assertEqual(ingest_call.straggler_probe_path(doc), "$.cases[1].components.probe_after.slow_worker_factor = 2")
        self.assertIsNone(ingest_call.straggler_probe_path(self.cases))
        with open(os.path.join(self.src, "cases.json"), "w") as f:
            json.dump(doc, f)
        rc, err = self.run_main("--table")
        self.assertEqual(rc, 2)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("$.cases[1].components.probe_after.slow_worker_factor = 2 (the harness ran with "
                      "--probe-with-straggler)", err)
        self.assertEqual(os.listdir(self.results), [])          # nothing written, the table untouched
        with open(self.calls) as f:
            self.assertNotIn("run66", f.read())
        rc, err = self.run_main()                               # kept beside the table, as run 72's a and c are
        self.assertEqual((rc, err), (0, ""))

    def test_a_call_with_item_29_and_30_readings_goes_into_their_lists_too(self):
        # run 86's shape, cut down: a pinned 4-worker probe that timed the fd hand-overs, and the call's long reading
        doc = {"components": {"wander_long": {"tensor_f32/b64/w4/pin": {"batches": 534}}},
               "cases": [{"id": "00-x", "components": {"probe": {"pin_memory": True, "workers": 4,
                                                                 "fd_detach_wall_s_per_batch": 0.0014}}}]}
        self.assertEqual(ingest_call.reading_lists(doc), ["fd-handover", "wander-long"])
        # an 8-worker probe's hand-overs, an unpinned probe, no long reading: in neither (run 85's w8 case alone)
        self.assertEqual(ingest_call.reading_lists(
            {"cases": [{"components": {"probe": {"pin_memory": True, "workers": 8, "fd_detach_wall_s_per_batch": 1e-3},
                                       "probe_after": {"pin_memory": False, "workers": 4}}}]}), [])
        self.assertEqual(ingest_call.reading_lists(self.cases), [])
        with open(os.path.join(self.src, "cases.json"), "w") as f:
            json.dump(doc, f)
        fd_list = os.path.join(self.results, "fd-handover-calls.txt")
        with open(fd_list, "w") as f:
            f.write("# item 30's calls\n2026-12-07-h100-run84a\n")
        rc, err = self.run_main("--table")
        self.assertEqual(rc, 0)
        with open(fd_list) as f:
            self.assertEqual(f.read().splitlines()[-2:], ["2026-12-07-h100-run84a", "2026-12-05-h100-run66seq"])
        # a list that is not there is said in one line, not made
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("wander-long-calls.txt: not there", err)
        self.assertFalse(os.path.exists(os.path.join(self.results, "wander-long-calls.txt")))
        # without --table the lists are left alone, as the table is
        rc, err = self.run_main(name="2026-12-05-h100-run66b")
        with open(fd_list) as f:
            self.assertNotIn("run66b", f.read())

    def test_meta_without_a_reply(self):
        self.assertEqual(ingest_call.run_meta("c", 520, None), {"command": "c", "timeout_s": 520})


class PackNotesTest(unittest.TestCase):
    """ingest_call.pack_notes: the small side files into one notes.tar.xz, read back by convert as they were."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def test_the_side_files_move_into_the_archive_and_read_back_unchanged(self):
        self.write("env.txt", "nvidia-smi\n")
        self.write("probe_fragment.json", '{"loader": {"num_workers": 8}}')
        self.write("profile.json", "{}")                       # not a side file: stays
        self.assertEqual(ingest_call.pack_notes(self.dir), ["env.txt", "probe_fragment.json"])
        self.assertEqual(sorted(os.listdir(self.dir)), ["notes.tar.xz", "profile.json"])
        self.assertEqual(read_stored_text(os.path.join(self.dir, "env.txt")), "nvidia-smi\n")
        self.assertEqual(read_json(os.path.join(self.dir, "probe_fragment.json")), {"loader": {"num_workers": 8}})
        self.assertTrue(convert.stored_file_exists(os.path.join(self.dir, "probe_fragment.json")))
        self.assertFalse(convert.stored_file_exists(os.path.join(self.dir, "probe.log")))
        self.assertIsNone(read_stored_text(os.path.join(self.dir, "probe.log")))
        with self.assertRaises(FileNotFoundError):
            read_json(os.path.join(self.dir, "run_meta.json"))

    def test_a_second_pack_keeps_the_members_and_a_new_file_replaces_its_own(self):
        self.write("env.txt", "old\n")
        self.write("probe.log", "probe\n")
        ingest_call.pack_notes(self.dir)
        with open(os.path.join(self.dir, "notes.tar.xz"), "rb") as f:
            first = f.read()
        self.write("env.txt", "new\n")
        self.assertEqual(ingest_call.pack_notes(self.dir), ["env.txt"])
        self.assertEqual(read_stored_text(os.path.join(self.dir, "env.txt")), "new\n")
        self.assertEqual(read_stored_text(os.path.join(self.dir, "probe.log")), "probe\n")
        self.write("env.txt", "old\n")                         # the same files again: the same bytes
        ingest_call.pack_notes(self.dir)
        with open(os.path.join(self.dir, "notes.tar.xz"), "rb") as f:
            self.assertEqual(f.read(), first)

    def test_nothing_to_pack_writes_nothing(self):
        self.write("cases.json", "{}")
        self.assertEqual(ingest_call.pack_notes(self.dir), [])
        self.assertEqual(os.listdir(self.dir), ["cases.json"])


if __name__ == "__main__":
    unittest.main()
