"""Matrix specifications: axes as data (TOML), expanded into cells with stable ids, validated up front.

A matrix file names its rig and workload and lists axis values. The cell set is the cross product of
`[axes]`, with `[[zip]]` groups varying together instead of crossed, `[[exclude]]` patterns removed and
`[[include]]` cells added (an include fills the axes it does not name with each axis' first value). A
`[profiles.<name>]` table replaces axis values and the measurement policy (policy.py; and, if it has its own,
the zip, include and exclude lists); `--set axis=v1,v2` on the command line replaces axis values last.

Structured axis values are named in their own tables and referred to by name:
  [pinning.workers]   cpus = "0-1", threads = { "calibration-cpu-worker" = "1" }
  [pinning.apart]     roles = { namenode = "1", client = "0" }   (each process role on its own CPUs)
  [gc_opts.iof80]     flags = ["-XX:CMSInitiatingOccupancyFraction=80"]
  [memory_limit.squeezed]  by = "mapreduce", sizes = { mr1 = "850m", mr2 = "1480m" }   (a size per value of
                      another axis), or cache_room = "96m" (a limit that follows the cell's own memory)
so that every cell is a flat dict of scalars and its id (a hash of that dict) is stable.

A `[[known_answer]]` adds a cell whose result is known in advance (`cell = {...}` like an include, `metric`,
`expect`, `tolerance` as a fraction, `label`): a self-check of the rig printed as one line, never compared
as an axis. `[matrix] question` states what the matrix answers, the title of its summary table;
a profile other than `smoke` asks its own `question` (or none);
`[matrix] not_compared` lists axes that only stratify (e.g. the job: WordCount vs TeraSort is no question).

The `variant` axis is `stock` or a patch set built by Bazel (third_party/<component>/patches/<set>/):
`patched:<set>` (the whole series) or `patched:<set>@<k>` (its first k patches), or a dependency bump,
`bump:<component>-<version>` (the rig on another release's jars: tools/maven/defs.bzl maven_bump_manifest); the
rig_matrix target gives the runner each one's files (`--variant-data`), and a value without a build is refused.

The `revision` axis names builds of the rigs: `candidate` is the build being run; any other value must be
given to the runner as `--revision NAME=RUNFILES` (e.g. the last accepted commit built in a git worktree),
so the two are measured interleaved in one run. Unlike the other standard axes it has no default: cells
of matrices without it do not carry it (and keep their ids).

Why one module of ~480 lines: it is the matrix schema, every table and check of it, so that what a matrix
file may say is read in one place; the measurement policy is in policy.py, the knobs' value syntax in
knobvalues.py, the interleaved order in schedule.py, the plan against a host in plan.py.
"""

import dataclasses
import hashlib
import itertools
import json
import math
import os
import re
import typing

from rigs.host.cpuid import cpu_set
from rigs.matrix.contract import knobvalues
from rigs.matrix.knobs import hugepages, jvm, memorylimit, numa
from rigs.matrix.planning import policy
from results import safeio

# Axis -> allowed scalar values (None: free-form, checked elsewhere).
GCS = jvm.GCS  # and everything else of the gc, gc_opts and heap axes: rigs/matrix/knobs/jvm.py
HUGEPAGES = hugepages.VALUES  # what each means, and everything else of the axis: rigs/matrix/knobs/hugepages.py
# pressured_migrated: the CPUs on one node, memory where the kernel puts it (the local node first); the rig
# fills that node while loading so pages spill to another, then migrates them back (rigs/redis).
NUMA_POLICIES = numa.VALUES  # and everything else of the axis: rigs/matrix/knobs/numa.py
STANDARD_AXES = ("jdk", "gc", "gc_opts", "heap", "pinning", "hugepages", "numa", "variant", "revision", "executor",
                 "profile_launch", "memory_limit")
CANDIDATE_REVISION = "candidate"
DEFAULTS = {"gc": "g1", "gc_opts": "default", "heap": "512m", "pinning": "none", "hugepages": "off",
            "numa": "default", "variant": "stock", "executor": "process", "profile_launch": "extra",
            "memory_limit": "none"}
