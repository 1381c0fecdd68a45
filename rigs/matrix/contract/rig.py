"""The contract every rig implements (`Rig`); the workload it is given is rigs/matrix/contract/workload.py's.

A rig module `rigs/<name>/rig.py` exposes `RIG`, an instance of a `Rig` subclass (the loader refuses
anything else, and a RIG whose name differs from the module's folder). `Rig` declares every member the
runner calls: `name`, `launch` and `parse` are required; `check`, `check_policy`, `probe`, `roles`,
`estimate_seconds` and `can_iterate` (False: one unit of work a launch) have defaults that do nothing, and a
rig overrides those it needs. The runner calls them through `Rig`, never by looking for attributes.
The matrix runner owns everything else: JVM selection and flags, placement and pinning, host knobs, evidence,
timeouts, starting and always stopping servers, results. `data` maps the names the rig's Bazel macro passed
(e.g. "jar") to runfiles paths. `workdir` is the cell's own folder: launch may write generated inputs and
configs there, and parse may read them back. parse raises MeasurementInvalid when the run completed but
measured nothing valid (the reason is stored).

A cell is one or more processes (`Process`), each with a role: servers (e.g. a NameNode, redis-server) start
first, in order, and the runner waits until each is ready; then the other processes run in phases (`phase`,
ascending; e.g. 0 loads the data, 1 warms up, 2 measures): a phase's processes start together, and the next
phase starts when they have all exited with status 0 (or, for a process the rig kills on purpose, by the
runner's SIGKILL on its `kill_pattern` line); the cell ends with the last phase; then the servers are
stopped (always, also on failure,
timeout or interrupt) and their ports checked free. The process `under_test` gets the matrix's JVM and memory
knobs (jdk, gc, gc_opts, heap, hugepages, numa, thread pinning); every process is placed on its role's CPUs
(`[pinning.<name>] roles`) and proven there. A single-JVM rig returns `Launch.jvm(...)`.
"""

import abc
import dataclasses
import importlib
import math
import os
import re
import socket
from typing import Any, Iterable, Mapping, Protocol

from rigs.matrix.contract.workload import Workload


MAIN_ROLE = "main"
PID_REF = re.compile(r"\{pid:([^}]+)\}")
# A sample as a rig reports it: {"metric": str, "value": float, "unit": str, "t": seconds since the start}.
Sample = dict[str, Any]


class CellView(Protocol):
    """What a rig reads of a cell (rigs/matrix/planning/spec.Cell is one): its id and parameters, each value as text."""

    @property
    def id(self) -> str: ...

    @property
    def params(self) -> Mapping[str, str]: ...


class PolicyView(Protocol):
    """What a rig reads of the measurement policy (rigs/matrix/planning/policy.Policy is one)."""

    @property
    def warmup_s(self) -> float: ...

    @property
    def measure_s(self) -> float: ...

    @property
    def warmup_iterations(self) -> int: ...

    @property
    def iterations(self) -> int: ...

    @property
    def repetitions(self) -> int: ...

    @property
    def timeout_s(self) -> float: ...  # a cell still running then is killed and recorded as failed


@dataclasses.dataclass
class Process:
    """One process of a cell: a JVM (`main_class`, started with the cell's JDK) or a native program
    (`program`, a full argument list)."""
    role: str
    main_class: str = ""
    classpath: list[str] = dataclasses.field(default_factory=list)
    args: list[str] = dataclasses.field(default_factory=list)
    program: list[str] = dataclasses.field(default_factory=list)
    jvm_flags: list[str] = dataclasses.field(default_factory=list)
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    # A measuring tool the process runs under (e.g. ["perf", "stat", ..., "--"]), placed after the runner's own
    # placement wrapper (numactl/taskset), so it inherits the role's CPU and memory binding. Never for
    # placement. The runner finds the JVM among its children for evidence and pinning.
    wrapper: list[str] = dataclasses.field(default_factory=list)
    # The system under test: the matrix's JVM and memory knobs apply to it. Other JVMs get only the rig's
    # own jvm_flags (set their heap there), on the cell's JDK.
    under_test: bool = True
    # A server starts before the other processes and runs until they have all exited; it is ready when a
    # line of its stdout or stderr matches `ready_pattern` (a regex), within `ready_timeout_s`.
    server: bool = False
    ready_pattern: str = ""
    ready_timeout_s: float = 120.0
    # A line of its output that means it failed even if it keeps running (a regex): the runner stops the cell.
    fail_pattern: str = ""
    # Loopback ports the process listens on (from free_loopback_port): checked free before it starts and
    # after it is stopped, so no server outlives its cell.
    ports: list[int] = dataclasses.field(default_factory=list)
    # Not a server: when it runs. Phases run in ascending order, each after the previous one has exited.
    phase: int = 0
    # Runs beside its phase instead of ending it (e.g. memory pressure while the data loads): started first
    # (and waited for its `ready_pattern`, if it has one), stopped when the phase's other processes have all
    # exited. It fails the cell only if it exits with a non-zero status before that.
    background: bool = False
    # A file fed to its standard input (e.g. a data set for `redis-cli --pipe`); none by default.
    stdin: str = ""
    # Killed on purpose (a failover rig's crash): when a line of its output matches this regex, the runner sends
    # SIGKILL to its process group and its phase ends when it has died. That death is the expected exit; the
    # evidence (`killed_on_purpose`) holds the line, when the signal was sent and the exit status. Exiting by
    # itself before the line fails the cell. Only for a process of a phase (not a server, not background).
    kill_pattern: str = ""
    # `{pid:<role>}` in `program` or `args` becomes the process id of that role's process, started earlier
    # (e.g. `migratepages {pid:server} 1 0`); the resolved command is stored in the evidence.

    @property
    def is_jvm(self) -> bool:
        return bool(self.main_class)


