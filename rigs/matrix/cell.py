"""One (cell, repetition): start the rig's JVM with the cell's knobs, pin and prove them, enforce the
timeout, parse the rig's output and return the result document. The runner (runner.py) owns the order."""

import contextlib
import ctypes
import datetime
import hashlib
import math
import os
import signal
import subprocess
import time

from results import resultfile as results
from rigs.matrix import evidence, knobs, rig as rig_contract


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


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
                launch = ctx.rig.launch(cell, ctx.workload, policy, workdir, ctx.rig_data_for(cell))
                java = os.path.join(planned.jdk["java_home"], "bin", "java")
                nodes = knobs.numa_nodes_for(cell, ctx.matrix, ctx.nodes)
                ev["numa_nodes"] = nodes
                wrapper = knobs.wrapper_argv(cell, ctx.matrix, ctx.nodes)
                argv = (wrapper + launch.wrapper + [java] + knobs.jvm_flags(cell, ctx.matrix, planned.gc_flags)
                        + launch.jvm_flags
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
        bad = next((s for s in parsed.warmup_samples + measured
                    if not isinstance(s["value"], (int, float)) or not math.isfinite(s["value"]) or s["value"] < 0), None)
        if bad is not None:
            doc.update(status="invalid", reason=f"the rig reported {bad['metric']} = {bad['value']!r} at t={bad['t']}: "
                                                "not a finite, non-negative number")
            return doc
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
        pid = pinner = None
        t0 = time.monotonic()
        deadline = t0 + policy.timeout_s
        collect_at = [t0 + 1.0, t0 + policy.warmup_s + policy.measure_s / 2]
        next_pin = t0 + 0.3
        while self.proc.poll() is None:
            now = time.monotonic()
            if now > deadline:
                self.kill()
                return True
            if pid is None:
                # The JVM is the process started, or (under a rig's wrapper such as perf stat) its child.
                pid = jvm_pid(self.proc.pid, self.ctx.host_paths.proc)
                if pid is None:
                    time.sleep(0.05)
                    continue
                ev["jvm_pid_is_child_of_wrapper"] = pid != self.proc.pid
                pinner = knobs.ThreadPinner(jcmd, pid, pinning.threads, proc=self.ctx.host_paths.proc)
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


def jvm_pid(root, proc="/proc"):
    """`root` if it runs java, else its first descendant that does (breadth first); None if none yet."""
    queue = [root]
    while queue:
        pid = queue.pop(0)
        try:
            with open(os.path.join(proc, str(pid), "comm")) as f:
                if f.read().strip() == "java":
                    return pid
            with open(os.path.join(proc, str(pid), "task", str(pid), "children")) as f:
                queue += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return None


class RunContext:
    """Everything shared by the cells of one run."""

    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.active_knobs = None
        self.cell_runner = None
        self.order, self.statuses = [], {}

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
                **self.provenance_extras(planned.cell),
            },
            "logs": logs, "started_at": now_iso(), "finished_at": now_iso(),
        }

    def provenance_extras(self, cell):
        """The revision a cell's rig artifacts were built from (with a revision axis) and the host reference
        measured before the matrix, for the provenance block."""
        extras = {}
        name = cell.params.get("revision")
        if name is not None:
            rev = self.revisions.get(name)
            extras["revision"] = ({"name": name, "commit": rev.commit, "runfiles": rev.runfiles} if rev else
                                  {"name": name, "commit": self.harness_commit})
        if self.host_reference:
            extras["host_reference"] = self.host_reference
        return extras

    def rig_data_for(self, cell):
        """The rig's data files for this cell: from the build of the cell's revision when it names another."""
        rev = self.revisions.get(cell.params.get("revision"))
        return rev.rig_data if rev else self.rig_data

    def variant_digest(self, name):
        patches = self.matrix.variants[name]["patches"]
        if not patches:
            return None
        h = hashlib.sha256()
        for patch in patches:
            with open(os.path.join(os.path.dirname(self.matrix_source), patch), "rb") as f:
                h.update(f.read())
        return h.hexdigest()