# executor: where a cell's processes run. process = directly on the host; container = each in a podman
# container of the rigs' OS image (rigs/matrix/knobs/container.py), placed by the same pinning and NUMA knobs.
EXECUTORS = ("process", "container", "docker")
# profile_launch: where a profiled cell's profiler runs (policy.profile; rigs/matrix/knobs/profiling.py). extra = in
# one more launch a round, outside the timed ones (the numbers never carry it); timed = inside the timed launch
# itself (no extra launch; its numbers carry the profiler's cost: `--set profile_launch=extra,timed` measures it).
PROFILE_LAUNCHES = ("extra", "timed")
# Axes added after results were stored: at this value a cell is what it was before the axis existed, so the
# value stays out of the cell id (stored runs resume and compare as before).
ID_NEUTRAL = {"executor": "process", "profile_launch": "extra", "memory_limit": "none"}
# memory_limit: none, a size or a [memory_limit.NAME] table's name: rigs/matrix/knobs/memorylimit.py.
# jdk = ["none"]: a matrix of native programs only (e.g. Redis); its cells start no JVM and need no JDK.
NO_JDK = "none"
# A value of the variant axis other than stock: a patch set built by Bazel, whole or its first k patches, or
# the rig built on another release of a dependency (bump:hadoop-3.5.0).
VARIANT_RE = re.compile(r"patched:([A-Za-z0-9][A-Za-z0-9_.-]*)(?:@([1-9][0-9]*))?|bump:[a-z][a-z0-9_]*-[0-9][A-Za-z0-9_.-]*")


class SpecError(ValueError):
    """A matrix file or override that cannot be run; the message says what and where."""


@dataclasses.dataclass(frozen=True)
class Pinning:
    name: str
    cpus: str = ""  # the CPU binding of the process under test, kernel list syntax; "" = not bound
    threads: tuple = ()  # ((java thread name regex, cpu list), ...) in the process under test
    roles: tuple = ()  # ((process role, cpu list), ...): overrides `cpus` for the roles it names
    # The matrix's word that roles may share CPUs the rig wants apart (its `apart_roles`): a study of contention.
    share_cpus: bool = False

    def cpus_for(self, role, under_test):
        """The CPU list a process of `role` is bound to ("" = not bound)."""
        return dict(self.roles).get(role, self.cpus if under_test else "")

    def shared_cpus(self, apart_roles):
        """[(apart role, other role, [shared CPUs])] for each role in `apart_roles` whose CPU list overlaps
        another role's list (roles without a list are not bound, so not compared)."""
        lists = {role: _cpus(cpus) for role, cpus in self.roles}
        found = []
        for role in apart_roles:
            for other, cpus in sorted(lists.items()):
                common = lists.get(role, set()) & cpus
                if other != role and common:
                    found.append((role, other, sorted(common)))
        return found


@dataclasses.dataclass
class Cell:
    params: dict[str, str]  # axis -> its value as text, sorted keys
    # What else makes the cell what it is without being a parameter: a patched variant's patch set hash
    # (the runner sets it), so a changed patch is another cell id while the parameters compare as before.
    identity: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def id(self) -> str:
        return cell_id(dict(self.params, **self.identity) if self.identity else self.params)

    def label(self, axes=None):
        """'k=v ...' over `axes` (default: all), e.g. only the axes that vary in the matrix."""
        return " ".join(f"{k}={v}" for k, v in self.params.items() if axes is None or k in axes)


@dataclasses.dataclass(frozen=True)
class Matrix:
    name: str
    rig: str
    workload: str
    seed: int
    axes: dict  # axis -> [values]
    rig_axes: tuple  # names of the rig's own parameters among axes
    pinnings: dict  # name -> Pinning
    gc_opts: dict  # name -> [jvm flags]
    variants: dict  # {"stock": {}}; patched:<set>[@k] values are checked against the build (runner)
    policy: policy.Policy
    cells: list  # [Cell]
    source: str = ""  # path of the file, for messages
    zip_groups: list = dataclasses.field(default_factory=list)  # [[axis, ...]] that vary together
    known_answers: list = dataclasses.field(default_factory=list)  # [KnownAnswer]
    question: str = ""
    not_compared: tuple = ()
    memory_limits: dict = dataclasses.field(default_factory=dict)  # name -> memorylimit.NamedMemoryLimit

    def memory_limit_of(self, cell):
        """The cell's memory limit as a size (512m) or none: a named one resolved by the cell's `by` value; a
        cache room's is the room itself, where the limit starts before the cell's processes hold anything."""
        value = cell.params.get("memory_limit", "none")
        named = self.memory_limits.get(value)
        return named.size_for(cell.params) if named else value

    def cache_room_of(self, cell):
        """The page cache room of a limit that follows the cell, or None."""
        named = self.memory_limits.get(cell.params.get("memory_limit", "none"))
        return named.cache_room if named and named.cache_room else None

    def repetitions_of(self, cell):
        """A known-answer cell runs its own (smaller) number of repetitions; every other cell the policy's."""
        for k in self.known_answers:
            if k.cell_id == cell.id:
                return min(k.repetitions, self.policy.repetitions)
        return self.policy.repetitions

    def comparison_groups(self):
        """The declared axes a comparison may vary: each zip group whose axes take 2+ values, and each
        other axis with 2+ values. Axes that differ only because of an [[include]] are not among them."""
        zipped = {a for g in self.zip_groups for a in g}
        groups = [list(g) for g in self.zip_groups if len(self.axes[g[0]]) > 1]
        groups += [[a] for a, vals in self.axes.items() if a not in zipped and len(vals) > 1]
        return [g for g in groups if not set(g) & set(self.not_compared)]


