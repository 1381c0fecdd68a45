"""The knobs' values as a matrix writes them: JVM heap sizes (`512m`), JDK names (`17`, `jdk21`). Read by the
matrix schema (spec.py, which turns a ValueError into a SpecError), the knobs (hugepages.py), the evidence checks
(evidence.py) and the planner (plan.py). CPU lists (`0-3,8`) have one parser, rigs/host/cpuid.py's."""

import re


def parse_heap(text):
    """A JVM size (`512m`, `14g`) in bytes; ValueError when it is not one."""
    m = re.fullmatch(r"(\d+)([kmgKMG])", str(text))
    if not m:
        raise ValueError(f"heap {text!r} is not a JVM size like 512m or 14g")
    return int(m.group(1)) * {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def jdk_major(name):
    """The major version a jdk axis value names, if it says one (11, '17', 'jdk21'), else None."""
    m = re.fullmatch(r"(?:jdk)?(\d+)", str(name))
    return int(m.group(1)) if m else None
