"""tools/cleanroom/cleanroom.sh refuses bad input before it builds anything: an unknown step (a whole name), a
commit the checkout lacks, a room folder another user owns or could swap, and a host without mmdebstrap and
without apt-get to install it (named, exit 2). A real room whose step sleeps is stopped by SIGTERM and SIGINT,
and its folder goes only after it (issue 58, row 4). The whole room runs in .ci/run, where a failure to make
it fails CI; this test makes rooms itself, so it runs on the host (tag needs-cleanroom), not in a room."""

import os
import shutil
import subprocess
import tempfile
import unittest

SCRIPT = os.path.join(os.environ["TEST_SRCDIR"], "tunelab", "tools", "cleanroom", "cleanroom.sh")
# What the script needs before it looks for mmdebstrap; nothing else is on the PATH it is given.
PROGRAMS = ("bash", "env", "id", "dirname", "git", "unshare", "chroot", "mount", "tar", "sha256sum", "sed", "cat", "install",
            "stat")


def checkout(parent):
    """A git checkout holding the script (it clones the checkout it stands in)."""
    repo = os.path.join(parent, "repo")
    os.makedirs(os.path.join(repo, "tools", "cleanroom"))
    shutil.copy(SCRIPT, os.path.join(repo, "tools", "cleanroom", "cleanroom.sh"))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q",
                                                 "-m", "room"]):
        subprocess.run(["git", "-C", repo, *args], check=True)
    return os.path.join(repo, "tools", "cleanroom", "cleanroom.sh")


