"""Known-answer tests for the statistics (answers worked out by hand, see each comment)."""

import math
import unittest

from analysis import stats


def runs(*levels, n=5, step=0.1):
    """Runs of n per-second samples each, around the given levels."""
    return [[level + k * step for k in range(n)] for level in levels]


class SummaryTest(unittest.TestCase):
    def test_a_cell_is_the_median_of_its_run_medians(self):
        s = stats.summarize([[1.0, 2.0, 3.0], [10.0], [4.0, 5.0, 100.0]])
        # Run medians 2, 10, 5 -> cell value 5 (the 100 inside run 3 moves nothing).
        self.assertEqual((s.median, s.run_medians, s.runs, s.samples), (5.0, [2.0, 10.0, 5.0], 3, 7))
        self.assertTrue(s.has_ci)

    def test_constant_runs_have_a_point_interval_and_no_warnings(self):
        s = stats.summarize([[500.0] * 20] * 3)
        self.assertEqual((s.median, s.ci_low, s.ci_high, s.cv), (500.0, 500.0, 500.0, 0.0))
        self.assertEqual(s.warnings, [])

    def test_fewer_than_three_runs_have_no_interval(self):
        # Many per-second samples in one run are still one run: no interval, however many samples.
        s = stats.summarize([[100.0 + k for k in range(60)]])
        self.assertFalse(s.has_ci)
        self.assertIn("1 run(s): no confidence interval", s.warnings[0])
        with self.assertRaises(ValueError):
            stats.summarize([[], []])

    def test_instability_between_and_within_runs_is_flagged(self):
        s = stats.summarize([[100.0, 100.0], [150.0, 150.0], [100.0, 100.0]])
        self.assertTrue(any("between runs" in w for w in s.warnings))
        s = stats.summarize([[50.0, 150.0], [50.0, 150.0], [50.0, 150.0]])
        self.assertTrue(any("within a run" in w for w in s.warnings), s.warnings)
        self.assertEqual(s.ci_low, s.ci_high)  # the run medians agree exactly

    def test_bootstrap_interval_covers_the_median_and_is_reproducible(self):
        values = [98, 99, 100, 101, 102, 100, 99, 101, 100, 100]
        lo, hi = stats.bootstrap_median_ci(values)
        self.assertTrue(98 <= lo <= 100 <= hi <= 102, (lo, hi))
        self.assertEqual((lo, hi), stats.bootstrap_median_ci(values))

    def test_run_to_run_spread_shows_in_the_interval(self):
        # Three runs, each steady inside but at different levels: the interval spans the run medians'
        # spread, which 30 near-identical per-second samples would hide.
        s = stats.summarize(runs(100.0, 105.0, 110.0, n=10, step=0.01))
        self.assertGreater(s.ci_high - s.ci_low, 4.0)


class CompareTest(unittest.TestCase):
    def test_welch_on_run_medians_known_answer(self):
        # Run medians 1,2,3 vs 4,5,6: t = -3 / sqrt(1/3 + 1/3) = -3.674, Welch df = 4, two-sided p = 0.02131.
        c = stats.compare([[0.5, 1.0, 1.5], [2.0], [3.0, 3.0]], [[4.0], [5.0], [6.0, 6.0, 6.0]])
        self.assertAlmostEqual(c.p_value, 0.021311641128756727, places=12)
        self.assertEqual((c.baseline_median, c.candidate_median, c.ratio), (2.0, 5.0, 2.5))
        self.assertEqual((c.n_baseline, c.n_candidate), (3, 3))

    def test_identical_constants_are_not_significant(self):
        c = stats.compare([[500.0] * 10] * 3, [[500.0] * 10] * 3)
        self.assertEqual((c.ratio, c.p_value, c.ratio_ci_low, c.ratio_ci_high), (1.0, 1.0, 1.0, 1.0))
        self.assertEqual(c.verdict("higher_is_better"), "not significant")

    def test_a_ten_percent_shift_over_five_runs_is_detected_and_its_ci_excludes_one(self):
        base = runs(100.0, 101.0, 99.0, 100.5, 99.5)
        cand = [[x * 1.10 for x in r] for r in base]
        c = stats.compare(base, cand)
        self.assertLess(c.p_value, 0.001)
        self.assertAlmostEqual(c.ratio, 1.10, places=9)
        self.assertTrue(1.0 < c.ratio_ci_low <= 1.10 <= c.ratio_ci_high, (c.ratio_ci_low, c.ratio_ci_high))
        self.assertEqual(c.verdict("higher_is_better"), "better")
        self.assertEqual(c.verdict("lower_is_better"), "worse")

    def test_one_run_a_side_has_no_test_however_many_samples(self):
        # 60 per-second samples a side, completely separated: still one run a side, so no p-value.
        c = stats.compare([[100.0 + 0.01 * k for k in range(60)]], [[200.0 + 0.01 * k for k in range(60)]])
        self.assertTrue(math.isnan(c.p_value) and math.isnan(c.ratio_ci_low))
        self.assertEqual(c.verdict("higher_is_better"), "1 run a side: no test")
        self.assertFalse(c.significant())
        c = stats.compare(runs(1.0, 2.0), runs(1.0, 2.0, 3.0))
        self.assertEqual(c.verdict("higher_is_better"), "2 vs 3 runs: no test")

    def test_zero_baseline_is_refused(self):
        with self.assertRaisesRegex(ValueError, "baseline median is 0"):
            stats.compare([[0.0], [0.0], [0.0]], [[1.0], [2.0], [3.0]])


