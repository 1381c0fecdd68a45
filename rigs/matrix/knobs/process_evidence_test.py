"""process_evidence.verify, every axis' proof, on real captures (rigs/matrix/testdata/captures/README.md): a
good capture passes; a container cell must have run in its container on its memory nodes; threads and
processes bound as the pinning asks; a server that kept its ports."""

import os
import tempfile
import unittest

from rigs.matrix.contract import evidence
from rigs.matrix.knobs import hostknobs, numa, process_evidence
from rigs.matrix.planning import spec

CAPTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "testdata", "captures")


def capture(name):
    with open(os.path.join(CAPTURES, name)) as f:
        return f.read()


def matrix(**axes):
    data = {"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], **{k: [v] for k, v in axes.items()}},
            "pinning": {"workers": {"threads": {"^calibration-cpu-worker-": "1"}}, "cpu0": {"cpus": "0"}}}
    return spec.from_dict(data)


class VerifyTest(unittest.TestCase):
    def good_evidence(self):
        return {"vm_flags": evidence.parse_vm_flags(capture("vm_flags.txt")),
                "process_status": evidence.parse_status(capture("status.txt")),
                "numa_maps": evidence.parse_numa_maps(capture("numa_maps_membind0.txt")),
                "numa_nodes": {"cpu_node": 0, "mem_node": 0}, "threads": [], "thp_mode": "never"}

    def test_good_capture_passes(self):
        m = matrix(gc="parallel", heap="256m", numa="bind_local")
        self.assertEqual(process_evidence.verify(m.cells[0], m, self.good_evidence(), {0: {0, 1}}), [])

    def test_a_container_cell_must_have_run_in_its_container(self):
        m = matrix(gc="parallel", heap="256m", numa="bind_local", executor="container")
        ev = dict(self.good_evidence(), role="main")
        problems = process_evidence.verify(m.cells[0], m, ev, {0: {0, 1}})
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("was not seen in a podman container", problems[0])
        # The cgroup line recorded from a calibration JVM in a podman container on this VM (cgroupfs manager).
        recorded = "/libpod_parent/libpod-fe3f03ddba28bb8d88e805c35844023623e7980721a1a0556eddea3bed4cd2ee"
        ev["containers"] = {"main": {"cgroups": [recorded]}}
        self.assertEqual(process_evidence.verify(m.cells[0], m, ev, {0: {0, 1}}), [])
        # The container's memory nodes must be what the process sees (the capture shows Mems_allowed_list 0).
        ev["containers"]["main"]["cpuset_mems"] = "0"
        self.assertEqual(process_evidence.verify(m.cells[0], m, ev, {0: {0, 1}}), [])
        ev["containers"]["main"]["cpuset_mems"] = "1"
        problems = process_evidence.verify(m.cells[0], m, ev, {0: {0, 1}})
        self.assertEqual(problems, ["executor=container: --cpuset-mems 1 not in effect: Mems_allowed_list=0"])

    def test_thread_not_pinned_or_missing(self):
        m = matrix(gc="parallel", heap="256m", pinning="workers")
        ev = self.good_evidence()
        problems = process_evidence.verify(m.cells[0], m, ev, {0: {0, 1}})
        self.assertTrue(any("no Java thread matched" in p for p in problems), problems)
        ev["threads"] = [{"pattern": "^calibration-cpu-worker-", "name": "calibration-cpu-worker-0", "tid": 1,
                          "wanted": "1", "cpus_allowed": "0-1"}]
        problems = process_evidence.verify(m.cells[0], m, ev, {0: {0, 1}})
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("allowed on 0-1, wanted 1", problems[0])

    def test_process_binding_not_in_effect(self):
        m = matrix(gc="parallel", heap="256m", pinning="cpu0")
        problems = process_evidence.verify(m.cells[0], m, self.good_evidence(), {0: {0, 1}})
        self.assertEqual(problems, ["process CPU binding 0 not in effect: Cpus_allowed_list=0-1"])

    def test_a_server_that_kept_its_ports_is_named(self):
        m = matrix(gc="parallel", heap="256m")
        ev = dict(self.good_evidence(), servers={"namenode": {"ports_freed": {"8020": False, "9870": True}}})
        self.assertEqual(process_evidence.verify(m.cells[0], m, ev, {0: {0, 1}}),
                         ["server namenode still holds ports ['8020'] after it was stopped"])


class CollectTest(unittest.TestCase):
    def test_a_process_gone_by_the_second_look_keeps_the_first_looks_maps(self):
        # A busy host: the JVM ended between the pid check and the read, its numa_maps read empty; that is no
        # evidence of a policy (it made a bind_local cell invalid: "policies seen: {}").
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        proc_dir = os.path.join(root, "proc", "4242")
        os.makedirs(proc_dir)
        thp = os.path.join(root, "thp")
        with open(thp, "w") as f:
            f.write("always madvise [never]\n")
        paths = hostknobs.HostPaths(thp_enabled=thp, proc=os.path.join(root, "proc"))
        for name in ("numa_maps", "status"):
            with open(os.path.join(proc_dir, name), "w") as f:
                f.write(capture({"numa_maps": "numa_maps_membind0.txt", "status": "status.txt"}[name]))
        ev = {"executable": "test"}
        process_evidence.collect(paths, None, 4242, ev, 1.0)
        first = ev["numa_maps"]
        self.assertTrue(first["bytes_per_policy"])
        with open(os.path.join(proc_dir, "numa_maps"), "w") as f:
            f.write("")
        process_evidence.collect(paths, None, 4242, ev, 2.0)
        self.assertEqual(ev["numa_maps"], first)
        self.assertEqual(ev["collected_at_s"], 2.0)
        self.assertEqual(numa.problems("bind_local", dict(ev, numa_nodes={"cpu_node": 0, "mem_node": 0})), [])


if __name__ == "__main__":
    unittest.main()
