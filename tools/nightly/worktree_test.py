"""nightly.sh never builds in an accepted revision's worktree it did not make (issue 78: a stored folder is
data, never code): a folder planted at results/nightly-out/worktrees/<accepted>, a link there, or git's own
worktree with changes is refused (exit 2) before any build; the worktree git made, unchanged, is used. Run on a
scratch checkout holding only nightly.sh; a `bazel` on PATH records whether it was ever called."""

import os
import shutil
import stat
import subprocess
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nightly.sh")


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
                          check=True, stdout=subprocess.PIPE, text=True).stdout.strip()


class AcceptedWorktreeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.repo = os.path.join(self.tmp, "checkout")
        os.makedirs(os.path.join(self.repo, "tools", "nightly"))
        shutil.copy(SCRIPT, os.path.join(self.repo, "tools", "nightly", "nightly.sh"))
        with open(os.path.join(self.repo, ".gitignore"), "w") as f:
            f.write("/results/\nbazel-*\n")
        git(self.repo, "init", "-q")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", "one")
        self.head = git(self.repo, "rev-parse", "HEAD")
        self.worktree = os.path.join(self.repo, "results", "nightly-out", "worktrees", self.head)
        self.bin = os.path.join(self.tmp, "bin")
        os.makedirs(self.bin)
        self.called = os.path.join(self.tmp, "bazel-called")
        fake = os.path.join(self.bin, "bazel")
        with open(fake, "w") as f:
            f.write(f"#!/bin/sh\necho \"$@\" >> {self.called}\nexit 1\n")
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)

    def nightly(self):
        env = dict(os.environ, PATH=f"{self.bin}:{os.environ['PATH']}", NIGHTLY_MATRICES="calibration")
        for name in ("NIGHTLY_RUNFILES", "NIGHTLY_ACCEPTED_RUNFILES", "NIGHTLY_ACCEPTED"):
            env.pop(name, None)
        done = subprocess.run(["bash", os.path.join(self.repo, "tools", "nightly", "nightly.sh")], cwd=self.repo,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        return done.returncode, done.stdout

    def test_a_planted_folder_or_link_is_refused_before_any_build(self):
        os.makedirs(self.worktree)
        with open(os.path.join(self.worktree, "BUILD.bazel"), "w") as f:
            f.write("planted\n")
        code, out = self.nightly()
        self.assertEqual(code, 2, out)
        self.assertIn("is not a worktree this checkout's git made", out)
        shutil.rmtree(self.worktree)
        os.symlink(self.tmp, self.worktree)
        code, out = self.nightly()
        self.assertEqual(code, 2, out)
        self.assertIn("refused, never built in", out)
        self.assertFalse(os.path.exists(self.called), "bazel ran")

    def test_gits_own_worktree_is_used_and_a_changed_one_refused(self):
        git(self.repo, "worktree", "add", "-q", "--detach", self.worktree, self.head)
        code, out = self.nightly()
        self.assertNotIn("is not a worktree", out)  # past the check: this scratch checkout has no rigs to read
        self.assertIn("the rigs' registry cannot be read", out)
        with open(os.path.join(self.worktree, "BUILD.bazel"), "w") as f:
            f.write("changed after git made it\n")
        code, out = self.nightly()
        self.assertEqual(code, 2, out)
        self.assertIn("unchanged: refused", out)
        self.assertFalse(os.path.exists(self.called), "bazel ran")


if __name__ == "__main__":
    unittest.main()
