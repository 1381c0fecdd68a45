"""One (cell, repetition): apply the cell's host knobs, ask the rig for its processes, start them with the
cell's knobs (servers first, each ready before the next starts) phase by phase, and always stop them. Parts:
supervise.py (starting, watching and stopping the processes; the per-cell state), process_evidence.py (what
is read from the host about them), cellstatus.py (the cell's status once they have ended). The runner (runner.py)
owns the order of cells; runcontext.py what they share."""

import dataclasses
import os
import platform
import subprocess
import time

from results import safeio, store
from rigs.matrix.cell import cellcgroup, cellstatus, memorydirs, monitor, processes, supervise
from rigs.matrix.contract import rig as rig_contract
from rigs.matrix.knobs import container, hostknobs, hugepages, launchargv, perfrecord, profiling
from rigs.matrix.planning import spec


class CellRunner:
    """Runs one (cell, repetition) at a time and returns its result document."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.state = None  # the cell being run (supervise.CellState)
        self.active_knobs = None  # the hostknobs.HostKnobs the cell being run has applied
        self.image_ids = {}  # container engine -> the id of the rigs' image it loaded (each loads it once a run)

    def kill(self):
        """Stops every process of the cell being run and puts back the host knobs it set (on an interrupt)."""
        if self.state is not None:
            self.state.kill()
        if self.active_knobs is not None:
            self.active_knobs.restore()

    def argv_for(self, state, process):
        """The full command of one process: placement wrapper, measuring wrapper, then java or the program."""
        ctx, planned, cell = self.ctx, state.planned, state.cell
        argv = launchargv.wrapper_argv(cell, ctx.config.matrix, ctx.host.nodes, process.role, process.under_test) + process.wrapper
        if not process.is_jvm:
            return argv + process.program
        java = os.path.join(planned.jdk["java_home"], "bin", "java")
        flags = (launchargv.jvm_flags(cell, ctx.config.matrix, planned.gc_flags, hugepages.host_page_bytes(ctx.host.report))
                 if process.under_test
                 else ["-XX:-UsePerfData"])
        if process.under_test and ctx.config.variants.get(cell.params["variant"]):
            # Where every class came from: the proof that a patched cell ran the patched classes.
            flags = flags + [f"-Xlog:class+load=info:file={state.class_load_log}"]
        if process.under_test and state.profile_recording:
            flags = flags + [profiling.agent_flag(self.agent_library(), ctx.config.matrix.policy.profile, state.profile_recording,
                                                  profiling.interval_us(state.repetition)),
                             profiling.gc_log_flag(os.path.join(state.workdir, "gc.log"))]
        return argv + [java] + flags + process.jvm_flags + ["-cp", ":".join(process.classpath),
                                                            process.main_class] + process.args

    def agent_library(self):
        """async-profiler's agent for this host, unpacked once a run into its work folder."""
        return profiling.extract_agent(self.ctx.config.profiler["agent_jar"], platform.machine(),
                                       os.path.join(self.ctx.provenance.run_dir, "work", "profiler"))

    def run(self, planned, repetition):
        ctx = self.ctx
        cell = planned.cell
        base = f"{cell.id}.r{repetition}"
        result = ctx.start_result(planned, repetition, self.logs_of(base))
        if planned.skip_reason:
            return result.skipped(planned.skip_reason, ran=False).document()
        # profile_launch=timed: the profiler in the timed launch itself (its numbers carry its cost), no extra one.
        in_timed = bool(ctx.config.matrix.policy.profile) and cell.params.get("profile_launch", "extra") == "timed"
        problem = ctx.config.profiler.get("perf_problem", "") if in_timed and planned.jdk is None else ""
        started = time.monotonic()
        state, (refused, skipped, failure, timed_out) = self._launch(
            planned, repetition, base, result,
            profile_recording=self._recording(planned, base) if in_timed and not problem else None)
        # Only now, after the kill: what it found (a process that outlived its stop) is evidence too.
        if skipped:
            return result.skipped(skipped).document()
        if refused:
            return result.failed(refused, evidence=state.ev).document()
        if state.noise is not None:
            result.add_provenance("noise", state.noise)
        state.monitor.sample(time.monotonic(), state.running)  # the launch's end: its last lines too
        result.add_monitors(state.monitor.document())
        cellstatus.judge(ctx, state, result, failure, timed_out)
        # A known answer's cell is a self-check, never compared: no profile of it to explain a comparison.
        known_answer = any(k.cell_id == cell.id for k in ctx.config.matrix.known_answers)
        if ctx.config.matrix.policy.profile and result.status == "ok" and not known_answer:
            result.add_profile(self._stored_profile(planned, repetition, None if problem else state, "timed",
                                                    problem, started) if in_timed
                               else self._profile(planned, repetition))
        return result.document()

    def _recording(self, planned, base):
        """Where the profiler of launch `base` records: the JVM agent's JFR, or a native server's perf.data."""
        return os.path.join(self.ctx.provenance.run_dir, "work", base, "perf.data" if planned.jdk is None else "profile.jfr")

    def logs_of(self, base):
        log_dir = os.path.join(self.ctx.provenance.run_dir, "logs")
        return {"stdout": os.path.join(log_dir, base + ".out"), "stderr": os.path.join(log_dir, base + ".err")}

    def _launch(self, planned, repetition, base, result=None, profile_recording=None):
        """One launch of the cell in its own work folder and cgroup, with its host knobs applied and put back,
        everything it started stopped. Returns (its CellState, (why it could not start, why it was skipped, the
        phase loop's failure, whether it timed out)). `result`: the cell result its provenance goes to (None
        for the profiled launch); `profile_recording`: where the profiler's agent records, for the profiled one."""
        ctx = self.ctx
        logs = self.logs_of(base)
        os.makedirs(os.path.dirname(logs["stdout"]), exist_ok=True)
        workdir = os.path.join(ctx.provenance.run_dir, "work", base)
        os.makedirs(workdir, exist_ok=True)
        state = self.state = supervise.CellState(planned, repetition, workdir, logs, profile_recording=profile_recording)
        state.monitor = monitor.Monitor(ctx.config.rig, ctx.host.paths.proc, state.started)
        state.cgroup, why_none = cellcgroup.for_cell(ctx.provenance.run_id, base)
        state.ev["cgroup"] = {"path": state.cgroup.path} if state.cgroup else {"unavailable": why_none}
        limit = ctx.config.matrix.memory_limit_of(planned.cell)  # a named limit (squeezed) resolved to its size
        host_knobs = hostknobs.HostKnobs(ctx.host.paths, journal=ctx.handles.knob_journal,
                                         hugepage_bytes=hugepages.host_page_bytes(ctx.host.report))
        self.active_knobs = host_knobs
        memory_folders = []  # folders placed in memory for this cell, removed after it
        refused = skipped = None
        failure, timed_out = None, False
        try:
            room = ctx.config.matrix.cache_room_of(planned.cell)
            if limit != "none":
                state.ev["memory_limit"] = self._limit_memory(state, limit, why_none)
                if limit != planned.cell.params["memory_limit"]:
                    state.ev["memory_limit"]["named"] = planned.cell.params["memory_limit"]
                if room:  # the limit follows the cell's own memory from here until its cgroup goes
                    state.cache_room = cellcgroup.CacheRoom(state.cgroup, cellcgroup.memory_limit_bytes(room)).start()
            refused, failure, timed_out = self._attempt(state, result, host_knobs, memory_folders)
        except hostknobs.HostCannotNow as e:
            skipped = f"host knob: {e}"
        except (hostknobs.KnobError, profiling.ProfileError) as e:
            refused = f"host knob: {e}" if isinstance(e, hostknobs.KnobError) else str(e)
        finally:
            state.kill()
            memorydirs.remove(memory_folders)
            self.active_knobs = None
        return state, (refused, skipped, failure, timed_out)

    @staticmethod
    def _limit_memory(state, limit, why_no_cgroup):
        """The cell's memory limit set on its cgroup before anything starts: its evidence (the limit read back),
        or the cell is skipped where this host cannot limit memory (never run unlimited under a limit's name)."""
        if state.cgroup is None:
            raise hostknobs.HostCannotNow(f"memory_limit={limit} needs the cell's cgroup: {why_no_cgroup}")
        try:
            return dict(state.cgroup.limit_memory(cellcgroup.memory_limit_bytes(limit)), asked=limit)
        except (cellcgroup.CgroupError, OSError, safeio.InputError) as e:
            raise hostknobs.HostCannotNow(f"memory_limit={limit}: {e}") from None

    def _profile(self, planned, repetition):
        """The profiled launch: the cell once more, profiled, outside the timed launches (nothing of it is
        measured): async-profiler's agent on its JVM under test, or perf record attached to a native one for
        its measured phase. The result's profile block (_stored_profile)."""
        ctx = self.ctx
        base = f"{planned.cell.id}.r{repetition}.profile"
        started = time.monotonic()
        if planned.jdk is None and ctx.config.profiler.get("perf_problem"):
            return self._stored_profile(planned, repetition, None, "extra", ctx.config.profiler["perf_problem"], started)
        state, (refused, skipped, failure, timed_out) = self._launch(
            planned, repetition, base, profile_recording=self._recording(planned, base))
        why = refused or skipped or failure or ("timed out" if timed_out else "")
        return self._stored_profile(planned, repetition, state, "extra", why and f"the profiled launch: {why}",
                                    started)

    def _stored_profile(self, planned, repetition, state, launch, why, started):
        """The profile block of a profiled launch (`launch`: extra or timed) that has ended: its recording
        stored compressed with its collapsed stacks per event (results/store.py write_profile), or `why` it is
        missing."""
        ctx, cell = self.ctx, planned.cell
        native = planned.jdk is None
        block = {"events": list(ctx.config.matrix.policy.profile), "launch": launch,
                 "profiler": "perf" if native else "async-profiler", "interval_us": profiling.interval_us(repetition)}
        if state is not None:
            block["logs"] = dict(state.logs)
        recording = state.profile_recording if state is not None else None
        if not why and not os.path.exists(recording):
            why = "the profiler wrote no recording" + ("" if native else " (is the process under test a JVM?)")
        if why:
            return dict(block, missing=why, duration_s=round(time.monotonic() - started, 3))
        try:
            collapsed = {}
            if native:  # perf's samples kept as its symbolized text (perfrecord.convert), cpu their only event
                out, script = perfrecord.convert(ctx.config.profiler["perf"], recording,
                                                 os.path.join(state.workdir, "cpu.collapsed"))
                stored = {"perf_script": store.write_profile(ctx.provenance.run_dir, cell.id, repetition, "perf_script", script)}
                collapsed["cpu"] = store.write_profile(ctx.provenance.run_dir, cell.id, repetition, "cpu", out)
            else:
                stored = {"jfr": store.write_profile(ctx.provenance.run_dir, cell.id, repetition, "jfr", recording)}
                for event in block["events"]:
                    out = os.path.join(state.workdir, f"{event}.collapsed")
                    profiling.convert(os.path.join(planned.jdk["java_home"], "bin", "java"),
                                      ctx.config.profiler["converter_jar"], recording, event, out)
                    collapsed[event] = store.write_profile(ctx.provenance.run_dir, cell.id, repetition, event, out)
        except (profiling.ProfileError, perfrecord.PerfError, store.StoreError) as e:
            return dict(block, missing=str(e), duration_s=round(time.monotonic() - started, 3))
        if not native:
            try:  # the launch's collections beside its profile: a GC comparison's pauses
                under_test = next((r for r in state.running if r.process.under_test), None)
                block["gc"] = profiling.read_gc_summary(os.path.join(state.workdir, "gc.log"),
                                                        under_test.cpu if under_test else None)
            except profiling.ProfileError as e:
                block["gc_missing"] = str(e)
        return dict(block, **stored, collapsed=collapsed, duration_s=round(time.monotonic() - started, 3))

    def _with_perf_record(self, state):
        """The rig's launch plus perf record attached to its native process under test for the measured (last)
        phase, stopped with it; ProfileError when that process already runs under a measuring wrapper."""
        launch = state.launch
        under_test = launch.under_test
        if under_test.wrapper:
            raise profiling.ProfileError(
                f"{under_test.role} runs under {os.path.basename(under_test.wrapper[0])} in this cell (a measuring "
                "wrapper): perf record is not attached beside it")
        measured = max(p.phase for p in launch.processes if not p.server)
        recorder = rig_contract.Process(
            "perf_record", program=perfrecord.record_argv(self.ctx.config.profiler["perf"], state.profile_recording,
                                                          profiling.interval_us(state.repetition),
                                                          f"{{pid:{under_test.role}}}"),
            under_test=False, background=True, phase=measured)
        return dataclasses.replace(launch, processes=list(launch.processes) + [recorder])

    def _attempt(self, state, result, host_knobs, memory_folders):
        """Loads the image, applies the host knobs, asks the rig for its launch and runs its phases. Returns
        (why the cell could not start, or None; the phase loop's failure, or None; whether it timed out)."""
        ctx, cell, policy, workdir = self.ctx, state.cell, self.ctx.config.matrix.policy, state.workdir
        if state.executor in container.ENGINES and not self.image_ids.get(state.executor):
            try:
                self.image_ids[state.executor] = container.ensure_image(
                    ctx.host.container_image["tar"], ctx.host.container_image["tag"], state.executor)
            except (container.ContainerError, OSError, subprocess.SubprocessError) as e:
                return f"executor={state.executor}: {e}", None, False
        state.image_id = self.image_ids.get(state.executor)
        with host_knobs:
            state.ev["applied_host_knobs"] = host_knobs.apply(cell)
            state.launch = ctx.config.rig.launch(cell, ctx.config.workload, policy, workdir, ctx.rig_data_for(cell),
                                          os.path.join(ctx.provenance.run_dir, "inputs"))
            if state.profile_recording and not state.launch.under_test.is_jvm:
                state.launch = self._with_perf_record(state)
            refused = self._prepare(state, result)
            if refused:
                return refused, None, False
            if state.launch.memory_dirs:
                if state.executor != "process":
                    return (f"the rig asks for {', '.join(state.launch.memory_dirs)} in memory: only with "
                            f"executor=process (not {state.executor})"), None, False
                try:
                    state.ev["memory_dirs"], placed = memorydirs.place(workdir, state.launch.memory_dirs)
                except memorydirs.MemoryDirError as e:
                    return str(e), None, False
                memory_folders.extend(placed)
            # The runner (it polls, samples and reads evidence while the load runs) keeps off the CPUs the
            # cell's processes are bound to, when the host has one to spare.
            spare = launchargv.spare_cpus(cell, ctx.config.matrix, state.launch.processes, os.sched_getaffinity(0))
            with processes.runner_kept_off(spare):
                if spare:
                    state.ev["harness_cpus"] = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
                timed_out, failure = self._run_phases(state, state.started + policy.timeout_s)
                supervise.stop_servers(ctx, state, look_first=failure is None and not timed_out)
        return None, failure, timed_out

    def _prepare(self, state, result):
        """Checks the rig's launch can run as this cell and works out each process' command and logs; the
        reason it cannot, or None."""
        ctx, planned, cell, launch = self.ctx, state.planned, state.cell, state.launch
        try:
            launch.validate()
        except ValueError as e:
            return f"the rig's launch is not runnable: {e}"
        jvms = [p.role for p in launch.processes if p.is_jvm]
        if jvms and planned.jdk is None:
            return (f"the rig starts JVMs ({', '.join(jvms)}) in a cell with jdk={spec.NO_JDK}: "
                    "give the matrix a JDK")
        under_test = launch.under_test
        state.ev["role"] = under_test.role
        if not under_test.is_jvm:
            state.ev["native_program"] = True
        state.ev["numa_nodes"] = launchargv.numa_nodes_for(cell, ctx.config.matrix, ctx.host.nodes, under_test.role, True)
        # A role the rig has (in other cells, e.g. another mode) is fine; any other is a typo.
        unknown = sorted(set(dict(ctx.config.matrix.pinnings[cell.params["pinning"]].roles))
                         - {p.role for p in launch.processes} - set(ctx.config.rig.roles))
        if unknown:
            return (f"pinning={cell.params['pinning']} places roles {unknown}; this rig's processes "
                    f"are {[p.role for p in launch.processes]}")
        busy = processes.ports_busy(launch.processes)
        if busy:
            return ("loopback ports already in use before the cell started: "
                    + ", ".join(f"{role} {port}" for role, port in busy))
        single = len(launch.processes) == 1
        log_dir = os.path.dirname(state.logs["stdout"])
        for p in launch.processes:
            state.commands[p.role] = self.argv_for(state, p)
            state.role_logs[p.role] = state.logs if single else {
                k: os.path.join(log_dir, f"{state.base}.{p.role}.{k[3:]}") for k in ("stdout", "stderr")}
        if result is None:  # the profiled launch: its commands are in its logs, not in the cell's result
            return None
        result.add_provenance("command", state.commands[under_test.role])
        if not single:
            result.add_provenance("commands", state.commands)
            logs = {f"{role}.{k}": path for role, paths in state.role_logs.items() for k, path in paths.items()}
            result.set_logs(dict(logs, stdout=state.role_logs[under_test.role]["stdout"],
                                 stderr=state.role_logs[under_test.role]["stderr"]))
        if launch.generated_inputs:
            result.add_generated_inputs(launch.generated_inputs,
                                        set(launch.host_specific_inputs) & set(launch.generated_inputs))
        return None

    def _run_phases(self, state, deadline):
        """Starts the servers (each ready, then probed), then the phases in order, each watched until its
        processes have exited. Returns (timed_out, failure reason or None)."""
        ctx, launch = self.ctx, state.launch
        timed_out, failure = False, None
        try:
            for p in launch.processes:
                if p.server:
                    r = supervise.start(ctx, state, p)
                    r.wait_ready(deadline)
                    supervise.probe(ctx, state, r, "ready")
            phases = launch.phases()
            for i, phase in enumerate(phases):
                last = i == len(phases) - 1
                background = []
                for p in (p for p in phase if p.background):
                    background.append(supervise.start(ctx, state, p))
                    if p.ready_pattern:
                        background[-1].wait_ready(deadline)
                started_now = [supervise.start(ctx, state, p)
                               for p in phase if not p.background]
                timed_out, failure = supervise.supervise(ctx, state, deadline, started_now, measured=last)
                early = next((r for r in background if not r.running() and r.popen.returncode), None)
                for r in background:
                    r.stop()
                if timed_out or failure:
                    break
                unkilled = next((r for r in started_now if r.process.kill_pattern and r.killed_on_purpose is None),
                                 None)
                if unkilled is not None:
                    failure = (f"{unkilled.role} (phase {unkilled.process.phase}) was to be killed on its line "
                               f"/{unkilled.process.kill_pattern}/ but exited by itself with status "
                               f"{unkilled.popen.returncode}: {unkilled.stderr_tail()}")
                    break
                bad = early or next((r for r in started_now
                                     if r.popen.returncode != 0 and r.killed_on_purpose is None), None)
                if bad is not None and (not last or bad is early):
                    failure = (f"{bad.role} (phase {bad.process.phase}) exited with status "
                               f"{bad.popen.returncode}: {bad.stderr_tail()}")
                    break
        except processes.StartError as e:
            failure = str(e)
        return timed_out, failure
