"""Statistics for benchmark results: per-cell summaries and A-vs-B comparisons, with stated assumptions.

The unit of evidence is the run. Every table, report and gate in tunelab follows these rules:
- A run (one repetition of a cell: its own JVM, its own warm-up) is summarized by the median of its
  measured per-second samples. Runs are the independent units; the samples inside one run are not (they
  are a time series, autocorrelated), so they never feed a significance test or a confidence interval.
- A cell's value is the median of its run medians. Its 95 % interval is a percentile bootstrap over runs,
  and exists only with 3 or more runs; with fewer, tables print "-" and say how many runs there were.
- A comparison (candidate vs baseline) has one rule, from the summary's verdict to the gate's (issue 82): its
  number and its interval are of the log ratio candidate / baseline, and its words come from that interval
  alone and the metric's minimum effect m (gate.toml, analysis/thresholds.py). Where both cells are in one
  interleaved run, the unit is the round: the paired t interval of the rounds' log ratios of run medians
  (the pairing cancels the host's drift between rounds); two cells measured apart (two sets, two runs): Welch's
  interval of the difference of mean log run values. Each at GATE_ALPHA a side (98 % two-sided) for one
  comparison; a family (every comparison of a metric in a table, every patch of a series) splits it by
  Bonferroni (adjust()). Both need 3 or more rounds (paired) or runs a side: with fewer there is no test, and
  the verdict says "N run(s) a side: no test". The words (decision_words): "within ±m" wholly inside ±m,
  "worse"/"better" wholly beyond 0, "not worse by m" spanning 0 but ruling out m worse, else "undecided": an
  interval wholly beyond the minimum effect is never undecided. The number is exp of the interval's centre
  (a geometric mean ratio), so it always lies inside the interval shown. A deterministic metric (equal
  values in every run) has a point interval, and the point decides its words. A count that may be 0 is a
  difference with a bootstrap interval over runs (difference()), never a ratio.
- Sequential repetitions (policy stop = "decided", analysis/sequential.py) look at a comparison after every
  interleaved round, so a per-look test at 0.05 would raise false alarms with each look (optional
  stopping). They use repeated confidence intervals instead (Jennison and Turnbull, JRSS B 51(3), 1989):
  paired t intervals on per-round log ratios whose levels are set so that all looks together cover the true
  change with probability 0.95 (alpha split over the comparisons by Bonferroni); a comparison is different
  when its interval lies wholly outside ± the minimum effect, equivalent when wholly inside. Assumed: the
  rounds' log ratios are independent and close to normal (a run median of many samples is).
- The regression gate (analysis/gate/decision.py) decides with the same interval, read one-sided, the rule its
  stated sensitivity is measured for (analysis/gate/power.py runs this very rule on resampled A/A rounds).
  Oriented so that positive is worse (w = log(candidate / baseline) for a time, its negative for a rate), the
  interval of the mean w at GATE_ALPHA a side: mean +/- t(1 - GATE_ALPHA, n - 1) sd / sqrt(n). With a margin
  m (the effect judged at, a log ratio):
    PASS         its upper bound is below m: the run rules out a regression of m (an equivalence, or
                 non-inferiority, test at GATE_ALPHA);
    REGRESSED    its lower bound is above 0 and its upper bound is not below m: significantly worse, and not
                 shown smaller than the margin (so a false alarm at zero is at most GATE_ALPHA);
    INCONCLUSIVE otherwise, and always with fewer than MIN_RUNS rounds.
  Why paired and not Welch on run medians: interleaved rounds share the host's state, and the pairing is
  what cancels its drift (the round term of analysis/sensitivity/components.py); Welch throws it away. Why no "observed
  change beyond the margin" filter: it caps detection at the margin near 50 % by construction; the margin
  enters through the upper bound instead, so a change shown smaller than asked is still a PASS. Assumed: the
  rounds' log ratios are independent and close to normal (a run median of many samples is); not assumed:
  equal variance across nights (each run's own sd is used, and the gate states what it could see). Two
  stored sets measured apart cannot be paired: the same rule on Welch's interval of the mean log run values.
- Per-second samples feed plots and within-run stability (a run's CV), nothing else.
Inputs are measured values only (warm-up is kept apart by the runner); resampling is seeded, so the same
data gives the same interval on every run.
"""

