"""The host reference probe: its windows, and longer ones on an emulated host (whose copy passes are slower
than a window)."""

import json
import subprocess
import unittest

from rigs.host import host_reference


def fake_probe(calls):
    def run(argv, stdout=None, stderr=None, text=None, timeout=None):
        calls.append((argv, timeout))
        metric = "cpu_loop_rate" if argv[argv.index("--mode") + 1] == "cpu" else "memory_copy_rate"
        lines = [json.dumps({"metric": metric, "phase": "measure", "value": v}) for v in (10.0, 12.0, 11.0)]
        return subprocess.CompletedProcess(argv, 0, "\n".join(lines) + "\n", "")
    return run


class HostReferenceTest(unittest.TestCase):
    def test_windows_and_their_scale_on_an_emulated_host(self):
        calls = []
        out = host_reference.measure("java", "probe.jar", "before", runner=fake_probe(calls))
        self.assertEqual([(m["metric"], m["median"]) for m in out], [("cpu_loop_rate", 11.0), ("memory_copy_rate", 11.0)])
        self.assertEqual([a[a.index("--measure-s") + 1] for a, _ in calls], ["3", "3"])
        calls.clear()
        host_reference.measure("java", "probe.jar", "before", runner=fake_probe(calls), window_scale=5)
        self.assertEqual([(a[a.index("--warmup-s") + 1], a[a.index("--measure-s") + 1], t) for a, t in calls],
                         [("5", "15", 300), ("5", "15", 300)])
        self.assertEqual(host_reference.window_scale({"cpu": {"emulated": True}}), host_reference.EMULATED_WINDOW_SCALE)
        self.assertEqual(host_reference.window_scale({"cpu": {"emulated": False}}), 1)
        self.assertIn("windows x5 (emulated host)", host_reference.probe_text(5))
        self.assertEqual(host_reference.probe_text(1), host_reference.PROBE)

    def test_no_rate_is_an_error_naming_the_step(self):
        def silent(argv, **kwargs):
            return subprocess.CompletedProcess(argv, 0, "", "")
        with self.assertRaisesRegex(host_reference.ProbeError, r"probe \(cpu\) exited 0 with no rate"):
            host_reference.measure("java", "probe.jar", "after", runner=silent)


if __name__ == "__main__":
    unittest.main()
