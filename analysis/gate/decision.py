"""The regression gate's decision: a candidate against a baseline, per cell and metric (tools/gate/gate.py is its
command line, tools/gate/output.py its output formats).

One rule (analysis/stats.py states it; analysis/gate/power.py measures what it can see by running it): each
(cell, metric) is PASS where its interval rules out a regression of the effect judged at, REGRESSED where it
is significantly worse and not shown smaller than that effect, INCONCLUSIVE otherwise. Inside one run the
interval is the paired t interval over interleaved rounds; two stored sets are compared unpaired.

What it judges at: the asked minimum effect (`workloads/<workload>/gate.toml`, analysis/thresholds.py): a PASS
rules it out. What it can see: the rig's stated D, the shift the rule flags in 95 % of designs resampled from
the rig's committed A/A rounds at this comparison's rounds and policy (analysis/sensitivity/figures.py,
analysis/gate/power.py), and what this run could see, the same search on normal rounds with the run's own sd.
A PASS whose run could see less than max(asked, D) by more than NOISE_MARGIN is INCONCLUSIVE: the night was
too noisy to promise what a calm one does. A sequential run (analysis/sequential.py) is read at the rounds it
stopped at, and its stops are replayed from the results (a claim, never trusted). A gated run (the nightlies':
stop = "gated") stopped by this very rule: the check is the rule at the look it stopped at, on that look's
rounds and at that look's share of the error, so the runner's stop and the verdict are one decision; its
noise shows as rounds added and, past the budget, as INCONCLUSIVE (no noise margin on top: a PASS there
already rules out the asked effect with the error held over every look). Input that cannot be gated raises
GateError.
"""

import collections
import dataclasses
import math
import os

from analysis import drift, resultsets, sequential, stats, thresholds
from analysis.sensitivity import figures as sensitivity_figures
from analysis.gate import power as gate_power

DEFAULT_MIN_EFFECT = thresholds.DEFAULT_MIN_EFFECT
ALLOWED_DIFFERENCES = frozenset({"harness"})  # the candidate is usually new code; everything else must match
# A PASS needs this run to see what the gate judges at, within half again: the sd of 5 rounds (4 degrees of
# freedom) exceeds the true sd by 50 % on ~6 % of nights by chance (chi-square), so a calm night rarely loses
# its PASS to this, and a night with twice the noise (MapReduce, 2026-11-26: 15.9 % against 7.6 %) does.
NOISE_MARGIN = 0.5
PASS, REGRESSED, INCONCLUSIVE = "PASS", "REGRESSED", "INCONCLUSIVE"


class GateError(ValueError):
    pass


