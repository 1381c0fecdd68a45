"""What the gate can see, measured by running its own rule, never by a formula.

The gate's rule (analysis/stats.py states it, analysis/gate/decision.py applies it) reads the rounds' log
ratios oriented so that positive is worse. Its stated sensitivity D, for a design (a fixed count of rounds,
or the sequential policy's looks min..max, analysis/sequential.py) and an asked minimum effect e, is the
smallest true regression that `decide` flags REGRESSED in at least POWER of simulated designs, the margin
being e as in the gate (a PASS rules out e; a REGRESSED is significant and not shown smaller than e).
Simulated designs are drawn from noise:
- the calibrator's (tools/sensitivity/sensitivity.py): a committed A/A set's rounds, resampled i.i.d. with the
  small-sample correction (resampled_noise) after removing their mean (the A/A's two arms are one build: their
  mean difference is an arm bias for the arm check to find, not a shift; zero must mean zero), the shift added
  to every round; over several nights, analysis/sensitivity/nights.py;
- a run's own (the gate's "tonight could see"): normal rounds with that run's own paired sd.
Common random numbers across the search make detection monotone in the shift. False alarms are the share of
designs at zero shift flagged REGRESSED.
"""

import dataclasses
import math

import numpy as np
from scipy import stats as sps

from analysis import sequential, stats

POWER = 0.95
DRAWS = 2000
SEED = 20261128
MAX_SHIFT = 5.0  # a log ratio (x 148): a metric whose D is beyond it cannot see any regression
PASS, REGRESSED, INCONCLUSIVE = stats.PASS_CODE, stats.REGRESSED_CODE, stats.INCONCLUSIVE_CODE
STATES = {PASS: "PASS", REGRESSED: "REGRESSED", INCONCLUSIVE: "INCONCLUSIVE"}
RULE = "paired-t-1%-a-side-three-way"  # what sensitivity.json says it was computed for (schema_version 2)
# How the figures' noise is drawn (sensitivity.json's "resampling"): i.i.d. from the centred rounds with the
# small-sample correction. //tools/sensitivity:gate_power_test refuses a figure made otherwise (drawn without replacement).
RESAMPLING = "iid-centred-corrected"


def decide(estimate, se, df, margin, alpha=stats.GATE_ALPHA):
    """The gate's rule (analysis/stats.three_way, the one the gate and the runner's gated looks apply) on arrays:
    PASS, REGRESSED or INCONCLUSIVE per element."""
    return stats.three_way(estimate, se, df, margin, alpha)


@dataclasses.dataclass(frozen=True)
class Design:
    """How many rounds a comparison gets: `rounds` fixed, or sequential looks min_rounds..rounds that stop
    once the repeated interval against ± `stop_effect` (the runner's, a fraction) decides (its family of
    `comparisons` splits alpha, as the runner does)."""
    rounds: int
    min_rounds: int = 0  # 0: fixed
    stop_effect: float = 0.05
    comparisons: int = 1
    rule: str = sequential.DECIDED_RULE  # GATED_RULE: looks min_rounds..rounds by the gate's own rule

    @property
    def sequential(self):
        return self.min_rounds > 0

    @property
    def gated(self):
        return self.sequential and self.rule == sequential.GATED_RULE

    def describe(self):
        if self.gated:
            return f"{self.min_rounds}..{self.rounds} rounds, gated"
        return f"{self.min_rounds}..{self.rounds} rounds, sequential" if self.sequential else f"{self.rounds} rounds"

    def to_json(self):
        return dataclasses.asdict(self)


def stop_rounds(x, design):
    """[draws] rounds at which the runner's sequential looks stop designs x ([draws, rounds] raw log ratios,
    candidate / baseline), as analysis/sequential.look classifies: different outside ± stop_effect, equivalent
    inside; undecided designs run to `rounds`."""
    draws = x.shape[0]
    stop = np.full(draws, design.rounds)
    if not design.sequential:
        return stop
    levels = sequential.look_levels(design.min_rounds, design.rounds, sequential.ALPHA / design.comparisons)
    d = design.stop_effect
    still = np.ones(draws, bool)
    for k in range(design.min_rounds, design.rounds + 1):
        xk = x[:, :k]
        mean, sd = xk.mean(axis=1), xk.std(axis=1, ddof=1)
        half = float(sps.t.ppf(1 - levels[k] / 2, k - 1)) * sd / math.sqrt(k)
        low, high = np.exp(mean - half), np.exp(mean + half)
        final = (low > 1 + d) | (high < 1 - d) | ((low >= 1 - d) & (high <= 1 + d))
        stop[still & final] = k
        still &= ~final
    return stop


