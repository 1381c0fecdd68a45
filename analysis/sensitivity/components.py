"""Sensitivity: the smallest regression a gate design can catch, from the noise of interleaved A/A rounds.

The model (after Kalibera and Jones, "Rigorous benchmarking in reasonable time", ISMM 2013), on the log of
each measured value, so that effects are ratios:

    log y[i, j, k] = mu + round[i] + run[i, j] + window[i, j, k]

i a round (one run of each arm, interleaved: what host drift moves together), j a run inside the round (its
own process launch), k a measurement window or iteration inside the run (a per-second sample). The three
terms are independent, zero-mean, normal, with variances T1 (rounds), T2 (runs), T3 (windows). Assumed, not
shown: windows inside a run are independent (they are a time series, so T3 / n3 understates the window
term's share and the allocation below over-values longer runs a little), and the variances do not drift
within a set. Estimated by the balanced ANOVA of the paper (its section 3): S3 = the pooled variance of
windows inside runs, S2 = of run means inside rounds, S1 = of round means, and T3 = S3, T2 = S2 - S3 / n3,
T1 = S1 - S2 / n2, each clamped at 0 (a negative estimate means "too small to see here").

A paired comparison (both arms in every round) cancels the round term: a round's log ratio has variance
2 (T2 + T3 / n3). The gate's unit is the round's log ratio of run medians; its standard deviation over the
recorded rounds (`paired_sd`) is what the minimum detectable effect uses. The components predict it for
other allocations (more windows a run, more rounds).

Minimum detectable effect (MDE): the smallest true change d (a log ratio: 0.127 is a change of about
12.7 %) that a two-sided paired t test at alpha = 0.01 (false alarms <= 1 %) detects with power 0.95 over
n rounds: the noncentral t with n - 1 degrees of freedom and noncentrality d sqrt(n) / paired_sd. This
model prices allocations (rounds x windows within a budget) from the components; what the gate itself can
see is never taken from it: analysis/gate/power.py runs the gate's rule on the recorded rounds.
"""

import dataclasses
import math

import numpy as np
from scipy import optimize
from scipy import stats as sps


ALPHA = 0.01  # false alarms at most 1 %
POWER = 0.95
MIN_ROUNDS = 6  # a set with fewer rounds says too little about its own noise to be trusted with a figure
SIMULATIONS = 20000
SEED = 20261125


class SensitivityError(ValueError):
    """The input cannot give a sensitivity figure (refused with the reason, before any resampling)."""


@dataclasses.dataclass(frozen=True)
class Components:
    """Variance components of log values (see the module docstring) and what each level costs."""
    rounds: float  # T1: between rounds (host drift)
    runs: float  # T2: between runs inside a round (process launches)
    windows: float  # T3: between windows inside a run; 0 where a run has one value
    windows_per_run: float  # n3 as recorded (mean over runs)
    runs_per_round: int  # n2 (2: the two arms)
    round_s: float  # what a round costs, seconds (both runs and their cool-down)
    run_overhead_s: float  # a run's cost besides its measured windows (launch, warm-up, evidence)
    window_s: float  # one window's length; 0 where windows are not a choice (one value a run)
    windows_separable: bool = None  # None: one value a run; False: windows not independent (see estimate_...)

    def paired_sd(self, windows=None):
        """The predicted standard deviation of a round's log ratio with `windows` windows a run."""
        w = self.windows_per_run if windows is None else windows
        return math.sqrt(2 * (self.runs + (self.windows / w if w else 0.0)))

    def run_cost_s(self, windows=None):
        w = self.windows_per_run if windows is None else windows
        return self.run_overhead_s + w * self.window_s

    def to_json(self):
        doc = dataclasses.asdict(self)
        doc["sd"] = {"rounds": math.sqrt(self.rounds), "runs": math.sqrt(self.runs),
                     "windows": math.sqrt(self.windows)}
        return doc


