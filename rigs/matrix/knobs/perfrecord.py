"""A native server's profile (policy.profile = cpu on a cell whose process under test is not a JVM, issue 60):
Linux `perf record` of its on-CPU stacks (the cpu-clock software event: no PMU needed, which this VM lacks),
attached to the running server for the measured phase of the cell's extra, profiled launch, and turned into
the same collapsed stacks async-profiler's converter writes, so analysis/profiling/profiles.py compares both alike.

Why attached (`perf record -p PID`) and not wrapping the server: a wrapper forks, so the process the runner
started and probes would be perf, not the server; attached, the launch is the timed launch's, plus one
background process stopped (SIGTERM: perf writes its file and exits) when the measured phase ends.

Why a parser of our own: `perf script`'s text is one header line a sample, then a frame a line; what turns it
into collapsed stacks elsewhere is Perl (FlameGraph) or a Rust binary (inferno), neither reachable as a
library here. It is small and its known answers are real `perf script` output (testdata)."""

import os
import re
import shutil
import subprocess

from results import safeio

EVENTS = ("cpu",)  # what perf samples here: on-CPU stacks (wall, alloc and lock are a JVM agent's)
# Frames are unwound from a copy of the sampled thread's stack (DWARF): a server built with -O2 keeps no frame
# pointers, and with -g (frame pointers) its stacks stop one or two frames above the leaf.
STACK_COPY_BYTES = 16384
MAX_SCRIPT_BYTES = 256 << 20
SAMPLE_HEADER = re.compile(r"\S.*")  # a sample's first line (perf script -F comm,tid,period): not indented
FRAME = re.compile(r"\s+[0-9a-f]+ (?P<symbol>.+?) \((?P<object>[^()]*)\)")
KERNEL_OBJECTS = ("[kernel.kallsyms]", "[vdso]")


class PerfError(ValueError):
    pass


def binary():
    """The host's perf, or None."""
    return shutil.which("perf")


def problem(perf, timeout_s=30):
    """Why the perf at `perf` (binary()) cannot sample a process here ("" when it can): it is missing, or the
    kernel refuses the cpu-clock event (perf_event_paranoid, a container without the syscall). Probed by
    counting `true`."""
    if not perf:
        return "perf is not installed on this host (Debian: linux-perf; ./bazelw installs it)"
    try:
        done = subprocess.run([perf, "stat", "-x,", "-e", "cpu-clock", "--", "true"], capture_output=True,
                              text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"perf: {e}"
    # "cpu-clock:u" where the kernel lets this user count only user space (perf_event_paranoid 2, not root).
    counted = [line for line in done.stderr.splitlines() if line.split(",")[2:3] in (["cpu-clock"], ["cpu-clock:u"])]
    if done.returncode != 0 or not counted or counted[0].startswith(("<not", ",")):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"perf cannot count cpu-clock here (perf_event_paranoid {paranoid()}): {tail[:200]}"
    return ""


def paranoid():
    try:
        return safeio.read_text("/proc/sys/kernel/perf_event_paranoid", 64).strip()
    except (safeio.InputError, OSError):
        return "unknown"


def check_events(events):
    """PerfError for an event perf does not give a native process here."""
    other = [e for e in events if e not in EVENTS]
    if other:
        raise PerfError(f"policy.profile {', '.join(other)}: a native server is profiled by perf record, which "
                        f"samples on-CPU stacks only (policy.profile=cpu); {', '.join(other)} are the JVM agent's")


def record_argv(perf, data_path, interval_us, pid):
    """`perf record` of `pid`'s on-CPU stacks (every thread) every `interval_us` of CPU, into data_path."""
    return [perf, "record", "--quiet", "-e", "cpu-clock", "-c", str(int(interval_us) * 1000),
            "--call-graph", f"dwarf,{STACK_COPY_BYTES}", "-o", data_path, "-p", str(pid)]


def collapse(script_text):
    """Collapsed stacks ({stack (frames, root first): samples}) of `perf script -F comm,tid,period,ip,sym,dso`
    output. A symbol perf could not name is its object's name in brackets; kernel frames carry "_[k]" (as the
    agent marks them: the flame graph colours them as the kernel's). A sample with no frame is left out."""
    stacks, frames = {}, []

    def flush():
        if frames:
            stack = tuple(reversed(frames))
            stacks[stack] = stacks.get(stack, 0) + 1
        frames.clear()

    for line in script_text.splitlines():
        if not line.strip():
            flush()
            continue
        frame = FRAME.fullmatch(line)
        if frame:
            symbol, where = frame["symbol"], frame["object"]
            if symbol == "[unknown]":
                symbol = f"[{os.path.basename(where) or 'unknown'}]"
            # ';' separates frames in a collapsed line: a symbol holding one (a C++ template's argument list,
            # an operator) would split into frames that do not exist.
            symbol = symbol.replace(";", ":")
            frames.append(symbol + "_[k]" if where in KERNEL_OBJECTS else symbol)
        elif SAMPLE_HEADER.fullmatch(line):
            flush()
        else:
            raise PerfError(f"perf script: not a sample header or a frame: {line[:120]!r}")
    flush()
    return stacks


def collapsed_text(stacks):
    return "".join(f"{';'.join(s)} {n}\n" for s, n in sorted(stacks.items(), key=lambda kv: -kv[1]))


def convert(perf, data_path, out_path, timeout_s=600):
    """The recording's stacks as collapsed lines, written to out_path, and its samples as `perf script` text
    beside it (out_path + ".script"; what is kept of the recording: perf.data holds 16 KiB of stack a sample and
    needs the binaries to be read, the text is symbolized and compresses ~10x). Returns (out_path, the text's
    path); PerfError with perf's words when it cannot read the recording (a truncated file)."""
    script_path = out_path + ".script"
    argv = [perf, "script", "-i", data_path, "-F", "comm,tid,period,ip,sym,dso"]
    try:
        with safeio.open_log(script_path, binary=True) as out:  # read back through the bounded reader
            done = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PerfError(f"perf script: {e}") from None
    if done.returncode != 0:
        tail = (done.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise PerfError(f"perf script could not read {os.path.basename(data_path)}: {tail[:200]}")
    try:
        text = safeio.read_text(script_path, MAX_SCRIPT_BYTES)
    except (safeio.InputError, OSError) as e:
        raise PerfError(f"perf script: {e}") from None
    stacks = collapse(text)
    if not stacks:
        raise PerfError(f"{os.path.basename(data_path)} holds no sample of the server (was it on a CPU?)")
    safeio.write_text(out_path, collapsed_text(stacks))
    return out_path, script_path
