"""Launch composition and host knobs (on a fake /sys and /proc in a temporary folder)."""

import os
import subprocess
import sys
import tempfile
import types
import unittest

from rigs.matrix.contract import evidence
from rigs.matrix.knobs import hostknobs, launchargv, threadpinning
from rigs.matrix.planning import spec
from rigs.matrix.contract import rig as rig_contract

NODES_2 = {0: {0, 1, 2, 3}, 1: {4, 5, 6, 7}}


def matrix(**axes):
    data = {"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], **{k: [v] for k, v in axes.items()}},
            "pinning": {"cpu5": {"cpus": "5"}}, "gc_opts": {"iof80": {"flags": ["-XX:CMSInitiatingOccupancyFraction=80"]}}}
    m = spec.from_dict(data)
    return m, m.cells[0]


class LaunchTest(unittest.TestCase):
    def test_jvm_flags(self):
        m, cell = matrix(gc="cms", gc_opts="iof80", heap="1g", hugepages="explicit", jdk=11)
        flags = launchargv.jvm_flags(cell, m, ["-XX:+UseConcMarkSweepGC"])
        self.assertEqual(flags, ["-XX:+UseConcMarkSweepGC", "-XX:CMSInitiatingOccupancyFraction=80", "-Xms1g", "-Xmx1g",
                                 "-XX:+UseLargePages", "-XX:LargePageSizeInBytes=2m", "-XX:-UsePerfData"])

    def test_spare_cpus_only_when_every_process_is_bound(self):
        m, cell = matrix(pinning="cpu5")
        server = rig_contract.Process("server", main_class="S", classpath=["x.jar"])
        client = rig_contract.Process("client", program=["c"], under_test=False)
        self.assertEqual(launchargv.spare_cpus(cell, m, [server], {4, 5, 6}), {4, 6})
        # The client (not under test) has no CPUs of its own here: it may run anywhere.
        self.assertEqual(launchargv.spare_cpus(cell, m, [server, client], {4, 5, 6}), set())
        self.assertEqual(launchargv.spare_cpus(cell, m, [server], {5}), set())
        m, cell = matrix()
        self.assertEqual(launchargv.spare_cpus(cell, m, [server], {4, 5, 6}), set())

    def test_wrappers(self):
        cases = {
            ("none", "default"): [],
            ("cpu5", "default"): ["taskset", "-c", "5"],
            ("cpu5", "bind_local"): ["numactl", "--physcpubind=5", "--membind=1", "--"],
            ("cpu5", "bind_remote"): ["numactl", "--physcpubind=5", "--membind=0", "--"],
            ("none", "bind_remote"): ["numactl", "--cpunodebind=0", "--membind=1", "--"],
            ("none", "interleave"): ["numactl", "--interleave=all", "--"],
            ("none", "preferred"): ["numactl", "--preferred=0", "--"],
            ("cpu5", "pressured_migrated"): ["numactl", "--physcpubind=5", "--"],
            ("none", "pressured_migrated"): ["numactl", "--cpunodebind=0", "--"],
            ("none", "weighted_interleave"): ["numactl", "--", sys.executable, launchargv.MEMPOLICY,
                                              "weighted-interleave", "all", "--"],
        }
        for (pinning, numa), expected in cases.items():
            m, cell = matrix(pinning=pinning, numa=numa)
            self.assertEqual(launchargv.wrapper_argv(cell, m, NODES_2), expected, (pinning, numa))

    def test_container_memory_nodes_follow_the_bind_policies_only(self):
        cases = {("cpu5", "bind_local"): "1", ("cpu5", "bind_remote"): "0", ("none", "bind_remote"): "1",
                 ("cpu5", "interleave"): None, ("cpu5", "preferred"): None, ("none", "default"): None}
        for (pinning, numa), expected in cases.items():
            m, cell = matrix(pinning=pinning, numa=numa)
            self.assertEqual(launchargv.container_mems(cell, m, NODES_2), expected, (pinning, numa))
            # Other processes of the cell keep every node: the policy is the process under test's.
            self.assertIsNone(launchargv.container_mems(cell, m, NODES_2, "loadgen", False))

    def test_large_pages_of_the_hosts_size(self):
        # aarch64 with 64 KiB base pages: 512 MiB hugepages (the doctor's Hugepagesize); the axis' own checks
        # are in hugepages_test.
        m, cell = matrix(hugepages="explicit")
        self.assertIn("-XX:LargePageSizeInBytes=512m", launchargv.jvm_flags(cell, m, [], 512 << 20))


