"""The host reference: a short, fixed measurement of the host before and after every matrix.

This VM's speed drifts between days (the same cell read -22 % two days apart, nothing under test changed).
A result set that carries its host's reference lets a later comparison tell "the host got slower" from
"the system under test got slower": analysis/drift.py compares two sets' references against their own
noise. The probe is the calibration workload (rigs/calibration), always the same: one thread of the CPU
loop, then one thread of 64 MiB memory copies, on the pinned JDK 17 with its default collector, no knobs.
About 10 s each time.
"""

import os
import statistics
import subprocess
from results import safeio

PROBE = "calibration cpu 1 thread 3 s + memory 1 thread 3 s, JDK 17, after 1 s warm-up each"
MAIN_CLASS = "tunelab.rigs.calibration.Calibration"
STEPS = (("cpu", "cpu_loop_rate", "ops/s", 3), ("memory", "memory_copy_rate", "MiB/s", 3))
WARMUP_S = 1
TIMEOUT_S = 60
# An emulated host (QEMU's TCG) runs a memory copy pass slower than a window of 3 s: its windows are this
# many times longer (and the probe's description says so). Its numbers measure QEMU, for normalizing only.
EMULATED_WINDOW_SCALE = 5


def window_scale(report):
    """The probe's window scale on the host the doctor's `report` describes: EMULATED_WINDOW_SCALE emulated."""
    return EMULATED_WINDOW_SCALE if report.get("cpu", {}).get("emulated") else 1


def probe_text(window_scale=1):
    return PROBE if window_scale == 1 else f"{PROBE}; windows x{window_scale} (emulated host)"


class ProbeError(RuntimeError):
    pass


def parse_rates(stdout_text, metric):
    """Measured-phase values of `metric` from the calibration program's JSON lines."""
    values = []
    for line in stdout_text.splitlines():
        if line.startswith("{"):
            rec = safeio.parse_json(line)
            if rec.get("metric") == metric and rec.get("phase") == "measure":
                values.append(float(rec["value"]))
    return values


def measure(java, jar, when, runner=subprocess.run, window_scale=1):
    """[{when, metric, unit, median, samples}] for every probe step; raises ProbeError if one fails.
    window_scale: longer warm-up and measured windows (EMULATED_WINDOW_SCALE on an emulated host)."""
    out = []
    for mode, metric, unit, seconds in STEPS:
        argv = [java, "-XX:-UsePerfData", "-Xmx256m", "-cp", jar, MAIN_CLASS, "--mode", mode, "--threads", "1",
                "--warmup-s", str(WARMUP_S * window_scale), "--measure-s", str(seconds * window_scale)]
        try:
            proc = runner(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=TIMEOUT_S * window_scale)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ProbeError(f"host reference probe ({mode}) did not run: {e}") from None
        values = parse_rates(proc.stdout, metric) if proc.returncode == 0 else []
        if not values or min(values) <= 0:
            raise ProbeError(f"host reference probe ({mode}) exited {proc.returncode} with no rate: "
                             f"{(proc.stderr.strip().splitlines() or ['(no stderr)'])[-1][:200]}")
        out.append({"when": when, "metric": metric, "unit": unit, "median": statistics.median(values),
                    "samples": values})
    return out


def find_probe(runfiles_ws, pinned_jdks):
    """(java, jar) of the probe inside this target's runfiles, or None when either is missing.
    pinned_jdks: NAME=PATH items (rigs/host/jdks.pinned_in_runfiles)."""
    jar = os.path.join(runfiles_ws, "rigs", "calibration", "calibration_deploy.jar")
    java = next((item.split("=", 1)[1] for item in pinned_jdks if item.startswith("jdk17=")), None)
    if java and os.path.exists(java) and os.path.exists(jar):
        return java, jar
    return None