@dataclasses.dataclass
class Check:
    """One (cell, metric) judged. Effects are fractions worse (0.05: 5 % worse in the metric's bad direction)
    where a reader sees them; logs stay inside."""
    cell: str  # the cell's parameters that vary, as text
    params: dict
    metric: str
    unit: str
    direction: str
    min_effect: float  # asked (gate.toml's or --min-effect's): what a PASS rules out, a REGRESSED does not
    comparison: stats.Comparison  # the medians, for the table
    runs: tuple  # (baseline, candidate) ok runs
    evidence: stats.GateEvidence = None
    unconfirmed: bool = False  # regressed, but a confirmation rerun did not
    stop: sequential.Look = None  # a sequential run's look at which this comparison stopped
    figure: sensitivity_figures.Figure = None  # the rig's committed figure of this metric, if any
    design: gate_power.Design = None  # the rounds and policy this comparison had
    stated: gate_power.Power = None  # the figure's D at `design` (None: no usable figure)
    tonight: gate_power.Power = None  # this run's own D at `design`
    state: str = INCONCLUSIVE
    reasons: list = dataclasses.field(default_factory=list)  # why INCONCLUSIVE (or what a PASS did not say)
    alpha: float = stats.GATE_ALPHA  # each side of the interval: a gated run's look has its share
    measuring_s: float = math.nan  # a gated run: the launches' durations up to the look it stopped at
    # A gated run's metric its design does not decide on (a companion): judged and shown, and a REGRESSED one
    # still fails the gate, but its INCONCLUSIVE does not make the night undecided (issue 79: Redis' tail
    # latencies, paired sd up to 60 %, left every A/A night INCONCLUSIVE while GET and SET had passed).
    watched: bool = False

    @property
    def gated(self):
        return self.stop is not None and self.design is not None and self.design.gated

    @property
    def ci_level(self):
        """The two-sided level of the check's interval, a fraction (0.98 at the fixed-count rule)."""
        return 1 - 2 * self.alpha

    @property
    def stated_d(self):
        """The stated D as a fraction worse (inf: the rig cannot see any regression), or None."""
        return None if self.stated is None else self.stated.d_fraction(self.direction)

    @property
    def tonight_d(self):
        return None if self.tonight is None else self.tonight.d_fraction(self.direction)

    @property
    def can_see(self):
        """max(asked, stated D): the smallest regression the gate promises to catch here."""
        return max(self.min_effect, self.stated_d) if self.stated_d is not None else self.min_effect

    @property
    def cannot_see_asked(self):
        """The rig's stated D is above the asked effect: a regression between them may pass unflagged."""
        return self.stated_d is not None and self.stated_d > self.min_effect

    @property
    def worse_by(self):
        """How much worse the candidate is (0.05 = 5 % worse): the rule's estimate, else the medians' ratio."""
        if self.evidence is not None and math.isfinite(self.evidence.estimate):
            return gate_power.to_fraction(self.evidence.estimate, self.direction)
        change = self.comparison.change
        return -change if self.direction == "higher_is_better" else change

    @property
    def worse_by_interval(self):
        """(low, high) of the rule's interval as fractions worse; (nan, nan) without one."""
        if self.evidence is None:
            return math.nan, math.nan
        return tuple(gate_power.to_fraction(b, self.direction) if math.isfinite(b) else math.nan
                     for b in self.evidence.bounds(self.alpha))

    @property
    def regressed(self):
        return self.state == REGRESSED and not self.unconfirmed

    @property
    def inconclusive(self):
        return self.state == INCONCLUSIVE

    @property
    def improved(self):
        high = self.worse_by_interval[1]
        return self.state == PASS and math.isfinite(high) and high < 0

    def decide(self):
        """Sets state and reasons from the evidence, the judged-at effect and this run's own D."""
        self.reasons = []
        ev = self.evidence
        if ev.n < stats.MIN_RUNS:
            self.state = INCONCLUSIVE
            self.reasons.append(f"{ev.n} round(s) {'paired' if ev.paired else 'a side'}: the rule needs "
                                f"{stats.MIN_RUNS}")
            return self
        code = int(gate_power.decide(ev.estimate, ev.se, ev.df, gate_power.to_log(self.min_effect, self.direction),
                                     self.alpha))
        self.state = gate_power.STATES[code]
        if self.state == INCONCLUSIVE:
            low, high = self.worse_by_interval
            self.reasons.append(f"the interval ({_pct(low)}..{_pct(high)} worse) neither rules out "
                                f"{self.min_effect:.1%} nor shows a regression")
        if self.gated:
            return self  # the runner stopped by this rule: its rounds and budget are the night's noise
        seen = self.tonight_d
        if self.state == PASS and seen is not None and seen > self.can_see * (1 + NOISE_MARGIN):
            self.state = INCONCLUSIVE
            self.reasons.append(f"this run could see {seen:.1%}, the gate promises {self.can_see:.1%}: too noisy "
                                f"(margin {NOISE_MARGIN:.0%}); run more rounds or quiet the host")
        return self

    @property
    def status(self):
        if self.unconfirmed:
            verdict = "regressed, not confirmed by the rerun"
        elif self.state == PASS:
            verdict = "pass (improved)" if self.improved else "pass"
        else:
            verdict = self.state
        if self.reasons and self.state == INCONCLUSIVE:
            verdict += ": " + "; ".join(self.reasons)
        if self.watched:
            verdict += " (watched: the run decides on its gated metrics)"
        if self.stop is None:
            return verdict
        if self.gated:
            return f"{verdict} ({self.took()})"
        return f"{verdict} ({self.stop.reason()})"

    def took(self):
        """A gated check's rounds, measuring minutes and why it stopped: "5 rounds, 1.2 min: decided"."""
        why = {"decided": "decided", sequential.BUDGET: "the time budget ended it", "max": "max rounds reached",
               "open": "the run ended before a decision"}[self.stop.why]
        spent = f", {self.measuring_s / 60:.1f} min" if math.isfinite(self.measuring_s) else ""
        return f"{self.stop.rounds} rounds{spent}: {why}"


