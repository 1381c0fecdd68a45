"""The gate's decision on one (cell, metric), Check.decide (analysis/gate/decision.py), as known answers:
interleaved rounds whose true shift is set by hand, judged at 5 %. Its command line and the whole-set paths
are //tools/gate:gate_test's; what the rule can see is //tools/sensitivity:gate_power_test's."""

import types
import unittest

from analysis import sequential, stats
from analysis.gate import decision as gate_decision
from analysis.gate import power as gate_power

BASE = {r: 1000.0 for r in range(8)}
WOBBLE = [1.0, 1.004, 0.996, 1.002, 0.998, 1.003, 0.997, 1.0]  # +-0.4 % between rounds: a quiet night


def check(candidate, min_effect=0.05, tonight_d=None, direction="higher_is_better"):
    """A Check of BASE against `candidate` ({round: value}), decided."""
    c = gate_decision.Check(cell="c", params={}, metric="rate", unit="ops/s", direction=direction,
                            min_effect=min_effect, comparison=None, runs=(len(BASE), len(candidate)))
    c.evidence = stats.paired_evidence(BASE, candidate, direction)
    if tonight_d is not None:  # this run's own D, as gate_power measures it (a fraction worse)
        c.tonight = types.SimpleNamespace(d_fraction=lambda direction: tonight_d)
    return c.decide()


def shifted(fraction, wobble=WOBBLE):
    return {r: 1000.0 * (1 + fraction) * w for r, w in enumerate(wobble)}


class GatedCheck(unittest.TestCase):
    """A gated run's check (issue 79) is the rule at the look the runner stopped at: no noise margin on top,
    and its verdict says its rounds, measuring minutes and why it stopped."""

    def gated(self, candidate, look, tonight_d=None):
        c = check(candidate, tonight_d=tonight_d)
        c.design = gate_power.Design(30, 3, 0.05, 1, sequential.GATED_RULE)
        c.stop, c.measuring_s = look, 150.0
        c.alpha = sequential.gate_levels(3, 30)[min(look.pairs, 30)]
        return c.decide()

    def test_a_pass_says_rounds_minutes_and_why(self):
        look = sequential.Look(sequential.PASS, 8, 8, 1.0, 0.99, 1.01, 0.002, True)
        c = self.gated(shifted(0.0), look, tonight_d=0.30)  # a noisy night's D does not undo the rule's PASS
        self.assertEqual(c.state, gate_decision.PASS)
        self.assertEqual(c.status, "pass (8 rounds, 2.5 min: decided)")

    def test_a_budget_stop_says_so(self):
        noisy = [1.0, 1.15, 0.85, 1.1, 0.9, 1.12, 0.88, 1.0]
        look = sequential.Look(sequential.INCONCLUSIVE, 8, 8, 1.0, 0.9, 1.1, 0.002, True, sequential.BUDGET)
        c = self.gated(shifted(0.0, noisy), look)
        self.assertEqual(c.state, gate_decision.INCONCLUSIVE)
        self.assertTrue(c.status.endswith("(8 rounds, 2.5 min: the time budget ended it)"), c.status)

    def test_the_looks_share_of_the_error_widens_the_interval(self):
        look = sequential.Look(sequential.PASS, 8, 8, 1.0, 0.99, 1.01, 0.002, True)
        fixed, gated = check(shifted(0.0)), self.gated(shifted(0.0), look)
        self.assertGreater(gated.worse_by_interval[1], fixed.worse_by_interval[1])


class CheckDecides(unittest.TestCase):
    def test_no_shift_on_a_quiet_night_passes(self):
        c = check(shifted(0.0))
        self.assertEqual((c.state, c.reasons), (gate_decision.PASS, []))
        self.assertFalse(c.regressed)

    def test_a_shift_beyond_the_asked_effect_regresses(self):
        c = check(shifted(-0.10))  # 10 % fewer ops/s
        self.assertEqual(c.state, gate_decision.REGRESSED)
        self.assertTrue(c.regressed)
        self.assertAlmostEqual(c.worse_by, 0.105, places=2)  # exp(-log 0.9) - 1 as "fraction worse"
        low, high = c.worse_by_interval
        self.assertLess(low, c.worse_by)
        self.assertGreater(high, c.worse_by)

    def test_lower_is_better_turns_the_same_shift_into_an_improvement(self):
        c = check(shifted(-0.10), direction="lower_is_better")
        self.assertEqual(c.state, gate_decision.PASS)
        self.assertTrue(c.improved)

    def test_rounds_too_noisy_to_rule_out_the_effect_are_inconclusive(self):
        noisy = [1.0, 1.15, 0.85, 1.1, 0.9, 1.12, 0.88, 1.0]
        c = check(shifted(0.0, noisy))
        self.assertEqual(c.state, gate_decision.INCONCLUSIVE)
        self.assertIn("neither rules out 5.0% nor shows a regression", c.reasons[0])

    def test_fewer_than_the_rules_rounds_are_inconclusive(self):
        c = check({0: 1000.0, 1: 1000.0})
        self.assertEqual(c.state, gate_decision.INCONCLUSIVE)
        self.assertIn(f"the rule needs {stats.MIN_RUNS}", c.reasons[0])

    def test_a_pass_on_a_night_that_could_not_see_the_promise_is_inconclusive(self):
        # The gate promises max(asked, stated D) = 5 %; a run that could see only 8 % (> 5 % x 1.5) cannot
        # promise it, one that could see 7 % can.
        self.assertEqual(check(shifted(0.0), tonight_d=0.07).state, gate_decision.PASS)
        c = check(shifted(0.0), tonight_d=0.08)
        self.assertEqual(c.state, gate_decision.INCONCLUSIVE)
        self.assertIn("this run could see 8.0%, the gate promises 5.0%: too noisy", c.reasons[0])


if __name__ == "__main__":
    unittest.main()
