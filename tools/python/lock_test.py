"""Known-answer tests of the pip lock generator, and a check that the checked-in lock is well-formed."""

import os
import re
import tempfile
import unittest

from tools.python import lock

RUNFILES_LOCK = os.path.join(os.path.dirname(__file__), "requirements.lock")


class LockTest(unittest.TestCase):
    def test_parse_wheel_filename(self):
        self.assertEqual(
            lock.parse_wheel_filename("numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
            ("numpy", "2.2.6"))
        self.assertEqual(lock.parse_wheel_filename("typing_extensions-4.16.0-py3-none-any.whl"),
                         ("typing-extensions", "4.16.0"))
        with self.assertRaises(ValueError):
            lock.parse_wheel_filename("numpy-2.2.6.tar.gz")

    def test_render_then_parse_round_trips(self):
        wheels = [("rich", "14.3.4", "b" * 64, "rich-14.3.4-py3-none-any.whl"),
                  ("numpy", "2.2.6", "a" * 64, "numpy-2.2.6-cp311-cp311-manylinux2014_x86_64.whl")]
        text = lock.render_lock(wheels, "3.11")
        self.assertIn("DO NOT EDIT", text.splitlines()[0])
        self.assertIn("./bazelw run //tools/python:lock", text)
        self.assertEqual(lock.parse_lock(text), sorted(wheels))

    def test_two_wheels_for_one_package_is_an_error(self):
        with self.assertRaises(ValueError):
            lock.render_lock([("numpy", "1", "a" * 64, "a.whl"), ("numpy", "2", "b" * 64, "b.whl")], "3.11")

    def test_hand_edited_line_is_rejected(self):
        with self.assertRaisesRegex(ValueError, "line 1"):
            lock.parse_lock("numpy==2.2.6\n")

    def test_a_new_lock_keeps_the_versions_the_old_one_pins(self):
        # Adding a package (issue 83's database) must move no other pin: pip gets the old lock as constraints.
        wheels = [("rich", "14.3.4", "b" * 64, "rich-14.3.4-py3-none-any.whl"),
                  ("numpy", "2.2.6", "a" * 64, "numpy-2.2.6-cp311-cp311-manylinux2014_x86_64.whl")]
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "requirements.lock")
            self.assertEqual(lock.kept_pins(path), [])  # the first lock resolves afresh
            with open(path, "w") as f:
                f.write(lock.render_lock(wheels, "3.11"))
            self.assertEqual(lock.kept_pins(path), ["numpy==2.2.6", "rich==14.3.4"])

    def test_checked_in_lock_pins_every_requirement(self):
        with open(RUNFILES_LOCK) as f:
            entries = lock.parse_lock(f.read())
        names = {name for name, _, _, _ in entries}
        required = []
        for source in ("requirements.in", "requirements-nodeps.in"):
            with open(os.path.join(os.path.dirname(RUNFILES_LOCK), source)) as f:
                required += [lock.normalize(re.split(r"[<>=!~;\[ ]", line.strip(), 1)[0])
                             for line in f if line.strip() and not line.startswith("#")]
        self.assertIn("numpy", required)
        self.assertIn("apache-otava", required)
        for name in required:
            self.assertIn(name, names, f"{name} is required but not in the lock: run //tools/python:lock")
        for name, version, sha256, wheel in entries:
            self.assertEqual(lock.parse_wheel_filename(wheel), (name, version))

    def test_the_aarch64_lock_pins_the_same_versions_for_aarch64(self):
        with open(RUNFILES_LOCK) as f:
            x86 = {name: (version, sha, wheel) for name, version, sha, wheel in lock.parse_lock(f.read())}
        with open(os.path.join(os.path.dirname(RUNFILES_LOCK), "requirements-aarch64.lock")) as f:
            arm = {name: (version, sha, wheel) for name, version, sha, wheel in lock.parse_lock(f.read())}
        self.assertEqual(sorted(arm), sorted(x86), "regenerate both: ./bazelw run //tools/python:lock")
        for name, (version, sha, wheel) in arm.items():
            self.assertEqual(version, x86[name][0], name)
            if lock.is_pure(x86[name][2]):  # the same file
                self.assertEqual((sha, wheel), x86[name][1:], name)
            else:
                self.assertIn("aarch64", wheel, name)
                self.assertNotIn("x86_64", wheel, name)
        # pure wheels are taken over without asking pip
        pure = [("rich", "14.3.4", "0" * 64, "rich-14.3.4-py3-none-any.whl")]
        self.assertEqual(lock.aarch64_wheels(pure, "/nonexistent/python", "3.11", "/nonexistent"), pure)


if __name__ == "__main__":
    unittest.main()