@dataclasses.dataclass
class KnownAnswer:
    cell_id: str
    metric: str
    expect: float
    tolerance: float  # fraction of expect
    label: str
    repetitions: int = 1  # a self-check needs no statistics; capped by the policy's repetitions

    def to_json(self):
        return dataclasses.asdict(self)


def cell_id(params):
    """Stable id: sha256 of the canonical JSON of the resolved parameters (less ID_NEUTRAL ones), 12 hex digits."""
    params = {k: v for k, v in params.items() if ID_NEUTRAL.get(k, object()) != v}
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _seed(where, value):
    """[matrix] seed: a whole number (it seeds the interleaving order and the rigs' generated inputs)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise SpecError(f"{where}: [matrix] seed = {str(value)[:40]!r}: a whole number from 0 to 2**63 - 1")
    return value


def _cpus(text):
    """A matrix's CPU list as a set (rigs/host/cpuid.py parses it), its error a SpecError."""
    try:
        return cpu_set(text)
    except ValueError as e:
        raise SpecError(str(e)) from None


def parse_heap(text):
    """knobvalues.parse_heap, its error a SpecError."""
    try:
        return knobvalues.parse_heap(text)
    except ValueError as e:
        raise SpecError(str(e)) from None


def load(path, profile=None, overrides=(), rig_params=None, policy_defaults=None):
    """Reads a matrix file and returns the expanded, statically validated Matrix.

    rig_params: the workload's own parameters with their defaults (the only axes beyond STANDARD_AXES).
    policy_defaults: the workload's declared measurement policy, which [policy] and profiles override.
    """
    try:
        data = safeio.read_toml(path)
    except safeio.InputError as e:
        raise SpecError(str(e)) from None
    except OSError as e:
        raise SpecError(f"{path}: {e.strerror}") from None
    return from_dict(data, source=path, profile=profile, overrides=overrides, rig_params=rig_params,
                     policy_defaults=policy_defaults)


TABLES = ("matrix", "axes", "profiles", "pinning", "gc_opts", "policy", "memory_limit")
ARRAYS_OF_TABLES = ("zip", "include", "exclude", "known_answer")


def _check_shape(where, data, prefix):
    """Tables where tables belong, arrays of tables where those do (a TOML file can put any value anywhere:
    `matrix = 5` must be the spec error, not an AttributeError)."""
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise SpecError(f"{where}: {'[' + prefix.rstrip('.') + ']' if prefix else 'a matrix file'} must be a "
                        f"table, not {type(data).__name__}")
    for key in TABLES:
        if key in data and not isinstance(data[key], dict):
            raise SpecError(f"{where}: [{prefix}{key}] must be a table, not {type(data[key]).__name__}")
    for key in ARRAYS_OF_TABLES:
        if key in data and not (isinstance(data[key], list) and all(isinstance(x, dict) for x in data[key])):
            raise SpecError(f"{where}: [[{prefix}{key}]] must be an array of tables")


