"""Statistics for benchmark samples: per-cell summaries and A-vs-B comparisons, with stated assumptions.

Conventions: inputs are the measured values only (warm-up samples are kept apart by the runner and never
passed here); confidence intervals are two-sided 95 %; bootstrap resampling is seeded, so the same data
gives the same interval on every run.
"""

import dataclasses
import math

import numpy as np
from scipy import stats as sps

CONFIDENCE = 0.95
RESAMPLES = 4000
SEED = 20261121
ALPHA = 0.05
MIN_SAMPLES = 3
CV_WARNING = 0.10


@dataclasses.dataclass
class Summary:
    n: int
    median: float
    mean: float
    stdev: float
    cv: float  # stdev / mean; nan when the mean is 0
    minimum: float
    maximum: float
    ci_low: float
    ci_high: float
    outliers: int
    warnings: list


@dataclasses.dataclass
class Comparison:
    baseline_median: float
    candidate_median: float
    ratio: float  # candidate median / baseline median
    ratio_ci_low: float
    ratio_ci_high: float
    p_value: float  # Mann-Whitney U, two-sided; nan when a side has fewer than 2 values
    p_adjusted: float  # after a multiple-comparison correction (set by holm()); starts equal to p_value
    n_baseline: int
    n_candidate: int

    @property
    def change(self):
        """Relative change of the median, candidate vs baseline (0.05 = 5 % higher)."""
        return self.ratio - 1.0

    def significant(self, alpha=ALPHA):
        """The test rejects "no difference" AND the ratio's CI excludes 1: both, because the p-value treats
        autocorrelated samples as independent and the CI alone ignores the multiple-comparison correction."""
        if math.isnan(self.p_adjusted) or self.p_adjusted >= alpha:
            return False
        return self.ratio_ci_low > 1.0 or self.ratio_ci_high < 1.0

    def verdict(self, direction, alpha=ALPHA):
        """"better", "worse" or "not significant", for a metric with the given direction."""
        if not self.significant(alpha):
            return "not significant"
        higher = self.ratio > 1.0
        return "better" if higher == (direction == "higher_is_better") else "worse"


def _resample_medians(values, groups, rng, size):
    """`size` bootstrap medians: resampling whole groups (runs) when given, else single values."""
    if groups is not None:
        groups = [np.asarray(g, dtype=float) for g in groups]
        picks = rng.integers(0, len(groups), size=(size, len(groups)))
        return np.array([np.median(np.concatenate([groups[i] for i in row])) for row in picks])
    x = np.asarray(values, dtype=float)
    return np.median(x[rng.integers(0, len(x), size=(size, len(x)))], axis=1)


def _usable_groups(groups):
    return groups if groups is not None and len(groups) >= MIN_SAMPLES else None


def bootstrap_median_ci(values, groups=None, confidence=CONFIDENCE, seed=SEED):
    """Percentile-bootstrap CI of the median.

    values: all raw samples. groups: the same samples split by run (repetition), if known. With 3 or more
    runs the bootstrap resamples whole runs (a cluster bootstrap), so the interval reflects run-to-run
    variation and does not assume the per-second samples inside a run are independent (they are not).
    Otherwise it resamples single values, assuming independence: optimistic for a time series. With fewer
    than 3 values, or all equal, the interval collapses to [min, max]. The percentile method is used, not
    BCa: BCa is undefined for the tied, near-constant data that rate-capped benchmarks produce.
    """
    x = np.asarray(values, dtype=float)
    if len(x) < MIN_SAMPLES or np.all(x == x[0]):
        return float(x.min()), float(x.max())
    meds = _resample_medians(x, _usable_groups(groups), np.random.default_rng(seed), RESAMPLES)
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(meds, [tail, 100 - tail])
    return float(lo), float(hi)


