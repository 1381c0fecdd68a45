"""The matrix runner: plans a matrix, runs every (cell, repetition) interleaved, proves the knobs, stores
each result with its provenance, and goes on when a cell fails. It measures and stores; summarizing is
analysis' job (rigs/main.py, the entry point of every rig_matrix target, calls one and then the other).

Parts: cli.py (command line, builds, resumed settings), spec.py and policy.py (matrix files), schedule.py
(the interleaved order), plan.py and planview.py (what this host can run; the plan shown), cellrunner.py (one
cell repetition), hostknobs.py, launchargv.py, threadpinning.py and evidence.py (apply and prove the knobs),
preflight.py (is the host busy), hoststate.py (host lock, knob journal), host_reference.py (a probe before and
after), sequential_rounds.py and noisyrounds.py (sequential rounds; rounds run again for steal).
"""

import contextlib
import dataclasses
import os
import platform
import signal
import sys
import time

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from results import resultfile, store
from analysis import ceilings, compare, stats
from analysis.sensitivity import figures as sensitivity_figures
from rigs.host import host_reference, hoststate
from rigs.matrix import livemetrics
from rigs.matrix.cell import cellrunner
from rigs.matrix.contract import rig as rig_contract, workload as workload_def
from rigs.matrix.knobs import container, hostknobs, perfrecord, profiling
from rigs.matrix.planning import cli, plan, planview, schedule, spec
from rigs.matrix.rounds import noisyrounds, sequential_rounds
from rigs.matrix.planning.cli import check_run_id, load_revisions, load_variants, new_run_id, parse_args, spec_digest
from results.cellresult import now_iso
from rigs.matrix.cell.runcontext import Configuration, Handles, HostFacts, Provenance, RunContext, host_reference_block
from rigs.matrix.planning.preflight import preflight
from rigs.host import doctor, jdks, terminal

EXIT_OK, EXIT_CELLS_FAILED, EXIT_BAD_INPUT, EXIT_LOCKED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@dataclasses.dataclass
class Outcome:
    status: int
    run_dir: str = ""  # set once a run folder exists
    workload: object = None


def check_cells(rig, planned, policy, pinnings=None):
    """Checks every cell's parameters against the rig's declarations, then lets the rig refuse impossible
    combinations (e.g. a trace format its Hadoop cannot read), a policy with iterations it cannot run and a
    pinning that puts another role on the CPUs of a role it wants apart, before anything runs."""
    for p in planned:
        if p.skip_reason:
            continue
        pinning = (pinnings or {}).get(p.cell.params.get("pinning"))
        if pinning is not None and not pinning.share_cpus:
            shared = pinning.shared_cpus(rig.apart_roles)
            if shared:
                role, other, cpus = shared[0]
                raise spec.SpecError(
                    f"cell {p.cell.id} ({p.cell.label()}): [pinning.{pinning.name}] puts {other} on CPU(s) "
                    f"{','.join(map(str, cpus))} of {role}, which the {rig.name} rig measures apart (a client on "
                    f"its CPUs measures their contention): give them disjoint CPUs, or say share_cpus = true in "
                    f"[pinning.{pinning.name}] to study the contention")
        try:
            rig.typed(p.cell.params)
            rig.check(p.cell.params)
            if policy.iterating and not rig.can_iterate(p.cell.params):
                raise ValueError(f"[policy] asks for {policy.describe_iterations()}; the {rig.name} rig runs one "
                                 "unit of work per launch for this cell: use iterations = 1 and warmup_iterations "
                                 "= 0 (repetitions launch it again)")
            rig.check_policy(p.cell.params, policy)
            if policy.profile:
                profiling.check_cell(p.cell.params, p.jdk, policy.profile)
            elif p.cell.params.get("profile_launch", "extra") != "extra":
                raise ValueError(f"profile_launch={p.cell.params['profile_launch']} profiles the timed launch; "
                                 "policy.profile names no event to profile (e.g. --set policy.profile=cpu)")
        except (ValueError, profiling.ProfileError) as e:
            raise spec.SpecError(f"cell {p.cell.id} ({p.cell.label()}): {e}") from None


