"""Known-answer tests of the sequential stopping rule (analysis/sequential.py), and a simulation that its
error rate holds over many looks. Every input here is synthetic (seeded draws or exact values)."""

import math
import unittest

import numpy as np
from scipy import stats as sps

from analysis import sequential


def log_pairs(ratios):
    return [math.log(r) for r in ratios]


class StoppingRuleTest(unittest.TestCase):
    def test_a_huge_effect_stops_at_min(self):
        # One core taken away: -36 % with a few percent of noise.
        pairs = log_pairs([0.63, 0.65, 0.64, 0.62, 0.66])
        stop = sequential.replay({r: 100.0 for r in range(5)}, {r: 100 * x for r, x in enumerate(
            [0.63, 0.65, 0.64, 0.62, 0.66])}, 5, 0.05, 3, 12)
        self.assertEqual((stop.state, stop.rounds, stop.pairs), (sequential.DIFFERENT, 3, 3))
        self.assertEqual(stop.reason(), "decided at round 3: different")
        self.assertLess(stop.ci_high, 0.95)
        self.assertAlmostEqual(stop.ratio, math.exp(np.mean(pairs[:3])))

    def test_identical_sides_stop_as_equivalent_at_min(self):
        same = {r: 8000.0 for r in range(12)}
        stop = sequential.replay(same, dict(same), 12, 0.05, 3, 12)
        self.assertEqual((stop.state, stop.rounds, stop.ratio), (sequential.EQUIVALENT, 3, 1.0))
        self.assertTrue(stop.final)

    def test_noise_runs_to_max_undecided(self):
        rng = np.random.default_rng(7)
        base = {r: 100.0 for r in range(8)}
        noisy = {r: 100.0 * math.exp(rng.normal(0, 0.2)) for r in range(8)}  # run CV ~20 %, minimum effect 5 %
        stop = sequential.replay(base, noisy, 8, 0.05, 3, 8)
        self.assertEqual((stop.state, stop.rounds, stop.final), (sequential.UNDECIDED, 8, True))
        self.assertEqual(stop.reason(), "max reached (8 rounds): undecided")

    def test_a_look_before_min_decides_nothing(self):
        look = sequential.look(log_pairs([0.5, 0.5]), 2, 0.05, 3, 12)
        self.assertEqual(look.state, sequential.UNDECIDED)
        self.assertFalse(look.final)
        self.assertTrue(math.isnan(look.ci_low))

    def test_rounds_a_side_missed_are_left_out(self):
        # Round 1 failed on the candidate: the look at round 3 has 2 pairs, so it cannot decide yet.
        base = {0: 100.0, 1: 100.0, 2: 100.0, 3: 100.0}
        cand = {0: 60.0, 2: 61.0, 3: 60.5}
        self.assertEqual(sequential.replay(base, cand, 3, 0.05, 3, 12).state, sequential.UNDECIDED)
        stop = sequential.replay(base, cand, 4, 0.05, 3, 12)
        self.assertEqual((stop.state, stop.rounds, stop.pairs), (sequential.DIFFERENT, 4, 3))

    def test_the_first_final_look_is_kept(self):
        # Equivalent at round 3; later rounds that drift away do not reopen it.
        base = {r: 100.0 for r in range(6)}
        cand = {0: 100.0, 1: 100.1, 2: 99.9, 3: 130.0, 4: 131.0, 5: 129.0}
        stop = sequential.replay(base, cand, 6, 0.05, 3, 6)
        self.assertEqual((stop.state, stop.rounds), (sequential.EQUIVALENT, 3))

    def test_the_family_widens_each_interval(self):
        pairs = log_pairs([1.01, 0.99, 1.02, 1.0])
        one = sequential.look(pairs, 4, 0.05, 3, 12, comparisons=1)
        ten = sequential.look(pairs, 4, 0.05, 3, 12, comparisons=10)
        self.assertLess(ten.ci_low, one.ci_low)
        self.assertGreater(ten.ci_high, one.ci_high)

    def test_bad_designs_are_refused(self):
        for low, high in ((2, 12), (5, 4)):
            with self.assertRaises(ValueError):
                sequential.look_levels(low, high)
        with self.assertRaises(ValueError):
            sequential.look([0.0] * 3, 3, 0.0, 3, 12)
        self.assertEqual(sequential.look_levels(5, 5, 0.05), {5: 0.05})