def _pct(x):
    return "-" if x is None or not math.isfinite(x) else f"{x:+.1%}"


NOT_RUN = ("pending", "not_needed")  # a manifest's repetition states that leave no result


def check_whole(result_set):
    """Raises GateError unless the set holds every round its manifest says it ran, and no other (issue 58: rounds
    r3-r9 deleted from a complete run passed the gate). A round is a (cell, repetition) whose manifest state is
    a status (ok, failed, invalid, skipped); its result must be stored with that status."""
    manifest = result_set.manifest or {}
    if result_set.published or not manifest.get("cells"):
        return
    listed = {}
    for cell in manifest["cells"]:
        for rep, state in (cell.get("repetitions") or {}).items():
            if state not in NOT_RUN:
                listed[(cell.get("id"), str(rep))] = state
    stored = {(d["cell"]["id"], str(d["cell"]["repetition"])): d.get("status") for d in result_set.docs}
    missing = sorted(k for k in listed if k not in stored and listed[k] != "skipped")
    extra = sorted(k for k in stored if k not in listed)
    changed = sorted(k for k in stored if k in listed and stored[k] != listed[k])
    problems = []
    for what, keys in (("missing", missing), ("not in its manifest", extra), ("with another status than its "
                                                                                 "manifest's", changed)):
        if keys:
            shown = ", ".join(f"{c} r{r}" for c, r in keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
            problems.append(f"{len(keys)} round(s) {what}: {shown}")
    if problems:
        raise GateError(f"{result_set.name} is not whole: " + "; ".join(problems) + ". A gate reads every round a "
                        "run measured or none: restore the run's files (or gate the run as it was stored)")


def split_run(result_set, axis, baseline_value=None, candidate_value=None):
    """(baseline, candidate): the two sides of one run along `axis`, each a ResultSet whose documents no
    longer carry the axis, so cells pair by their other parameters. The baseline value defaults to the
    axis' first value in the run's matrix, the candidate to its second."""
    values = list(dict.fromkeys(d["cell"]["params"][axis] for d in result_set.docs if axis in d["cell"]["params"]))
    declared = [str(v) for v in (result_set.manifest.get("matrix", {}).get("axes") or {}).get(axis, [])]
    values = [v for v in declared if v in values] + [v for v in values if v not in declared]
    if len(values) < 2:
        raise GateError(f"{result_set.name}: axis {axis!r} has {len(values)} value(s) in this run; need two to gate")
    base = baseline_value or values[0]
    cand = candidate_value or next(v for v in values if v != base)
    for v in (base, cand):
        if v not in values:
            raise GateError(f"{result_set.name}: axis {axis} has no value {v!r} (values: {', '.join(values)})")

    def side(value):
        docs = []
        for d in result_set.docs:
            if d["cell"]["params"].get(axis) == value:
                params = {k: v for k, v in d["cell"]["params"].items() if k != axis}
                docs.append(dict(d, cell=dict(d["cell"], params=params)))
        return resultsets.ResultSet(f"{result_set.name} {axis}={value}", result_set.path, result_set.manifest, docs)
    return side(base), side(cand)


def _by_params(docs):
    cells = collections.OrderedDict()
    for d in docs:
        cells.setdefault(tuple(sorted(d["cell"]["params"].items())), []).append(d)
    return cells


def _runs(docs, metric):
    return [[s["value"] for s in d["samples"] if s["metric"] == metric] for d in docs if d["status"] == "ok"]


def _rounds(docs, metric):
    """The round (repetition) of each run _runs keeps, in its order."""
    return [d["cell"]["repetition"] for d in docs if d["status"] == "ok"
            and any(s["metric"] == metric for s in d["samples"])]


def gate(baseline, candidate, min_effect, min_runs=3, overrides=None, same_run=False, design=None, figures=None,
         strict=False, draws=gate_power.DRAWS):
    """[Check] for every cell both sets measured, each decided; raises GateError when the input cannot be gated.
    min_effect: {metric: fraction} (min_effects()); overrides win over it.
    same_run: the two sides come from one run (split_run): rounds pair by repetition and provenance differs
    by design; otherwise the sets are compared unpaired.
    design: the sequential.Design the run stopped by (Design.of its manifest), or None for a fixed count.
    figures: {metric: sensitivity_figures.Figure}, the rig's committed sensitivity (strict: GateError where the
    stated D is above the asked effect, instead of judging at it).
    A check with fewer than max(min_runs, 3) rounds is INCONCLUSIVE, never PASS."""
    _check_gateable(baseline, candidate, same_run)
    base_cells, cand_cells = _by_params(baseline.docs), _by_params(candidate.docs)
    values = collections.defaultdict(set)
    for key in list(base_cells) + list(cand_cells):
        for k, v in key:
            values[k].add(v)
    varying = {k for k, v in values.items() if len(v) > 1}
    declared = collections.OrderedDict()
    for s in (baseline, candidate):
        declared.update(s.metrics())
    checks, replay = [], []
    for key, cand_docs in cand_cells.items():
        if key not in base_cells:
            continue
        params = dict(key)
        label = " ".join(f"{k}={v}" for k, v in key if k in varying) or "(the only cell)"
        for metric, decl in declared.items():
            if decl.get("zero_possible"):
                continue  # a count that may be 0 has no ratio: reported (ungated_note), never gated
            a, b = _runs(base_cells[key], metric), _runs(cand_docs, metric)
            a, b = [r for r in a if r], [r for r in b if r]
            if not a and not b:
                continue
            effect = (overrides or {}).get(metric, min_effect.get(metric, DEFAULT_MIN_EFFECT))
            check = check_of(label, params, metric, decl, effect, base_cells[key], cand_docs, same_run, min_runs)
            check.design = _design_of(check, design, effect)
            check.watched = design is not None and design.gated and metric not in design.metrics
            _sensitivity(check, (figures or {}).get(metric), candidate.first_ok(), draws)
            checks.append(check)
            if design is not None and metric in design.metrics and a and b:
                replay.append((check, base_cells[key], cand_docs))  # once the family is known
    if not checks:
        raise GateError(f"nothing to gate: {baseline.name} and {candidate.name} share no measured cell")
    blind = [c for c in checks if c.cannot_see_asked]
    if strict and blind:
        raise GateError("--strict: the gate cannot see the asked minimum effect: " + "; ".join(
            f"{c.cell} {c.metric}: asked {stats.fmt_effect(c.min_effect)} worse, catches >= {_pct(c.stated_d)} at "
            f"{c.design.describe()} (set {c.figure.set_name})" for c in blind) + ". Quiet the rig (README: "
            "Sensitivity), run more rounds, or raise the minimum effect in the workload's gate.toml")
    _replay_stops(design, replay)
    for check in checks:
        check.decide()
    return checks


def check_of(label, params, metric, decl, effect, base_docs, cand_docs, same_run, min_runs=stats.MIN_RUNS):
    """The undecided Check of one (cell, metric): its comparison and the evidence the rule reads, paired by round
    (same_run) or measured apart. Raises GateError where the rule has no log ratio."""
    a, b = _runs(base_docs, metric), _runs(cand_docs, metric)
    a, b = [r for r in a if r], [r for r in b if r]
    rounds = (_rounds(base_docs, metric), _rounds(cand_docs, metric)) if same_run and a and b else None
    try:  # a side with no ok run still gets its check: INCONCLUSIVE, named
        comparison = stats.compare(a or [[math.nan]], b or [[math.nan]], rounds=rounds)
    except ValueError as e:  # a zero baseline: no ratio, so no verdict either way
        raise GateError(f"{label} {metric}: {e}") from None
    if any(m <= 0 for m in stats.run_medians(a) + stats.run_medians(b)):
        # The rule reads log ratios; a rate or time of 0 is a run that measured nothing, not a verdict.
        raise GateError(f"{label} {metric}: a run's median is <= 0 (the baseline's "
                        f"{comparison.baseline_median:g}, the candidate's {comparison.candidate_median:g}): "
                        "no ratio, so no verdict either way")
    if same_run:
        evidence = stats.paired_evidence(sequential._medians_by_round(base_docs, metric),
                                         sequential._medians_by_round(cand_docs, metric), decl["direction"])
    else:
        evidence = stats.unpaired_evidence(stats.run_medians(a), stats.run_medians(b), decl["direction"])
    if evidence.n < min_runs:
        evidence = dataclasses.replace(evidence, n=min(evidence.n, stats.MIN_RUNS - 1))
    return Check(label, params, metric, decl["unit"], decl["direction"], effect, comparison, (len(a), len(b)),
                 evidence)


def ungated_note(baseline, candidate):
    """The line saying which declared metrics the gate leaves to the reports (counts that may be 0), or None."""
    declared = collections.OrderedDict()
    for s in (baseline, candidate):
        declared.update(s.metrics())
    counts = [m for m, d in declared.items() if d.get("zero_possible")]
    return (f"not gated: {', '.join(counts)} (counts that may be 0, so no ratio; the reports show their medians "
            "and differences)") if counts else None


def _check_gateable(baseline, candidate, same_run):
    """GateError unless both sides are measured sets with an ok result and, measured apart, one provenance."""
    for s in (baseline, candidate):
        if s.published:
            raise GateError(f"{s.name} is a published reference set: only measured sets can be gated")
        if s.first_ok() is None or s.first_ok()["status"] != "ok":
            raise GateError(f"{s.name} has no measured (ok) result")
    diffs = [] if same_run else resultsets.provenance_differences(baseline.first_ok(), candidate.first_ok(),
                                                                  ALLOWED_DIFFERENCES)
    if diffs:
        raise GateError("mismatched provenance: " + "; ".join(f"{k}: {a} (baseline) vs {b} (candidate)"
                                                              for k, a, b in diffs))


def _design_of(check, run_design, asked):
    """The gate_power.Design of a check: the run's sequential looks where it stopped by them, else the rounds
    it measured."""
    if run_design is not None and check.metric in run_design.metrics:
        return gate_power.Design(run_design.max_rounds, run_design.min_rounds, min(asked, 0.999),
                                 max(run_design.family, 1), run_design.rule)
    return gate_power.Design(max(check.evidence.n, stats.MIN_RUNS))


def _replay_stops(design, replay):
    """Sets each replayed check's stop (the look its run stopped it at, replayed from the results: a claim the
    run makes, never trusted) and, under the gated rule, reads the check at that look."""
    cells = collections.Counter(cand_docs[0]["cell"]["id"] for _, _, cand_docs in replay)
    for check, base_docs, cand_docs in replay:
        # Judged at an effect over 100 % (a tail latency): the looks classify against just under it.
        asked = design.run_min_effect(cand_docs, check.metric, check.min_effect)
        try:
            check.stop = design.stopped_at(base_docs, cand_docs, check.metric, min(asked, 0.999), len(replay),
                                           check.direction)
        except ValueError as e:
            raise GateError(f"unusable sequential run: {e}") from None
        problem = design.disagreement(cand_docs, check.metric, check.stop, cells[cand_docs[0]["cell"]["id"]] > 1)
        if problem:
            raise GateError(f"unusable sequential run: {problem}")
        if design.gated:
            _read_at_look(check, base_docs, cand_docs, max(design.family, len(replay)))


def _read_at_look(check, base_docs, cand_docs, comparisons):
    """A gated run's check read as the runner's look read it: the rounds before the look it stopped at, that
    look's share of the error (analysis/sequential.gate_levels), and the launches' time up to it."""
    look = check.stop
    base = {r: v for r, v in sequential._medians_by_round(base_docs, check.metric).items() if r < look.rounds}
    cand = {r: v for r, v in sequential._medians_by_round(cand_docs, check.metric).items() if r < look.rounds}
    check.evidence = stats.paired_evidence(base, cand, check.direction)
    if look.pairs >= sequential.MIN_ROUNDS:
        levels = sequential.gate_levels(check.design.min_rounds, check.design.rounds, comparisons)
        check.alpha = levels[min(look.pairs, check.design.rounds)]
    durations = [d.get("duration_s") for d in base_docs + cand_docs if d["cell"]["repetition"] < look.rounds]
    if durations and all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in durations):
        check.measuring_s = float(sum(durations))


