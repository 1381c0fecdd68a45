"""The report's command line (command.py): a corrupt result refused and kept, a zero baseline said as unusable
input, a story's answer, mechanism and caveats from its flags. Fixtures: SYNTHETIC sets (analysis/testing/testsets.py:
real documents, chosen values), not measurements."""

import contextlib
import io
import os
import tempfile
import unittest

from analysis.reports import command, report
from analysis.testing.testsets import write_set

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_ROOT = os.path.join(os.path.dirname(HERE), "..", "results")


class CommandTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_cli_refuses_a_corrupt_result_and_keeps_it(self):
        folder = os.path.join(self.dir, "broken")
        write_set(folder, [({}, 100.0)])
        corrupt = os.path.join(folder, "cells", f"{0:012x}.r3.json")
        with open(corrupt, "w") as f:
            f.write("{not json")
        out = os.path.join(self.dir, "r.pdf")
        code = command.main([folder, "--kind", "axis", "--out", out, "--results-dir", RESULTS_ROOT])
        self.assertEqual(code, report.EXIT_BAD_INPUT)
        self.assertFalse(os.path.exists(out))
        self.assertTrue(os.path.exists(corrupt))

    def test_cli_says_a_zero_baseline_is_unusable_input(self):
        # Issue 39, finding 3: exit 1 with a traceback; the documented answer is 2 with the reason.
        folder = os.path.join(self.dir, "zero")
        write_set(folder, [({"variant": "stock"}, 0.0), ({"variant": "patched"}, 10.0)], runs=3)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = command.main([folder, "--kind", "axis", "--out", os.path.join(self.dir, "z.pdf"),
                                "--results-dir", RESULTS_ROOT])
        self.assertEqual(code, report.EXIT_BAD_INPUT)
        self.assertIn("error:", err.getvalue())
        self.assertNotIn("Traceback", err.getvalue())

    def test_a_story_leads_with_its_answer_and_says_its_caveats(self):
        folder = os.path.join(self.dir, "story")
        write_set(folder, [({"variant": "stock"}, 1000.0), ({"variant": "patched"}, 950.0)], runs=3)
        text_path = os.path.join(self.dir, "story.txt")
        with contextlib.redirect_stdout(io.StringIO()):
            code = command.main([folder, "--kind", "axis", "--out", os.path.join(self.dir, "s.pdf"), "--text",
                                text_path, "--results-dir", RESULTS_ROOT, "--answer", "cpu_loop_rate",
                                "--mechanism", "cpu_loop_rate", "--caveat", "One VM, one night"])
        self.assertEqual(code, report.EXIT_OK)
        with open(text_path) as f:
            text = f.read()
        self.assertRegex(text, r"Mechanism: what moved\n.*\n-+.*\ncpu_loop_rate \(ops/s\) +variant=patched vs stock +1,000 +950 "
                               r"+-5\.0% \(-5\.0%\.\.-5\.0%\), worse\n")
        self.assertIn("Caveats: One VM, one night.", text)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = command.main([folder, "--kind", "axis", "--out", os.path.join(self.dir, "t.pdf"),
                                "--results-dir", RESULTS_ROOT, "--answer", "get_rate"])
        self.assertEqual(code, report.EXIT_BAD_INPUT)
        self.assertIn("no set measures get_rate (they measure cpu_loop_rate", err.getvalue())
        self.assertFalse(os.path.exists(os.path.join(self.dir, "t.pdf")))


if __name__ == "__main__":
    unittest.main()
