"""The measurement policy of a matrix (`[policy]`, a profile's `policy`, `--set policy.<key>=<number>`, over the
workload's defaults): how long each cell warms up and measures, how many interleaved rounds it runs and when
they stop, what a cell may take before it is killed.

    [policy]
    warmup_s = 10          # before the measured window (samples kept apart as warm-up)
    measure_s = 30         # the measured window
    repetitions = 5        # a fixed count of interleaved rounds, or, with stop = "decided",
                           # { min = 3, max = 12 }: sequential rounds until each comparison is decided
    cooldown_s = 2         # between cells
    timeout_s = 600        # a cell still running then is killed and recorded as failed
    rerun_noisy_rounds = 2 # rounds added for rounds that lost CPU to steal (noisyrounds.py)
    warmup_iterations = 3  # timed units of work inside one launch (for cells that can: Rig.can_iterate),
    iterations = 8         # each on fresh state: warm-up ones kept apart, measured ones checked steady
    steady_band = 0.05     # not steady: halves' medians further apart than this, and a trend (steadystate.py)
    profile = ["cpu"]      # profiles to take (cpu, wall, alloc, lock), in one extra launch per cell and round,
                           # never in the timed ones (rigs/matrix/knobs/profiling.py); --set policy.profile=cpu,alloc

Levels (JMH's forks x iterations): a repetition is one launch of the cell's processes (a JVM fork) in its own
interleaved round; `iterations` are the timed units of work inside that launch. With iterations > 1 the
measured iterations must reach a steady state (rigs/matrix/cell/steadystate.py), or the repetition is invalid:
a warm-up that never ended is never averaged as if it had.

Each layer (workload, matrix, profile, --set) is merged over the one below (`merge`); `parse` checks the
result and returns a `Policy`, or raises PolicyError naming the key and the fix. spec.py, which reads the
matrix, turns a PolicyError into its SpecError.
"""

import dataclasses
import math
import typing

POLICY_KEYS = {"warmup_s": float, "measure_s": float, "repetitions": int, "cooldown_s": float, "timeout_s": float,
               "stop": str, "decide_on": list, "rerun_noisy_rounds": int, "warmup_iterations": int, "iterations": int,
               "steady_band": float, "profile": list, "budget_s": float}
# The fewest measured iterations the steady-state check can judge (steadystate.py: its trend test reaches
# p < 0.05 from 5 values on).
MIN_STEADY_ITERATIONS = 5
# stop = "decided": after each interleaved round from `min` on, every comparison the matrix asks about is
# classified (analysis/sequential.py) and a cell stops being scheduled once all of its comparisons are.
# stop = "gated" (the nightlies', issue 79): the same looks judged by the gate's own three-way rule; a comparison
# stops at its first PASS or REGRESSED, and rounds are added while it is INCONCLUSIVE up to max or budget_s.
STOP_RULES = ("fixed", "decided", "gated")
SEQUENTIAL_RULES = ("decided", "gated")
SEQUENTIAL_MIN_ROUNDS = 3
# Bounds a matrix file or --set cannot pass (issue 39: repetitions = 10**9 and a sequential max of 10**6 were
# accepted, and a gate replaying such a design allocates by max). A round takes seconds to minutes: 1,000 fixed
# rounds are days, 100 sequential looks are more than any stopping rule here needs (the nightlies use 8-20).
MAX_REPETITIONS = 1000
MAX_SEQUENTIAL_ROUNDS = 100
MAX_ITERATIONS = 1000
MAX_SECONDS = 7 * 24 * 3600  # any one duration of the policy: a week
# The profiles a policy may ask for (rigs/matrix/knobs/profiling.py takes them; the result schema's enum and
# results/store.py PROFILE_EVENTS name the same, spec_test checks it). Kept here so the policy, which mypy
# checks with the rig contract, imports nothing of the runner.
PROFILE_EVENTS = ("cpu", "wall", "alloc", "lock")