@dataclasses.dataclass
class RunState:
    """What changes while a run goes on, owned by the loop that changes it (execute, run_cells); what the
    cells share is the frozen RunContext."""
    rounds: object = None  # the sequential_rounds.Rounds of a sequential policy (stop = "decided"), else None
    noisy: object = None  # the noisyrounds.NoisyRounds of a policy that re-runs noisy rounds, else None
    order: list = dataclasses.field(default_factory=list)  # [(cell, repetition)], interleaved
    statuses: dict = dataclasses.field(default_factory=dict)  # (cell id, repetition) -> status
    cell_runner: object = None  # the cellrunner.CellRunner of the run, killed on interruption
    reference_after: list = dataclasses.field(default_factory=list)  # the host reference after the matrix

    def kill_cells(self):
        """Stops what the cell runner started and puts back the host knobs it set (the run's `with` ends)."""
        if self.cell_runner is not None:
            self.cell_runner.kill()


def write_manifest(ctx, run, planned, state):
    """The run's manifest (results/store.py builds and validates it) as the run stands (`run`: RunState, its
    statuses {(cell id, repetition): status} of the repetitions done; `state`: running, complete, ...)."""
    order, statuses = run.order, run.statuses
    reps = {}  # cell id -> its repetitions in the order (the policy's, and rounds added for noise)
    for c, r in order:
        reps.setdefault(c.id, []).append(r)
    config, host, prov = ctx.config, ctx.host, ctx.provenance
    m = config.matrix
    matrix = {"name": m.name, "rig": m.rig, "source": config.matrix_source, "profile": config.profile,
              "overrides": list(config.overrides), "seed": m.seed, "spec_sha256": prov.spec_sha256,
              "question": m.question,
              "axes": m.axes, "zip_groups": m.zip_groups, "comparison_groups": m.comparison_groups(),
              "known_answers": [k.to_json() for k in m.known_answers]}
    cells = [store.manifest_cell(p.cell.id, p.cell.params, p.skip_reason,
                                 {r: statuses.get((p.cell.id, r), "pending")
                                  for r in reps.get(p.cell.id, range(m.repetitions_of(p.cell)))})
             for p in planned]
    doc = store.manifest_document(
        prov.run_id, state, matrix=matrix, workload={"id": config.workload.id, "sha256": config.workload.sha256},
        host_id=host.report["host"]["host_id"], cells=cells, order=[(c.id, r) for c, r in order],
        updated_at=now_iso(), preflight=host.preflight,
        host_reference=host_reference_block(host.report, [*host.reference_before, *run.reference_after]),
        revisions={name: {"commit": r.commit, "runfiles": r.runfiles} for name, r in config.revisions.items()},
        sequential=run.rounds.to_json() if run.rounds else None,
        noise_reruns=run.noisy.to_json() if run.noisy else None, fleet=host.fleet)
    store.write_manifest(prov.run_dir, doc)


def measure_host_reference(console, probe, when, window_scale=1):
    """The host reference measurements, or [] (with a warning) when the probe is missing or fails."""
    if probe is None:
        return []
    console.print(f"host reference ({when} the matrix): {host_reference.probe_text(window_scale)}")
    try:
        return host_reference.measure(*probe, when, window_scale=window_scale)
    except host_reference.ProbeError as e:
        console.print(f"[yellow]warning:[/yellow] {escape(str(e))}; this run has no host reference")
        return []


def main(argv=None, console=None, host_paths=None, report=None):
    """Runs a matrix; returns the exit status (see --help). rigs/main.py uses execute() to summarize after."""
    return execute(argv, console, host_paths, report).status


