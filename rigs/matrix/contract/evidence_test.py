"""Evidence parsers and verification on real captures (rigs/matrix/testdata/captures/README.md says where each is from)."""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from rigs.matrix.contract import evidence
from rigs.matrix.planning import spec

CAPTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "testdata", "captures")


def capture(name):
    with open(os.path.join(CAPTURES, name)) as f:
        return f.read()


def matrix(**axes):
    data = {"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], **{k: [v] for k, v in axes.items()}},
            "pinning": {"workers": {"threads": {"^calibration-cpu-worker-": "1"}}, "cpu0": {"cpus": "0"}}}
    return spec.from_dict(data)


class ParserTest(unittest.TestCase):
    def test_numa_maps_membind(self):
        summary = evidence.parse_numa_maps(capture("numa_maps_membind0.txt"))
        self.assertEqual(list(summary["bytes_per_node"]), [0])
        self.assertEqual(set(summary["bytes_per_policy"]), {"bind:0"})
        self.assertEqual(summary["huge_bytes"], 0)

    def test_numa_maps_two_nodes(self):
        summary = evidence.parse_numa_maps(capture("numa_maps_two_node_weighted_interleave.txt"))
        page = 4096
        self.assertEqual(summary["bytes_per_node"], {0: (32897 + 32768 + 54828 + 54614) * page,
                                                     1: (32896 + 32769 + 10965 + 10923) * page})
        self.assertEqual(list(summary["bytes_per_policy"]), ["weighted interleave:0-1"])
        # Local ratio on that two-node capture: a process on node 0's CPUs has two thirds of its pages there.
        n0, n1 = 32897 + 32768 + 54828 + 54614, 32896 + 32769 + 10965 + 10923
        self.assertEqual(evidence.local_memory_ratio(summary, 0), round(n0 / (n0 + n1), 4))
        self.assertEqual(evidence.local_memory_ratio(summary, 1), round(n1 / (n0 + n1), 4))
        self.assertIsNone(evidence.local_memory_ratio({"bytes_per_node": {}}, 0))

    def test_numa_maps_hugetlb_pages_are_2_mib(self):
        summary = evidence.parse_numa_maps(capture("numa_maps_interleave_hugetlb.txt"))
        self.assertGreater(summary["huge_bytes"], 0)
        self.assertEqual(summary["huge_bytes"] % (2 << 20), 0)
        self.assertEqual(set(summary["bytes_per_policy"]), {"interleave:0"})

    def test_vm_flags(self):
        flags = evidence.parse_vm_flags(capture("vm_flags.txt"))
        self.assertIs(flags["UseParallelGC"], True)
        self.assertIs(flags["UsePerfData"], False)
        self.assertEqual(flags["MaxHeapSize"], str(256 << 20))

    def test_thread_print_gives_native_tids(self):
        threads = dict(evidence.parse_thread_print(capture("thread_print.txt")))
        self.assertEqual(threads["calibration-cpu-worker-0"], 0x6e8a)
        self.assertIn("main", threads)

    def test_status_and_smaps(self):
        status = evidence.parse_status(capture("status.txt"))
        self.assertEqual(status["Cpus_allowed_list"], "0-1")
        self.assertEqual(status["Mems_allowed_list"], "0")
        self.assertIn("AnonHugePages", evidence.parse_smaps_rollup(capture("smaps_rollup.txt")))

    def test_large_page_fallback_is_detected(self):
        warnings = evidence.large_page_failures(capture("jvm_output_largepages.txt"))
        self.assertEqual(len(warnings), 1)
        self.assertIn("Failed to reserve and commit memory", warnings[0])


class DeclaredFlagsTest(unittest.TestCase):
    def test_declared_options_must_take_effect(self):
        fixed = ["-XX:+AlwaysPreTouch", "-XX:NewSize=256m", "-XX:MaxNewSize=256m", "-XX:CICompilerCount=2",
                 "-XX:ParallelGCThreads=2", "-XX:ConcGCThreads=1", "-XX:-UseDynamicNumberOfGCThreads", "-Xss1m"]
        flags = evidence.parse_vm_flags(capture("vm_flags_fixed_launch.txt"))
        self.assertEqual(evidence.declared_flag_problems(fixed, flags), [])
        self.assertEqual(evidence.declared_flag_problems(
            ["-XX:NewSize=128m", "-XX:-AlwaysPreTouch", "-XX:+UseLargePages", "-XX:ParallelGCThreads=1"], flags),
            ["asked for -XX:NewSize=128m, the JVM reports NewSize=268435456",
             "asked for -XX:-AlwaysPreTouch, the JVM reports AlwaysPreTouch=True",
             "asked for -XX:+UseLargePages, the JVM reports UseLargePages=unset",
             "asked for -XX:ParallelGCThreads=1, the JVM reports ParallelGCThreads=2"])
        # A cell's declared set checked against its JVM: rigs/matrix/knobs/jvm_test.py; every axis' proof
        # through process_evidence.verify: rigs/matrix/knobs/process_evidence_test.py.


