"""Variance reduction by covariates the results already hold (issue 79, item 5), measured out of sample.

Regression adjustment of each round's paired log ratio on a covariate of that round, as CUPED does (Deng, Xu,
Kohavi and Walker, "Improving the sensitivity of online controlled experiments by utilizing pre-experiment
data", WSDM 2013): w' = w - theta * (x - mean(x)), with theta the slope of w on x. A round's covariate is the
difference between its two launches (candidate minus baseline) of a monitor the runner stores for every
launch (provenance.noise, rigs/matrix/cell/monitor.py): the CPU stolen from the window, the load average over
it, the harness' own CPU in it. Both arms are interleaved builds of one design, so a covariate's difference
has no treatment effect in it to remove (what makes the adjustment unbiased: theta * mean(x) is taken out
with the night's own mean). Not used: the host reference (probed before and after a matrix, not per round).

Out of sample: theta is fitted on the OTHER nights of the design (their rounds pooled, each night centred on
its own means, so a night's arm bias and its level of load are not taken for noise) and applied to the night
left out. A covariate is kept for a design only where the D on a median night made from the adjusted nights
is at least KEEP_SHRINK smaller than from the same nights unadjusted (analysis/sensitivity/nights.py runs the gate's own
rule for both); the table says either way. A design with one night has no night to fit on: not tested.
"""

import dataclasses
import math

import numpy as np

from analysis.sensitivity import nights

KEEP_SHRINK = 0.15  # the median-night D must shrink by this share for a covariate to be kept


def _load(noise):
    values = [x for x in (noise.get("load_average") or []) if isinstance(x, (int, float)) and math.isfinite(x)]
    return float(np.mean(values)) if values else None


def _number(noise, key):
    value = noise.get(key)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


# name -> (what it is, its value for one launch's provenance.noise or None where the launch did not record it,
# whether the treatment cannot move it). Only a covariate the candidate cannot move may adjust a comparison:
# one that moves with it (the load average counts the rig's own threads; the harness' CPU follows how much the
# rig prints) would take part of a true change out with the noise. Those two are measured, never kept.
COVARIATES = {
    "steal": ("CPU stolen from the window (fraction)", lambda n: _number(n, "steal_fraction"), True),
    "load": ("load average over the window", _load, False),
    "harness_cpu": ("the harness' own CPU seconds in the window", lambda n: _number(n, "harness_cpu_s"), False),
}


@dataclasses.dataclass(frozen=True)
class CovariateNight:
    name: str
    worse_log_ratios: tuple  # the rounds' worse-oriented log ratios (analysis/sensitivity/nights.py)
    covariate: tuple  # the same rounds' covariate differences, candidate minus baseline launch


def round_difference(name, baseline_noise, candidate_noise):
    """One round's covariate: the candidate launch's value minus the baseline's, or None where either launch
    did not record it."""
    value = COVARIATES[name][1]
    a, b = (value(n) if isinstance(n, dict) else None for n in (baseline_noise, candidate_noise))
    return None if a is None or b is None else b - a


def slope(nights_xy):
    """theta of w on x over the nights given, each centred on its own means; 0.0 where x does not vary."""
    xs, ws = [], []
    for n in nights_xy:
        x, w = np.asarray(n.covariate, float), np.asarray(n.worse_log_ratios, float)
        xs.append(x - x.mean())
        ws.append(w - w.mean())
    x, w = np.concatenate(xs), np.concatenate(ws)
    sxx = float(x @ x)
    return 0.0 if sxx <= 0 else float(x @ w) / sxx


def adjusted(nights_xy):
    """[nights.Night] with each night's rounds adjusted by the slope fitted on the other nights (leave one night
    out); needs at least two nights."""
    if len(nights_xy) < 2:
        raise nights.NightsError("one night: no other night to fit the covariate's slope on")
    out = []
    for k, n in enumerate(nights_xy):
        theta = slope(nights_xy[:k] + nights_xy[k + 1:])
        x, w = np.asarray(n.covariate, float), np.asarray(n.worse_log_ratios, float)
        out.append(nights.night(n.name, w - theta * (x - x.mean())))
    return out


@dataclasses.dataclass(frozen=True)
class Reduction:
    covariate: str
    nights: int
    rounds: int
    without: float  # median-night D, a fraction worse, from the nights unadjusted
    with_covariate: float  # from the same nights adjusted out of sample

    @property
    def shrink(self):
        if not (math.isfinite(self.without) and math.isfinite(self.with_covariate)) or self.without <= 0:
            return math.nan
        return 1 - self.with_covariate / self.without

    @property
    def external(self):
        """The treatment cannot move this covariate (COVARIATES)."""
        return COVARIATES[self.covariate][2]

    @property
    def kept(self):
        return self.external and math.isfinite(self.shrink) and self.shrink >= KEEP_SHRINK

    def verdict(self):
        if self.kept:
            return "yes"
        if not self.external and math.isfinite(self.shrink) and self.shrink >= KEEP_SHRINK:
            return "no: the candidate can move it"
        return "no"


def reduction(covariate, nights_xy, design, asked_log, direction, draws, seed):
    """The Reduction of one covariate over the nights that recorded it in every round (at least two)."""
    def median_d(found):
        d = nights.d_at_sd(found, nights.sd_at(found, nights.MEDIAN), design, asked_log, direction, draws, seed)
        return d.d_fraction(direction)

    without = median_d([nights.night(n.name, n.worse_log_ratios) for n in nights_xy])
    with_cov = median_d(adjusted(nights_xy))
    return Reduction(covariate, len(nights_xy), sum(len(n.worse_log_ratios) for n in nights_xy), without, with_cov)