@dataclasses.dataclass
class Loaded:
    """What a run is made of, read and checked before anything runs (load)."""
    workload: object
    workload_dir: str
    matrix: object
    rig_data: dict
    revisions: dict
    variants: dict
    rig: object
    pinned: list
    report: dict
    planned: list
    rounds: object
    image: dict
    ceilings: dict = dataclasses.field(default_factory=dict)  # metric -> analysis.ceilings.Rule of the workload
    # (band, where it came from): the steal a round may lose before rerun_noisy_rounds runs it again, from the
    # committed A/A sets in this target's runfiles (//results:sensitivity_figures), never the user's checkout.
    steal_band: tuple = (sensitivity_figures.DEFAULT_STEAL_BAND, "no A/A set recorded steal: the default")
    profiler: dict = dataclasses.field(default_factory=dict)  # {agent_jar, converter_jar} under policy.profile


def load(args, runfiles, report, env, stored=None):
    """Reads the workload, the matrix, the builds and the rig, and plans the cells on this host (`report`: the
    doctor's, asked for here when None; `stored`: the run --resume names, whose seed the matrix takes); raises
    SpecError, WorkloadError, ValueError or ImportError naming the first problem."""
    runfiles_ws = os.path.join(runfiles, "tunelab")
    rig_data = {k: os.path.abspath(v) for k, v in (item.split("=", 1) for item in args.rig_data)}
    workload_dir = args.workload if os.path.isdir(args.workload) else os.path.dirname(args.workload)
    workload = workload_def.load_workload(workload_dir)
    matrix = spec.load(args.matrix, profile=args.profile, overrides=args.set,
                       rig_params=workload.parameters, policy_defaults=workload.policy)
    seed = stored.manifest["matrix"]["seed"] if stored is not None and stored.manifest else args.seed
    if seed is not None:
        matrix = dataclasses.replace(matrix, seed=seed)
    spec.check_workload(matrix, workload, workload_dir)
    revisions = load_revisions(args.revision, matrix, rig_data, runfiles_ws, args.matrix,
                               required=not args.dry_run, shipped_commit=env.shipped_commit,
                               target=args.bazel_target)
    variants = load_variants(args.variant_data, matrix)
    for cell in matrix.cells:
        # The patch set's content (a bump's locked jars) is part of the cell's identity: a change is another cell.
        variant = variants.get(cell.params["variant"])
        if variant and variant["manifest"].get("kind") == "bump":
            cell.identity = {"bump_sha256": variant["manifest"]["bump_sha256"]}
        elif variant:
            cell.identity = {"patch_set_sha256": variant["manifest"]["patch_set_sha256"]}
    rig = rig_contract.load_rig(matrix.rig)
    pinned = jdks.pinned_in_runfiles(runfiles)
    if report is None:
        report = doctor.build_report(pinned, jdks.declared_from_env() + args.jdk,
                                     probe_gcs=not args.no_gc_probes)
    report.setdefault("jdks_unavailable", jdks.unavailable_in_runfiles(runfiles))
    planned = plan.plan(matrix, report, env.runner_image)
    check_cells(rig, planned, matrix.policy, matrix.pinnings)
    rounds = None
    if matrix.policy.sequential:
        rounds = sequential_rounds.Rounds(matrix, planned,
                                          sequential_rounds.decided_metrics(matrix.policy, workload_dir,
                                                                            args.profile))
    image = container.image_in_runfiles(runfiles, runfiles_ws)
    if any(p.cell.params.get("executor") in container.ENGINES and not p.skip_reason for p in planned) and image is None:
        raise spec.SpecError("executor=container/docker: this target's runfiles hold no container image "
                             "(//tools/container:rig_os; rig_matrix adds it)")
    # The workload's metric ceilings (ceilings.toml): a wrong declaration is an error before anything runs.
    band = sensitivity_figures.steal_band(os.path.join(runfiles_ws, "results", "baselines"), matrix.rig)
    try:
        profiler = profiling.tools(args.profiler_jar, platform.machine()) if matrix.policy.profile else {}
        if profiler and any(p.jdk is None and not p.skip_reason for p in planned):
            # A native server's profile is perf's: where perf cannot sample here, each such cell's profile is
            # missing with this reason (its timed launches run as ever); said once, in the plan's notes.
            profiler.update(perf=perfrecord.binary(), perf_problem=perfrecord.problem(perfrecord.binary()))
    except profiling.ProfileError as e:
        raise spec.SpecError(f"policy.profile = {list(matrix.policy.profile)}: {e}") from None
    return Loaded(workload, workload_dir, matrix, rig_data, revisions, variants, rig, pinned, report, planned,
                  rounds, image, ceilings.for_folder(workload_dir), band, profiler)


