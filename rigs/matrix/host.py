"""The host side of a run: one matrix per host (a lock), a busy-host preflight, the harness' own commit."""

import fcntl
import json
import os
import subprocess
import time

from rigs.matrix import hoststate, spec


class HostLock:
    """One matrix per host: an flock on a lock file (released by the kernel if the holder dies), in the
    host state folder (hoststate.py), so that no other user can take or block it."""

    def __init__(self, path):
        self.path = path
        self.fd = None

    def acquire(self, holder):
        hoststate.ensure_state_dir(os.path.dirname(self.path))
        fd = hoststate.open_lock_file(self.path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with os.fdopen(fd, errors="replace") as f:
                info = f.read(2000).strip() or "unknown holder"
            raise LockHeld(info) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(holder).encode())
        os.fsync(fd)
        self.fd = fd

    def release(self):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


class LockHeld(RuntimeError):
    pass


def busy_processes(proc="/proc", interval_s=0.5, threshold=0.2):
    """Processes that used more than `threshold` of a CPU over `interval_s` (other than this one)."""
    def snapshot():
        out = {}
        for pid in os.listdir(proc):
            if not pid.isdigit():
                continue
            try:
                with open(os.path.join(proc, pid, "stat")) as f:
                    fields = f.read().rsplit(")", 1)
                name = fields[0].split("(", 1)[1]
                parts = fields[1].split()
                out[int(pid)] = (name, int(parts[11]) + int(parts[12]))
            except (OSError, IndexError, ValueError):
                continue
        return out
    hz = os.sysconf("SC_CLK_TCK")
    a = snapshot()
    time.sleep(interval_s)
    b = snapshot()
    me = os.getpid()
    busy = []
    for pid, (name, ticks) in b.items():
        if pid == me or pid not in a:
            continue
        share = (ticks - a[pid][1]) / hz / interval_s
        if share > threshold:
            busy.append({"pid": pid, "name": name, "cpu_share": round(share, 2)})
    return sorted(busy, key=lambda p: -p["cpu_share"])


def preflight(report, strict):
    load1 = (report["host"].get("load_average") or [0.0])[0]
    cpus = report["cpu"].get("logical_cpus") or os.cpu_count()
    busy = busy_processes()
    result = {"load_average": report["host"].get("load_average"), "busy_processes": busy,
              "frequency_governor": report["cpu"].get("frequency_governor"),
              "frequency_governor_evidence": report["cpu"].get("frequency_governor_evidence")}
    problems = []
    if load1 > 0.5 * cpus:
        problems.append(f"load average {load1} is over half of {cpus} CPUs")
    if busy:
        problems.append("busy processes: " + ", ".join(f"{p['name']}[{p['pid']}] {p['cpu_share']:.0%}" for p in busy))
    result["warnings"] = problems
    if strict and problems:
        raise spec.SpecError("--strict: the host is busy: " + "; ".join(problems))
    return result


def harness_provenance(workspace):
    def git(*args):
        try:
            return subprocess.run(["git", "-C", workspace, *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    commit = git("rev-parse", "HEAD")
    if not commit:
        # A copy of the runfiles on another host (//tools:fleet) has no git: the tool that built and shipped
        # it says which commit it was, as `<sha>` or `<sha>-dirty`.
        shipped = os.environ.get("TUNELAB_HARNESS_COMMIT", "")
        return (shipped[:-len("-dirty")], True) if shipped.endswith("-dirty") else (shipped or "unknown", False)
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return commit, dirty
