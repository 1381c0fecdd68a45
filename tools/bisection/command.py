"""Bisect a regression to the commit that made it (issue 61).

    bazel run //tools:bisect -- --matrix //rigs:calibration_matrix --profile nightly --good REV --bad REV
        [--metric M] [--budget 2h] [--rounds 5] [--max-rounds 20] [--force]
    bazel run //tools:bisect -- --resume results/bisect-out/ID

The commits are bad's first parents back to good (a merge is one commit; its side branch is not bisected).
Each commit is built in a git worktree of its own (tools/bisection/build.py). First the regression is confirmed:
bad's build runs with good's, interleaved in one run, and the gate's rule (tools/gate/gate.py, analysis/stats.py)
must find bad REGRESSED against good; if it rules that out the bisect ends "did not reproduce". Then each
step runs the midpoint interleaved with BOTH known ends in one run and asks the rule twice (tools/bisection/core.py:
good -> midpoint and midpoint -> bad): GOOD, BAD, or UNKNOWN. An unclear answer is measured again with twice
the rounds, up to --max-rounds; still unclear, the bisect stops and says so: it never guesses. A commit that
does not build is skipped and named beside the answer. Last, the first bad commit runs against its parent
once more: its change, interval and what that run could see.

Every step is stored as it ends (results/bisect-out/ID/bisect.json, and each step's run under results/ like
any other run), so an interrupted bisect resumes; one bisect at a time on a host (a lock in the host state
folder). Exit status: 0 the first bad commit named; 2 bad input or a step that could not run; 3 stopped
UNKNOWN (the rounds it would need are printed); 4 the regression did not reproduce; 130 interrupted.
"""

import argparse
import datetime
import glob
import os
import re
import secrets
import shlex
import sys
import time

from analysis import resultsets, thresholds
from analysis.reports import bisect_pages
from analysis.gate.decision import GateError
from results import safeio, store
from results.db import store as db_store
from rigs.host import hoststate
from tools.bisection import build as bisect_build
from tools.bisection import core as bisect_core
from tools.bisection import step_profiles as bisect_profiles
from tools.bisection.texts import fmt_s, pair_text, short, steps_table, summarize
from tools.gate import gate
from tools.gate import confirm as gate_confirm
from analysis import indexer
from tools.bisection.build import BisectInputError, BuildFailed
from tools.bisection.core import SKIPPED, UNKNOWN

EXIT_FOUND, EXIT_UNUSABLE, EXIT_UNKNOWN, EXIT_NOT_REPRODUCED, EXIT_INTERRUPTED = 0, 2, 3, 4, 130
SCHEMA, RECORD = bisect_pages.SCHEMA, bisect_pages.RECORD
BUILD_ESTIMATE_S = 90  # a worktree build of a matrix target here: ~30 s (calibration) to a few minutes (Hadoop)
OWNED_SETTINGS = bisect_pages.OWNED_SETTINGS
TRUSTED_BUILDS = "bisect-builds"  # in the host state folder: the builds a Builder made, by folder and commit
RESUME_TAKES = {"budget", "force", "builder", "keep_builds", "results_dir", "state_dir", "answer_file", "java", "converter"}


