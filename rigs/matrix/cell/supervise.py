"""Starting and supervising the processes of one cell: each started with its placement (and in its container
under executor=container), servers waited for and looked at by the rig's probe, the running phase watched
(timeout, failure lines, dead servers, thread pinning, the evidence of the process under test) and every
server stopped with its ports checked free. The per-cell state lives in CellState, never on the runner."""

import dataclasses
import os
import time

from rigs.host import hostnoise
from rigs.matrix.cell import cellcgroup, processes
from rigs.matrix.contract import rig as rig_contract
from rigs.matrix.knobs import container, launchargv, process_evidence, threadpinning


@dataclasses.dataclass
class CellState:
    """One (cell, repetition) while it runs."""
    planned: object  # plan.PlannedCell
    repetition: int
    workdir: str
    logs: dict  # {"stdout", "stderr"}: the cell's log files (the process under test's, with several)
    ev: dict = dataclasses.field(default_factory=dict)  # the evidence, stored in the result
    launch: rig_contract.Launch = None  # what the rig's launch returned, handed to its probe and parse
    running: list = dataclasses.field(default_factory=list)  # [processes.Running] in start order
    commands: dict = dataclasses.field(default_factory=dict)  # role -> argv
    role_logs: dict = dataclasses.field(default_factory=dict)  # role -> {"stdout", "stderr"}
    under_test_pid: int = None
    pinner: threadpinning.ThreadPinner = None
    started: float = dataclasses.field(default_factory=time.monotonic)
    noise: dict = None  # the measured phase's host noise (hostnoise.window), for the result's provenance
    cgroup: object = None  # cellcgroup.CellCgroup every process of the cell joins; None where there is none
    image_id: str = None  # the container engine's id of the rigs' image, for executor=container/docker
    # Where the profiler records this launch (cellrunner.py): the extra, profiled launch's, or a timed launch's
    # with profile_launch=timed; None for a launch without a profiler.
    profile_recording: str = None
    monitor: object = None  # the launch's monitor.Monitor (host and rig values once a second), for its result
    cache_room: object = None  # cellcgroup.CacheRoom: the limit that follows the cell's own memory, if any

    @property
    def cell(self):
        return self.planned.cell

    @property
    def base(self):
        """The launch's file name stem (its work folder's name): <cell id>.r<repetition>, plus .profile for the
        extra, profiled launch."""
        return os.path.basename(self.workdir)

    @property
    def executor(self):
        return self.cell.params.get("executor", "process")

    @property
    def class_load_log(self):
        return os.path.join(self.workdir, "class-load.log")

    def kill(self):
        """Stops every process of the cell: load generators first, then servers in reverse start order."""
        for proc in sorted(reversed(self.running), key=lambda r: r.process.server):
            proc.stop()
        if self.cache_room is not None:
            self.ev["memory_limit"]["cache_room"] = self.cache_room.stop()
            self.cache_room = None
        if self.cgroup is not None:
            if "memory_limit" in self.ev:
                self.ev["memory_limit"].update(self.cgroup.memory_use())
            # What left its process group (a setsid grandchild) dies with the cell's cgroup.
            try:
                outlived = self.cgroup.remove()
            except cellcgroup.CgroupError as e:
                self.ev.setdefault("cgroup", {})["problem"] = str(e)
            else:
                self.ev.setdefault("cgroup", {})["outlived_their_stop"] = sorted(outlived)
                self.cgroup = None


