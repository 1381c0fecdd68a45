"""Sequential repetitions: a comparison stops being measured when its answer is clear, and the error rate
holds with every look counted.

The design (stated in analysis/stats.py's assumptions too): repeated confidence intervals (Jennison and
Turnbull, "Interim analyses: the repeated confidence interval approach", JRSS B 51(3), 1989; and their
book "Group Sequential Methods with Applications to Clinical Trials", 2000, ch. 9). After each interleaved
round from `min` on, a comparison's interval is computed at a nominal level chosen so that the intervals of
ALL looks cover the true change together with probability 1 - alpha. Any decision read off them (different,
equivalent) is then wrong with probability at most alpha, however many looks were taken and whenever the
comparison stopped: optional stopping is accounted for, not ignored.

Why this design and not an anytime-valid confidence sequence: the looks are few and known in advance
(rounds min..max), and with 3 runs a side a mixture-martingale sequence is far wider than a t interval at
the same coverage (its boundary at n = 3 is several times the t quantile), so it would almost never stop
early, which is the point of stopping. Group-sequential levels spend alpha only on the looks that exist.

- The unit is the round: a round measures both sides of a comparison, interleaved, so both saw the same
  host state. A round contributes one paired log ratio, log(candidate run median / baseline run median);
  rounds where either side has no ok run are left out (the look uses the pairs it has).
- The interval of a look with n pairs is mean +/- t(n-1) * sd / sqrt(n) on the log ratios (the log ratios
  are assumed independent between rounds and close to normal; a run median of many per-second samples is).
  Exponentiated, it is an interval of the candidate/baseline ratio.
- Levels: the first look (at `min` pairs) gets FIRST_LOOK_SHARE of alpha (with 3 runs a side the t quantile
  of 2 degrees of freedom is large, and spending more there is what lets a clear answer stop at the first
  look); the later looks share the rest at one constant nominal level (Pocock's choice), found by simulating
  the t statistics of all looks jointly (seeded, so the same design gives the same levels everywhere).
- alpha is per family: a look at m comparisons uses alpha / m for each (Bonferroni; valid under any
  dependence and with sequential looks, where Holm's step-down is not).
- Classification against the metric's minimum effect d (analysis/thresholds.py): *different* when the
  interval lies wholly outside [1 - d, 1 + d], *equivalent* when it lies wholly inside, else *undecided*;
  at `max` an undecided comparison stops as "max reached: undecided".

Two rules read these looks (a run's policy `stop` names its rule, its manifest stores it, readers replay it):
- "decided" (the studies'): the two-sided classification above, at alpha = ALPHA.
- "gated" (the nightlies', issue 79): the gate's own three-way rule (analysis/stats.three_way: PASS,
  REGRESSED, INCONCLUSIVE against the asked margin) at every look, on the same repeated intervals with
  2 * GATE_ALPHA split over the looks (gate_levels: so each side errs at most GATE_ALPHA over all looks
  together, as one fixed-count gate does). The runner stops a comparison at its first PASS or REGRESSED and
  keeps adding interleaved rounds while it is INCONCLUSIVE, up to `max` or the policy's time budget
  (`budget_s`); the gate reads the comparison at that look with that look's level. A budget stop only
  ends the looks early, so it spends less error than planned, never more. analysis/gate/power.py simulates
  this very stopping when it states what the gate can see.
"""

import dataclasses
import functools
import math
import statistics

import numpy as np
from scipy import stats as sps

from analysis import stats

ALPHA = 0.05
FIRST_LOOK_SHARE = 0.5
SIMULATIONS = 200_000
SEED = 20261124
MIN_ROUNDS = 3  # a look needs 3 pairs: a t interval with fewer has no useful width
# The most rounds a design may have: a reader replays every look, so a stored `max` is a cost it pays (issue 39:
# max = 1000 made the gate's replay allocate ~13 GB). rigs/matrix/planning/policy.py refuses more at the source.
MAX_ROUNDS = 100