def tukey_outliers(values):
    """Count of values outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] (Tukey's fences; no distribution assumed)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 4:
        return 0
    q1, q3 = np.percentile(x, [25, 75])
    iqr = q3 - q1
    return int(np.sum((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr)))


def summarize(values, groups=None):
    """Median, mean, CV, bootstrap CI of the median (see bootstrap_median_ci for `groups`), and stability
    warnings in the spirit of pyperf: too few samples, CV >= 10 %, outliers. Raises ValueError on no values."""
    x = np.asarray(values, dtype=float)
    if len(x) == 0:
        raise ValueError("no values to summarize")
    mean = float(x.mean())
    stdev = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    cv = stdev / abs(mean) if mean else float("nan")
    lo, hi = bootstrap_median_ci(x, groups)
    outliers = tukey_outliers(x)
    warnings = []
    if len(x) < MIN_SAMPLES:
        warnings.append(f"only {len(x)} sample(s): the interval is the range, not a confidence interval")
    if not math.isnan(cv) and cv >= CV_WARNING:
        warnings.append(f"unstable: CV {cv:.0%} >= {CV_WARNING:.0%}")
    if outliers:
        warnings.append(f"{outliers} outlier(s) beyond Tukey's fences")
    return Summary(n=len(x), median=float(np.median(x)), mean=mean, stdev=stdev, cv=cv, minimum=float(x.min()),
                   maximum=float(x.max()), ci_low=lo, ci_high=hi, outliers=outliers, warnings=warnings)


def compare(baseline, candidate, baseline_groups=None, candidate_groups=None, confidence=CONFIDENCE, seed=SEED,
            resamples=RESAMPLES):
    """Candidate vs baseline: ratio of medians with a bootstrap CI, and a Mann-Whitney U test on raw samples.

    The ratio's CI resamples each side separately: whole runs when a side has 3 or more (`*_groups`, a
    cluster bootstrap that respects run-to-run variation), else single samples; with under 3 values a side
    it is the range of ratios. Mann-Whitney tests whether one side tends to be larger, without assuming
    normality; it is exact for small samples without ties, else the tie-corrected normal approximation
    (capped rates tie). It treats the raw samples as independent: per-second samples of one run are
    autocorrelated, so the p-value is optimistic, which is why a verdict also needs the CI (and a gate, a
    minimum effect).
    """
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(candidate, dtype=float)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both sides need values")
    med_a, med_b = float(np.median(a)), float(np.median(b))
    if med_a == 0:
        raise ValueError("the baseline median is 0: a ratio is undefined")
    ratio = med_b / med_a
    if not resamples:
        lo = hi = float("nan")  # the caller needs no interval (e.g. thousands of gate decisions)
    elif len(a) >= MIN_SAMPLES and len(b) >= MIN_SAMPLES and not (np.all(a == a[0]) and np.all(b == b[0])):
        rng = np.random.default_rng(seed)
        ratios = (_resample_medians(b, _usable_groups(candidate_groups), rng, resamples)
                  / _resample_medians(a, _usable_groups(baseline_groups), rng, resamples))
        tail = (1 - confidence) / 2 * 100
        lo, hi = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    else:
        lo, hi = float(b.min() / a.max()), float(b.max() / a.min()) if a.min() else float("inf")
    if len(a) >= 2 and len(b) >= 2 and not np.all(np.concatenate([a, b]) == a[0]):
        p = float(sps.mannwhitneyu(a, b, alternative="two-sided", method="auto").pvalue)
    elif len(a) >= 2 and len(b) >= 2:
        p = 1.0  # identical constants: no evidence of any difference
    else:
        p = float("nan")
    return Comparison(baseline_median=med_a, candidate_median=med_b, ratio=ratio, ratio_ci_low=lo,
                      ratio_ci_high=hi, p_value=p, p_adjusted=p, n_baseline=len(a), n_candidate=len(b))


def holm(p_values):
    """Holm-Bonferroni adjusted p-values (same order as given; nan stays nan).

    Controls the family-wise error rate for any dependence between the tests; less conservative than
    Bonferroni. Compare each adjusted value with alpha.
    """
    indexed = [(p, i) for i, p in enumerate(p_values) if not math.isnan(p)]
    indexed.sort()
    m = len(indexed)
    adjusted = [float("nan")] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def adjust(comparisons):
    """Sets p_adjusted of every comparison of one family by Holm's method."""
    for c, p in zip(comparisons, holm([c.p_value for c in comparisons])):
        c.p_adjusted = p
    return comparisons


def compare_runs(baseline_groups, candidate_groups, confidence=CONFIDENCE, seed=SEED, resamples=RESAMPLES):
    """Candidate vs baseline for gating, where each side is a list of runs (lists of raw samples).

    The ratio is of the medians of all samples, its CI a cluster bootstrap over runs (as compare()). The
    test is Welch's t-test on the per-run medians: runs are the independent units (samples within one run
    are autocorrelated), and a run's median of many per-second samples is close to normal, which Welch
    assumes; it does not assume equal variances. Needs 2 or more runs a side (else p is nan).
    """
    a_runs = [g for g in baseline_groups if g]
    b_runs = [g for g in candidate_groups if g]
    result = compare([x for g in a_runs for x in g], [x for g in b_runs for x in g], a_runs, b_runs,
                     confidence=confidence, seed=seed, resamples=resamples)
    a_med = np.array([np.median(g) for g in a_runs])
    b_med = np.array([np.median(g) for g in b_runs])
    if len(a_med) >= 2 and len(b_med) >= 2:
        if np.all(a_med == a_med[0]) and np.all(b_med == b_med[0]):
            p = 1.0 if a_med[0] == b_med[0] else 0.0
        else:
            p = float(sps.ttest_ind(a_med, b_med, equal_var=False).pvalue)
    else:
        p = float("nan")
    result.p_value = result.p_adjusted = p
    return result
