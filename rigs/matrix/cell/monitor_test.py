"""A launch's monitors (rigs/matrix/cell/monitor.py) against a host of files and a rig whose processes print:
the host's CPU in cores busy per second from /proc/stat's counters, load and memory, the rig's values under
their role, a bad line kept as one problem, thinning past the bound, and the block the result schema takes."""

import json
import os
import tempfile
import types
import unittest

import jsonschema

from rigs.matrix.cell import monitor
from rigs.matrix.contract.rig import LiveMetric

HZ = os.sysconf("SC_CLK_TCK")
SCHEMA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                      "results", "schema", "cell_result.v2.schema.json")


class Rig:
    name = "fake"
    live_metrics = {"things_done": LiveMetric("counter", "Things"), "queue_items": LiveMetric("gauge", "Queue")}

    def live(self, role, line):
        if line == "boom":
            raise ValueError("cannot read boom")
        if line == "stranger":
            return {"strangers": 1}
        done, queue = line.split()
        return {"things_done": float(done), "queue_items": float(queue)}


def process(role, *batches):
    """A running process whose stdout gives one batch of new lines per call."""
    left = list(batches)
    return types.SimpleNamespace(role=role, new_stdout_lines=lambda: left.pop(0) if left else [])


class HostFiles:
    def __init__(self):
        self.proc = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def set(self, user, system, steal, load="0.50", available_kb=1000):
        with open(os.path.join(self.proc, "stat"), "w") as f:
            f.write(f"cpu  {user} 0 {system} 5000 7 0 0 {steal} 0 0\n")
        with open(os.path.join(self.proc, "loadavg"), "w") as f:
            f.write(f"{load} 0.4 0.3 1/100 42\n")
        with open(os.path.join(self.proc, "meminfo"), "w") as f:
            f.write(f"MemTotal: 2000 kB\nMemAvailable: {available_kb} kB\n")


class MonitorTest(unittest.TestCase):
    def test_host_cpu_as_cores_busy_and_the_rigs_values_by_role(self):
        host = HostFiles()
        m = monitor.Monitor(Rig(), host.proc, 100.0)
        server = process("server", ["1 5"], ["boom", "4 2"])
        client = process("client", ["stranger"], [])
        host.set(user=1000, system=200, steal=10)
        self.assertEqual(m.sample(101.0, [server, client]), {"server": {"things_done": 1.0, "queue_items": 5.0}})
        host.set(user=1000 + 2 * HZ, system=200 + HZ // 2, steal=10 + HZ // 10, load="1.50", available_kb=900)
        self.assertEqual(m.sample(103.0, [server, client]), {"server": {"things_done": 4.0, "queue_items": 2.0}})
        doc = m.document()
        self.assertEqual(doc["t"], [1.0, 3.0])
        s = doc["series"]
        self.assertEqual(s["host_cpu_user_cores"], [None, 1.0])  # 2 s of one CPU's time over 2 s
        self.assertAlmostEqual(s["host_cpu_system_cores"][1], (HZ // 2) / HZ / 2, places=3)
        self.assertAlmostEqual(s["host_cpu_steal_cores"][1], (HZ // 10) / HZ / 2, places=3)
        self.assertEqual(s["host_load1"], [0.5, 1.5])
        self.assertEqual(s["host_memory_available_bytes"], [1000 * 1024, 900 * 1024])
        self.assertEqual(s["server.things_done"], [1.0, 4.0])
        self.assertEqual(doc["units"]["server.things_done"], "counter")
        self.assertEqual(doc["units"]["host_cpu_user_cores"], "cores")
        self.assertIn("'strangers', not one of its live_metrics", doc["problem"])  # the first problem met
        with open(SCHEMA) as f:
            jsonschema.validate(doc, json.load(f)["properties"]["monitors"])

    def test_a_long_launch_is_thinned_not_cut(self):
        host = HostFiles()
        host.set(1, 1, 0)
        m = monitor.Monitor(Rig(), host.proc, 0.0)
        old = monitor.MAX_POINTS
        monitor.MAX_POINTS = 10
        self.addCleanup(setattr, monitor, "MAX_POINTS", old)
        for i in range(1, 26):
            m.sample(float(i), [])
        doc = m.document()
        self.assertLessEqual(len(doc["t"]), 10)
        self.assertEqual(doc["t"][0], 1.0)
        self.assertEqual(doc["t"][-1], 25.0)  # the newest point is always there
        self.assertEqual(doc["thinned_points"] + len(doc["t"]), 25)
        self.assertTrue(all(len(v) == len(doc["t"]) for v in doc["series"].values()))

    def test_no_point_no_block_and_a_rig_without_live_values_reads_nothing(self):
        host = HostFiles()
        host.set(1, 1, 0)
        plain = types.SimpleNamespace(name="plain", live_metrics={}, live=lambda role, line: 1 / 0)
        m = monitor.Monitor(plain, host.proc, 0.0)
        self.assertIsNone(m.document())
        self.assertEqual(m.sample(1.0, [process("main", ["anything"])]), {})
        self.assertEqual(m.problem, "")
        self.assertEqual(set(m.document()["series"]), {"host_load1", "host_memory_available_bytes"})


if __name__ == "__main__":
    unittest.main()