def parse_duration(text):
    """Seconds of "2h", "90m", "1h30m", "45s" or a number of seconds."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?", text.strip())
    if not text.strip() or not m or not any(m.groups()):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a duration such as 2h, 90m, 1h30m or 3600")
    h, mins, s = (int(g or 0) for g in m.groups())
    return h * 3600 + mins * 60 + s


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Name the commit that made a regression: a bisect whose every step is decided by the gate's rule "
                    "(both ends measured with the midpoint, interleaved in one run; never a guess).",
        epilog="Exit status: 0 first bad commit named; 2 bad input or a step could not run; 3 stopped UNKNOWN; "
               "4 the regression did not reproduce; 130 interrupted (resume with --resume FOLDER).")
    p.add_argument("--matrix", help="the matrix target, e.g. //rigs:calibration_matrix")
    p.add_argument("--profile", help="the matrix profile each step runs (its cells and policy; a gated profile "
                                     "such as nightly has a `revision` axis)")
    p.add_argument("--good", help="a revision without the regression")
    p.add_argument("--bad", help="a later revision with it (on the first-parent line after --good)")
    p.add_argument("--axis", help="bisect the ordered values of this axis instead of commits (a patch series' "
                                  "prefixes: variant; a dependency bump: hadoop or jdk), all run by this checkout's build")
    p.add_argument("--values", metavar="GOOD,...,BAD", help="with --axis: its values in order, the good one first")
    p.add_argument("--metric", action="append", default=[],
                   help="judge only this metric (repeatable; default: every metric the workload gates)")
    p.add_argument("--set", action="append", default=[], metavar="AXIS=V1,V2",
                   help="passed to each run (narrow the cells); not revision or policy.repetitions, the bisect's own")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds a run measures first (default 5)")
    p.add_argument("--max-rounds", type=int, default=20,
                   help="an unclear step is measured again with twice the rounds up to this many (default 20)")
    p.add_argument("--budget", type=parse_duration, default=parse_duration("2h"),
                   help="machine time the estimate may reach (default 2h); over it the bisect refuses without --force")
    p.add_argument("--force", action="store_true", help="run although the estimate exceeds --budget")
    p.add_argument("--no-host-reference", action="store_true",
                   help="each run skips the runner's host reference probe (~10 s before and after)")
    p.add_argument("--builder", metavar="PROGRAM",
                   help="build a commit with PROGRAM CHECKOUT TARGET OUT (a runfiles tree at OUT) instead of Bazel")
    p.add_argument("--keep-builds", action="store_true", help="keep each commit's worktree and build at the end")
    p.add_argument("--resume", metavar="FOLDER", help="continue an interrupted bisect from its folder")
    p.add_argument("--answer-file", metavar="FILE",
                   help="write the outcome as JSON to FILE when the bisect ends (state, text, first_bad, record): "
                        "for scripts (tools/nightly/nightly.sh), which read this, never the console")
    p.add_argument("--results-dir", help="where runs and bisects are stored (default: <workspace>/results)")
    p.add_argument("--db", help="the results database the record and its runs are indexed in after every step "
                                "(default: TUNELAB_DB, else results/.db/tunelab.sqlite)")
    p.add_argument("--state-dir", default=hoststate.default_state_dir(),
                   help="the host state folder holding the bisect lock (as the runner's)")
    p.add_argument("--java", help=argparse.SUPPRESS)  # with --converter: the answer's differential flame graphs
    p.add_argument("--converter", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.resume:
        given = [k for k, v in vars(args).items() if k not in RESUME_TAKES | {"resume"} and v != p.get_default(k)]
        if given:
            p.error(f"--resume takes the stored bisect's settings; {', '.join('--' + g.replace('_', '-') for g in given)} "
                    "cannot change them")
    elif args.axis or args.values:
        if not (args.axis and args.values) or args.good or args.bad:
            p.error("--axis and --values go together, instead of --good and --bad")
        if not (args.matrix and args.profile):
            p.error("give --matrix and --profile with --axis and --values")
    elif not (args.matrix and args.profile and args.good and args.bad):
        p.error("give --matrix, --profile, --good and --bad (or --axis and --values, or --resume FOLDER)")
    if not 3 <= args.rounds <= args.max_rounds <= 200:
        p.error(f"--rounds {args.rounds} --max-rounds {args.max_rounds}: need 3 <= rounds <= max-rounds <= 200 (the "
                "gate's rule needs 3 rounds to test)")
    if args.java and args.converter:  # given relative to the runfiles by the target's args
        args.java, args.converter = os.path.abspath(args.java), os.path.abspath(args.converter)
    for item in args.set:
        problem = bisect_pages.set_problem(item, args.axis)
        if problem:
            p.error(f"--set {problem}")
    return args


def gated_metrics(build, wanted):
    """The metrics the bisect judges: those the workload's gate.toml names (its [min_effect]), or `wanted`,
    each of which must be one of them."""
    try:
        build_args = safeio.read_text(build.args_file, bisect_build.MAX_ARGS_BYTES).splitlines()
    except (OSError, safeio.InputError) as e:
        raise BisectInputError(f"{build.args_file}: {e}") from None
    workload = next((a.split("=", 1)[1] for a in build_args if a.startswith("--workload=")), "")
    folder = workload.split("/")[1] if workload.startswith("workloads/") else ""
    gated = {}
    for root in [os.path.join(build.runfiles, "tunelab")] + thresholds.default_roots():
        path = os.path.join(root, "workloads", folder, "gate.toml")
        if folder and os.path.isfile(path):
            gated = thresholds.read_gate_toml(path)
            break
    if not gated:
        raise BisectInputError(f"the workload {workload or '?'} has no gate.toml [min_effect]: nothing is gated to "
                               "bisect on")
    unknown = [m for m in wanted if m not in gated]
    if unknown:
        raise BisectInputError(f"--metric {unknown[0]}: not a metric this rig gates ({', '.join(sorted(gated))})")
    return sorted(wanted or gated)


def any_gated_metrics():
    """Every metric some workload's gate.toml names: a --metric outside them is refused before a build."""
    names = set()
    for root in thresholds.default_roots():
        for path in glob.glob(os.path.join(glob.escape(root), "workloads", "*", "gate.toml")):
            names |= set(thresholds.read_gate_toml(path))
    return names