def from_dict(data, source="<matrix>", profile=None, overrides=(), rig_params=None, policy_defaults=None):
    """The Matrix of a parsed matrix file (`data`), a profile of it and --set overrides; SpecError naming the
    first problem.

    Why one function: the layers (top-level tables, the profile, --set, the defaults) are applied in one order,
    and that order decides which wins; each table's own checks are the functions below."""
    rig_params = dict(rig_params or {})
    where = source
    _check_shape(where, data, "")
    known = {"matrix", "axes", "zip", "include", "exclude", "profiles", "pinning", "gc_opts", "variant", "policy",
             "known_answer", "memory_limit"}
    unknown = set(data) - known
    if unknown:
        raise SpecError(f"{where}: unknown top-level tables {sorted(unknown)}; expected {sorted(known)}")
    head = data.get("matrix", {})
    for key in ("name", "rig"):
        if not isinstance(head.get(key), str) or not head[key]:
            raise SpecError(f"{where}: [matrix] needs a string `{key}`")
    if not isinstance(head.get("workload", ""), str) or not isinstance(head.get("question", ""), str):
        raise SpecError(f"{where}: [matrix] `workload` and `question` are strings")
    not_compared = head.get("not_compared", [])
    if not isinstance(not_compared, list) or not all(isinstance(a, str) for a in not_compared):
        raise SpecError(f"{where}: [matrix] `not_compared` is a list of axis names")

    pinnings = {"none": Pinning("none")}
    for name, body in data.get("pinning", {}).items():
        pinnings[name] = _parse_pinning(where, name, body)
    gc_opts = {"default": []}
    for name, body in data.get("gc_opts", {}).items():
        flags = body.get("flags") if isinstance(body, dict) else None
        if not isinstance(flags, list) or not all(isinstance(x, str) and x.startswith("-") for x in flags):
            raise SpecError(f"{where}: [gc_opts.{name}] needs `flags`, a list of JVM options")
        gc_opts[name] = flags
    memory_limits = {name: _parse_memory_limit(where, name, body) for name, body in data.get("memory_limit", {}).items()}
    if "variant" in data:
        raise SpecError(f"{where}: [variant] tables are gone: a variant is a Bazel-built patch set, named on the "
                        "variant axis as patched:<set> or patched:<set>@<k> (third_party/<component>/patches/)")
    variants = {"stock": {}}

    allowed_axes = set(STANDARD_AXES) | set(rig_params)
    axes = _axes_table(where, "[axes]", data.get("axes", {}), allowed_axes)
    policy_table = _policy(policy.merge, dict(policy_defaults or {}), data.get("policy", {}))

    # The matrix's question is the default's (and smoke's); another profile asks its own or none.
    question = str(head.get("question", ""))
    if profile is not None:
        profiles = data.get("profiles", {})
        if profile not in profiles:
            raise SpecError(f"{where}: no profile {profile!r}; profiles: {sorted(profiles) or 'none'}")
        body = profiles[profile]
        _check_shape(where, body, f"profiles.{profile}.")
        if profile != "smoke":
            question = str(body.get("question", ""))
        extra = set(body) - {"axes", "policy", "description", "zip", "include", "exclude", "known_answer",
                             "question"}
        if extra:
            raise SpecError(f"{where}: [profiles.{profile}] has unknown keys {sorted(extra)}")
        axes.update(_axes_table(where, f"[profiles.{profile}.axes]", body.get("axes", {}), allowed_axes))
        policy_table = _policy(policy.merge, policy_table, body.get("policy", {}))
        # A profile's own zip/include/exclude lists replace the top-level ones (a study shape differs).
        data = dict(data, **{k: body[k] for k in ("zip", "include", "exclude", "known_answer") if k in body})

    set_axes = {}
    for item in overrides:
        axis, sep, values = item.partition("=")
        axis = axis.strip()
        if not sep or not values:
            raise SpecError(f"--set {item!r}: expected axis=value[,value...]")
        if axis.startswith("policy."):
            policy_table = _policy(policy.merge, policy_table,
                                   _policy(policy.override, item, axis[len("policy."):], values.strip()))
            continue
        if axis not in allowed_axes:
            raise SpecError(f"--set {item!r}: unknown axis {axis!r}; axes: {sorted(allowed_axes)}")
        set_axes[axis] = [_scalar(v.strip()) for v in values.split(",")]
    _select_zipped_rows(where, axes, data.get("zip", []), set_axes)
    axes.update(set_axes)

    for axis, default in list(DEFAULTS.items()) + list(rig_params.items()):
        axes.setdefault(axis, [default])
    if "jdk" not in axes:
        raise SpecError(f"{where}: [axes] needs `jdk` (e.g. jdk = [11, 17])")
    axes = {k: [str(v) for v in vals] for k, vals in axes.items()}

    _check_values(where, axes, pinnings, gc_opts, variants, memory_limits)
    measurement = _policy(policy.parse, where, policy_table)
    known_tables = data.get("known_answer", [])
    for known in known_tables:
        if not isinstance(known, dict) or not isinstance(known.get("cell"), dict):
            raise SpecError(f"{where}: [[known_answer]] needs `cell`, a table of axis values")
    includes = list(data.get("include", [])) + [k["cell"] for k in known_tables]
    cells = expand(where, axes, data.get("zip", []), includes, data.get("exclude", []))
    known_answers = [_known_answer(where, k, axes) for k in known_tables]
    for cell in cells:
        _check_values(where, {k: [v] for k, v in cell.params.items()}, pinnings, gc_opts, variants, memory_limits)
    matrix = Matrix(name=head["name"], rig=head["rig"], workload=head.get("workload", ""),
                    seed=_seed(where, head.get("seed", 0)), axes=axes,
                    rig_axes=tuple(sorted(set(axes) - set(STANDARD_AXES))), pinnings=pinnings,
                    gc_opts=gc_opts, variants=variants, policy=measurement, cells=cells, source=source,
                    zip_groups=[list(g["axes"]) for g in data.get("zip", [])], known_answers=known_answers,
                    question=question, not_compared=tuple(head.get("not_compared", ())), memory_limits=memory_limits)
    static_errors = [e for cell in cells for e in static_cell_errors(matrix, cell)]
    if static_errors:
        raise SpecError(f"{where}: " + "\n  ".join(["impossible cells:"] + sorted(set(static_errors))))
    return matrix


