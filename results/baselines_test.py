"""Every committed result set under results/baselines/ still loads: its manifest valid, every stored result
read through resultfile.load_result (size limit, migration to the current schema version, the schema)."""

import os
import unittest

from results import resultfile, store

BASELINES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "baselines")


class BaselinesTest(unittest.TestCase):
    def test_every_committed_set_loads_as_the_current_version(self):
        names = sorted(n for n in os.listdir(BASELINES) if os.path.isdir(os.path.join(BASELINES, n)))
        self.assertTrue(names, "no committed result sets")
        versions = set()
        for name in names:
            with self.subTest(set=name):
                run_dir = os.path.join(BASELINES, name)
                manifest = store.load_manifest(os.path.join(run_dir, "manifest.json"))
                stored = resultfile.stored_results(run_dir)
                self.assertTrue(stored, f"{name}: no results")
                for cell_id, repetition in stored:
                    doc = resultfile.load_result(resultfile.result_path(run_dir, cell_id, repetition))
                    self.assertEqual(doc["schema_version"], resultfile.SCHEMA_VERSION)
                    self.assertEqual(doc["run_id"], manifest["run_id"])
                    self.assertTrue(all(m["unit"] for m in doc["metrics"]))
                    versions.add(doc["schema_version"])
        self.assertEqual(versions, {resultfile.SCHEMA_VERSION})


if __name__ == "__main__":
    unittest.main()
