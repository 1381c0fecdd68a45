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
        self.assertEqual(profiling.agent_flag("/a/lib.so", ["cpu"], "/w/p.jfr"),
                         "-agentpath:/a/lib.so=start,event=cpu,interval=10ms,file=/w/p.jfr,jfr")
        self.assertEqual(profiling.agent_flag("/a/lib.so", ["wall", "alloc", "lock", "cpu"], "/w/p.jfr"),
                         "-agentpath:/a/lib.so=start,event=cpu,interval=10ms,wall=10ms,alloc,lock,file=/w/p.jfr,jfr")
        self.assertEqual(profiling.agent_flag("/a/lib.so", ["wall"], "/w/p.jfr"),
                         "-agentpath:/a/lib.so=start,event=wall,interval=10ms,file=/w/p.jfr,jfr")


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

    def test_a_cell_without_a_jvm_or_in_a_container_is_refused(self):
        profiling.check_cell({"executor": "process"}, {"name": "jdk17"})
        with self.assertRaisesRegex(profiling.ProfileError, "runs none \\(jdk=none\\)"):
            profiling.check_cell({}, None)
        with self.assertRaisesRegex(profiling.ProfileError, "executor=container"):
            profiling.check_cell({"executor": "container"}, {"name": "jdk17"})


if __name__ == "__main__":
    unittest.main()