class PolicyError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Policy:
    warmup_s: float = 10.0
    measure_s: float = 30.0
    repetitions: int = 3  # with stop = "decided" or "gated": the most rounds (`max`)
    cooldown_s: float = 2.0
    timeout_s: float = 600.0
    stop: str = "fixed"  # or "decided"/"gated": sequential repetitions (analysis/sequential.py)
    min_repetitions: int = 0  # with a sequential stop: the first look (`min`)
    decide_on: tuple = ()  # metrics the sequential policy decides on; () = every metric of gate.toml
    # stop = "gated": no round is started that would end past this many seconds of measuring (0: no budget;
    # the nightly passes its rig's [nightly] budget_min)
    budget_s: float = 0.0
    # The most rounds added because a round lost more CPU to steal than the rig's A/A band (noisyrounds.py).
    rerun_noisy_rounds: int = 0
    # Timed units of work inside one launch (rigs that iterate): warm-up ones, then measured ones, checked steady.
    warmup_iterations: int = 0
    iterations: int = 1
    steady_band: float = 0.05
    # Profiles taken in one extra launch per cell and round, outside the timed launches (profiling.EVENTS).
    profile: tuple = ()

    @property
    def iterating(self) -> bool:
        """The policy asks the rig for timed iterations inside each launch."""
        return self.iterations > 1 or self.warmup_iterations > 0

    @property
    def sequential(self):
        return self.stop in SEQUENTIAL_RULES

    def describe(self):
        """The repetitions in words: "x5", "x5 (+ at most 2 for noisy rounds)" or "3..12 rounds, stop when
        decided"."""
        if self.stop == "gated":
            budget = f" or after {self.budget_s / 60:g} min" if self.budget_s else ""
            return f"{self.min_repetitions}..{self.repetitions} rounds, stop at the gate's PASS or REGRESSED{budget}"
        if self.sequential:
            return f"{self.min_repetitions}..{self.repetitions} rounds, stop when decided"
        if self.rerun_noisy_rounds:
            return f"x{self.repetitions} (+ at most {self.rerun_noisy_rounds} for noisy rounds)"
        return f"x{self.repetitions}"

    def describe_profile(self):
        """The profiling in words, "" for none: "+1 profiled launch a cell and round (cpu, alloc)"."""
        if not self.profile:
            return ""
        return f"+1 profiled launch a cell and round ({', '.join(self.profile)})"

    def describe_iterations(self):
        """The iterations in words, "" for a policy without them: "3 + 8 iterations a launch (steady within 5 %)"."""
        if not self.iterating:
            return ""
        warmup = f"{self.warmup_iterations} + " if self.warmup_iterations else ""
        return f"{warmup}{self.iterations} iterations a launch (steady within {self.steady_band:.0%})"


def parse(where, table):
    extra = set(table) - set(POLICY_KEYS)
    if extra:
        raise PolicyError(f"{where}: [policy] has unknown keys {sorted(extra)}; keys: {sorted(POLICY_KEYS)}")
    values = _parse_sequential(where, table)
    if "profile" in table:
        events = table["profile"]
        if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
            raise PolicyError(f"{where}: [policy] profile must be a list of events, e.g. [\"cpu\", \"alloc\"]; "
                              f"events: {', '.join(PROFILE_EVENTS)}")
        unknown = [e for e in events if e not in PROFILE_EVENTS]
        if unknown:
            raise PolicyError(f"{where}: [policy] profile: unknown profile event {unknown[0]!r}; events: "
                              f"{', '.join(PROFILE_EVENTS)}")
        values["profile"] = tuple(e for e in PROFILE_EVENTS if e in events)
    for key, kind in POLICY_KEYS.items():
        if key in table and key not in values and kind is not str and kind is not list:
            raw = table[key]
            # A bool is an int to Python and 1.5 a number to int(): both were taken silently as 1 (issue 58).
            if isinstance(raw, bool) or (kind is int and isinstance(raw, float) and not raw.is_integer()):
                raise PolicyError(f"{where}: [policy] {key} = {raw!r}: expected a whole number" if kind is int else
                                  f"{where}: [policy] {key} = {raw!r}: expected a number")
            try:
                values[key] = kind(table[key])
            except (TypeError, ValueError, OverflowError):
                raise PolicyError(f"{where}: [policy] {key} must be a number") from None
            if not math.isfinite(values[key]):
                raise PolicyError(f"{where}: [policy] {key} = {table[key]} is not a finite number")
            if values[key] < 0 or (key == "repetitions" and values[key] < 1):
                raise PolicyError(f"{where}: [policy] {key} = {table[key]} is out of range")
            bound = {"repetitions": MAX_REPETITIONS, "rerun_noisy_rounds": MAX_REPETITIONS,
                     "iterations": MAX_ITERATIONS, "warmup_iterations": MAX_ITERATIONS}.get(key, MAX_SECONDS)
            if key != "steady_band" and values[key] > bound:
                raise PolicyError(f"{where}: [policy] {key} = {table[key]} is above its bound, {bound:,}")
    policy = Policy(**values)
    if policy.measure_s <= 0:
        raise PolicyError(f"{where}: [policy] measure_s must be > 0")
    if policy.timeout_s and policy.warmup_s >= policy.timeout_s:
        raise PolicyError(f"{where}: [policy] warmup_s = {policy.warmup_s:g} is not shorter than timeout_s = "
                          f"{policy.timeout_s:g}: every cell would be killed while it warms up")
    if policy.iterations < 1:
        raise PolicyError(f"{where}: [policy] iterations = {policy.iterations}: at least 1 (the measured units of "
                          "work in one launch)")
    if 1 < policy.iterations < MIN_STEADY_ITERATIONS:
        raise PolicyError(f"{where}: [policy] iterations = {policy.iterations}: the steady-state check needs at least "
                          f"{MIN_STEADY_ITERATIONS} to see a trend; give 1 or at least {MIN_STEADY_ITERATIONS}")
    if not 0 < policy.steady_band < 1:
        raise PolicyError(f"{where}: [policy] steady_band = {policy.steady_band:g}: a fraction in (0, 1), e.g. 0.05")
    if policy.rerun_noisy_rounds and policy.sequential:
        raise PolicyError(f"{where}: [policy] rerun_noisy_rounds is for a fixed count: stop = \"decided\" already "
                        "runs rounds until its comparisons are decided")
    if policy.budget_s and policy.stop != "gated":
        raise PolicyError(f"{where}: [policy] budget_s is for stop = \"gated\" (rounds added while the gate is "
                          f"INCONCLUSIVE); this policy's stop is {policy.stop!r}")
    if policy.rerun_noisy_rounds > policy.repetitions:
        raise PolicyError(f"{where}: [policy] rerun_noisy_rounds = {policy.rerun_noisy_rounds} is more than the "
                        f"{policy.repetitions} repetitions: at most one extra round per round")
    return policy


