"""Which cells a host cannot run, and the reason each gets (host capabilities as the host probe reports them)."""

import unittest

from rigs.matrix.planning import plan, planview, spec

ONE_NODE = {0: {0, 1}}
TWO_NODES = {0: {0}, 1: {1}}


def caps(**over):
    base = {"numactl": {"available": True}, "taskset": {"available": True}, "migratepages": {"available": True},
            "memhog": {"available": True}, "weighted_interleave": {"available": True, "evidence": "present"},
            "numa_multi_node": {"available": True, "evidence": "2 NUMA node(s)"},
            "transparent_hugepages": {"available": True, "value": "never", "writable": True}}
    base.update(over)
    return base


def reason(numa, nodes, host_caps):
    m = spec.from_dict({"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], "numa": [numa]}})
    return plan.host_skip_reason(m, m.cells[0], host_caps, nodes, set().union(*nodes.values()), {"java_home": "/j"})


class NumaSkipTest(unittest.TestCase):
    def test_two_node_placements_are_skipped_on_one_node_with_the_reason(self):
        one = caps(numa_multi_node={"available": False, "evidence": "1 NUMA node(s) (/sys/devices/system/node)"})
        for numa in ("bind_remote", "interleave", "weighted_interleave", "pressured_migrated"):
            with self.subTest(numa):
                self.assertIn(f"numa={numa} needs two NUMA nodes; this host has 1 (1 NUMA node(s)",
                              reason(numa, ONE_NODE, one))
        self.assertEqual(reason("bind_local", ONE_NODE, one), "")

    def test_every_placement_runs_on_two_nodes_with_the_tools(self):
        for numa in spec.NUMA_POLICIES:
            with self.subTest(numa):
                self.assertEqual(reason(numa, TWO_NODES, caps()), "")

    def test_missing_kernel_support_or_tools_are_named(self):
        old_kernel = caps(weighted_interleave={"available": False, "evidence": "/sys/kernel/mm/mempolicy/"
                                               "weighted_interleave: missing: this kernel has no weighted interleave"})
        self.assertIn("this kernel has no weighted interleave", reason("weighted_interleave", TWO_NODES, old_kernel))
        self.assertEqual(reason("pressured_migrated", TWO_NODES, caps(memhog={"available": False})),
                         "numa=pressured_migrated needs memhog (Debian's numactl package)")


class NoJdkTest(unittest.TestCase):
    def test_a_native_matrix_plans_without_any_jdk(self):
        m = spec.from_dict({"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": ["none"], "numa": ["bind_local"]},
                            "pinning": {"java": {"threads": {"^worker": "0"}}}})
        report = {"capabilities": caps(), "numa": {"nodes": [{"id": 0, "cpus": "0-1"}]}, "jdks": [], "memory": {}}
        (planned,) = plan.plan(m, report)
        self.assertIsNone(planned.jdk)
        self.assertEqual(planned.skip_reason, "")
        threads = spec.from_dict({"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": ["none"], "pinning": ["java"]},
                                  "pinning": {"java": {"threads": {"^worker": "0"}}}})
        (pinned,) = plan.plan(threads, report)
        self.assertEqual(pinned.skip_reason, "pinning=java pins Java threads; jdk=none starts no JVM")


class ArchitectureTest(unittest.TestCase):
    def test_a_jdk_the_machine_has_no_build_of_is_a_skip_with_the_reason_not_an_error(self):
        m = spec.from_dict({"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [11, 17]}})
        jdk17 = {"name": "jdk17", "java_home": "/j17", "version": "17.0.21.1", "gcs": {}}
        report = {"capabilities": caps(), "numa": {"nodes": [{"id": 0, "cpus": "0-1"}]}, "jdks": [jdk17],
                  "memory": {}, "jdks_unavailable": {"jdk11": "no pinned JDK 11 for aarch64"}}
        by_jdk = {p.cell.params["jdk"]: p for p in plan.plan(m, report)}
        self.assertEqual(by_jdk["11"].skip_reason, "jdk=11: no pinned JDK 11 for aarch64")
        self.assertEqual(by_jdk["17"].skip_reason, "")
        # Without the bundle's word for it, a JDK that is not there is still a matrix error.
        del report["jdks_unavailable"]
        with self.assertRaisesRegex(spec.SpecError, "jdk=11: not installed"):
            plan.plan(m, report)

    def test_explicit_hugepages_are_counted_in_the_hosts_size(self):
        m = spec.from_dict({"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], "hugepages": ["explicit"],
                                                                          "heap": ["1g"]}})
        host = caps(explicit_hugepages={"available": True, "value": 0, "writable": False})
        why = plan.host_skip_reason(m, m.cells[0], host, ONE_NODE, {0, 1}, {"java_home": "/j"}, None, 512 * 1024)
        self.assertIn("needs 3 512 MiB pages for heap 1g", why)

    def test_docker_without_an_engine_is_a_skip_with_the_reason(self):
        from unittest import mock
        m = spec.from_dict({"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], "executor": ["docker"]}})
        with mock.patch.object(plan.container, "unavailable_reason", return_value="no Docker engine answers"):
            why = plan.host_skip_reason(m, m.cells[0], caps(), ONE_NODE, {0, 1}, {"java_home": "/j"})
        self.assertEqual(why, "executor=docker: no Docker engine answers")


if __name__ == "__main__":
    unittest.main()


class PlanViewTest(unittest.TestCase):
    def test_a_known_answer_cell_shows_its_own_count_in_a_sequential_design(self):
        # Issue 41, item 5: the YARN smoke plan printed its known-answer cell as "run 3..1".
        m = spec.from_dict({"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], "gc": ["g1", "parallel"]},
                            "policy": {"repetitions": {"min": 3, "max": 10}, "stop": "decided"},
                            "known_answer": [{"cell": {"gc": "serial"}, "metric": "m", "expect": 1,
                                              "tolerance": 0.1, "repetitions": 1}]})
        known = next(c for c in m.cells if c.params["gc"] == "serial")
        self.assertEqual(planview.run_status(m, known), "run x1 (known answer)")
        self.assertEqual(planview.run_status(m, next(c for c in m.cells if c.params["gc"] == "g1")), "run 3..10")
