"""Promotion copies results (not logs), validates them, and never overwrites or half-writes a baseline."""

import os
import tempfile
import unittest

from analysis import resultsets
from analysis.testsets import write_set
from results import store
from tools import promote


class PromoteTest(unittest.TestCase):
    def test_promote_copies_results_and_refuses_to_overwrite(self):
        with tempfile.TemporaryDirectory() as d:
            run = os.path.join(d, "runs", "r1")
            os.makedirs(os.path.dirname(run))
            write_set(run, [({"gc": "g1"}, 100.0)], runs=3)
            os.makedirs(os.path.join(run, "logs"))
            baselines = os.path.join(d, "baselines")
            target, n = promote.promote(run, baselines, "nightly")
            self.assertEqual(n, 3)
            self.assertEqual(sorted(os.listdir(target)), ["cells", "manifest.json"])
            self.assertEqual(len(resultsets.load_run(target).docs), 3)
            with self.assertRaisesRegex(store.StoreError, "exists; pass --replace"):
                promote.promote(run, baselines, "nightly")
            promote.promote(run, baselines, "nightly", replace=True)
            self.assertEqual(sorted(os.listdir(baselines)), ["nightly"])
            # The sensitivity figures go with the run they were written into; anything else stays.
            with open(os.path.join(run, "sensitivity.json"), "w") as f:
                f.write('{"kind": "tunelab.sensitivity", "schema_version": 1}\n')
            with open(os.path.join(run, "notes.txt"), "w") as f:
                f.write("not a result\n")
            target, _ = promote.promote(run, baselines, "calibrated")
            self.assertEqual(sorted(os.listdir(target)), ["cells", "manifest.json", "sensitivity.json"])
            with open(os.path.join(run, "sensitivity.json"), "w") as f:
                f.write('{"rate": NaN}')
            with self.assertRaisesRegex(store.StoreError, "sensitivity.json.*NaN"):
                promote.promote(run, baselines, "corrupt")
            self.assertFalse(os.path.exists(os.path.join(baselines, "corrupt")))

    def test_a_corrupt_run_is_not_promoted(self):
        with tempfile.TemporaryDirectory() as d:
            run = os.path.join(d, "runs", "r1")
            os.makedirs(os.path.dirname(run))
            write_set(run, [({"gc": "g1"}, 100.0)], runs=3)
            with open(os.path.join(run, "cells", f"{0:012x}.r1.json"), "w") as f:
                f.write("{")
            with self.assertRaises(resultsets.ResultSetError):
                promote.promote(run, os.path.join(d, "baselines"), "nightly")
            self.assertFalse(os.path.exists(os.path.join(d, "baselines", "nightly")))


if __name__ == "__main__":
    unittest.main()
