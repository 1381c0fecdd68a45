"""Regression gate: a candidate against a baseline, per cell and metric.

    bazel run //tools:gate -- --run RUN --axis revision [--baseline-value accepted] [--candidate-value candidate]
    bazel run //tools:gate -- --baseline SET --candidate SET [--markdown FILE] [--junit FILE] [--confirm]

Within one run (the first form, what tools/nightly/nightly.sh does): baseline and candidate are two values
of an axis of one interleaved run (a revision, a variant, a JDK build); cells are paired by their other
parameters. Both sides saw the same host on the same day, so host drift cancels out.

Two stored sets (the second form): the sets must share their provenance but for the harness. Because this
host's speed drifts between days, the gate says loudly when the sets were measured on other days or hosts,
and refuses (exit 2) when their host references (analysis/drift.py) differ by more than the probe's own
noise, unless --allow-host-drift.

Sensitivity: for every gated metric the gate states the smallest regression it can catch, the MDE of the
rig's newest committed sensitivity figure (results/baselines/*/sensitivity.json, //tools:sensitivity) at the
comparison's rounds. Where the minimum effect asked is below it, the metric is judged at the MDE and the
verdict's first line says so; --strict refuses instead (exit 2).

A (cell, metric) regresses when the change is in the metric's bad direction, larger than the metric's
minimum effect (`workloads/<workload>/gate.toml`, a fraction: kept out of the workload's digest, so a new
threshold orphans no stored set), and significant: Welch's t-test on the per-run medians, Holm-adjusted
over every (cell, metric) gated together, p < alpha (analysis/stats.py states the assumptions). Exit 0
pass, 1 regressed, 2 unusable input (a set missing or corrupt, fewer than --min-runs ok runs a side,
provenance differing in more than the harness, host drift, a zero baseline). An unexpected error is exit 2
too, with its traceback in a log file the message names: never 1, which only a measured regression earns.

--confirm: before failing, the regressed cells are run again (the candidate's own matrix target, profile and
--set values, narrowed to each cell) and the gate fails only if the new runs regress too. The target must be
one of this checkout's rig_matrix targets (rigs/BUILD.bazel); a result file cannot name another command.
"""

import argparse
import collections
import dataclasses
import math
import os
import shlex
import sys
import tempfile
import traceback

from analysis import drift, resultsets, sensitivity, sensitivity_figures, sequential, stats, thresholds
from tools import gate_confirm
from tools.gate_output import headline, junit, markdown  # noqa: F401 - the gate's outputs, used as gate.*

EXIT_PASS, EXIT_REGRESSED, EXIT_UNUSABLE = 0, 1, 2
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


min_effects = thresholds.min_effects


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
            f"{c.cell} {c.metric}: asked {c.asked_min_effect:.0%}, can see {c.mde:.1%} with {min(c.runs)} rounds "
            f"(set {c.figure.set_name})" for c in blind) + ". Quiet the rig (README: Sensitivity), run more rounds, "
            "or raise the minimum effect in the workload's gate.toml")
    stats.adjust([c.comparison for c in checks])
    for check, base_docs, cand_docs in replay:
        # Judged at an MDE over 100 % (a tail latency): the looks classify against just under it.
        check.stop = design.stopped_at(base_docs, cand_docs, check.metric, min(check.min_effect, 0.999), len(replay))
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


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Gate a candidate against a baseline: two values of an axis inside one run (--run, --axis), "
                    "or two stored sets (--baseline, --candidate).",
        epilog="Exit status: 0 pass; 1 regressed; 2 unusable input (incl. host drift between stored sets).")
    parser.add_argument("--run", help="one run holding both sides (a run folder or run id)")
    parser.add_argument("--axis", help="with --run: the axis whose values are baseline and candidate")
    parser.add_argument("--baseline-value", help="with --run: the baseline's value (default: the axis' first)")
    parser.add_argument("--candidate-value", help="with --run: the candidate's value (default: the axis' second)")
    parser.add_argument("--baseline", help="a stored set: run folder, run id or baselines/NAME")
    parser.add_argument("--candidate", help="a stored set: run folder or run id")
    parser.add_argument("--allow-host-drift", action="store_true",
                        help="gate two stored sets even though their host references differ (a WARNING then)")
    parser.add_argument("--markdown", help="also write the Markdown summary to this file")
    parser.add_argument("--junit", help="write JUnit XML (one test case per cell and metric) to this file")
    parser.add_argument("--min-runs", type=int, default=stats.MIN_RUNS,
                        help=f"ok runs needed a side (default and least {stats.MIN_RUNS}: fewer have no test)")
    parser.add_argument("--min-effect", action="append", default=[], metavar="METRIC=FRACTION",
                        help="override a metric's minimum effect, e.g. cpu_loop_rate=0.02")
    parser.add_argument("--confirm", action="store_true",
                        help="rerun regressed cells of the candidate once and fail only if they regress again "
                             "(stored sets only)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse (exit 2) where a metric's minimum effect is below what the gate can see (its "
                             "MDE from the rig's committed sensitivity.json), instead of judging at the MDE")
    parser.add_argument("--results-dir", help="the results folder (default: <workspace>/results)")
    args = parser.parse_args(argv)
    within = args.run is not None or args.axis is not None
    if within and (args.baseline or args.candidate):
        parser.error("use either --run/--axis or --baseline/--candidate")
    if within and not (args.run and args.axis):
        parser.error("--run and --axis go together")
    if not within and not (args.baseline and args.candidate):
        parser.error("give --run RUN --axis AXIS, or --baseline SET --candidate SET")
    if within and args.confirm:
        parser.error("--confirm reruns stored sets; inside one run, rerun the whole matrix instead")
    if args.min_runs < stats.MIN_RUNS:
        parser.error(f"--min-runs {args.min_runs}: at least {stats.MIN_RUNS} (with fewer runs a side there is no test, "
                     "and a gate without a test passes anything)")
    return args