def start(ctx, state, process):
    """Starts one process of the cell (its `{pid:<role>}` references resolved) and returns its Running."""
    argv = state.commands[process.role]
    ev = state.ev
    if any(rig_contract.PID_REF.search(a) for a in argv):
        pids = {r.role: (process_evidence.jvm_pid(r.program_pid(), ctx.host.paths.proc) if r.process.is_jvm
                         else None) or r.program_pid() for r in state.running}
        missing = sorted({ref for a in argv for ref in rig_contract.PID_REF.findall(a)} - set(pids))
        if missing:
            raise processes.StartError(f"{process.role}: {{pid:{missing[0]}}} names a role not started yet")
        argv = [rig_contract.PID_REF.sub(lambda m: str(pids[m.group(1)]), a) for a in argv]
        ev.setdefault("resolved_commands", {})[process.role] = argv
    name = None
    if state.executor in container.ENGINES:
        name = f"{container.container_prefix(ctx.provenance.run_id)}{state.base}-{process.role}"
        cpus = ctx.config.matrix.pinnings[state.cell.params["pinning"]].cpus_for(process.role, process.under_test) or None
        mems = launchargv.container_mems(state.cell, ctx.config.matrix, ctx.host.nodes, process.role, process.under_test)
        argv = container.run_argv(name, ctx.host.container_image["tag"], argv, state.workdir, env=process.env,
                                  read_only=ctx.host.container_image["mounts"], cpus=cpus, mems=mems,
                                  host_lock=ctx.handles.host_lock, executor=state.executor)
        ev.setdefault("containers", {})[process.role] = {
            "name": name, "image": ctx.host.container_image["tag"],
            "image_id": state.image_id,
            "engine": container.engine_of(state.executor).program, "cpuset_cpus": cpus, "cpuset_mems": mems,
            "podman_command" if state.executor == "container" else "engine_command": argv}
    r = processes.Running(process, argv, state.role_logs[process.role], state.workdir,
                          dict(os.environ, **process.env), container_name=name,
                          container_executor=state.executor if name else None, cgroup=state.cgroup)
    state.running.append(r)
    return r


def probe(ctx, state, running, when):
    """The rig's own look at a running server (e.g. its JMX), if the rig has one."""
    try:
        found = ctx.config.rig.probe(running.role, when, state.launch, state.workdir, "\n".join(running.output()))
    except Exception as e:  # noqa: BLE001 -- a probe's failure is evidence, never a crash of the matrix
        found = {"problems": [f"probe of {running.role} ({when}) failed: {type(e).__name__}: {e}"]}
    if found is not None:
        state.ev.setdefault("probes", {}).setdefault(running.role, {})[when] = found


def stop_servers(ctx, state, look_first):
    """After the load generators: the rig's last look at each server (`look_first`), then stop it and check
    its ports."""
    servers = [r for r in state.running if r.process.server]
    if look_first:
        for r in servers:
            if r.running():
                probe(ctx, state, r, "clients_done")
    for r in reversed(servers):
        died = not r.running()
        r.stop()
        state.ev.setdefault("servers", {})[r.role] = {
            "ready_after_s": r.ready_after_s, "stopped_by": r.stopped_by,
            "exit_status": r.popen.returncode, "died_before_stop": died,
            "ports_freed": processes.wait_ports_free(r.process)}


def watch(ctx, state, now):
    """Once a second: a point of the launch's monitors (the host, the rig's live values), given to the watched
    run's endpoint too."""
    if state.monitor is None or not state.monitor.due(now):
        return
    by_role = state.monitor.sample(now, state.running)
    if ctx.handles.live:
        for role, values in by_role.items():
            ctx.handles.live.set_rig_values(role, values)
        ctx.handles.live.problem = ctx.handles.live.problem or state.monitor.problem