DIFFERENT, EQUIVALENT, UNDECIDED = "different", "equivalent", "undecided"
PASS, REGRESSED, INCONCLUSIVE = "PASS", "REGRESSED", "INCONCLUSIVE"  # the gated rule's states (the gate's)
OPEN = (UNDECIDED, INCONCLUSIVE)  # states that keep a comparison measured
DECIDED_RULE, GATED_RULE = "decided", "gated"  # a policy's `stop`, a manifest's `rule`
RULES = (DECIDED_RULE, GATED_RULE)
BUDGET = "budget"  # Look.stopped_by: the policy's time budget ended the looks
_GATE_STATES = {stats.PASS_CODE: PASS, stats.REGRESSED_CODE: REGRESSED, stats.INCONCLUSIVE_CODE: INCONCLUSIVE}


@functools.lru_cache(maxsize=64)
def look_levels(min_rounds, max_rounds, alpha=ALPHA, first_share=FIRST_LOOK_SHARE, simulations=SIMULATIONS,
                seed=SEED):
    """{pairs n: the nominal two-sided level of the look at n pairs}, for n = min_rounds..max_rounds, such that
    the t intervals of all these looks cover the mean together with probability 1 - alpha (normal pairs)."""
    if not MIN_ROUNDS <= min_rounds <= max_rounds:
        raise ValueError(f"looks from {min_rounds} to {max_rounds} pairs: need {MIN_ROUNDS} <= min <= max")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha}: need 0 < alpha < 1")
    if min_rounds == max_rounds:
        return {min_rounds: alpha}
    first = alpha * first_share
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((simulations, max_rounds))
    n = np.arange(1, max_rounds + 1)
    csum, csq = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    mean = csum / n
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt((csq - n * mean * mean) / np.maximum(n - 1, 1))
        t = np.abs(mean) / (sd / np.sqrt(n))
    p = {k: 2 * sps.t.sf(t[:, k - 1], k - 1) for k in range(min_rounds, max_rounds + 1)}
    open_after_first = p[min_rounds] >= first
    later = np.min(np.stack([p[k] for k in range(min_rounds + 1, max_rounds + 1)]), axis=0)[open_after_first]
    budget = int(math.floor(alpha * simulations)) - int((~open_after_first).sum())
    later.sort()
    level = float(later[budget - 1]) if budget >= 1 else 0.0
    # Any level strictly between the budget-th and the next smallest p gives the same crossings; the
    # midpoint keeps the simulated error at the budget instead of one draw over it.
    if budget < len(later):
        level = (level + float(later[budget])) / 2 if budget >= 1 else float(later[0]) / 2
    return {min_rounds: first, **{k: level for k in range(min_rounds + 1, max_rounds + 1)}}


def gate_levels(min_rounds, max_rounds, comparisons=1):
    """{pairs n: alpha a side of the gate's interval at the look at n pairs} under the gated rule: the
    repeated intervals of look_levels at 2 * GATE_ALPHA / comparisons (two-sided), so that each side of the
    gate's decision errs at most GATE_ALPHA / comparisons over all looks together."""
    return {k: v / 2 for k, v in look_levels(min_rounds, max_rounds, 2 * stats.GATE_ALPHA / comparisons).items()}


@dataclasses.dataclass(frozen=True)
class Look:
    state: str  # DIFFERENT, EQUIVALENT or UNDECIDED (decided rule); PASS, REGRESSED or INCONCLUSIVE (gated)
    pairs: int  # rounds that had an ok run on both sides
    rounds: int  # rounds measured so far
    ratio: float  # exp(mean log ratio): the candidate/baseline ratio; nan with no pair
    ci_low: float  # the repeated confidence interval of the ratio at this look; nan before `min` pairs
    ci_high: float
    level: float  # the nominal two-sided level of this look's interval; nan before `min` pairs
    final: bool  # decided, max reached, or (stopped_by BUDGET) the time budget ended the looks
    stopped_by: str = ""  # BUDGET when the policy's time budget ended an open comparison
    elapsed_s: float = math.nan  # the run's measuring time when it became final (the runner's; nan: unknown)

    @property
    def change(self):
        return self.ratio - 1.0

    @property
    def why(self):
        """Why it stopped, in one word: decided, max, budget (or open)."""
        if self.state not in OPEN:
            return "decided"
        if self.stopped_by == BUDGET:
            return BUDGET
        return "max" if self.final else "open"

    def reason(self):
        """Why it stopped (or why not yet), in words: "decided at round 3: equivalent"."""
        if self.state not in OPEN:
            return f"decided at round {self.rounds}: {self.state}"
        state = self.state.lower()
        if self.stopped_by == BUDGET:
            spent = f", {self.elapsed_s / 60:.1f} min" if math.isfinite(self.elapsed_s) else ""
            return f"time budget reached ({self.rounds} rounds{spent}): {state}"
        if self.final:
            return f"max reached ({self.rounds} rounds): {state}"
        return f"{state} after {self.rounds} round{'s' if self.rounds != 1 else ''}"

    def to_json(self):
        doc = dataclasses.asdict(self)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in doc.items()}


