"""A native server's profile (perfrecord.py): perf script's samples collapsed into stacks, against output
recorded from the real tool (testdata/perf/README.md says how), and perf probed on this host."""

import os
import subprocess
import tempfile
import unittest

from rigs.matrix.knobs import perfrecord
from results import safeio

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDED = os.path.join(HERE, "testdata", "perf", "redis-server-set-get.script")


class CollapseTest(unittest.TestCase):
    def test_a_recorded_redis_profile_collapses_root_first_with_kernel_frames_marked(self):
        stacks = perfrecord.collapse(safeio.read_text(RECORDED, 16 << 20))
        samples = sum(stacks.values())
        headers = sum(1 for line in safeio.read_text(RECORDED, 16 << 20).splitlines()
                      if line and not line[0].isspace())
        self.assertEqual(samples, headers)  # every sample kept (each has at least one frame)
        # DWARF unwinding reaches the bottom of every stack: only the event loop's thread ran (the bio threads
        # slept), and each of its samples unwinds to the program's entry point through main.
        self.assertEqual({stack[0] for stack in stacks}, {"_start"})
        self.assertTrue(all("main" in stack for stack in stacks))
        kernel = [[f.endswith("_[k]") for f in stack] for stack in stacks]
        self.assertTrue(any(any(k) for k in kernel), "no kernel frame marked")
        # A stack goes from the server's code into the kernel (a system call), never back: once a frame is the
        # kernel's, every frame above it is too.
        for stack, marks in zip(stacks, kernel):
            if True in marks:
                self.assertTrue(all(marks[marks.index(True):]), stack)
        # Redis's own work is there, named: reading a request, running SET (most of the time is the kernel's
        # loopback TCP, as for any small request).
        frames = {f for stack in stacks for f in stack}
        self.assertTrue({"readQueryFromClient", "processCommand", "setCommand"} <= frames, sorted(frames))

    def test_an_unnamed_symbol_becomes_its_object_and_an_empty_sample_is_left_out(self):
        text = ("redis-server  7 9973000 \n"
                "\t    7f0000000010 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
                "\t    55555555a000 main (/opt/redis-server)\n\n"
                "redis-server  7 9973000 \n\n")
        self.assertEqual(perfrecord.collapse(text), {("main", "[libc.so.6]"): 1})

    def test_text_that_is_not_perf_script_output_is_refused(self):
        with self.assertRaisesRegex(perfrecord.PerfError, "not a sample header or a frame"):
            perfrecord.collapse("redis-server 7 1\n\tnot a frame line\n")

    def test_a_symbol_holding_a_semicolon_stays_one_frame(self):
        # Issue 78, row 8: "operator;" or a template's argument list split into frames that do not exist.
        text = ("redis-server  7 9973000 \n"
                "\t    7f0000000010 std::vector<int; x>::push_back (/usr/lib/libstdc++.so.6)\n"
                "\t    55555555a000 main (/opt/redis-server)\n\n")
        stacks = perfrecord.collapse(text)
        self.assertEqual(stacks, {("main", "std::vector<int: x>::push_back"): 1})
        self.assertEqual(perfrecord.collapsed_text(stacks), "main;std::vector<int: x>::push_back 1\n")

    def test_collapsed_text_is_heaviest_first_and_parses_back(self):
        text = perfrecord.collapsed_text({("main", "a"): 1, ("main", "b"): 3})
        self.assertEqual(text, "main;b 3\nmain;a 1\n")


class EventsTest(unittest.TestCase):
    def test_only_cpu_is_asked_of_perf(self):
        perfrecord.check_events(("cpu",))
        with self.assertRaisesRegex(perfrecord.PerfError, "wall are the JVM agent's"):
            perfrecord.check_events(("cpu", "wall"))

    def test_the_recording_samples_the_process_every_interval_of_cpu(self):
        argv = perfrecord.record_argv("/usr/bin/perf", "/w/perf.data", 9973, "{pid:server}")
        self.assertEqual(argv[argv.index("-c") + 1], "9973000")  # nanoseconds of cpu-clock a sample
        self.assertEqual(argv[-2:], ["-p", "{pid:server}"])


@unittest.skipUnless(perfrecord.binary(), "perf is not installed on this host")
class HostTest(unittest.TestCase):
    def test_perf_is_probed_and_a_missing_one_is_named(self):
        self.assertRegex(perfrecord.problem(None), "perf is not installed on this host")
        self.assertRegex(perfrecord.problem("/nonexistent/perf"), "^perf: .*No such file")
        why = perfrecord.problem(perfrecord.binary())
        if why:
            self.skipTest(why)  # the probe's answer is the reason a native cell's profile is missing here
        with tempfile.TemporaryDirectory() as folder:
            data = os.path.join(folder, "perf.data")
            # A busy child, recorded as the runner records a server: attached by pid, stopped by SIGTERM.
            busy = subprocess.Popen(["python3", "-c", "while True: sum(range(1000))"])
            try:
                recorder = subprocess.Popen(perfrecord.record_argv(perfrecord.binary(), data, 997, busy.pid))
                try:
                    recorder.wait(timeout=1.5)
                except subprocess.TimeoutExpired:
                    recorder.terminate()
                    recorder.wait(timeout=30)
            finally:
                busy.kill()
                busy.wait()
            out, script = perfrecord.convert(perfrecord.binary(), data, os.path.join(folder, "cpu.collapsed"))
            self.assertTrue(os.path.exists(script))
            lines = safeio.read_text(out).splitlines()
            counted = sum(int(line.rpartition(" ")[2]) for line in lines)
            # ~1.5 s of a busy thread at a sample every ~1 ms of CPU: hundreds, not a handful.
            self.assertGreater(counted, 300, lines[:5])
            truncated = os.path.join(folder, "truncated.data")
            with open(data, "rb") as f:
                safeio.write_bytes(truncated, f.read(512))
            with self.assertRaisesRegex(perfrecord.PerfError, "perf script could not read truncated.data"):
                perfrecord.convert(perfrecord.binary(), truncated, os.path.join(folder, "t.collapsed"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