def estimate_components(rounds, round_s=0.0, run_overhead_s=0.0, window_s=0.0, batches=4):
    """Components of `rounds`: [[run windows, one list of values per run] per round], every round with the same
    number of runs (>= 2). A run's value is the log of the median of its windows (the gate's statistic); the
    window level is estimated from `batches` contiguous batch medians of each run's positive windows (batch
    medians absorb short-range dependence between neighbouring windows). Where the window level's estimate
    is not smaller than the variance of run values inside rounds, windows are not independent enough to be
    a separate level here (a run's total work is fixed, so a slow second is made up by a fast one): the level
    is folded into the runs (`windows_separable` False) and allocations keep the recorded windows.
    Raises SensitivityError on fewer than 2 rounds or a run whose median is not a positive number."""
    if len(rounds) < 2:
        raise SensitivityError(f"{len(rounds)} round(s): need at least 2 to separate rounds from runs")
    n2 = {len(r) for r in rounds}
    if len(n2) != 1 or min(n2) < 2:
        raise SensitivityError(f"every round needs the same number (>= 2) of runs; found {sorted(n2)}")
    values, window_parts, counts = [], [], []
    for r in rounds:
        row = []
        for w in r:
            w = np.asarray(w, dtype=float)
            if len(w) == 0 or np.any(~np.isfinite(w)) or not np.median(w) > 0:
                raise SensitivityError("a run has no values, a value that is not a number, or a median <= 0")
            row.append(math.log(float(np.median(w))))
            positive = np.log(w[w > 0])
            counts.append(len(w))
            b = min(batches, len(positive) // 2 if len(positive) >= 2 * batches else len(positive))
            if b >= 2:
                medians = [float(np.median(c)) for c in np.array_split(positive, b)]
                window_parts.append(float(np.var(medians, ddof=1)) / b)
        values.append(row)
    values = np.asarray(values)
    s2 = float(np.mean(np.var(values, axis=1, ddof=1)))
    s1 = float(np.var(values.mean(axis=1), ddof=1))
    n3 = float(np.mean(counts))
    from_windows = float(np.mean(window_parts)) if window_parts else 0.0
    separable = bool(window_parts) and from_windows < s2
    t3 = from_windows * n3 if separable else 0.0
    t2 = s2 - from_windows if separable else s2
    t1 = max(0.0, s1 - s2 / values.shape[1])
    return Components(t1, t2, t3, n3, values.shape[1], round_s, run_overhead_s,
                      window_s if separable else 0.0, separable if window_parts else None)


def power_paired(delta, sd, rounds, alpha=ALPHA):
    """The power of a two-sided paired t test at `alpha` over `rounds` rounds against a true log ratio delta."""
    if rounds < 2:
        return 0.0
    if sd == 0:
        return 1.0 if delta else alpha
    df = rounds - 1
    crit = float(sps.t.ppf(1 - alpha / 2, df))
    ncp = abs(delta) * math.sqrt(rounds) / sd
    # sf with -ncp for the lower tail: nct.cdf(-crit) loses precision (and returns nan) at large ncp.
    return float(sps.nct.sf(crit, df, ncp) + sps.nct.sf(crit, df, -ncp))


def mde_paired(sd, rounds, alpha=ALPHA, power=POWER):
    """The minimum detectable effect (a log ratio) of the paired t test; 0 for a noiseless metric."""
    if rounds < 2:
        raise SensitivityError(f"{rounds} round(s): a paired t test needs 2 or more")
    if sd == 0:
        return 0.0
    df = rounds - 1
    crit = float(sps.t.ppf(1 - alpha / 2, df))
    f = lambda ncp: float(sps.nct.sf(crit, df, ncp) + sps.nct.sf(crit, df, -ncp)) - power  # noqa: E731
    hi = crit + 10.0
    while f(hi) < 0:
        hi *= 2
    ncp = optimize.brentq(f, 0.0, hi, xtol=1e-9)
    return ncp * sd / math.sqrt(rounds)


def simulate_runs(components, rounds, delta, rng, draws, windows=None):
    """(baseline, candidate): [draws x rounds] log run values (mean of `windows` log windows) from the
    components, the candidate's true log ratio being delta."""
    w = components.windows_per_run if windows is None else windows
    w = max(1, int(round(w)))
    window_sd = math.sqrt(components.windows / w) if components.windows else 0.0
    r = rng.standard_normal((draws, rounds)) * math.sqrt(components.rounds)
    a = r + rng.standard_normal((draws, rounds)) * math.sqrt(components.runs) + (
        rng.standard_normal((draws, rounds)) * window_sd)
    b = r + delta + rng.standard_normal((draws, rounds)) * math.sqrt(components.runs) + (
        rng.standard_normal((draws, rounds)) * window_sd)
    return a, b


def simulated_paired_power(components, rounds, delta, draws=SIMULATIONS, seed=SEED, alpha=ALPHA, windows=None):
    """The share of simulated designs (from the components) whose paired t test at alpha detects delta."""
    rng = np.random.default_rng(seed)
    a, b = simulate_runs(components, rounds, delta, rng, draws, windows)
    d = b - a
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(rounds))
    return float(np.mean(np.abs(t) > sps.t.ppf(1 - alpha / 2, rounds - 1)))


def allocation(components, budget_s, max_rounds=200, max_windows_factor=4):
    """The (rounds, windows a run) that minimize the MDE within `budget_s`, from the components: a dict with
    rounds, windows_per_run, mde, cost_s; windows are a choice only where a run records several."""
    if components.round_s <= 0:
        raise SensitivityError("the set records no run durations: its rounds' cost is unknown")
    if budget_s < components.round_s:
        raise SensitivityError(f"a budget of {budget_s:.0f} s is shorter than one round ({components.round_s:.0f} s)")
    per_round_fixed = components.round_s - components.runs_per_round * components.run_cost_s()
    recorded_w = max(1, int(round(components.windows_per_run)))
    choices = range(1, max_windows_factor * recorded_w + 1) if components.window_s > 0 else [recorded_w]
    best = None
    for w in choices:
        round_cost = per_round_fixed + components.runs_per_round * components.run_cost_s(w)
        n = min(max_rounds, int(budget_s // round_cost))
        if n < 3:
            continue
        m = mde_paired(components.paired_sd(w), n)
        if best is None or m < best["mde"]:
            best = {"rounds": n, "windows_per_run": w, "mde": m, "cost_s": n * round_cost}
    if best is None:
        raise SensitivityError(f"a budget of {budget_s:.0f} s fits fewer than 3 rounds (one costs "
                               f"{components.round_s:.0f} s): a paired test needs 3")
    return best


def worse_by(delta, direction):
    """A log-ratio effect as the fraction a metric gets worse by in its bad direction (what the gate compares
    with a minimum effect): 1 - exp(-delta) for a rate, exp(delta) - 1 for a time; ~delta for small ones."""
    return 1 - math.exp(-delta) if direction == "higher_is_better" else math.expm1(delta)