def parse_min_effects(items):
    """{metric: fraction} from --min-effect METRIC=FRACTION; a fraction must be finite, in (0, 1)."""
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            fraction = float(value)
        except ValueError:
            fraction = float("nan")
        if not name or not math.isfinite(fraction) or not 0 < fraction < 1:
            raise GateError(f"--min-effect {item!r}: expected METRIC=FRACTION with 0 < FRACTION < 1, "
                            "e.g. cpu_loop_rate=0.03")
        out[name] = fraction
    return out


def stored_sets_warnings(baseline, candidate, allow_drift):
    """The loud context of a comparison of two stored sets; raises GateError on host drift unless allowed."""
    warnings = drift.context_warnings(baseline, candidate)
    drifted = [c for c in drift.checks(baseline, candidate) if c.drifted]
    if drifted and not allow_drift:
        raise GateError("the host drifted between the two sets: " + "; ".join(drift.describe(c) for c in drifted)
                        + ". Gate inside one run (--run/--axis) or pass --allow-host-drift")
    warnings += ["host drift allowed: " + drift.describe(c) for c in drifted]
    return warnings


def main(argv=None):
    """Exit 0 pass, 1 regressed, 2 unusable input; an unexpected error is 2, with its traceback in a log."""
    args = parse_args(argv)
    try:
        return run(args)
    except Exception:  # noqa: BLE001 - never let a crash read as a measured regression (exit 1)
        fd, log = tempfile.mkstemp(prefix="tunelab-gate-", suffix=".log")
        with os.fdopen(fd, "w") as f:
            f.write(traceback.format_exc())
        print(f"error: the gate failed unexpectedly (treated as unusable input, exit {EXIT_UNUSABLE}); "
              f"traceback in {log}", file=sys.stderr)
        return EXIT_UNUSABLE


def run(args):
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    cwd = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results_root = args.results_dir or os.path.join(workspace, "results")
    runfiles = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    warnings, design = [], None
    try:
        overrides = parse_min_effects(args.min_effect)
        here = lambda s: os.path.join(cwd, s) if os.path.exists(os.path.join(cwd, s)) else s  # noqa: E731
        if args.run:
            run = resultsets.resolve(here(args.run), results_root)
            baseline, candidate = split_run(run, args.axis, args.baseline_value, args.candidate_value)
            try:
                design = sequential.Design.of(run.manifest)
            except ValueError as e:
                raise GateError(str(e)) from None
        else:
            baseline = resultsets.resolve(here(args.baseline), results_root)
            candidate = resultsets.resolve(here(args.candidate), results_root)
            warnings = stored_sets_warnings(baseline, candidate, args.allow_host_drift)
        for w in warnings:
            print(f"WARNING: {w}", file=sys.stderr)
        effects = min_effects([runfiles, workspace], baseline.docs + candidate.docs)
        figures = figures_for(results_root, baseline.docs + candidate.docs)
        checks = gate(baseline, candidate, effects, args.min_runs, overrides, same_run=bool(args.run),
                      design=design, figures=figures, strict=args.strict)
        confirmed = None
        if args.confirm and any(c.regressed for c in checks):
            still = []
            for c in [c for c in checks if c.regressed]:
                command = gate_confirm.confirm_command(candidate, c, workspace)
                print(f"confirming {c.cell} {c.metric}: {shlex.join(command)}", flush=True)
                rerun = resultsets.resolve(gate_confirm.run_confirmation(command, workspace), results_root)
                again = [x for x in gate(baseline, rerun, effects, args.min_runs, overrides, figures=figures)
                         if x.params == c.params and x.metric == c.metric]
                if again and again[0].regressed:
                    still.append(c)
            confirmed = (f"{len(still)} of {sum(c.regressed for c in checks)} regression(s) confirmed")
            for c in checks:
                if c.regressed and c not in still:
                    c.unconfirmed = True
    except (resultsets.ResultSetError, GateError, gate_confirm.ConfirmError, thresholds.ThresholdError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_UNUSABLE
    text = markdown(checks, baseline, candidate, confirmed, warnings)
    print(text, end="")
    if args.markdown:
        with open(os.path.join(cwd, args.markdown), "w") as f:
            f.write(text)
    if args.junit:
        with open(os.path.join(cwd, args.junit), "w") as f:
            f.write(junit(checks, baseline, candidate))
    return EXIT_REGRESSED if any(c.regressed for c in checks) else EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
