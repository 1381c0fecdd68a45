"""Turning a cell into a launch: host knobs (set and always restored), the CPU/memory wrapper, JVM flags,
and per-thread pinning by Java thread name.

Everything shells out with argument lists. Host files are reached through `HostPaths`, so tests point
them at a temporary folder.
"""

import dataclasses
import json
import os
import re
import subprocess
import sys
import time

from rigs.host.cpuid import cpu_set
from rigs.matrix import evidence, hoststate, knobvalues

MEMPOLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mempolicy.py")

# The explicit hugepage size when a host does not say (x86-64, and aarch64 with 4 KiB base pages); aarch64
# kernels built with 64 KiB pages have 512 MiB ones: the host's default size (Hugepagesize) is used.
HUGEPAGE_BYTES = 2 << 20
# Explicit hugepages must hold the heap and the JIT's code cache (240 MiB reserved by default, also on
# large pages); the JVM silently falls back to small pages when they do not fit.
HUGEPAGE_MARGIN_BYTES = 256 << 20


@dataclasses.dataclass
class HostPaths:
    thp_enabled: str = "/sys/kernel/mm/transparent_hugepage/enabled"
    nr_hugepages: str = "/proc/sys/vm/nr_hugepages"
    compact_memory: str = "/proc/sys/vm/compact_memory"
    proc: str = "/proc"


# How often a short hugepage reservation is retried after asking the kernel to compact memory: a host
# whose free memory is split into small pieces (a busy page cache, another workload that just ended)
# often has the 2 MiB blocks after one compaction.
HUGEPAGE_ATTEMPTS = 3


class HostKnobs:
    """Sets THP mode and nr_hugepages for a cell and puts the previous values back, whatever happens.

    Use as a context manager; `restore()` is idempotent. Before changing anything the original values
    go to a journal file, so that a runner killed with SIGKILL (no handler runs) is cleaned up by the
    next run: `recover(journal)` restores them.
    """

    def __init__(self, paths=None, journal=None, hugepage_bytes=HUGEPAGE_BYTES):
        self.paths = paths or HostPaths()
        self.journal = journal
        self.hugepage_bytes = hugepage_bytes
        self._saved = []  # [(path, original text)] in the order they were changed

    def _write(self, path, value):
        if path not in (saved for saved, _ in self._saved):  # a retry keeps the first original
            with open(path) as f:
                original = f.read()
            self._saved.append((path, original))
            if self.journal:
                _write_journal(self.journal, self._saved)
        with open(path, "w") as f:
            f.write(str(value))

    def apply(self, cell):
        """Changes the host for the cell; returns a dict of what was set (for the result's evidence)."""
        hp = cell.params["hugepages"]
        applied = {}
        if hp.startswith("thp_") or hp == "off":
            mode = {"thp_always": "always", "thp_madvise": "madvise", "off": "never"}[hp]
            if self.thp_mode() != mode:
                self._write(self.paths.thp_enabled, mode)
            applied["thp_mode"] = self.thp_mode()
        if hp == "host":
            applied["thp_mode"] = self.thp_mode()  # as found: nothing is written
        if hp == "explicit":
            pages = hugepages_for_heap(cell.params["heap"], self.hugepage_bytes)
            current = self._read_int(self.paths.nr_hugepages)
            got = current
            attempts = 0
            while got < pages and attempts < HUGEPAGE_ATTEMPTS:
                if attempts:
                    self._compact_memory()
                attempts += 1
                self._write(self.paths.nr_hugepages, pages)
                got = self._read_int(self.paths.nr_hugepages)
            applied["nr_hugepages"] = got
            applied["hugepage_size_kb"] = self.hugepage_bytes // 1024
            if attempts > 1:
                applied["hugepage_reservation_attempts"] = attempts
            if got < pages:
                raise KnobError(f"asked the kernel for {pages} hugepages, it reserved {got} after {attempts} "
                                f"attempts with memory compaction in between (free memory too fragmented, "
                                f"or in use by another workload: {self._mem_summary()})")
        return applied

    def _compact_memory(self):
        # Writing any value makes the kernel compact all zones now (it returns when done).
        try:
            with open(self.paths.compact_memory, "w") as f:
                f.write("1")
        except OSError:
            pass  # a kernel without CONFIG_COMPACTION: the retry still lets reclaim run again

    def _mem_summary(self):
        try:
            with open(os.path.join(self.paths.proc, "meminfo")) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            return ", ".join(f"{k} {fields[k].strip()}" for k in ("MemFree", "MemAvailable") if k in fields)
        except OSError:
            return "meminfo unreadable"

    @staticmethod
    def _read_int(path):
        with open(path) as f:
            return int(f.read().strip() or 0)

    def thp_mode(self):
        try:
            with open(self.paths.thp_enabled) as f:
                return evidence_thp(f.read())
        except OSError:
            return None

    def restore(self):
        errors = []
        while self._saved:
            path, original = self._saved.pop()
            try:
                value = evidence_thp(original) if path == self.paths.thp_enabled else original.strip()
                with open(path, "w") as f:
                    f.write(value)
            except OSError as e:
                errors.append(f"{path}: {e}")
        if self.journal and not errors and os.path.exists(self.journal):
            os.unlink(self.journal)
        if errors:
            raise KnobError("could not restore host settings: " + "; ".join(errors))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore()
        return False


