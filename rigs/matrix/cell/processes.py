"""The processes of one cell: start them in their roles' order, wait for servers to be ready, stop them all.

Every process runs in its own session (process group) and dies with the runner (PR_SET_PDEATHSIG), so no
server or load generator outlives its cell, even when the runner is killed with SIGKILL. Stopping is SIGTERM
to the group, then SIGKILL after a grace period; a server's ports are then checked free.
"""

import contextlib
import ctypes
import functools
import os
import re
import signal
import subprocess
import time

from rigs.matrix.cell import cellcgroup
from rigs.matrix.contract import rig as rig_contract
from rigs.matrix.knobs import container
from results import safeio

_PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 10.0


# The CPUs a started process begins on while the runner keeps off a cell's CPUs (runner_kept_off): the
# runner's own from before, not the spare ones it moved to, so a placement wrapper can bind the process where
# the cell says (numactl refuses CPUs outside its own affinity). None: inherit.
_child_cpus = None


@contextlib.contextmanager
def runner_kept_off(spare_cpus):
    """Every thread of this process (the runner) on `spare_cpus` for the block, while the processes it starts
    meanwhile begin on its CPUs from before; all back afterwards (threads started meanwhile get what the
    calling thread had). Empty `spare_cpus`: nothing moves. Threads started later inherit the affinity of the
    thread that starts them."""
    global _child_cpus
    if not spare_cpus:
        yield
        return
    calling = os.sched_getaffinity(0)
    before = {}
    for tid in _threads():
        try:
            before[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, spare_cpus)
        except OSError:
            pass  # a thread that ended meanwhile
    _child_cpus = set(calling)
    try:
        yield
    finally:
        _child_cpus = None
        for tid in _threads():
            try:
                os.sched_setaffinity(tid, before.get(tid, calling))
            except OSError:
                pass


def _threads():
    return [int(tid) for tid in os.listdir("/proc/self/task")]


def _before_exec(cgroup_procs=None):
    """Runs in the child before exec: into the cell's cgroup (cellcgroup.py: its children follow it, whatever
    session they make), back on the CPUs it should start from (runner_kept_off), and the kernel kills it if
    the runner dies (even by SIGKILL), so no orphaned process keeps running into the next cell's measurement.
    Survives numactl/taskset's exec."""
    if cgroup_procs:
        cellcgroup.join(cgroup_procs)
    if _child_cpus:
        os.sched_setaffinity(0, _child_cpus)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class StartError(RuntimeError):
    """A process could not be started or a server never became ready; the message says which and why."""