def supervise(ctx, state, deadline, clients, measured=True):
    """Pins threads, enforces the timeout and watches for failures until every one of `clients` (the
    processes of one phase) has exited; in the measured (last) phase it also collects the evidence of the
    process under test, once early and once mid-measurement. Returns (timed_out, failure reason or None)."""
    planned, ev, policy = state.planned, state.ev, ctx.config.matrix.policy
    pinning = ctx.config.matrix.pinnings[planned.cell.params["pinning"]]
    jcmd = os.path.join(planned.jdk["java_home"], "bin", "jcmd") if planned.jdk else None
    servers = [r for r in state.running if r.process.server]
    under_test = next((r for r in state.running if r.process.under_test), None)
    proc = ctx.host.paths.proc
    t0 = time.monotonic()
    collect_at = [t0 + 1.0, t0 + policy.warmup_s + policy.measure_s / 2] if measured else []
    noise_start = hostnoise.snapshot(proc) if measured else None
    window_at = t0 + policy.warmup_s if measured and policy.warmup_s > 0 else None
    next_pin = t0 + 0.3
    next_output_check = t0 + 1.0
    while any(r.running() for r in clients):
        now = time.monotonic()
        if now > deadline:
            return True, None
        for r in clients:
            if r.kill_if_due():
                ev.setdefault("killed_on_purpose", {})[r.role] = r.killed_on_purpose
        if window_at is not None and now >= window_at:
            window_at, noise_start = None, hostnoise.snapshot(proc)  # the warm-up is over
        watch(ctx, state, now)
        if now >= next_output_check:
            next_output_check = now + 1.0
            for r in state.running:
                if r.running():
                    r.sample_cpu((process_evidence.jvm_pid(r.program_pid(), proc) if r.process.is_jvm else None)
                                 or r.program_pid(), proc)
                if ctx.handles.live and r.cpu:
                    ctx.handles.live.process_cpu_seconds(r.role, r.cpu["cpu_s"])
                line = r.failure_line()
                if line:
                    return False, f"{r.role} reported a failure: {line}"
        dead = next((r for r in servers if not r.running()), None)
        if dead is not None:
            return False, (f"server {dead.role} exited with status {dead.popen.returncode} while the load ran: "
                           f"{dead.stderr_tail()}")
        if state.under_test_pid is None and under_test is not None and under_test.running():
            # The process started, or (under a rig's wrapper such as perf stat) its JVM child.
            pid = (process_evidence.jvm_pid(under_test.program_pid(), proc) if under_test.process.is_jvm
                   else under_test.program_pid())
            if pid is None:
                time.sleep(0.05)
                continue
            if under_test.process.is_jvm:
                ev["jvm_pid_is_child_of_wrapper"] = pid != under_test.program_pid()
            state.under_test_pid = pid
            # The pinner acts only on a JVM in the cell's cgroup (a container's JVM is in podman's own).
            members = state.cgroup.pids if state.cgroup and state.executor == "process" else None
            state.pinner = threadpinning.ThreadPinner(jcmd, pid, pinning.threads, proc=proc, cell_pids=members)
        pid, pinner = state.under_test_pid, state.pinner
        if pinner and pinning.threads and now >= next_pin:
            pinner.poll()
            all_found = all(any(t["pattern"] == p for t in pinner.pinned.values()) for p, _ in pinning.threads)
            next_pin = now + (2.0 if all_found else 0.3)
        if pid is not None and collect_at and now >= collect_at[0]:
            collect_at.pop(0)
            process_evidence.collect(ctx.host.paths, jcmd if under_test.process.is_jvm else None, pid, ev, now - t0,
                                     program=under_test.process.program[:1])
            if pinning.threads:
                ev["threads"] = pinner.evidence()
                ev["thread_repins"] = pinner.repins
                ev["thread_pinning_errors"] = pinner.errors
            others = [r for r in state.running if r is not under_test and r.running()]
            if others:
                ev["other_processes"] = {r.role: process_evidence.placement(ctx.host.paths, r, pinning) for r in others}
        time.sleep(0.1)
    if noise_start is not None:
        state.noise = hostnoise.window(noise_start, hostnoise.snapshot(proc))
    pid = state.under_test_pid
    if measured and "collected_at_s" not in ev and pid is not None and under_test.running():
        # A measured phase shorter than a second: a server under test is still there to be looked at.
        process_evidence.collect(ctx.host.paths, jcmd if under_test.process.is_jvm else None, pid, ev, time.monotonic() - t0,
                                 program=under_test.process.program[:1])
    return False, None