def paired_log_ratios(baseline, candidate):
    """[log(candidate / baseline)] over the rounds both sides measured; each side {round: run median}."""
    out = []
    for r in sorted(set(baseline) & set(candidate)):
        a, b = baseline[r], candidate[r]
        if a > 0 and b > 0:
            out.append(math.log(b / a))
    return out


def look(log_ratios, rounds, min_effect, min_rounds, max_rounds, comparisons=1, alpha=ALPHA,
         first_share=FIRST_LOOK_SHARE):
    """The state of one comparison after `rounds` rounds, from its paired log ratios (at most one a round).

    comparisons: how many comparisons this look decides together (alpha is split between them)."""
    if not 0 < min_effect < 1:
        raise ValueError(f"minimum effect {min_effect}: need a fraction between 0 and 1")
    d, early = _before_an_interval(log_ratios, rounds, min_rounds, max_rounds, UNDECIDED)
    if early is not None:
        return early
    n, at_max, ratio = len(d), rounds >= max_rounds, float(math.exp(d.mean()))
    levels = look_levels(min_rounds, max_rounds, alpha / comparisons, first_share)
    level = levels[min(n, max_rounds)]
    sd = float(d.std(ddof=1))
    half = float(sps.t.ppf(1 - level / 2, n - 1)) * sd / math.sqrt(n)
    lo, hi = math.exp(d.mean() - half), math.exp(d.mean() + half)
    if lo > 1 + min_effect or hi < 1 - min_effect:
        state = DIFFERENT
    elif lo >= 1 - min_effect and hi <= 1 + min_effect:
        state = EQUIVALENT
    else:
        state = UNDECIDED
    return Look(state, n, rounds, ratio, lo, hi, level, state != UNDECIDED or at_max)


def _before_an_interval(log_ratios, rounds, min_rounds, max_rounds, open_state):
    """(the log ratios as an array, None), or, with fewer than `min_rounds` pairs, (them, the open Look: no
    interval yet, its ratio where there is a pair)."""
    d = np.asarray(log_ratios, dtype=float)
    if len(d) >= min_rounds:
        return d, None
    ratio = float(math.exp(d.mean())) if len(d) else math.nan
    return d, Look(open_state, len(d), rounds, ratio, math.nan, math.nan, math.nan, rounds >= max_rounds)


def gate_look(log_ratios, rounds, min_effect, direction, min_rounds, max_rounds, comparisons=1):
    """The gated rule's state of one comparison after `rounds` rounds: the gate's three-way rule
    (analysis/stats.three_way) on the paired log ratios (candidate / baseline, at most one a round), judged at
    `min_effect` (a fraction worse) for a metric of `direction`, with this look's share of the error
    (gate_levels). The interval stored is of the candidate/baseline ratio, at the look's two-sided level."""
    d, early = _before_an_interval(log_ratios, rounds, min_rounds, max_rounds, INCONCLUSIVE)
    if early is not None:
        return early
    n, at_max, ratio = len(d), rounds >= max_rounds, float(math.exp(d.mean()))
    side = gate_levels(min_rounds, max_rounds, comparisons)[min(n, max_rounds)]
    se = float(d.std(ddof=1)) / math.sqrt(n)
    worse = stats.orient(float(d.mean()), direction)
    state = _GATE_STATES[int(stats.three_way(worse, se, n - 1, stats.worse_log(min_effect, direction), side))]
    half = float(sps.t.ppf(1 - side, n - 1)) * se
    lo, hi = math.exp(d.mean() - half), math.exp(d.mean() + half)
    return Look(state, n, rounds, ratio, lo, hi, 2 * side, state != INCONCLUSIVE or at_max)