def check_workload(matrix, workload, folder):
    """Refuses a workload the matrix is not for: another rig's, or another folder than `[matrix] workload`."""
    if workload.rig != matrix.rig:
        raise SpecError(f"{matrix.source} is for rig {matrix.rig!r}, the workload {workload.id} for {workload.rig!r}")
    named = os.path.basename(os.path.normpath(matrix.workload)) if matrix.workload else None
    if named and named != os.path.basename(os.path.normpath(folder)):
        raise SpecError(f"{matrix.source} is for workload {matrix.workload}, not {folder}: give its folder "
                        "(the rig_matrix target passes the right one)")


def _policy(parse, *args):
    """A call of policy.py's, its refusal a SpecError."""
    try:
        return parse(*args)
    except policy.PolicyError as e:
        raise SpecError(str(e)) from None


def _known_answer(where, table, axes):
    extra = set(table) - {"cell", "metric", "expect", "tolerance", "label", "repetitions"}
    if extra:
        raise SpecError(f"{where}: [[known_answer]] has unknown keys {sorted(extra)}")
    try:
        expect, tolerance = float(table["expect"]), float(table.get("tolerance", 0.01))
        metric, repetitions = str(table["metric"]), int(table.get("repetitions", 1))
    except (KeyError, TypeError, ValueError):
        raise SpecError(f"{where}: [[known_answer]] needs `metric` and a numeric `expect` (and `tolerance`)") from None
    params = dict(sorted({axis: str(table["cell"].get(axis, vals[0])) for axis, vals in axes.items()}.items()))
    if repetitions < 1:
        raise SpecError(f"{where}: [[known_answer]] repetitions must be 1 or more")
    return KnownAnswer(cell_id(params), metric, expect, tolerance, str(table.get("label", metric)), repetitions)


def _scalar(text):
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def _axes_table(where, table_name, table, allowed):
    axes = {}
    for axis, values in table.items():
        if axis not in allowed:
            raise SpecError(f"{where}: {table_name}: unknown axis {axis!r}; axes: {sorted(allowed)}")
        if not isinstance(values, list) or not values:
            raise SpecError(f"{where}: {table_name}: axis {axis!r} must be a non-empty list")
        if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values):
            raise SpecError(f"{where}: {table_name}: axis {axis!r} values must be strings or numbers")

        axes[axis] = values
    return axes