import dataclasses
import math

import numpy as np
from scipy import stats as sps

def fmt_effect(fraction):
    """A minimum effect as people write it: 0.05 -> "5%", 0.005 -> "0.5%", 0.119 -> "11.9%" (a format with
    no decimals printed an instruction count's 0.5 % as "0%" and its 1.3 % MDE as "1%")."""
    return f"{round(fraction * 100, 2):g}%"


CONFIDENCE = 0.95
GATE_ALPHA = 0.01  # each side of the gate's interval (see the module docstring): false alarms <= 1 % a check
RESAMPLES = 4000
SEED = 20261121
MIN_RUNS = 3
CV_WARNING = 0.10


@dataclasses.dataclass
class Summary:
    runs: int
    samples: int
    median: float  # median of the run medians
    run_medians: list
    cv: float  # across run medians (stdev / mean); nan with fewer than 2 runs or a zero mean
    within_run_cv: float  # the largest CV of per-second samples inside one run: stability, not significance
    minimum: float  # of the run medians
    maximum: float
    ci_low: float  # nan with fewer than MIN_RUNS runs
    ci_high: float
    warnings: list

    @property
    def has_ci(self):
        return not math.isnan(self.ci_low)


@dataclasses.dataclass
class Comparison:
    """Candidate vs baseline under the one decision rule (the module docstring): the interval the reader sees
    is the one the words come from. Logs are of candidate / baseline, not oriented; ratios are exp of them."""
    baseline_median: float
    candidate_median: float
    ratio: float  # exp(estimate) where every run value is > 0 (the interval's centre), else the medians' ratio
    estimate: float  # mean log ratio: paired over rounds, or the difference of mean log run values; nan: none
    se: float  # its standard error (nan: too few units)
    df: float
    n_baseline: int  # runs
    n_candidate: int
    paired: bool = False  # rounds of one interleaved run, paired by index; else the sides measured apart
    n_pairs: int = 0  # paired: the rounds both sides measured
    family: int = 1  # comparisons the interval's error is split over (Bonferroni; set by adjust())
    alpha: float = GATE_ALPHA  # each side of the interval, before the family's split
    look_alpha: float = math.nan  # a gated run's look: its share of the error a side (the gate reads it so)

    @property
    def change(self):
        """Relative change, candidate vs baseline (0.05 = 5 % higher)."""
        return self.ratio - 1.0

    @property
    def units(self):
        """What the interval rests on: pairs of rounds, or the fewer runs of a side."""
        return self.n_pairs if self.paired else min(self.n_baseline, self.n_candidate)

    @property
    def tested(self):
        return self.units >= MIN_RUNS and math.isfinite(self.estimate) and not math.isnan(self.se)

    @property
    def side_alpha(self):
        """Each side's error of the interval: alpha split over the family, or a gated run's look's share."""
        return self.look_alpha if math.isfinite(self.look_alpha) else self.alpha / max(self.family, 1)

    @property
    def level(self):
        """The interval's two-sided level, a fraction (0.98 for one comparison at the gate's alpha)."""
        return 1 - 2 * self.side_alpha

    def log_bounds(self):
        """(low, high) of the log ratio; (nan, nan) without a test."""
        if not self.tested:
            return float("nan"), float("nan")
        half = float(sps.t.ppf(1 - self.side_alpha, self.df)) * self.se if self.se > 0 else 0.0
        return self.estimate - half, self.estimate + half

    @property
    def ratio_ci_low(self):
        return math.exp(self.log_bounds()[0])

    @property
    def ratio_ci_high(self):
        return math.exp(self.log_bounds()[1])

    @property
    def p_value(self):
        """Two-sided p of the same t (paired, or Welch on log run values), not adjusted; nan without a test."""
        if not self.tested:
            return float("nan")
        if self.se == 0:
            return 1.0 if self.estimate == 0 else 0.0
        return float(2 * sps.t.sf(abs(self.estimate) / self.se, self.df))

    @property
    def p_adjusted(self):
        """p times the family (Bonferroni, capped at 1): below 2 * alpha exactly when the interval excludes 1."""
        return min(1.0, self.p_value * max(self.family, 1)) if self.tested else float("nan")

    def no_test_reason(self):
        """Why there is no test ("1 run a side: no test"), or "" when there is one."""
        if self.tested:
            return ""
        if self.paired:
            return f"{self.n_pairs} paired round{'s' if self.n_pairs != 1 else ''}: no test"
        if not math.isfinite(self.estimate) and min(self.n_baseline, self.n_candidate) >= MIN_RUNS:
            return "a run value <= 0: no log ratio, no test"
        fewer = min(self.n_baseline, self.n_candidate)
        if self.n_baseline == self.n_candidate:
            return f"{fewer} run{'s' if fewer != 1 else ''} a side: no test"
        return f"{self.n_baseline} vs {self.n_candidate} runs: no test"

    def significant(self):
        """The interval excludes no change (a ratio of 1)."""
        low, high = self.log_bounds()
        return low > 0 or high < 0

    def verdict(self, direction, min_effect=0.0):
        """The words, from the interval alone and the minimum effect m (decision_words), or "N run(s) a side:
        no test"."""
        if not self.tested:
            return self.no_test_reason()
        low, high = sorted(orient(b, direction) for b in self.log_bounds())
        return decision_words(low, high, worse_log(min_effect, direction), better_log(min_effect, direction),
                              min_effect)