class Stop(Exception):
    """A run that ends before it starts: what to print (markup) and its Outcome (bad input unless given)."""

    def __init__(self, text, outcome=None):
        super().__init__(text)
        self.text, self.outcome = text, outcome or Outcome(EXIT_BAD_INPUT)


@dataclasses.dataclass
class RunFolder:
    run_id: str
    run_dir: str
    digest: str  # of the matrix, profile, --set values and workload: a resumed run must have the same
    stored_reference: list  # a resumed run's host reference before the matrix
    stored_reruns: dict  # a resumed run's noise_reruns


def open_run(args, loaded, results_root, stored):
    """The run's id and folder: a new one, or the stored run --resume names (`stored`: cli.find_stored_run's,
    read once; its seed, host reference and added rounds taken back); raises Stop when there is none to open."""
    host_id, workload = loaded.report["host"]["host_id"], loaded.workload
    if args.resume and args.run_id and args.run_id != args.resume:
        raise Stop("[red]error:[/red] --run-id and --resume name different runs")
    try:
        run_id = args.resume or (check_run_id(args.run_id) if args.run_id else new_run_id())
    except spec.SpecError as e:
        raise Stop(f"[red]error:[/red] {escape(str(e))}") from None
    try:
        run_dir = store.run_dir(results_root, host_id, run_id)
    except store.StoreError as e:
        raise Stop(f"[red]error:[/red] {escape(str(e))}") from None
    digest = spec_digest(args.matrix, args.profile, args.set, workload)
    stored_reference, stored_reruns = [], None
    if args.resume:
        if stored is None or os.path.realpath(stored.run_dir) != os.path.realpath(run_dir):
            hint = store.stored_runs_hint(results_root)
            raise Stop(f"[red]error:[/red] cannot resume {run_id}: no such run of this host in {results_root}"
                       + (f" ({escape(hint)})" if hint else ""))
        if stored.manifest is None:
            raise Stop(f"[red]error:[/red] cannot resume {run_id}: {escape(stored.error)}")
        manifest = stored.manifest
        if manifest["state"] == "complete":
            raise Stop(f"run {run_id} is complete: nothing to resume (a stored run is never rewritten); {run_dir}",
                       Outcome(EXIT_OK, run_dir, workload))
        if manifest["matrix"]["spec_sha256"] != digest:
            raise Stop(f"[red]error:[/red] cannot resume {run_id}: the matrix, profile, --set overrides or workload "
                       "differ from the stored run's; start a new run instead")
        stored_reference = (manifest.get("host_reference") or {}).get("measurements", [])
        stored_reruns = manifest.get("noise_reruns")
    elif os.path.exists(run_dir):
        raise Stop(f"[red]error:[/red] {run_dir} exists")
    return RunFolder(run_id, run_dir, digest, stored_reference, stored_reruns)


def make_configuration(args, loaded):
    """What was asked, as the cells share it."""
    return Configuration(
        matrix=loaded.matrix, profile=args.profile, overrides=tuple(args.set),
        matrix_source=os.path.abspath(args.matrix), workload=loaded.workload, rig=loaded.rig,
        rig_data=loaded.rig_data, revisions=loaded.revisions, variants=loaded.variants, ceilings=loaded.ceilings,
        profiler=loaded.profiler, varying=frozenset(compare.varying_axes([p.cell for p in loaded.planned])))


def make_provenance(args, folder, env):
    """What the run is: its id and folder, the digest of what was asked, the harness that runs it."""
    commit, dirty = cli.harness_provenance(env.workspace, env.shipped_commit)
    return Provenance(run_id=folder.run_id, run_dir=folder.run_dir, spec_sha256=folder.digest,
                      harness_commit=commit, harness_dirty=dirty, bazel_target=args.bazel_target)


