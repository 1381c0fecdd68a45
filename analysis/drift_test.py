"""Host drift between two result sets, on two recorded sets (analysis/testdata/drift/, see its README):
real runs of the calibration matrix on this project's machine, the second with the host loaded by two
competing CPU spinners, so its host reference reads slower. (What the gate does with them: tools/gate/gate_test.py.)"""

import copy
import os
import unittest

from analysis import drift, resultsets

HERE = os.path.join(os.path.dirname(__file__), "testdata", "drift")


def recorded(name):
    return resultsets.load_run(os.path.join(HERE, name), name=name)


class DriftTest(unittest.TestCase):
    def test_the_loaded_host_drifted_by_more_than_its_noise(self):
        quiet, loaded = recorded("quiet"), recorded("loaded")
        checks = {c.metric: c for c in drift.checks(quiet, loaded)}
        cpu = checks["cpu_loop_rate"]
        self.assertTrue(cpu.drifted, drift.describe(cpu))
        self.assertLess(cpu.change, -drift.DRIFT_FLOOR)
        self.assertGreaterEqual(cpu.threshold, drift.DRIFT_FLOOR)
        # A set against itself never drifts.
        self.assertFalse(any(c.drifted for c in drift.checks(quiet, quiet)))

    def test_sets_without_a_reference_give_no_verdict_and_say_so(self):
        quiet = recorded("quiet")
        bare = resultsets.ResultSet("bare", "", {}, [copy.deepcopy(d) for d in quiet.docs])
        for d in bare.docs:
            d["provenance"].pop("host_reference", None)
        self.assertEqual(drift.checks(quiet, bare), [])
        self.assertIn("no host reference in bare", " ".join(drift.context_warnings(quiet, bare)))

    def test_other_days_are_said_loudly(self):
        quiet = recorded("quiet")
        later = copy.deepcopy(quiet)
        for d in later.docs:
            d["started_at"] = "2026-11-25T03:00:00.000+00:00"
        warnings = drift.context_warnings(quiet, later)
        self.assertTrue(any("measured on different days" in w for w in warnings), warnings)


if __name__ == "__main__":
    unittest.main()
