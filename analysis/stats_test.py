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
    """The one rule (issue 82): the interval shown is the one the words come from."""

    def test_welch_on_log_run_medians_known_answer(self):
        # Run medians 1,2,3 vs 4,5,6, measured apart: Welch's t on their logs. By hand: means 0.597253 and
        # 1.595831, variances 0.308634 and 0.041239 (ddof 1), se = sqrt((0.308634 + 0.041239) / 3) = 0.341503,
        # t = 0.998578 / 0.341503 = 2.924064, Welch df = 0.116624^2 / (0.102878^2 / 2 + 0.013746^2 / 2) = 2.5251.
        c = stats.compare([[0.5, 1.0, 1.5], [2.0], [3.0, 3.0]], [[4.0], [5.0], [6.0, 6.0, 6.0]])
        self.assertFalse(c.paired)
        self.assertAlmostEqual(c.estimate, math.log(120) / 3 - math.log(6) / 3, places=12)  # log(4*5*6)/3 - log(1*2*3)/3
        self.assertAlmostEqual(c.se, 0.341503, places=5)
        self.assertAlmostEqual(c.df, 2.5251, places=3)
        self.assertEqual((c.baseline_median, c.candidate_median, c.n_baseline, c.n_candidate), (2.0, 5.0, 3, 3))
        self.assertAlmostEqual(c.ratio, (120 / 6) ** (1 / 3), places=12)  # the geometric mean ratio: 2.714
        # The interval: estimate -+ t(0.99, 2.5251) se, t = 5.2995 there: exp(0.998578 -+ 1.809790) = 0.4443..16.583.
        self.assertAlmostEqual(c.ratio_ci_low, 0.444322, places=5)
        self.assertAlmostEqual(c.ratio_ci_high, 16.5827, places=3)
        self.assertEqual(c.level, 0.98)
        self.assertEqual(c.verdict("higher_is_better", min_effect=0.05), "undecided")
        self.assertTrue(c.ratio_ci_low < c.ratio < c.ratio_ci_high)

    def test_pairing_cancels_the_drift_between_rounds(self):
        # Three interleaved rounds on a host that speeds up 100 -> 150 -> 200; the candidate is 10 % faster in
        # every round. Paired, each round's ratio is exactly 1.10: a point interval, better beyond 5 %. The same
        # values measured apart: the drift is the noise, and the interval spans 0.
        base, cand = [[100.0], [150.0], [200.0]], [[110.0], [165.0], [220.0]]
        paired = stats.compare(base, cand, rounds=([0, 1, 2], [0, 1, 2]))
        self.assertTrue(paired.paired and paired.n_pairs == 3 and paired.tested)
        self.assertAlmostEqual(paired.ratio_ci_low, 1.10, places=12)
        self.assertAlmostEqual(paired.ratio_ci_high, 1.10, places=12)
        self.assertEqual(paired.verdict("higher_is_better", min_effect=0.05), "better")
        self.assertEqual(paired.verdict("lower_is_better", min_effect=0.05), "worse")
        self.assertEqual(paired.verdict("higher_is_better", min_effect=0.20), "within ±20%")
        apart = stats.compare(base, cand)
        self.assertTrue(apart.ratio_ci_low < 1 < apart.ratio_ci_high, (apart.ratio_ci_low, apart.ratio_ci_high))
        self.assertEqual(apart.verdict("higher_is_better", min_effect=0.05), "undecided")

    def test_paired_known_answer(self):
        # Round ratios e^0.05, e^0.10, e^0.15: mean 0.10, sd 0.05, se 0.05 / sqrt(3) = 0.0288675; t(0.99, 2) =
        # 6.964557, so the 98 % interval is 0.10 +- 0.201049: exp(-0.101049)..exp(0.301049) = 0.903888..1.351276.
        base = [[100.0], [100.0], [100.0]]
        cand = [[100 * math.exp(x)] for x in (0.05, 0.10, 0.15)]
        c = stats.compare(base, cand, rounds=([4, 5, 6], [4, 5, 6]))
        self.assertAlmostEqual(c.ratio_ci_low, 0.903888, places=5)
        self.assertAlmostEqual(c.ratio_ci_high, 1.351276, places=5)
        self.assertAlmostEqual(c.ratio, math.exp(0.10), places=12)
        self.assertEqual(c.verdict("lower_is_better", min_effect=0.05), "undecided")
        # Rounds pair by index: the candidate's round 6 missing leaves 2 pairs, no test however many runs.
        short = stats.compare(base, cand[:2] + [[1.0]], rounds=([4, 5, 6], [4, 5, 9]))
        self.assertEqual(short.verdict("lower_is_better"), "2 paired rounds: no test")

    def test_an_interval_wholly_beyond_the_minimum_effect_is_never_undecided(self):
        # Issue 82's NameNode fsync study read "undecided: -35.2 % (CI -44.3..-16.7 %), wider than ±5 %".
        base = [[1000.0], [1000.0], [1000.0], [1000.0]]
        cand = [[1000.0 * r] for r in (0.60, 0.66, 0.70, 0.64)]
        c = stats.compare(base, cand, rounds=([0, 1, 2, 3], [0, 1, 2, 3]))
        self.assertLess(c.ratio_ci_high, 0.95)
        self.assertEqual(c.verdict("higher_is_better", min_effect=0.05), "worse")

    def test_identical_constants_are_no_change(self):
        c = stats.compare([[500.0] * 10] * 3, [[500.0] * 10] * 3)
        self.assertEqual((c.ratio, c.p_value, c.ratio_ci_low, c.ratio_ci_high), (1.0, 1.0, 1.0, 1.0))
        self.assertEqual(c.verdict("higher_is_better"), "no change")
        self.assertEqual(c.verdict("higher_is_better", min_effect=0.05), "within ±5%")

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

    def test_a_value_at_or_below_zero_has_no_log_ratio(self):
        c = stats.compare([[1.0], [2.0], [3.0]], [[-1.0], [2.0], [3.0]])
        self.assertEqual(c.verdict("higher_is_better"), "a run value <= 0: no log ratio, no test")
        self.assertEqual(c.ratio, 1.0)  # the medians' ratio, with no interval

    def test_zero_baseline_is_refused(self):
        with self.assertRaisesRegex(ValueError, "baseline median is 0"):
            stats.compare([[0.0], [0.0], [0.0]], [[1.0], [2.0], [3.0]])


