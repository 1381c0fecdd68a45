"""One (cell, repetition): start the rig's processes with the cell's knobs (servers first, each ready before
the next starts), pin and prove them, enforce the timeout, stop every server, parse the rig's output and
return the result document. The runner (runner.py) owns the order of cells."""

import datetime
import math
import os
import subprocess
import time

from results import resultfile as results
from rigs.matrix import container, evidence, knobs, processes, rig as rig_contract, spec


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class CellRunner:
    """Runs one (cell, repetition) and returns its result document."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.running = []  # [processes.Running] in start order
        self.launch = None  # the rig's Launch of the cell being run, handed to its probe and parse

    def kill(self):
        """Stops every process of the cell: load generators first, then servers in reverse start order."""
        for proc in sorted(reversed(self.running), key=lambda r: r.process.server):
            proc.stop()

    def argv_for(self, planned, process):
        """The full command of one process: placement wrapper, measuring wrapper, then java or the program."""
        ctx, cell = self.ctx, planned.cell
        argv = knobs.wrapper_argv(cell, ctx.matrix, ctx.nodes, process.role, process.under_test) + process.wrapper
        if not process.is_jvm:
            return argv + process.program
        java = os.path.join(planned.jdk["java_home"], "bin", "java")
        flags = (knobs.jvm_flags(cell, ctx.matrix, planned.gc_flags) if process.under_test
                 else ["-XX:-UsePerfData"])
        if process.under_test and ctx.variants.get(cell.params["variant"]):
            # Where every class came from: the proof that a patched cell ran the patched classes.
            flags = flags + [f"-Xlog:class+load=info:file={self.class_load_log}"]
        return argv + [java] + flags + process.jvm_flags + ["-cp", ":".join(process.classpath),
                                                            process.main_class] + process.args

    def run(self, planned, repetition):
        ctx = self.ctx
        cell = planned.cell
        base = f"{cell.id}.r{repetition}"
        log_dir = os.path.join(ctx.run_dir, "logs")
        logs = {"stdout": os.path.join(log_dir, base + ".out"), "stderr": os.path.join(log_dir, base + ".err")}
        doc = ctx.skeleton(planned, repetition, logs)
        if planned.skip_reason:
            doc.update(status="skipped", reason=planned.skip_reason, finished_at=now_iso(), duration_s=0.0)
            return doc
        os.makedirs(log_dir, exist_ok=True)
        workdir = os.path.join(ctx.run_dir, "work", base)
        os.makedirs(workdir, exist_ok=True)
        self.class_load_log = os.path.join(workdir, "class-load.log")
        self.executor, self.cell, self.cell_params = cell.params.get("executor", "process"), cell, cell.params
        self.cell_base = base
        started = time.monotonic()
        policy = ctx.matrix.policy
        host_knobs = knobs.HostKnobs(ctx.host_paths, journal=ctx.knob_journal)
        ctx.active_knobs = host_knobs
        ev = {}
        self.running = []
        self.launch = None
        failure = None
        timed_out = False

        def fail(reason):
            doc.update(status="failed", reason=reason, evidence=ev, finished_at=now_iso(),
                       duration_s=time.monotonic() - started)
            return doc

        try:
            if self.executor == "container" and not ctx.container_image.get("id"):
                try:
                    ctx.container_image["id"] = container.ensure_image(ctx.container_image["tar"],
                                                                       ctx.container_image["tag"])
                except (container.ContainerError, OSError, subprocess.SubprocessError) as e:
                    return fail(f"executor=container: {e}")
            with host_knobs:
                ev["applied_host_knobs"] = host_knobs.apply(cell)
                launch = ctx.rig.launch(cell, ctx.workload, policy, workdir, ctx.rig_data_for(cell),
                                        os.path.join(ctx.run_dir, "inputs"))
                self.launch = launch
                try:
                    launch.validate()
                except ValueError as e:
                    return fail(f"the rig's launch is not runnable: {e}")
                jvms = [p.role for p in launch.processes if p.is_jvm]
                if jvms and planned.jdk is None:
                    return fail(f"the rig starts JVMs ({', '.join(jvms)}) in a cell with jdk={spec.NO_JDK}: "
                                "give the matrix a JDK")
                under_test = launch.under_test
                ev["role"] = under_test.role
                if not under_test.is_jvm:
                    ev["native_program"] = True
                ev["numa_nodes"] = knobs.numa_nodes_for(cell, ctx.matrix, ctx.nodes, under_test.role, True)
                # A role the rig has (in other cells, e.g. another mode) is fine; any other is a typo.
                unknown = sorted(set(dict(ctx.matrix.pinnings[cell.params["pinning"]].roles))
                                 - {p.role for p in launch.processes} - set(ctx.rig.roles))
                if unknown:
                    return fail(f"pinning={cell.params['pinning']} places roles {unknown}; this rig's processes "
                                f"are {[p.role for p in launch.processes]}")
                busy = processes.ports_busy(launch.processes)
                if busy:
                    return fail("loopback ports already in use before the cell started: "
                                + ", ".join(f"{role} {port}" for role, port in busy))
                single = len(launch.processes) == 1
                commands, role_logs = {}, {}
                for p in launch.processes:
                    commands[p.role] = self.argv_for(planned, p)
                    role_logs[p.role] = logs if single else {
                        k: os.path.join(log_dir, f"{base}.{p.role}.{k[3:]}") for k in ("stdout", "stderr")}
                doc["provenance"]["command"] = commands[under_test.role]
                if not single:
                    doc["provenance"]["commands"] = commands
                    doc["logs"] = {f"{role}.{k}": path for role, paths in role_logs.items()
                                   for k, path in paths.items()}
                    doc["logs"].update(stdout=role_logs[under_test.role]["stdout"],
                                       stderr=role_logs[under_test.role]["stderr"])
                if launch.generated_inputs:
                    doc["provenance"]["workload"]["generated"] = dict(sorted(launch.generated_inputs.items()))
                deadline = started + policy.timeout_s
                try:
                    for p in launch.processes:
                        if p.server:
                            r = self._start(p, commands, role_logs, workdir, ev)
                            r.wait_ready(deadline)
                            self._probe(r, "ready", workdir, ev)
                    phases = launch.phases()
                    self._under_test_pid = self._pinner = None
                    for i, phase in enumerate(phases):
                        last = i == len(phases) - 1
                        background = []
                        for p in (p for p in phase if p.background):
                            background.append(self._start(p, commands, role_logs, workdir, ev))
                            if p.ready_pattern:
                                background[-1].wait_ready(deadline)
                        started_now = [self._start(p, commands, role_logs, workdir, ev)
                                       for p in phase if not p.background]
                        timed_out, failure = self._supervise(planned, ev, policy, deadline, workdir, started_now,
                                                             measured=last)
                        early = next((r for r in background if not r.running() and r.popen.returncode), None)
                        for r in background:
                            r.stop()
                        if timed_out or failure:
                            break
                        bad = early or next((r for r in started_now if r.popen.returncode != 0), None)
                        if bad is not None and (not last or bad is early):
                            failure = (f"{bad.role} (phase {bad.process.phase}) exited with status "
                                       f"{bad.popen.returncode}: {bad.stderr_tail()}")
                            break
                except processes.StartError as e:
                    failure = str(e)
                self._stop_servers(ev, workdir, probe=failure is None and not timed_out)
        except knobs.KnobError as e:
            return fail(f"host knob: {e}")
        finally:
            self.kill()
            ctx.active_knobs = None
        # The processes that end their phases (background ones are stopped by the runner; failing early is
        # handled in the phase loop).
        clients = [r for r in self.running if not r.process.server and not r.process.background]
        exit_statuses = {r.role: r.popen.returncode for r in self.running}
        # The cell's exit status: the first non-zero one of its load generators, else 0.
        doc["exit_status"] = next((r.popen.returncode for r in clients if r.popen.returncode), 0) if clients else None
        single = len(self.running) <= 1
        if not single:
            ev["exit_statuses"] = exit_statuses
            # CPU per role (sampled once a second while the load ran): e.g. a load generator that
            # busy-waits shows as a full core.
            ev["process_cpu"] = {r.role: dict(r.cpu, cores=round(r.cpu["cpu_s"] / r.cpu["wall_s"], 2))
                                 for r in self.running if r.cpu and r.cpu["wall_s"] > 0}
        outputs = {r.role: r.output()[0] for r in self.running}
        all_output = "\n".join("\n".join(r.output()) for r in self.running if r.process.is_jvm)
        ev["jvm_output_warnings"] = evidence.large_page_failures(all_output)
        doc["evidence"] = ev
        doc["finished_at"] = now_iso()
        doc["duration_s"] = time.monotonic() - started
        if timed_out:
            doc.update(status="failed", reason=f"timed out after {policy.timeout_s:g} s; killed")
            return doc
        dead = next((r for r in self.running if r.process.server and ev["servers"][r.role]["died_before_stop"]), None)
        if failure is None and dead is not None:
            # A server that died under load is the cause; its clients' errors are the consequence.
            failure = (f"server {dead.role} exited with status {dead.popen.returncode} while the load ran: "
                       f"{dead.stderr_tail()}")
        if failure:
            doc.update(status="failed", reason=failure)
            return doc
        failed = next((r for r in clients if r.popen.returncode != 0), None)
        if failed is not None:
            who = "" if single else f"{failed.role}: "
            doc.update(status="failed", reason=f"{who}exit status {failed.popen.returncode}: {failed.stderr_tail()}")
            return doc
        try:
            parsed = ctx.rig.parse(outputs, policy, workdir, self.launch)
        except rig_contract.MeasurementInvalid as e:
            doc.update(status="invalid", reason=str(e))
            return doc
        except (ValueError, KeyError) as e:
            doc.update(status="failed", reason=f"could not parse the rig's output: {e}")
            return doc
        measured = parsed.samples
        if len(parsed.split) > 1 or any(len(parts) < 2 for parts in parsed.split.values()):
            doc.update(status="failed", reason=f"the rig's split is not one axis of two or more parts: "
                                               f"{ {axis: sorted(parts) for axis, parts in parsed.split.items()} }")
            return doc
        part_samples = [s for parts in parsed.split.values() for samples in parts.values() for s in samples]
        bad = next((s for s in parsed.warmup_samples + measured + part_samples
                    if not isinstance(s["value"], (int, float)) or not math.isfinite(s["value"]) or s["value"] < 0), None)
        if bad is not None:
            doc.update(status="invalid", reason=f"the rig reported {bad['metric']} = {bad['value']!r} at t={bad['t']}: "
                                                "not a finite, non-negative number")
            return doc
        doc["warmup_samples"], doc["samples"] = parsed.warmup_samples, measured
        if parsed.observations:
            doc["observations"] = parsed.observations
        doc["metrics"] = results.summarize(measured, ctx.workload.metrics)
        for axis, parts in parsed.split.items():
            doc["split"] = {"axis": axis, "parts": [
                {"value": value, "samples": samples, "metrics": results.summarize(samples, ctx.workload.metrics)}
                for value, samples in parts.items()]}
        variant = ctx.variants.get(cell.params["variant"])
        if variant and under_test.is_jvm:
            ev["patched_classes"] = patched_class_sources(self.class_load_log, variant["manifest"])
        problems = evidence.verify(cell, ctx.matrix, ev, ctx.nodes)
        if "patched_classes" in ev:
            problems += evidence.patched_class_problems(ev["patched_classes"], variant["manifest"])
        if variant and not under_test.is_jvm:
            problems += evidence.patched_binary_problems(ev.get("executable"), variant["manifest"])
        problems += [problem for role_probes in ev.get("probes", {}).values() for probe in role_probes.values()
                     for problem in probe.get("problems", [])]
        if not measured:
            problems.append("the rig reported no measured samples")
        doc["problems"] = problems
        if problems:
            doc.update(status="invalid", reason="knob not in effect: " + problems[0])
        else:
            doc["status"] = "ok"
        return doc

    def _probe(self, running, when, workdir, ev):
        """The rig's own look at a running server (e.g. its JMX), if the rig has one."""
        try:
            found = self.ctx.rig.probe(running.role, when, self.launch, workdir, "\n".join(running.output()))
        except Exception as e:  # noqa: BLE001 -- a probe's failure is evidence, never a crash of the matrix
            found = {"problems": [f"probe of {running.role} ({when}) failed: {type(e).__name__}: {e}"]}
        if found is not None:
            ev.setdefault("probes", {}).setdefault(running.role, {})[when] = found

    def _stop_servers(self, ev, workdir, probe):
        """After the load generators: the rig's last look at each server, then stop it and check its ports."""
        servers = [r for r in self.running if r.process.server]
        if probe:
            for r in servers:
                if r.running():
                    self._probe(r, "clients_done", workdir, ev)
        for r in reversed(servers):
            died = not r.running()
            r.stop()
            ev.setdefault("servers", {})[r.role] = {
                "ready_after_s": r.ready_after_s, "stopped_by": r.stopped_by,
                "exit_status": r.popen.returncode, "died_before_stop": died,
                "ports_freed": processes.wait_ports_free(r.process)}

    def _start(self, process, commands, role_logs, workdir, ev):
        argv = commands[process.role]
        if any(rig_contract.PID_REF.search(a) for a in argv):
            pids = {r.role: (jvm_pid(r.program_pid(), self.ctx.host_paths.proc) if r.process.is_jvm else None)
                    or r.program_pid() for r in self.running}
            missing = sorted({ref for a in argv for ref in rig_contract.PID_REF.findall(a)} - set(pids))
            if missing:
                raise processes.StartError(f"{process.role}: {{pid:{missing[0]}}} names a role not started yet")
            argv = [rig_contract.PID_REF.sub(lambda m: str(pids[m.group(1)]), a) for a in argv]
            ev.setdefault("resolved_commands", {})[process.role] = argv
        name = None
        if self.executor == "container":
            ctx = self.ctx
            name = f"{container.container_prefix(ctx.run_id)}{self.cell_base}-{process.role}"
            cpus = ctx.matrix.pinnings[self.cell_params["pinning"]].cpus_for(process.role, process.under_test) or None
            mems = knobs.container_mems(self.cell, ctx.matrix, ctx.nodes, process.role, process.under_test)
            argv = container.run_argv(name, ctx.container_image["tag"], argv, workdir, env=process.env,
                                      read_only=ctx.container_image["mounts"], cpus=cpus, mems=mems,
                                      host_lock=ctx.host_lock)
            ev.setdefault("containers", {})[process.role] = {
                "name": name, "image": ctx.container_image["tag"], "image_id": ctx.container_image.get("id"),
                "cpuset_cpus": cpus, "cpuset_mems": mems, "podman_command": argv}
        r = processes.Running(process, argv, role_logs[process.role], workdir, dict(os.environ, **process.env),
                              container_name=name)
        self.running.append(r)
        return r

    def _supervise(self, planned, ev, policy, deadline, workdir, clients, measured=True):
        """Pins threads, enforces the timeout and watches for failures until every one of `clients` (the
        processes of one phase) has exited; in the measured (last) phase it also collects the evidence of the
        process under test, once early and once mid-measurement. Returns (timed_out, failure reason or None)."""
        ctx = self.ctx
        pinning = ctx.matrix.pinnings[planned.cell.params["pinning"]]
        jcmd = os.path.join(planned.jdk["java_home"], "bin", "jcmd") if planned.jdk else None
        servers = [r for r in self.running if r.process.server]
        under_test = next((r for r in self.running if r.process.under_test), None)
        pid, pinner = self._under_test_pid, self._pinner
        t0 = time.monotonic()
        collect_at = [t0 + 1.0, t0 + policy.warmup_s + policy.measure_s / 2] if measured else []
        next_pin = t0 + 0.3
        next_output_check = t0 + 1.0
        while any(r.running() for r in clients):
            now = time.monotonic()
            if now > deadline:
                return True, None
            if now >= next_output_check:
                next_output_check = now + 1.0
                for r in self.running:
                    if r.running():
                        r.sample_cpu((jvm_pid(r.program_pid(), ctx.host_paths.proc) if r.process.is_jvm else None)
                                     or r.program_pid(), ctx.host_paths.proc)
                    line = r.failure_line()
                    if line:
                        return False, f"{r.role} reported a failure: {line}"
            dead = next((r for r in servers if not r.running()), None)
            if dead is not None:
                return False, (f"server {dead.role} exited with status {dead.popen.returncode} while the load ran: "
                               f"{dead.stderr_tail()}")
            if pid is None and under_test is not None and under_test.running():
                # The process started, or (under a rig's wrapper such as perf stat) its JVM child.
                pid = (jvm_pid(under_test.program_pid(), ctx.host_paths.proc) if under_test.process.is_jvm
                       else under_test.program_pid())
                if pid is None:
                    time.sleep(0.05)
                    continue
                if under_test.process.is_jvm:
                    ev["jvm_pid_is_child_of_wrapper"] = pid != under_test.program_pid()
                pinner = knobs.ThreadPinner(jcmd, pid, pinning.threads, proc=ctx.host_paths.proc)
                self._under_test_pid, self._pinner = pid, pinner
            if pinner and pinning.threads and now >= next_pin:
                pinner.poll()
                all_found = all(any(t["pattern"] == p for t in pinner.pinned.values()) for p, _ in pinning.threads)
                next_pin = now + (2.0 if all_found else 0.3)
            if pid is not None and collect_at and now >= collect_at[0]:
                collect_at.pop(0)
                self._collect(jcmd if under_test.process.is_jvm else None, pid, ev, now - t0)
                if pinning.threads:
                    ev["threads"] = pinner.evidence()
                    ev["thread_repins"] = pinner.repins
                    ev["thread_pinning_errors"] = pinner.errors
                others = [r for r in self.running if r is not under_test and r.running()]
                if others:
                    ev["other_processes"] = {r.role: self._placement(r, pinning) for r in others}
            time.sleep(0.1)
        if measured and "collected_at_s" not in ev and pid is not None and under_test.running():
            # A measured phase shorter than a second: a server under test is still there to be looked at.
            self._collect(jcmd if under_test.process.is_jvm else None, pid, ev, time.monotonic() - t0)
        return False, None

    def _placement(self, running, pinning):
        """Where a process that is not under test runs: its CPU binding as asked and as the kernel has it."""
        pid = ((jvm_pid(running.program_pid(), self.ctx.host_paths.proc) if running.process.is_jvm
                else running.program_pid()) or running.pid)
        try:
            with open(os.path.join(self.ctx.host_paths.proc, str(pid), "status")) as f:
                status = evidence.parse_status(f.read())
        except OSError:
            status = {}
        return {"pid": pid, "cpus_wanted": pinning.cpus_for(running.role, False),
                "process_status": {k: status[k] for k in ("Cpus_allowed_list", "Mems_allowed_list", "VmRSS",
                                                          "Threads") if k in status}}

    def _collect(self, jcmd, pid, ev, at_s):
        proc_dir = os.path.join(self.ctx.host_paths.proc, str(pid))
        role = ev.get("role")
        if role in ev.get("containers", {}):
            # Proof that the process under test ran in its container: its cgroup is podman's.
            try:
                with open(os.path.join(proc_dir, "cgroup")) as f:
                    ev["containers"][role]["cgroups"] = sorted({line.split(":", 2)[2].strip() for line in f
                                                                if "libpod" in line})
            except OSError as e:
                ev["containers"][role]["cgroups_error"] = str(e)
        if jcmd:
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
        if "numa_maps" in ev and "numa_nodes" in ev:
            ev["local_memory_ratio"] = evidence.local_memory_ratio(ev["numa_maps"], ev["numa_nodes"]["cpu_node"])
        if not jcmd and "executable" not in ev:
            ev["executable"] = evidence.executable(proc_dir)
        status = ev.get("process_status", {})
        ev["process_status"] = {k: status[k] for k in ("Cpus_allowed_list", "Mems_allowed_list", "HugetlbPages",
                                                       "VmRSS", "Threads") if k in status}
        hugetlb = status.get("HugetlbPages", "0 kB").split()[0]
        ev["hugetlb_kb"] = int(hugetlb) if hugetlb.isdigit() else 0
        ev["thp_mode"] = knobs.HostKnobs(self.ctx.host_paths).thp_mode()
        ev["collected_at_s"] = round(at_s, 2)