def merge(table, layer):
    """`table` with a later [policy] layer on top. A layer that gives one number of repetitions and no `stop`
    asks for that fixed count: the sequential keys of the layers below do not carry over."""
    if not isinstance(layer, dict):
        raise PolicyError("[policy] must be a table")
    merged = dict(table, **layer)
    if isinstance(layer.get("repetitions"), int) and "stop" not in layer:
        merged["stop"] = "fixed"
        merged.pop("decide_on", None)
        merged.pop("budget_s", None)
    return merged


def override(item, key, value):
    """--set policy.<key>=<number>: one number of the policy. policy.repetitions=N is a fixed count of N
    (the sequential policy's min/max and decide_on are dropped): the fixed design stays one flag away.
    --set policy.profile=cpu,alloc: the profiles to take (policy.profile=none: none)."""
    if key == "profile":
        return {"profile": [] if value.strip() == "none" else [e.strip() for e in value.split(",") if e.strip()]}
    numeric = {k for k, kind in POLICY_KEYS.items() if kind in (int, float)}
    if key not in numeric:
        raise PolicyError(f"--set {item!r}: policy keys that --set takes: {', '.join(sorted(numeric | {'profile'}))}")
    try:
        number = POLICY_KEYS[key](value)
    except ValueError:
        raise PolicyError(f"--set {item!r}: {key} must be a number") from None
    return {key: number}


def _parse_sequential(where, table):
    """The sequential keys of [policy]: `repetitions = { min = 3, max = 12 }` with `stop = "decided"`, and
    `decide_on`, the metrics to decide on. Returns the Policy fields they set."""
    stop = table.get("stop", "fixed")
    repetitions = table.get("repetitions")
    if stop not in STOP_RULES:
        raise PolicyError(f"{where}: [policy] stop = {stop!r}: expected one of {', '.join(map(repr, STOP_RULES))}")
    if "decide_on" in table and stop == "fixed":
        raise PolicyError(f"{where}: [policy] decide_on is for stop = \"decided\" or \"gated\"; with a fixed count "
                          "every run is made")
    if stop == "fixed":
        if isinstance(repetitions, dict):
            raise PolicyError(f"{where}: [policy] repetitions = {{ min, max }} needs stop = \"decided\" (or give one "
                            "number for a fixed count)")
        return {}
    if not isinstance(repetitions, dict) or set(repetitions) != {"min", "max"}:
        raise PolicyError(f"{where}: [policy] stop = {stop!r} needs repetitions = {{ min = 3, max = 12 }} (the "
                        "first look and the most rounds)")
    bounds = {}
    for key in ("min", "max"):
        value = repetitions[key]
        if not isinstance(value, int) or isinstance(value, bool):
            raise PolicyError(f"{where}: [policy] repetitions.{key} = {value!r}: expected a whole number")
        bounds[key] = value
    if bounds["min"] < SEQUENTIAL_MIN_ROUNDS:
        raise PolicyError(f"{where}: [policy] repetitions.min = {bounds['min']}: a look needs {SEQUENTIAL_MIN_ROUNDS} "
                        f"runs a side (with fewer there is no interval); set min = {SEQUENTIAL_MIN_ROUNDS} or more")
    if bounds["max"] > MAX_SEQUENTIAL_ROUNDS:
        raise PolicyError(f"{where}: [policy] repetitions.max = {bounds['max']} is above its bound, "
                          f"{MAX_SEQUENTIAL_ROUNDS} (a replay of the design allocates by max)")
    if bounds["max"] < bounds["min"]:
        raise PolicyError(f"{where}: [policy] repetitions.max = {bounds['max']} is below min = {bounds['min']}; "
                        f"set max = {bounds['min']} or more")
    decide_on = table.get("decide_on", [])
    if not isinstance(decide_on, list) or not all(isinstance(m, str) and m for m in decide_on):
        raise PolicyError(f"{where}: [policy] decide_on must be a list of metric names")
    return {"stop": stop, "repetitions": bounds["max"], "min_repetitions": bounds["min"],
            "decide_on": tuple(decide_on)}


if typing.TYPE_CHECKING:  # mypy (//:lint_test): a Policy is what a rig reads of the measurement policy
    from rigs.matrix.contract import rig as _rig
    _POLICY_IS_A_POLICY_VIEW: _rig.PolicyView = Policy()
