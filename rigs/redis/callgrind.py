"""Callgrind's dumps as the Redis rig's measure=instructions reads them: each dump's count between a zero and
a dump, without the server's timer work, and its functions' self and inclusive instructions.

Callgrind's format with name compression: fn=(id) name / cfn=(id) name name a function (the name once, the
id after), a cost line is "<position> <cost>", and the line after a calls= line holds that call's inclusive
cost, which is the caller's inclusive cost, never its own."""

import os
import re
from typing import Any, Iterator

from results import safeio

# callgrind_control --dump=NAME writes "desc: Trigger: dump NAME" (Valgrind 3.19) and the dump's cost in its
# header's "summary:" line (its "totals:" at the end also counts costs carried in open calls).
DESC = re.compile(r"^desc: Trigger: dump (\w+)$", re.M)
SUMMARY = re.compile(r"^summary: (\d+)$", re.M)
# A count Callgrind writes is a 64-bit unsigned number: 20 digits at most. A longer one is not a dump's.
MAX_COUNT_DIGITS = 20
MAX_DUMP_BYTES = 256 << 20

# Functions whose calls are taken out of a dump's count, with all they call: serverCron is the server's timer
# work and runs by the clock (10 times a second; its memory statistics alone cost ~1.5 M instructions a call),
# so a run that took longer under Callgrind would count more. Measured 2026-11-27: with it, one build's GET
# count varied ~5 % between launches. (Callgrind's --toggle-collect=serverCron collected only inside it here,
# whatever --collect-atstart said, so the dump is read whole and the calls are subtracted.)
TIMER_FUNCTIONS = ("serverCron",)
# The functions a result keeps per dump (the largest by self and by inclusive cost): enough to name what moved,
# bounded in size.
FUNCTIONS_KEPT = 40
_NAMED = re.compile(r"^(c?fn)=\((\d+)\)(?: (.*))?$")


def cost_lines(text: str) -> Iterator[tuple[str, str, int, bool]]:
    """(function, callee, cost, is_call) per cost line of a dump: is_call for the line after a calls= line
    (the call's inclusive cost, callee the function called), else the function's own cost."""
    names: dict[str, str] = {}
    function, callee, after_calls = None, "", False
    for line in text.splitlines():
        named = _NAMED.fullmatch(line)
        if named:
            if named.group(3):
                names[named.group(2)] = named.group(3)
            name = names.get(named.group(2), named.group(2))
            if named.group(1) == "fn":
                function = name
            else:
                callee = name
            continue
        if line.startswith("calls="):
            after_calls = True
            continue
        if function is None or line[:1] not in "0123456789+-*":
            continue
        fields = line.split()
        number = fields[1] if len(fields) > 1 and fields[1].isascii() and fields[1].isdigit() else "0"
        if len(number) > MAX_COUNT_DIGITS:
            raise ValueError(f"a Callgrind cost of {len(number)} digits (a 64-bit count has at most {MAX_COUNT_DIGITS})")
        yield function, callee, int(number), after_calls
        after_calls = False


def cost(text: str) -> dict[str, int]:
    """A dump's "summary" (every instruction between the zero and the dump), "timer" (the inclusive cost of the
    calls to TIMER_FUNCTIONS in it) and "counted" (summary - timer)."""
    summary = SUMMARY.search(text)
    if not summary:
        raise ValueError("a Callgrind dump without its summary: line")
    if len(summary.group(1)) > MAX_COUNT_DIGITS:
        raise ValueError(f"a Callgrind summary of {len(summary.group(1))} digits (a 64-bit count has at most "
                         f"{MAX_COUNT_DIGITS})")
    timer = sum(c for _, callee, c, is_call in cost_lines(text) if is_call and callee in TIMER_FUNCTIONS)
    if timer > int(summary.group(1)):
        raise ValueError(f"a Callgrind dump whose timer calls ({timer}) cost more than its summary "
                         f"({summary.group(1)}): not one dump's counts")
    return {"summary": int(summary.group(1)), "timer": timer, "counted": int(summary.group(1)) - timer}


def functions(text: str, keep: int = FUNCTIONS_KEPT) -> dict[str, list[int]]:
    """{function: [self, inclusive]} instructions of a dump: the `keep` largest by self and by inclusive cost
    (largest inclusive first). Self: the cost lines of the function's own code (their sum over all functions is
    the dump's "totals:"). Inclusive: self plus the cost carried by each of its calls, as callgrind_annotate
    --inclusive=yes counts it (a recursive call counts again)."""
    costs: dict[str, list[int]] = {}
    for function, _, c, is_call in cost_lines(text):
        entry = costs.setdefault(function, [0, 0])
        entry[0] += 0 if is_call else c
        entry[1] += c
    by_self = sorted(costs, key=lambda name: (-costs[name][0], name))[:keep]
    by_inclusive = sorted(costs, key=lambda name: (-costs[name][1], name))[:keep]
    return {name: costs[name] for name in sorted(set(by_self) | set(by_inclusive), key=lambda n: (-costs[n][1], n))}


def dumps(workdir: str) -> dict[str, dict[str, Any]]:
    """{dump name: cost() and its "functions"} of the Callgrind dumps in `workdir` made by
    `callgrind_control --dump=NAME` (the server's own dump at its exit has no such trigger and is left out),
    each read through the bounded reader."""
    found: dict[str, dict[str, Any]] = {}
    for name in sorted(os.listdir(workdir)):
        if not name.startswith("callgrind.out."):
            continue
        text = safeio.read_bytes(os.path.join(workdir, name), MAX_DUMP_BYTES).decode(errors="replace")
        desc = DESC.search(text)
        if desc:
            if desc.group(1) in found:
                raise ValueError(f"two Callgrind dumps named {desc.group(1)!r} in {workdir}")
            found[desc.group(1)] = {**cost(text), "functions": functions(text)}
    return found