def check_preflight(console, args, report):
    """The preflight of this host (its warnings printed); raises Stop when --strict refuses the host."""
    try:
        pre = preflight(report, args.strict)
    except spec.SpecError as e:
        raise Stop(f"[red]error:[/red] {escape(str(e))}") from None
    for warning in pre["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)} (recorded; --strict refuses)")
    return pre


def new_run_state(loaded, folder):
    """The loop's state at its start: the sequential rounds (load made them), and for a policy that re-runs
    noisy rounds their judge, with the band the stored run used when resuming one."""
    policy = loaded.matrix.policy
    noisy = None
    if policy.rerun_noisy_rounds:
        band, source = ((folder.stored_reruns["band"], folder.stored_reruns["band_source"]) if folder.stored_reruns
                        else loaded.steal_band)
        noisy = noisyrounds.NoisyRounds(policy, band, source, folder.stored_reruns)
    return RunState(rounds=loaded.rounds, noisy=noisy)


def clean_leftovers(console, run_dir, knob_journal, host_lock, host_paths):
    """Undoes what a killed run left on this host before anything runs: host settings (the knob journal),
    containers, and partial files in a resumed run's folder; raises Stop on a journal it refuses."""
    try:
        recovered = hostknobs.recover(knob_journal, host_paths)
    except hostknobs.KnobError as e:
        raise Stop(f"[red]error:[/red] {escape(str(e))}") from None
    if recovered:
        console.print(f"[yellow]restored host settings a killed run left changed:[/yellow] {', '.join(recovered)}")
    left = container.remove_orphans(host_lock)
    if left:
        console.print(f"[yellow]removed containers a killed run left running:[/yellow] {', '.join(left)}")
    os.makedirs(os.path.join(run_dir, "cells"), exist_ok=True)
    removed = resultfile.remove_partial_files(run_dir)
    if removed:
        console.print(f"removed {len(removed)} partial file(s) left by an interrupted write")
    orphans = store.remove_orphan_profiles(run_dir)
    if orphans:
        console.print(f"removed {len(orphans)} profile file(s) of a cell interrupted before its result")


