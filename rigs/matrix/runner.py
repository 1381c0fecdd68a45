"""The matrix runner: plans a matrix, runs every (cell, repetition) interleaved, proves the knobs, stores
each result with its provenance, and goes on when a cell fails. It measures and stores; summarizing is
analysis' job (rigs/main.py, the entry point of every rig_matrix target, calls one and then the other).

Parts: spec.py (matrix files), plan.py (what this host can run), cell.py (one cell repetition), knobs.py
and evidence.py (apply and prove the knobs), host.py (host lock, preflight), hostref.py (host reference).
"""

import argparse
import dataclasses
import datetime
import glob
import hashlib
import json
import os
import secrets
import signal
import sys
import time
import tomllib

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from results import resultfile as results
from rigs.matrix import cell as cell_runner, host, hostref, knobs, plan, rig as rig_contract, spec
from rigs.matrix.cell import now_iso
from rigs.matrix.host import HostLock, LockHeld, preflight  # noqa: F401 (part of the runner's interface)
from tools import doctor
from tools.jdk import discovery

EXIT_OK, EXIT_CELLS_FAILED, EXIT_BAD_INPUT, EXIT_LOCKED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
JVM_START_ESTIMATE_S = 2.0
HOST_REFERENCE_ESTIMATE_S = 8.0
DEFAULT_LOCK = "/run/lock/tunelab-matrix.lock"


@dataclasses.dataclass
class Outcome:
    status: int
    run_dir: str = ""  # set once a run folder exists
    workload: object = None


@dataclasses.dataclass
class Revision:
    """Another build of the rigs (a revision axis value): its runfiles tree, commit and rig data."""
    name: str
    runfiles: str
    commit: str
    rig_data: dict


def new_run_id():
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2)


def spec_digest(matrix_path, profile, overrides, workload):
    h = hashlib.sha256()
    with open(matrix_path, "rb") as f:
        h.update(f.read())
    h.update(json.dumps([profile, sorted(overrides), workload.sha256]).encode())
    return h.hexdigest()


def check_cells(rig, planned):
    """Lets the rig refuse impossible cells (e.g. a trace format its Hadoop cannot read) before anything runs."""
    check = getattr(rig, "check", None)
    if check is None:
        return
    for p in planned:
        if p.skip_reason:
            continue
        try:
            check(p.cell.params)
        except ValueError as e:
            raise spec.SpecError(f"cell {p.cell.id} ({p.cell.label()}): {e}") from None


def write_manifest(ctx, planned, order, state, statuses):
    doc = {
        "schema_version": 1, "kind": "tunelab.run_manifest", "run_id": ctx.run_id, "state": state,
        "matrix": {"name": ctx.matrix.name, "rig": ctx.matrix.rig, "source": ctx.matrix_source,
                   "profile": ctx.profile, "overrides": ctx.overrides, "seed": ctx.matrix.seed,
                   "spec_sha256": ctx.spec_sha256, "question": ctx.matrix.question, "axes": ctx.matrix.axes,
                   "zip_groups": ctx.matrix.zip_groups, "comparison_groups": ctx.matrix.comparison_groups(),
                   "known_answers": [k.to_json() for k in ctx.matrix.known_answers]},
        "workload": {"id": ctx.workload.id, "sha256": ctx.workload.sha256},
        "host_id": ctx.report["host"]["host_id"], "preflight": ctx.preflight,
        "host_reference": ctx.manifest_host_reference,
        "revisions": {name: {"commit": r.commit, "runfiles": r.runfiles} for name, r in ctx.revisions.items()},
        "cells": [{"id": p.cell.id, "params": p.cell.params, "skip_reason": p.skip_reason or None,
                   "repetitions": {str(r): statuses.get((p.cell.id, r), "pending")
                                   for r in range(ctx.matrix.repetitions_of(p.cell))}} for p in planned],
        "order": [[c.id, r] for c, r in order], "updated_at": now_iso(),
    }
    results.atomic_write_json(os.path.join(ctx.run_dir, "manifest.json"), doc)


