"""Noise as a distribution over nights (issue 79): what the gate can see on a median night and on a noisy one,
and whether a stated D holds on nights it was not made from.

A night is one run of A/A-like rounds of a gated design: a committed A/A set, or a nightly's own comparison of
one build against itself. Its rounds are the gate's unit: each a worse-oriented log ratio of run medians
(analysis/gate/power.py). The model has two levels (variance components of the paired log ratio):

    w[k, i] = mu[k] + sd[k] * z[k, i]

rounds i within night k, where mu[k] is the night's arm bias (removed: one build on both sides) and sd[k] the
night's own paired standard deviation, which moves 1.1-5x between nights of the same rig (issue 79's table).
The nights' sds are the distribution a promise must describe: D on a median night is the gate's D at the
median of the nights' sds, D on a noisy night at their 80th percentile.

Resampling, and why it never understates the noise: the shape of a round's noise is the pool of every night's
standardized rounds, z = (w - mean) / sd * sqrt(n / (n - 1)), drawn i.i.d. with replacement and scaled to the
sd asked for. The centred values of n rounds have a mean square of sd^2 (n - 1) / n; the factor restores sd^2,
so a draw has the night's variance (the small-sample correction). Never n of N without replacement: a design
of n rounds drawn from N without replacement has a mean whose variance shrinks by (N - n) / (N - 1) (0.35 for
12 of 18), and one that takes all N only permutes them (issue 79, cause 2). The pool keeps the tails the nights
showed (a normal model would not); scaling by one sd assumes the shape is the same on calm and noisy nights.

Out of sample: leave one night out. The D made from the other nights (at their median sd) is run on the left-out
night's own rounds (resampled as above at that night's sd): the share of designs flagged REGRESSED with a true
shift of what the gate then promises, max(asked, that D) (gate_decision.Check.can_see: a shift below the asked
effect is one a PASS may rightly rule in, so a calm night would "miss" a D under it by design). A promise holds
on a night where that share is at least HELD_DETECTION.
"""

import dataclasses
import math

import numpy as np

from analysis.gate import power as gate_power

MEDIAN, NOISY = 0.5, 0.8  # the quantiles of the nights' sds a promise is stated at
HELD_DETECTION = 0.90  # a held-out night "holds" a D when its own rounds flag that shift this often
MIN_ROUNDS = 3  # a night with fewer rounds has no sd of its own
ONE_NIGHT = "one night: not yet a promise"


class NightsError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Night:
    name: str  # the set or run it came from
    worse_log_ratios: tuple  # its rounds, worse-oriented log ratios

    @property
    def rounds(self):
        return len(self.worse_log_ratios)

    @property
    def sd(self):
        return float(np.std(self.worse_log_ratios, ddof=1))

    def standardized(self):
        """Its rounds centred, divided by its sd, times sqrt(n / (n - 1)): unit variance when drawn i.i.d."""
        w = np.asarray(self.worse_log_ratios, dtype=float)
        n = len(w)
        if self.sd == 0:
            return np.zeros(n)
        return (w - w.mean()) / self.sd * math.sqrt(n / (n - 1))


def night(name, worse_log_ratios):
    values = tuple(float(x) for x in worse_log_ratios if isinstance(x, (int, float)) and math.isfinite(x))
    if len(values) < MIN_ROUNDS:
        raise NightsError(f"{name}: {len(values)} usable round(s); a night needs {MIN_ROUNDS}")
    return Night(name, values)


def resampled(pool, sd, design, draws=gate_power.DRAWS, seed=gate_power.SEED):
    """[draws, design.rounds] zero-mean noise: the standardized pool drawn i.i.d. with replacement, times sd."""
    pool = np.asarray(pool, dtype=float)
    rng = np.random.default_rng(seed)
    return pool[rng.integers(0, len(pool), size=(draws, design.rounds))] * sd


def pool_of(nights):
    return np.concatenate([n.standardized() for n in nights])


def sd_at(nights, quantile):
    """The `quantile` of the nights' sds (linear between them; with one night, its sd)."""
    return float(np.quantile([n.sd for n in nights], quantile))


def d_at_sd(nights, sd, design, asked_log, direction, draws=gate_power.DRAWS, seed=gate_power.SEED):
    """The gate's Power (analysis/gate/power.stated_d) on noise of the nights' shape at `sd`."""
    return gate_power.stated_d(resampled(pool_of(nights), sd, design, draws, seed), design, asked_log, direction)


@dataclasses.dataclass(frozen=True)
class HeldOut:
    name: str
    sd: float  # the held-out night's own sd
    d_log: float  # what the gate promises without it: max(asked, D at the others' median sd) (inf: nothing)
    detection: float  # the share of its own resampled designs flagged at that D

    @property
    def held(self):
        return self.detection >= HELD_DETECTION


@dataclasses.dataclass(frozen=True)
class Promise:
    """What a gated design can promise over the nights recorded: D on a median and on a noisy night, and how
    it held on nights left out of its making."""
    nights: tuple  # names
    rounds_per_night: tuple
    direction: str
    sd_median: float
    sd_noisy: float
    median: gate_power.Power
    noisy: gate_power.Power
    held_out: tuple  # HeldOut per night; () with one night

    @property
    def median_worse_by(self):
        return self.median.d_fraction(self.direction)

    @property
    def noisy_worse_by(self):
        return self.noisy.d_fraction(self.direction)

    @property
    def held_share(self):
        return None if not self.held_out else sum(h.held for h in self.held_out) / len(self.held_out)

    def verdict(self):
        if len(self.nights) < 2:
            return ONE_NIGHT
        share = self.held_share
        return (f"held on {sum(h.held for h in self.held_out)} of {len(self.held_out)} nights left out"
                + ("" if share >= HELD_DETECTION else ": NOT a promise on the nights recorded"))


def promise(nights, design, asked_log, direction, draws=gate_power.DRAWS, seed=gate_power.SEED):
    """The Promise of `design` over `nights` (at least one)."""
    if not nights:
        raise NightsError("no night of this design is recorded")
    sd_median, sd_noisy = sd_at(nights, MEDIAN), sd_at(nights, NOISY)
    median = d_at_sd(nights, sd_median, design, asked_log, direction, draws, seed)
    noisy = d_at_sd(nights, sd_noisy, design, asked_log, direction, draws, seed)
    held = []
    if len(nights) >= 2:
        for k, left in enumerate(nights):
            others = nights[:k] + nights[k + 1:]
            d = max(d_at_sd(others, sd_at(others, MEDIAN), design, asked_log, direction, draws, seed).d, asked_log)
            if math.isfinite(d):
                noise = resampled(left.standardized(), left.sd, design, draws, seed + 1 + k)
                detection = gate_power.rates(noise, design, asked_log, direction, d)["REGRESSED"]
            else:
                detection = 0.0
            held.append(HeldOut(left.name, left.sd, d, detection))
    return Promise(tuple(n.name for n in nights), tuple(n.rounds for n in nights), direction, sd_median, sd_noisy,
                   median, noisy, tuple(held))
