"""Reading a local-mode MapReduce job's log, MR1 (hadoop-core 1.2.1) and MR2 (3.4.2) alike.

The rig gives both engines the same log4j layout (ISO8601 timestamps to the millisecond, on stdout), so
one parser reads both:
  job counters   the last "Counters: N" block (MR2 also logs per-task blocks before it, "Final Counters for
                 attempt_..."): group lines, then "Name=Value" lines, MR1 behind a JobClient log prefix,
                 MR2 tab-indented without one
  phases         map: the first map attempt started -> the last map attempt finished; reduce: that -> the
                 last reduce attempt done; job: the first map attempt started -> the last reduce attempt
                 done. Not "Running job" -> "Job complete": the job client polls the job's state once a
                 second, which quantizes those lines to whole seconds (4.01 s vs 5.01 s, seen here).
  spills         "Finished spill N" lines of the map tasks
"""

import dataclasses
import datetime
import re

_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\w+) (\S+): (.*)$")
_COUNTERS = re.compile(r"Counters: (\d+)\s*$")
_COUNTER = re.compile(r"^\s*(.+?)=(-?\d+)\s*$")


class JobLogError(ValueError):
    pass


@dataclasses.dataclass
class JobLog:
    counters: dict  # {group: {name: int}}
    job_s: float
    map_s: float
    reduce_s: float
    map_spills: int

    def counter(self, name):
        """A counter by name in whichever group holds it (the engines group them differently)."""
        for group in self.counters.values():
            if name in group:
                return group[name]
        raise KeyError(name)


def _time(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")


def parse(text):
    """A JobLog from the job's log; raises JobLogError when the job did not complete or a part is missing."""
    lines = text.splitlines()
    events = []  # (time, logger, message)
    for line in lines:
        m = _STAMP.fullmatch(line)
        if m:
            events.append((_time(m.group(1)), m.group(3), m.group(4)))

    def first(pred):
        return next((t for t, _, msg in events if pred(msg)), None)

    def last(pred):
        return next((t for t, _, msg in reversed(events) if pred(msg)), None)

    start = first(lambda m: m.startswith("Running job"))
    done = last(lambda m: m.startswith("Job complete") or (m.startswith("Job ") and m.endswith("completed successfully")))
    if start is None or done is None:
        failed = last(lambda m: "failed" in m.lower() or "Job not successful" in m)
        raise JobLogError("the job did not complete" + (" (it logged a failure)" if failed else ""))
    map_start = first(lambda m: m.startswith("Starting task: attempt_") and "_m_" in m)
    map_end = last(lambda m: m.startswith("Finishing task: attempt_") and "_m_" in m)
    reduce_end = last(lambda m: m.startswith("Task 'attempt_") and "_r_" in m and m.endswith("done."))
    if None in (map_start, map_end, reduce_end):
        raise JobLogError("the log lacks the map or reduce task lines (is the rig's log4j.properties in use?)")
    spills = sum(1 for _, logger, msg in events if logger.endswith("MapTask") and msg.startswith("Finished spill"))
    return JobLog(counters=_job_counters(lines), job_s=(reduce_end - map_start).total_seconds(),
                  map_s=(map_end - map_start).total_seconds(), reduce_s=(reduce_end - map_end).total_seconds(),
                  map_spills=spills)


def _job_counters(lines):
    heads = [i for i, line in enumerate(lines) if _COUNTERS.search(line) and "Final Counters for" not in line]
    if not heads:
        raise JobLogError("no job counters in the log")
    counters, group = {}, None
    for line in lines[heads[-1] + 1:]:
        m = _STAMP.fullmatch(line)
        if m:
            if not m.group(3).endswith("JobClient"):
                break  # MR1: the block ends with the next line of another logger
            text = m.group(4)
        elif line.startswith(("\t", " ")):
            text = line
        else:
            break
        c = _COUNTER.fullmatch(text)
        if c and group is not None:
            counters[group][c.group(1).strip()] = int(c.group(2))
        elif text.strip() and "=" not in text:
            group = text.strip()
            counters[group] = {}
        else:
            break
    if not counters:
        raise JobLogError("the job counters block is empty")
    return counters