class KnobError(RuntimeError):
    pass


def _write_journal(journal, saved):
    hoststate.write_file(journal, json.dumps([[path, original] for path, original in saved]).encode())


THP_MODES = ("always", "madvise", "never")


def _journal_problem(item, paths):
    """Why a journal entry is not one this runner writes, or ''."""
    if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)):
        return f"entry {str(item)[:80]!r} is not a [path, text] pair"
    path, text = item
    if path == paths.thp_enabled:
        return "" if evidence_thp(text) in THP_MODES else f"{path}: {text[:60]!r} is not a THP mode"
    if path == paths.nr_hugepages:
        return "" if re.fullmatch(r"[0-9]{1,12}\n?", text) else f"{path}: {text[:60]!r} is not a page count"
    return (f"it names {path[:200]!r}, which the runner never changes (only {paths.thp_enabled} and "
            f"{paths.nr_hugepages})")


def recover(journal, paths=None):
    """Restores host settings a killed run left changed (from its journal); returns what was restored.

    The journal must be the runner's own (hoststate.read_file: owner, mode, no link) and name only the
    knobs the runner changes, with values those knobs take; anything else is refused (KnobError) and
    nothing is written."""
    paths = paths or HostPaths()
    try:
        data = hoststate.read_file(journal)
    except hoststate.StateError as e:
        raise KnobError(f"knob journal refused, nothing restored: {e}") from None
    if data is None:
        return []
    try:
        entries = json.loads(data)
        problem = "" if isinstance(entries, list) and len(entries) <= 2 else "not a list of at most two entries"
    except (ValueError, RecursionError) as e:
        entries, problem = [], f"not JSON ({e})"
    for item in entries if not problem else ():
        problem = _journal_problem(item, paths)
        if problem:
            break
    if problem:
        raise KnobError(f"knob journal {journal} is not one this runner wrote: {problem}. Refused, nothing "
                        "restored: look at it, put the host's settings right by hand if needed, and delete it")
    knobs = HostKnobs(paths, journal)
    knobs._saved = [tuple(item) for item in entries]
    knobs.restore()
    return [path for path, _ in entries]


def evidence_thp(text):
    m = re.search(r"\[(\w+)\]", text)
    return m.group(1) if m else text.strip()


