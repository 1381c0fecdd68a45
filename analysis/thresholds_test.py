"""Minimum effects from gate.toml (analysis/thresholds.py): the workload's, and a profile's own where its runs are
asked another (issue 79: the gated nightly asks what it can decide in its budget); malformed tables refused."""

import os
import re
import tempfile
import unittest

from analysis import thresholds

WORKSPACE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def doc(workload, profile):
    return {"provenance": {"workload": {"id": workload}}, "matrix": {"profile": profile}}


class GateTomlTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, text):
        path = os.path.join(self.tmp.name, "gate.toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_a_profile_asks_its_own_effect_over_the_workloads(self):
        path = self.write("[min_effect]\nrate = 0.05\ncpu = 0.03\n[profile_min_effect.nightly]\nrate = 0.15\n")
        self.assertEqual(thresholds.read_gate_toml(path), {"rate": 0.05, "cpu": 0.03})
        self.assertEqual(thresholds.read_gate_toml(path, "steady"), {"rate": 0.05, "cpu": 0.03})
        self.assertEqual(thresholds.read_gate_toml(path, "nightly"), {"rate": 0.15, "cpu": 0.03})

    def test_malformed_profile_tables_are_refused_with_the_place(self):
        for text, said in (("[min_effect]\nrate = 0.05\n[profile_min_effect.nightly]\nother = 0.1\n",
                            "profile_min_effect.nightly.other: not a metric [min_effect] names"),
                           ("[min_effect]\nrate = 0.05\n[profile_min_effect.nightly]\nrate = 1.5\n",
                            "profile_min_effect.nightly.rate = 1.5: expected a fraction between 0 and 1"),
                           ("[min_effect]\nrate = 0.05\n[profile_min_effect]\nnightly = 0.1\n",
                            "expected [profile_min_effect.<profile>] tables")):
            with self.subTest(said=said), self.assertRaisesRegex(thresholds.ThresholdError, re.escape(said)):
                thresholds.read_gate_toml(self.write(text), "nightly")

    def test_documents_of_one_profile_read_its_effect(self):
        # The committed YARN gate.toml: studies at 5 %, the gated nightly at what it can decide.
        nightly = thresholds.min_effects([WORKSPACE], [doc("yarn_cps/v1", "nightly")] * 2)
        steady = thresholds.min_effects([WORKSPACE], [doc("yarn_cps/v1", "steady")])
        mixed = thresholds.min_effects([WORKSPACE], [doc("yarn_cps/v1", "nightly"), doc("yarn_cps/v1", "steady")])
        self.assertGreater(nightly["container_allocation_rate"], steady["container_allocation_rate"])
        self.assertEqual(steady["container_allocation_rate"], 0.05)
        self.assertEqual(mixed, steady)  # documents of several profiles: the workload's own


if __name__ == "__main__":
    unittest.main()