def execute(argv=None, console=None, host_paths=None, report=None, args=None, env=None):
    """Plans and runs a matrix; returns an Outcome (exit status, the run folder once there is one). `args`:
    the arguments parsed already (rigs/main.py parses them once), else `argv` is parsed here; `env`: the
    process environment as the runner reads it (cli.RunEnvironment), else read here, the one place."""
    args = args if args is not None else parse_args(argv)
    # Logs and CI capture output without a terminal: print tables wide rather than wrapped at 80 columns.
    # soft_wrap: a line longer than the console overflows, never breaks (a run folder stays one piece).
    console = console or Console(highlight=False, soft_wrap=True, width=terminal.width())
    env = env or cli.RunEnvironment.read(os.environ)
    results_root = args.results_dir or os.path.join(env.workspace, "results")
    # This file is <runfiles>/tunelab/rigs/matrix/runner.py.
    runfiles = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    runfiles_ws = os.path.join(runfiles, "tunelab")
    try:
        stored = cli.find_stored_run(results_root, args.resume) if args.resume else None
        resumed = cli.resume_as_stored(args, stored)  # --resume alone: the stored run's profile and --set
        if resumed:
            console.print(resumed)
        loaded = load(args, runfiles, report, env, stored)
    except (spec.SpecError, workload_def.WorkloadError, ValueError, ImportError) as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        return Outcome(EXIT_BAD_INPUT)
    matrix, planned = loaded.matrix, loaded.planned
    if loaded.profiler.get("perf_problem"):
        console.print(f"[yellow]note:[/yellow] the profiles of the cells without a JVM will be missing (perf record "
                      f"samples them): {escape(loaded.profiler['perf_problem'])}")

    if args.dry_run:
        return dry_run(console, args, loaded)

    try:
        folder = open_run(args, loaded, results_root, stored)
        with contextlib.ExitStack() as open_handles:  # closed in reverse: cells killed, watching stopped, lock freed
            lock, lock_file = take_host_lock(args.state_dir, folder, matrix.name)
            open_handles.callback(lock.release)
            journal = os.path.join(os.path.dirname(lock_file), hoststate.JOURNAL_NAME)
            host_paths = host_paths or hostknobs.HostPaths()
            preflight_found = check_preflight(console, args, loaded.report)
            clean_leftovers(console, folder.run_dir, journal, lock_file, host_paths)
            config, provenance = make_configuration(args, loaded), make_provenance(args, folder, env)
            live = watch(console, args, config, provenance, host_paths, open_handles)
            probe = None if args.no_host_reference else host_reference.find_probe(runfiles_ws, loaded.pinned)
            before = [m for m in folder.stored_reference if m["when"] == "before"]
            if not before and probe is not None:
                before = measure_host_reference(console, probe, "before", host_reference.window_scale(loaded.report))
            run = new_run_state(loaded, folder)
            open_handles.callback(run.kill_cells)  # first of all: what the cells started, stopped
            # Made once, before the first cell: nothing in it is replaced while the cells run.
            facts = HostFacts(report=loaded.report, nodes=plan.host_nodes(loaded.report), paths=host_paths,
                              preflight=preflight_found, container_image=loaded.image or {},
                              runner_image=env.runner_image, fleet=dict(env.fleet), reference_before=tuple(before))
            ctx = RunContext(config, facts, provenance, Handles(lock_file, journal, live))
            return finish(console, args, ctx, run, planned, probe)
    except Stop as stop:
        console.print(stop.text)
        return stop.outcome


def finish(console, args, ctx, run, planned, probe):
    """Runs the cells, then seals the manifest of a run that ran them all (with the host reference after the
    matrix); returns the Outcome."""
    run_dir, workload = ctx.provenance.run_dir, ctx.config.workload
    status = run_cells(console, ctx, run, planned)
    if status == EXIT_OK:
        if ctx.host.reference_before:
            run.reference_after = measure_host_reference(console, probe, "after",
                                                         host_reference.window_scale(ctx.host.report))
        write_manifest(ctx, run, planned, "complete")  # sealed: never rewritten
    if status == EXIT_INTERRUPTED:
        console.print(f"[yellow]interrupted[/yellow]; host settings restored. Resume with: --resume "
                      f"{ctx.provenance.run_id}")
        return Outcome(status, run_dir, workload)
    if status == EXIT_BAD_INPUT:
        return Outcome(status, run_dir, workload)
    if not args.no_next_steps:
        planview.print_next_steps(console, ctx, args)
    bad = [s for s in run.statuses.values() if s in ("failed", "invalid")]
    return Outcome(EXIT_CELLS_FAILED if bad else EXIT_OK, run_dir, workload)


def watch(console, args, config, provenance, host_paths, open_handles):
    """The run's LiveMetrics when it is watched (--metrics-port, --influx-url), its endpoint and writer stopped
    when `open_handles` (the run's ExitStack) closes; else None. An endpoint that cannot bind is said once; the
    run goes on without it."""
    if args.metrics_port is None and not args.influx_url:
        return None
    m = config.matrix
    try:
        live = livemetrics.LiveMetrics(provenance.run_id, m.rig, m.name, config.profile, sorted(m.axes),
                                       proc=host_paths.proc, rig_metrics=config.rig.live_metrics)
    except livemetrics.LiveMetricsError as e:
        raise Stop(f"[red]error:[/red] live metrics: {escape(str(e))}") from None

    def said_problem():
        if live.problem:
            console.print(f"[yellow]note:[/yellow] live metrics: {escape(live.problem)} (the rig's other values were served)")
    open_handles.callback(said_problem)  # after the endpoint and the writer stopped
    if args.metrics_port is not None:
        try:
            server, url = livemetrics.serve(live, args.metrics_port, args.metrics_address)
            console.print(f"live metrics: {escape(url)} (Prometheus text and OpenMetrics)")
            open_handles.callback(server.server_close)
            open_handles.callback(server.shutdown)
        except OSError as e:
            console.print(f"[yellow]note:[/yellow] live metrics: cannot serve on {escape(args.metrics_address)}:"
                          f"{args.metrics_port} ({escape(str(e))}); the run goes on without the endpoint")
    if args.influx_url:
        writer = livemetrics.InfluxWriter(live.registry, args.influx_url,
                                          lambda text: console.print(f"[yellow]note:[/yellow] {escape(text)}"))
        open_handles.callback(writer.start().stop)
    return live


