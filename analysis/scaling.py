"""How a metric grows with a size (issue 82: "a scaling question answered as a regression"): per group of cells
that differ only in the size axis (ResourceManager failover: recovery time against the applications to recover,
one line per state store), the slope of the metric over the size with its interval.

Assumed: over the measured sizes the metric is linear in the size (the fit says so or not: its points are drawn
beside the line); runs are the independent units (each run median one point, as analysis/stats.py's rules
say), their scatter about the line close to normal. The slope's interval is the ordinary least-squares t
interval at CONFIDENCE over the runs, n - 2 degrees of freedom; with fewer than 3 runs or 2 sizes, no fit.
"""

import dataclasses
import math

import numpy as np
from scipy import stats as sps

from analysis import stats

CONFIDENCE = 0.95


class ScalingError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Fit:
    group: str  # the other parameters that vary ("state_store=leveldb"), "" when none
    points: tuple  # ((size, median of run medians, its 95 % CI low, high, runs), ...) by size
    slope: float  # metric units per one unit of size; nan without a fit
    slope_low: float
    slope_high: float
    intercept: float
    runs: int

    @property
    def fitted(self):
        return math.isfinite(self.slope)


def size_of(value, axis):
    """A size axis' value as a number; ScalingError when it is not one."""
    try:
        size = float(value)
    except (TypeError, ValueError):
        raise ScalingError(f"axis {axis} is not a size: its value {str(value)[:40]!r} is not a number") from None
    if not math.isfinite(size):
        raise ScalingError(f"axis {axis} is not a size: {value!r}")
    return size


def fits(cells, metric, size_axis):
    """[Fit] of `metric` over `size_axis`, one per group of cells equal in every other varying parameter
    (compare.CellData; cells without the metric left out). ScalingError when the axis does not vary or is not
    numeric."""
    measured = [c for c in cells if c.groups.get(metric) and size_axis in c.params]
    sizes = {c.params[size_axis] for c in measured}
    if len(sizes) < 2:
        raise ScalingError(f"axis {size_axis} takes {len(sizes)} value(s) among the cells measuring {metric}: a "
                           "scaling curve needs two sizes or more")
    varying = sorted({k for c in measured for k in c.params if k != size_axis
                      and len({d.params.get(k) for d in measured}) > 1})
    groups = {}
    for c in measured:
        groups.setdefault(tuple(c.params[k] for k in varying), []).append(c)
    out = []
    for key, members in sorted(groups.items(), key=lambda kv: [natural(v) for v in kv[0]]):
        points, xs, ys = [], [], []
        for c in sorted(members, key=lambda c: size_of(c.params[size_axis], size_axis)):
            x = size_of(c.params[size_axis], size_axis)
            s = stats.summarize(c.groups[metric])
            points.append((x, s.median, s.ci_low, s.ci_high, s.runs))
            xs += [x] * len(s.run_medians)
            ys += s.run_medians
        slope = low = high = intercept = math.nan
        if len(set(xs)) >= 2 and len(xs) >= 3:
            fit = sps.linregress(np.asarray(xs), np.asarray(ys))
            half = float(sps.t.ppf(0.5 + CONFIDENCE / 2, len(xs) - 2)) * fit.stderr
            slope, low, high, intercept = (float(v) for v in (fit.slope, fit.slope - half, fit.slope + half,
                                                              fit.intercept))
        out.append(Fit(" ".join(f"{k}={v}" for k, v in zip(varying, key)), tuple(points), slope, low, high,
                       intercept, len(xs)))
    return out


def natural(value):
    """A sort key that puts numbers in their order (250 before 1000) and before words."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return (1, 0.0, str(value))
    return (0, number, "") if math.isfinite(number) else (1, 0.0, str(value))


def label(group):
    """A group's short name: its value ("leveldb"), or the whole "axis=value" where the value is a number alone
    ("nm_heartbeat_ms=250": "250" says nothing)."""
    value = group.split("=", 1)[-1]
    return group if natural(value)[0] == 0 or " " in group else value


def per(size_step, fit, unit):
    """'+2.35 s per 1,000 apps (95% CI +2.10..+2.60)'."""
    if not fit.fitted:
        return "no fit (fewer than 3 runs or 2 sizes)"
    f = lambda v: f"{v * size_step:+.3g}"  # noqa: E731
    return f"{f(fit.slope)} {unit} per {size_step:,g} (95% CI {f(fit.slope_low)}..{f(fit.slope_high)})"


def step(fits_):
    """A round step to state a slope per: the power of 10 nearest the smallest size measured."""
    smallest = min((p[0] for f in fits_ for p in f.points if p[0] > 0), default=1.0)
    return 10 ** math.floor(math.log10(smallest))
