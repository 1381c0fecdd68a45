"""The documents the store keeps beside results (write_side_document): each under its own name with the kind
that name holds, replaced whole, never through a link; anything else refused before a byte is written."""

import gzip
import json
import os
import tempfile
import unittest

from results import safeio, store, testruns


class SideDocuments(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def read(self, name):
        with open(os.path.join(self.dir, name)) as f:
            return json.load(f)

    def test_a_document_is_written_under_its_name_and_a_recomputation_replaces_it(self):
        path = store.write_side_document(self.dir, "sensitivity.json", {"kind": "tunelab.sensitivity", "x": 1})
        self.assertEqual(path, os.path.join(self.dir, "sensitivity.json"))
        store.write_side_document(self.dir, "sensitivity.json", {"kind": "tunelab.sensitivity", "x": 2})
        self.assertEqual(self.read("sensitivity.json")["x"], 2)
        store.write_side_document(self.dir, "bisect.json", {"schema": "tunelab.bisect/1", "steps": []})
        self.assertEqual(self.read("bisect.json")["steps"], [])

    def test_a_name_or_kind_the_store_does_not_keep_is_refused_and_nothing_is_written(self):
        cases = [("manifest.json", {"kind": "tunelab.sensitivity"}, "not a document the store keeps"),
                 ("sensitivity.json", {"kind": "tunelab.bisect"}, "holds a document of kind tunelab.sensitivity"),
                 ("fidelity-steady.json", {"kind": "tunelab.yarn_cps_fidelity"}, "tunelab.namenode_fidelity"),
                 ("bisect.json", ["not", "a", "record"], "not 'list'")]
        for name, doc, expected in cases:
            with self.subTest(name=name), self.assertRaisesRegex(store.StoreError, expected):
                store.write_side_document(self.dir, name, doc)
        self.assertEqual(os.listdir(self.dir), [])

    def test_a_link_planted_at_the_name_is_replaced_never_written_through(self):
        target = os.path.join(self.dir, "elsewhere.json")
        with open(target, "w") as f:
            f.write("{}")
        os.symlink(target, os.path.join(self.dir, "fidelity.json"))
        with self.assertRaises(safeio.WriteRefused):
            store.write_side_document(self.dir, "fidelity.json", {"kind": "tunelab.namenode_fidelity"})
        with open(target) as f:
            self.assertEqual(f.read(), "{}")


class Profiles(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.run = testruns.make_run(self.root, state="running", repetitions=(0,))
        self.cell = testruns.recorded_result()["cell"]["id"]
        self.source = os.path.join(self.root, "stacks.collapsed")
        with open(self.source, "w") as f:
            f.write("a;b 3\n")

    def test_a_profile_is_stored_compressed_once_and_never_rewritten(self):
        stored = store.write_profile(self.run, self.cell, 0, "cpu", self.source)
        self.assertEqual(stored["file"], f"profiles/{self.cell}.r0.cpu.collapsed.gz")
        path = os.path.join(self.run, stored["file"])
        self.assertEqual(safeio.sha256_of(path), stored["sha256"])
        with gzip.open(path) as f:
            self.assertEqual(f.read(), b"a;b 3\n")
        with self.assertRaisesRegex(store.StoreError, "never rewritten"):
            store.write_profile(self.run, self.cell, 0, "cpu", self.source)
        with self.assertRaisesRegex(store.StoreError, "profile part 'cycles'"):
            store.write_profile(self.run, self.cell, 0, "cycles", self.source)

    def test_a_resumed_run_removes_the_profiles_of_a_cell_that_has_no_result(self):
        kept = store.write_profile(self.run, self.cell, 0, "jfr", self.source)["file"]
        orphan = store.write_profile(self.run, self.cell, 1, "cpu", self.source)["file"]  # repetition 1: no result
        self.assertEqual(store.remove_orphan_profiles(self.run), [os.path.basename(orphan)])
        self.assertTrue(os.path.exists(os.path.join(self.run, kept)))
        self.assertFalse(os.path.exists(os.path.join(self.run, orphan)))


if __name__ == "__main__":
    unittest.main()
