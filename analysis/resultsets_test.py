"""The set reader against stored sets that lie (issue 39, finding 2): a result under another cell's or
repetition's name, a run's result in another run's set, one measurement stored twice, links and FIFOs."""

import json
import os
import shutil
import tempfile
import unittest
from unittest import mock

from analysis import resultsets
from analysis.testing.testsets import write_set


class LyingSetTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.folder = os.path.join(self.dir, "set")
        write_set(self.folder, [({"gc": "g1"}, 1000.0), ({"gc": "parallel"}, 900.0)], runs=3)
        self.cells = os.path.join(self.folder, "cells")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def refused(self, message):
        with self.assertRaisesRegex(resultsets.ResultSetError, message):
            resultsets.load_run(self.folder)

    def test_an_honest_set_loads(self):
        self.assertEqual(len(resultsets.load_run(self.folder).docs), 6)

    def test_one_run_copied_under_other_names_is_refused(self):
        # The finding: r0 copied to r3 and r4 counted as five runs.
        for rep in (3, 4):
            shutil.copy(os.path.join(self.cells, "000000000000.r0.json"), os.path.join(self.cells, f"000000000000.r{rep}.json"))
        self.refused(r"000000000000\.r3\.json holds cell 000000000000 repetition 0 under the name 000000000000\.r3")

    def test_a_copy_with_its_name_fields_edited_is_still_one_measurement(self):
        with open(os.path.join(self.cells, "000000000000.r0.json")) as f:
            doc = json.load(f)
        doc["cell"]["repetition"] = 3
        with open(os.path.join(self.cells, "000000000000.r3.json"), "w") as f:
            json.dump(doc, f)
        self.refused(r"000000000000\.r3\.json holds the same measurement as 000000000000\.r0\.json")

    def test_a_result_of_another_cell_or_run_is_refused(self):
        path = os.path.join(self.cells, "000000000001.r2.json")
        with open(path) as f:
            doc = json.load(f)
        doc["run_id"] = "20261121T000099Z-ffff"
        with open(path, "w") as f:
            json.dump(doc, f)
        self.refused(r"is of run 20261121T000099Z-ffff, the manifest's run is")

    def test_links_and_fifos_are_refused(self):
        target = os.path.join(self.cells, "000000000000.r0.json")
        outside = os.path.join(self.dir, "outside.json")
        shutil.move(target, outside)
        os.symlink(outside, target)
        self.refused(r"000000000000\.r0\.json is not a regular file")
        os.unlink(target)
        os.mkfifo(target)  # a reader that opened it would wait forever
        self.refused(r"is not a regular file \(a link, a FIFO or a device\)")
        os.unlink(target)
        shutil.move(outside, target)
        linked = os.path.join(self.dir, "linked-set")
        os.symlink(self.folder, linked)
        with self.assertRaisesRegex(resultsets.ResultSetError, "is a symbolic link"):
            resultsets.load_run(linked)
        self.assertEqual(len(resultsets.load_run(self.folder).docs), 6)  # nothing was changed by refusing

    def test_inside_a_bazel_runfiles_tree_links_are_bazels_and_lead_to_regular_files(self):
        # Bazel makes every file of a test's or tool's runfiles a link to its source; a link elsewhere is not
        # a set's own file (above).
        target = os.path.join(self.cells, "000000000000.r0.json")
        outside = os.path.join(self.dir, "outside.json")
        shutil.move(target, outside)
        os.symlink(outside, target)
        with mock.patch.dict(os.environ, {"TEST_SRCDIR": os.path.dirname(self.folder)}):
            self.assertEqual(len(resultsets.load_run(self.folder).docs), 6)
            os.unlink(outside)
            os.mkfifo(outside)  # a link to a FIFO is still no result file
            self.refused(r"000000000000\.r0\.json is not a regular file")
        with mock.patch.dict(os.environ, {"TEST_SRCDIR": "/nonexistent", "RUNFILES_DIR": ""}):
            self.refused(r"000000000000\.r0\.json is not a regular file")


class UnknownSetTest(unittest.TestCase):
    def test_a_set_that_is_not_there_names_what_is(self):
        # Issue 41, item 5: a mistyped run id said only "no result set", not which runs there are.
        root = tempfile.mkdtemp()
        try:
            for host, run in (("vm-1", "20261120T000000Z-aaaa"), ("vm-1", "20261127T010000Z-bbbb"),
                              ("kunpeng", "20261125T000000Z-cccc")):
                os.makedirs(os.path.join(root, host, run))
            os.makedirs(os.path.join(root, "baselines", "calibration-gate-aa-2vcpu"))
            with self.assertRaises(resultsets.ResultSetError) as refused:
                resultsets.resolve("20261127T010000Z-bbbx", root)
            self.assertIn("runs here, newest first: 20261127T010000Z-bbbb (vm-1), 20261125T000000Z-cccc (kunpeng), "
                          "20261120T000000Z-aaaa (vm-1); 1 committed sets under baselines/ "
                          "(e.g. baselines/calibration-gate-aa-2vcpu)", str(refused.exception))
            empty = tempfile.mkdtemp()
            with self.assertRaisesRegex(resultsets.ResultSetError, r"run id under \S+$"):
                resultsets.resolve("x", empty)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