class Bisect:
    """A bisect's settings, builds and stored record (FOLDER/bisect.json, rewritten after every step)."""

    def __init__(self, record, folder, builder, workspace, results_root, args):
        self.record, self.folder, self.builder = record, folder, builder
        self.workspace, self.results_root, self.args = workspace, results_root, args
        self.bisection = bisect_core.Bisection(record["commits"], [bisect_core.Step(**s) for s in record["steps"]])
        self.builds = {}
        self.index_problem = ""

    def save(self):
        self.record["steps"] = [s.to_json() for s in self.bisection.steps]
        store.write_side_document(self.folder, RECORD, self.record)
        self.index()

    def index(self):
        """The record just written and its steps' runs, indexed in the results database (issue 83: the document
        first, then its rows); a database that cannot take them is said once, and the bisect goes on."""
        runs = [m["run"] for m in [self.record.get("confirmation"), self.record.get("final"),
                                   *self.record["measures"].values()] if isinstance(m, dict) and m.get("run")]
        folders = [self.folder] + sorted({r for r in runs if os.path.isfile(os.path.join(r, "manifest.json"))})
        url = db_store.database_url(getattr(self.args, "db", None), self.results_root)
        problem = indexer.index(url, folders, self.results_root)
        if problem and not self.index_problem:
            print(f"   the results database {db_store.redacted(url)} did not take this bisect: {problem[:300]} "
                  f"(its record and runs are stored; index them later: bazel run //tools:results -- import)",
                  flush=True)
        self.index_problem = problem

    def checkout_build(self):
        """This checkout's build of the matrix (an axis bisect runs every value with it)."""
        if None not in self.builds:
            print(f"   building {self.record['matrix']} in this checkout", flush=True)
            b = self.builder.build_checkout()
            self.record["machine_s"] += b.seconds
            self.builds[None] = b
        return self.builds[None]

    def build(self, commit):
        if self.record.get("axis"):
            return self.checkout_build()
        if commit not in self.builds:
            print(f"   building {short(commit)} {self.record['subjects'].get(commit, '')[:60]}", flush=True)
            b = self.builder.build(commit)
            self.record["machine_s"] += b.seconds
            self.builds[commit] = b
        return self.builds[commit]

    def measure(self, candidate, others, pairs, rounds, label):
        """One interleaved run of `candidate`'s build with `others` ({revision value: commit}) and the gate's
        rule on `pairs` [(baseline value, candidate value)]: {"run", "rounds", "seconds", "pairs": {"b->c": summary}}."""
        roles = [v for v in ("good",) if v in others] + ["candidate"] + [v for v in ("bad",) if v in others]
        axis = self.record.get("axis")
        if axis:  # the "commits" are values of an axis, all run by this checkout's build
            value_of = dict(others, candidate=candidate)
            values = [value_of[r] for r in roles]
            runs_with = [f"--set={axis}={','.join(values)}"]
            build = self.checkout_build()
        else:
            value_of = {r: r for r in roles}
            values = roles
            runs_with = [f"--set=revision={','.join(roles)}"] + [
                f"--revision={v}={self.build(c).runfiles}" for v, c in others.items()]
            build = self.build(candidate)
        argv = ([f"--profile={self.record['profile']}", f"--set=policy.repetitions={rounds}", "--no-next-steps"]
                + runs_with + [f"--set={s}" for s in self.record["sets"]]
                + (["--no-host-reference"] if self.record["no_host_reference"] else [])
                + ([f"--results-dir={self.results_root}"] if self.args.results_dir else [])
                + [f"--state-dir={self.args.state_dir}"])
        log = log_path(self.folder, f"run-{label}-{rounds}r.log")
        print(f"   running {label}: {rounds} interleaved rounds of {', '.join(values)} (log {log})", flush=True)
        started = time.monotonic()
        info = bisect_build.run_matrix(build, self.record["matrix"], argv, self.workspace, log,
                                       log_path(self.folder, "run-info.json"))
        seconds = time.monotonic() - started
        self.record["machine_s"] += seconds
        run_dir, status = info.get("run_dir"), info.get("status")
        if not run_dir or status not in (0, 1):
            raise BuildFailed(f"the {label} run ended with status {status} ({info.get('status_name', 'no run-info')}); "
                              f"see {log}")
        out = {"run": run_dir, "rounds": rounds, "seconds": round(seconds, 1), "pairs": {}}
        for base, cand in pairs:
            state, checks = gate.judge_within_run(run_dir, axis or "revision", value_of[base], value_of[cand],
                                                  self.results_root, self.workspace, set(self.record["metrics"]))
            out["pairs"][f"{base}->{cand}"] = {"state": state, "checks": [summarize(c) for c in checks]}
        return out

    def until_clear(self, clear, *measure_args):
        """Measures with --rounds, then twice the rounds while `clear(result)` is False, up to --max-rounds."""
        rounds = self.record["rounds"]
        while True:
            result = self.measure(*measure_args[:3], rounds, measure_args[3])
            if clear(result) or rounds >= self.record["max_rounds"]:
                return result
            rounds = min(2 * rounds, self.record["max_rounds"])
            said = "; ".join(f"{name} {pair_text(pair)}" for name, pair in result["pairs"].items())
            print(f"   unclear at {result['rounds']} rounds ({said}): measuring again with {rounds}", flush=True)


