"""A cell's processes in a cgroup v2 of their own, so that nothing a rig starts outlives its cell (issue 58,
row 13: a `setsid` grandchild left the process group the runner killed, and ran on into the next cell).

Each process of a cell joins <cgroup2 mount>/tunelab/<run>-<cell>.r<rep> before it execs (processes.py), so
its children and their children are there too, whatever session or group they make. Stopping the cell ends
with the cgroup's own kill (cgroup.kill, Linux 5.14; else SIGKILL to each member until it is empty) and
removes it. The parent folder is root's, created by the runner: only root runs a matrix that can use it.
The thread pinner acts only on a JVM that is a member (threadpinning.py).

A cell with a memory limit (the axis memory_limit, issue 62) has it set on this cgroup where the cgroup v2
hierarchy offers the memory controller (memory.max), else on a cgroup of the same name in the v1 memory
hierarchy (memory.limit_in_bytes) that each process joins too (a hybrid host, such as this VM, keeps its
controllers there). The limit read back is the cell's evidence, with the peak use and the out-of-memory kills.
A limit may instead follow the cell (CacheRoom): its processes' own memory plus a fixed room for the page
cache, rewritten every 50 ms, so the cache is squeezed alike however much the processes hold at the moment.

Where there is no cgroup v2 mount this runner may write (not root, a container without delegation, a chroot
without /sys), a cell runs as before, in its process groups, and its evidence says why: {"unavailable": why}.
"""

import os
import re
import signal
import stat
import threading
import time

from results import safeio

PARENT_NAME = "tunelab"
KILL_TIMEOUT_S = 10.0


class CgroupError(RuntimeError):
    pass


def v2_mount(mountinfo="/proc/self/mountinfo"):
    """The mount point of the cgroup v2 hierarchy (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid
    host), or None."""
    try:
        text = safeio.read_text(mountinfo, 1 << 20)
    except OSError:
        return None
    for line in text.splitlines():
        fields = line.split(" - ", 1)
        if len(fields) == 2 and fields[1].split(" ", 1)[0] == "cgroup2":
            return fields[0].split(" ")[4].replace("\\040", " ")
    return None


def parent_folder(mount=None):
    """<mount>/tunelab, created (mode 0755) and checked root's own; CgroupError saying why it cannot be."""
    if os.geteuid() != 0:
        raise CgroupError("the runner is not root: a cgroup per cell needs root")
    mount = mount or v2_mount()
    if not mount:
        raise CgroupError("no cgroup v2 hierarchy mounted (/proc/self/mountinfo has no cgroup2)")
    return _root_folder(os.path.join(mount, PARENT_NAME))


def memory_limit_bytes(value):
    """Bytes of a memory_limit value (512m, 3g), None for none."""
    if value == "none":
        return None
    m = re.fullmatch(r"([1-9][0-9]*)([mg])", value)
    if not m:
        raise CgroupError(f"memory_limit {value!r}: not none or a size such as 512m or 3g")
    return int(m.group(1)) << (20 if m.group(2) == "m" else 30)


def v1_memory_mount(mountinfo="/proc/self/mountinfo"):
    """The mount point of the cgroup v1 memory hierarchy, or None."""
    with open(mountinfo) as f:
        for line in f:
            fields = line.split(" - ", 1)
            if len(fields) != 2:
                continue
            fstype, _source, options = (fields[1].split(" ") + ["", ""])[:3]
            if fstype == "cgroup" and "memory" in options.strip().split(","):
                return fields[0].split(" ")[4]
    return None


def _root_folder(path):
    """`path` created (0755) if missing and checked a folder only root may write."""
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    except OSError as e:
        raise CgroupError(f"cannot create {path} ({e.strerror})") from None
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise CgroupError(f"{path} is not a folder only root may write: not used")
    return path


def _read(path):
    return safeio.read_text(path, 1 << 16).strip()