class FamilyTest(unittest.TestCase):
    def test_bonferroni_splits_the_interval_over_the_tested_comparisons(self):
        base = [[100.0], [100.0], [100.0]]
        cands = [[[100 * math.exp(x)] for x in (0.05, 0.10, 0.15)] for _ in range(4)]
        family = [stats.compare(base, c, rounds=([0, 1, 2], [0, 1, 2])) for c in cands]
        family.append(stats.compare(base[:1], cands[0][:1]))  # no test: not counted
        single_low = family[0].ratio_ci_low
        stats.adjust(family)
        self.assertEqual([c.family for c in family], [4] * 5)
        self.assertAlmostEqual(family[0].level, 1 - 0.02 / 4, places=12)
        self.assertLess(family[0].ratio_ci_low, single_low)
        # p times the family is below 2 alpha exactly when the interval excludes 1.
        for c in family[:4]:
            self.assertEqual(c.p_adjusted < 2 * stats.GATE_ALPHA / 1, c.significant())


class DecisionWordsTest(unittest.TestCase):
    """The words and the gate's three-way rule are one reading of one interval."""
    M = math.log(1.05)

    def words(self, low, high):
        return stats.decision_words(low, high, self.M, -self.M, 0.05)

    def test_each_shape(self):
        self.assertEqual(self.words(-0.01, 0.02), "within ±5%")
        self.assertEqual(self.words(0.001, 0.20), "worse")
        self.assertEqual(self.words(0.06, 0.20), "worse")
        self.assertEqual(self.words(-0.20, -0.06), "better")
        self.assertEqual(self.words(-0.20, 0.02), "not worse by 5%")
        self.assertEqual(self.words(-0.02, 0.20), "undecided")
        self.assertEqual(self.words(0.0, 0.0), "within ±5%")
        self.assertEqual(stats.decision_words(0.0, 0.0, 0.0, 0.0, 0.0), "no change")

    def test_the_gate_reads_the_same_interval(self):
        t = float(stats.sps.t.ppf(1 - stats.GATE_ALPHA, 4))
        grid = [x / 100 for x in range(-30, 31, 3)]
        for low in grid:
            for high in grid:
                if high < low:
                    continue
                estimate, se = (low + high) / 2, (high - low) / 2 / t
                code = int(stats.three_way(estimate, se, 4, self.M))
                gate = {stats.PASS_CODE: "PASS", stats.REGRESSED_CODE: "REGRESSED",
                        stats.INCONCLUSIVE_CODE: "INCONCLUSIVE"}[code]
                self.assertEqual(stats.gate_state(self.words(low, high)), gate, (low, high))


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
