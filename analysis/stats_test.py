"""Known-answer tests for the statistics (answers worked out by hand, see each comment)."""

import math
import unittest

from analysis import stats


class SummaryTest(unittest.TestCase):
    def test_constant_values_have_a_point_interval_and_no_warnings(self):
        s = stats.summarize([500.0] * 20)
        self.assertEqual((s.median, s.ci_low, s.ci_high, s.cv), (500.0, 500.0, 500.0, 0.0))
        self.assertEqual(s.warnings, [])

    def test_outlier_and_instability_are_flagged(self):
        s = stats.summarize([1, 2, 3, 4, 100])
        # Q1=2, Q3=4, IQR=2: the upper fence is 7, so 100 is the one outlier; the mean is 22 and the CV ~2.
        self.assertEqual((s.median, s.mean, s.outliers), (3.0, 22.0, 1))
        self.assertTrue(any("unstable" in w for w in s.warnings))
        self.assertTrue(any("outlier" in w for w in s.warnings))

    def test_too_few_samples_say_so(self):
        s = stats.summarize([10.0, 12.0])
        self.assertEqual((s.ci_low, s.ci_high), (10.0, 12.0))
        self.assertIn("only 2 sample(s)", s.warnings[0])
        with self.assertRaises(ValueError):
            stats.summarize([])

    def test_bootstrap_interval_covers_the_median_and_is_reproducible(self):
        values = [98, 99, 100, 101, 102, 100, 99, 101, 100, 100]
        lo, hi = stats.bootstrap_median_ci(values)
        self.assertTrue(98 <= lo <= 100 <= hi <= 102, (lo, hi))
        self.assertEqual((lo, hi), stats.bootstrap_median_ci(values))


class CompareTest(unittest.TestCase):
    def test_complete_separation_exact_p(self):
        # Five vs five, every candidate above every baseline: exact two-sided p = 2 / C(10, 5) = 2/252.
        c = stats.compare([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
        self.assertAlmostEqual(c.p_value, 2 / 252, places=12)
        self.assertEqual((c.baseline_median, c.candidate_median, c.ratio), (3.0, 8.0, 8 / 3))
        self.assertEqual(c.verdict("higher_is_better"), "better")
        self.assertEqual(c.verdict("lower_is_better"), "worse")

    def test_identical_constants_are_not_significant(self):
        c = stats.compare([500.0] * 10, [500.0] * 10)
        self.assertEqual((c.ratio, c.p_value, c.ratio_ci_low, c.ratio_ci_high), (1.0, 1.0, 1.0, 1.0))
        self.assertEqual(c.verdict("higher_is_better"), "not significant")

    def test_a_ten_percent_shift_with_noise_is_detected_and_its_ci_excludes_one(self):
        base = [100, 101, 99, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100]
        cand = [x * 1.10 for x in base]
        c = stats.compare(base, cand)
        self.assertLess(c.p_value, 0.001)
        self.assertAlmostEqual(c.ratio, 1.10, places=9)
        self.assertTrue(1.0 < c.ratio_ci_low <= 1.10 <= c.ratio_ci_high, (c.ratio_ci_low, c.ratio_ci_high))
        self.assertAlmostEqual(c.change, 0.10, places=9)

    def test_single_values_have_no_p_value(self):
        c = stats.compare([100.0], [110.0])
        self.assertTrue(math.isnan(c.p_value))
        self.assertEqual(c.verdict("higher_is_better"), "not significant")

    def test_zero_baseline_is_refused(self):
        with self.assertRaisesRegex(ValueError, "baseline median is 0"):
            stats.compare([0, 0, 0], [1, 2, 3])


class HolmTest(unittest.TestCase):
    def test_known_answer(self):
        # Sorted: 0.005 x4 = 0.02; 0.01 x3 = 0.03; 0.03 x2 = 0.06; 0.04 x1 = 0.04 -> raised to 0.06 (monotone).
        adjusted = stats.holm([0.01, 0.04, 0.03, 0.005])
        for got, want in zip(adjusted, [0.03, 0.06, 0.06, 0.02]):
            self.assertAlmostEqual(got, want, places=12)

    def test_nan_is_kept_and_not_counted(self):
        adjusted = stats.holm([0.01, float("nan"), 0.02])
        self.assertTrue(math.isnan(adjusted[1]))
        self.assertAlmostEqual(adjusted[0], 0.02)
        self.assertAlmostEqual(adjusted[2], 0.02)

    def test_capped_at_one(self):
        self.assertEqual(stats.holm([0.6, 0.7]), [1.0, 1.0])



class ClusterBootstrapTest(unittest.TestCase):
    def test_run_to_run_spread_widens_the_interval(self):
        # Three runs, each steady inside but at different levels: resampling runs must show the spread
        # that resampling single samples of 30 near-identical values would hide.
        groups = [[100.0 + 0.01 * k for k in range(10)], [105.0 + 0.01 * k for k in range(10)],
                  [110.0 + 0.01 * k for k in range(10)]]
        values = [x for g in groups for x in g]
        lo_runs, hi_runs = stats.bootstrap_median_ci(values, groups)
        lo_flat, hi_flat = stats.bootstrap_median_ci(values)
        self.assertGreater(hi_runs - lo_runs, 4.0)
        self.assertLess(hi_flat - lo_flat, hi_runs - lo_runs)


if __name__ == "__main__":
    unittest.main()