class WeightedInterleaveTest(unittest.TestCase):
    @unittest.skipUnless(os.path.isdir("/sys/kernel/mm/mempolicy/weighted_interleave"),
                         "this kernel has no weighted interleave (needs 6.9)")
    def test_the_helper_sets_the_policy_the_program_inherits(self):
        # The real kernel: the exec'd program's own numa_maps carry the policy.
        out = subprocess.run([sys.executable, launchargv.MEMPOLICY, "weighted-interleave", "all", "--",
                              "cat", "/proc/self/numa_maps"], capture_output=True, text=True, check=True).stdout
        policies = evidence.parse_numa_maps(out)["bytes_per_policy"]
        self.assertEqual({p.split(":")[0] for p in policies}, {"weighted interleave"}, policies)

    def test_bad_usage_and_bad_nodes_are_refused(self):
        usage = subprocess.run([sys.executable, launchargv.MEMPOLICY, "interleave", "all", "--", "true"],
                               capture_output=True, text=True)
        self.assertEqual(usage.returncode, 2)
        bad = subprocess.run([sys.executable, launchargv.MEMPOLICY, "weighted-interleave", "70", "--", "true"],
                             capture_output=True, text=True)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("give nodes 0..63", bad.stderr)


class HostKnobsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.paths = hostknobs.HostPaths(thp_enabled=os.path.join(self.dir, "enabled"),
                                     nr_hugepages=os.path.join(self.dir, "nr_hugepages"))
        with open(self.paths.thp_enabled, "w") as f:
            f.write("always [madvise] never\n")
        with open(self.paths.nr_hugepages, "w") as f:
            f.write("0\n")

    def read(self, path):
        with open(path) as f:
            return f.read().strip()

    def test_set_then_restored_even_on_error(self):
        _, cell = matrix(hugepages="explicit", heap="256m")
        with self.assertRaises(RuntimeError):
            with hostknobs.HostKnobs(self.paths) as host:
                self.assertEqual(host.apply(cell), {"nr_hugepages": 256, "hugepage_size_kb": 2048})
                self.assertEqual(self.read(self.paths.nr_hugepages), "256")
                raise RuntimeError("the cell crashed")
        self.assertEqual(self.read(self.paths.nr_hugepages), "0")

    def test_short_reservation_is_retried_after_compaction_then_refused(self):
        _, cell = matrix(hugepages="explicit", heap="256m")
        self.paths.compact_memory = os.path.join(self.dir, "compact_memory")
        with open(self.paths.compact_memory, "w"):  # the kernel's file exists; a setting is never created
            pass
        with FragmentedHost(self.paths, free_pages=[15, 100, 300]) as host:
            # 15 pages, compaction, 100, compaction, 300: the third attempt holds the 256 asked for.
            self.assertEqual(host.apply(cell), {"nr_hugepages": 256, "hugepage_size_kb": 2048,
                                               "hugepage_reservation_attempts": 3})
            self.assertEqual(host.compactions, 2)
        self.assertEqual(self.read(self.paths.nr_hugepages), "0")  # the first original, not a retry's

        with FragmentedHost(self.paths, free_pages=[15, 15, 15]) as host:
            with self.assertRaisesRegex(hostknobs.HostCannotNow, "reserved 15 after 3 attempts"):
                host.apply(cell)
        self.assertEqual(self.read(self.paths.nr_hugepages), "0")

    def test_thp_mode_set_and_restored(self):
        _, cell = matrix(hugepages="thp_always")
        with hostknobs.HostKnobs(self.paths) as host:
            self.assertEqual(host.apply(cell), {"thp_mode": "always"})
        # The kernel file shows "[madvise]"; writing back the bare mode name restores it.
        self.assertEqual(self.read(self.paths.thp_enabled), "madvise")

    def test_host_leaves_the_host_as_it_is(self):
        _, cell = matrix(hugepages="host")
        with open(self.paths.nr_hugepages, "w") as f:
            f.write("7\n")
        with hostknobs.HostKnobs(self.paths) as host:
            self.assertEqual(host.apply(cell), {"thp_mode": "madvise"})
            self.assertEqual(host._saved, [])  # nothing written, nothing to restore
        self.assertEqual(self.read(self.paths.thp_enabled), "always [madvise] never")
        self.assertEqual(self.read(self.paths.nr_hugepages), "7")

    def test_restore_is_idempotent(self):
        _, cell = matrix(hugepages="off")
        host = hostknobs.HostKnobs(self.paths)
        host.apply(cell)
        host.restore()
        host.restore()
        self.assertEqual(self.read(self.paths.thp_enabled), "madvise")