class Running:
    """One started process: its role, argv, log files and Popen."""

    def __init__(self, process, argv, logs, workdir, env, container_name=None, container_executor=None, cgroup=None):
        self.process = process
        self.cgroup = cgroup  # cellcgroup.CellCgroup of the cell, or None
        self.container_name = container_name  # executor=container/docker: argv is `<engine> run --name <it> ...`
        self.container_executor = container_executor or "container"
        self._program_pid = None
        self.argv = argv
        self.logs = logs  # {"stdout": path, "stderr": path}
        self.started = time.monotonic()
        self.ready_after_s = None
        self.stopped_by = None  # None (exited by itself), "SIGTERM" or "SIGKILL"
        self.killed_on_purpose = None  # {"line", "after_s", "signal"} once killed at its kill_pattern line
        self._scanned = {"stdout": 0, "stderr": 0}  # bytes of each log already searched for the kill line
        self._live_offset = 0  # bytes of stdout already given to a watched run's live metrics
        self.cpu = None  # {"cpu_s", "wall_s"} at the last sample_cpu()
        self._out = safeio.open_log(logs["stdout"])
        self._err = safeio.open_log(logs["stderr"])
        self._in = None
        try:
            self._in = open(process.stdin, "rb") if process.stdin else subprocess.DEVNULL
            self.popen = subprocess.Popen(argv, stdin=self._in, stdout=self._out, stderr=self._err, cwd=workdir,
                                          env=env, start_new_session=True,
                                          preexec_fn=functools.partial(_before_exec, cgroup and cgroup.join_paths))
        except OSError as e:
            self._close()
            raise StartError(f"{process.role}: could not start {argv[0]}: {e}") from None

    @property
    def role(self):
        return self.process.role

    @property
    def pid(self):
        return self.popen.pid

    def running(self):
        return self.popen.poll() is None

    def program_pid(self):
        """The host pid where the program (or its wrapper) runs: the process itself, or in a container the
        container's first process (podman's monitor, not this process, is its parent). None until known."""
        if self.container_name is None:
            return self.pid
        if self._program_pid is None and self.running():
            try:
                self._program_pid = container.main_pid(self.container_name, timeout_s=0,
                                                       executor=self.container_executor)
            except container.ContainerError:
                return None
        return self._program_pid

    def output(self):
        """(stdout, stderr) text so far."""
        texts = []
        for key in ("stdout", "stderr"):
            try:
                with open(self.logs[key], errors="replace") as f:
                    texts.append(f.read())
            except OSError:
                texts.append("")
        return tuple(texts)

    def stderr_tail(self):
        """The line that best says why it failed: the last exception of stderr (a Java stack trace ends in
        `at ...` lines), else its last line."""
        out, err = self.output()
        lines = (err.strip() or out.strip()).splitlines() or ["(no output)"]
        cause = [line for line in lines if re.match(r"\s*(Caused by: )?[\w.$]+(Exception|Error)\b", line)]
        return (cause or lines)[-1].strip()[:300]

    def sample_cpu(self, pid, proc="/proc"):
        """Records the CPU time the process (pid: itself or its JVM under a wrapper) has used so far; the last
        sample before it exits approximates its total (sampled once a second)."""
        try:
            with open(os.path.join(proc, str(pid), "stat")) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return
        ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
        self.cpu = {"cpu_s": round(ticks / os.sysconf("SC_CLK_TCK"), 2),
                    "wall_s": round(time.monotonic() - self.started, 2)}

    def failure_line(self):
        """The first output line matching the process's fail_pattern, or None."""
        if not self.process.fail_pattern:
            return None
        pattern = re.compile(self.process.fail_pattern)
        for text in self.output():
            for line in text.splitlines():
                if pattern.search(line):
                    return line.strip()[:300]
        return None

    def kill_if_due(self):
        """Kills the process group with SIGKILL when a new line of its output matches its kill_pattern (the
        rig's failover); True when it did. Reads only what was written since the last call, whole lines."""
        if not self.process.kill_pattern or self.killed_on_purpose is not None or not self.running():
            return False
        pattern = re.compile(self.process.kill_pattern)
        for key in ("stdout", "stderr"):
            try:
                with open(self.logs[key], "rb") as f:
                    f.seek(self._scanned[key])
                    chunk = f.read()
            except OSError:
                continue
            complete = chunk[:chunk.rfind(b"\n") + 1]
            self._scanned[key] += len(complete)
            # Lines end at \n only: splitlines() also splits at \r, \v, \x1c.., so `junk\r<kill line>` in
            # one line of output killed the process (issue 58, row 13).
            for line in complete.decode(errors="replace").split("\n"):
                if pattern.search(line):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.popen.pid, signal.SIGKILL)
                    self.killed_on_purpose = {"line": line.strip()[:300], "signal": "SIGKILL",
                                              "after_s": round(time.monotonic() - self.started, 3)}
                    self.popen.wait()
                    self.killed_on_purpose["exit_status"] = self.popen.returncode
                    return True
        return False

    def new_stdout_lines(self, max_bytes=1 << 20):
        """The whole lines of stdout written since the last call (the monitors' and a watched run's live
        values: issue 63; a line ends at \n or \r, empty ones left out), at most max_bytes a call (the rest next
        time); a line longer than that is passed over."""
        try:
            with open(self.logs["stdout"], "rb") as f:
                f.seek(self._live_offset)
                chunk = f.read(max_bytes)
        except OSError:
            return []
        # A progress line may end in a carriage return only (redis-benchmark's): a line ends at either.
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
        if end == 0 and len(chunk) == max_bytes:
            self._live_offset += len(chunk)
            return []
        self._live_offset += end
        return [line for line in re.split(r"[\r\n]", chunk[:end].decode(errors="replace")) if line]

    def wait_ready(self, deadline_monotonic):
        """Waits until a line of the server's output matches its ready pattern. Raises StartError when it
        exits first or the time runs out."""
        pattern = re.compile(self.process.ready_pattern, re.M)
        timeout = min(deadline_monotonic, self.started + self.process.ready_timeout_s)
        while True:
            out, err = self.output()
            if pattern.search(out) or pattern.search(err):
                self.ready_after_s = round(time.monotonic() - self.started, 2)
                return
            if not self.running():
                raise StartError(f"server {self.role} exited with status {self.popen.returncode} before it was "
                                 f"ready: {self.stderr_tail()}")
            if time.monotonic() > timeout:
                raise StartError(f"server {self.role} not ready after {time.monotonic() - self.started:.0f} s "
                                 f"(waiting for /{self.process.ready_pattern}/ in its output)")
            time.sleep(0.1)

    def stop(self, grace_s=STOP_GRACE_S):
        """SIGTERM to the process group, SIGKILL after `grace_s`; idempotent."""
        if self.running():
            self.stopped_by = "SIGTERM"
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.stopped_by = "SIGKILL"
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        # Children the group leader left behind (a wrapper's JVM) go too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        if self.container_name is not None:
            # Killing `podman run` does not stop its container.
            container.remove(self.container_name, self.container_executor)
        self._close()

    def _close(self):
        for f in (self._out, self._err, self._in):
            if hasattr(f, "close"):
                with contextlib.suppress(OSError):
                    f.close()


def running_with_argv(argv, proc="/proc"):
    """True when a process with exactly this command line runs (a server that outlived its cell)."""
    wanted = "\0".join(argv).encode()
    for pid in filter(str.isdigit, os.listdir(proc)):
        try:
            with open(os.path.join(proc, pid, "cmdline"), "rb") as f:
                if f.read().rstrip(b"\0") == wanted:
                    return True
        except OSError:
            continue
    return False


def ports_busy(processes):
    """[(role, port)] of declared ports something already listens on."""
    return [(p.role, port) for p in processes for port in p.ports if rig_contract.port_in_use(port)]


def wait_ports_free(process, timeout_s=5.0):
    """{port: True when free} for a stopped server's ports (a closing socket may take a moment)."""
    deadline = time.monotonic() + timeout_s
    state = {}
    for port in process.ports:
        while rig_contract.port_in_use(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        state[str(port)] = not rig_contract.port_in_use(port)
    return state
