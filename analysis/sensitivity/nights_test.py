"""Known answers for noise over nights (analysis/sensitivity/nights.py), on nights made here from a known model (normal
rounds of a chosen sd: mechanics, not measurements): the resampler keeps each night's variance (never the
(N - n) / (N - 1) of drawing without replacement), the median and noisy nights are the sds' quantiles, a D
made on calm nights fails out of sample on a noisy one and says so, and one night is not a promise."""

import math
import unittest

import numpy as np

from analysis.sensitivity import nights
from analysis.gate import power as gate_power

DESIGN = gate_power.Design(5)
ASKED = gate_power.to_log(0.05, "higher_is_better")


def made(name, sd, rounds=20, seed=1):
    return nights.night(name, np.random.default_rng(seed).standard_normal(rounds) * sd + 0.001)


class NightsTest(unittest.TestCase):
    def test_the_resampler_keeps_the_variance_of_a_night(self):
        n = made("a", 0.02, rounds=12)
        noise = nights.resampled(n.standardized(), n.sd, gate_power.Design(12), draws=20000)
        # The mean of 12 i.i.d. draws has variance sd^2 / 12; drawing 12 of 12 without replacement gives 0.
        self.assertAlmostEqual(float(np.var(noise.mean(axis=1))) / (n.sd ** 2 / 12), 1.0, delta=0.05)
        self.assertAlmostEqual(float(np.var(n.standardized(), ddof=0)), 1.0, places=9)  # a draw: unit variance
        # gate_power's own resampler (the calibrator's) is the same: i.i.d., corrected.
        old = gate_power.resampled_noise(n.worse_log_ratios, gate_power.Design(12), draws=20000)
        self.assertAlmostEqual(float(np.var(old.mean(axis=1))) / (n.sd ** 2 / 12), 1.0, delta=0.05)

    def test_median_and_noisy_nights_are_the_quantiles_of_the_nights_sds(self):
        four = [made("a", 0.01, seed=1), made("b", 0.02, seed=2), made("c", 0.03, seed=3), made("d", 0.05, seed=4)]
        sds = sorted(n.sd for n in four)
        self.assertAlmostEqual(nights.sd_at(four, 0.5), (sds[1] + sds[2]) / 2)
        self.assertAlmostEqual(nights.sd_at(four, 0.8), sds[2] + 0.4 * (sds[3] - sds[2]))
        p = nights.promise(four, DESIGN, ASKED, "higher_is_better", draws=1000)
        self.assertGreater(p.noisy.d, p.median.d)  # a noisier night sees less
        self.assertEqual(p.rounds_per_night, (20, 20, 20, 20))

    def test_a_d_made_on_calm_nights_fails_on_a_noisy_one_and_says_so(self):
        calm = [made(f"calm{i}", 0.01, seed=10 + i) for i in range(3)]
        noisy = made("noisy", 0.05, seed=99)
        p = nights.promise(calm + [noisy], DESIGN, ASKED, "higher_is_better", draws=1000)
        held = {h.name: h.held for h in p.held_out}
        self.assertFalse(held["noisy"])
        self.assertTrue(all(held[f"calm{i}"] for i in range(3)))
        self.assertEqual(p.held_share, 0.75)
        self.assertIn("NOT a promise", p.verdict())
        # Nights of one true sd hold, where their own sds are known well (80 rounds each; with 20, a night whose
        # sample sd came out 20 % above the others' can fall under 90 %: what a noisy night does to a D).
        alike = [made(f"n{i}", 0.01, rounds=80, seed=20 + i) for i in range(4)]
        self.assertEqual(nights.promise(alike, DESIGN, ASKED, "higher_is_better", draws=1000).verdict(),
                         "held on 4 of 4 nights left out")

    def test_a_calm_night_is_held_to_the_asked_effect_not_to_a_d_below_it(self):
        # Noisy nights make a D under the asked 5 % (an early look flags a small shift while its interval is
        # wide); a calm night rightly PASSes such a shift, so the promise tested is max(asked, D), the gate's.
        gated = gate_power.Design(20, 3, 0.05, 1, "gated")
        noisy = [made("n1", 0.015, seed=5), made("n2", 0.02, seed=6)]
        d = nights.d_at_sd(noisy, nights.sd_at(noisy, 0.5), gated, ASKED, "higher_is_better", draws=1000).d
        self.assertLess(d, ASKED)
        p = nights.promise(noisy + [made("calm", 0.002, seed=7)], gated, ASKED, "higher_is_better", draws=1000)
        calm = p.held_out[-1]
        self.assertEqual(calm.d_log, ASKED)
        self.assertTrue(calm.held, calm)

    def test_one_night_is_not_yet_a_promise(self):
        p = nights.promise([made("only", 0.01)], DESIGN, ASKED, "higher_is_better", draws=500)
        self.assertEqual((p.verdict(), p.held_out, p.held_share), (nights.ONE_NIGHT, (), None))
        self.assertTrue(math.isfinite(p.median.d))

    def test_a_night_needs_three_usable_rounds(self):
        with self.assertRaisesRegex(nights.NightsError, "2 usable round"):
            nights.night("short", [0.01, float("nan"), 0.02])
        with self.assertRaises(nights.NightsError):
            nights.promise([], DESIGN, ASKED, "higher_is_better")


if __name__ == "__main__":
    unittest.main()
