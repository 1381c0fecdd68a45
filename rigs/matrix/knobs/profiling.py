"""Profiles of a cell (policy.profile, issue 60): async-profiler's agent attached to the JVM under test in one
extra, declared launch per cell and round, outside the timed launches, so the compared numbers never carry
its cost. The agent and the converter come pinned through the Maven lock (//tools/maven:async_profiler); the
JFR recording is kept compressed with the cell's result and turned into collapsed stacks per event
(jfr-converter), the input of analysis/profiling/profiles.py (movers, differential flame graphs).

What this module owns: the events a policy may ask for, the agent's library for the host's architecture (from
the agent jar, which carries one per platform), the JVM flag that attaches it, and the conversion."""

import os
import re
import subprocess
import zipfile

from rigs.matrix.knobs import perfrecord
from results import safeio, store

# The events a policy may ask for, and the agent's option each turns into. `cpu` samples on-CPU stacks
# (perf_events where the kernel allows it, else itimer: this VM has no PMU and cpu works there), `wall` every
# thread's stack by wall clock, `alloc` allocation sites (TLAB-driven), `lock` contended monitors.
EVENTS = store.PROFILE_EVENTS
# The converter's option for each event's collapsed stacks.
CONVERTER_OPTIONS = {"cpu": "--cpu", "wall": "--wall", "alloc": "--alloc", "lock": "--lock"}
# Where the agent jar keeps each architecture's library (platform.machine()'s names on the left).
AGENT_LIBRARY_IN_JAR = {"x86_64": "linux-x64/libasyncProfiler.so", "aarch64": "linux-arm64/libasyncProfiler.so"}
MAX_AGENT_BYTES = 16 << 20
# cpu and wall: a sample every ~10 ms of CPU (~100 a second a thread: a share to within ~2 points a launch of
# a few seconds of a busy thread, binomial); alloc and lock keep the agent's defaults (512 KiB, every contention).
# The sampling interval of a profiled launch, microseconds, by round: 10 ms give or take 10 %, a different one
# each round (the same for every cell of a round). A fixed interval samples a periodic program in lockstep:
# measured 2026-11-28 on the calibration loop (a ~1.25 ms batch then its spin, 20 % injected), one 3-s launch
# per interval, the spin read 22.5, 20.5, 20.6, 19.4, 23.6, 31.3, 17.4, 16.8, 18.1 % of samples at 8.0, 8.5,
# ... 12.0 ms (at 2 ms: 31 %), a bias a fixed interval repeats in every round. Varied by round, the phase
# differs between rounds: the bias becomes spread between runs, which the movers' interval over runs holds.
# The values are primes (no round number of microseconds a program's own period is likely to share).
INTERVALS_US = (9973, 10711, 9349, 10369, 9661, 10987, 9043, 10531, 9811, 10177)


def interval_us(repetition):
    """The profiled launch's sampling interval for round `repetition` (INTERVALS_US, in turn)."""
    return INTERVALS_US[repetition % len(INTERVALS_US)]


class ProfileError(ValueError):
    pass


def check_events(events, where="policy.profile"):
    """The events as a tuple in EVENTS' order; ProfileError naming an unknown one."""
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise ProfileError(f"{where}: unknown profile event {unknown[0]!r}; events: {', '.join(EVENTS)}")
    return tuple(e for e in EVENTS if e in events)


def host_problem(architecture):
    """Why this host cannot load the agent ("" when it can)."""
    if architecture not in AGENT_LIBRARY_IN_JAR:
        return (f"async-profiler's agent is built for {', '.join(sorted(AGENT_LIBRARY_IN_JAR))}; this host is "
                f"{architecture or 'of an unknown architecture'}")
    return ""


def tools(items, architecture):
    """{agent_jar, converter_jar} from the runner's --profiler-jar agent=PATH converter=PATH (rig_matrix passes
    the locked jars); ProfileError when one is missing or this host cannot load the agent."""
    found = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or name not in ("agent", "converter"):
            raise ProfileError(f"--profiler-jar {item!r}: expected agent=PATH or converter=PATH")
        found[f"{name}_jar"] = os.path.abspath(path)
    missing = [n for n in ("agent_jar", "converter_jar") if not os.path.isfile(found.get(n, ""))]
    if missing:
        raise ProfileError(f"this target's runfiles hold no {' and no '.join(m[:-4] for m in missing)} jar of "
                           "async-profiler (rig_matrix passes //tools/maven:async_profiler's with --profiler-jar)")
    problem = host_problem(architecture)
    if problem:
        raise ProfileError(problem)
    return found


def check_cell(params, jdk, events):
    """ProfileError for a cell the profilers cannot profile, before anything runs: a native server (jdk=none,
    sampled by perf record: rigs/matrix/knobs/perfrecord.py) asked for an event other than cpu, or a JVM run in a
    container (the agent's library and recording live on the host; not built)."""
    if jdk is None:
        try:
            perfrecord.check_events(events)
        except perfrecord.PerfError as e:
            raise ProfileError(f"this cell runs no JVM (jdk=none): {e}") from None
        return
    executor = params.get("executor", "process")
    if executor != "process":
        raise ProfileError(f"policy.profile profiles a JVM run as a process; this cell runs it with "
                           f"executor={executor}: profile the executor=process cells")