def decision_words(low, high, margin_worse, margin_better, min_effect):
    """The words of a worse-oriented log interval (low, high), judged at the minimum effect m (margin_worse,
    margin_better: m worse and m better as such logs):
        "within ±m"       wholly inside ±m (a change shown smaller than the question cares about);
        "worse"           wholly above 0, and not wholly inside ±m;
        "better"          wholly below 0, and not wholly inside ±m;
        "not worse by m"  it spans 0 and rules out m worse (an improvement of more than m not ruled out);
        "no change"       a point at 0 (deterministic values, equal);
        "undecided"       anything else: it spans 0 and reaches m worse.
    The gate's three-way rule (three_way) is the same interval read one-sided: REGRESSED exactly when "worse",
    PASS when "within", "better", "not worse by" or "no change" (with m > 0), INCONCLUSIVE when "undecided"
    (gate_state)."""
    if high < margin_worse and low > margin_better:
        return f"within ±{fmt_effect(min_effect)}"
    if low > 0:
        return "worse"
    if high < 0:
        return "better"
    if low == high == 0:
        return "no change"
    if high < margin_worse:
        return f"not worse by {fmt_effect(min_effect)}"
    return "undecided"


def gate_state(words):
    """The gate's three-way state (PASS, REGRESSED, INCONCLUSIVE) that goes with a verdict's words, or None for
    no test: the one rule read two ways (analysis/gate/decision.py reads it the same)."""
    if words == "worse":
        return "REGRESSED"
    if words in ("better", "no change") or words.startswith(("within ±", "not worse by ")):
        return "PASS"
    if words == "undecided":
        return "INCONCLUSIVE"
    return None


def run_medians(groups):
    """The median of each non-empty run."""
    return [float(np.median(g)) for g in groups if len(g)]


def _bootstrap_medians(values, rng, size):
    x = np.asarray(values, dtype=float)
    return np.median(x[rng.integers(0, len(x), size=(size, len(x)))], axis=1)