class FragmentedHost(hostknobs.HostKnobs):
    """HostKnobs on a fake kernel with fragmented memory: a write to nr_hugepages reserves at most the
    pages free in 2 MiB blocks, and each compaction frees the next amount in `free_pages`."""

    def __init__(self, paths, free_pages):
        super().__init__(paths)
        self.free_pages, self.compactions = free_pages, 0

    def _compact_memory(self):
        super()._compact_memory()
        with open(self.paths.compact_memory) as f:
            self.compactions += f.read() == "1"

    def _write(self, path, value):
        super()._write(path, value)
        if path == self.paths.nr_hugepages:
            with open(path, "w") as f:
                f.write(str(min(int(value), self.free_pages[self.compactions])))


class ThreadPinnerNamespaceTest(unittest.TestCase):
    def test_thread_ids_of_a_containerized_jvm_map_to_host_tasks(self):
        # /proc/<pid>/task/<tid>/status NSpid lines as a podman container's JVM shows them on this VM
        # (host tid first, the container's own last; the JVM's jcmd Thread.print reports nid=0x18 for 24).
        proc = tempfile.mkdtemp()
        for host_tid, ns_tid in ((13964, 1), (13990, 24)):
            folder = os.path.join(proc, "13964", "task", str(host_tid))
            os.makedirs(folder)
            with open(os.path.join(folder, "status"), "w") as f:
                f.write(f"Name:\tjava\nNSpid:\t{host_tid}\t{ns_tid}\nCpus_allowed_list:\t0-1\n")
        pinner = threadpinning.ThreadPinner("jcmd", 13964, [], proc=proc)
        self.assertEqual(pinner.host_tids(), {1: 13964, 24: 13990})
        # A JVM in the host's own namespace has one id per line: no mapping.
        with open(os.path.join(proc, "13964", "task", "13990", "status"), "w") as f:
            f.write("Name:\tjava\nNSpid:\t13990\n")
        self.assertEqual(pinner.host_tids(), {1: 13964})