def estimate_seconds(planned, policy, rig=None, repetitions_of=None):
    """Wall time of the runnable cells: the rig's own estimate per cell if it has one (a trace-driven rig
    runs as long as its trace), else warm-up + measurement + cool-down + JVM start."""
    rig_estimate = getattr(rig, "estimate_seconds", None)
    total = 0.0
    for p in planned:
        if p.skip_reason:
            continue
        per = (rig_estimate(p.cell.params, policy) if rig_estimate else
               policy.warmup_s + policy.measure_s + JVM_START_ESTIMATE_S)
        total += (per + policy.cooldown_s) * (repetitions_of(p.cell) if repetitions_of else policy.repetitions)
    return total


def print_plan(console, matrix, planned, profile, rig=None):
    varying = spec.varying_axes([p.cell for p in planned])
    t = Table(title=f"Plan: {matrix.name} (profile {profile or 'default'}), rig {matrix.rig}")
    for col in ("cell", "parameters", "JDK", "status"):
        t.add_column(col, overflow="fold")
    for p in planned:
        status = (f"[yellow]skip[/yellow]: {escape(p.skip_reason)}" if p.skip_reason else
                  f"run x{matrix.repetitions_of(p.cell)}"
                  + (" (known answer)" if any(k.cell_id == p.cell.id for k in matrix.known_answers) else ""))
        jdk = f"{p.jdk['name']} {p.jdk.get('version', '')}" if p.jdk else spec.NO_JDK
        t.add_row(p.cell.id, escape(p.cell.label(varying)), jdk, status)
    console.print(t)
    est = estimate_seconds(planned, matrix.policy, rig, matrix.repetitions_of) + (
        2 * HOST_REFERENCE_ESTIMATE_S)
    runnable = sum(1 for p in planned if not p.skip_reason)
    pol = matrix.policy
    console.print(f"{len(planned)} cells, {runnable} to run x {pol.repetitions} repetitions "
                  f"(warm-up {pol.warmup_s:g} s, measure {pol.measure_s:g} s, cool-down {pol.cooldown_s:g} s, "
                  f"timeout {pol.timeout_s:g} s), {len(planned) - runnable} skipped; "
                  f"estimated time {datetime.timedelta(seconds=round(est))}")