def replay(baseline, candidate, rounds, min_effect, min_rounds, max_rounds, comparisons=1, alpha=ALPHA,
           first_share=FIRST_LOOK_SHARE, rule=DECIDED_RULE, direction=None):
    """The look a comparison stopped at, replaying rounds 1..`rounds` (each side {round index: run median},
    rounds counted from 0): its first final look, or the look after the last round when none was final.
    The runner and the gate both call this, so a stored run is judged as it was stopped. rule: DECIDED_RULE
    (look) or GATED_RULE (gate_look, which needs the metric's direction)."""
    if rule == GATED_RULE:
        if direction not in ("higher_is_better", "lower_is_better"):
            raise ValueError(f"the gated rule needs the metric's direction, not {direction!r}")

        def at(pairs, k):
            return gate_look(pairs, k, min_effect, direction, min_rounds, max_rounds, comparisons)
    elif rule == DECIDED_RULE:
        def at(pairs, k):
            return look(pairs, k, min_effect, min_rounds, max_rounds, comparisons, alpha, first_share)
    else:
        raise ValueError(f"stopping rule {rule!r}: expected one of {', '.join(RULES)}")
    current = at([], 0)
    for k in range(1, min(rounds, max_rounds) + 1):
        pairs = paired_log_ratios({r: v for r, v in baseline.items() if r < k},
                                  {r: v for r, v in candidate.items() if r < k})
        current = at(pairs, k)
        if current.final:
            break
    return current


def stop_rows(block):
    """The rows of a run's sequential block (its manifest's `sequential`) for tables: [comparison, metric,
    change, repeated CI, rounds, why it stopped], all text."""
    rows = []
    for q in (block or {}).get("comparisons", []):
        look_doc = q.get("look") or {}
        ratio, lo, hi = (look_doc.get(k) for k in ("ratio", "ci_low", "ci_high"))
        rows.append([f"{q['axis']}: {q['value']} vs {q['baseline_value']}", q["metric"],
                     f"{ratio - 1:+.1%}" if isinstance(ratio, (int, float)) else "-",
                     f"{lo - 1:+.1%}..{hi - 1:+.1%}" if isinstance(lo, (int, float)) and isinstance(hi, (int, float))
                     else "-", str(look_doc.get("rounds", 0)), str(q.get("reason", ""))])
    return rows


def design_text(block):
    """One sentence naming a run's sequential design."""
    if block.get("rule") == GATED_RULE:
        budget = block.get("budget_s")
        return (f"Gated rounds: {block['min']}..{block['max']} interleaved rounds"
                + (f" within a time budget of {budget / 60:.0f} min" if isinstance(budget, (int, float)) else "")
                + ", each comparison stopped at its first PASS or REGRESSED under the gate's own three-way rule, "
                f"read on repeated intervals whose error ({stats.GATE_ALPHA:.0%} a side, split over "
                f"{block['family']} comparison(s)) holds over all looks together; analysis/sequential.py.")
    return (f"Sequential repetitions: rounds {block['min']}..{block['max']}, each comparison stopped once its "
            f"repeated 95% confidence interval (all looks together; alpha split over {block['family']} "
            "comparison(s)) lay wholly outside ± the metric's minimum effect (different) or wholly inside it "
            "(equivalent). Paired change: the geometric mean of each round's candidate/baseline ratio, which "
            "an outlying round moves more than the median of medians above; analysis/sequential.py.")


