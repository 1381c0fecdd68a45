"""The rig's parse() on a real recorded lean-path run (testdata/sls342_lean_jdk17_g1_1000nodes_100ms.*): the
same window and rate the matrix stored for that run (results/baselines/yarn_cps-gate-cps-lean-2vcpu, r0),
and the new observations worked out here from the raw records: the scheduler's event-queue gauge over the
window, memory per simulated node, the lean clock's counters."""

import json
import os
import tempfile
import unittest

from rigs.matrix import policy
from rigs.matrix.rig import MAIN_ROLE, Launch
from rigs.yarn_cps import rig

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
NAME = "sls342_lean_jdk17_g1_1000nodes_100ms"


class LeanRunParseTest(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        with open(os.path.join(TESTDATA, NAME + ".launch.json")) as f:
            self.launch = Launch([], state=json.load(f))  # what the rig's launch returned for this run
        with open(os.path.join(TESTDATA, NAME + ".jsonl")) as f:
            self.stdout = f.read()
        self.records = rig.records(self.stdout)

    def test_window_queue_memory_and_clock(self):
        parsed = rig.RIG.parse({MAIN_ROLE: self.stdout}, policy.Policy(warmup_s=8, measure_s=15), self.workdir,
                               self.launch)
        w = parsed.observations["window"]
        # What the matrix stored for this run (gate_cps, 20261123T231015Z-bc6a r0).
        self.assertEqual(w["allocation_rate"], 8262.905)
        self.assertEqual((w["start_t"], w["end_t"]), (15.047, 36.047))
        samples = [r for r in self.records if r.get("event") == "sample" and w["start_t"] <= r["t"] <= w["end_t"]]
        queues = [r["scheduler_event_queue"] for r in samples]
        self.assertEqual(w["scheduler_event_queue_mean"], round(sum(queues) / len(queues), 1))
        self.assertEqual(w["scheduler_event_queue_max"], max(queues))
        heap = max(r["heap_used_bytes"] for r in samples)
        peak = max(r["peak_rss_kb"] for r in self.records if r.get("event") == "sample")
        self.assertEqual(parsed.observations["memory_per_node"],
                         {"peak_rss_kb": round(peak / 1000, 2), "heap_used_kb": round(heap / 1024 / 1000, 2)})
        done = next(r for r in self.records if r.get("event") == "done")
        self.assertEqual(parsed.observations["lean"], done["lean"])
        self.assertEqual(done["lean"]["heartbeat_failures"], 0)
        self.assertIn("simulator_nm", w["cpu_cores_by_thread_group"])
        metrics = {s["metric"] for s in parsed.samples}
        self.assertEqual(metrics, {"container_allocation_rate", "container_release_rate",
                                   "scheduler_cpu_per_container"})


if __name__ == "__main__":
    unittest.main()
