"""The knob journal a root runner keeps cannot be planted, swapped or read from another user's file (the state
folder it lives in: rigs/host/hoststate_test.py). Each test is an attack that worked before the state moved out
of /run/lock (issue: trust boundaries)."""

import json
import os
import tempfile
import unittest

from rigs.host import hoststate
from rigs.matrix.knobs import hostknobs

NOBODY = 65534


class Sandbox:
    def __init__(self, root):
        self.state = os.path.join(root, "state")
        self.journal = os.path.join(self.state, hoststate.JOURNAL_NAME)
        self.paths = hostknobs.HostPaths(thp_enabled=os.path.join(root, "thp_enabled"),
                                     nr_hugepages=os.path.join(root, "nr_hugepages"))
        for path, text in ((self.paths.thp_enabled, "always [madvise] never\n"), (self.paths.nr_hugepages, "0\n")):
            with open(path, "w") as f:
                f.write(text)
        # A stand-in for a file root must never write on another user's word.
        self.victim = os.path.join(root, "authorized_keys")
        with open(self.victim, "w") as f:
            f.write("ssh-ed25519 AAAA the-real-key\n")

    def victim_text(self):
        with open(self.victim) as f:
            return f.read()


class JournalTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.box = Sandbox(self.root)
        hoststate.ensure_state_dir(self.box.state)

    def plant(self, entries, mode=0o600, owner=None):
        with open(self.box.journal, "w") as f:
            f.write(json.dumps(entries))
        os.chmod(self.box.journal, mode)
        if owner is not None:
            os.chown(self.box.journal, owner, owner)

    def test_the_runners_own_journal_is_restored(self):
        k = hostknobs.HostKnobs(self.box.paths, journal=self.box.journal)
        k._write(self.box.paths.thp_enabled, "always")  # and the runner is killed: no restore()
        self.assertEqual(os.stat(self.box.journal).st_mode & 0o777, 0o600)
        self.assertEqual(hostknobs.recover(self.box.journal, self.box.paths), [self.box.paths.thp_enabled])
        with open(self.box.paths.thp_enabled) as f:
            self.assertEqual(f.read(), "madvise")
        self.assertFalse(os.path.exists(self.box.journal))

    def test_a_journal_naming_another_file_is_refused_and_nothing_written(self):
        self.plant([[self.box.paths.thp_enabled, "never"], [self.box.victim, "ssh-ed25519 AAAA attacker\n"]])
        with self.assertRaisesRegex(hostknobs.KnobError, "never changes.*nothing restored"):
            hostknobs.recover(self.box.journal, self.box.paths)
        self.assertEqual(self.box.victim_text(), "ssh-ed25519 AAAA the-real-key\n")
        with open(self.box.paths.thp_enabled) as f:
            self.assertIn("[madvise]", f.read())  # not even the allowed entry was applied
        self.assertTrue(os.path.exists(self.box.journal))  # kept for whoever looks into it

    def test_values_a_knob_never_takes_are_refused(self):
        for entries in ([[self.box.paths.nr_hugepages, "1; rm -rf /"]], [[self.box.paths.thp_enabled, "sometimes"]],
                        {"not": "a list"}, [[self.box.paths.nr_hugepages]]):
            self.plant(entries)
            with self.assertRaises(hostknobs.KnobError, msg=str(entries)):
                hostknobs.recover(self.box.journal, self.box.paths)

    def test_a_journal_of_another_user_or_open_to_others_is_refused(self):
        good = [[self.box.paths.thp_enabled, "always [madvise] never\n"]]
        self.plant(good, owner=NOBODY)
        with self.assertRaisesRegex(hostknobs.KnobError, f"owned by uid {NOBODY}"):
            hostknobs.recover(self.box.journal, self.box.paths)
        os.unlink(self.box.journal)
        self.plant(good, mode=0o666)
        with self.assertRaisesRegex(hostknobs.KnobError, "mode 0666"):
            hostknobs.recover(self.box.journal, self.box.paths)
        os.unlink(self.box.journal)
        os.symlink(self.box.victim, self.box.journal)
        with self.assertRaisesRegex(hostknobs.KnobError, "link"):
            hostknobs.recover(self.box.journal, self.box.paths)

    def test_the_journal_is_never_written_through_a_planted_link(self):
        os.symlink(self.box.victim, self.box.journal + ".tmp")
        with hostknobs.HostKnobs(self.box.paths, journal=self.box.journal) as k:
            k._write(self.box.paths.nr_hugepages, "4")
        self.assertEqual(self.box.victim_text(), "ssh-ed25519 AAAA the-real-key\n")
        # The one writer writes a temporary file of its own (O_EXCL): the planted name is never opened.
        self.assertEqual(os.readlink(self.box.journal + ".tmp"), self.box.victim)


if __name__ == "__main__":
    unittest.main()