def hugepages_for_heap(heap, page_bytes=HUGEPAGE_BYTES):
    return -(-(knobvalues.parse_heap(heap) + HUGEPAGE_MARGIN_BYTES) // page_bytes)


def host_hugepage_bytes(report):
    """The host's default hugepage size (the doctor's Hugepagesize), else 2 MiB."""
    kb = (report or {}).get("memory", {}).get("hugepage_size_kb")
    return kb * 1024 if kb else HUGEPAGE_BYTES


def jvm_flags(cell, matrix, gc_probe_flags, hugepage_bytes=HUGEPAGE_BYTES):
    """The JVM options a cell implies. gc_probe_flags: the flags the doctor found select that GC on this JDK;
    hugepage_bytes: the host's explicit hugepage size."""
    p = cell.params
    flags = list(gc_probe_flags)
    flags += matrix.gc_opts[p["gc_opts"]]
    flags += [f"-Xms{p['heap']}", f"-Xmx{p['heap']}"]
    if p["hugepages"] == "explicit":
        flags += ["-XX:+UseLargePages", f"-XX:LargePageSizeInBytes={hugepage_bytes // (1 << 20)}m"]
    elif p["hugepages"] == "thp_madvise":
        flags += ["-XX:+UseTransparentHugePages"]
    # Sandboxes and shared /tmp make hsperfdata files collide; jcmd attaches without them.
    flags += ["-XX:-UsePerfData"]
    return flags


def numa_nodes_for(cell, matrix, host_nodes, role=None, under_test=True):
    """{"cpu_node", "mem_node"} of a process for its NUMA policy, from the host's nodes ({id: set(cpus)}).

    bind_remote puts memory on the node farthest from the CPUs' node (any other node on 2-node hosts).
    """
    pinning = matrix.pinnings[cell.params["pinning"]]
    cpu_text = pinning.cpus_for(role, under_test)
    cpus = cpu_set(cpu_text) if cpu_text else None
    cpu_node = min(host_nodes)
    if cpus:
        for node, node_cpus in sorted(host_nodes.items()):
            if cpus & node_cpus:
                cpu_node = node
                break
    mem_node = cpu_node
    if under_test and cell.params["numa"] == "bind_remote":
        others = [n for n in sorted(host_nodes) if n != cpu_node]
        mem_node = others[-1] if others else None
    return {"cpu_node": cpu_node, "mem_node": mem_node}


def wrapper_argv(cell, matrix, host_nodes, role=None, under_test=True):
    """numactl/taskset prefix for a process's CPU binding and memory policy ([] when neither is asked).
    The NUMA policy is the process under test's; every process gets its role's CPUs."""
    pinning = matrix.pinnings[cell.params["pinning"]]
    cpus = pinning.cpus_for(role, under_test)
    policy = cell.params["numa"] if under_test else "default"
    nodes = numa_nodes_for(cell, matrix, host_nodes, role, under_test)
    if policy == "default":
        return ["taskset", "-c", cpus] if cpus else []
    argv = ["numactl"]
    if cpus:
        argv.append(f"--physcpubind={cpus}")
    elif policy in ("bind_local", "bind_remote", "pressured_migrated"):
        argv.append(f"--cpunodebind={nodes['cpu_node']}")
    if policy in ("bind_local", "bind_remote"):
        argv.append(f"--membind={nodes['mem_node']}")
    elif policy == "interleave":
        argv.append("--interleave=all")
    elif policy == "preferred":
        argv.append(f"--preferred={nodes['mem_node']}")
    argv.append("--")
    if policy == "weighted_interleave":
        # numactl 2.0.16 has no flag for it: a small helper sets it and execs the program.
        argv += [sys.executable, MEMPOLICY, "weighted-interleave", "all", "--"]
    return argv


def container_mems(cell, matrix, host_nodes, role=None, under_test=True):
    """--cpuset-mems for a process's container: the bound memory node under numa=bind_local/bind_remote (the
    cgroup then enforces what numactl's --membind asks inside), else None (every node, as the policy needs)."""
    policy = cell.params["numa"] if under_test else "default"
    if policy not in ("bind_local", "bind_remote"):
        return None
    return str(numa_nodes_for(cell, matrix, host_nodes, role, under_test)["mem_node"])


class ThreadPinner:
    """Pins Java threads by name to CPUs as they appear, and re-checks that they stay pinned.

    Names come from the JVM (`jcmd PID Thread.print`, whose nid= is the Linux tid), because the kernel
    keeps only 15 characters of a thread name.
    """

    def __init__(self, jcmd, pid, rules, proc="/proc", run=subprocess.run):
        self.jcmd = jcmd
        self.pid = pid
        self.rules = [(re.compile(pattern), cpu_set(cpus), pattern, cpus) for pattern, cpus in rules]
        self.proc = proc
        self.run = run
        self.pinned = {}  # tid -> {"pattern", "name", "tid", "wanted"}
        self.repins = 0
        self.errors = []

    def poll(self):
        """One round: pin new matching threads, re-pin any that drifted. Returns False if jcmd failed."""
        if not self.rules:
            return True
        try:
            proc = self.run([self.jcmd, str(self.pid), "Thread.print"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            self.errors.append(f"jcmd Thread.print: {e}")
            return False
        if proc.returncode != 0:
            self.errors.append(f"jcmd Thread.print exit {proc.returncode}: {proc.stdout.strip()[:200]}")
            return False
        host_tids = self.host_tids()
        for name, tid in evidence.parse_thread_print(proc.stdout):
            # In a container the JVM reports its own namespace's thread ids: pin the host's task.
            tid = host_tids.get(tid, tid)
            for regex, cpus, pattern, cpu_text in self.rules:
                if regex.search(name):
                    known = tid in self.pinned
                    if not known or self.cpus_allowed(tid) != cpus:
                        try:
                            os.sched_setaffinity(tid, cpus)
                        except OSError as e:
                            self.errors.append(f"sched_setaffinity({tid} {name!r}, {cpu_text}): {e}")
                            continue
                        if known:
                            self.repins += 1
                    self.pinned[tid] = {"pattern": pattern, "name": name, "tid": tid, "wanted": cpu_text}
                    break
        return True

    def host_tids(self):
        """{thread id in the JVM's pid namespace: host tid} from each task's NSpid line, when the JVM runs in
        another pid namespace (a container); {} otherwise."""
        out = {}
        task_dir = os.path.join(self.proc, str(self.pid), "task")
        try:
            tasks = os.listdir(task_dir)
        except OSError:
            return out
        for task in tasks:
            try:
                with open(os.path.join(task_dir, task, "status")) as f:
                    ids = evidence.parse_status(f.read()).get("NSpid", "").split()
            except OSError:
                continue
            if len(ids) > 1 and ids[-1].isdigit():
                out[int(ids[-1])] = int(task)
        return out

    def cpus_allowed(self, tid):
        try:
            with open(os.path.join(self.proc, str(self.pid), "task", str(tid), "status")) as f:
                value = evidence.parse_status(f.read()).get("Cpus_allowed_list")
            return cpu_set(value) if value is not None else None
        except OSError:
            return None

    def evidence(self):
        """Each pinned thread with its actual Cpus_allowed_list, read now from the kernel."""
        out = []
        for tid, info in sorted(self.pinned.items()):
            try:
                with open(os.path.join(self.proc, str(self.pid), "task", str(tid), "status")) as f:
                    actual = evidence.parse_status(f.read()).get("Cpus_allowed_list")
            except OSError:
                actual = None
            out.append(dict(info, cpus_allowed=actual))
        return out


def wait_for(predicate, timeout_s, interval_s=0.2):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()