@dataclasses.dataclass
class Launch:
    processes: list[Process]  # servers first in start order
    # Inputs the rig generated for this cell (e.g. a trace): file name -> sha256, stored in provenance.
    generated_inputs: dict[str, str] = dataclasses.field(default_factory=dict)
    # Names of generated inputs that hold the host itself (e.g. a hosts file naming this machine): two hosts
    # differ in them by nature, so a cross-host comparison lets them differ (nothing else may).
    host_specific_inputs: tuple[str, ...] = ()
    # Folders of the workdir (plain names) the runner puts in memory before the processes start: links to
    # private folders on the host's tmpfs, removed when the cell ends (rigs/matrix/cell/memorydirs.py); the
    # evidence says where. A host without tmpfs fails the cell with that reason.
    memory_dirs: tuple[str, ...] = ()
    # The rig's own settings of this cell (e.g. the port it chose), handed back to its probe and parse
    # with the Launch: nothing to write aside and read again.
    state: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def jvm(cls, main_class: str, classpath: Iterable[str], args: Iterable[str], jvm_flags: Iterable[str] = (),
            env: Mapping[str, str] | None = None, wrapper: Iterable[str] = (),
            generated_inputs: Mapping[str, str] | None = None, state: Mapping[str, Any] | None = None,
            host_specific_inputs: Iterable[str] = (), memory_dirs: Iterable[str] = ()) -> "Launch":
        """The common case: one JVM under test, role "main"."""
        return cls([Process(MAIN_ROLE, main_class=main_class, classpath=list(classpath), args=list(args),
                            jvm_flags=list(jvm_flags), env=dict(env or {}), wrapper=list(wrapper))],
                   generated_inputs=dict(generated_inputs or {}), state=dict(state or {}),
                   host_specific_inputs=tuple(host_specific_inputs), memory_dirs=tuple(memory_dirs))

    def validate(self) -> None:
        """Raises ValueError when the processes cannot be run as a cell."""
        roles = [p.role for p in self.processes]
        if not self.processes:
            raise ValueError("the rig launched no process")
        if len(set(roles)) != len(roles):
            raise ValueError(f"roles must be unique, got {roles}")
        for p in self.processes:
            if bool(p.main_class) == bool(p.program):
                raise ValueError(f"process {p.role!r}: give exactly one of main_class (a JVM) or program")
            if p.server and not p.ready_pattern:
                raise ValueError(f"server {p.role!r} needs a ready_pattern")
            if p.server and (p.phase or p.background):
                raise ValueError(f"server {p.role!r}: phases and background are for the processes that are not "
                                 "servers")
            for ref in PID_REF.findall(" ".join(map(str, p.program + p.args))):
                if ref not in {q.role for q in self.processes} or ref == p.role:
                    raise ValueError(f"process {p.role!r} refers to {{pid:{ref}}}: no other process has that role")
            if p.kill_pattern and (p.server or p.background):
                raise ValueError(f"process {p.role!r}: kill_pattern is for a process of a phase, not a server "
                                 "or a background process")
            for pattern in (p.ready_pattern, p.fail_pattern, p.kill_pattern):
                re.compile(pattern)
        if all(p.server for p in self.processes):
            raise ValueError("a cell needs at least one process that is not a server (it ends the cell)")
        if sum(p.under_test for p in self.processes) != 1:
            raise ValueError(f"exactly one process must be under_test, got "
                             f"{[p.role for p in self.processes if p.under_test]}")
        servers_done = False
        for p in self.processes:
            if not p.server:
                servers_done = True
            elif servers_done:
                raise ValueError(f"server {p.role!r} comes after a non-server process: list servers first")
        self.phases()

    @property
    def under_test(self) -> Process:
        return next(p for p in self.processes if p.under_test)

    def phases(self) -> list[list[Process]]:
        """[[Process]] of the processes that are not servers, one list per phase, in running order."""
        numbers = sorted({p.phase for p in self.processes if not p.server})
        phases = [[p for p in self.processes if not p.server and p.phase == n] for n in numbers]
        for phase in phases:
            if all(p.background for p in phase):
                raise ValueError(f"phase {phase[0].phase} has only background processes: nothing would end it")
        return phases


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now (the kernel picks it). Another process could take it
    before the server binds it; the server then fails to start and the cell is recorded as failed."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    """True when something listens on 127.0.0.1:port (a bind without SO_REUSEADDR fails on a LISTEN
    socket; TIME_WAIT leftovers of a stopped server do not count, SO_REUSEADDR is set as servers do)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
        return False


