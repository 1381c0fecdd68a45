"""Profiles of a cell (policy.profile, issue 60): async-profiler's agent attached to the JVM under test in one
extra, declared launch per cell and round, outside the timed launches, so the compared numbers never carry
its cost. The agent and the converter come pinned through the Maven lock (//tools/maven:async_profiler); the
JFR recording is kept compressed with the cell's result and turned into collapsed stacks per event
(jfr-converter), the input of analysis/profiles.py (movers, differential flame graphs).

What this module owns: the events a policy may ask for, the agent's library for the host's architecture (from
the agent jar, which carries one per platform), the JVM flag that attaches it, and the conversion."""

import os
import subprocess
import zipfile

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
# A sample every 10 ms of CPU (cpu, wall): ~100 a second a thread, enough for a share to within ~1 point over
# a few seconds of a busy thread; alloc and lock keep the agent's defaults (512 KiB, every contention).
INTERVAL = "10ms"


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


def check_cell(params, jdk):
    """ProfileError for a cell the profiler cannot profile, before anything runs: one that starts no JVM
    (jdk=none: a native server), or one whose JVM runs in a container (the agent's library and recording live
    on the host; not built)."""
    if jdk is None:
        raise ProfileError("policy.profile profiles the JVM under test; this cell runs none (jdk=none). A native "
                           "server's per-function profile (Callgrind) is not built yet: drop policy.profile here")
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


def agent_flag(library, events, jfr_path):
    """The JVM option that starts the agent at launch with `events`, recording to `jfr_path` (JFR format: every
    event in one file). cpu and wall together: wall rides on cpu as its own sampler."""
    events = check_events(events)
    options = ["start"]
    if "cpu" in events:
        options += ["event=cpu", f"interval={INTERVAL}"] + ([f"wall={INTERVAL}"] if "wall" in events else [])
    elif "wall" in events:
        options += ["event=wall", f"interval={INTERVAL}"]
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
