"""The sequential calibration benchmark's arithmetic on synthetic sets (analysis/testsets.py: real documents,
chosen values; mechanics, not measurements): a clear slowdown is caught at the first look by both designs,
the sequential one in 3 rounds instead of 5; an A/A pair is never flagged."""

import os
import tempfile
import unittest

from analysis.testsets import write_set
from tools import sequential_calibration as calibration


class SequentialCalibrationTest(unittest.TestCase):
    def test_rates_and_rounds_of_both_designs(self):
        with tempfile.TemporaryDirectory() as baselines:
            write_set(os.path.join(baselines, "aa"), [({"arm": "a"}, 1000.0), ({"arm": "b"}, 1000.0)], runs=12,
                      noise=0.003, seed=1)
            write_set(os.path.join(baselines, "slow"), [({"injected_slowdown_pct": "0"}, 1000.0),
                                                        ({"injected_slowdown_pct": "20"}, 800.0)], runs=12,
                      noise=0.003, seed=2)
            study = ("calibration", "cpu_loop_rate", "aa", "arm", "slow", "injected_slowdown_pct", ("0", "20"))
            result = calibration.calibrate(study, baselines, draws=200, low=3, high=8, seed=1)
        fixed, sequential = result["fixed"], result["sequential"]
        self.assertEqual((fixed["mean_rounds"], fixed["p95_rounds"]), (5.0, 5.0))
        self.assertEqual((fixed["false_alarm_rate"], fixed["detection_rate"]), (0.0, 1.0))
        self.assertEqual((sequential["false_alarm_rate"], sequential["detection_rate"]), (0.0, 1.0))
        # 0.3 % noise against a 3 % minimum effect and a 20 % slowdown: both decided at the first look.
        self.assertEqual((sequential["a_a_mean_rounds"], sequential["slowdown_mean_rounds"]), (3.0, 3.0))
        self.assertAlmostEqual(result["rounds_saved"], 0.4)
        self.assertTrue(result["meets_targets"])
        self.assertEqual((result["a_a"]["rounds"], result["slowdown"]["rounds"]), (12, 12))
        self.assertAlmostEqual(result["slowdown"]["median_change"], -0.2, delta=0.01)

    def test_arms_must_be_two(self):
        with tempfile.TemporaryDirectory() as baselines:
            s = write_set(os.path.join(baselines, "one"), [({"arm": "a"}, 1000.0)], runs=3)
            with self.assertRaisesRegex(ValueError, "expected two arms on arm"):
                calibration.arm_medians(s, "arm", "cpu_loop_rate")


if __name__ == "__main__":
    unittest.main()
