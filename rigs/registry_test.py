"""The rig registry (rigs/registry.py): this checkout's rig.toml files as the site, the nightly and the
calibrator read them, and malformed ones refused with the file and the key named."""

import io
import os
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

from analysis.reports import kinds
from rigs import registry


class TheCheckoutsRegistry(unittest.TestCase):
    def test_every_rig_with_a_rig_py_is_registered_and_read_from_the_runfiles(self):
        rigs = registry.load()
        # The six rigs of this checkout; a rig folder without rig.toml is //:add_a_rig_test's to name (step 1).
        self.assertEqual(set(rigs), {"calibration", "mapreduce", "namenode", "redis", "yarn_cps", "yarn_failover"})
        self.assertEqual(rigs["mapreduce"].label, "//rigs:mr_compare_matrix")
        self.assertEqual(rigs["yarn_failover"].title, "ResourceManager failover")
        # The registration brings the matrix and workload the calibrator reads designs from.
        for rig in rigs:
            self.assertTrue(os.path.isfile(os.path.join(registry.ROOT, "rigs", rig, "matrix.toml")), rig)

    def test_the_report_kinds_named_are_kinds_a_report_has(self):
        for r in registry.load().values():
            for axis, kind in r.axis_kinds.items():
                self.assertIn(kind, kinds.KINDS, r.rig)
                self.assertEqual(kinds.KINDS[kind].axis, axis, f"{r.rig}: {kind} compares another axis")

    def test_the_nightly_list_is_what_nightly_sh_reads(self):
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(registry.main(["--nightly"]), 0)
        lines = out.getvalue().splitlines()
        self.assertIn("calibration nightly 600", lines)  # budget_min = 10: the seconds nightly.sh passes
        self.assertIn("mr_compare nightly 2700", lines)
        self.assertIn("redis_numa nightly 1800", lines)  # issue 79: every gated rig has a nightly
        self.assertNotIn("yarn_failover", out.getvalue())  # no [nightly]: not run nightly
        self.assertEqual(len(lines), sum(1 for r in registry.load().values() if r.nightly_profile))


class MalformedRegistrations(unittest.TestCase):
    GOOD = '[rig]\ntitle = "Seventh"\nmatrix = "seventh_matrix"\n'

    def read(self, text):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "rigs", "seventh"))
            with open(os.path.join(root, "rigs", "seventh", "rig.toml"), "w") as f:
                f.write(text)
            return registry.load(root)["seventh"]

    def test_the_smallest_registration_reads(self):
        r = self.read(self.GOOD)
        self.assertEqual((r.rig, r.title, r.nightly_profile, r.gated, r.aa), ("seventh", "Seventh", None, (), {}))

    def test_each_mistake_is_refused_naming_the_key(self):
        cases = {
            "": "no [rig] table",
            '[rig]\ntitle = "x"\n': "[rig] has no matrix",
            self.GOOD + 'colour = "red"\n': "[rig] colour: not a key of [rig]",
            self.GOOD + '[nightly]\nprofile = ""\n': "[nightly] profile = '': expected a non-empty str",
            self.GOOD + '[nightly]\nbudget_min = 10\n': "[nightly] has no profile",
            self.GOOD + '[nightly]\nprofile = "nightly"\n': "[nightly] has no budget_min",
            self.GOOD + '[nightly]\nprofile = "nightly"\nbudget_min = "10"\n': "budget_min = '10': expected",
            self.GOOD + '[nightly]\nprofile = "nightly"\nbudget_min = 0\n': "budget_min = 0: expected minutes",
            self.GOOD + '[nightly]\nprofile = "nightly"\nbudget_min = true\n': "budget_min = True: expected",
            self.GOOD + '[sensitivity]\ngated = ["nightly"]\naa = { profile = "aa", axis = "arm" }\n':
                "[sensitivity] aa: expected exactly axis, profile, set",
            self.GOOD + '[sensitivity]\ngated = [1]\naa = { profile = "aa", axis = "arm", set = "s" }\n':
                "[sensitivity] gated: expected profile names",
            self.GOOD + '[site]\ntitle = "x"\n': "[site] is not a table a rig.toml has",
            self.GOOD + "[rig\n": "rig.toml",  # not TOML: the reader's error, naming the file
        }
        for text, expected in cases.items():
            with self.subTest(text=text), self.assertRaises(registry.RegistryError) as caught:
                self.read(text)
            self.assertIn(expected, str(caught.exception))
            self.assertIn("rig.toml", str(caught.exception))

    def test_the_command_says_which_file_is_wrong_and_exits_2(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "rigs", "seventh"))
            with open(os.path.join(root, "rigs", "seventh", "rig.toml"), "w") as f:
                f.write("[rig]\n")
            err = io.StringIO()
            with redirect_stderr(err):
                self.assertEqual(registry.main(["--nightly", "--root", root]), 2)
            self.assertIn(os.path.join(root, "rigs", "seventh", "rig.toml") + ": [rig] has no title", err.getvalue())


if __name__ == "__main__":
    unittest.main()