class CellCgroup:
    """One cell's cgroup: created empty, joined by each process before exec, killed and removed at the end."""

    def __init__(self, path):
        self.path = path
        self.procs_path = os.path.join(path, "cgroup.procs")
        self.memory_v1_path = None  # the v1 memory cgroup each process joins too, when the limit is set there

    @property
    def join_paths(self):
        """The cgroup.procs files a process of the cell writes itself into before exec."""
        extra = [os.path.join(self.memory_v1_path, "cgroup.procs")] if self.memory_v1_path else []
        return tuple([self.procs_path] + extra)

    def limit_memory(self, limit_bytes, v1_mount=None):
        """Caps the memory (RSS and page cache) of the cell's processes at `limit_bytes`: memory.max here when
        the v2 parent offers the memory controller, else memory.limit_in_bytes in a v1 memory cgroup of the
        same name. Call before any process joins. Returns {hierarchy, path, limit_bytes read back}."""
        parent = os.path.dirname(self.path)
        try:
            offered = _read(os.path.join(os.path.dirname(parent), "cgroup.controllers")).split()
        except (OSError, safeio.InputError):
            offered = []
        if "memory" in offered:
            safeio.write_setting(os.path.join(parent, "cgroup.subtree_control"), "+memory")
            safeio.write_setting(os.path.join(self.path, "memory.max"), str(limit_bytes))
            if os.path.exists(os.path.join(self.path, "memory.swap.max")):
                safeio.write_setting(os.path.join(self.path, "memory.swap.max"), "0")
            read_back = _read(os.path.join(self.path, "memory.max"))
            return {"hierarchy": "v2", "path": self.path, "limit_bytes": int(read_back)}
        mount = v1_mount or v1_memory_mount()
        if not mount:
            raise CgroupError("no memory controller: cgroup v2 does not offer it here and no v1 memory "
                              "hierarchy is mounted")
        path = os.path.join(_root_folder(os.path.join(mount, PARENT_NAME)), os.path.basename(self.path))
        if os.path.isdir(path):
            CellCgroup(path).remove()
        try:
            os.mkdir(path)
        except OSError as e:
            raise CgroupError(f"cannot create {path} ({e.strerror})") from None
        self.memory_v1_path = path
        safeio.write_setting(os.path.join(path, "memory.limit_in_bytes"), str(limit_bytes))
        read_back = int(_read(os.path.join(path, "memory.limit_in_bytes")))
        if read_back > limit_bytes:
            raise CgroupError(f"{path}: memory.limit_in_bytes reads {read_back} after writing {limit_bytes}")
        return {"hierarchy": "v1", "path": path, "limit_bytes": read_back}

    def _memory_files(self):
        """(limit file, usage file, stat file, stat keys of the page cache and of its mapped part) of the
        cgroup that holds the cell's limit; on v2 the limit a cache room moves is memory.high (follow_softly)."""
        if self.memory_v1_path:
            d = self.memory_v1_path
            return (os.path.join(d, "memory.limit_in_bytes"), os.path.join(d, "memory.usage_in_bytes"),
                    os.path.join(d, "memory.stat"), "total_cache", "total_mapped_file")
        return (os.path.join(self.path, "memory.high"), os.path.join(self.path, "memory.current"),
                os.path.join(self.path, "memory.stat"), "file", "file_mapped")

    def follow_softly(self):
        """Before a cache room's first step, on v2: its limit becomes memory.high at the cap limit_memory set,
        and memory.max is lifted. Over memory.high the kernel reclaims (the page cache first) and throttles the
        allocating process; it never kills there. So a process that grows faster than the follower's steps
        (a busy host starves its thread: four tests at once on 2 CPUs did once, memory.max OOM-killed a process
        of 150 MB) waits for the next step instead of dying. v1 has no memory.high: its hard limit follows as
        before."""
        if self.memory_v1_path:
            return
        cap = _read(os.path.join(self.path, "memory.max"))
        safeio.write_setting(os.path.join(self.path, "memory.high"), cap)
        safeio.write_setting(os.path.join(self.path, "memory.max"), "max")

    def hold_cache_room(self, room_bytes):
        """One step of a limit that follows the cell: what its processes hold themselves (their usage less the
        page cache they have not mapped: resident memory, the kernel's for them, the jars they map) plus
        `room_bytes` of page cache. Returns (limit written or None where the kernel refused it because it
        could not reclaim enough, the page cache then)."""
        limit_file, usage_file, stat_file, cache_key, mapped_key = self._memory_files()
        usage = int(_read(usage_file))
        stats = dict(line.split() for line in _read(stat_file).splitlines())
        cache = int(stats.get(cache_key, 0)) - int(stats.get(mapped_key, 0))
        limit = max(usage - max(cache, 0), 0) + room_bytes
        try:
            safeio.write_setting(limit_file, str(limit))
        except OSError:
            return None, cache
        return limit, cache

    def memory_use(self):
        """What the cell's processes held, read before the cgroup goes: {peak_bytes, oom_kills, page_cache_bytes}
        (those the kernel offers), or {} without a limit."""
        out = {}
        try:
            if self.memory_v1_path:
                d = self.memory_v1_path
                out["peak_bytes"] = int(_read(os.path.join(d, "memory.max_usage_in_bytes")))
                out["limit_hits"] = int(_read(os.path.join(d, "memory.failcnt")))
                oom = dict(line.split() for line in _read(os.path.join(d, "memory.oom_control")).splitlines())
                if "oom_kill" in oom:
                    out["oom_kills"] = int(oom["oom_kill"])
                stats = dict(line.split() for line in _read(os.path.join(d, "memory.stat")).splitlines())
                out["page_cache_bytes"] = int(stats.get("total_cache", stats.get("cache", 0)))
            elif os.path.exists(os.path.join(self.path, "memory.max")):
                if os.path.exists(os.path.join(self.path, "memory.peak")):
                    out["peak_bytes"] = int(_read(os.path.join(self.path, "memory.peak")))
                events = dict(line.split() for line in _read(os.path.join(self.path, "memory.events")).splitlines())
                out["limit_hits"] = int(events.get("max", 0)) + int(events.get("high", 0))
                out["oom_kills"] = int(events.get("oom_kill", 0))
                stats = dict(line.split() for line in _read(os.path.join(self.path, "memory.stat")).splitlines())
                out["page_cache_bytes"] = int(stats.get("file", 0))
        except (OSError, ValueError, safeio.InputError) as e:
            out["problem"] = f"reading the memory cgroup: {e}"
        return out

    @classmethod
    def create(cls, name, mount=None):
        """A new, empty cgroup named `name` (a leftover of a killed runner is emptied and replaced)."""
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}", name):
            raise CgroupError(f"cgroup name {name[:80]!r}: not a safe name")
        path = os.path.join(parent_folder(mount), name)
        if os.path.isdir(path):
            cls(path).remove()
        try:
            os.mkdir(path)
        except OSError as e:
            raise CgroupError(f"cannot create {path} ({e.strerror})") from None
        return cls(path)

    def pids(self):
        """{pid} of the processes in the cgroup now (empty once removed)."""
        try:
            text = safeio.read_text(self.procs_path, 1 << 20)
        except (OSError, safeio.InputError):
            return set()
        return {int(p) for p in text.split() if p.isdigit()}

    def kill(self, timeout_s=KILL_TIMEOUT_S):
        """SIGKILL to every process in the cgroup (cgroup.kill where the kernel has it), then waits until it
        is empty; the pids it found there (those that outlived their group's stop). CgroupError if some
        survive `timeout_s`."""
        found = self.pids()
        if not found:
            return found
        kill_file = os.path.join(self.path, "cgroup.kill")
        deadline = time.monotonic() + timeout_s
        while self.pids():
            if os.path.exists(kill_file):
                safeio.write_setting(kill_file, "1")
            else:
                for pid in self.pids():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            if time.monotonic() > deadline:
                raise CgroupError(f"{self.path}: processes {sorted(self.pids())[:5]} survive SIGKILL")
            time.sleep(0.05)
        return found

    def remove(self):
        """Kills what is left and removes the cgroup (and its v1 memory cgroup); the pids that were left."""
        left = self.kill()
        if self.memory_v1_path:
            memory, self.memory_v1_path = CellCgroup(self.memory_v1_path), None
            left |= memory.remove()
        deadline = time.monotonic() + KILL_TIMEOUT_S
        while True:
            try:
                os.rmdir(self.path)
                return left
            except FileNotFoundError:
                return left
            except OSError as e:  # EBUSY while the kernel finishes reaping
                if time.monotonic() > deadline:
                    raise CgroupError(f"cannot remove {self.path} ({e.strerror})") from None
                time.sleep(0.05)