def bootstrap_median_ci(values, confidence=CONFIDENCE, seed=SEED, resamples=RESAMPLES):
    """Percentile-bootstrap CI of the median of `values`, which must be independent units (run medians).
    nan, nan with fewer than MIN_RUNS values; a point when they are all equal. The percentile method, not
    BCa: BCa is undefined for the tied values that rate-capped benchmarks produce."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]  # a NaN or inf is no unit's median: left out, never resampled into the interval
    if len(x) < MIN_RUNS:
        return float("nan"), float("nan")
    if np.all(x == x[0]):
        return float(x[0]), float(x[0])
    meds = _bootstrap_medians(x, np.random.default_rng(seed), resamples)
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(meds, [tail, 100 - tail])
    return float(lo), float(hi)


def summarize(groups):
    """A cell's Summary from its runs (each a list of per-second samples). Raises ValueError on no values.

    Warnings, in the spirit of pyperf: fewer than 3 runs (no interval), run-to-run CV >= 10 %, a run whose
    per-second samples vary by CV >= 10 % (unstable inside the run)."""
    runs = [list(g) for g in groups if len(g)]
    if not runs:
        raise ValueError("no values to summarize")
    meds = np.asarray(run_medians(runs))
    mean = float(meds.mean())
    cv = float(meds.std(ddof=1) / abs(mean)) if len(meds) > 1 and mean else float("nan")
    within = [float(np.std(g, ddof=1) / abs(np.mean(g))) for g in runs if len(g) > 1 and np.mean(g)]
    within_cv = max(within) if within else float("nan")
    lo, hi = bootstrap_median_ci(meds)
    warnings = []
    if len(runs) < MIN_RUNS:
        warnings.append(f"{len(runs)} run(s): no confidence interval (needs {MIN_RUNS})")
    if not math.isnan(cv) and cv >= CV_WARNING:
        warnings.append(f"unstable between runs: CV {cv:.0%} >= {CV_WARNING:.0%}")
    if not math.isnan(within_cv) and within_cv >= CV_WARNING:
        warnings.append(f"unstable within a run: per-second CV up to {within_cv:.0%}")
    return Summary(runs=len(runs), samples=sum(len(g) for g in runs), median=float(np.median(meds)),
                   run_medians=[float(m) for m in meds], cv=cv, within_run_cv=within_cv,
                   minimum=float(meds.min()), maximum=float(meds.max()), ci_low=lo, ci_high=hi, warnings=warnings)


def better_log(fraction_better, direction):
    """A fraction better (0.05 = 5 % better) as the worse-oriented log ratio (negative); -inf where no ratio is
    that much better (a time 100 % shorter)."""
    if direction == "higher_is_better":
        return -math.log1p(fraction_better)
    return math.log1p(-fraction_better) if fraction_better < 1 else -math.inf


def compare(baseline_groups, candidate_groups, rounds=None, alpha=GATE_ALPHA):
    """Candidate vs baseline, each a list of runs (lists of per-second samples); see the module docstring.

    rounds: (baseline's, candidate's) round of each run, given when both sides are cells of one interleaved run:
    the interval is then the paired t over the rounds both measured (the gate's), else Welch's on log run
    values. alpha: each side of the interval for one comparison; adjust() splits it over a family."""
    a = np.asarray(run_medians(baseline_groups))
    b = np.asarray(run_medians(candidate_groups))
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both sides need values")
    med_a, med_b = float(np.median(a)), float(np.median(b))
    if med_a == 0:
        raise ValueError("the baseline median is 0: a ratio is undefined")
    if rounds is not None:
        rounds_a, rounds_b = ([r for g, r in zip(groups, rs) if len(g)] for groups, rs in
                              ((baseline_groups, rounds[0]), (candidate_groups, rounds[1])))
        # A lower-is-better orientation is the identity: the evidence keeps candidate / baseline's sign.
        ev = paired_evidence(dict(zip(rounds_a, a)), dict(zip(rounds_b, b)), "lower_is_better")
    else:
        ev = unpaired_evidence(list(a), list(b), "lower_is_better")
    logs_usable = all(_usable(v) for v in np.concatenate([a, b]))
    estimate = ev.estimate if logs_usable else float("nan")
    ratio = math.exp(estimate) if math.isfinite(estimate) else med_b / med_a
    return Comparison(baseline_median=med_a, candidate_median=med_b, ratio=ratio, estimate=estimate,
                      se=ev.se if logs_usable else float("nan"), df=ev.df, n_baseline=len(a), n_candidate=len(b),
                      paired=rounds is not None, n_pairs=ev.n if rounds is not None else 0, alpha=alpha)


@dataclasses.dataclass
class Difference:
    """Candidate minus baseline, for counts that may be 0 (a ratio is undefined where the baseline is 0)."""
    baseline_median: float
    candidate_median: float
    ci_low: float  # of the difference; nan without MIN_RUNS runs a side
    ci_high: float
    n_baseline: int
    n_candidate: int

    @property
    def difference(self):
        return self.candidate_median - self.baseline_median

    @property
    def has_ci(self):
        return not math.isnan(self.ci_low)


def difference(baseline_groups, candidate_groups, confidence=CONFIDENCE, seed=SEED, resamples=RESAMPLES):
    """The difference of the two cells' values (medians of run medians) with a percentile-bootstrap CI over
    runs, resampled as compare() resamples the ratio; 3 or more runs a side, else no interval. For counts
    that may be 0 (workload.toml's zero_possible), shown as a difference, never a ratio; no test: a count
    either moved by more than its runs spread or it did not, and the interval says which."""
    a = np.asarray(run_medians(baseline_groups))
    b = np.asarray(run_medians(candidate_groups))
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both sides need values")
    lo = hi = float("nan")
    if len(a) >= MIN_RUNS and len(b) >= MIN_RUNS:
        rng = np.random.default_rng(seed)
        diffs = _bootstrap_medians(b, rng, resamples) - _bootstrap_medians(a, rng, resamples)
        tail = (1 - confidence) / 2 * 100
        lo, hi = (float(v) for v in np.percentile(diffs, [tail, 100 - tail]))
    return Difference(float(np.median(a)), float(np.median(b)), lo, hi, len(a), len(b))


def adjust(comparisons):
    """Splits the interval's error over one family (every comparison of a metric in a table, every patch of a
    series): Bonferroni, each interval at alpha / m a side for the m comparisons that have a test. Simple and
    conservative; unlike Holm's step-down on p-values, it keeps one interval per comparison that decides its
    words (issue 82: the words were Holm's while the interval shown was a bootstrap's)."""
    family = sum(c.tested for c in comparisons)
    for c in comparisons:
        c.family = max(family, 1)
    return comparisons


@dataclasses.dataclass(frozen=True)
class GateEvidence:
    """What the gate's rule reads of one comparison (the module docstring): the mean log ratio oriented so
    that positive is worse, its standard error and degrees of freedom, over `n` rounds (paired) or runs."""
    estimate: float
    se: float
    df: float
    n: int
    paired: bool
    sd: float  # paired: of the rounds' log ratios; unpaired: the pooled sd of one side's log run values

    def bounds(self, alpha=GATE_ALPHA):
        """(lower, upper) of the interval at `alpha` a side; (nan, nan) with fewer than MIN_RUNS."""
        if self.n < MIN_RUNS or not math.isfinite(self.se):
            return float("nan"), float("nan")
        half = float(sps.t.ppf(1 - alpha, self.df)) * self.se if self.se > 0 else 0.0
        return self.estimate - half, self.estimate + half


def _usable(value):
    """A run value the log-ratio rules can take: a finite number above 0."""
    try:
        return math.isfinite(value) and value > 0
    except TypeError:
        return False


PASS_CODE, REGRESSED_CODE, INCONCLUSIVE_CODE = 0, 1, 2


def _t_quantiles(q, df):
    """sps.t.ppf(q, df) elementwise, computed once per distinct (q, df): a power simulation asks it for
    thousands of designs that share a few round counts, and t's ppf costs ~2 us an element (it was two thirds
    of //tools/sensitivity:gate_power_test's time). The same values, element for element."""
    if q.size <= 1:
        return sps.t.ppf(q, df)
    out = np.empty(q.shape)
    for level in np.unique(q):  # 1-D uniques: np.unique over pairs (axis=1) sorts records, slower than ppf
        at = q == level
        dfs, inverse = np.unique(df[at], return_inverse=True)
        out[at] = sps.t.ppf(level, dfs)[inverse.ravel()]
    return out


def three_way(estimate, se, df, margin, alpha=GATE_ALPHA):
    """The gate's rule (the module docstring) on arrays: PASS_CODE, REGRESSED_CODE or INCONCLUSIVE_CODE per
    element. estimate, se: the mean worse-oriented log ratio and its standard error; df its degrees of freedom
    (< MIN_RUNS - 1: too few rounds, INCONCLUSIVE); margin: the effect judged at, a log ratio; alpha: each side
    of the interval (GATE_ALPHA at a fixed count; a look's share under analysis/sequential.py's gated design)."""
    estimate, se, df, margin, alpha = np.broadcast_arrays(
        *(np.asarray(x, dtype=float) for x in (estimate, se, df, margin, alpha)))
    with np.errstate(invalid="ignore"):
        t = np.where(df >= 1, _t_quantiles(1 - alpha, np.maximum(df, 1)), np.nan)
        half = np.where(se > 0, t * se, np.where(df >= 1, 0.0, np.nan))
        low, high = estimate - half, estimate + half
        codes = np.full(estimate.shape, INCONCLUSIVE_CODE)
        codes[high < margin] = PASS_CODE
        codes[(low > 0) & (high >= margin)] = REGRESSED_CODE
    codes[~np.isfinite(half) | (df + 1 < MIN_RUNS)] = INCONCLUSIVE_CODE
    return codes


def worse_log(fraction_worse, direction):
    """A fraction worse (0.05 = 5 % worse) as the worse-oriented log ratio the rule reads (inverse of
    worse_fraction)."""
    return -math.log1p(-min(fraction_worse, 1 - 1e-12)) if direction == "higher_is_better" else math.log1p(fraction_worse)


def worse_fraction(log_worse, direction):
    """A worse-oriented log ratio as the fraction the metric gets worse by."""
    return -math.expm1(-log_worse) if direction == "higher_is_better" else math.expm1(log_worse)


def orient(log_ratio, direction):
    """A log ratio (candidate / baseline) as "positive is worse" for a metric of `direction`."""
    return -log_ratio if direction == "higher_is_better" else log_ratio


def _sd(values):
    """The sample sd (ddof 1); exactly 0 for equal values (numpy's mean of three equal logs can differ from them
    in the last bit, and equal values would then get an interval of 1e-15 instead of a point)."""
    x = np.asarray(values, dtype=float)
    return 0.0 if np.ptp(x) == 0 else float(np.std(x, ddof=1))


def paired_evidence(baseline, candidate, direction):
    """GateEvidence of rounds paired by index: {round: run median} a side; rounds missing a side, or with a
    value <= 0 or not finite (NaN, inf: never a measurement), are left out."""
    w = [orient(math.log(candidate[r] / baseline[r]), direction)
         for r in sorted(set(baseline) & set(candidate)) if _usable(baseline[r]) and _usable(candidate[r])]
    n = len(w)
    if n < 2:
        return GateEvidence(float(np.mean(w)) if w else float("nan"), float("nan"), max(n - 1, 0), n, True,
                            float("nan"))
    sd = _sd(w)
    return GateEvidence(float(np.mean(w)), sd / math.sqrt(n), n - 1, n, True, sd)


def unpaired_evidence(baseline, candidate, direction):
    """GateEvidence of two sides measured apart (lists of run medians): Welch's interval of the difference
    of mean log run values."""
    a = np.log([v for v in baseline if _usable(v)])
    b = np.log([v for v in candidate if _usable(v)])
    n = min(len(a), len(b))
    if n < 2:
        est = orient(float(b.mean() - a.mean()), direction) if len(a) and len(b) else float("nan")
        return GateEvidence(est, float("nan"), 0, n, False, float("nan"))
    va, vb = _sd(a) ** 2 / len(a), _sd(b) ** 2 / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if va + vb > 0 else float(n - 1)
    pooled = math.sqrt((_sd(a) ** 2 + _sd(b) ** 2) / 2)
    return GateEvidence(orient(float(b.mean() - a.mean()), direction), se, df, n, False, pooled)
