"""Folders a rig asks to have in memory (memorydirs.py): made private on a tmpfs, linked from the workdir,
refused before anything is made when they cannot be, and removed after the cell; end to end with the fake
rig's `scratch` behaviour (its JVM writes into workdir/scratch), also when the cell fails."""

import os
import stat
import tempfile
import unittest
from unittest import mock

from rigs.matrix import runner
from rigs.matrix.cell import memorydirs
from rigs.matrix.testing.fakerig import FakeRigTestCase


def mounts_file(root, name, *lines):
    path = os.path.join(root, name)
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    return path


class PlaceTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.mount = os.path.join(self.root, "shm")
        os.mkdir(self.mount)
        self.workdir = os.path.join(self.root, "work")
        os.mkdir(self.workdir)
        self.mounts = mounts_file(self.root, "mounts", "proc /proc proc rw 0 0", f"tmpfs {self.mount} tmpfs rw,nosuid 0 0")

    def test_a_private_folder_linked_and_removed(self):
        evidence, made = memorydirs.place(self.workdir, ["name"], self.mount, self.mounts)
        (folder,) = made
        self.assertEqual(evidence, {"name": {"filesystem": "tmpfs", "mount": self.mount, "path": folder}})
        self.assertEqual(os.path.dirname(folder), self.mount)
        self.assertEqual(os.path.realpath(os.path.join(self.workdir, "name")), folder)
        self.assertEqual(stat.S_IMODE(os.stat(folder).st_mode), 0o700)
        with open(os.path.join(self.workdir, "name", "fsimage"), "w") as f:
            f.write("x")
        memorydirs.remove(made)
        self.assertFalse(os.path.exists(folder))
        self.assertTrue(os.path.islink(os.path.join(self.workdir, "name")))  # dangling: it says where it was

    def test_refused_before_anything_is_made(self):
        not_tmpfs = mounts_file(self.root, "mounts-disk", f"/dev/sda1 {self.mount} ext4 rw 0 0")
        with self.assertRaisesRegex(memorydirs.MemoryDirError, "is not a tmpfs on this host"):
            memorydirs.place(self.workdir, ["name"], self.mount, not_tmpfs)
        with self.assertRaisesRegex(memorydirs.MemoryDirError, "is not a tmpfs"):
            memorydirs.place(self.workdir, ["name"], self.mount, os.path.join(self.root, "absent"))
        for bad in ("../escape", "a/b", ".", ""):
            with self.assertRaisesRegex(memorydirs.MemoryDirError, "a plain name inside the cell's workdir"):
                memorydirs.place(self.workdir, ["ok", bad], self.mount, self.mounts)
        os.mkdir(os.path.join(self.workdir, "taken"))
        with self.assertRaisesRegex(memorydirs.MemoryDirError, "exists already"):
            memorydirs.place(self.workdir, ["ok", "taken"], self.mount, self.mounts)
        self.assertEqual(os.listdir(self.mount), [])
        self.assertEqual(memorydirs.place(self.workdir, [], self.mount, not_tmpfs), ({}, []))

    def test_a_failure_halfway_removes_what_was_made(self):
        real_symlink = os.symlink
        calls = []

        def second_fails(src, dst):
            calls.append(dst)
            if len(calls) == 2:
                raise PermissionError("no")
            real_symlink(src, dst)
        with mock.patch.object(memorydirs.os, "symlink", second_fails):
            with self.assertRaisesRegex(memorydirs.MemoryDirError, "no"):
                memorydirs.place(self.workdir, ["one", "two"], self.mount, self.mounts)
        self.assertEqual(os.listdir(self.mount), [])


class MemoryDirRunTest(FakeRigTestCase):
    def test_the_cell_writes_in_memory_and_the_folder_goes_after_it(self):
        if not memorydirs.tmpfs_mounted():
            self.skipTest(f"{memorydirs.TMPFS_MOUNT} is not a tmpfs here")
        code, out = self.box.main("--set", "behaviour=scratch")
        (run_dir,) = self.box.run_dirs()
        docs = list(self.docs(run_dir).values())
        self.assertTrue(docs)
        for doc in docs:
            self.assertEqual(doc["status"], "ok", doc.get("reason"))
            placed = doc["evidence"]["memory_dirs"]["scratch"]
            self.assertEqual((placed["filesystem"], placed["mount"]), ("tmpfs", memorydirs.TMPFS_MOUNT))
            with open(doc["logs"]["stderr"]) as f:
                self.assertIn("fake JVM: scratch is " + placed["path"], f.read())
            self.assertFalse(os.path.exists(placed["path"]))
        self.assertEqual(len({doc["evidence"]["memory_dirs"]["scratch"]["path"] for doc in docs}), len(docs))
        self.assertEqual(code, 0, out)

    def test_a_host_without_tmpfs_fails_the_cell_with_the_reason(self):
        with mock.patch.object(memorydirs, "tmpfs_mounted", return_value=False):
            code, out = self.box.main("--set", "behaviour=scratch")
        (run_dir,) = self.box.run_dirs()
        for doc in self.docs(run_dir).values():
            self.assertEqual(doc["status"], "failed")
            self.assertEqual(doc["reason"], f"the rig asks for scratch in memory, and {memorydirs.TMPFS_MOUNT} is "
                                            "not a tmpfs on this host")
        self.assertEqual(code, runner.EXIT_CELLS_FAILED, out)

    def test_the_folder_goes_when_the_cell_fails(self):
        if not memorydirs.tmpfs_mounted():
            self.skipTest(f"{memorydirs.TMPFS_MOUNT} is not a tmpfs here")
        placed = []
        real_place = memorydirs.place

        def recording(*args, **kwargs):
            evidence, made = real_place(*args, **kwargs)
            placed.extend(made)
            return evidence, made
        # Whatever ends the cell (here an error inside the runner while its processes run), the folder goes.
        with mock.patch.object(memorydirs, "place", recording), \
                mock.patch.object(runner.cellrunner.CellRunner, "_run_phases",
                                  side_effect=RuntimeError("the process died")):
            try:
                self.box.main("--set", "behaviour=scratch")
            except RuntimeError:
                pass
        self.assertEqual(len(placed), 1)
        self.assertFalse(os.path.exists(placed[0]))


if __name__ == "__main__":
    unittest.main()