def gated_states(w, design, margin):
    """The gated rule (analysis/sequential.gate_look) on each simulated design: w [draws, rounds] worse-oriented
    log ratios; every design is looked at after each round from min_rounds on and stops at its first PASS or
    REGRESSED at that look's level; one still INCONCLUSIVE at `rounds` stays so. Returns (codes, stop rounds)."""
    levels = sequential.gate_levels(design.min_rounds, design.rounds, design.comparisons)
    draws = w.shape[0]
    codes = np.full(draws, INCONCLUSIVE)
    stop = np.full(draws, design.rounds)
    still = np.ones(draws, bool)
    for k in range(design.min_rounds, design.rounds + 1):
        wk = w[:, :k]
        now = decide(wk.mean(axis=1), wk.std(axis=1, ddof=1) / math.sqrt(k), k - 1, margin, levels[k])
        final = still & (now != INCONCLUSIVE)
        codes[final], stop[final] = now[final], k
        still &= ~final
    return codes, stop


def decide_designs(w, design, margin, direction):
    """The gate's state for each simulated design: w [draws, rounds] worse-oriented log ratios of every round
    the design could run; the runner's stopping (on raw ratios) picks how many the gate then reads, or, under
    the gated rule, the gate's own looks decide and stop (gated_states)."""
    if design.gated:
        return gated_states(w, design, margin)[0]
    raw = w if direction != "higher_is_better" else -w
    stop = stop_rounds(raw, design)
    codes = np.empty(w.shape[0], dtype=int)
    for k in np.unique(stop):
        rows = stop == k
        wk = w[rows, :k]
        sd = wk.std(axis=1, ddof=1) if k > 1 else np.full(rows.sum(), np.nan)
        codes[rows] = decide(wk.mean(axis=1), sd / math.sqrt(k), k - 1, margin)
    return codes


def resampled_noise(worse_log_ratios, design, draws=DRAWS, seed=SEED):
    """[draws, rounds] zero-mean noise resampled from recorded rounds' log ratios: centred, scaled by
    sqrt(n / (n - 1)) and drawn i.i.d. with replacement, so that a draw has the rounds' own variance (the mean
    square of n centred values is sd^2 (n - 1) / n: the small-sample correction). Never n of N without
    replacement: that shrinks the variance of a design's mean by (N - n) / (N - 1), and one that takes all N
    only permutes them, so a figure made that way promised more than a night could keep (issue 79)."""
    values = np.asarray(worse_log_ratios, dtype=float)
    n = len(values)
    values = (values - values.mean()) * (math.sqrt(n / (n - 1)) if n > 1 else 0.0)
    rng = np.random.default_rng(seed)
    return values[rng.integers(0, n, size=(draws, design.rounds))]


def normal_noise(sd, design, draws=DRAWS, seed=SEED):
    """[draws, rounds] normal noise with a run's own paired sd."""
    return np.random.default_rng(seed).standard_normal((draws, design.rounds)) * sd


to_log = stats.worse_log  # a fraction worse as the worse-oriented log ratio
to_fraction = stats.worse_fraction  # and back


@dataclasses.dataclass(frozen=True)
class Power:
    """The stated sensitivity of one design: d (log), the detection there, false alarms at zero."""
    d: float  # inf where even MAX_SHIFT is not flagged in POWER of designs
    detection_at_d: float
    false_alarm_rate: float
    draws: int

    def d_fraction(self, direction):
        return math.inf if not math.isfinite(self.d) else to_fraction(self.d, direction)

    def to_json(self, direction):
        return {"d_log": self.d if math.isfinite(self.d) else None,
                "d_worse_by": self.d_fraction(direction) if math.isfinite(self.d) else None,
                "detection_at_d": self.detection_at_d, "false_alarm_rate": self.false_alarm_rate, "draws": self.draws}


def stated_d(noise, design, asked_log, direction, power=POWER):
    """Power of the gate's rule on `noise` ([draws, rounds] zero-mean worse log ratios) with the asked margin:
    the smallest shift flagged REGRESSED in `power` of designs, and the false alarms at zero."""
    def detection(delta):
        return float(np.mean(decide_designs(noise + delta, design, asked_log, direction) == REGRESSED))

    lo, hi = 0.0, max(2 * asked_log, 8 * float(np.std(noise)), 1e-3)
    while detection(hi) < power:
        if hi >= MAX_SHIFT:
            return Power(math.inf, detection(MAX_SHIFT), _false_alarms(noise, design, asked_log, direction),
                         noise.shape[0])
        lo, hi = hi, min(2 * hi, MAX_SHIFT)
    for _ in range(24):
        mid = (lo + hi) / 2
        if detection(mid) >= power:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-5:
            break
    return Power(hi, detection(hi), _false_alarms(noise, design, asked_log, direction), noise.shape[0])


def _false_alarms(noise, design, margin, direction):
    return float(np.mean(decide_designs(noise, design, margin, direction) == REGRESSED))


def rates(noise, design, margin, direction, shift=0.0):
    """{state: share} of the designs of `noise` with a true worse shift `shift`, judged at `margin` (logs)."""
    codes = decide_designs(noise + shift, design, margin, direction)
    return {STATES[k]: float(np.mean(codes == k)) for k in STATES}
