"""The regression gate's decision: a candidate against a baseline, per cell and metric (tools/gate.py is its
command line, tools/gate_output.py its output formats).

A (cell, metric) regresses when the change is in the metric's bad direction, larger than the metric's minimum
effect (`workloads/<workload>/gate.toml`, analysis/thresholds.py), and significant: Welch's t-test on the
per-run medians, Holm-adjusted over every (cell, metric) gated together, p < alpha (analysis/stats.py states
the assumptions). Where the rig's committed sensitivity figure (analysis/sensitivity_figures.py) says the
gate cannot see the asked minimum effect at the comparison's rounds, the check is judged at the MDE. A run
that stopped by a sequential design (analysis/sequential.py) is judged by the look it stopped at.
Input that cannot be gated raises GateError.
"""

import collections
import dataclasses
import math
import os

from analysis import drift, resultsets, sensitivity, sensitivity_figures, sequential, stats, thresholds

DEFAULT_MIN_EFFECT = thresholds.DEFAULT_MIN_EFFECT
ALLOWED_DIFFERENCES = frozenset({"harness"})  # the candidate is usually new code; everything else must match


class GateError(ValueError):
    pass


@dataclasses.dataclass
class Check:
    cell: str  # the cell's parameters that vary, as text
    params: dict
    metric: str
    unit: str
    direction: str
    min_effect: float
    comparison: stats.Comparison
    runs: tuple  # (baseline, candidate) ok runs
    unconfirmed: bool = False  # regressed, but a confirmation rerun did not
    stop: sequential.Look = None  # a sequential run's look at which this comparison stopped (sequential.Design)
    asked_min_effect: float = None  # gate.toml's (or --min-effect's), where the MDE raised min_effect above it
    figure: sensitivity_figures.Figure = None  # the committed sensitivity figure of this rig and metric, if any
    mde: float = None  # the figure's MDE at this comparison's rounds

    @property
    def judged_at_mde(self):
        return self.asked_min_effect is not None

    @property
    def worse_by(self):
        """How much worse the candidate is (0.05 = 5 % worse), whatever the metric's direction."""
        change = self.comparison.change
        return -change if self.direction == "higher_is_better" else change

    @property
    def significant(self):
        p = self.comparison.p_adjusted
        return not math.isnan(p) and p < stats.ALPHA

    @property
    def decided(self):
        """A sequential run decided this comparison (different or equivalent) before or at its last round."""
        return self.stop is not None and self.stop.state != sequential.UNDECIDED

    def _worse(self, change):
        return change < 0 if self.direction == "higher_is_better" else change > 0

    @property
    def regressed(self):
        if self.decided:
            return self.stop.state == sequential.DIFFERENT and self._worse(self.stop.change) and not self.unconfirmed
        return self.worse_by > self.min_effect and self.significant and not self.unconfirmed

    @property
    def status(self):
        if self.regressed:
            verdict = "REGRESSED"
        elif self.unconfirmed:
            verdict = "regressed, not confirmed by the rerun"
        elif self.decided:
            verdict = "improved" if self.stop.state == sequential.DIFFERENT else "pass"
        elif -self.worse_by > self.min_effect and self.significant:
            verdict = "improved"
        else:
            verdict = "pass"
        if self.stop is None:
            return verdict
        # Undecided at the last round: the fixed design's rule on every run decided it.
        return f"{verdict} ({self.stop.reason()}" + (")" if self.decided else "; fixed rule)")


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