@dataclasses.dataclass(frozen=True)
class Design:
    """The sequential policy a stored run stopped by (its manifest's `sequential` block). Readers (the gate)
    replay the looks from the stored results with this module's alpha, trusting the run for nothing but
    these numbers."""
    min_rounds: int
    max_rounds: int
    family: int  # comparisons the run decided together (alpha split between them)
    metrics: frozenset
    # ((candidate cell id, metric), (the rounds it says the comparison stopped at, the minimum effect it
    # decided against, what stopped it: BUDGET or "")): claims the reader checks against a replay of the stored
    # results
    recorded: tuple = ()
    rule: str = DECIDED_RULE  # the run's stopping rule (manifests before issue 79 name none: "decided")
    budget_s: float = math.inf  # the gated rule's time budget (inf: none)

    @property
    def gated(self):
        return self.rule == GATED_RULE

    @classmethod
    def of(cls, manifest):
        """The design of a run's manifest, or None for a fixed-count run; ValueError when it is malformed."""
        block = manifest.get("sequential")
        if not block:
            return None
        try:
            low, high, family = block["min"], block["max"], block["family"]
            metrics = frozenset(str(q["metric"]) for q in block["comparisons"])
            recorded = tuple(sorted(
                ((str(q.get("candidate")), str(q["metric"])),
                 ((q.get("look") or {}).get("rounds"), q.get("min_effect"),
                  BUDGET if (q.get("look") or {}).get("stopped_by") == BUDGET else ""))
                for q in block["comparisons"] if isinstance((q.get("look") or {}).get("rounds"), int)
                and isinstance(q.get("min_effect"), (int, float)) and 0 < q["min_effect"] < 1))
            rule = block.get("rule", DECIDED_RULE)
            budget = block.get("budget_s")
        except (KeyError, TypeError, AttributeError):
            raise ValueError("the run's sequential block is malformed: min, max, family and comparisons needed") from None
        if rule not in RULES:
            raise ValueError(f"the run's sequential rule {rule!r} is none of {', '.join(RULES)}")
        if budget is not None and not (isinstance(budget, (int, float)) and not isinstance(budget, bool)
                                       and 0 < budget < math.inf):
            raise ValueError(f"the run's time budget {budget!r} is not a number of seconds")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high, family)) or not (
                MIN_ROUNDS <= low <= high <= MAX_ROUNDS and 1 <= family <= 100000):
            raise ValueError(f"the run's sequential design is out of range: min {low!r}, max {high!r} (at most "
                             f"{MAX_ROUNDS}), family {family!r}")
        return cls(low, high, family, metrics, recorded, rule, float(budget) if budget is not None else math.inf)

    def run_min_effect(self, candidate_docs, metric, asked):
        """The minimum effect the run decided this comparison against: what it recorded, else `asked`."""
        said = dict(self.recorded).get((candidate_docs[0]["cell"]["id"], metric))
        return said[1] if said else asked

    def disagreement(self, candidate_docs, metric, stop, shared):
        """Why a comparison's stop, replayed as the run decided it (run_min_effect), contradicts what the run
        stored or says, or '' (the design is a claim: replayed from the results with this module's constants,
        never taken on trust). `shared`: the candidate cell is in other replayed comparisons too (it may have
        run on for them)."""
        cell = candidate_docs[0]["cell"]["id"]
        stored = 1 + max(d["cell"]["repetition"] for d in candidate_docs)
        said = (dict(self.recorded).get((cell, metric)) or (None, None))[0]
        if said is not None and said != stop.rounds:
            return (f"the run's manifest says {cell} {metric} stopped at round {said}; its results replay to a stop "
                    f"at round {stop.rounds} ({stop.reason()})")
        if stop.state not in OPEN and stored > stop.rounds and not shared:
            return (f"{cell} holds {stored} rounds, but its design stops {metric} at round {stop.rounds} "
                    f"({stop.reason()}): the rounds after it were measured and the design would hide them")
        return ""

    def stopped_at(self, baseline_docs, candidate_docs, metric, min_effect, comparisons, direction=None):
        """The look at which the run stopped this comparison, replayed from its result documents (each
        repetition a round); comparisons: how many the reader replays together (at least the run's family);
        direction: the metric's (the gated rule needs it). An open look at the last stored round of a gated run
        that recorded a budget stop there is final, stopped by the budget (a claim that only ends looks early)."""
        docs = baseline_docs + candidate_docs
        rounds = 1 + max(d["cell"]["repetition"] for d in docs)
        stop = replay(_medians_by_round(baseline_docs, metric), _medians_by_round(candidate_docs, metric), rounds,
                      min_effect, self.min_rounds, self.max_rounds, max(self.family, comparisons), rule=self.rule,
                      direction=direction)
        said = dict(self.recorded).get((candidate_docs[0]["cell"]["id"], metric))
        if self.gated and not stop.final and said and said[2] == BUDGET and said[0] == stop.rounds:
            stop = dataclasses.replace(stop, final=True, stopped_by=BUDGET)
        return stop


def run_median(doc, metric):
    """The median of an ok result document's samples of `metric` (a run's value), or None."""
    values = [s["value"] for s in doc.get("samples", []) if s["metric"] == metric] if doc.get("status") == "ok" else []
    return float(statistics.median(values)) if values else None


def _medians_by_round(docs, metric):
    medians = {d["cell"]["repetition"]: run_median(d, metric) for d in docs}
    return {r: m for r, m in medians.items() if m is not None}
