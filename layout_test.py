"""The house's layout as ARCHITECTURE.md states it, as a test: tests sit beside the module they are named for,
and a job's modules are one package (no module named for a job flat in analysis/ or tools/; test helpers are
test-only targets in a testing/ package). Like //:lint_test it reads the checkout through the runfiles' links
back to it, so it runs outside the sandbox and is never cached."""

import os
import re
import unittest

from lint_test import checkout

# A module named for one of the jobs that have their own package (ARCHITECTURE.md: One job, one package).
JOB_MODULE = re.compile(r"(gate|sensitivity|bisect|report|profile|profiles|profiling|history|plots|render|kinds)(_\w+)?\.py")


def tracked_python(tree):
    """The relative path of every Python file of the checkout (not third_party, outputs or dot folders)."""
    found = []
    for root, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if not d.startswith((".", "bazel-")) and d not in ("third_party", "nightly-out")]
        found += [os.path.relpath(os.path.join(root, n), tree) for n in files if n.endswith(".py")]
    return sorted(found)


def misplaced_tests(paths):
    """Tests away from their code: in a tests/ folder, or named X_test.py where X.py lies in another folder only."""
    folders_of = {}
    for path in paths:
        if not path.endswith("_test.py"):
            folders_of.setdefault(os.path.basename(path), set()).add(os.path.dirname(path))
    found = []
    for path in sorted(paths):
        if not path.endswith("_test.py"):
            continue
        folder, module = os.path.dirname(path), os.path.basename(path)[:-len("_test.py")] + ".py"
        if "tests" in folder.split("/"):
            found.append(f"{path}: in a tests/ folder")
        elif module in folders_of and folder not in folders_of[module]:
            found.append(f"{path}: {module} is in {', '.join(sorted(folders_of[module]))}")
    return found


class LayoutTest(unittest.TestCase):
    def test_tests_sit_beside_their_code(self):
        # ARCHITECTURE.md: a test X_test.py sits beside the module X.py it is named for, never in a tests/ folder.
        found = misplaced_tests(tracked_python(checkout()))
        self.assertEqual(found, [], "a test away from its module: move it beside it (or name it for what it tests)")

    def test_the_beside_rule_finds_each_form(self):
        self.assertEqual(misplaced_tests(["a/x.py", "b/x_test.py", "c/tests/y_test.py", "c/y.py", "d/z_test.py",
                                          "e/w.py", "e/w_test.py"]),
                         ["b/x_test.py: x.py is in a", "c/tests/y_test.py: in a tests/ folder"])

    def test_each_job_lives_in_its_own_package(self):
        # ARCHITECTURE.md: a job's modules are one package (analysis/<job>/, tools/<job>/), none lies flat in
        # analysis/ or tools/; test helpers are test-only targets in a testing/ package.
        tree = checkout()
        flat = [rel for rel in tracked_python(tree)
                if os.path.dirname(rel) in ("analysis", "tools") and JOB_MODULE.fullmatch(os.path.basename(rel))]
        self.assertEqual(flat, [], "a job's module flat in analysis/ or tools/: move it into the job's package")
        not_test_only = []
        for folder in {os.path.dirname(rel) for rel in tracked_python(tree)}:
            build = os.path.join(tree, folder, "BUILD.bazel")
            if os.path.basename(folder) != "testing" or not os.path.exists(build):
                continue
            with open(build) as f:
                for rule in re.findall(r"\npy_library\((.*?)\n\)", f.read(), re.S):
                    if not re.search(r"testonly = True", rule):
                        not_test_only.append(f"{os.path.relpath(build, tree)}: {rule.split(',')[0].strip()}")
        self.assertEqual(not_test_only, [], "a test helper that production code could depend on")

    def test_the_job_rule_finds_each_form(self):
        for name in ("gate_output.py", "bisect_core.py", "report_sections.py", "profile_diff.py", "history.py",
                     "sensitivity.py", "plots.py", "render.py"):
            self.assertTrue(JOB_MODULE.fullmatch(name), name)
        for name in ("stats.py", "promote.py", "resultsets.py", "test_times.py", "gate.py.orig"):
            self.assertFalse(JOB_MODULE.fullmatch(name), name)


if __name__ == "__main__":
    unittest.main()
