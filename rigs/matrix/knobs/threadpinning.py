"""Pinning a JVM's threads by their Java names to CPUs as they appear (`ThreadPinner`), and re-checking that they
stay pinned; `wait_for`, the poll it and the runner's tests share."""

import os
import re
import subprocess
import time

from rigs.host.cpuid import cpu_set
from rigs.matrix.contract import evidence


class ThreadPinner:
    """Pins Java threads by name to CPUs as they appear, and re-checks that they stay pinned.

    Names come from the JVM (`jcmd PID Thread.print`, whose nid= is the Linux tid), because the kernel
    keeps only 15 characters of a thread name.
    """

    def __init__(self, jcmd, pid, rules, proc="/proc", run=subprocess.run, cell_pids=None):
        self.cell_pids = cell_pids  # () -> {pid} of the cell's cgroup, None where the cell has none
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
            if not self.is_task(tid):
                self.errors.append(f"thread {name[:80]!r}: tid {tid} is not a thread of JVM pid {self.pid} (in "
                                   f"{self.proc}/{self.pid}/task{', nor in the cell' if self.cell_pids else ''}): "
                                   "not touched")
                continue
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
                    # Read back now: a thread that ends before the evidence is taken (a pool's worker at the
                    # end of the run) keeps what the kernel showed while it lived, not "vanished" (issue 80).
                    seen = self.read_cpus_allowed(tid)
                    entry = {"pattern": pattern, "name": name, "tid": tid, "wanted": cpu_text}
                    if seen is not None:
                        entry["last_seen"] = seen
                    elif known and "last_seen" in self.pinned[tid]:
                        entry["last_seen"] = self.pinned[tid]["last_seen"]
                    self.pinned[tid] = entry
                    break
        return True

    def is_task(self, tid):
        """True when `tid` is a thread of the JVM (/proc/<pid>/task/<tid>) and, where the cell's processes are
        known (its cgroup), the JVM is one of them: nothing else is ever given an affinity."""
        if isinstance(tid, bool) or not isinstance(tid, int) or tid <= 0:
            return False
        if self.cell_pids is not None and self.pid not in self.cell_pids():
            return False
        return os.path.isdir(os.path.join(self.proc, str(self.pid), "task", str(tid)))

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

    def read_cpus_allowed(self, tid):
        """The thread's Cpus_allowed_list as the kernel shows it now, or None when it is gone."""
        try:
            with open(os.path.join(self.proc, str(self.pid), "task", str(tid), "status")) as f:
                return evidence.parse_status(f.read()).get("Cpus_allowed_list")
        except OSError:
            return None

    def cpus_allowed(self, tid):
        value = self.read_cpus_allowed(tid)
        return cpu_set(value) if value is not None else None

    def evidence(self):
        """Each pinned thread with its Cpus_allowed_list read now from the kernel; a thread that has ended since
        the pinner last read it back keeps that reading, marked `ended` (what it ran on while it lived)."""
        out = []
        for tid, info in sorted(self.pinned.items()):
            actual = self.read_cpus_allowed(tid)
            entry = {k: v for k, v in info.items() if k != "last_seen"}
            if actual is None and info.get("last_seen") is not None:
                entry.update(cpus_allowed=info["last_seen"], ended=True)
            else:
                entry["cpus_allowed"] = actual
            out.append(entry)
        return out


def wait_for(predicate, timeout_s, interval_s=0.2):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()
