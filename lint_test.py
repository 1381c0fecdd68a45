"""Lint as a test: `ruff check` (pinned in tools/python/requirements.lock, settings in ruff.toml) over this
checkout's Python files, and the house rules no linter knows. Fails with the findings, file and line."""

import glob
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def runfile(*parts):
    for root in (os.environ.get("RUNFILES_DIR", ""), os.path.join(HERE, "..")):
        path = os.path.join(root, *parts)
        if root and os.path.exists(path):
            return path
    raise FileNotFoundError(os.path.join(*parts))


def checkout():
    """The checkout this test was built from: the runfile links back to its ruff.toml."""
    return os.path.dirname(os.path.realpath(runfile("tunelab", "ruff.toml")))


class LintTest(unittest.TestCase):
    def test_the_runner_calls_rigs_through_the_contract(self):
        # rigs/matrix/rig.py's Rig declares every member the runner calls: no discovery by attribute name.
        found = []
        for path in glob.glob(os.path.join(checkout(), "rigs", "matrix", "*.py")):
            with open(path) as f:
                for number, line in enumerate(f, 1):
                    if re.search(r"\b(getattr|hasattr)\((self\.)?(ctx\.)?rig\b", line):
                        found.append(f"{os.path.relpath(path, checkout())}:{number}: {line.strip()}")
        self.assertEqual(found, [])

    def test_the_floors_hold(self):
        # .importlinter: tools > rigs > analysis > results, rigs.host, workloads; no arrow runs upward.
        from importlinter import cli
        tree = checkout()
        sys.path.insert(0, tree)  # the checkout's packages, every file of them, not this test's runfiles
        for name in [m for m in sys.modules if m.split(".")[0] in ("results", "analysis", "rigs", "tools")]:
            del sys.modules[name]
        try:
            code = cli.lint_imports(config_filename=os.path.join(tree, ".importlinter"))
        finally:
            sys.path.remove(tree)
        self.assertEqual(code, 0, "a contract of .importlinter is broken (its report is above)")

    def test_ruff_finds_nothing(self):
        ruff = runfile("pypi", "site", "bin", "ruff")
        tree = checkout()
        self.assertTrue(os.path.isdir(os.path.join(tree, ".git")) or os.path.exists(os.path.join(tree, "WORKSPACE")),
                        tree)
        proc = subprocess.run([ruff, "check", "--no-cache", "--config", os.path.join(tree, "ruff.toml"), tree],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tree)
        self.assertEqual(proc.returncode, 0, f"ruff check found problems (fix them, or say why in ruff.toml):\n"
                                             f"{proc.stdout}")
        print(proc.stdout.strip(), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