def room_processes(folder):
    """Pids of the processes whose root lies in `folder` (a room's chroot)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/root").startswith(folder):
                found.append(pid)
        except OSError:
            continue
    return found


class CleanroomTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.script = checkout(self.tmp)

    def run_script(self, *args, env=None):
        return subprocess.run(["bash", self.script, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=60, env=env)

    def test_help(self):
        proc = self.run_script("--help")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("--steps LIST", proc.stdout)
        self.assertIn("needs-podman", open(self.script).read())

    def test_the_excluded_tags_are_what_ci_runs_on_the_host(self):
        proc = self.run_script("--excluded-tags")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(proc.stdout.strip(), "needs-podman,needs-dockerd,needs-cleanroom")

    def test_unknown_step_is_refused(self):
        proc = self.run_script("--steps", "build,bogus")
        self.assertEqual(proc.returncode, 2, proc.stdout)
        self.assertIn("unknown step 'bogus'", proc.stdout)

    def test_a_step_is_a_whole_name(self):
        # Issue 58, row 4: a substring check let 'smoke build' (and the room then ran nothing, exit 0) through.
        for steps in ("smoke build", "*", ",", "buil", ""):
            proc = self.run_script("--steps", steps)
            self.assertEqual(proc.returncode, 2, (steps, proc.stdout))
            self.assertRegex(proc.stdout, "unknown step|names no step")

    def test_a_room_folder_another_user_owns_or_may_write_is_refused(self):
        # Issue 58, row 4: a user who made /var/tmp/tunelab-cleanroom could swap root's room for a link to /.
        if os.geteuid() != 0:
            self.skipTest("needs root: the room's folders are root's, and the test plants another user's")
        for how, expected in (("nobody", "owned by uid 65534"), ("0777", "writable by other users"),
                              ("link", "is a link")):
            parent = tempfile.mkdtemp(dir=self.tmp)
            os.chmod(parent, 0o777 if how == "0777" else 0o755)  # `install -d -m 0700` fixes the folder's own mode
            work = os.path.join(parent, "work")
            if how == "link":
                os.symlink("/", work)
            else:
                os.mkdir(work)
                os.chown(work, 65534 if how == "nobody" else 0, 65534 if how == "nobody" else 0)
                os.chmod(work, 0o700)
            env = dict(os.environ, TUNELAB_CLEANROOM_WORK_PARENT=work,
                       TUNELAB_CLEANROOM_CACHE_DIR=os.path.join(parent, "cache"))
            proc = self.run_script("--steps", "build", env=env)
            self.assertEqual(proc.returncode, 2, (how, proc.stdout))
            self.assertIn(expected, proc.stdout)
            self.assertEqual(os.listdir(work) if how != "link" else [], [])

    def test_a_stop_request_stops_the_room_before_its_folder_goes(self):
        # Issue 58, row 4: Ctrl-C never reached the room (`timeout` runs it in a group of its own), and SIGTERM
        # deleted the room's folder while the room ran on. A real room (the day's cached root) whose smoke step
        # is a stand-in `./bazelw` that sleeps: each signal stops it, then the folder goes.
        if os.geteuid() != 0:
            self.skipTest("needs root: the room is chroot and namespaces")
        import signal
        import time
        repo = os.path.dirname(os.path.dirname(os.path.dirname(self.script)))
        with open(os.path.join(repo, "bazelw"), "w") as f:
            f.write("#!/bin/sh\necho stand-in bazelw sleeping\nexec sleep 600\n")
        os.chmod(os.path.join(repo, "bazelw"), 0o755)
        subprocess.run(["git", "-C", repo, "add", "-A"], check=True)
        subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m",
                        "stand-in"], check=True)
        work_parent = os.path.join(self.tmp, "rooms")
        for sig in (signal.SIGTERM, signal.SIGINT):
            log = os.path.join(self.tmp, f"room-{sig.name}.log")
            with open(log, "w") as out:
                room = subprocess.Popen(["bash", self.script, "--steps", "smoke", "--no-repo-cache"], stdout=out,
                                        stderr=subprocess.STDOUT, env=dict(os.environ, TUNELAB_CLEANROOM_WORK_PARENT=work_parent))
            deadline = time.monotonic() + 600  # the day's root is built once if it is not cached yet
            while "stand-in bazelw sleeping" not in open(log).read():
                self.assertIsNone(room.poll(), open(log).read())
                self.assertLess(time.monotonic(), deadline, open(log).read())
                time.sleep(0.2)
            rooms = os.listdir(work_parent)
            self.assertEqual(len(rooms), 1)
            room.send_signal(sig)
            self.assertEqual(room.wait(timeout=60), 130, open(log).read())
            self.assertIn(f"stopped by {sig.name}", open(log).read())
            self.assertEqual(os.listdir(work_parent), [], "the room's folder stayed")
            self.assertEqual(room_processes(os.path.join(work_parent, rooms[0])), [], "processes of the room outlived it")

    def test_unknown_commit_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest("the root check comes first")
        proc = self.run_script("--rev", "no-such-commit")
        self.assertEqual(proc.returncode, 2, proc.stdout)
        self.assertIn("no commit 'no-such-commit'", proc.stdout)

    def test_no_mmdebstrap_and_no_apt_is_named(self):
        if os.geteuid() != 0:
            proc = self.run_script()
            self.assertEqual(proc.returncode, 2, proc.stdout)
            self.assertIn("needs root", proc.stdout)
            return
        bin_dir = os.path.join(self.tmp, "bin")
        os.makedirs(bin_dir)
        for program in PROGRAMS:
            found = shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
            self.assertIsNotNone(found, program)
            os.symlink(found, os.path.join(bin_dir, program))
        # The script adds /usr/sbin and /sbin itself: neither holds mmdebstrap or apt-get here, or the test says so.
        for folder in ("/usr/sbin", "/sbin"):
            for program in ("mmdebstrap", "apt-get"):
                if os.path.exists(os.path.join(folder, program)):
                    self.skipTest(f"{folder}/{program} exists: the script would find it")
        proc = self.run_script("--steps", "build", env={"PATH": bin_dir, "HOME": self.tmp})
        self.assertEqual(proc.returncode, 2, proc.stdout)
        self.assertIn("mmdebstrap is missing and this host has no apt-get", proc.stdout)


if __name__ == "__main__":
    unittest.main()
