"""The profiling knob (profiling.py): the events a policy may ask for, the flag that attaches the agent, the
agent's library unpacked from the locked jar for this host, and the cells refused before anything runs."""

import os
import platform
import sys
import tempfile
import unittest

from rigs.matrix.knobs import profiling


def jars_from_args():
    """The locked agent and converter jars //rigs/matrix/knobs:profiling_test is given as arguments."""
    found = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
    del sys.argv[1:]
    return [f"agent={os.path.abspath(found['agent'])}", f"converter={os.path.abspath(found['converter'])}"]


JARS = jars_from_args()


class Events(unittest.TestCase):
    def test_events_come_in_their_declared_order_and_an_unknown_one_is_named(self):
        self.assertEqual(profiling.check_events(["lock", "cpu"]), ("cpu", "lock"))
        with self.assertRaisesRegex(profiling.ProfileError, "unknown profile event 'cycles'; events: cpu, wall"):
            profiling.check_events(["cpu", "cycles"])

    def test_the_agent_flag_records_every_event_to_one_jfr(self):
        self.assertEqual(profiling.agent_flag("/a/lib.so", ["cpu"], "/w/p.jfr", 9973),
                         "-agentpath:/a/lib.so=start,event=cpu,interval=9973us,file=/w/p.jfr,jfr")
        self.assertEqual(profiling.agent_flag("/a/lib.so", ["wall", "alloc", "lock", "cpu"], "/w/p.jfr", 10711),
                         "-agentpath:/a/lib.so=start,event=cpu,interval=10711us,wall=10711us,alloc,lock,file=/w/p.jfr,jfr")
        self.assertEqual(profiling.agent_flag("/a/lib.so", ["wall"], "/w/p.jfr", 9349),
                         "-agentpath:/a/lib.so=start,event=wall,interval=9349us,file=/w/p.jfr,jfr")

    def test_each_round_samples_at_its_own_interval(self):
        # Rounds 0..9 each their own interval, all within 10 % of 10 ms, then again: lockstep with a periodic
        # program is not repeated in every round.
        intervals = [profiling.interval_us(r) for r in range(10)]
        self.assertEqual(len(set(intervals)), 10)
        self.assertTrue(all(9000 <= i <= 11000 for i in intervals), intervals)
        self.assertEqual(profiling.interval_us(10), intervals[0])
        self.assertTrue(all(all(i % d for d in range(2, int(i ** 0.5) + 1)) for i in intervals), "primes")


GC_LOGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "gclogs")


class GcLogs(unittest.TestCase):
    def summary(self, name, process_cpu=None):
        with open(os.path.join(GC_LOGS, name)) as f:
            return profiling.gc_summary(f.read(), process_cpu)

    def test_pauses_and_their_cpu_are_read_from_every_pinned_jdk_and_concurrent_phases_are_not_pauses(self):
        # Known answers read off the recorded logs (testdata/gclogs/README.md).
        self.assertEqual(self.summary("jdk11_G1.log"), {"collector": "G1", "pauses": 3, "pause_ms_total": 2.813,
                                                        "pause_ms_max": 1.611, "pause_cpu_s": 0.0})
        self.assertEqual(self.summary("jdk17_Serial.log"), {"collector": "Serial", "pauses": 1, "pause_ms_total": 41.096,
                                                            "pause_ms_max": 41.096, "pause_cpu_s": 0.04})
        self.assertEqual(self.summary("jdk21_Serial.log")["pause_ms_total"], 34.931)
        self.assertEqual(self.summary("jdk21_G1.log")["pause_cpu_s"], 0.01)
        for jdk in ("jdk11", "jdk17", "jdk21"):
            with self.subTest(jdk=jdk):
                self.assertEqual(self.summary(f"{jdk}_Parallel.log"),
                                 {"collector": "Parallel", "pauses": 0, "pause_ms_total": 0, "pause_ms_max": 0.0,
                                  "pause_cpu_s": 0.0})

    def test_shares_come_from_the_jvms_sampled_wall_and_cpu_time(self):
        found = self.summary("jdk11_Serial.log", {"cpu_s": 0.8, "wall_s": 2.0})
        self.assertEqual((found["pause_share"], found["pause_cpu_share"]), (round(0.041416 / 2.0, 5), 0.05))
        self.assertNotIn("pause_share", self.summary("jdk11_Serial.log", {"cpu_s": 0.0, "wall_s": 0.0}))


class Tools(unittest.TestCase):
    def test_the_agent_is_unpacked_from_the_locked_jar_for_this_host(self):
        tools = profiling.tools(JARS, platform.machine())
        folder = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        library = profiling.extract_agent(tools["agent_jar"], platform.machine(), folder)
        with open(library, "rb") as f:
            self.assertEqual(f.read(4), b"\x7fELF")
        self.assertEqual(profiling.extract_agent(tools["agent_jar"], platform.machine(), folder), library)

    def test_a_missing_jar_or_an_architecture_without_an_agent_is_refused(self):
        with self.assertRaisesRegex(profiling.ProfileError, "no converter jar of async-profiler"):
            profiling.tools(JARS[:1], "x86_64")
        with self.assertRaisesRegex(profiling.ProfileError, "expected agent=PATH or converter=PATH"):
            profiling.tools(JARS + ["jfr=/x"], "x86_64")
        with self.assertRaisesRegex(profiling.ProfileError, "this host is riscv64"):
            profiling.tools(JARS, "riscv64")

    def test_a_cell_without_a_jvm_gets_cpu_only_and_a_jvm_in_a_container_is_refused(self):
        profiling.check_cell({"executor": "process"}, {"name": "jdk17"}, ("cpu", "alloc"))
        profiling.check_cell({}, None, ("cpu",))  # a native server: perf record's on-CPU stacks
        with self.assertRaisesRegex(profiling.ProfileError, r"runs no JVM \(jdk=none\).*samples on-CPU stacks only "
                                    r"\(policy.profile=cpu\); alloc, lock are the JVM agent's"):
            profiling.check_cell({}, None, ("cpu", "alloc", "lock"))
        with self.assertRaisesRegex(profiling.ProfileError, "executor=container"):
            profiling.check_cell({"executor": "container"}, {"name": "jdk17"}, ("cpu",))

if __name__ == "__main__":
    unittest.main()
