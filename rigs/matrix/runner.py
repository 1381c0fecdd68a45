"""The matrix runner: plans a matrix, runs every (cell, repetition) interleaved, proves the knobs, stores
each result with its provenance, and goes on when a cell fails. Rig targets (rigs/defs.bzl rig_matrix)
start it with their rig, matrix and workload; see `--help`.
"""

import argparse
import contextlib
import ctypes
import datetime
import fcntl
import glob
import hashlib
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import time
import tomllib

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from analysis import compare
from rigs.matrix import evidence, knobs, plan, results, rig as rig_contract, spec
from tools import doctor
from tools.jdk import discovery

EXIT_OK, EXIT_CELLS_FAILED, EXIT_BAD_INPUT, EXIT_LOCKED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
JVM_START_ESTIMATE_S = 2.0
DEFAULT_LOCK = "/run/lock/tunelab-matrix.lock"


class HostLock:
    """One matrix per host: an flock on a lock file (released by the kernel if the holder dies)."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def acquire(self, holder):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with os.fdopen(fd) as f:
                info = f.read().strip() or "unknown holder"
            raise LockHeld(info) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(holder).encode())
        os.fsync(fd)
        self.fd = fd

    def release(self):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


class LockHeld(RuntimeError):
    pass


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def new_run_id():
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2)


def spec_digest(matrix_path, profile, overrides, workload):
    h = hashlib.sha256()
    with open(matrix_path, "rb") as f:
        h.update(f.read())
    h.update(json.dumps([profile, sorted(overrides), workload.sha256]).encode())
    return h.hexdigest()


def busy_processes(proc="/proc", interval_s=0.5, threshold=0.2):
    """Processes that used more than `threshold` of a CPU over `interval_s` (other than this one)."""
    def snapshot():
        out = {}
        for pid in os.listdir(proc):
            if not pid.isdigit():
                continue
            try:
                with open(os.path.join(proc, pid, "stat")) as f:
                    fields = f.read().rsplit(")", 1)
                name = fields[0].split("(", 1)[1]
                parts = fields[1].split()
                out[int(pid)] = (name, int(parts[11]) + int(parts[12]))
            except (OSError, IndexError, ValueError):
                continue
        return out
    hz = os.sysconf("SC_CLK_TCK")
    a = snapshot()
    time.sleep(interval_s)
    b = snapshot()
    me = os.getpid()
    busy = []
    for pid, (name, ticks) in b.items():
        if pid == me or pid not in a:
            continue
        share = (ticks - a[pid][1]) / hz / interval_s
        if share > threshold:
            busy.append({"pid": pid, "name": name, "cpu_share": round(share, 2)})
    return sorted(busy, key=lambda p: -p["cpu_share"])


def preflight(report, strict):
    load1 = (report["host"].get("load_average") or [0.0])[0]
    cpus = report["cpu"].get("logical_cpus") or os.cpu_count()
    busy = busy_processes()
    result = {"load_average": report["host"].get("load_average"), "busy_processes": busy,
              "frequency_governor": report["cpu"].get("frequency_governor"),
              "frequency_governor_evidence": report["cpu"].get("frequency_governor_evidence")}
    problems = []
    if load1 > 0.5 * cpus:
        problems.append(f"load average {load1} is over half of {cpus} CPUs")
    if busy:
        problems.append("busy processes: " + ", ".join(f"{p['name']}[{p['pid']}] {p['cpu_share']:.0%}" for p in busy))
    result["warnings"] = problems
    if strict and problems:
        raise spec.SpecError("--strict: the host is busy: " + "; ".join(problems))
    return result


def harness_provenance(workspace):
    def git(*args):
        try:
            return subprocess.run(["git", "-C", workspace, *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    commit = git("rev-parse", "HEAD") or "unknown"
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return commit, dirty


_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """Runs in the child before exec: the kernel kills it if the runner dies (even by SIGKILL), so no
    orphaned JVM keeps running into the next cell's measurement. Survives numactl/taskset's exec."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class CellRunner:
    """Runs one (cell, repetition) and returns its result document."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.proc = None

    def kill(self):
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def run(self, planned, repetition):
        ctx = self.ctx
        cell = planned.cell
        base = f"{cell.id}.r{repetition}"
        logs = {"stdout": os.path.join(ctx.run_dir, "logs", base + ".out"),
                "stderr": os.path.join(ctx.run_dir, "logs", base + ".err")}
        doc = ctx.skeleton(planned, repetition, logs)
        if planned.skip_reason:
            doc.update(status="skipped", reason=planned.skip_reason, finished_at=now_iso(), duration_s=0.0)
            return doc
        os.makedirs(os.path.dirname(logs["stdout"]), exist_ok=True)
        workdir = os.path.join(ctx.run_dir, "work", base)
        os.makedirs(workdir, exist_ok=True)
        started = time.monotonic()
        policy = ctx.matrix.policy
        host_knobs = knobs.HostKnobs(ctx.host_paths, journal=ctx.knob_journal)
        ctx.active_knobs = host_knobs
        ev = {}
        try:
            with host_knobs:
                ev["applied_host_knobs"] = host_knobs.apply(cell)
                launch = ctx.rig.launch(cell, ctx.workload, policy, workdir, ctx.rig_data)
                java = os.path.join(planned.jdk["java_home"], "bin", "java")
                nodes = knobs.numa_nodes_for(cell, ctx.matrix, ctx.nodes)
                ev["numa_nodes"] = nodes
                wrapper = knobs.wrapper_argv(cell, ctx.matrix, ctx.nodes)
                argv = (wrapper + [java] + knobs.jvm_flags(cell, ctx.matrix, planned.gc_flags) + launch.jvm_flags
                        + ["-cp", ":".join(launch.classpath), launch.main_class] + launch.args)
                doc["provenance"]["command"] = argv
                if launch.generated_inputs:
                    doc["provenance"]["workload"]["generated"] = dict(sorted(launch.generated_inputs.items()))
                env = dict(os.environ, **launch.env)
                with open(logs["stdout"], "w") as out, open(logs["stderr"], "w") as err:
                    self.proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=workdir, env=env,
                                                 start_new_session=True, preexec_fn=_die_with_parent)
                    timed_out = self._supervise(planned, ev, policy)
                exit_status = self.proc.returncode
        except knobs.KnobError as e:
            doc.update(status="failed", reason=f"host knob: {e}", evidence=ev, finished_at=now_iso(),
                       duration_s=time.monotonic() - started)
            return doc
        finally:
            self.kill()
            ctx.active_knobs = None
        doc["exit_status"] = exit_status
        with open(logs["stdout"]) as f:
            stdout_text = f.read()
        with open(logs["stderr"]) as f:
            stderr_text = f.read()
        ev["jvm_output_warnings"] = evidence.large_page_failures(stdout_text + "\n" + stderr_text)
        doc["evidence"] = ev
        doc["finished_at"] = now_iso()
        doc["duration_s"] = time.monotonic() - started
        if timed_out:
            doc.update(status="failed", reason=f"timed out after {policy.timeout_s:g} s; killed")
            return doc
        if exit_status != 0:
            tail = (stderr_text.strip().splitlines() or ["(no stderr)"])[-1][:300]
            doc.update(status="failed", reason=f"exit status {exit_status}: {tail}")
            return doc
        try:
            parsed = ctx.rig.parse(stdout_text, policy, workdir)
        except rig_contract.MeasurementInvalid as e:
            doc.update(status="invalid", reason=str(e))
            return doc
        except (ValueError, KeyError) as e:
            doc.update(status="failed", reason=f"could not parse the rig's output: {e}")
            return doc
        measured = parsed.samples
        doc["warmup_samples"], doc["samples"] = parsed.warmup_samples, measured
        if parsed.observations:
            doc["observations"] = parsed.observations
        doc["metrics"] = results.summarize(measured, ctx.workload.metrics)
        problems = evidence.verify(cell, ctx.matrix, ev, ctx.nodes)
        if not measured:
            problems.append("the rig reported no measured samples")
        doc["problems"] = problems
        if problems:
            doc.update(status="invalid", reason="knob not in effect: " + problems[0])
        else:
            doc["status"] = "ok"
        return doc

    def _supervise(self, planned, ev, policy):
        """Pins threads, collects evidence mid-measurement, enforces the timeout. Returns timed_out."""
        pinning = self.ctx.matrix.pinnings[planned.cell.params["pinning"]]
        jcmd = os.path.join(planned.jdk["java_home"], "bin", "jcmd")
        pid = self.proc.pid
        pinner = knobs.ThreadPinner(jcmd, pid, pinning.threads, proc=self.ctx.host_paths.proc)
        t0 = time.monotonic()
        deadline = t0 + policy.timeout_s
        collect_at = [t0 + 1.0, t0 + policy.warmup_s + policy.measure_s / 2]
        next_pin = t0 + 0.3
        while self.proc.poll() is None:
            now = time.monotonic()
            if now > deadline:
                self.kill()
                return True
            if pinning.threads and now >= next_pin:
                pinner.poll()
                all_found = all(any(t["pattern"] == p for t in pinner.pinned.values()) for p, _ in pinning.threads)
                next_pin = now + (2.0 if all_found else 0.3)
            if collect_at and now >= collect_at[0]:
                collect_at.pop(0)
                self._collect(jcmd, pid, ev, now - t0)
                if pinning.threads:
                    ev["threads"] = pinner.evidence()
                    ev["thread_repins"] = pinner.repins
                    ev["thread_pinning_errors"] = pinner.errors
            time.sleep(0.1)
        return False

    def _collect(self, jcmd, pid, ev, at_s):
        proc_dir = os.path.join(self.ctx.host_paths.proc, str(pid))
        try:
            flags_out = subprocess.run([jcmd, str(pid), "VM.flags"], stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, timeout=30).stdout
            parsed = evidence.parse_vm_flags(flags_out)
            if parsed:
                ev["vm_flags"] = parsed
        except (OSError, subprocess.TimeoutExpired) as e:
            ev["vm_flags_error"] = str(e)
        for name, key, parser in (("status", "process_status", evidence.parse_status),
                                  ("numa_maps", "numa_maps", evidence.parse_numa_maps),
                                  ("smaps_rollup", "smaps_rollup", evidence.parse_smaps_rollup)):
            try:
                with open(os.path.join(proc_dir, name)) as f:
                    ev[key] = parser(f.read())
            except OSError:
                pass
        status = ev.get("process_status", {})
        ev["process_status"] = {k: status[k] for k in ("Cpus_allowed_list", "Mems_allowed_list", "HugetlbPages",
                                                       "VmRSS", "Threads") if k in status}
        hugetlb = status.get("HugetlbPages", "0 kB").split()[0]
        ev["hugetlb_kb"] = int(hugetlb) if hugetlb.isdigit() else 0
        ev["thp_mode"] = knobs.HostKnobs(self.ctx.host_paths).thp_mode()
        ev["collected_at_s"] = round(at_s, 2)


class RunContext:
    """Everything shared by the cells of one run."""

    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.active_knobs = None

    def skeleton(self, planned, repetition, logs):
        m = self.matrix
        jdk = planned.jdk
        return {
            "schema_version": results.SCHEMA_VERSION, "kind": "tunelab.cell_result", "run_id": self.run_id,
            "matrix": {"name": m.name, "rig": m.rig, "source": self.matrix_source, "profile": self.profile,
                       "seed": m.seed, "spec_sha256": self.spec_sha256},
            "cell": {"id": planned.cell.id, "params": planned.cell.params, "repetition": repetition},
            "status": "failed", "exit_status": None,
            "policy": {"warmup_s": m.policy.warmup_s, "measure_s": m.policy.measure_s,
                       "repetitions": m.policy.repetitions, "cooldown_s": m.policy.cooldown_s,
                       "timeout_s": m.policy.timeout_s},
            "metrics": [], "samples": [], "warmup_samples": [], "evidence": {}, "problems": [],
            "provenance": {
                "host": self.report, "jdk": jdk, "command": [], "harness_commit": self.harness_commit,
                "harness_dirty": self.harness_dirty, "bazel_target": self.bazel_target,
                "workload": {"id": self.workload.id, "sha256": self.workload.sha256, "files": self.workload.inputs},
                "variant": {"name": planned.cell.params["variant"],
                            "patch_set_sha256": self.variant_digest(planned.cell.params["variant"])},
            },
            "logs": logs, "started_at": now_iso(), "finished_at": now_iso(),
        }

    def variant_digest(self, name):
        patches = self.matrix.variants[name]["patches"]
        if not patches:
            return None
        h = hashlib.sha256()
        for patch in patches:
            with open(os.path.join(os.path.dirname(self.matrix_source), patch), "rb") as f:
                h.update(f.read())
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
                   "spec_sha256": ctx.spec_sha256},
        "workload": {"id": ctx.workload.id, "sha256": ctx.workload.sha256},
        "host_id": ctx.report["host"]["host_id"], "preflight": ctx.preflight,
        "cells": [{"id": p.cell.id, "params": p.cell.params, "skip_reason": p.skip_reason or None,
                   "repetitions": {str(r): statuses.get((p.cell.id, r), "pending")
                                   for r in range(ctx.matrix.policy.repetitions)}} for p in planned],
        "order": [[c.id, r] for c, r in order], "updated_at": now_iso(),
    }
    results.atomic_write_json(os.path.join(ctx.run_dir, "manifest.json"), doc)


def estimate_seconds(planned, policy, rig=None):
    """Wall time of the runnable cells: the rig's own estimate per cell if it has one (a trace-driven rig
    runs as long as its trace), else warm-up + measurement + cool-down + JVM start."""
    rig_estimate = getattr(rig, "estimate_seconds", None)
    total = 0.0
    for p in planned:
        if p.skip_reason:
            continue
        per = (rig_estimate(p.cell.params, policy) if rig_estimate else
               policy.warmup_s + policy.measure_s + JVM_START_ESTIMATE_S)
        total += (per + policy.cooldown_s) * policy.repetitions
    return total


def print_plan(console, matrix, planned, profile, rig=None):
    varying = spec.varying_axes([p.cell for p in planned])
    t = Table(title=f"Plan: {matrix.name} (profile {profile or 'default'}), rig {matrix.rig}")
    for col in ("cell", "parameters", "JDK", "status"):
        t.add_column(col, overflow="fold")
    for p in planned:
        status = f"[yellow]skip[/yellow]: {escape(p.skip_reason)}" if p.skip_reason else f"run x{matrix.policy.repetitions}"
        jdk = f"{p.jdk['name']} {p.jdk.get('version', '')}"
        t.add_row(p.cell.id, escape(p.cell.label(varying)), jdk, status)
    console.print(t)
    est = estimate_seconds(planned, matrix.policy, rig)
    runnable = sum(1 for p in planned if not p.skip_reason)
    pol = matrix.policy
    console.print(f"{len(planned)} cells, {runnable} to run x {pol.repetitions} repetitions "
                  f"(warm-up {pol.warmup_s:g} s, measure {pol.measure_s:g} s, cool-down {pol.cooldown_s:g} s, "
                  f"timeout {pol.timeout_s:g} s), {len(planned) - runnable} skipped; "
                  f"estimated time {datetime.timedelta(seconds=round(est))}")


def print_summary(console, ctx, planned, docs_by_key):
    t = Table(title=f"Run {ctx.run_id}: {ctx.run_dir}")
    for col in ("cell", "parameters", "ok/fail/invalid/skip", "metric", "median", "min..max", "unit"):
        t.add_column(col, overflow="fold")
    for p in planned:
        docs = [d for (cid, _), d in sorted(docs_by_key.items()) if cid == p.cell.id]
        counts = [sum(1 for d in docs if d["status"] == s) for s in ("ok", "failed", "invalid", "skipped")]
        meds = {}
        for d in docs:
            if d["status"] == "ok":
                for m in d["metrics"]:
                    meds.setdefault((m["name"], m["unit"]), []).append(m["value"])
        if not meds:
            reason = next((d.get("reason", "") for d in docs if d.get("reason")), "")
            t.add_row(p.cell.id, escape(p.cell.label(ctx.varying)), "/".join(map(str, counts)), "-", "-",
                      escape(reason[:80]), "")
        for (name, unit), values in meds.items():
            t.add_row(p.cell.id, escape(p.cell.label(ctx.varying)), "/".join(map(str, counts)), name,
                      f"{statistics.median(values):,.1f}", f"{min(values):,.1f}..{max(values):,.1f}", unit)
    console.print(t)


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
    parser.add_argument("--seed", type=int, help="seed for the interleaved order (default: the matrix's)")
    parser.add_argument("--lock-file", default=os.environ.get("TUNELAB_LOCK_FILE", DEFAULT_LOCK), help=argparse.SUPPRESS)
    parser.add_argument("--no-gc-probes", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-next-steps", action="store_true", help=argparse.SUPPRESS)  # for tools wrapping a run
    return parser.parse_args(argv)


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
    try:
        workload_dir = args.workload if os.path.isdir(args.workload) else os.path.dirname(args.workload)
        workload = rig_contract.load_workload(workload_dir)
        matrix = spec.load(args.matrix, profile=args.profile, overrides=args.set,
                           rig_params=workload.parameters, policy_defaults=workload.policy)
        if args.seed is not None:
            matrix.seed = args.seed
        if workload.rig != matrix.rig:
            raise spec.SpecError(f"{args.matrix} is for rig {matrix.rig!r}, the workload {workload.id} for {workload.rig!r}")
        rig = rig_contract.load_rig(matrix.rig)
        if report is None:
            report = doctor.build_report(discovery.pinned_in_runfiles(runfiles),
                                         discovery.declared_from_env() + args.jdk, probe_gcs=not args.no_gc_probes)
        planned = plan.plan(matrix, report)
        check_cells(rig, planned)
    except (spec.SpecError, rig_contract.WorkloadError, ValueError, ImportError) as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        return EXIT_BAD_INPUT

    if args.dry_run:
        print_plan(console, matrix, planned, args.profile, rig)
        return EXIT_OK

    host_id = report["host"]["host_id"]
    results_root = args.results_dir or os.path.join(workspace, "results")
    run_id = args.resume or new_run_id()
    run_dir = os.path.join(results_root, host_id, run_id)
    digest = spec_digest(args.matrix, args.profile, args.set, workload)
    if args.resume:
        manifest_path = os.path.join(run_dir, "manifest.json")
        try:
            with open(manifest_path) as f:
                manifest = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            console.print(f"[red]error:[/red] cannot resume {run_id}: {manifest_path}: {e}")
            return EXIT_BAD_INPUT
        if manifest["matrix"]["spec_sha256"] != digest:
            console.print(f"[red]error:[/red] cannot resume {run_id}: the matrix, profile, --set overrides or workload "
                          "differ from the stored run's; start a new run instead")
            return EXIT_BAD_INPUT
        matrix.seed = manifest["matrix"]["seed"]
    elif os.path.exists(run_dir):
        console.print(f"[red]error:[/red] {run_dir} exists")
        return EXIT_BAD_INPUT

    lock = HostLock(args.lock_file)
    try:
        lock.acquire({"run_id": run_id, "pid": os.getpid(), "matrix": matrix.name, "started_at": now_iso(),
                      "run_dir": run_dir})
    except LockHeld as e:
        console.print(f"[red]error:[/red] another matrix run holds this host ({args.lock_file}): {e}")
        return EXIT_LOCKED
    except OSError as e:
        console.print(f"[red]error:[/red] cannot take the host lock {args.lock_file}: {e}")
        return EXIT_BAD_INPUT

    runner = None
    try:
        try:
            pre = preflight(report, args.strict)
        except spec.SpecError as e:
            console.print(f"[red]error:[/red] {escape(str(e))}")
            return EXIT_BAD_INPUT
        for warning in pre["warnings"]:
            console.print(f"[yellow]warning:[/yellow] {escape(warning)} (recorded; --strict refuses)")
        commit, dirty = harness_provenance(workspace)
        rig_data = dict(item.split("=", 1) for item in args.rig_data)
        rig_data = {k: os.path.abspath(v) for k, v in rig_data.items()}
        ctx = RunContext(matrix=matrix, workload=workload, rig=rig, rig_data=rig_data, run_id=run_id,
                         run_dir=run_dir, report=report, profile=args.profile, overrides=args.set,
                         spec_sha256=digest, matrix_source=os.path.abspath(args.matrix), harness_commit=commit,
                         harness_dirty=dirty, bazel_target=args.bazel_target, preflight=pre,
                         nodes=plan.host_nodes(report), host_paths=host_paths or knobs.HostPaths(),
                         varying=spec.varying_axes([p.cell for p in planned]), knob_journal=args.lock_file + ".knobs.json")
        recovered = knobs.recover(ctx.knob_journal, ctx.host_paths)
        if recovered:
            console.print(f"[yellow]restored host settings a killed run left changed:[/yellow] {', '.join(recovered)}")
        os.makedirs(os.path.join(run_dir, "cells"), exist_ok=True)
        removed = results.remove_partial_files(run_dir)
        if removed:
            console.print(f"removed {len(removed)} partial file(s) left by an interrupted write")
        order = spec.interleaved_order([p.cell for p in planned], matrix.policy.repetitions, matrix.seed)
        by_id = {p.cell.id: p for p in planned}
        done = results.stored_results(run_dir)
        statuses = {}
        docs = {}
        for cid, rep in done:
            try:
                d = results.load_result(results.result_path(run_dir, cid, rep))
                statuses[(cid, rep)] = d["status"]
                docs[(cid, rep)] = d
            except results.ResultError as e:
                console.print(f"[red]error:[/red] stored result is corrupt, refusing to continue: {e}")
                return EXIT_BAD_INPUT
        todo = [(c, r) for c, r in order if (c.id, r) not in done]
        write_manifest(ctx, planned, order, "running", statuses)
        console.print(f"run {run_id}: {len(todo)} of {len(order)} cell repetitions to run; results in {run_dir}")

        def on_term(signum, frame):
            raise KeyboardInterrupt
        signal.signal(signal.SIGTERM, on_term)
        runner = CellRunner(ctx)
        interrupted = False
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False) as progress:
            task = progress.add_task("starting", total=len(todo))
            try:
                for cell, rep in todo:
                    planned_cell = by_id[cell.id]
                    progress.update(task, description=f"{cell.id} r{rep} {escape(cell.label(ctx.varying))[:60]}")
                    doc = runner.run(planned_cell, rep)
                    results.write_result(results.result_path(run_dir, cell.id, rep), doc)
                    statuses[(cell.id, rep)] = doc["status"]
                    docs[(cell.id, rep)] = doc
                    write_manifest(ctx, planned, order, "running", statuses)
                    line = f"{doc['status']:>8} {cell.id} r{rep} {cell.label(ctx.varying)}"
                    if doc.get("reason"):
                        line += f": {doc['reason']}"
                    progress.console.print(escape(line))
                    progress.advance(task)
                    if not planned_cell.skip_reason and matrix.policy.cooldown_s:
                        time.sleep(matrix.policy.cooldown_s)
            except KeyboardInterrupt:
                interrupted = True
        if interrupted:
            runner.kill()
            write_manifest(ctx, planned, order, "interrupted", statuses)
            console.print(f"[yellow]interrupted[/yellow]; host settings restored. Resume with: --resume {run_id}")
            return EXIT_INTERRUPTED
        write_manifest(ctx, planned, order, "complete", statuses)
        print_summary(console, ctx, planned, docs)
        compare.print_comparisons(console, list(docs.values()), workload.metrics, [p.cell.id for p in planned],
                                  {name: m.get("label", name) for name, m in workload.metrics.items()})
        if not args.no_next_steps:
            print_next_steps(console, ctx, args)
        bad = [s for s in statuses.values() if s in ("failed", "invalid")]
        return EXIT_CELLS_FAILED if bad else EXIT_OK
    finally:
        if runner is not None:
            runner.kill()
            if runner.ctx.active_knobs is not None:
                runner.ctx.active_knobs.restore()
        lock.release()


if __name__ == "__main__":
    sys.exit(main())
