"""Runs the doctor on this host (as `bazel run //tools:doctor -- --json` does) and checks the report
against what Python itself can see; the capability logic is tested on fixtures in rigs/host/testdata."""

import json
import os
import subprocess
import sys
import unittest

DOCTOR = sys.argv.pop(1)


class DoctorTest(unittest.TestCase):
    def test_json_report(self):
        out = os.path.join(os.environ["TEST_TMPDIR"], "doctor.json")
        subprocess.run([DOCTOR, "--no-gc-probes", "--json", out], check=True, timeout=300,
                       env=dict(os.environ, BUILD_WORKING_DIRECTORY="/"))
        with open(out) as f:
            report = json.load(f)
        self.assertEqual(report["schema"], "tunelab.doctor/1")
        self.assertEqual(report["cpu"]["logical_cpus"], os.cpu_count())
        node_cpus = sum(len(_cpus(n["cpus"])) for n in report["numa"]["nodes"])
        self.assertEqual(node_cpus, os.cpu_count())
        for name, cap in report["capabilities"].items():
            self.assertIsInstance(cap["available"], bool, name)
            self.assertTrue(cap["evidence"], name)
        pinned = {j["name"]: j for j in report["jdks"] if j["source"] == "pinned"}
        self.assertEqual({n: pinned[n]["major"] for n in pinned}, {"jdk11": 11, "jdk17": 17, "jdk21": 21})

    def test_bad_flag_is_a_clear_error(self):
        proc = subprocess.run([DOCTOR, "--jdk", "no-equals-sign", "--no-gc-probes"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=300)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("NAME=PATH", proc.stderr)


def _cpus(text):
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


if __name__ == "__main__":
    unittest.main()