class DifferenceTest(unittest.TestCase):
    def test_a_count_from_zero_is_a_difference_with_an_interval_over_runs(self):
        # Stock advises 0 in every run, the old shuffle 89, 90, 91, 90, 89: medians 0 and 90, difference +90;
        # any resample of the candidate's runs has a median in 89..91, so the interval lies in +89..+91.
        d = stats.difference([[0.0]] * 5, [[89.0], [90.0], [91.0], [90.0], [89.0]])
        self.assertEqual((d.baseline_median, d.candidate_median, d.difference), (0.0, 90.0, 90.0))
        self.assertTrue(89.0 <= d.ci_low <= 90.0 <= d.ci_high <= 91.0, d)
        self.assertEqual(stats.difference([[0.0]] * 5, [[89.0], [90.0], [91.0], [90.0], [89.0]]), d)  # seeded
        # A ratio is undefined there; compare() says so.
        with self.assertRaisesRegex(ValueError, "ratio is undefined"):
            stats.compare([[0.0]] * 5, [[90.0]] * 5)

    def test_fewer_than_three_runs_a_side_have_no_interval(self):
        d = stats.difference([[66.0], [67.0]], [[0.0], [0.0], [0.0]])
        self.assertEqual(d.difference, -66.5)
        self.assertFalse(d.has_ci)


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





class EffectTextTest(unittest.TestCase):
    def test_a_minimum_effect_is_printed_to_its_own_precision(self):
        # Issue 38's instruction counts are gated at 0.5 %: printed without decimals it read "±0%".
        self.assertEqual([stats.fmt_effect(x) for x in (0.05, 0.005, 0.119, 0.0123456, 0.03)],
                         ["5%", "0.5%", "11.9%", "1.23%", "3%"])


class NonFiniteValues(unittest.TestCase):
    """Issue 78, row 8: a NaN or inf value is left out by the rules, never carried into an interval or raised raw."""

    def test_they_are_left_out(self):
        nan, inf = float("nan"), float("inf")
        self.assertEqual(stats.bootstrap_median_ci([1.0, 2.0, 3.0, nan, inf]), stats.bootstrap_median_ci([1.0, 2.0, 3.0]))
        clean = stats.paired_evidence({0: 1.0, 1: 2.0, 2: 3.0}, {0: 1.1, 1: 2.2, 2: 3.3}, "higher_is_better")
        dirty = stats.paired_evidence({0: 1.0, 1: 2.0, 2: 3.0, 3: inf, 4: nan, 5: "x"},
                                      {0: 1.1, 1: 2.2, 2: 3.3, 3: 1.0, 4: 1.0, 5: 1.0}, "higher_is_better")
        self.assertEqual(clean, dirty)
        self.assertEqual(stats.unpaired_evidence([1.0, 2.0, inf, nan], [1.5, 2.5, -inf], "higher_is_better"),
                         stats.unpaired_evidence([1.0, 2.0], [1.5, 2.5], "higher_is_better"))


if __name__ == "__main__":
    unittest.main()