class CacheRoom:
    """A thread that keeps a cell's limit at its processes' own memory plus `room_bytes` of page cache (every
    INTERVAL_S), from start() to stop(); stop() returns its evidence. On v2 the limit is memory.high
    (CellCgroup.follow_softly): what the processes allocate between two steps is taken from the page cache, and
    past that they are throttled until the next step, never killed. On v1 it is the hard limit: there the
    kernel kills when the processes alone outgrow it between two steps."""
    INTERVAL_S = 0.05

    def __init__(self, cgroup, room_bytes):
        self.cgroup, self.room = cgroup, room_bytes
        self.stopping = threading.Event()
        self.ev = {"room_bytes": room_bytes, "steps": 0, "refused": 0, "limit_min_bytes": None,
                   "limit_max_bytes": None, "page_cache_max_bytes": 0}
        self.thread = threading.Thread(target=self._run, name="tunelab-cache-room", daemon=True)

    def start(self):
        self.cgroup.follow_softly()
        self.thread.start()
        return self

    def _run(self):
        while not self.stopping.is_set():
            try:
                limit, cache = self.cgroup.hold_cache_room(self.room)
            except (OSError, ValueError, safeio.InputError) as e:
                self.ev["problem"] = f"reading the memory cgroup: {e}"
                return
            ev = self.ev
            ev["steps"] += 1
            ev["page_cache_max_bytes"] = max(ev["page_cache_max_bytes"], cache)
            if limit is None:
                ev["refused"] += 1
            else:
                ev["limit_min_bytes"] = limit if ev["limit_min_bytes"] is None else min(ev["limit_min_bytes"], limit)
                ev["limit_max_bytes"] = max(ev["limit_max_bytes"] or 0, limit)
            self.stopping.wait(self.INTERVAL_S)

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=5)
        return dict(self.ev)


def for_cell(run_id, cell_base):
    """(CellCgroup, None) for one (cell, repetition), or (None, why there is none)."""
    try:
        return CellCgroup.create(f"{run_id}-{cell_base}"), None
    except CgroupError as e:
        return None, str(e)


def join(procs_paths):
    """In a child before exec: moves the calling process into the cgroups (its pid written as 0)."""
    for path in procs_paths:
        safeio.write_setting(path, "0")
