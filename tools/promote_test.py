"""Promotion copies results (not logs), validates them, and never overwrites or half-writes a baseline."""

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import unittest

from analysis import resultsets
from analysis.testing.testsets import write_set
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

    def test_a_profiled_run_is_promoted_with_the_profiles_its_results_name(self):
        recorded = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "analysis", "testdata",
                                "profiled_run", "vm-0035969e", "20261128T191712Z-edcd")
        with tempfile.TemporaryDirectory() as d:
            run = os.path.join(d, "20261128T191712Z-edcd")
            shutil.copytree(recorded, run)
            for doc_name in os.listdir(os.path.join(run, "cells")):
                # The recorded run keeps no JFR recording (its README): a stand-in file, named as the result's.
                path = os.path.join(run, "cells", doc_name)
                with open(path) as f:
                    doc = json.load(f)
                stand_in = gzip.compress(doc_name.encode())
                with open(os.path.join(run, doc["profile"]["jfr"]["file"]), "wb") as f:
                    f.write(stand_in)
                doc["profile"]["jfr"].update(sha256=hashlib.sha256(stand_in).hexdigest(), bytes=len(stand_in))
                with open(path, "w") as f:
                    json.dump(doc, f)
            target, n = promote.promote(run, os.path.join(d, "baselines"), "profiled")
            self.assertEqual(n, 6)
            self.assertEqual(sorted(os.listdir(os.path.join(target, "profiles"))),
                             sorted(os.listdir(os.path.join(run, "profiles"))))
            # A profile that is not the one its result names is never promoted.
            victim = os.path.join(run, "profiles", sorted(os.listdir(os.path.join(run, "profiles")))[0])
            with open(victim, "ab") as f:
                f.write(b"\0")
            with self.assertRaisesRegex(store.StoreError, "not the profile its result names"):
                promote.promote(run, os.path.join(d, "baselines"), "profiled2")
            self.assertFalse(os.path.exists(os.path.join(d, "baselines", "profiled2")))

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
