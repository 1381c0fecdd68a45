"""The numa axis (numa.py) on its own: the plan's skip reasons on recorded host capabilities, the nodes a
process's CPUs and memory go to, the numactl arguments and a container's cpuset, and the proof on real
numa_maps captures (rigs/matrix/testdata/captures/README.md), also through process_evidence.verify."""

import os
import sys
import unittest

from rigs.matrix.contract import evidence
from rigs.matrix.knobs import numa, process_evidence
from rigs.matrix.planning import spec

CAPTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "testdata", "captures")
ONE_NODE = {0: {0, 1}}
TWO_NODES = {0: {0, 1}, 1: {2, 3}}
TOOLS = {"numactl": {"available": True}, "migratepages": {"available": True}, "memhog": {"available": True},
         "weighted_interleave": {"available": False, "evidence": "/sys/kernel/mm/mempolicy: absent (kernel 6.1)"},
         "numa_multi_node": {"evidence": "1 NUMA node(s)"}}


def numa_maps(name):
    with open(os.path.join(CAPTURES, name)) as f:
        return evidence.parse_numa_maps(f.read())


class Plan(unittest.TestCase):
    def test_what_a_host_must_offer_for_each_policy(self):
        self.assertEqual(numa.host_skip_reason("default", {}, ONE_NODE), "")
        self.assertEqual(numa.host_skip_reason("bind_local", TOOLS, ONE_NODE), "")
        self.assertEqual(numa.host_skip_reason("bind_local", {}, ONE_NODE),
                         "numa=bind_local needs numactl, which is not installed")
        self.assertEqual(numa.host_skip_reason("interleave", TOOLS, ONE_NODE),
                         "numa=interleave needs two NUMA nodes; this host has 1 (1 NUMA node(s))")
        self.assertEqual(numa.host_skip_reason("interleave", TOOLS, TWO_NODES), "")
        self.assertEqual(numa.host_skip_reason("weighted_interleave", TOOLS, TWO_NODES),
                         "numa=weighted_interleave: /sys/kernel/mm/mempolicy: absent (kernel 6.1)")
        self.assertIn("needs migratepages and memhog",
                      numa.host_skip_reason("pressured_migrated", {"numactl": {"available": True}}, TWO_NODES))
        self.assertEqual(set(numa.VALUES), set(spec.NUMA_POLICIES))


class Apply(unittest.TestCase):
    def test_nodes_and_numactl_arguments(self):
        nodes = numa.nodes_for("bind_remote", "2", TWO_NODES)
        self.assertEqual(nodes, {"cpu_node": 1, "mem_node": 0})
        self.assertEqual(numa.nodes_for("bind_remote", None, ONE_NODE), {"cpu_node": 0, "mem_node": None})
        self.assertEqual(numa.nodes_for("bind_remote", "2", TWO_NODES, under_test=False), {"cpu_node": 1, "mem_node": 1})
        self.assertEqual(numa.policy_argv("bind_remote", "2", nodes, "/h"),
                         ["numactl", "--physcpubind=2", "--membind=0", "--"])
        self.assertEqual(numa.policy_argv("bind_local", None, {"cpu_node": 1, "mem_node": 1}, "/h"),
                         ["numactl", "--cpunodebind=1", "--membind=1", "--"])
        self.assertEqual(numa.policy_argv("interleave", None, nodes, "/h"), ["numactl", "--interleave=all", "--"])
        self.assertEqual(numa.policy_argv("weighted_interleave", "0-1", nodes, "/h"),
                         ["numactl", "--physcpubind=0-1", "--", sys.executable, "/h", "weighted-interleave", "all", "--"])
        self.assertEqual(numa.container_mems("bind_local", {"cpu_node": 0, "mem_node": 0}), "0")
        self.assertIsNone(numa.container_mems("interleave", nodes))


class Proof(unittest.TestCase):
    def test_the_policy_is_proven_on_real_numa_maps(self):
        membind0 = {"numa_maps": numa_maps("numa_maps_membind0.txt"), "numa_nodes": {"cpu_node": 0, "mem_node": 0}}
        self.assertEqual(numa.problems("bind_local", membind0), [])
        self.assertEqual(numa.problems("default", {}), [])
        [problem] = numa.problems("interleave", membind0)
        self.assertRegex(problem, r"^numa=interleave: only 0% of resident memory has policy interleave:\*")
        weighted = {"numa_maps": numa_maps("numa_maps_two_node_weighted_interleave.txt"),
                    "numa_nodes": {"cpu_node": 0, "mem_node": 0}}
        self.assertEqual(numa.problems("weighted_interleave", weighted), [])
        self.assertEqual(numa.problems("bind_local", {}), ["could not read numa_maps"])

    def test_process_evidence_verify_runs_the_axis_check(self):
        m = spec.from_dict({"matrix": {"name": "t", "rig": "calibration", "seed": 1},
                            "axes": {"jdk": [17], "gc": ["parallel"], "heap": ["256m"], "numa": ["interleave"]}},
                           rig_params={"mode": "cpu"})
        with open(os.path.join(CAPTURES, "vm_flags.txt")) as f:
            flags = evidence.parse_vm_flags(f.read())
        with open(os.path.join(CAPTURES, "status.txt")) as f:
            status = evidence.parse_status(f.read())
        ev = {"vm_flags": flags, "process_status": status, "numa_maps": numa_maps("numa_maps_membind0.txt"),
              "numa_nodes": {"cpu_node": 0, "mem_node": 0}, "threads": [], "thp_mode": "never"}
        problems = process_evidence.verify(m.cells[0], m, ev, ONE_NODE)
        self.assertTrue(any("policy interleave:" in p for p in problems), problems)


if __name__ == "__main__":
    unittest.main()