def gate(baseline, candidate, min_effect, min_runs=3, overrides=None, resamples=stats.RESAMPLES, same_run=False,
         design=None, figures=None, strict=False):
    """[Check] for every cell both sets measured; raises GateError when the input cannot be gated.
    min_effect: {metric: fraction} (min_effects()); overrides win over it.
    resamples=0 skips the ratio's CI, which the decision does not use (for calibration's many draws).
    same_run: the two sides come from one run (split_run), so their provenance differs by design.
    design: the sequential.Design the run stopped by (Design.of its manifest): its metrics are judged by the
    look they stopped at; undecided at the last round, by the fixed rule.
    figures: {metric: sensitivity_figures.Figure}, the rig's committed sensitivity: a check whose minimum effect is
    below the figure's MDE at its rounds is judged at the MDE (strict: GateError instead)."""
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
    base_cells, cand_cells = _by_params(baseline.docs), _by_params(candidate.docs)
    values = collections.defaultdict(set)
    for key in list(base_cells) + list(cand_cells):
        for k, v in key:
            values[k].add(v)
    varying = {k for k, v in values.items() if len(v) > 1}
    declared = collections.OrderedDict()
    for s in (baseline, candidate):
        declared.update(s.metrics())
    checks, too_few, replay = [], [], []
    for key, cand_docs in cand_cells.items():
        if key not in base_cells:
            continue
        params = dict(key)
        label = " ".join(f"{k}={v}" for k, v in key if k in varying) or "(the only cell)"
        for metric, decl in declared.items():
            a, b = _runs(base_cells[key], metric), _runs(cand_docs, metric)
            a, b = [r for r in a if r], [r for r in b if r]
            if not a and not b:
                continue
            if len(a) < min_runs or len(b) < min_runs:
                too_few.append(f"{label} {metric}: {len(a)} baseline and {len(b)} candidate ok runs")
                continue
            effect = (overrides or {}).get(metric, min_effect.get(metric, DEFAULT_MIN_EFFECT))
            try:
                comparison = stats.compare(a, b, resamples=resamples)
            except ValueError as e:  # a zero baseline: no ratio, so no verdict either way
                raise GateError(f"{label} {metric}: {e}") from None
            checks.append(Check(label, params, metric, decl["unit"], decl["direction"], effect, comparison,
                                (len(a), len(b))))
            judge_at_mde(checks[-1], (figures or {}).get(metric), candidate.first_ok())
            if design is not None and metric in design.metrics:
                replay.append((checks[-1], base_cells[key], cand_docs))  # once the family is known
    if too_few:
        raise GateError(f"too few samples (need {min_runs} ok runs a side): " + "; ".join(too_few))
    if not checks:
        raise GateError(f"nothing to gate: {baseline.name} and {candidate.name} share no measured cell")
    blind = [c for c in checks if c.judged_at_mde]
    if strict and blind:
        raise GateError("--strict: the gate cannot see the asked minimum effect: " + "; ".join(
            f"{c.cell} {c.metric}: asked {c.asked_min_effect * 100:g}%, can see {c.mde:.1%} with {min(c.runs)} rounds "
            f"(set {c.figure.set_name})" for c in blind) + ". Quiet the rig (README: Sensitivity), run more rounds, "
            "or raise the minimum effect in the workload's gate.toml")
    stats.adjust([c.comparison for c in checks])
    cells = collections.Counter(cand_docs[0]["cell"]["id"] for _, _, cand_docs in replay)
    for check, base_docs, cand_docs in replay:
        # Judged at an MDE over 100 % (a tail latency): the looks classify against just under it.
        check.stop = design.stopped_at(base_docs, cand_docs, check.metric, min(check.min_effect, 0.999), len(replay))
        as_run = design.stopped_at(base_docs, cand_docs, check.metric,
                                   design.run_min_effect(cand_docs, check.metric, check.asked_min_effect or check.min_effect), len(replay))
        problem = design.disagreement(cand_docs, check.metric, as_run, cells[cand_docs[0]["cell"]["id"]] > 1)
        if problem:
            raise GateError(f"unusable sequential run: {problem}")
    return checks


def judge_at_mde(check, figure, doc):
    """Raises the check's minimum effect to the figure's MDE at its rounds where the MDE is larger."""
    if figure is None:
        return
    if doc is not None:
        figure = figure.for_workload(((doc.get("provenance") or {}).get("workload") or {}).get("sha256"))
    check.figure = figure
    check.mde = sensitivity.worse_by(figure.mde_at(min(check.runs)), check.direction)
    if check.mde > check.min_effect:
        check.asked_min_effect, check.min_effect = check.min_effect, check.mde


def figures_for(results_root, docs):
    """{metric: Figure} of the rig of `docs`, from results_root/baselines/*/sensitivity.json (newest each)."""
    rigs = {(d.get("matrix") or {}).get("rig") for d in docs} - {None}
    if len(rigs) != 1:
        return {}
    try:
        return sensitivity_figures.committed(os.path.join(results_root, "baselines"), rigs.pop())
    except sensitivity.SensitivityError as e:
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
