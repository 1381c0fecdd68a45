"""The two-node guest for real (manual: TCG emulation, see README.md for its duration): the Redis matrix's
guest profile runs inside it, and on the pressured-then-migrated cells the server's pages move from node 1
to node 0 while it runs, its local ratio rising; the memory-locality report renders from the run.

  bazel test //tools/guest:numa_guest_test      (needs qemu-system-x86; KVM is not used)
"""

import glob
import json
import os
import shutil
import tempfile
import unittest

from analysis import resultsets
from analysis.reports import render
from analysis.reports import report
from tools.guest import run_guest

HERE = os.path.dirname(os.path.abspath(__file__))


class NumaGuestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("qemu-system-x86_64"):
            raise unittest.SkipTest("qemu-system-x86_64 is not installed (apt-get install --no-install-recommends "
                                    "qemu-system-x86); ./bazelw does not install it: this test is manual")
        cls.results = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        code = run_guest.main(["--kernel", os.path.join(HERE, "redis_guest", "vmlinuz"),
                               "--initramfs", os.path.join(HERE, "redis_guest", "initramfs.cpio.gz"),
                               "--profile", "guest", "--results-dir", cls.results, "--timeout-s", "5400"])
        assert code == 0, f"run_guest exited {code}"
        (cls.run_dir,) = glob.glob(os.path.join(cls.results, "*", "*"))
        cls.docs = []
        for path in sorted(glob.glob(os.path.join(cls.run_dir, "cells", "*.json"))):
            with open(path) as f:
                cls.docs.append(json.load(f))

    def by_numa(self, numa):
        return [d for d in self.docs if d["cell"]["params"]["numa"] == numa]

    def test_the_guest_has_two_nodes_and_says_it_is_emulated(self):
        host = self.docs[0]["provenance"]["host"]
        self.assertEqual(len(host["numa"]["nodes"]), 2)
        self.assertTrue(host["cpu"]["emulated"], host["cpu"])

    def test_bound_local_cells_keep_every_page_local(self):
        for d in self.by_numa("bind_local"):
            self.assertEqual(d["status"], "ok", d.get("reason"))
            self.assertGreaterEqual(d["evidence"]["local_memory_ratio"], 0.99)

    def test_pages_move_home_while_redis_runs(self):
        cells = self.by_numa("pressured_migrated")
        self.assertTrue(cells)
        for d in cells:
            self.assertEqual(d["status"], "ok", d.get("reason"))
            m = d["observations"]["migration"]
            self.assertLess(m["before"]["local_ratio"], 0.95)  # the pressure pushed pages to node 1
            self.assertGreater(m["after"]["local_ratio"], m["before"]["local_ratio"])
            self.assertGreater(m["moved_home_bytes"], 0)
            self.assertGreater(m["before"]["bytes_per_node"]["1"], m["after"]["bytes_per_node"].get("1", 0))
            # The server was never restarted: one server process, stopped once, by the runner.
            self.assertEqual(d["evidence"]["servers"]["server"]["stopped_by"], "SIGTERM")
            self.assertIn("migrate", d["evidence"]["resolved_commands"])

    def test_the_memory_locality_report_renders_from_the_run(self):
        out = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), "locality.pdf")
        sets = [resultsets.load_run(self.run_dir, name="guest")]
        blocks = report.build("memory-locality", sets, os.path.dirname(out), command="bazel test ...")
        report.write(blocks, out, out[:-4] + ".html")
        text = render.to_text(blocks)
        self.assertIn("EMULATED HOST", text)
        self.assertIn("local_page_ratio", text)
        self.assertGreater(os.path.getsize(out), 10000)


if __name__ == "__main__":
    unittest.main()
