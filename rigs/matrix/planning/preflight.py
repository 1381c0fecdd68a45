"""Before a run measures anything: is the host busy (other processes using CPU, a high load average)?
Recorded in the manifest; --strict refuses a busy host."""

import os
import time

from rigs.matrix.planning import spec


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