class ErrorRateTest(unittest.TestCase):
    """The repeated intervals of all looks cover the true change together with probability >= 1 - alpha."""

    def _miss_rate(self, levels, low, high, sequences=20000, seed=99):
        # A fresh seed (the levels were calibrated on another), normal log ratios around a true change.
        rng = np.random.default_rng(seed)
        true_change = math.log(0.97)
        x = true_change + 0.04 * rng.standard_normal((sequences, high))
        missed = np.zeros(sequences, dtype=bool)
        for n in range(low, high + 1):
            d = x[:, :n]
            half = sps.t.ppf(1 - levels[n] / 2, n - 1) * d.std(axis=1, ddof=1) / math.sqrt(n)
            missed |= np.abs(d.mean(axis=1) - true_change) > half
        return missed.mean()

    def test_the_error_rate_holds_over_ten_looks(self):
        levels = sequential.look_levels(3, 12, 0.05)
        rate = self._miss_rate(levels, 3, 12)
        # 20,000 sequences: the rate's standard error is ~0.0015.
        self.assertLess(rate, 0.05 + 0.005)
        self.assertGreater(rate, 0.05 - 0.01)  # not conservative to uselessness

    def test_naive_looks_would_break_it(self):
        """What the design prevents: a 95 % interval at each of ten looks misses far more often than 5 %."""
        naive = {n: 0.05 for n in range(3, 13)}
        self.assertGreater(self._miss_rate(naive, 3, 12), 0.10)

    def test_a_a_false_alarms_stay_under_alpha(self):
        rng = np.random.default_rng(5)
        alarms = 0
        for _ in range(1000):
            base = {r: 100.0 for r in range(12)}
            cand = {r: 100.0 * math.exp(rng.normal(0, 0.04)) for r in range(12)}
            # A minimum effect below the noise: "different" is an error every time it happens.
            alarms += sequential.replay(base, cand, 12, 0.01, 3, 12).state == sequential.DIFFERENT
        self.assertLessEqual(alarms / 1000, 0.05)


