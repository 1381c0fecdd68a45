"""Promotion copies results (not logs), validates them, never overwrites or half-writes a baseline, and indexes
the set in the results database."""

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import unittest

import sqlalchemy as sa

from analysis import resultsets
from analysis.testing.testsets import write_set
from results import store
from results.db import schema, store as db_store
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

    def test_a_promoted_set_is_indexed_and_a_replaced_one_moves_its_name(self):
        # Issue 83: the document first, its rows after; a database that cannot take it leaves the promotion standing.
        with tempfile.TemporaryDirectory() as d:
            root = os.path.join(d, "results")
            first, second = os.path.join(d, "runs", "r1"), os.path.join(d, "runs", "r2")
            write_set(first, [({"gc": "g1"}, 100.0)], runs=3)
            write_set(second, [({"gc": "g1"}, 90.0)], runs=2, seed=7)
            url = "sqlite:///" + os.path.join(d, "t.sqlite")
            target, _ = promote.promote(first, os.path.join(root, "baselines"), "nightly")
            said = promote.index(target, root, url)
            self.assertTrue(said.startswith("indexed in the results database sqlite:///"), said)
            self.assertIn("(3 new results)", said)
            self.assertIn("(0 new results)", promote.index(target, root, url))  # held already
            target, _ = promote.promote(second, os.path.join(root, "baselines"), "nightly", replace=True)
            self.assertIn("(2 new results)", promote.index(target, root, url))
            engine = db_store.open_for_reading(url)
            with engine.connect() as connection:
                (run_id,) = connection.execute(sa.select(schema.runs.c.run_id).join(
                    schema.sets, schema.sets.c.run == schema.runs.c.id)).one()
                held = connection.execute(sa.select(sa.func.count()).select_from(schema.results)).scalar_one()
            engine.dispose()
            self.assertEqual(run_id, resultsets.load_run(target).manifest["run_id"])
            self.assertEqual(held, 5)  # the replaced run's results are kept
            with open(os.path.join(d, "bad.sqlite"), "wb") as f:
                f.write(b"garbage")
            said = promote.index(target, root, "sqlite:///" + os.path.join(d, "bad.sqlite"))
            self.assertTrue(said.startswith("not indexed in the results database: "), said)
            self.assertTrue(os.path.isdir(target))


if __name__ == "__main__":
    unittest.main()
