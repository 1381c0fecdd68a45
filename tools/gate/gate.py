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

Sensitivity: for every gated metric the gate states the smallest regression it catches in 95 % of designs,
D, found by running its own rule on the rig's newest committed A/A rounds (results/baselines/*/sensitivity.json,
//tools:sensitivity) at this comparison's rounds and policy, and what this run's own rounds could see. Where
the minimum effect asked is below D, the metric is judged at D and the verdict's first line says so;
--strict refuses instead (exit 2).

The decision is analysis/gate/decision.py's (the rule: analysis/stats.py). Exit status:
  0 PASS: every check's interval rules out a regression of its judged-at effect, on a run that could see it;
  1 REGRESSED: a check is significantly worse and not shown smaller than its judged-at effect;
  2 unusable input: a set missing or corrupt, provenance differing in more than the harness, host drift, a
    zero baseline, --strict refusing; an unexpected error too (its traceback in a log file the message names);
  3 INCONCLUSIVE: no regression shown, but not ruled out either (too few rounds, an interval too wide, or a
    run too noisy to see its judged-at effect). Never 0: only a PASS is a pass.

--confirm: before failing, the regressed cells are run again (the candidate's own matrix target, profile and
--set values, narrowed to each cell) and the gate fails only if the new runs regress too. The target must be
one of this checkout's rig_matrix targets (rigs/BUILD.bazel); a result file cannot name another command.
"""

import argparse
import math
import os
import shlex
import sys
import tempfile
import traceback

from analysis import resultsets, sequential, stats, thresholds
from analysis.profiling import profiles
from analysis.gate import decision as gate_decision
from analysis.gate.decision import GateError
from tools.gate import confirm as gate_confirm
from tools.gate import output as gate_output
from results import gaterecord as gate_record
from analysis import indexer
from results import safeio
from results.db import store as db_store

EXIT_PASS, EXIT_REGRESSED, EXIT_UNUSABLE, EXIT_INCONCLUSIVE = 0, 1, 2, 3
def swapped(axis, resolve):
    """True when what was given as --axis resolves as a result set (the user swapped --run and --axis)."""
    try:
        resolve(axis)
    except (resultsets.ResultSetError, OSError, ValueError):
        return False
    return True


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Gate a candidate against a baseline: two values of an axis inside one run (--run, --axis), "
                    "or two stored sets (--baseline, --candidate).",
        epilog="Exit status: 0 PASS; 1 REGRESSED; 2 unusable input (incl. host drift between stored sets); "
               "3 INCONCLUSIVE (a regression neither shown nor ruled out).")
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
                        help=f"rounds a check needs (default and least {stats.MIN_RUNS}); with fewer it is INCONCLUSIVE")
    parser.add_argument("--min-effect", action="append", default=[], metavar="METRIC=FRACTION",
                        help="override a metric's minimum effect, e.g. cpu_loop_rate=0.02")
    parser.add_argument("--confirm", action="store_true",
                        help="rerun regressed cells of the candidate once and fail only if they regress again "
                             "(stored sets only)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse (exit 2) where a metric's minimum effect is below what the gate can see (its "
                             "MDE from the rig's committed sensitivity.json), instead of judging at the MDE")
    parser.add_argument("--results-dir", help="the results folder (default: <workspace>/results)")
    parser.add_argument("--record", action="store_true",
                        help="keep the verdict beside the judged run (gate.json; never in a committed set) and index "
                             "it in the results database (--db, TUNELAB_DB, else results/.db/tunelab.sqlite)")
    parser.add_argument("--db", help="with --record: the results database")
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


def main(argv=None):
    """Exit 0 PASS, 1 REGRESSED, 2 unusable input, 3 INCONCLUSIVE; an unexpected error is 2, with its
    traceback in a log."""
    args = parse_args(argv)
    try:
        return run(args)
    except Exception:  # noqa: BLE001 - never let a crash read as a measured regression (exit 1)
        log = os.path.join(safeio.new_folder(tempfile.gettempdir(), "tunelab-gate-"), "traceback.log")
        safeio.write_text(log, traceback.format_exc())
        print(f"error: the gate failed unexpectedly (treated as unusable input, exit {EXIT_UNUSABLE}); "
              f"traceback in {log}", file=sys.stderr)
        return EXIT_UNUSABLE


def run(args):
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    cwd = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results_root = args.results_dir or os.path.join(workspace, "results")
    runfiles = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    warnings, design = [], None
    try:
        overrides = parse_min_effects(args.min_effect)
        here = lambda s: os.path.join(cwd, s) if os.path.exists(os.path.join(cwd, s)) else s  # noqa: E731
        if args.run:
            try:
                run = resultsets.resolve(here(args.run), results_root)
            except resultsets.ResultSetError as e:
                if swapped(args.axis, lambda a: resultsets.resolve(here(a), results_root)):
                    raise GateError(f"--run {args.run!r} is not a run, but --axis {args.axis!r} is one: the two are "
                                    f"swapped (--run {args.axis} --axis {args.run})") from None
                raise e
            baseline, candidate, design = within_run(run, args.axis, args.baseline_value, args.candidate_value)
        else:
            baseline = resultsets.resolve(here(args.baseline), results_root)
            candidate = resultsets.resolve(here(args.candidate), results_root)
            for s in (baseline, candidate):
                gate_decision.check_whole(s)
            warnings = gate_decision.stored_sets_warnings(baseline, candidate, args.allow_host_drift)
        for w in warnings:
            print(f"WARNING: {w}", file=sys.stderr)
        effects = thresholds.min_effects([runfiles, workspace], baseline.docs + candidate.docs)
        figures = gate_decision.figures_for(results_root, baseline.docs + candidate.docs)
        checks = gate_decision.gate(baseline, candidate, effects, args.min_runs, overrides, same_run=bool(args.run),
                      design=design, figures=figures, strict=args.strict)
        confirmed = None
        if args.confirm and any(c.regressed for c in checks):
            still = []
            for c in [c for c in checks if c.regressed]:
                command = gate_confirm.confirm_command(candidate, c, workspace)
                print(f"confirming {c.cell} {c.metric}: {shlex.join(command)}", flush=True)
                rerun = resultsets.resolve(gate_confirm.run_confirmation(command, workspace), results_root)
                again = [x for x in gate_decision.gate(baseline, rerun, effects, args.min_runs, overrides,
                                                        figures=figures)
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
    note = gate_decision.ungated_note(baseline, candidate)
    text = gate_output.markdown(checks, baseline, candidate, confirmed, list(warnings) + ([note] if note else []))
    if args.run:
        text += profile_note(run, args.axis, args.baseline_value, args.candidate_value)
    print(text, end="")
    if args.markdown:
        safeio.write_text(os.path.join(cwd, args.markdown), text)
    if args.junit:
        safeio.write_text(os.path.join(cwd, args.junit), gate_output.junit(checks, baseline, candidate))
    if args.record:
        if args.run:
            entry = gate_record.entry(checks, args.axis, args.baseline_value, args.candidate_value, None,
                                      STATES[exit_status(checks)])
            keep_verdict(run.path, entry, results_root, args.db)
        else:
            entry = gate_record.entry(checks, None, None, None, baseline.name[:512], STATES[exit_status(checks)])
            keep_verdict(candidate.path, entry, results_root, args.db)
    return exit_status(checks)


def keep_verdict(folder, entry, results_root, db):
    """--record: the verdict kept beside the run (the document first), then the run indexed with it. What cannot
    be kept is said on stderr and never changes the exit status (a regression stays one)."""
    if not folder or not gate_record.writable(folder, results_root):
        print(f"note: the verdict is not recorded: {folder} is not a run of {results_root} (a committed set is "
              "never written)", file=sys.stderr)
        return
    try:
        path = gate_record.keep(folder, entry)
    except (gate_record.RecordError, OSError, safeio.WriteRefused) as e:
        print(f"note: the verdict is not recorded: {e}", file=sys.stderr)
        return
    url = db_store.database_url(db, results_root)
    problem = indexer.index(url, [folder], results_root)
    print(f"verdict kept in {path}" + (f"; not indexed in {db_store.redacted(url)}: {problem[:300]}" if problem
                                        else f", indexed in {db_store.redacted(url)}"), file=sys.stderr)


def profile_note(run, axis, baseline_value=None, candidate_value=None):
    """Why, beside whether (issue 60): the frames that moved in the gated comparison of a profiled run
    (policy.profile), as markdown lines; "" for a run without profiles."""
    try:
        found = [c for c in profiles.comparisons(run) if c.axis == axis and c.rows
                 and baseline_value in (None, c.baseline_value) and candidate_value in (None, c.value)]
    except profiles.ProfileError as e:
        return f"\nProfiles: not compared ({e})\n"
    lines = [f"- {c.label()} ({c.event}, runs {len(c.baseline_runs)}/{len(c.candidate_runs)}): "
             f"{profiles.one_line(c.rows, limit=3)}" for c in found]
    if not lines:
        return ""
    return ("\nProfiles, the frames that moved (every mover and a flame graph: bazel run //tools:profile_diff -- "
            f"--run {run.name} --axis {axis}):\n" + "\n".join(lines) + "\n")


def within_run(run, axis, baseline_value=None, candidate_value=None):
    """(baseline, candidate, design): the two sides of one whole stored run along `axis`, and the sequential
    design it stopped by (None for fixed rounds). Raises GateError."""
    gate_decision.check_whole(run)
    baseline, candidate = gate_decision.split_run(run, axis, baseline_value, candidate_value)
    try:
        design = sequential.Design.of(run.manifest)
    except ValueError as e:
        raise GateError(str(e)) from None
    return baseline, candidate, design


def judge_within_run(run_dir, axis, baseline_value, candidate_value, results_root, workspace, metrics=None):
    """The gate's checks of two values of an axis inside one stored run (what `--run RUN --axis AXIS` prints),
    only of `metrics` if given, and their state: PASS, REGRESSED or INCONCLUSIVE (exit_status's order).
    For tools that decide by the gate's rule (//tools:bisect). Raises GateError or ResultSetError."""
    runfiles = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    run = resultsets.resolve(run_dir, results_root)
    baseline, candidate, design = within_run(run, axis, baseline_value, candidate_value)
    effects = thresholds.min_effects([runfiles, workspace], baseline.docs + candidate.docs)
    figures = gate_decision.figures_for(results_root, baseline.docs + candidate.docs)
    checks = gate_decision.gate(baseline, candidate, effects, stats.MIN_RUNS, same_run=True, design=design,
                                figures=figures)
    if metrics:
        checks = [c for c in checks if c.metric in metrics]
        if not checks:
            raise GateError(f"{run.name}: no check of {', '.join(sorted(metrics))} in this run")
    return STATES[exit_status(checks)], checks


STATES = {0: "PASS", 1: "REGRESSED", 3: "INCONCLUSIVE"}


def exit_status(checks):
    """REGRESSED over INCONCLUSIVE over PASS; a watched check (a gated run's companion) counts only when REGRESSED."""
    if any(c.regressed for c in checks):
        return EXIT_REGRESSED
    return EXIT_INCONCLUSIVE if any(c.inconclusive and not c.watched for c in checks) else EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