class GatedRuleTest(unittest.TestCase):
    """The nightlies' rule (issue 79): the gate's three-way rule at every look, stopping at PASS or REGRESSED,
    its error held over all looks; the simulation the gate states D with (gate_power.gated_states) is this very
    rule, and a budget stop recorded by the runner is replayed as such."""

    def test_a_quiet_a_a_passes_at_its_first_look_and_a_clear_regression_is_named(self):
        quiet = log_pairs([1.001, 0.999, 1.0005])
        look = sequential.gate_look(quiet, 3, 0.03, "higher_is_better", 3, 30)
        self.assertEqual((look.state, look.final, look.why), (sequential.PASS, True, "decided"))
        self.assertEqual(look.reason(), "decided at round 3: PASS")
        slower = log_pairs([0.80, 0.81, 0.79, 0.80])  # 20 % fewer ops/s
        look = sequential.gate_look(slower, 4, 0.03, "higher_is_better", 3, 30)
        self.assertEqual(look.state, sequential.REGRESSED)
        # The same ratios for a time (lower is better) are an improvement: a PASS.
        self.assertEqual(sequential.gate_look(slower, 4, 0.03, "lower_is_better", 3, 30).state, sequential.PASS)
        # Two-sided level of the look = twice its share a side (gate_levels).
        self.assertAlmostEqual(look.level, 2 * sequential.gate_levels(3, 30)[4])

    def test_an_open_look_keeps_measuring_until_max(self):
        noisy = log_pairs([1.08, 0.93, 1.05, 0.96])
        look = sequential.gate_look(noisy, 4, 0.03, "higher_is_better", 3, 30)
        self.assertEqual((look.state, look.final, look.why), (sequential.INCONCLUSIVE, False, "open"))
        self.assertEqual(look.reason(), "inconclusive after 4 rounds")
        at_max = sequential.gate_look(noisy, 30, 0.03, "higher_is_better", 3, 30)
        self.assertEqual((at_max.final, at_max.why), (True, "max"))

    def test_each_side_errs_at_most_gate_alpha_over_all_looks(self):
        from analysis import stats
        from analysis.gate import power as gate_power
        rng = np.random.default_rng(11)
        design = gate_power.Design(20, 3, 0.03, 1, sequential.GATED_RULE)
        margin = stats.worse_log(0.03, "higher_is_better")
        w = 0.02 * rng.standard_normal((20000, 20))
        codes, _ = gate_power.gated_states(w, design, margin)  # no true change: REGRESSED is an error
        self.assertLessEqual(np.mean(codes == gate_power.REGRESSED), stats.GATE_ALPHA + 0.002)
        codes, _ = gate_power.gated_states(w + margin, design, margin)  # a true change of the margin: PASS is one
        self.assertLessEqual(np.mean(codes == gate_power.PASS), stats.GATE_ALPHA + 0.002)
        # What the levels prevent: the fixed-count rule read at every look errs far more often.
        naive = np.zeros(len(w), bool)
        for k in range(3, 21):
            wk = w[:, :k] + margin
            naive |= stats.three_way(wk.mean(axis=1), wk.std(axis=1, ddof=1) / math.sqrt(k), k - 1, margin) == 0
        self.assertGreater(naive.mean(), 3 * stats.GATE_ALPHA)

    def test_the_simulation_and_the_runners_look_are_one_rule(self):
        from analysis import stats
        from analysis.gate import power as gate_power
        rng = np.random.default_rng(3)
        design = gate_power.Design(12, 3, 0.05, 1, sequential.GATED_RULE)
        margin = stats.worse_log(0.05, "higher_is_better")
        w = 0.04 * rng.standard_normal((300, 12)) + 0.03
        codes, stops = gate_power.gated_states(w, design, margin)
        names = {gate_power.PASS: sequential.PASS, gate_power.REGRESSED: sequential.REGRESSED,
                 gate_power.INCONCLUSIVE: sequential.INCONCLUSIVE}
        for row, code, stop in zip(w, codes, stops):
            base = {r: 100.0 for r in range(12)}
            cand = {r: 100.0 * math.exp(-x) for r, x in enumerate(row)}  # worse = fewer ops/s
            look = sequential.replay(base, cand, 12, 0.05, 3, 12, rule=sequential.GATED_RULE,
                                     direction="higher_is_better")
            self.assertEqual((look.state, look.rounds), (names[int(code)], int(stop)))

    def test_a_recorded_budget_stop_is_replayed_and_a_hidden_round_refused(self):
        docs = lambda cell, values: [{"cell": {"id": cell, "repetition": r}, "status": "ok",  # noqa: E731
                                      "samples": [{"metric": "rate", "value": v}]} for r, v in enumerate(values)]
        base, cand = docs("a" * 12, [100, 100, 100, 100]), docs("b" * 12, [108, 93, 105, 96])
        block = {"rule": "gated", "budget_s": 600, "min": 3, "max": 30, "family": 1, "comparisons": [
            {"candidate": "b" * 12, "metric": "rate", "min_effect": 0.03,
             "look": {"rounds": 4, "stopped_by": "budget"}}]}
        design = sequential.Design.of({"sequential": block})
        self.assertTrue(design.gated)
        stop = design.stopped_at(base, cand, "rate", 0.03, 1, "higher_is_better")
        self.assertEqual((stop.state, stop.final, stop.why), (sequential.INCONCLUSIVE, True, sequential.BUDGET))
        self.assertEqual(design.disagreement(cand, "rate", stop, False), "")
        # A run that says PASS at round 3 but stored a 4th round hides what it measured.
        quiet = docs("b" * 12, [100.1, 99.9, 100.05, 100.0])
        block["comparisons"][0]["look"] = {"rounds": 3}
        design = sequential.Design.of({"sequential": block})
        stop = design.stopped_at(base, quiet, "rate", 0.03, 1, "higher_is_better")
        self.assertEqual(stop.state, sequential.PASS)
        self.assertIn("the rounds after it were measured", design.disagreement(quiet, "rate", stop, False))
        with self.assertRaisesRegex(ValueError, "rule 'bold'"):
            sequential.Design.of({"sequential": dict(block, rule="bold")})


if __name__ == "__main__":
    unittest.main()
