"""calibrate/carried_binary.sh: the device run scripts find the calibrate binary device_build.sh carries as xz."""
import lzma
import os
import shutil
import subprocess
import tempfile
import unittest

HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "carried_binary.sh")
SCRIPT = b"#!/bin/sh\necho carried-ok \"$@\"\n"


def find(carry: str):
    """(stdout, stderr) of carried_calibrate_binary on `carry`, sourced as the run scripts source it."""
    r = subprocess.run(["bash", "-c", '. "$0"; carried_calibrate_binary "$1"', HELPER, carry],
                       capture_output=True, text=True, timeout=30)
    return r.stdout.strip(), r.stderr.strip()


@unittest.skipIf(shutil.which("bash") is None, "no bash")
class CarriedBinaryTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.carry = os.path.join(self.dir, ".carry")
        os.mkdir(self.carry)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_the_xz_copy_is_unpacked_into_a_runnable_binary(self):
        with lzma.open(os.path.join(self.carry, "pipeplan-calibrate.xz"), "wb") as f:
            f.write(SCRIPT)
        path, err = find(self.carry)
        self.assertEqual(err, "")
        self.assertNotEqual(os.path.dirname(path), self.carry)  # unpacked elsewhere: the carried tree stays as it is
        out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30).stdout
        self.assertEqual(out.strip(), "carried-ok --help")
        shutil.rmtree(os.path.dirname(path))

    def test_a_plain_binary_is_used_as_it_is(self):
        plain = os.path.join(self.carry, "pipeplan-calibrate")
        with open(plain, "wb") as f:
            f.write(SCRIPT)
        os.chmod(plain, 0o755)
        with lzma.open(os.path.join(self.carry, "pipeplan-calibrate.xz"), "wb") as f:
            f.write(b"#!/bin/sh\necho the-other\n")
        self.assertEqual(find(self.carry), (plain, ""))

    def test_nothing_carried_prints_nothing(self):
        self.assertEqual(find(self.carry), ("", ""))

    def test_a_corrupt_xz_prints_nothing_and_one_line_naming_it(self):
        with open(os.path.join(self.carry, "pipeplan-calibrate.xz"), "wb") as f:
            f.write(b"not xz at all")
        path, err = find(self.carry)
        self.assertEqual(path, "")
        self.assertEqual(len(err.splitlines()), 1)
        self.assertIn("pipeplan-calibrate.xz", err)
        self.assertIn("device_build.sh", err)


if __name__ == "__main__":
    unittest.main()