def estimate(bisect, here):
    """(seconds, text): the machine time of the whole bisect at --rounds, from a dry run of this checkout's
    build with a step's settings (which also checks the profile, axes and --set values)."""
    plan = log_path(bisect.folder, "plan.json")
    rec = bisect.record
    c = rec["commits"]
    three = ([f"--set={rec['axis']}={','.join(c if len(c) <= 3 else [c[0], c[len(c) // 2], c[-1]])}"]
             if rec.get("axis") else ["--set=revision=good,candidate,bad", f"--revision=good={here.runfiles}",
                                      f"--revision=bad={here.runfiles}"])
    argv = ["--dry-run", f"--plan-json={plan}", f"--profile={bisect.record['profile']}",
            f"--set=policy.repetitions={bisect.record['rounds']}"] + three + [
        f"--set={s}" for s in bisect.record["sets"]] + (["--no-host-reference"] if bisect.record["no_host_reference"] else [])
    log = log_path(bisect.folder, "plan.log")
    bisect_build.run_matrix(here, bisect.record["matrix"], argv, bisect.workspace, log, plan + ".info")
    try:
        doc = safeio.read_json(plan, 1 << 24)
        step_s = float(doc["estimated_s"])
    except (OSError, safeio.InputError, KeyError, TypeError, ValueError):
        raise BisectInputError(f"the profile {bisect.record['profile']!r} does not plan a step: "
                               f"{bisect_build.last_line(log)} (log {log})") from None
    steps = bisect.bisection.steps_left()
    runs = steps + 2  # the confirmation and the first bad against its parent, two arms: counted as full runs
    total = runs * step_s + (steps + 2) * BUILD_ESTIMATE_S
    text = (f"estimate: {steps} step(s) over {len(bisect.record['commits']) - 2} commit(s) between good and bad, "
            f"{runs} runs of ~{fmt_s(step_s)} at {bisect.record['rounds']} rounds and {steps + 2} builds of "
            f"~{fmt_s(BUILD_ESTIMATE_S)}: ~{fmt_s(total)} (an unclear step measured again with more rounds adds to it)")
    return total, text


