"""The axis memory_limit end to end with the fake rig (issue 62): a cell whose process touches more than its
limit is killed by the kernel and fails saying it was the limit, its evidence the limit read back and the
out-of-memory kill. Needs root and a memory controller (cgroup v2's, or v1's as on this VM): skipped elsewhere,
saying why."""

import json
import os
import unittest

from rigs.matrix import runner
from rigs.matrix.cell import cellcgroup
from rigs.matrix.testing.fakerig import FakeRigTestCase


class MemoryLimitRunTest(FakeRigTestCase):
    def setUp(self):
        super().setUp()
        try:
            probe = cellcgroup.CellCgroup.create(f"probe-{os.getpid()}")
            try:
                probe.limit_memory(64 << 20)
            finally:
                probe.remove()
        except cellcgroup.CgroupError as e:
            self.skipTest(f"no memory limit on this host: {e}")

    def test_a_cell_killed_at_its_memory_limit_fails_saying_so(self):
        self.run_hog("64m", "killed by the kernel at the cell's memory_limit=64m")

    def test_a_named_limit_takes_the_size_of_the_cells_value(self):
        # fake_matrix.toml: [memory_limit.squeezed] sizes = { hog = "64m", ok = "2g" }.
        docs = self.run_hog("squeezed", "killed by the kernel at the cell's memory_limit=squeezed (64m)")
        self.assertEqual({d["evidence"]["memory_limit"]["named"] for d in docs}, {"squeezed"})

    def test_a_cache_room_limit_follows_a_growing_cell(self):
        # The same 200 MB lives under [memory_limit.roomy] cache_room = "64m" when it grows as a JVM does.
        code, out = self.box.main("--set", "behaviour=grow", "--set", "memory_limit=roomy", "--set", "pinning=none",
                                  "--set", "policy.repetitions=1")
        self.assertEqual(code, runner.EXIT_OK, out)
        (run_dir,) = self.box.run_dirs()
        (name,) = os.listdir(os.path.join(run_dir, "cells"))
        with open(os.path.join(run_dir, "cells", name)) as f:
            doc = json.load(f)
        self.assertEqual(doc["status"], "ok", doc.get("reason"))
        limit = doc["evidence"]["memory_limit"]
        self.assertEqual((limit["named"], limit["asked"], limit.get("oom_kills", 0)), ("roomy", "64m", 0))
        self.assertGreater(limit["cache_room"]["steps"], 10)
        self.assertGreaterEqual(limit["cache_room"]["limit_max_bytes"], 200 << 20)
        self.assertEqual(limit["cache_room"]["room_bytes"], 64 << 20)

    def run_hog(self, limit, reason):
        code, out = self.box.main("--set", "behaviour=hog", "--set", f"memory_limit={limit}",
                                  "--set", "policy.repetitions=1")
        self.assertEqual(code, runner.EXIT_CELLS_FAILED, out)
        (run_dir,) = self.box.run_dirs()
        docs = [os.path.join(run_dir, "cells", n) for n in os.listdir(os.path.join(run_dir, "cells"))]
        self.assertTrue(docs)
        out_docs = []
        for path in docs:
            with open(path) as f:
                doc = json.load(f)
            self.assertEqual(doc["status"], "failed")
            self.assertIn(reason, doc["reason"])
            self.assertEqual(doc["evidence"]["memory_limit"]["limit_bytes"], 64 << 20)
            self.assertGreaterEqual(doc["evidence"]["memory_limit"]["oom_kills"], 1)
            out_docs.append(doc)
        return out_docs


if __name__ == "__main__":
    unittest.main()