def print_next_steps(console, ctx, args):
    console.print(f"Results: {ctx.run_dir} (manifest.json, cells/, logs/)")
    target = ctx.bazel_target or "<this target>"
    with open(ctx.matrix_source, "rb") as f:
        profiles = sorted(tomllib.load(f).get("profiles", {}))
    others = [p for p in profiles if p != args.profile and p != "smoke"]
    if others:
        console.print(f"Other profiles of this matrix: {', '.join(others)}. Plan one with: bazel run {target} -- "
                      "--profile NAME --dry-run")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Run a benchmark matrix: plan, apply and prove every knob, store results with provenance.",
        epilog="Exit status: 0 all cells ok or skipped; 1 some cells failed or were invalid; 2 bad input; "
               "3 another matrix holds the host lock; 130 interrupted (resume with --resume RUN_ID).")
    parser.add_argument("--matrix", required=True, help="the matrix TOML file")
    parser.add_argument("--workload", required=True, help="the workload folder (holds workload.toml)")
    parser.add_argument("--rig-data", action="append", default=[], metavar="NAME=PATH", help=argparse.SUPPRESS)
    parser.add_argument("--bazel-target", default="", help=argparse.SUPPRESS)
    parser.add_argument("--profile", help="a named profile of the matrix file (e.g. smoke, full)")
    parser.add_argument("--set", action="append", default=[], metavar="AXIS=V1,V2",
                        help="replace an axis' values, e.g. --set jdk=11,17 (repeatable)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the estimated time; run nothing")
    parser.add_argument("--resume", metavar="RUN_ID", help="run only the cells a stored run is missing")
    parser.add_argument("--strict", action="store_true", help="refuse to run on a busy host")
    parser.add_argument("--results-dir", help="where runs are stored (default: <workspace>/results)")
    parser.add_argument("--jdk", action="append", default=[], metavar="NAME=PATH",
                        help="declare a JDK (also TUNELAB_JDKS=NAME=PATH:...)")
    parser.add_argument("--variant-data", action="append", default=[], metavar="VARIANT=NAME=PATH",
                        help=argparse.SUPPRESS)  # from rig_matrix(variants = ...): a patched build's files
    parser.add_argument("--revision", action="append", default=[], metavar="NAME=RUNFILES",
                        help="a value of the revision axis: the runfiles tree of this target built from another "
                             "commit (e.g. in a git worktree); its cells run that build's rig artifacts")
    parser.add_argument("--no-host-reference", action="store_true",
                        help="skip the host reference probe before and after the matrix (~10 s each)")
    parser.add_argument("--seed", type=int, help="seed for the interleaved order (default: the matrix's)")
    parser.add_argument("--lock-file", default=os.environ.get("TUNELAB_LOCK_FILE", DEFAULT_LOCK), help=argparse.SUPPRESS)
    parser.add_argument("--no-gc-probes", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-next-steps", action="store_true", help=argparse.SUPPRESS)  # for tools wrapping a run
    return parser.parse_args(argv)


def load_variants(items, matrix):
    """{variant: {"data": {name: path}, "manifest": dict}} for every patched value of the variant axis;
    refuses a value the build does not provide, before anything runs."""
    given = {}
    for item in items:
        variant, name, path = (item.split("=", 2) + [None, None])[:3]
        if not name or path is None:
            raise spec.SpecError(f"--variant-data {item!r}: expected VARIANT=NAME=PATH")
        given.setdefault(variant, {})[name] = os.path.abspath(path)
    variants = {}
    for value in matrix.axes.get("variant", []):
        if value == "stock":
            continue
        data = given.get(value)
        if data is None:
            built = ", ".join(sorted(given)) or "none"
            raise spec.SpecError(f"variant={value}: this target has no such build (built: {built}); add it to the "
                                 "rig_matrix's `variants` in rigs/BUILD.bazel (third_party/<component>/defs.bzl)")
        if "manifest" not in data:
            raise spec.SpecError(f"variant={value}: its build gives no manifest (the patch set's identity)")
        with open(data.pop("manifest")) as f:
            variants[value] = {"data": data, "manifest": json.load(f)}
    return variants


def load_revisions(items, matrix, rig_data, runfiles_ws, matrix_path, required=True):
    """{name: Revision} for every --revision; refuses a revision axis value without a build to run
    (unless not `required`: a dry run plans without the builds)."""
    revisions = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise spec.SpecError(f"--revision {item!r}: expected NAME=RUNFILES")
        if name == spec.CANDIDATE_REVISION:
            raise spec.SpecError(f"--revision {name}=...: `{name}` is the build being run; name the other one")
        root = os.path.abspath(path)
        if not os.path.isdir(root):
            raise spec.SpecError(f"--revision {name}: no runfiles folder {root} (build the target at that "
                                 "revision first)")
        ws = os.path.join(root, "tunelab") if os.path.isdir(os.path.join(root, "tunelab")) else root
        data = {}
        for key, mine in rig_data.items():
            theirs = os.path.join(ws, os.path.relpath(mine, runfiles_ws))
            if not os.path.exists(theirs):
                raise spec.SpecError(f"--revision {name}: its build has no {os.path.relpath(mine, runfiles_ws)} "
                                     f"under {ws}; build this target there first")
            data[key] = theirs
        # Runfiles entries link back to the source tree the revision was built from: ask its git.
        source = os.path.realpath(os.path.join(ws, os.path.relpath(os.path.abspath(matrix_path), runfiles_ws)))
        commit, dirty = host.harness_provenance(os.path.dirname(source))
        revisions[name] = Revision(name, ws, commit + ("-dirty" if dirty else ""), data)
    wanted = set(matrix.axes.get("revision", [])) - {spec.CANDIDATE_REVISION}
    missing = sorted(wanted - set(revisions))
    if missing and required:
        raise spec.SpecError(f"the revision axis names {', '.join(missing)}: give each build with "
                             "--revision NAME=RUNFILES (tools/nightly/nightly.sh builds the accepted one)")
    unused = sorted(set(revisions) - wanted)
    if unused:
        raise spec.SpecError(f"--revision {', '.join(unused)}: not a value of this matrix's revision axis "
                             f"({', '.join(matrix.axes.get('revision', [])) or 'no revision axis'})")
    return revisions


def measure_host_reference(console, probe, when):
    """The host reference measurements, or [] (with a warning) when the probe is missing or fails."""
    if probe is None:
        return []
    console.print(f"host reference ({when} the matrix): {hostref.PROBE}")
    try:
        return hostref.measure(*probe, when)
    except hostref.ProbeError as e:
        console.print(f"[yellow]warning:[/yellow] {escape(str(e))}; this run has no host reference")
        return []


def stored_run_settings(results_root, run_id):
    """(profile, overrides) of a stored run, found under any host folder of `results_root`; None if absent."""
    for manifest_path in sorted(glob.glob(os.path.join(glob.escape(results_root), "*", glob.escape(run_id),
                                                       "manifest.json"))):
        try:
            with open(manifest_path) as f:
                matrix = json.load(f)["matrix"]
            return matrix.get("profile"), list(matrix.get("overrides") or [])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


def main(argv=None, console=None, host_paths=None, report=None):
    """Runs a matrix; returns the exit status (see --help). rigs/main.py uses execute() to summarize after."""
    return execute(argv, console, host_paths, report).status


def execute(argv=None, console=None, host_paths=None, report=None):
    """Plans and runs a matrix; returns an Outcome (exit status, the run folder once there is one)."""
    args = parse_args(argv)
    # Logs and CI capture output without a terminal: print tables wide rather than wrapped at 80 columns.
    console = console or Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    if args.resume and args.profile is None and not args.set:
        # `--resume RUN_ID` alone continues the stored run as it was started (its profile and --set values).
        stored = stored_run_settings(args.results_dir or os.path.join(workspace, "results"), args.resume)
        if stored:
            args.profile, args.set = stored
            console.print(f"resuming {args.resume}: profile {args.profile or '(default)'}"
                          + (f", --set {' '.join(args.set)}" if args.set else ""))
    # This file is <runfiles>/tunelab/rigs/matrix/runner.py.
    runfiles = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    runfiles_ws = os.path.join(runfiles, "tunelab")
    rig_data = {k: os.path.abspath(v) for k, v in (item.split("=", 1) for item in args.rig_data)}
    try:
        workload_dir = args.workload if os.path.isdir(args.workload) else os.path.dirname(args.workload)
        workload = rig_contract.load_workload(workload_dir)
        matrix = spec.load(args.matrix, profile=args.profile, overrides=args.set,
                           rig_params=workload.parameters, policy_defaults=workload.policy)
        if args.seed is not None:
            matrix.seed = args.seed
        if workload.rig != matrix.rig:
            raise spec.SpecError(f"{args.matrix} is for rig {matrix.rig!r}, the workload {workload.id} for {workload.rig!r}")
        revisions = load_revisions(args.revision, matrix, rig_data, runfiles_ws, args.matrix,
                                   required=not args.dry_run)
        variants = load_variants(args.variant_data, matrix)
        for cell in matrix.cells:
            # The patch set's content is part of a patched cell's identity: a changed patch is another cell.
            variant = variants.get(cell.params["variant"])
            if variant:
                cell.identity = {"patch_set_sha256": variant["manifest"]["patch_set_sha256"]}
        rig = rig_contract.load_rig(matrix.rig)
        pinned = discovery.pinned_in_runfiles(runfiles)
        if report is None:
            report = doctor.build_report(pinned, discovery.declared_from_env() + args.jdk,
                                         probe_gcs=not args.no_gc_probes)
        planned = plan.plan(matrix, report)
        check_cells(rig, planned)
    except (spec.SpecError, rig_contract.WorkloadError, ValueError, ImportError) as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        return Outcome(EXIT_BAD_INPUT)

    if args.dry_run:
        print_plan(console, matrix, planned, args.profile, rig)
        return Outcome(EXIT_OK)

    host_id = report["host"]["host_id"]
    results_root = args.results_dir or os.path.join(workspace, "results")
    run_id = args.resume or new_run_id()
    run_dir = os.path.join(results_root, host_id, run_id)
    digest = spec_digest(args.matrix, args.profile, args.set, workload)
    stored_reference = []
    if args.resume:
        manifest_path = os.path.join(run_dir, "manifest.json")
        try:
            with open(manifest_path) as f:
                manifest = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            console.print(f"[red]error:[/red] cannot resume {run_id}: {manifest_path}: {e}")
            return Outcome(EXIT_BAD_INPUT)
        if manifest["matrix"]["spec_sha256"] != digest:
            console.print(f"[red]error:[/red] cannot resume {run_id}: the matrix, profile, --set overrides or workload "
                          "differ from the stored run's; start a new run instead")
            return Outcome(EXIT_BAD_INPUT)
        matrix.seed = manifest["matrix"]["seed"]
        stored_reference = (manifest.get("host_reference") or {}).get("measurements", [])
    elif os.path.exists(run_dir):
        console.print(f"[red]error:[/red] {run_dir} exists")
        return Outcome(EXIT_BAD_INPUT)

    lock = HostLock(args.lock_file)
    try:
        lock.acquire({"run_id": run_id, "pid": os.getpid(), "matrix": matrix.name, "started_at": now_iso(),
                      "run_dir": run_dir})
    except LockHeld as e:
        console.print(f"[red]error:[/red] another matrix run holds this host ({args.lock_file}): {e}")
        return Outcome(EXIT_LOCKED)
    except OSError as e:
        console.print(f"[red]error:[/red] cannot take the host lock {args.lock_file}: {e}")
        return Outcome(EXIT_BAD_INPUT)

    ctx = None
    try:
        try:
            pre = preflight(report, args.strict)
        except spec.SpecError as e:
            console.print(f"[red]error:[/red] {escape(str(e))}")
            return Outcome(EXIT_BAD_INPUT)
        for warning in pre["warnings"]:
            console.print(f"[yellow]warning:[/yellow] {escape(warning)} (recorded; --strict refuses)")
        commit, dirty = host.harness_provenance(workspace)
        probe = None if args.no_host_reference else hostref.find_probe(runfiles_ws, pinned)
        ctx = cell_runner.RunContext(
            matrix=matrix, workload=workload, rig=rig, rig_data=rig_data, revisions=revisions, variants=variants,
            run_id=run_id,
            run_dir=run_dir, report=report, profile=args.profile, overrides=args.set, spec_sha256=digest,
            matrix_source=os.path.abspath(args.matrix), harness_commit=commit, harness_dirty=dirty,
            bazel_target=args.bazel_target, preflight=pre, nodes=plan.host_nodes(report),
            host_paths=host_paths or knobs.HostPaths(), varying=spec.varying_axes([p.cell for p in planned]),
            knob_journal=args.lock_file + ".knobs.json", host_reference=None, manifest_host_reference=None)
        recovered = knobs.recover(ctx.knob_journal, ctx.host_paths)
        if recovered:
            console.print(f"[yellow]restored host settings a killed run left changed:[/yellow] {', '.join(recovered)}")
        os.makedirs(os.path.join(run_dir, "cells"), exist_ok=True)
        removed = results.remove_partial_files(run_dir)
        if removed:
            console.print(f"removed {len(removed)} partial file(s) left by an interrupted write")
        before = [m for m in stored_reference if m["when"] == "before"]
        if not before and probe is not None:
            before = measure_host_reference(console, probe, "before")
        set_host_reference(ctx, before)
        status = run_cells(console, ctx, planned)
        if status == EXIT_OK and ctx.manifest_host_reference is not None:
            set_host_reference(ctx, before + measure_host_reference(console, probe, "after"))
            write_manifest(ctx, planned, ctx.order, "complete", ctx.statuses)
        if status == EXIT_INTERRUPTED:
            console.print(f"[yellow]interrupted[/yellow]; host settings restored. Resume with: --resume {run_id}")
            return Outcome(status, run_dir, workload)
        if status == EXIT_BAD_INPUT:
            return Outcome(status, run_dir, workload)
        if not args.no_next_steps:
            print_next_steps(console, ctx, args)
        bad = [s for s in ctx.statuses.values() if s in ("failed", "invalid")]
        return Outcome(EXIT_CELLS_FAILED if bad else EXIT_OK, run_dir, workload)
    finally:
        if ctx is not None and ctx.cell_runner is not None:
            ctx.cell_runner.kill()
            if ctx.active_knobs is not None:
                ctx.active_knobs.restore()
        lock.release()


def set_host_reference(ctx, measurements):
    block = {"probe": hostref.PROBE, "measurements": measurements} if measurements else None
    ctx.manifest_host_reference = block
    before = [m for m in measurements if m["when"] == "before"]
    ctx.host_reference = {"probe": hostref.PROBE, "measurements": before} if before else None


def run_cells(console, ctx, planned):
    """Runs every missing (cell, repetition) in the interleaved order; returns EXIT_OK when all ran,
    EXIT_INTERRUPTED on Ctrl-C/SIGTERM, EXIT_BAD_INPUT on a corrupt stored result."""
    matrix, run_dir = ctx.matrix, ctx.run_dir
    order = spec.interleaved_order([p.cell for p in planned], matrix.policy.repetitions, matrix.seed,
                                   matrix.repetitions_of)
    by_id = {p.cell.id: p for p in planned}
    done = results.stored_results(run_dir)
    statuses = {}
    for cid, rep in done:
        try:
            statuses[(cid, rep)] = results.load_result(results.result_path(run_dir, cid, rep))["status"]
        except results.ResultError as e:
            console.print(f"[red]error:[/red] stored result is corrupt, refusing to continue: {e}")
            return EXIT_BAD_INPUT
    ctx.order, ctx.statuses = order, statuses
    todo = [(c, r) for c, r in order if (c.id, r) not in done]
    write_manifest(ctx, planned, order, "running", statuses)
    console.print(f"run {ctx.run_id}: {len(todo)} of {len(order)} cell repetitions to run; results in {run_dir}")

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    ctx.cell_runner = cell_runner.CellRunner(ctx)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False) as progress:
        task = progress.add_task("starting", total=len(todo))
        try:
            for cell, rep in todo:
                planned_cell = by_id[cell.id]
                progress.update(task, description=f"{cell.id} r{rep} {escape(cell.label(ctx.varying))[:60]}")
                doc = ctx.cell_runner.run(planned_cell, rep)
                results.write_result(results.result_path(run_dir, cell.id, rep), doc)
                statuses[(cell.id, rep)] = doc["status"]
                write_manifest(ctx, planned, order, "running", statuses)
                line = f"{doc['status']:>8} {cell.id} r{rep} {cell.label(ctx.varying)}"
                if doc.get("reason"):
                    line += f": {doc['reason']}"
                progress.console.print(escape(line))
                progress.advance(task)
                if not planned_cell.skip_reason and matrix.policy.cooldown_s:
                    time.sleep(matrix.policy.cooldown_s)
        except KeyboardInterrupt:
            ctx.cell_runner.kill()
            write_manifest(ctx, planned, order, "interrupted", statuses)
            return EXIT_INTERRUPTED
    write_manifest(ctx, planned, order, "complete", statuses)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