def log_path(folder, name):
    """folder/logs/NAME, NAME made a file name (an axis value may hold '/' or ':') and checked as every path
    made from a record's field is (safeio.inside: no separator, no '..', no link out of the folder)."""
    return bisect_build.inside(folder, "logs", re.sub(r"[^A-Za-z0-9_.@+=-]", "_", name).lstrip(".") or "_")


def new_record(args, workspace, results_root):
    anywhere = any_gated_metrics()
    unknown = [m for m in args.metric if anywhere and m not in anywhere]
    if unknown:
        raise BisectInputError(f"--metric {unknown[0]}: no workload gates it ({', '.join(sorted(anywhere))})")
    target = args.matrix
    known = gate_confirm.matrix_targets(workspace)
    bisect_build.matrix_name(target)
    if target not in known:
        raise BisectInputError(f"--matrix {target}: not a matrix target of this checkout "
                               f"({', '.join(sorted(known)) or 'none found in rigs/BUILD.bazel'})")
    if args.axis:
        commits, merges = axis_values(args.axis, args.values), 0
        subjects = {v: f"{args.axis}={v}" for v in commits}
    else:
        good = bisect_build.resolve(workspace, args.good, "--good")
        bad = bisect_build.resolve(workspace, args.bad, "--bad")
        commits, merges = bisect_build.first_parent_range(workspace, good, bad)
        subjects = {c: bisect_build.subject(workspace, c) for c in commits}
    return {"schema": SCHEMA, "matrix": target, "profile": args.profile, "metrics": list(args.metric),
            "sets": list(args.set), "rounds": args.rounds, "max_rounds": args.max_rounds,
            "no_host_reference": args.no_host_reference, "axis": args.axis or None, "good": commits[0],
            "bad": commits[-1], "commits": commits, "merges": merges, "subjects": subjects,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine_s": 0.0, "confirmation": None, "measures": {}, "steps": [], "final": None, "answer": None}


def axis_values(axis, text):
    """The ordered values of an axis bisect (--axis AXIS --values GOOD,...,BAD): at least two, each once, each
    a value the runner takes."""
    values = [v.strip() for v in (text or "").split(",")]
    if not gate_confirm.AXIS_NAME.fullmatch(axis) or axis == "revision":
        raise BisectInputError(f"--axis {axis!r}: a matrix axis (a word), not revision (bisect commits with --good/--bad)")
    if len(values) < 2 or not all(values):
        raise BisectInputError(f"--values {text!r}: give the axis' values in order, the good one first and the bad one "
                               "last, e.g. --values stock,patched:SERIES@1,patched:SERIES")
    if len(set(values)) != len(values):
        raise BisectInputError(f"--values {text!r}: a value appears twice")
    bad = [v for v in values if not gate_confirm.SAFE_VALUE.fullmatch(v) or "," in v]
    if bad:
        raise BisectInputError(f"--values: {bad[0][:80]!r} is not an axis value the runner takes")
    return values


def load_record(folder):
    try:
        return bisect_pages.read_record(folder)
    except bisect_pages.BisectRecordError as e:
        raise BisectInputError(f"--resume {folder}: {e}") from None


def confirm(bisect):
    """bad against good in one run: REGRESSED goes on; PASS (ruled out) or INCONCLUSIVE at --max-rounds ends."""
    rec = bisect.record
    if rec["confirmation"] is None:
        print(f"== confirming: {short(rec['bad'])} (bad) against {short(rec['good'])} (good)", flush=True)
        rec["confirmation"] = bisect.until_clear(lambda r: r["pairs"]["good->candidate"]["state"] != "INCONCLUSIVE",
                                                 rec["bad"], {"good": rec["good"]}, [("good", "candidate")],
                                                 "confirm")
        bisect.save()
    pair = rec["confirmation"]["pairs"]["good->candidate"]
    print(f"   bad vs good: {pair_text(pair)}", flush=True)
    return pair["state"]


def step(bisect, index):
    """Measures commits[index] against both ends: a Step (SKIPPED when it does not build)."""
    rec, b = bisect.record, bisect.bisection
    commit = rec["commits"][index]
    good_i, bad_i = b.bounds()
    good, bad = rec["commits"][good_i], rec["commits"][bad_i]
    print(f"== step {len(b.steps) + 1} (<= {b.steps_left()} left): {short(commit)} "
          f"({index} of {len(rec['commits']) - 1} after good) {rec['subjects'].get(commit, '')[:60]}", flush=True)
    try:
        bisect.build(commit)
    except BuildFailed as e:
        print(f"   skipped: {e}", flush=True)
        return bisect_core.Step(commit, index, SKIPPED, why=str(e)[:500])

    def verdict(r):
        return bisect_core.judge(r["pairs"]["good->candidate"]["state"], r["pairs"]["candidate->bad"]["state"])
    result = bisect.until_clear(lambda r: verdict(r) != UNKNOWN, commit, {"good": good, "bad": bad},
                                [("good", "candidate"), ("candidate", "bad")], f"step-{short(commit)}")
    rec["measures"][commit] = dict(result, against={"good": good, "bad": bad})
    s = bisect_core.Step(commit, index, verdict(result), result["pairs"]["good->candidate"]["state"],
                         result["pairs"]["candidate->bad"]["state"], result["rounds"])
    print(f"   vs good ({short(good)}): {pair_text(result['pairs']['good->candidate'])}", flush=True)
    print(f"   bad ({short(bad)}) vs it: {pair_text(result['pairs']['candidate->bad'])}", flush=True)
    print(f"   -> {s.verdict.upper()}", flush=True)
    return s


def final(bisect, answer):
    """The first bad commit against the last good one (its parent, unless commits between were skipped)."""
    rec = bisect.record
    if rec["final"] is None:
        first_bad, last_good = answer["first_bad"], answer["last_good"]
        measured = measured_pair(rec, last_good, first_bad)
        if measured is not None:  # a step ran these two together already: its check is the answer's
            rec["final"] = measured
        else:
            print(f"== the first bad commit {short(first_bad)} against {short(last_good)}", flush=True)
            rec["final"] = dict(bisect.measure(first_bad, {"good": last_good}, [("good", "candidate")],
                                               rec["rounds"], "final"), roles=["good", "candidate"])
        bisect.save()
    return rec["final"]["pairs"]["good->candidate"]


def measured_pair(rec, good, bad):
    """The stored measurement (a run's result, its pair as "good->candidate") of `bad` against `good`, if one
    run measured the two: the confirmation, a step of `bad` with `good` as its good end, or a step of `good`
    with `bad` as its bad end."""
    if (good, bad) == (rec["good"], rec["bad"]):
        return dict(rec["confirmation"], roles=["good", "candidate"])
    for commit, m in rec["measures"].items():
        against = m.get("against", {})
        if commit == bad and against.get("good") == good:
            return dict(m, pairs={"good->candidate": m["pairs"]["good->candidate"]}, roles=["good", "candidate"])
        if commit == good and against.get("bad") == bad:
            return dict(m, pairs={"good->candidate": m["pairs"]["candidate->bad"]}, roles=["candidate", "bad"])
    return None


def run_bisect(bisect):
    """The whole bisect from wherever its record stands; returns the exit status."""
    rec, b = bisect.record, bisect.bisection
    state = confirm(bisect)
    if state == "PASS":
        return finish(bisect, "not reproduced", f"the regression did not reproduce: bad is not worse than good at "
                                                f"{rec['confirmation']['rounds']} rounds (ruled out)", EXIT_NOT_REPRODUCED)
    if state == "INCONCLUSIVE":
        # The answer carries the check itself: the change, its interval, the gate's D and the rounds that would see it.
        return finish(bisect, "unknown", f"bad vs good stayed INCONCLUSIVE at {rec['max_rounds']} rounds: the regression "
                                         "is neither shown nor ruled out; quiet the host or raise --max-rounds\n   "
                                         f"bad vs good: {pair_text(rec['confirmation']['pairs']['good->candidate'])}",
                      EXIT_UNKNOWN)
    while (index := b.next_index()) is not None:
        b.record(step(bisect, index))
        bisect.save()
    answer = b.answer()
    if answer["state"] == "unknown":
        s = next(s for s in b.steps if s.verdict == UNKNOWN)
        unclear = [f"{name}: {pair_text(pair)}" for name, pair in rec["measures"][s.commit]["pairs"].items()
                   if pair["state"] == "INCONCLUSIVE"]
        return finish(bisect, "unknown", f"{short(s.commit)} stayed unclear at {s.rounds} rounds (vs good {s.toward_good}, "
                                         f"bad vs it {s.toward_bad}): the culprit is between {short(answer['last_good'])} "
                                         f"and {short(answer['first_bad'])}; more rounds (--max-rounds) or a quieter host "
                                         "may decide it\n   " + "\n   ".join(unclear), EXIT_UNKNOWN, answer)
    pair = final(bisect, answer)
    first_bad = answer["first_bad"]
    if rec.get("axis"):
        text = f"first bad value: {rec['axis']}={first_bad}\n   against {rec['axis']}={answer['last_good']}: {pair_text(pair)}"
    else:
        text = (f"first bad commit: {first_bad} {rec['subjects'].get(first_bad, '')}\n   against "
                f"{short(answer['last_good'])}: {pair_text(pair)}")
    if answer["skipped_between"]:
        text += ("\n   commits between them that do not build (the culprit may be one of them): "
                 + ", ".join(f"{short(c)} {rec['subjects'].get(c, '')[:50]}" for c in answer["skipped_between"]))
    if rec.get("final_profiles") is None:
        rec["final_profiles"] = bisect_profiles.answer_profiles(bisect, answer)
        bisect.save()
    text += "".join(f"\n   {line}" for line in bisect_profiles.profile_text(rec["final_profiles"]))
    return finish(bisect, "found", text, EXIT_FOUND, answer)


def finish(bisect, state, text, status, answer=None):
    rec = bisect.record
    rec["answer"] = dict(answer or {}, state=state, text=text)
    rec["ended"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    bisect.save()
    if bisect.bisection.steps:
        print("\n" + steps_table(bisect))
    print(f"\n{text}\nmachine time {fmt_s(rec['machine_s'])}; record {os.path.join(bisect.folder, RECORD)}", flush=True)
    if not bisect.args.keep_builds:
        bisect.builder.remove(([] if rec.get("axis") else rec["commits"]) + ["checkout"])
    return status


def open_bisect(args, workspace, results_root):
    """(Bisect, is_new) for a new bisect (its folder made) or a resumed one."""
    if args.resume:
        folder = os.path.abspath(os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()), args.resume))
        record = load_record(folder)
        args.no_host_reference = record.get("no_host_reference", False)
    else:
        record = new_record(args, workspace, results_root)
        bisect_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)
        folder = os.path.join(safeio.check_folder(os.path.join(results_root, "bisect-out"), create=True), bisect_id)
        safeio.check_folder(os.path.join(folder, "logs"), create=True)
    builder = bisect_build.Builder(workspace, record["matrix"], folder, args.builder,
                                   trust_dir=os.path.join(args.state_dir, TRUSTED_BUILDS))
    return Bisect(record, folder, builder, workspace, results_root, args), not args.resume


