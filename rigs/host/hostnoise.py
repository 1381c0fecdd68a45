"""What else the host did during a cell's measurement window, recorded per run instead of guessed: the CPU
time the hypervisor stole (/proc/stat `steal`), the load average at the window's start and end (/proc/loadavg)
and the harness's own CPU time (the runner polls, pins threads and reads evidence while the load runs).

The window runs from the end of the policy's warm-up to the end of the measured phase. Steal is a share of
all CPUs' time; a round whose steal or host reference falls outside the band of the rig's A/A set is named
by //tools:sensitivity's figures (analysis/README.md: Sensitivity). Nothing here changes a measurement."""

import dataclasses
import os
import time


@dataclasses.dataclass(frozen=True)
class Snapshot:
    monotonic_s: float
    cpu_ticks: int  # all CPUs, every state; None where /proc/stat is unreadable
    steal_ticks: int
    load1: float  # None where /proc/loadavg is unreadable
    harness_cpu_s: float  # this process' own CPU time (not its children's: the processes under test)


def snapshot(proc="/proc"):
    cpu = steal = load = None
    try:
        with open(os.path.join(proc, "stat")) as f:
            fields = f.readline().split()
        if fields and fields[0] == "cpu":
            ticks = [int(x) for x in fields[1:]]
            # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is already in user.
            cpu, steal = sum(ticks[:8]), (ticks[7] if len(ticks) > 7 else 0)
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(proc, "loadavg")) as f:
            load = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return Snapshot(time.monotonic(), cpu, steal, load, time.process_time())


def window(start, end, clock_ticks=None):
    """The noise of the window between two snapshots, for a result's provenance (`noise`)."""
    hz = clock_ticks or os.sysconf("SC_CLK_TCK")
    seconds = max(0.0, end.monotonic_s - start.monotonic_s)
    out = {"window_s": round(seconds, 3), "steal_fraction": None, "steal_s": None,
           "load_average": [start.load1, end.load1],
           "harness_cpu_s": round(max(0.0, end.harness_cpu_s - start.harness_cpu_s), 4)}
    if start.cpu_ticks is not None and end.cpu_ticks is not None and end.cpu_ticks > start.cpu_ticks:
        stolen = max(0, end.steal_ticks - start.steal_ticks)
        out["steal_fraction"] = round(stolen / (end.cpu_ticks - start.cpu_ticks), 5)
        out["steal_s"] = round(stolen / hz, 3)
    return out


# /proc/stat's cpu line, in its order (proc(5)); guest time is already inside user.
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
PROC_READ_BYTES = 64 << 10  # /proc/stat of a very large host stays far below


def _read_proc(proc, name):
    with open(os.path.join(proc, name), errors="replace") as f:
        return f.read(PROC_READ_BYTES)


def host_values(proc="/proc"):
    """The host now, for monitors and a watched run (issue 63): {"cpu_seconds": {mode: s} of all CPUs,
    "load1": x, "memory_available_bytes": n}; a part /proc does not give is left out."""
    out = {}
    try:
        first = _read_proc(proc, "stat").split("\n", 1)[0].split()
        if first and first[0] == "cpu":
            hz = os.sysconf("SC_CLK_TCK")  # USER_HZ, /proc/stat's unit
            out["cpu_seconds"] = {m: int(v) / hz for m, v in zip(CPU_MODES, first[1:])}
    except (OSError, ValueError):
        pass
    try:
        out["load1"] = float(_read_proc(proc, "loadavg").split()[0])
    except (OSError, ValueError, IndexError):
        pass
    try:
        for line in _read_proc(proc, "meminfo").splitlines():
            if line.startswith("MemAvailable:"):
                out["memory_available_bytes"] = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out
