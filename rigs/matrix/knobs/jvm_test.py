"""The JVM's axes (jvm.py: gc, gc_opts, heap) on their own: the combinations no host runs, the collector a
JDK accepts as the doctor probed it, the flags, and the proof on real VM.flags captures
(rigs/matrix/testdata/captures/README.md), also through process_evidence.verify."""

import os
import unittest

from rigs.matrix.contract import evidence
from rigs.matrix.knobs import jvm, process_evidence
from rigs.matrix.planning import spec

CAPTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "testdata", "captures")
FIXED = ["-XX:+AlwaysPreTouch", "-XX:NewSize=256m", "-XX:MaxNewSize=256m", "-XX:CICompilerCount=2",
         "-XX:ParallelGCThreads=2", "-XX:ConcGCThreads=1", "-XX:-UseDynamicNumberOfGCThreads", "-Xss1m"]


def vm_flags(name):
    with open(os.path.join(CAPTURES, name)) as f:
        return evidence.parse_vm_flags(f.read())


class Declared(unittest.TestCase):
    def test_combinations_no_host_runs(self):
        self.assertEqual(jvm.static_problems("cms", "default", [], 17),
                         ["gc=cms with jdk=17: CMS was removed in JDK 14 (exclude it, or zip gc with jdk)"])
        self.assertEqual(jvm.static_problems("cms", "default", [], 11), [])
        self.assertEqual(jvm.static_problems("g1", "iof80", ["-XX:CMSInitiatingOccupancyFraction=80"], 11),
                         ["gc_opts=iof80 has CMS flags but gc=g1"])
        self.assertEqual(set(jvm.GCS), set(spec.GCS))

    def test_the_collector_a_jdk_accepts(self):
        jdk = {"version": "17.0.9", "gcs": {"g1": {"accepted": True, "flags": ["-XX:+UseG1GC"]},
                                           "shenandoah": {"accepted": False, "flags": None,
                                                          "evidence": "Unrecognized VM option 'UseShenandoahGC'"}}}
        self.assertEqual(jvm.selection(jdk, "g1", "17"), (["-XX:+UseG1GC"], ""))
        self.assertEqual(jvm.selection(jdk, "shenandoah", "17"),
                         (None, "gc=shenandoah on jdk=17 (17.0.9): the JVM refuses it: Unrecognized VM option "
                                "'UseShenandoahGC'"))
        self.assertEqual(jvm.selection({"version": "17.0.9"}, "parallel", "17"), (["-XX:+UseParallelGC"], ""))

    def test_flags(self):
        self.assertEqual(jvm.flags(["-XX:+UseG1GC"], ["-XX:+AlwaysPreTouch"], "1g"),
                         ["-XX:+UseG1GC", "-XX:+AlwaysPreTouch", "-Xms1g", "-Xmx1g"])


class Proof(unittest.TestCase):
    def test_the_collector_and_heap_are_proven_on_a_real_jvm(self):
        flags = vm_flags("vm_flags.txt")  # a Parallel JVM with a 256 MiB heap
        params = {"gc": "parallel", "heap": "256m", "gc_opts": "default"}
        self.assertEqual(jvm.problems(params, [], {"vm_flags": flags}), [])
        wrong = jvm.problems(dict(params, gc="g1", heap="512m"), [], {"vm_flags": flags})
        self.assertEqual(len(wrong), 2, wrong)
        self.assertIn("asked for gc=g1 but the JVM does not report -XX:+UseG1GC", wrong)
        self.assertTrue(wrong[1].startswith("asked for heap=512m (536870912 bytes), JVM reports MaxHeapSize="))
        self.assertEqual(jvm.problems(params, [], {}), ["could not read the JVM's flags (jcmd VM.flags)"])
        self.assertEqual(jvm.problems(params, [], {"native_program": True}), [])

    def test_a_cells_declared_set_through_process_evidence_verify(self):
        data = {"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], "gc": ["g1"], "heap": ["1g"],
                                                              "gc_opts": ["fixed", "young128"]},
                "gc_opts": {"fixed": {"flags": FIXED}, "young128": {"flags": ["-XX:NewSize=128m"]}}}
        m = spec.from_dict(data)
        with open(os.path.join(CAPTURES, "status.txt")) as f:
            status = evidence.parse_status(f.read())
        ev = {"vm_flags": vm_flags("vm_flags_fixed_launch.txt"), "process_status": status, "threads": [],
              "thp_mode": "never"}
        by_opts = {c.params["gc_opts"]: process_evidence.verify(c, m, ev, {0: {0, 1}}) for c in m.cells}
        self.assertEqual(by_opts, {"fixed": [], "young128": [
            "gc_opts=young128: asked for -XX:NewSize=128m, the JVM reports NewSize=268435456"]})


if __name__ == "__main__":
    unittest.main()