@dataclasses.dataclass
class Parsed:
    warmup_samples: list[Sample]
    samples: list[Sample]
    # Rig-specific facts for the reader, stored as the result's `observations` (e.g. a per-second series).
    observations: dict[str, Any] = dataclasses.field(default_factory=dict)
    # The cell measured in parts within one run, each a value of an axis the matrix does not vary (e.g.
    # {"locality": {"pre": [samples before a page migration], "post": [after]}}): stored as the result's
    # `split`, each part summarized as the samples are, and compared by a report on that axis.
    split: dict[str, dict[str, list[Sample]]] = dataclasses.field(default_factory=dict)


class MeasurementInvalid(ValueError):
    """The rig ran to completion but its output holds no valid measurement (e.g. no steady window)."""


def read_classpath_file(path: str) -> list[str]:
    """Jar paths of a java_classpath file (rigs/defs.bzl), each relative to the file's folder: a rig that
    starts a JVM on a Maven set's jars gets the file as rig data and turns it into a classpath."""
    folder = os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        return [os.path.normpath(os.path.join(folder, line.strip())) for line in f if line.strip()]


@dataclasses.dataclass(frozen=True)
class LiveMetric:
    """One value a rig reads from its processes' output while a cell runs (issue 63), served by a watched
    run's endpoint as tunelab_<rig>_<name> (a counter's with _total) and drawn by the generated dashboard.
    The name carries the unit (e.g. containers_allocated, heap_used_bytes)."""
    kind: str  # "counter" (only grows within a launch: the dashboard draws its rate) or "gauge"
    help: str

    def __post_init__(self) -> None:
        if self.kind not in ("counter", "gauge"):
            raise ValueError(f"LiveMetric kind {self.kind!r}: counter or gauge")


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter a rig takes, declared once in its `parameters`: the type its text is read as, and the
    values (`choices`) or the range (`low`, `high`, inclusive) it allows. The core checks every cell against
    the declarations before anything runs; the rig reads the values through `Rig.typed`."""
    type: type = str  # int, float or str
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    doc: str = ""
    # A value outside the type and the range that the rig takes as is (e.g. "default" for Hadoop's own).
    special: tuple[str, ...] = ()
    # Given by some of the rig's workloads only (a mode's own settings): a cell without it reads None.
    optional: bool = False

    def read(self, name: str, text: str) -> Any:
        """The value of `text`, typed; ValueError naming the parameter and what it allows otherwise."""
        if text in self.special:
            return text
        try:
            value = self.type(text)
        except (TypeError, ValueError):
            kind = {int: "a whole number", float: "a number"}.get(self.type, self.type.__name__)
            raise ValueError(f"{name}={text!r} is not {kind}{self._also()}") from None
        if self.type is float and not math.isfinite(value):
            raise ValueError(f"{name}={text!r} is not a finite number")
        if self.choices and value not in self.choices:
            raise ValueError(f"{name}={text!r}: one of {', '.join(map(str, self.choices))}{self._also()}")
        if self.low is not None and value < self.low:
            raise ValueError(f"{name}={text}: at least {self.low}{self._also()}")
        if self.high is not None and value > self.high:
            raise ValueError(f"{name}={text}: at most {self.high}{self._also()}")
        return value

    def _also(self) -> str:
        return f" (or {', '.join(self.special)})" if self.special else ""


class Rig(abc.ABC):
    """What the matrix runner calls on a rig. Subclass it, set `name`, implement `launch` and `parse`, and
    override the optional members a rig needs."""

    name: str = ""  # the rig's unique name, the folder rigs/<name>/ its module lives in
    # The roles its launches use (in any cell), so a matrix's per-role pinning is checked before anything
    # runs; a single-JVM rig has only MAIN_ROLE.
    roles: tuple[str, ...] = (MAIN_ROLE,)
    # Roles under test whose CPU list no other role's list may overlap (a closed-loop client on the server's
    # CPU measures their contention): refused before anything runs unless the pinning says share_cpus = true.
    apart_roles: tuple[str, ...] = ()
    # The parameters it takes, {name: Param}: every cell must give each, with a value its Param allows (the
    # workload's [parameters] hold the defaults). Parameters not declared reach the rig as text.
    parameters: Mapping[str, Param] = {}
    # What live() reads from its processes' output, {name: LiveMetric}: a watched run serves them.
    live_metrics: Mapping[str, LiveMetric] = {}

    def typed(self, params: Mapping[str, str]) -> dict[str, Any]:
        """The declared parameters of `params` as their types ({name: value}); ValueError for the first a
        declaration refuses. The core calls it for every cell before anything runs."""
        values: dict[str, Any] = {}
        for name, param in self.parameters.items():
            if name not in params and param.optional:
                values[name] = None
                continue
            if name not in params:
                raise ValueError(f"no value for the rig's parameter {name} (give it in the workload's [parameters])")
            values[name] = param.read(name, params[name])
        return values

    @abc.abstractmethod
    def launch(self, cell: CellView, workload: Workload, policy: PolicyView, workdir: str, data: Mapping[str, str],
               inputs_dir: str) -> Launch:
        """The processes of one cell (a Launch), each with a role. `data` maps the names the rig's Bazel macro
        passed to runfiles paths; `workdir` is the cell's own folder (configs and per-cell files go there);
        `inputs_dir` is the run's inputs folder, shared by its cells (a data set generated once per run)."""

    @abc.abstractmethod
    def parse(self, outputs: Mapping[str, str], policy: PolicyView, workdir: str, launch: Launch) -> Parsed:
        """The cell's samples (a Parsed), warm-up kept apart; `outputs` maps each role to its stdout text,
        `launch` is what launch returned for this cell (its `state`). Raises MeasurementInvalid when the run
        completed but measured nothing valid."""

    def check(self, params: Mapping[str, str]) -> None:
        """Raises ValueError for a cell this rig cannot run (checked for every cell before anything runs)."""

    def can_iterate(self, params: Mapping[str, str]) -> bool:
        """Whether this cell runs the policy's `warmup_iterations` + `iterations` timed units of work inside one
        launch, each on fresh state, tagging each sample with metadata {"iteration": k} (warm-up ones as
        warm-up samples); the runner checks the measured ones steady (rigs/matrix/cell/steadystate.py). A policy
        with iterations is refused, before anything runs, for a cell that cannot."""
        return False

    def check_policy(self, params: Mapping[str, str], policy: PolicyView) -> None:
        """Raises ValueError for a measurement policy this cell cannot honour as declared (e.g. iterations
        that would be shorter than the rig's sampling), checked before anything runs, after can_iterate."""

    def probe(self, role: str, when: str, launch: Launch, workdir: str, output: str) -> dict[str, Any] | None:
        """The rig's own look at a running server when "ready" and when "clients_done" (`launch`: the cell's
        Launch, its `state`): a dict stored as evidence (its "problems" make the cell invalid), or None."""
        return None

    def live(self, role: str, line: str) -> Mapping[str, float]:
        """The live values (names of live_metrics) one new line of `role`'s stdout says, or {}; a watched run
        calls it once a second for each whole line a running process printed since."""
        return {}

    def estimate_seconds(self, params: Mapping[str, str], policy: PolicyView) -> float | None:
        """One repetition's wall time for the plan's ETA, or None for the runner's own estimate (warm-up +
        measurement + JVM start): a trace-driven rig knows better."""
        return None


def load_rig(name: str) -> Rig:
    module = importlib.import_module(f"rigs.{name}.rig")
    rig = vars(module).get("RIG")
    if not isinstance(rig, Rig) or rig.name != name:
        raise ImportError(f"rigs/{name}/rig.py must define RIG, an instance of rigs.matrix.contract.rig.Rig with "
                          f"name {name!r}")
    return rig
