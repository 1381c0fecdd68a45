"""//tools:test_times on recorded test logs (tools/testdata/testlogs/README.md): each test's wall time from
Bazel's test.xml, runs of one test summed under its label, the slowest first, sizes that do not fit named."""

import contextlib
import io
import os
import re
import shutil
import tempfile
import unittest

from tools import test_times

LOGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "testlogs")


class TestTimesTest(unittest.TestCase):
    def test_labels_and_times_from_the_recorded_logs(self):
        times = test_times.read_times(LOGS)
        self.assertEqual(times, {"//tools:bisect_test": (3.0, 1, 0), "//:lint_test": (11.0, 1, 0),
                                 "//rigs/matrix:livemetrics_test": (8.0, 2, 0)})

    def test_the_table_is_slowest_first_with_tiers_and_sizes(self):
        attributes = {"//tools:bisect_test": ("small", []), "//:lint_test": ("small", ["external", "no-sandbox"]),
                      "//rigs/matrix:livemetrics_test": ("large", ["integration"])}
        text = test_times.table(test_times.read_times(LOGS), attributes)
        lines = text.splitlines()
        self.assertTrue(lines[1].endswith("//:lint_test (external, no-sandbox)"), lines[1])
        self.assertIn("//rigs/matrix:livemetrics_test (integration; too big: small)", lines[2])
        self.assertIn("3 tests, 22 s of test time in all", text)
        self.assertIn("by tier: integration 8 s, quick 14 s", text)
        self.assertTrue(all(len(line) <= 100 for line in lines))

    def test_a_test_that_failed_in_some_runs_says_how_many(self):
        """The flake hunt's question (tools/flake_hunt.sh): the recorded livemetrics_test's two runs, the second
        marked failed as Bazel marks a test that exited 1 (an <error> in its testcase)."""
        with tempfile.TemporaryDirectory() as tmp:
            runs = os.path.join(LOGS, "rigs", "matrix", "livemetrics_test")
            shutil.copytree(runs, os.path.join(tmp, "rigs", "matrix", "livemetrics_test"))
            second = os.path.join(tmp, "rigs", "matrix", "livemetrics_test", "run_2_of_2", "test.xml")
            with open(second) as f:
                xml = f.read()
            with open(second, "w") as f:
                f.write(re.sub(r"(<testcase [^>]*>)", r'\1<error message="exited with error code 1"></error>', xml, 1))
            times = test_times.read_times(tmp)
            self.assertEqual(times, {"//rigs/matrix:livemetrics_test": (8.0, 2, 1)})
            text = test_times.table(times, {"//rigs/matrix:livemetrics_test": ("small", ["integration"])})
            self.assertIn("//rigs/matrix:livemetrics_test (integration; FAILED 1 of 2 runs)", text)

    def test_a_test_run_again_in_runs_is_read_from_those_only(self):
        """Bazel leaves a test's test.xml of an earlier single run beside the run_K_of_N/ folders of a later
        --runs_per_test: the table counts the runs, never that stale file."""
        with tempfile.TemporaryDirectory() as tmp:
            runs = os.path.join(tmp, "rigs", "matrix", "livemetrics_test")
            shutil.copytree(os.path.join(LOGS, "rigs", "matrix", "livemetrics_test"), runs)
            shutil.copy(os.path.join(runs, "run_1_of_2", "test.xml"), os.path.join(runs, "test.xml"))
            self.assertEqual(test_times.read_times(tmp), {"//rigs/matrix:livemetrics_test": (8.0, 2, 0)})
            for run in ("run_1_of_2", "run_2_of_2"):  # a single run again later: its own test.xml is read
                shutil.rmtree(os.path.join(runs, run))
            self.assertEqual(test_times.read_times(tmp)["//rigs/matrix:livemetrics_test"][1], 1)

    def test_size_rule(self):
        self.assertEqual(test_times.fit("small", 59), "")
        self.assertEqual(test_times.fit("small", 61), "too small: medium")
        self.assertEqual(test_times.fit("large", 10), "too big: small")
        # Bazel's ranges overlap: a medium test of 40 s is in range (30-300), one of 20 s would do as small.
        self.assertEqual(test_times.fit("medium", 40), "")
        self.assertEqual(test_times.fit("medium", 20), "too big: small")
        self.assertEqual(test_times.fit("large", 200), "too big: medium")

    def test_a_folder_without_logs_is_said(self):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(test_times.main([os.path.dirname(LOGS), "--bazel", ""]), 0)
        self.assertIn("tests,", out.getvalue())
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            test_times.main([os.path.join(LOGS, "nowhere")])


if __name__ == "__main__":
    unittest.main()
