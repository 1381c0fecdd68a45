"""Ceilings: the most a cell can measure of a metric whatever the host (issue 40).

A YARN cell of 100 NodeManagers heartbeating once a second cannot allocate more than 100 containers/s, however
fast the scheduler: a result within AT_CEILING of that measures the cap, and a comparison with it is a bound,
not a ratio ("x86_64 at its heartbeat cap: the change is a lower bound"). A rig declares its ceilings as data,
`workloads/<workload>/ceilings.toml` (kept out of the workload's digest, like gate.toml, so a new ceiling
orphans no stored set):

    [container_allocation_rate]
    name = "heartbeat cap"                      # what the ceiling is, in a few words
    multiply = ["nodes", "offswitch_per_heartbeat"]
    divide = ["nm_heartbeat_ms"]
    times = 1000                                # ceiling = times x multiply... / divide...
    when = { trace = "" }                       # only cells whose parameters are these

The runner marks each result's metric with its cell's ceiling when it stores it (`ceiling`: name, value,
at_ceiling; results/schema/cell_result.v2.schema.json); results stored before a ceiling was declared get it
from their cell's parameters when they are read, so every stored set has it.
"""

import dataclasses
import math
import os

from analysis import thresholds
from results import safeio

FILE_NAME = "ceilings.toml"
# A median this close to its ceiling is at it: a heartbeat-capped cell measures 97-100 % of its cap (the
# x86 cross-arch cell: 100.0 of 100; the smoke cell: 500 of 500), an uncapped one far less.
AT_CEILING = 0.97
KEYS = {"name", "multiply", "divide", "times", "when"}


class CeilingError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Rule:
    """One metric's ceiling as declared."""
    metric: str
    name: str
    multiply: tuple
    divide: tuple
    times: float
    when: tuple  # ((parameter, value), ...)

    def value(self, params):
        """The ceiling of a cell with these parameters, or None (the rule does not apply, or a parameter it
        needs is missing or not a positive number)."""
        if any(str(params.get(k)) != v for k, v in self.when):
            return None
        try:
            factors = [float(params[p]) for p in self.multiply + self.divide]
        except (KeyError, TypeError, ValueError):
            return None
        if not all(math.isfinite(f) and f > 0 for f in factors):
            return None
        value = self.times * math.prod(factors[:len(self.multiply)]) / math.prod(factors[len(self.multiply):])
        return value if math.isfinite(value) else None


@dataclasses.dataclass(frozen=True)
class Ceiling:
    """A cell's ceiling of one metric, and whether a measured value is at it."""
    metric: str
    name: str
    value: float
    unit: str = ""

    def reached_by(self, measured):
        return measured is not None and math.isfinite(measured) and measured >= AT_CEILING * self.value

    def figure(self):
        """'heartbeat cap, 100 containers/s'."""
        shown = f"{self.value:,.0f}" if self.value >= 100 else f"{self.value:.3g}"
        return f"{self.name}, {shown}{' ' + self.unit if self.unit else ''}"


def _names(path, metric, key, value):
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise CeilingError(f"{path}: {metric}.{key} must be a list of parameter names")
    return tuple(value)


def read(path):
    """{metric: Rule} of one ceilings.toml; every entry checked (a wrong one is an error naming it)."""
    try:
        doc = safeio.read_toml(path)
    except safeio.InputError as e:
        raise CeilingError(str(e)) from None
    rules = {}
    for metric, entry in doc.items():
        if not isinstance(entry, dict):
            raise CeilingError(f"{path}: {metric} must be a table")
        unknown = set(entry) - KEYS
        if unknown:
            raise CeilingError(f"{path}: {metric}: unknown key(s) {', '.join(sorted(unknown))} (known: "
                               f"{', '.join(sorted(KEYS))})")
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 40:
            raise CeilingError(f"{path}: {metric}.name must say what the ceiling is in 1-40 characters")
        times = entry.get("times", 1)
        if isinstance(times, bool) or not isinstance(times, (int, float)) or not math.isfinite(times) or times <= 0:
            raise CeilingError(f"{path}: {metric}.times must be a positive number")
        multiply = _names(path, metric, "multiply", entry.get("multiply"))
        divide = _names(path, metric, "divide", entry.get("divide", []))
        when = entry.get("when", {})
        if not isinstance(when, dict) or not all(isinstance(v, str) for v in when.values()):
            raise CeilingError(f"{path}: {metric}.when must be a table of parameter = \"value\"")
        rules[metric] = Rule(metric, name.strip(), multiply, divide, float(times), tuple(sorted(when.items())))
    return rules


def for_workload(workload_id, workspace_roots=None):
    """{metric: Rule} of one workload's ceilings.toml ({} when it has none); the first root that has it wins
    (workspace_roots None: the build's tree, then the checkout, as for gate.toml)."""
    folder = str(workload_id).split("/")[0]
    if not folder or folder.startswith(".") or os.sep in folder:
        return {}
    for root in thresholds.default_roots() if workspace_roots is None else workspace_roots:
        path = os.path.join(root, "workloads", folder, FILE_NAME)
        if os.path.exists(path):
            return read(path)
    return {}


def for_folder(folder):
    """{metric: Rule} of the ceilings.toml in a workload's folder ({} without one)."""
    path = os.path.join(folder, FILE_NAME)
    return read(path) if os.path.exists(path) else {}


def mark(metrics, rules, params):
    """Adds `ceiling` {name, value, at_ceiling} to each metric entry (results/resultfile.run_metrics) that has
    one for a cell of these parameters; returns `metrics`."""
    for m in metrics:
        rule = rules.get(m["name"])
        value = rule.value(params) if rule else None
        if value is not None:
            ceiling = Ceiling(m["name"], rule.name, value, m.get("unit", ""))
            m["ceiling"] = {"name": rule.name, "value": value, "at_ceiling": ceiling.reached_by(m["value"])}
    return metrics


def of_docs(docs, workspace_roots=None):
    """{(cell id, metric): Ceiling} of the cells of these result documents that have one."""
    rules_by_workload, out = {}, {}
    for d in docs:
        workload_id = ((d.get("provenance") or {}).get("workload") or {}).get("id")
        if not isinstance(workload_id, str):
            workload_id = ""
        if workload_id not in rules_by_workload:
            rules_by_workload[workload_id] = for_workload(workload_id, workspace_roots) if workload_id else {}
        entries = {m.get("name"): m for m in d.get("metrics") or [] if isinstance(m, dict)}
        for metric, rule in rules_by_workload[workload_id].items():
            value = rule.value(d["cell"]["params"])
            if value is not None:
                out[(d["cell"]["id"], metric)] = Ceiling(metric, rule.name, value, entries.get(metric, {}).get("unit", ""))
        for metric, m in entries.items():  # the ceiling the runner stored stands over today's declaration
            stored = m.get("ceiling")
            if isinstance(stored, dict):
                out[(d["cell"]["id"], metric)] = Ceiling(metric, stored["name"], stored["value"], m.get("unit", ""))
    return out