def patched_class_sources(log_path, manifest):
    """{patched class: the jar it was loaded from, or None if never loaded}, from -Xlog:class+load."""
    found = {name: None for name in manifest.get("classes", [])}
    try:
        with open(log_path, errors="replace") as f:
            text = f.read()
    except OSError:
        return found
    for name, source in evidence.parse_class_load(text):
        if name in found:
            found[name] = source
    return found


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
        self.variants = {}
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
                "variant": self.variant_provenance(planned.cell.params["variant"]),
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
        if os.environ.get("TUNELAB_RUNNER_IMAGE"):
            # The runner itself ran in the rigs' image (a fleet host with tunelab_runner=image): its OS
            # libraries and tools, not the host's.
            extras["runner_image"] = os.environ["TUNELAB_RUNNER_IMAGE"]
        return extras

    def rig_data_for(self, cell):
        """The rig's data files for this cell: from the build of the cell's revision when it names another,
        with a patched variant's files (e.g. its classpath, overlay first) in place of the stock ones."""
        rev = self.revisions.get(cell.params.get("revision"))
        data = dict(rev.rig_data if rev else self.rig_data)
        variant = self.variants.get(cell.params["variant"])
        if variant:
            data.update(variant["data"])
        return data

    def variant_provenance(self, name):
        """The variant's identity for provenance: its patch set's content hash and series (stock: none)."""
        variant = self.variants.get(name)
        if not variant:
            return {"name": name, "patch_set_sha256": None}
        m = variant["manifest"]
        return {"name": name, "patch_set_sha256": m["patch_set_sha256"], "series": m["series"],
                "applied": m["applied"], "patches_sha256": m["patches_sha256"]}