def dry_run(console, args, loaded):
    """--dry-run: the plan and its estimate printed (and written as JSON with --plan-json); nothing runs."""
    planview.print_plan(console, loaded.matrix, loaded.planned, args.profile, loaded.rig)
    if args.plan_json:
        planview.write_plan_json(args.plan_json, planview.plan_document(loaded.matrix, loaded.planned, args.profile,
                                                                        loaded.rig, loaded.report))
    return Outcome(EXIT_OK)


def take_host_lock(state_dir, folder, matrix_name):
    """(HostLock held, its file) for this run; raises Stop when another matrix holds the host (EXIT_LOCKED) or
    the lock cannot be taken."""
    lock_file = os.path.join(os.path.abspath(state_dir), hoststate.LOCK_NAME)
    lock = hoststate.HostLock(lock_file)
    try:
        lock.acquire({"run_id": folder.run_id, "pid": os.getpid(), "matrix": matrix_name, "started_at": now_iso(),
                      "run_dir": folder.run_dir})
    except hoststate.LockHeld as e:
        raise Stop(f"[red]error:[/red] another matrix run holds this host ({lock_file}): {escape(str(e))}",
                   Outcome(EXIT_LOCKED)) from None
    except (OSError, hoststate.StateError) as e:
        raise Stop(f"[red]error:[/red] cannot take the host lock {lock_file}: {escape(str(e))}") from None
    return lock, lock_file