def _parse_pinning(where, name, body):
    if not isinstance(body, dict):
        raise SpecError(f"{where}: [pinning.{name}] must be a table")
    extra = set(body) - {"cpus", "threads", "roles", "description", "share_cpus"}
    if extra:
        raise SpecError(f"{where}: [pinning.{name}] has unknown keys {sorted(extra)}")
    cpus = str(body.get("cpus", ""))
    _cpus(cpus)
    threads = body.get("threads", {})
    if not isinstance(threads, dict):
        raise SpecError(f"{where}: [pinning.{name}] threads must map a thread-name pattern to a CPU list")
    for pattern, cpu_list in threads.items():
        try:
            re.compile(pattern)
        except re.error as e:
            raise SpecError(f"{where}: [pinning.{name}] thread pattern {pattern!r}: {e}") from None
        if not _cpus(cpu_list):
            raise SpecError(f"{where}: [pinning.{name}] thread {pattern!r} has an empty CPU list")
        if cpus and not _cpus(cpu_list) <= _cpus(cpus):
            raise SpecError(
                f"{where}: [pinning.{name}] pins threads {pattern!r} to CPUs {cpu_list}, outside the process's "
                f"CPU binding {cpus}: the kernel would refuse or silently ignore it (the study's own pitfall). "
                "Widen `cpus` or leave the threads' CPUs outside any process binding.")
    roles = body.get("roles", {})
    if not isinstance(roles, dict) or not all(isinstance(r, str) and _cpus(str(c)) for r, c in roles.items()):
        raise SpecError(f"{where}: [pinning.{name}] roles must map a process role to a non-empty CPU list")
    share_cpus = body.get("share_cpus", False)
    if not isinstance(share_cpus, bool):
        raise SpecError(f"{where}: [pinning.{name}] share_cpus must be true or false")
    return Pinning(name, cpus, tuple(sorted((p, str(c)) for p, c in threads.items())),
                   tuple(sorted((r, str(c)) for r, c in roles.items())), share_cpus)


def _parse_memory_limit(where, name, body):
    try:
        return memorylimit.parse_named(name, body)
    except ValueError as e:
        raise SpecError(f"{where}: {e}") from None


def _check_values(where, axes, pinnings, gc_opts, variants, memory_limits=None):
    checks = {"gc": GCS, "hugepages": HUGEPAGES, "numa": NUMA_POLICIES, "pinning": tuple(pinnings),
              "gc_opts": tuple(gc_opts), "executor": EXECUTORS, "profile_launch": PROFILE_LAUNCHES}
    for v in axes.get("variant", []):
        if v != "stock" and not VARIANT_RE.fullmatch(str(v)):
            raise SpecError(f"{where}: axis variant: {v!r} is not stock, patched:<set>, patched:<set>@<k> or "
                            "bump:<component>-<version>")
    for axis, allowed in checks.items():
        for v in axes.get(axis, []):
            if v not in allowed:
                raise SpecError(f"{where}: axis {axis}: unknown value {v!r}; allowed: {', '.join(allowed)}")
    for v in axes.get("heap", []):
        parse_heap(v)
    for v in axes.get("memory_limit", []):
        problem = memorylimit.value_problem(v, memory_limits or {}, axes)
        if problem:
            raise SpecError(f"{where}: {problem}")
    for v in axes.get("jdk", []):
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", v):
            raise SpecError(f"{where}: axis jdk: {v!r} is not a JDK name (11, 17, 21, a declared name, or "
                            f"{NO_JDK} for a rig of native programs)")