class PatchedClassTest(unittest.TestCase):
    MANIFEST = {"overlay_jar": "libnn_log_out_of_lock_upto_1.jar",
                "classes": ["org.apache.hadoop.hdfs.server.namenode.FSDirWriteFileOp",
                            "org.apache.hadoop.hdfs.server.namenode.FSNamesystem"]}

    def sources(self):
        with open(os.path.join(CAPTURES, "class_load_patched.txt")) as f:
            loaded = dict(evidence.parse_class_load(f.read()))
        return {name: loaded.get(name) for name in self.MANIFEST["classes"]}

    def test_patched_classes_from_the_overlay_pass(self):
        sources = self.sources()
        self.assertTrue(all(src.endswith("/libnn_log_out_of_lock_upto_1.jar") for src in sources.values()))
        self.assertEqual(evidence.patched_class_problems(sources, self.MANIFEST), [])

    def test_a_patched_class_from_the_stock_jar_is_a_problem(self):
        sources = dict(self.sources())
        sources["org.apache.hadoop.hdfs.server.namenode.FSNamesystem"] = \
            "file:/x/external/maven__org_apache_hadoop__hadoop_hdfs__3_4_2/hadoop-hdfs-3.4.2.jar"
        (problem,) = evidence.patched_class_problems(sources, self.MANIFEST)
        self.assertIn("FSNamesystem was loaded from file:/x/external", problem)
        self.assertIn("not from the overlay libnn_log_out_of_lock_upto_1.jar", problem)

    def test_a_patch_never_loaded_is_a_problem(self):
        sources = {name: None for name in self.MANIFEST["classes"]}
        (problem,) = evidence.patched_class_problems(sources, self.MANIFEST)
        self.assertIn("the patch was not exercised", problem)

    def test_a_bumps_classes_must_come_from_the_new_releases_jar(self):
        bump = {"kind": "bump", "to": "3.5.0", "classes_jar": "hadoop-hdfs-3.5.0.jar",
                "classes": ["org.apache.hadoop.hdfs.server.namenode.FSNamesystem"]}
        name = bump["classes"][0]
        new = "file:/x/external/maven__org_apache_hadoop__hadoop_hdfs__3_5_0/jar/hadoop-hdfs-3.5.0.jar"
        self.assertEqual(evidence.patched_class_problems({name: new}, bump), [])
        (problem,) = evidence.patched_class_problems({name: new.replace("3_5_0", "3_4_2").replace("3.5.0", "3.4.2")},
                                                     bump)
        self.assertIn("bump's class org.apache.hadoop.hdfs.server.namenode.FSNamesystem was loaded from", problem)
        self.assertIn("not from 3.5.0's jar hadoop-hdfs-3.5.0.jar", problem)
        (problem,) = evidence.patched_class_problems({name: None}, bump)
        self.assertIn("the new release was not exercised", problem)

    def test_a_bumps_jar_is_known_by_its_sha256_not_its_name(self):
        # Issue 78, row 8: a jar named hadoop-hdfs-3.5.0.jar anywhere passed.
        folder = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        jar = os.path.join(folder, "hadoop-hdfs-3.5.0.jar")
        with open(jar, "wb") as f:
            f.write(b"the locked jar's bytes")
        locked = hashlib.sha256(b"the locked jar's bytes").hexdigest()
        bump = {"kind": "bump", "to": "3.5.0", "classes_jar": "hadoop-hdfs-3.5.0.jar", "classes_jar_sha256": locked,
                "classes": ["org.apache.hadoop.hdfs.server.namenode.FSNamesystem"]}
        name = bump["classes"][0]
        self.assertEqual(evidence.patched_class_problems({name: "file:" + jar}, bump), [])
        with open(jar, "wb") as f:
            f.write(b"another jar of the same name")
        (problem,) = evidence.patched_class_problems({name: "file:" + jar}, bump)
        self.assertIn(f"whose sha256 {hashlib.sha256(b'another jar of the same name').hexdigest()}", problem)
        (problem,) = evidence.patched_class_problems({name: "file:" + jar + ".gone"}, dict(
            bump, classes_jar="hadoop-hdfs-3.5.0.jar.gone"))
        self.assertIn("unreadable", problem)


if __name__ == "__main__":
    unittest.main()


class PatchedBinaryTest(unittest.TestCase):
    def test_the_running_program_must_be_a_patched_binary(self):
        # This test's own interpreter stands in for a native server: its /proc/self/exe is read for real.
        exe = evidence.executable("/proc/self")
        self.assertEqual(exe["path"], os.path.realpath(sys.executable))
        with open(sys.executable, "rb") as f:
            self.assertEqual(exe["sha256"], hashlib.sha256(f.read()).hexdigest())
        patched = {"binaries": {"redis-server": exe["sha256"]}}
        self.assertEqual(evidence.patched_binary_problems(exe, patched), [])
        stock = {"binaries": {"redis-server": "0" * 64}}
        (problem,) = evidence.patched_binary_problems(exe, stock)
        self.assertIn("none of the patched build's binaries (redis-server)", problem)
        self.assertIn("could not read", evidence.patched_binary_problems(evidence.executable("/proc/0"), stock)[0])
        self.assertEqual(evidence.patched_binary_problems(exe, {"classes": ["a.B"]}), [])  # a JVM patch set

    def test_a_program_loaded_by_a_wrapper_is_found_among_its_mappings(self):
        # The dynamic loader run as a program maps `sleep` into its own executable, as Valgrind maps the
        # server: /proc/PID/exe is the loader, the program is among the mappings.
        loader, sleep = os.path.realpath("/lib64/ld-linux-x86-64.so.2"), shutil.which("sleep")
        if not os.path.exists(loader) or not sleep:
            self.skipTest("no x86-64 dynamic loader or sleep here")
        child = subprocess.Popen([loader, sleep, "30"])
        try:
            time.sleep(0.5)
            exe = evidence.executable(f"/proc/{child.pid}", sleep)
            self.assertEqual((exe["path"], exe["runs_under"]), (os.path.realpath(sleep), loader))
            with open(sleep, "rb") as f:
                self.assertEqual(exe["sha256"], hashlib.sha256(f.read()).hexdigest())
            plain = evidence.executable(f"/proc/{child.pid}")  # without the launched path: the kernel's view
            self.assertEqual(plain["path"], loader)
            self.assertNotIn("runs_under", evidence.executable(f"/proc/{child.pid}", loader))
        finally:
            child.kill()
            child.wait()