def run_cells(console, ctx, run, planned):
    """Runs every missing (cell, repetition) in the interleaved order; returns EXIT_OK when all ran,
    EXIT_INTERRUPTED on Ctrl-C/SIGTERM, EXIT_BAD_INPUT on a corrupt stored result. Under a sequential policy
    (run.rounds), it looks at every comparison after each round and skips the repetitions of cells whose
    comparisons are all decided ("not_needed"); under one that re-runs noisy rounds (run.noisy), it judges each
    round as it completes. `run` (RunState) is this loop's: it fills order, statuses and the cell runner.

    Why one function: the loop's state (order, what is left to run, statuses, the sequential looks, the added
    rounds, the progress bar) is shared by every step, and an interruption must leave all of it consistent."""
    matrix, run_dir, rounds, noisy = ctx.config.matrix, ctx.provenance.run_dir, run.rounds, run.noisy
    varying, live = ctx.config.varying, ctx.handles.live
    order = schedule.interleaved_order([p.cell for p in planned], matrix.policy.repetitions, matrix.seed,
                                   matrix.repetitions_of)
    if noisy:
        noisy.restore(order, matrix.seed)  # a resumed run: the rounds it had added
    by_id = {p.cell.id: p for p in planned}
    done = resultfile.stored_results(run_dir)
    statuses = {}
    for cid, rep in done:
        try:
            doc = resultfile.load_result(resultfile.result_path(run_dir, cid, rep))
        except resultfile.ResultError as e:
            console.print(f"[red]error:[/red] stored result is corrupt, refusing to continue: {e}")
            return EXIT_BAD_INPUT
        statuses[(cid, rep)] = doc["status"]
        if rounds:
            rounds.record(doc)
        if noisy:
            noisy.record(doc)
    run.order, run.statuses = order, statuses
    looked = [0]  # complete rounds looked at

    def look_before(rep):
        """Under a sequential policy: looks at the rounds before `rep` (all measured by now: the order is
        round by round) and prints the comparisons that became final."""
        while rounds and looked[0] < rep:
            looked[0] += 1
            for q in rounds.look(looked[0]):
                line = (f"{q.look.reason()}: {q.axis}={q.value} vs {q.baseline_value}, {q.metric} "
                        f"{q.look.change:+.1%}")
                if q.look.ci_low == q.look.ci_low:
                    line += f" (CI {q.look.ci_low - 1:+.1%}..{q.look.ci_high - 1:+.1%}, ±{stats.fmt_effect(q.min_effect)} decides)"
                console.print(escape(line))

    def needed(cell, rep):
        look_before(rep)
        if rounds is None or rounds.needed(cell.id):
            return True
        statuses[(cell.id, rep)] = "not_needed"
        return False

    if noisy:  # rounds a resumed run completed but had not judged yet (judging a round again changes nothing)
        for rep in sorted({r for _, r in order}):
            if all((c.id, r) in done for c, r in order if r == rep):
                noisy.judge(rep, order, matrix.seed, console.print)
    todo = [(c, r) for c, r in order if (c.id, r) not in done]
    write_manifest(ctx, run, planned, "running")
    console.print(f"run {ctx.provenance.run_id}: {len(todo)} of {len(order)} cell repetitions to run"
                  + (f" at most ({matrix.policy.describe()})" if rounds else "") + f"; results in {escape(run_dir)}")
    if rounds:
        console.print(escape(f"sequential: {rounds.describe()}"))
    if noisy:
        console.print(escape(f"noisy rounds: {noisy.describe()}"))

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    run.cell_runner = cellrunner.CellRunner(ctx)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False) as progress:
        task = progress.add_task("starting", total=len(todo))
        try:
            index = 0
            while index < len(todo):  # todo grows when a noisy round is run again
                cell, rep = todo[index]
                index += 1
                if not needed(cell, rep):
                    # The bar's total shrinks with the skipped repetitions, so the ETA follows the decisions.
                    progress.update(task, total=progress.tasks[0].total - 1)
                    continue
                planned_cell = by_id[cell.id]
                progress.update(task, description=f"{cell.id} r{rep} {escape(cell.label(varying))[:60]}")
                if live:
                    live.set_planned(progress.tasks[0].total, progress.tasks[0].time_remaining)
                    if not planned_cell.skip_reason:  # a skipped cell runs nothing to watch
                        live.cell_started(cell.id, rep, cell.params)
                doc = run.cell_runner.run(planned_cell, rep)
                if live:
                    live.cell_done(doc["status"])
                store.write_result(run_dir, cell.id, rep, doc)
                statuses[(cell.id, rep)] = doc["status"]
                if rounds:
                    rounds.record(doc)
                if noisy:
                    noisy.record(doc)
                    if index == len(todo) or todo[index][1] != rep:  # the last cell of its round
                        added = noisy.judge(rep, order, matrix.seed, progress.console.print)
                        todo.extend(added)
                        progress.update(task, total=progress.tasks[0].total + len(added))
                write_manifest(ctx, run, planned, "running")
                line = f"{doc['status']:>8} {cell.id} r{rep} {cell.label(varying)}"
                if doc.get("reason"):
                    line += f": {doc['reason']}"
                progress.console.print(escape(line))
                progress.advance(task)
                if not planned_cell.skip_reason and matrix.policy.cooldown_s:
                    time.sleep(matrix.policy.cooldown_s)
            look_before(1 + max((r for (_, r), st in statuses.items() if st != "not_needed"), default=-1))
            for cell, rep in order:  # a resumed run that stopped earlier: mark what the decisions made unneeded
                if (cell.id, rep) not in statuses and rounds is not None and not rounds.needed(cell.id):
                    statuses[(cell.id, rep)] = "not_needed"
        except KeyboardInterrupt:
            run.cell_runner.kill()
            write_manifest(ctx, run, planned, "interrupted")
            return EXIT_INTERRUPTED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
