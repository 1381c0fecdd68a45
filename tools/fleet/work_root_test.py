"""work_root.py as the check playbook runs it (`python3 -c <its text> ...`): a work root another user made or
could swap is refused before anything is written there; a bundle is used only when it is exactly its
manifest (a real bundle made by make_bundle.py, unpacked as Ansible's unarchive does, then tampered with).

The tests that hand a folder to another user (uid 65534, Debian's nobody) need root, as the fleet's runner
has; elsewhere they are skipped, with that reason."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

from tools.fleet import make_bundle

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "work_root.py")) as f:
    SOURCE = f.read()
NOBODY = 65534


def work_root(*args):
    done = subprocess.run([sys.executable, "-c", SOURCE, *args], stdout=subprocess.PIPE, text=True, timeout=60)
    return done.returncode, json.loads(done.stdout)


def as_root(test):
    return unittest.skipUnless(os.geteuid() == 0, "needs root: hands a folder to another user")(test)


class WorkRootTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        # Like /var/tmp: anyone may make a folder here, nobody may rename another's.
        self.shared = os.path.join(self.tmp, "shared")
        os.mkdir(self.shared)
        os.chmod(self.shared, 0o1777)
        self.root = os.path.join(self.shared, "tunelab")
        self.folders = [f"--folder={self.root}/{name}" for name in ("bundles", "fleet", "results")]

    def check(self, root=None, bundle_dir=None, sha="0" * 64):
        root = root or self.root
        return work_root("check", "--root", root, *self.folders, "--bundle-dir", bundle_dir or f"{root}/bundles/b",
                         "--manifest-sha256", sha)

    def test_a_new_root_is_made_for_this_user_alone(self):
        code, doc = self.check()
        self.assertEqual((code, doc), (0, {"root": self.root, "bundle": "absent"}))
        for path in (self.root, f"{self.root}/bundles", f"{self.root}/fleet", f"{self.root}/results"):
            st = os.lstat(path)
            self.assertEqual((st.st_uid, st.st_mode & 0o777), (os.geteuid(), 0o700), path)
        self.assertEqual(self.check()[0], 0)  # and it is accepted when it comes again

    @as_root
    def test_a_root_another_user_made_first_is_refused_and_nothing_is_written_there(self):
        # Issue 39, finding 1: a local user makes /var/tmp/tunelab first and plants links and a bundle.
        os.mkdir(self.root, 0o777)
        os.makedirs(f"{self.root}/fleet")
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        os.symlink(victim, f"{self.root}/fleet/run.pid.tmp")
        for dirpath, dirs, files in os.walk(self.root):
            for name in [dirpath] + [os.path.join(dirpath, n) for n in dirs + files]:
                os.lchown(name, NOBODY, NOBODY)
        before = sorted(os.listdir(self.root))
        code, doc = self.check()
        self.assertEqual(code, 1)
        self.assertIn(f"work root {self.root} is owned by uid {NOBODY}", doc["error"])
        self.assertEqual(sorted(os.listdir(self.root)), before)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")

    def test_a_root_that_is_a_link_or_open_to_others_is_refused(self):
        elsewhere = tempfile.mkdtemp()
        os.symlink(elsewhere, self.root)
        code, doc = self.check()
        self.assertIn("is not a folder (a link or a file)", doc["error"])
        os.unlink(self.root)
        os.mkdir(self.root, 0o755)
        os.chmod(self.root, 0o755)
        code, doc = self.check()
        self.assertIn(f"has mode 0755: other users could plant files root acts on; refused (fix, if it is yours: "
                      f"chmod 700 {self.root})", doc["error"])
        self.assertEqual(code, 1)

    def test_a_root_under_a_folder_others_can_rename_it_in_is_refused(self):
        open_folder = os.path.join(self.tmp, "open")
        os.mkdir(open_folder)
        os.chmod(open_folder, 0o777)  # world-writable, not sticky
        code, doc = self.check(root=os.path.join(open_folder, "tunelab"))
        self.assertEqual(code, 1)
        self.assertIn("is writable by other users (mode 0777) and not sticky", doc["error"])
        self.assertFalse(os.path.exists(os.path.join(open_folder, "tunelab")))

    @as_root
    def test_a_link_another_user_owns_above_the_root_or_the_state_folder_is_refused(self):
        # Issue 58: a non-default tunelab_root through a link was checked only at the link's target, and the
        # host state folder was made by Ansible's file module before any check, through any link.
        real = os.path.join(self.tmp, "real")
        os.mkdir(real, 0o755)
        link = os.path.join(self.tmp, "theirs")
        os.symlink(real, link)
        os.lchown(link, NOBODY, NOBODY)
        for root, state in ((os.path.join(link, "tunelab"), None),
                            (os.path.join(self.tmp, "mine", "tunelab"), os.path.join(link, "state"))):
            self.folders = [f"--folder={root}/{name}" for name in ("bundles", "fleet", "results")]
            extra = ["--state-dir", state] if state else []
            done = subprocess.run([sys.executable, "-c", SOURCE, "check", "--root", root, *self.folders, *extra,
                                   "--bundle-dir", f"{root}/bundles/b", "--manifest-sha256", "0" * 64],
                                  stdout=subprocess.PIPE, text=True, timeout=60)
            self.assertEqual(done.returncode, 1, done.stdout)
            self.assertIn(f"{link} (on the way to", json.loads(done.stdout)["error"])
            self.assertIn(f"is owned by uid {NOBODY}", json.loads(done.stdout)["error"])
            self.assertEqual(os.listdir(real), [])  # nothing written through the link
        os.lchown(link, 0, 0)  # root's own link: followed, and its target checked as any folder
        code, doc = work_root("check", "--root", os.path.join(link, "tunelab"), "--state-dir",
                              os.path.join(link, "state"), "--bundle-dir", f"{link}/tunelab/bundles/b",
                              "--manifest-sha256", "0" * 64)
        self.assertEqual(code, 0, doc)
        self.assertEqual(sorted(os.listdir(real)), ["state", "tunelab"])


class SameWalkTest(unittest.TestCase):
    """Issue 81, item 6: the folder-safety walk is written twice on purpose (a fleet host runs work_root.py with
    its own Python 3.8 and the standard library only; tunelab's own is results/safeio.check_folder, which
    rigs/host/hoststate.py imports). Both are held to one answer on the same planted trees: the same real path,
    or both refuse."""

    def walks(self):
        namespace = {"__name__": "work_root_under_test"}
        exec(compile(SOURCE, "work_root.py", "exec"), namespace)  # noqa: S102 -- our own file, as the host runs it
        return namespace["check_path"], namespace["Refused"]

    @as_root
    def test_both_walks_answer_alike_on_planted_trees(self):
        from results import safeio
        fleet_walk, refused = self.walks()
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        os.chmod(tmp, 0o755)
        mine = os.path.join(tmp, "mine", "a")
        os.makedirs(mine)
        others = os.path.join(tmp, "others")
        os.makedirs(os.path.join(others, "inside"))
        os.chown(others, NOBODY, NOBODY)
        open_dir = os.path.join(tmp, "open")
        os.makedirs(os.path.join(open_dir, "inside"))
        os.chmod(open_dir, 0o777)
        sticky = os.path.join(tmp, "sticky")
        os.makedirs(os.path.join(sticky, "inside"))
        os.chmod(sticky, 0o1777)
        os.symlink(mine, os.path.join(tmp, "link-to-mine"))
        os.symlink(others, os.path.join(tmp, "link-to-others"))
        theirs = os.path.join(tmp, "their-link")
        os.symlink(mine, theirs)
        os.lchown(theirs, NOBODY, NOBODY)
        os.symlink("loop-b", os.path.join(tmp, "loop-a"))
        os.symlink("loop-a", os.path.join(tmp, "loop-b"))
        with open(os.path.join(tmp, "file"), "w") as f:
            f.write("x")
        cases = [mine, os.path.join(tmp, "link-to-mine"), os.path.join(tmp, "link-to-mine", ".."),
                 os.path.join(others, "inside"), os.path.join(tmp, "link-to-others", "inside"),
                 os.path.join(open_dir, "inside"), os.path.join(sticky, "inside"), os.path.join(theirs, "x"),
                 os.path.join(tmp, "loop-a"), os.path.join(tmp, "file", "x"), os.path.join(tmp, "missing", "x"),
                 os.path.join(mine, ".", "..", "a")]
        for path in cases:
            for create in (False, True):
                with self.subTest(path=os.path.relpath(path, tmp), create=create):
                    answers = []
                    for walk, error in ((safeio.check_folder, safeio.WriteRefused), (fleet_walk, refused)):
                        try:
                            answers.append(walk(path, create=create))
                        except (error, OSError) as e:
                            answers.append(type(e).__name__ == "FileNotFoundError" and "missing" or "refused")
                    self.assertEqual(answers[0], answers[1])
                    shutil.rmtree(os.path.join(tmp, "missing"), ignore_errors=True)


class BundleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        src = os.path.join(self.tmp, "src")
        os.mkdir(src)
        for name, text, mode in (("matrix", "#!/bin/sh\necho run\n", 0o755), ("remote_run.py", "print(1)\n", 0o644),
                                 ("data.txt", "data\n", 0o644)):
            with open(os.path.join(src, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(src, name), mode)
        listing = os.path.join(self.tmp, "listing")
        with open(listing, "w") as f:
            f.write(f"file matrix {src}/matrix\nfile remote_run.py {src}/remote_run.py\n"
                    f"file matrix.runfiles/ws/data.txt {src}/data.txt\nempty matrix.runfiles/ws/__init__.py\n")
        self.bundle = os.path.join(self.tmp, "bundle.tar.gz")
        self.assertEqual(make_bundle.main(["--listing", listing, "--out", self.bundle]), 0)
        self.sha = make_bundle.manifest_sha256(self.bundle)
        self.dir = os.path.join(self.tmp, "root", "bundles", "b")
        os.makedirs(self.dir, mode=0o700)
        os.chmod(os.path.dirname(self.dir), 0o700)
        os.chmod(os.path.dirname(os.path.dirname(self.dir)), 0o700)
        with tarfile.open(self.bundle) as tar:  # as ansible.builtin.unarchive does: modes kept
            tar.extractall(self.dir)

    def verify(self, sha=None):
        return work_root("verify", "--bundle-dir", self.dir, "--manifest-sha256", sha or self.sha)

    def test_the_shipped_bundle_is_verified(self):
        self.assertEqual(self.verify(), (0, {"verified": True}))
        code, doc = work_root("check", "--root", os.path.join(self.tmp, "root"), "--bundle-dir", self.dir,
                              "--manifest-sha256", self.sha)
        self.assertEqual((code, doc["bundle"]), (0, "verified"))

    def refused(self, because):
        code, doc = self.verify()
        self.assertEqual(code, 1, doc)
        self.assertIn(because, doc["error"])

    def test_a_changed_added_linked_or_missing_file_is_refused(self):
        with open(os.path.join(self.dir, "remote_run.py"), "a") as f:
            f.write("import os; os.system('id')\n")
        self.refused("remote_run.py: its content differs from the manifest's")
        shutil.rmtree(self.dir)
        with tarfile.open(self.bundle) as tar:
            tar.extractall(self.dir)
        with open(os.path.join(self.dir, "matrix.runfiles", "sitecustomize.py"), "w") as f:
            f.write("import os\n")
        self.refused("matrix.runfiles/sitecustomize.py is not in the manifest")
        os.unlink(os.path.join(self.dir, "matrix.runfiles", "sitecustomize.py"))
        os.chmod(os.path.join(self.dir, "matrix.runfiles", "ws", "data.txt"), 0o755)
        self.refused("matrix.runfiles/ws/data.txt: mode 0755, the manifest says 0644")
        os.unlink(os.path.join(self.dir, "matrix.runfiles", "ws", "data.txt"))
        os.symlink("/etc/passwd", os.path.join(self.dir, "matrix.runfiles", "ws", "data.txt"))
        self.refused("matrix.runfiles/ws/data.txt is not a regular file")
        os.unlink(os.path.join(self.dir, "matrix.runfiles", "ws", "data.txt"))
        self.refused("1 file(s) of the manifest missing, e.g. matrix.runfiles/ws/data.txt")

    def test_a_planted_bundle_with_its_own_manifest_or_a_marker_is_refused(self):
        # The marker file the playbook trusted before: a planted bundle had one.
        os.unlink(os.path.join(self.dir, "BUNDLE.sha256"))
        with open(os.path.join(self.dir, ".complete"), "w") as f:
            f.write(self.sha + "\n")
        self.refused("no BUNDLE.sha256 (a partial or planted bundle)")
        # A manifest that matches the planted files but is not the one the controller built.
        with open(os.path.join(self.dir, "remote_run.py"), "w") as f:
            f.write("import os; os.system('id')\n")
        lines = []
        for dirpath, _, files in os.walk(self.dir):
            for name in files:
                path = os.path.join(dirpath, name)
                with open(path, "rb") as f:
                    lines.append(f"{hashlib.sha256(f.read()).hexdigest()} 0644 {os.path.relpath(path, self.dir)}")
        with open(os.path.join(self.dir, "BUNDLE.sha256"), "w") as f:
            f.write("\n".join(lines) + "\n")
        self.refused("its BUNDLE.sha256 is not the controller's")

    @as_root
    def test_a_file_another_user_owns_is_refused(self):
        os.chown(os.path.join(self.dir, "matrix"), NOBODY, NOBODY)
        self.refused(f"matrix: owned by uid {NOBODY}")


if __name__ == "__main__":
    unittest.main()