def _select_zipped_rows(where, axes, zips, set_axes):
    """`--set` on some axes of a [[zip]] group keeps the group's rows with those values (e.g. --set gc=g1 on
    gc x gc_opts keeps g1's row): the other axes of the group are narrowed to match. Setting every axis of
    a group replaces its rows outright."""
    for group in zips:
        names = group.get("axes") if isinstance(group, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            continue  # expand() refuses the group with its reason (issue 58: `axes = 3` was a TypeError here)
        names = [n for n in names if n in axes]
        chosen = [n for n in names if n in set_axes]
        if not chosen or len(chosen) == len(names):
            continue
        rows = list(zip(*(axes[n] for n in names)))
        wanted = {n: [str(v) for v in set_axes[n]] for n in chosen}
        kept = [r for r in rows if all(str(r[names.index(n)]) in wanted[n] for n in chosen)]
        missing = [f"{n}={v}" for n in chosen for v in wanted[n]
                   if not any(str(r[names.index(n)]) == v for r in kept)]
        if missing:
            raise SpecError(f"{where}: --set {', '.join(missing)}: no row of the [[zip]] group "
                            f"({', '.join(names)}) has it; its rows: "
                            + "; ".join(", ".join(f"{n}={v}" for n, v in zip(names, r)) for r in rows)
                            + ". Set every axis of the group to give new rows.")
        for i, n in enumerate(names):
            set_axes[n] = [r[i] for r in kept]


# Cells a matrix may have: 10,000 cells of one repetition of seconds each is already a day of this host.
MAX_CELLS = 10_000


def expand(where, axes, zips, includes, excludes):
    """Cross product of the axes, with zipped groups paired, excludes removed, includes added."""
    zipped = []
    seen = set()
    for group in zips:
        names = group.get("axes") if isinstance(group, dict) else None
        if not isinstance(names, list) or len(names) < 2 or not all(isinstance(n, str) for n in names):
            raise SpecError(f"{where}: [[zip]] needs `axes`, a list of at least two axis names")
        for n in names:
            if n not in axes:
                raise SpecError(f"{where}: [[zip]] names unknown axis {n!r}")
            if n in seen:
                raise SpecError(f"{where}: axis {n!r} is in two [[zip]] groups")
            seen.add(n)
        lengths = {n: len(axes[n]) for n in names}
        if len(set(lengths.values())) != 1:
            raise SpecError(f"{where}: [[zip]] axes must have equal lengths, got {lengths}")
        zipped.append(names)
    for n, values in axes.items():
        # A zipped axis may repeat a value (gc = ["cms", "cms"] paired with two gc_opts); a crossed one may not.
        if n not in seen and len(set(values)) != len(values):
            raise SpecError(f"{where}: axis {n!r} lists a value twice")
    groups = [[n] for n in sorted(axes) if n not in seen] + zipped
    choices = [[dict(zip(g, combo)) for combo in zip(*(axes[n] for n in g))] for g in groups]
    combinations = math.prod(len(c) for c in choices) + len(includes)
    if combinations > MAX_CELLS:
        # Counted before anything is enumerated: a few long free-form axes cross into millions of cells.
        raise SpecError(f"{where}: the axes cross into {combinations:,} cells (before [[exclude]]), above the "
                        f"bound of {MAX_CELLS:,} a matrix may have")
    cells = {}
    for combo in itertools.product(*choices):
        params = {}
        for part in combo:
            params.update(part)
        params = dict(sorted(params.items()))
        if any(_matches(params, ex, where, "exclude") for ex in excludes):
            continue
        cells.setdefault(cell_id(params), Cell(params))
    for inc in includes:
        if not isinstance(inc, dict):
            raise SpecError(f"{where}: [[include]] entries must be tables")
        unknown = set(inc) - set(axes)
        if unknown:
            raise SpecError(f"{where}: [[include]] names unknown axes {sorted(unknown)}")
        params = {axis: str(inc.get(axis, vals[0])) for axis, vals in axes.items()}
        params = dict(sorted(params.items()))
        cells.setdefault(cell_id(params), Cell(params))
    if not cells:
        raise SpecError(f"{where}: the matrix has no cells left after [[exclude]]")
    return list(cells.values())


def _matches(params, pattern, where, kind):
    if not isinstance(pattern, dict) or not pattern:
        raise SpecError(f"{where}: [[{kind}]] entries must be non-empty tables")
    for axis, value in pattern.items():
        if axis not in params:
            raise SpecError(f"{where}: [[{kind}]] names unknown axis {axis!r}")
        wanted = [str(v) for v in value] if isinstance(value, list) else [str(value)]
        if params[axis] not in wanted:
            return False
    return True


def static_cell_errors(matrix, cell):
    """Combinations that cannot work on any host (not host-dependent skips)."""
    p = cell.params
    errors = []
    flags = matrix.gc_opts.get(p["gc_opts"], [])
    errors += jvm.static_problems(p["gc"], p["gc_opts"], flags, knobvalues.jdk_major(p["jdk"]))
    conflict = hugepages.gc_opts_problem(p["hugepages"], p["gc_opts"], flags)
    if conflict:
        errors.append(conflict)
    unsized = memorylimit.cell_problem(p, matrix.memory_limits)
    if unsized:
        errors.append(unsized)
    if p.get("memory_limit", "none") != "none" and p.get("executor", "process") != "process":
        errors.append(f"memory_limit={p['memory_limit']} with executor={p['executor']}: a container's processes are "
                      "in its engine's cgroup, not the cell's, so the limit would not hold them")
    return errors


if typing.TYPE_CHECKING:  # mypy (//:lint_test): a Cell is what a rig reads of a cell
    from rigs.matrix.contract import rig as _rig
    _CELL_IS_A_CELL_VIEW: _rig.CellView = Cell({})