def extract_agent(agent_jar, architecture, folder):
    """The agent's library for `architecture`, unpacked from the agent jar into `folder` (once a run)."""
    problem = host_problem(architecture)
    if problem:
        raise ProfileError(problem)
    path = os.path.join(folder, "libasyncProfiler.so")
    if os.path.exists(path):
        return path
    member = AGENT_LIBRARY_IN_JAR[architecture]
    try:
        with zipfile.ZipFile(agent_jar) as jar:
            info = jar.getinfo(member)
            if info.file_size > MAX_AGENT_BYTES:
                raise ProfileError(f"{agent_jar}: {member} is {info.file_size:,} bytes, more than an agent is")
            data = jar.read(member)
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise ProfileError(f"{agent_jar}: no agent for {architecture} ({e})") from None
    safeio.check_folder(folder, create=True)
    safeio.write_bytes(path, data, mode=0o644)
    return path


def agent_flag(library, events, jfr_path, sampling_us=INTERVALS_US[0]):
    """The JVM option that starts the agent at launch with `events`, recording to `jfr_path` (JFR format: every
    event in one file), sampling every `sampling_us` microseconds (interval_us). cpu and wall together: wall
    rides on cpu as its own sampler."""
    events = check_events(events)
    options = ["start"]
    interval = f"{int(sampling_us)}us"
    if "cpu" in events:
        options += ["event=cpu", f"interval={interval}"] + ([f"wall={interval}"] if "wall" in events else [])
    elif "wall" in events:
        options += ["event=wall", f"interval={interval}"]
    if "alloc" in events:
        options.append("alloc")
    if "lock" in events:
        options.append("lock")
    options += [f"file={jfr_path}", "jfr"]
    return f"-agentpath:{library}=" + ",".join(options)


def convert(java, converter_jar, jfr_path, event, out_path, timeout_s=300):
    """The recording's stacks of one event as collapsed lines ("frame;frame;... count"), written to out_path
    by jfr-converter; ProfileError with the converter's words when it refuses the recording."""
    argv = [java, "-jar", converter_jar, "-o", "collapsed", "--norm", CONVERTER_OPTIONS[event], jfr_path, out_path]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ProfileError(f"jfr-converter: {e}") from None
    if done.returncode != 0 or not os.path.exists(out_path):
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ProfileError(f"jfr-converter could not read {os.path.basename(jfr_path)} ({event}): {tail[0][:200]}")
    return out_path


# The profiled launch's GC log (issue 60: for GC comparisons, the pauses beside the profile): every collection
# and the CPU of each pause, with the JVM's uptime. Unified logging: JDK 9 on, every pinned JDK.
GC_PAUSE = re.compile(r"\[(?P<t>[0-9.]+)s\]\[info\]\[gc\s*\] GC\((?P<n>\d+)\) Pause (?P<what>.+?) "
                      r"(?:\S+->\S+ )?(?P<ms>[0-9.]+)ms")
GC_CPU = re.compile(r"^\[[0-9.]+s\]\[info\]\[gc,cpu\s*\] GC\(\d+\) User=(?P<user>[0-9.]+)s Sys=(?P<sys>[0-9.]+)s")
GC_USING = re.compile(r"\[[0-9.]+s\]\[info\]\[gc\s*\] Using (?P<name>.+)")
MAX_GC_LOG_BYTES = 64 << 20


def gc_log_flag(path):
    """The JVM option that logs every collection and its pause CPU to `path`."""
    return f"-Xlog:gc,gc+cpu:file={path}:uptime,level,tags"


def gc_summary(text, process_cpu=None):
    """{collector, pauses, pause_ms_total, pause_ms_max, pause_cpu_s} of one GC log: the stop-the-world pauses
    (concurrent phases run beside the application and are not counted) and the CPU the JVM reports for them;
    with `process_cpu` ({cpu_s, wall_s} of the JVM, the runner's last sample before it exited) also their share
    of its wall time (pause_share) and of its CPU time (pause_cpu_share)."""
    collector, pauses, cpu = None, [], 0.0
    for line in text.splitlines():
        using = GC_USING.fullmatch(line)
        if using:
            collector = using["name"]
            continue
        pause = GC_PAUSE.fullmatch(line)
        if pause:
            pauses.append(float(pause["ms"]))
            continue
        spent = GC_CPU.match(line)
        if spent:
            cpu += float(spent["user"]) + float(spent["sys"])
    total = sum(pauses)
    summary = {"collector": collector, "pauses": len(pauses), "pause_ms_total": round(total, 3),
               "pause_ms_max": round(max(pauses, default=0.0), 3), "pause_cpu_s": round(cpu, 3)}
    if process_cpu and process_cpu.get("wall_s", 0) > 0:
        summary.update(process_wall_s=process_cpu["wall_s"], process_cpu_s=process_cpu["cpu_s"],
                       pause_share=round(total / 1000 / process_cpu["wall_s"], 5))
        if process_cpu["cpu_s"] > 0:
            summary["pause_cpu_share"] = round(cpu / process_cpu["cpu_s"], 5)
    return summary


def read_gc_summary(path, process_cpu=None):
    """gc_summary of the log at `path` through the bounded reader; ProfileError when it is missing or too big."""
    try:
        return gc_summary(safeio.read_text(path, MAX_GC_LOG_BYTES), process_cpu)
    except (safeio.InputError, OSError) as e:
        raise ProfileError(f"GC log: {e}") from None
