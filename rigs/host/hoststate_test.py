"""The state folder a root runner keeps (its lock, the knob journal's folder) cannot be planted, swapped or
blocked by another user. Each test is an attack that worked before the state moved out of /run/lock (issue:
trust boundaries); the journal's own attacks: rigs/matrix/knobs/hostknobs_test.py."""

import os
import tempfile
import unittest

from rigs.host import hoststate

NOBODY = 65534


class Sandbox:
    def __init__(self, root):
        self.state = os.path.join(root, "state")
        # A stand-in for a file root must never write on another user's word.
        self.victim = os.path.join(root, "authorized_keys")
        with open(self.victim, "w") as f:
            f.write("ssh-ed25519 AAAA the-real-key\n")

    def victim_text(self):
        with open(self.victim) as f:
            return f.read()


class StateFolderTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.box = Sandbox(self.root)

    def test_created_private_and_reused(self):
        path = hoststate.ensure_state_dir(self.box.state)
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o700)
        self.assertEqual(hoststate.ensure_state_dir(self.box.state), path)

    def test_a_folder_others_may_write_is_refused(self):
        os.mkdir(self.box.state, 0o700)
        os.chmod(self.box.state, 0o1777)  # as /run/lock is
        with self.assertRaisesRegex(hoststate.StateError, "mode 1777.*chmod 700"):
            hoststate.ensure_state_dir(self.box.state)

    def test_a_folder_of_another_user_or_a_link_is_refused(self):
        os.mkdir(self.box.state, 0o700)
        os.chown(self.box.state, NOBODY, NOBODY)
        with self.assertRaisesRegex(hoststate.StateError, f"owned by uid {NOBODY}"):
            hoststate.ensure_state_dir(self.box.state)
        elsewhere = os.path.join(self.root, "elsewhere")
        os.mkdir(elsewhere, 0o700)
        os.symlink(elsewhere, self.box.state + "2")
        with self.assertRaisesRegex(hoststate.StateError, "not a directory"):
            hoststate.ensure_state_dir(self.box.state + "2")

    def test_a_parent_others_may_write_is_refused(self):
        shared = os.path.join(self.root, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)  # writable, not sticky: another user could rename our folder away
        with self.assertRaisesRegex(hoststate.StateError, "writable by other users"):
            hoststate.ensure_state_dir(os.path.join(shared, "state"))

    def test_the_lock_cannot_be_blocked_through_a_shared_folder(self):
        os.mkdir(self.box.state, 0o700)
        os.chmod(self.box.state, 0o777)
        with self.assertRaises(hoststate.StateError):
            hoststate.HostLock(os.path.join(self.box.state, hoststate.LOCK_NAME)).acquire({"pid": 1})
        os.chmod(self.box.state, 0o700)
        lock_path = os.path.join(self.box.state, hoststate.LOCK_NAME)
        os.symlink(self.box.victim, lock_path)  # a link planted before the folder was locked down
        with self.assertRaisesRegex(OSError, "link|Too many levels"):
            hoststate.HostLock(lock_path).acquire({"pid": 1})
        self.assertEqual(self.box.victim_text(), "ssh-ed25519 AAAA the-real-key\n")


if __name__ == "__main__":
    unittest.main()
