"""Reading the output of a rig's JVM driver that runs timed iterations (NnBenchDriver, MrJobLoop): each
iteration's output follows a line {"event":"iteration","index":K,"warmup":true|false} and ends with its
cost line {"event":"cost",...} (rigs/matrix/java/IterationCost.java: heap allocated and CPU time, the JIT
compiler threads' share apart; jit_cpu_ns is -1 where the host cannot say).
"""

import dataclasses
import re

from rigs.matrix.contract.rig import LiveMetric, MeasurementInvalid
from results import safeio

ITERATION_MARK = re.compile(r'^\{"event":"iteration","index":(\d+),"warmup":(true|false)\}$', re.M)
COST_LINE = re.compile(r'^(\{"event":"cost",.*\})$', re.M)
COST_FIELDS = ("allocated_bytes", "cpu_ns", "driver_allocated_bytes", "driver_cpu_ns", "jit_cpu_ns", "wall_ns")


# What a watched run serves of an iterating driver while it runs (a rig's live_metrics; issue 63).
LIVE_METRICS = {
    "iterations_done": LiveMetric("counter", "Iterations the driver finished in this launch, warm-up ones too"),
    "iteration_wall_seconds": LiveMetric("gauge", "The last finished iteration's wall time"),
    "iteration_allocated_bytes": LiveMetric("gauge", "Heap the last finished iteration allocated"),
}


def live_values(line: str) -> dict[str, float]:
    """The live values of one output line of an iterating driver: its cost line's (LIVE_METRICS), else {}."""
    if not line.startswith('{"event":"cost"'):
        return {}
    data = safeio.parse_json(line)
    return {"iterations_done": float(int(data["index"]) + 1), "iteration_wall_seconds": int(data["wall_ns"]) / 1e9,
            "iteration_allocated_bytes": float(int(data["allocated_bytes"]))}


@dataclasses.dataclass(frozen=True)
class Iteration:
    index: int
    warmup: bool
    text: str  # its output, from after its mark to the next one


def split(text: str) -> list[Iteration]:
    """The iterations of a driver's output, in order; [] when it ran none (no marks)."""
    chunks = ITERATION_MARK.split(text)
    return [Iteration(int(index), warmup == "true", body)
            for index, warmup, body in zip(chunks[1::3], chunks[2::3], chunks[3::3])]


def cost(iteration: Iteration) -> dict[str, int]:
    """The iteration's cost line as {field: int}; MeasurementInvalid when it is missing, doubled, malformed
    or negative (a driver that stopped after the iteration's work)."""
    found = COST_LINE.findall(iteration.text)
    where = f"iteration {iteration.index}"
    if len(found) != 1:
        raise MeasurementInvalid(f"{where}: {len(found)} cost lines after its report (1 expected)")
    try:
        data = safeio.parse_json(found[0])
        values = {k: int(data[k]) for k in COST_FIELDS}
    except (ValueError, KeyError, TypeError) as e:
        raise MeasurementInvalid(f"{where}: malformed cost line {found[0][:120]!r}: {e}") from e
    if data.get("index") != iteration.index:
        raise MeasurementInvalid(f"{where}: its cost line is of iteration {data.get('index')}")
    if values["allocated_bytes"] < 0 or values["cpu_ns"] < 0 or values["jit_cpu_ns"] > values["cpu_ns"]:
        raise MeasurementInvalid(f"{where}: impossible cost {values}")
    return values


def cpu_without_jit_ns(values: dict[str, int], with_driver: bool = False) -> int | None:
    """CPU nanoseconds of the iteration's threads but the JIT compiler's (and the driver's unless
    with_driver), or None where the compiler threads' share is unknown."""
    if values["jit_cpu_ns"] < 0:
        return None
    return values["cpu_ns"] - values["jit_cpu_ns"] + (values["driver_cpu_ns"] if with_driver else 0)