def _sensitivity(check, figure, doc, draws):
    """Sets the check's stated D (from the rig's committed A/A rounds) and this run's own D, both by running
    the rule (analysis/gate/power.py) at the check's design."""
    asked_log = gate_power.to_log(check.min_effect, check.direction)
    if figure is not None:
        if doc is not None:
            figure = figure.for_workload(((doc.get("provenance") or {}).get("workload") or {}).get("sha256"))
        check.figure = figure
        if figure.usable:
            check.stated = _stated(figure.aa_worse_log_ratios, check.design, asked_log, check.direction, draws)
    ev = check.evidence
    if ev.n >= stats.MIN_RUNS and math.isfinite(ev.sd):
        # Unpaired sides: the difference of two means of n has the variance of a paired mean with sd * sqrt(2).
        sd = ev.sd if ev.paired else ev.sd * math.sqrt(2)
        noise = gate_power.normal_noise(sd, check.design, draws)
        check.tonight = gate_power.stated_d(noise, check.design, asked_log, check.direction)


_STATED = {}  # (A/A rounds, design, asked, direction, draws) -> Power: the simulation is seeded, so exact


def _stated(aa_worse_log_ratios, design, asked_log, direction, draws):
    """The stated D of a figure's A/A rounds at `design`, simulated once per process: the nights of one rig share
    their figure and design (the history and the results database judge dozens of them)."""
    key = (tuple(aa_worse_log_ratios), design, asked_log, direction, draws)
    if key not in _STATED:
        noise = gate_power.resampled_noise(aa_worse_log_ratios, design, draws)
        _STATED[key] = gate_power.stated_d(noise, design, asked_log, direction)
    return _STATED[key]


def figures_for(results_root, docs):
    """{metric: Figure} of the rig of `docs`, from results_root/baselines/*/sensitivity.json (newest each)."""
    rigs = {(d.get("matrix") or {}).get("rig") for d in docs} - {None}
    if len(rigs) != 1:
        return {}
    try:
        return sensitivity_figures.committed(os.path.join(results_root, "baselines"), rigs.pop())
    except sensitivity_figures.SensitivityError as e:
        raise GateError(f"a committed sensitivity file is unusable: {e}") from None


def stored_sets_warnings(baseline, candidate, allow_drift):
    """The loud context of a comparison of two stored sets; raises GateError on host drift unless allowed."""
    warnings = drift.context_warnings(baseline, candidate)
    drifted = [c for c in drift.checks(baseline, candidate) if c.drifted]
    if drifted and not allow_drift:
        raise GateError("the host drifted between the two sets: " + "; ".join(drift.describe(c) for c in drifted)
                        + ". Gate inside one run (--run/--axis) or pass --allow-host-drift")
    warnings += ["host drift allowed: " + drift.describe(c) for c in drifted]
    return warnings
