"""Lint as a test: `ruff check` (pinned in tools/python/requirements.lock, settings in ruff.toml) over this
checkout's Python files. Fails with ruff's own findings, file:line:column and rule."""

import os
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


class LintTest(unittest.TestCase):
    def test_ruff_finds_nothing(self):
        ruff = runfile("pypi", "site", "bin", "ruff")
        # The runfile links back to the checkout's ruff.toml: its folder is the tree to check.
        tree = os.path.dirname(os.path.realpath(runfile("tunelab", "ruff.toml")))
        self.assertTrue(os.path.isdir(os.path.join(tree, ".git")) or os.path.exists(os.path.join(tree, "WORKSPACE")),
                        tree)
        proc = subprocess.run([ruff, "check", "--no-cache", "--config", os.path.join(tree, "ruff.toml"), tree],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tree)
        self.assertEqual(proc.returncode, 0, f"ruff check found problems (fix them, or say why in ruff.toml):\n"
                                             f"{proc.stdout}")
        print(proc.stdout.strip(), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