def main(argv=None):
    args = parse_args(argv)
    outcome = {"state": "error", "text": "", "first_bad": None, "record": None}
    status = EXIT_UNUSABLE
    try:
        status = bisect_main(args, outcome)
    finally:
        if args.answer_file:
            outcome["exit_status"] = status
            where = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
            safeio.write_json(os.path.join(where, args.answer_file), outcome)
    return status


def bisect_main(args, outcome):
    """main()'s body; `outcome` receives what --answer-file writes."""
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    results_root = os.path.abspath(args.results_dir or os.path.join(workspace, "results"))
    lock = hoststate.HostLock(os.path.join(args.state_dir, "bisect.lock"))
    try:
        lock.acquire({"pid": os.getpid(), "command": shlex.join(sys.argv)[:500]})
    except hoststate.LockHeld as e:
        outcome["text"] = f"another bisect runs on this host ({e}); wait for it, or resume this one later"
        print(f"error: {outcome['text']}", file=sys.stderr)
        return EXIT_UNUSABLE
    except (hoststate.StateError, OSError) as e:
        outcome["text"] = f"the bisect lock: {e}"
        print(f"error: {outcome['text']}", file=sys.stderr)
        return EXIT_UNUSABLE
    bisect = None
    try:
        bisect, is_new = open_bisect(args, workspace, results_root)
        rec = bisect.record
        span = (f"{len(rec['commits'])} values of {rec['axis']}: {', '.join(rec['commits'])[:120]}" if rec.get("axis")
                else f"{len(rec['commits'])} first-parent commits {short(rec['good'])}..{short(rec['bad'])} "
                     f"({rec['merges']} merge(s), each one commit)")
        print(f"== bisect {os.path.basename(bisect.folder)}: {span}, {rec['matrix']} --profile {rec['profile']}, "
              f"metrics {', '.join(rec['metrics']) or 'the gated ones'}", flush=True)
        if is_new:
            here = bisect.build(rec["bad"])  # the axis bisect's: this checkout's
            rec["metrics"] = gated_metrics(here, rec["metrics"])
            total, text = estimate(bisect, here)
            print(f"   {text}; budget {fmt_s(args.budget)}", flush=True)
            if total > args.budget and not args.force:
                raise BisectInputError(f"the estimate {fmt_s(total)} is over the budget {fmt_s(args.budget)}: raise "
                                       "--budget, narrow the range or the cells (--set), or give --force")
            bisect.save()
        status = run_bisect(bisect)
        answer = bisect.record["answer"] or {}
        outcome.update(state=answer.get("state", "error"), text=answer.get("text", ""), first_bad=answer.get("first_bad"),
                       record=os.path.join(bisect.folder, RECORD))
        return status
    except (BisectInputError, BuildFailed, GateError, resultsets.ResultSetError, bisect_core.BisectError,
            thresholds.ThresholdError) as e:
        print(f"error: {e}", file=sys.stderr)
        outcome["text"] = str(e)
        if bisect is not None and os.path.exists(os.path.join(bisect.folder, RECORD)):
            print(f"(stored steps kept: resume with --resume {bisect.folder})", file=sys.stderr)
        return EXIT_UNUSABLE
    except KeyboardInterrupt:
        where = f"; resume with --resume {bisect.folder}" if bisect is not None else ""
        print(f"\ninterrupted{where}", file=sys.stderr)
        outcome.update(state="interrupted", text=f"interrupted{where}")
        return EXIT_INTERRUPTED
    finally:
        lock.release()


if __name__ == "__main__":
    sys.exit(main())
