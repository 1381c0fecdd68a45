"""The documents the store keeps beside results (write_side_document): each under its own name with the kind
that name holds, replaced whole, never through a link; anything else refused before a byte is written."""

import json
import os
import tempfile
import unittest

from results import safeio, store


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


if __name__ == "__main__":
    unittest.main()
