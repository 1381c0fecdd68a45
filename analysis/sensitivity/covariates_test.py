"""Known answers for the covariate adjustment (analysis/sensitivity/covariates.py) on made nights: a covariate that drives
the rounds is found and taken out by a slope fitted on the other nights only; one that does not changes nothing;
one night cannot be tested. Every input here is synthetic (seeded draws)."""

import math
import unittest

import numpy as np

from analysis.sensitivity import covariates
from analysis.sensitivity import nights
from analysis.gate import power as gate_power


def made_night(name, seed, theta, rounds=30, sd=0.003):
    """A night whose rounds are theta * x plus noise of sd, x the load difference between its launches."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1.0, rounds)
    w = theta * x + rng.normal(0, sd, rounds) + 0.002  # an arm bias the adjustment must leave to the night
    return covariates.CovariateNight(f"night{seed}", tuple(w), tuple(x))


class CovariatesTest(unittest.TestCase):
    def test_the_slope_is_fitted_within_nights(self):
        made = [made_night("a", 1, 0.03), made_night("b", 2, 0.03)]
        self.assertAlmostEqual(covariates.slope(made), 0.03, delta=0.003)
        # A night at another level of load (x shifted) has the same slope: each night is centred on itself.
        shifted = covariates.CovariateNight("c", made[1].worse_log_ratios, tuple(x + 5 for x in made[1].covariate))
        self.assertAlmostEqual(covariates.slope([made[0], shifted]), covariates.slope(made), places=12)

    def test_a_covariate_that_drives_the_rounds_shrinks_d_and_is_kept(self):
        made = [made_night("a", seed, 0.03) for seed in (1, 2, 3)]
        adjusted = covariates.adjusted(made)
        for before, after in zip(made, adjusted):
            self.assertLess(after.sd, np.std(before.worse_log_ratios, ddof=1) / 2)
            # The night's own mean (its arm bias) is left where it was.
            self.assertAlmostEqual(np.mean(after.worse_log_ratios), np.mean(before.worse_log_ratios), places=12)
        design = gate_power.Design(10)
        r = covariates.reduction("steal", made, design, math.log1p(0.005), "lower_is_better", 500, 7)
        self.assertGreater(r.shrink, 0.5)
        self.assertTrue(r.kept)
        # The same rounds with a covariate the candidate can move: measured, never kept.
        r = covariates.reduction("load", made, design, math.log1p(0.005), "lower_is_better", 500, 7)
        self.assertGreater(r.shrink, 0.5)
        self.assertEqual((r.kept, r.verdict()), (False, "no: the candidate can move it"))

    def test_a_covariate_unrelated_to_the_rounds_is_not_kept(self):
        made = [made_night("a", seed, 0.0) for seed in (4, 5, 6)]
        r = covariates.reduction("steal", made, gate_power.Design(10), math.log1p(0.005), "lower_is_better", 500, 7)
        self.assertLess(abs(r.shrink), covariates.KEEP_SHRINK)
        self.assertFalse(r.kept)

    def test_one_night_has_nothing_to_fit_on(self):
        with self.assertRaisesRegex(nights.NightsError, "one night"):
            covariates.adjusted([made_night("a", 1, 0.03)])

    def test_a_rounds_covariate_is_the_candidate_launch_minus_the_baseline(self):
        base, cand = {"load_average": [1.0, 2.0], "steal_fraction": 0.01}, {"load_average": [3.0, 3.0]}
        self.assertEqual(covariates.round_difference("load", base, cand), 1.5)
        self.assertIsNone(covariates.round_difference("steal", base, cand))  # not recorded by one launch
        self.assertIsNone(covariates.round_difference("load", None, cand))


if __name__ == "__main__":
    unittest.main()
