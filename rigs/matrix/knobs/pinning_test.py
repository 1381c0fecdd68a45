"""The pinning axis (pinning.py) on its own: what a host must offer for a [pinning.NAME] table, the taskset
prefix, the CPUs the runner may keep, and the proof for a process and its Java threads."""

import os
import unittest

from rigs.matrix.knobs import pinning
from rigs.matrix.planning import spec

CAPTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "testdata", "captures")


def matrix(**axes):
    data = {"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], **{k: [v] for k, v in axes.items()}},
            "pinning": {"workers": {"threads": {"^calibration-cpu-worker-": "1"}}, "cpu0": {"cpus": "0"},
                        "apart": {"roles": {"server": "1", "client": "0"}}}}
    return spec.from_dict(data)


class PinningPlan(unittest.TestCase):
    def test_what_a_host_must_offer_for_a_pinning(self):
        m = matrix(pinning="workers")
        workers, cpu0 = m.pinnings["workers"], m.pinnings["cpu0"]
        jdk = {"java_home": os.path.dirname(os.path.dirname(CAPTURES))}  # a folder without bin/jcmd
        taskset = {"taskset": {"available": True}}
        self.assertEqual(pinning.host_skip_reason(cpu0, jdk, taskset, {0, 1}, "default"), "")
        self.assertEqual(pinning.host_skip_reason(cpu0, jdk, {}, {0, 1}, "default"),
                         "taskset is not installed (CPU binding)")
        self.assertEqual(pinning.host_skip_reason(cpu0, jdk, {}, {0, 1}, "bind_local"), "")  # numactl binds
        self.assertEqual(pinning.host_skip_reason(workers, jdk, taskset, {0}, "default"),
                         "pinning=workers uses CPUs [1] this host does not have (CPUs [0])")
        self.assertEqual(pinning.host_skip_reason(workers, None, taskset, {0, 1}, "default"),
                         "pinning=workers pins Java threads; jdk=none starts no JVM")
        self.assertIn("needs jcmd to find Java threads", pinning.host_skip_reason(workers, jdk, taskset, {0, 1}, "default"))
        self.assertEqual(pinning.taskset_argv("0"), ["taskset", "-c", "0"])
        self.assertEqual(pinning.taskset_argv(""), [])

    def test_spare_cpus_and_the_proof_for_processes_and_threads(self):
        class Process:
            def __init__(self, role, under_test):
                self.role, self.under_test = role, under_test
        apart = matrix(pinning="apart").pinnings["apart"]
        self.assertEqual(pinning.spare_cpus(apart, [Process("server", True), Process("client", False)], {0, 1, 2}), {2})
        self.assertEqual(pinning.spare_cpus(apart, [Process("server", True), Process("other", False)], {0, 1, 2}), set())
        ev = {"role": "server", "process_status": {"Cpus_allowed_list": "1"},
              "other_processes": {"client": {"cpus_wanted": "0", "process_status": {"Cpus_allowed_list": "0-1"}}}}
        self.assertEqual(pinning.problems(apart, ev), ["client: CPU binding 0 not in effect: Cpus_allowed_list=0-1"])
        workers = matrix(pinning="workers").pinnings["workers"]
        vanished = {"threads": [{"pattern": "^calibration-cpu-worker-", "name": "w0", "tid": 7, "wanted": "1",
                                 "cpus_allowed": None}]}
        self.assertEqual(pinning.problems(workers, vanished),
                         ["thread 'w0' (tid 7) vanished before it could be checked"])


if __name__ == "__main__":
    unittest.main()
