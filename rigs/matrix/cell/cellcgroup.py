"""A cell's processes in a cgroup v2 of their own, so that nothing a rig starts outlives its cell (issue 58,
row 13: a `setsid` grandchild left the process group the runner killed, and ran on into the next cell).

Each process of a cell joins <cgroup2 mount>/tunelab/<run>-<cell>.r<rep> before it execs (processes.py), so
its children and their children are there too, whatever session or group they make. Stopping the cell ends
with the cgroup's own kill (cgroup.kill, Linux 5.14; else SIGKILL to each member until it is empty) and
removes it. The parent folder is root's, created by the runner: only root runs a matrix that can use it.
The thread pinner acts only on a JVM that is a member (threadpinning.py).

Where there is no cgroup v2 mount this runner may write (not root, a container without delegation, a chroot
without /sys), a cell runs as before, in its process groups, and its evidence says why: {"unavailable": why}.
"""

import os
import re
import signal
import stat
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
    path = os.path.join(mount, PARENT_NAME)
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


class CellCgroup:
    """One cell's cgroup: created empty, joined by each process before exec, killed and removed at the end."""

    def __init__(self, path):
        self.path = path
        self.procs_path = os.path.join(path, "cgroup.procs")

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
        """Kills what is left and removes the cgroup; the pids that were left."""
        left = self.kill()
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


def for_cell(run_id, cell_base):
    """(CellCgroup, None) for one (cell, repetition), or (None, why there is none)."""
    try:
        return CellCgroup.create(f"{run_id}-{cell_base}"), None
    except CgroupError as e:
        return None, str(e)


def join(procs_path):
    """In a child before exec: moves the calling process into the cgroup (its pid written as 0)."""
    safeio.write_setting(procs_path, "0")