class ThreadPinnerTrustTest(unittest.TestCase):
    """Issue 58, row 3: a Java thread named `worker" nid=0x<pid> x` made the runner pin an unrelated process.
    The header lines follow rigs/matrix/testdata/captures/thread_print.txt (recorded from JDK 17's jcmd), with JDK 17's
    unescaped quote in the name as it printed it."""

    def test_a_tid_planted_in_a_thread_name_is_never_pinned(self):
        bystander = subprocess.Popen(["sleep", "60"])
        self.addCleanup(bystander.kill)
        before = os.sched_getaffinity(bystander.pid)
        me = os.getpid()
        text = (f'"worker" nid=0x{bystander.pid:x} x" #14 prio=5 os_prio=0 cpu=0.31ms elapsed=2.10s '
                f'tid=0x00007f2c4c1a5000 nid=0x{me:x} waiting on condition  [0x00007f2c2d7fe000]\n'
                f'"y\n"planted" #1 nid=0x{bystander.pid:x} runnable\n')
        run = lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=text)  # noqa: E731
        pinner = threadpinning.ThreadPinner("jcmd", me, [("worker|planted", "0")], run=run)
        mine = os.sched_getaffinity(0)
        self.addCleanup(os.sched_setaffinity, 0, mine)
        self.assertTrue(pinner.poll())
        self.assertEqual(os.sched_getaffinity(bystander.pid), before)
        self.assertEqual(list(pinner.pinned), [me])  # the JVM's own nid, the line's last
        self.assertTrue(any("not a thread of JVM" in e for e in pinner.errors), pinner.errors)

    def test_nothing_is_pinned_when_the_jvm_left_the_cell(self):
        me = os.getpid()
        text = f'"worker" #14 prio=5 os_prio=0 tid=0x00007f2c4c1a5000 nid=0x{me:x} runnable\n'
        run = lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=text)  # noqa: E731
        pinner = threadpinning.ThreadPinner("jcmd", me, [("worker", "0")], run=run, cell_pids=lambda: {1})
        self.assertTrue(pinner.poll())
        self.assertEqual(pinner.pinned, {})


class ThreadPinnerEndedThreadTest(unittest.TestCase):
    """Issue 80: the calibration smoke's "thread vanished before it could be checked": a worker that ends
    between the pinner's check and the evidence keeps the affinity the kernel showed while it lived."""

    def test_a_pinned_thread_that_ends_keeps_its_proof(self):
        import threading
        from rigs.matrix.knobs import pinning
        me, release, started = os.getpid(), threading.Event(), threading.Event()
        worker = threading.Thread(target=lambda: (started.set(), release.wait(30)), name="worker")
        worker.start()
        started.wait(10)
        text = f'"worker-1" #14 prio=5 os_prio=0 tid=0x00007f2c4c1a5000 nid=0x{worker.native_id:x} runnable\n'
        run = lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=text)  # noqa: E731
        cpu = sorted(os.sched_getaffinity(0))[0]
        pinner = threadpinning.ThreadPinner("jcmd", me, [("^worker-", str(cpu))], run=run)
        self.assertTrue(pinner.poll())
        [alive] = pinner.evidence()
        self.assertEqual((alive["cpus_allowed"], alive.get("ended")), (str(cpu), None))
        release.set()
        worker.join(10)
        # join() returns when the thread's tid is cleared, a moment before the kernel drops /proc/self/task/<tid>
        # (CI 2026-12-07: its status still read, so no "ended"): the precondition is the task gone, not the join.
        task = f"/proc/self/task/{worker.native_id}"
        self.assertTrue(threadpinning.wait_for(lambda: not os.path.exists(task), 10, 0.01), f"{task} stayed")
        [ended] = pinner.evidence()
        self.assertEqual((ended["cpus_allowed"], ended["ended"]), (str(cpu), True))
        rule = types.SimpleNamespace(threads=[("^worker-", str(cpu))], cpus_for=lambda role, under_test: "")
        self.assertEqual(pinning.problems(rule, {"threads": [ended]}), [])
        never_read = dict(ended, cpus_allowed=None)
        never_read.pop("ended")
        self.assertEqual(pinning.problems(rule, {"threads": [never_read]}),
                         [f"thread 'worker-1' (tid {worker.native_id}) vanished before it could be checked"])


if __name__ == "__main__":
    unittest.main()
