"""The sets the sensitivity calibrator reads (//tools:sensitivity): an A/A set (one build on both sides of an
arm axis) or a known-slowdown set, checked to be the design it is said to be, split into interleaved rounds
of (baseline run, candidate run), and the variance components of its A/A rounds (analysis/sensitivity/components.py)."""

import dataclasses
import statistics

import numpy as np

from analysis import resultsets
from analysis.sensitivity import components

ARM_AXES = ("arm", "revision")  # axes whose two values are one build by design (A/A)


@dataclasses.dataclass
class Run:
    windows: list  # the run's measured samples of one metric
    duration_s: float  # the run's wall time, launch to end
    noise: dict = None  # its provenance's host noise (rigs/host/hostnoise.py), where recorded
    iteration_s: float = 0.0  # a measured iteration's own time (iterations inside a launch), where recorded

    @property
    def median(self):
        return float(statistics.median(self.windows))


def arm_values(result_set):
    """{axis: [values]} of the axes the set's documents vary."""
    values = {}
    for d in result_set.docs:
        for k, v in d["cell"]["params"].items():
            values.setdefault(k, [])
            if v not in values[k]:
                values[k].append(v)
    return {k: v for k, v in values.items() if len(v) > 1}


def check_design(result_set, axis, kind, values=None):
    """(baseline value, candidate value) of a two-arm set along `axis`; SensitivityError when the set is not
    the design `kind` ("A/A" or "slowdown") says."""
    varying = arm_values(result_set)
    if kind == "slowdown" and set(varying) & set(ARM_AXES):
        arm = sorted(set(varying) & set(ARM_AXES))[0]
        raise components.SensitivityError(
            f"{result_set.name}: an A/A design (one build on both sides of {arm!r}), not a known slowdown")
    if axis not in varying:
        raise components.SensitivityError(
            f"{result_set.name}: not a{'n' if kind == 'A/A' else ''} {kind} set of this rig: its cells do not vary "
            f"{axis!r} (they vary {sorted(varying) or 'nothing'})")
    others = sorted(k for k in varying if k != axis)
    if others:
        raise components.SensitivityError(f"{result_set.name}: its cells vary {others} besides {axis!r}: "
                                           f"the two sides must differ in the {axis} arm alone")
    present = varying[axis]
    declared = [str(v) for v in (result_set.manifest.get("matrix", {}).get("axes") or {}).get(axis, [])]
    order = [v for v in declared if v in present] + [v for v in present if v not in declared]
    if values is not None:
        missing = [v for v in values if v not in order]
        if missing:
            raise components.SensitivityError(f"{result_set.name}: {axis} has no value {missing[0]!r} "
                                               f"(values: {', '.join(order)})")
        order = list(values)
    if len(order) != 2:
        raise components.SensitivityError(f"{result_set.name}: {axis} has {len(order)} values; a two-arm design has 2")
    ok = {v: next((d for d in result_set.docs if d["status"] == "ok" and d["cell"]["params"][axis] == v), None)
          for v in order}
    if any(d is None for d in ok.values()):
        raise components.SensitivityError(f"{result_set.name}: an arm has no ok run")
    diffs = resultsets.provenance_differences(ok[order[0]], ok[order[1]], set())
    if kind == "A/A":
        if axis not in ARM_AXES or diffs:
            why = "; ".join(f"{k}: {a} vs {b}" for k, a, b in diffs) or f"its arm axis {axis!r} changes the cell"
            raise components.SensitivityError(f"{result_set.name}: not an A/A design (the sides differ: {why})")
    elif axis in ARM_AXES or (not diffs and axis != "injected_slowdown_pct"):
        raise components.SensitivityError(
            f"{result_set.name}: an A/A design (one build on both sides of {axis!r}), not a known slowdown")
    return order[0], order[1]


def rounds_of(result_set, axis, values, metric):
    """[(baseline Run, candidate Run)] of the rounds (repetitions) where both arms have an ok run of `metric`."""
    by_arm = {v: {} for v in values}
    for d in result_set.docs:
        v = d["cell"]["params"].get(axis)
        samples = [s["value"] for s in d.get("samples", []) if s["metric"] == metric]
        if v in by_arm and d["status"] == "ok" and samples:
            by_arm[v][d["cell"]["repetition"]] = Run(samples, float(d.get("duration_s") or 0.0),
                                                     (d.get("provenance") or {}).get("noise"), iteration_seconds(d))
    a, b = (by_arm[v] for v in values)
    return [(a[r], b[r]) for r in sorted(set(a) & set(b))]


def noise_band(runs):
    """The host noise the A/A runs saw (their measurement windows): the band a later round is judged against;
    None fields where the set predates recording it."""
    steal = [r.noise["steal_fraction"] for r in runs if r.noise and r.noise.get("steal_fraction") is not None]
    load = [x for r in runs if r.noise for x in r.noise.get("load_average") or [] if x is not None]
    return {"steal_fraction_max": max(steal) if steal else None, "load_max": max(load) if load else None,
            "runs_with_noise": len(steal)}


def iteration_seconds(doc):
    """The median wall time of a run's measured iterations, from the cost lines its rig stores
    (observations.iterations[].cost.wall_ns: rigs/matrix/java/IterationCost.java); 0.0 where there are none.
    It is the iteration's own work: the fresh state and the two collections around it are left out."""
    walls = []
    for it in (doc.get("observations") or {}).get("iterations") or []:
        if not isinstance(it, dict) or it.get("warmup"):
            continue
        cost = it.get("cost")
        wall = cost.get("wall_ns") if isinstance(cost, dict) else None
        if isinstance(wall, (int, float)) and not isinstance(wall, bool) and wall > 0:
            walls.append(wall / 1e9)
    return float(statistics.median(walls)) if walls else 0.0


def components_of(result_set, pairs):
    """Variance components of the A/A rounds, with each level's cost in seconds. A window is a time window
    of the measure phase, or an iteration inside a launch where the runs record their iterations' time (the
    warm-up iterations then count as the run's overhead)."""
    policy = result_set.first_ok().get("policy") or {}
    cooldown = float(policy.get("cooldown_s") or 0.0)
    n_windows = float(np.mean([len(r.windows) for pair in pairs for r in pair]))
    run_s = float(np.mean([r.duration_s for pair in pairs for r in pair]))
    measure_s = float(policy.get("measure_s") or 0.0)
    window_s = measure_s / n_windows if n_windows > 1 and measure_s else 0.0
    iterations = [r.iteration_s for pair in pairs for r in pair if r.iteration_s > 0]
    if iterations and n_windows > 1:
        window_s = float(np.mean(iterations))
    return components.estimate_components([[a.windows, b.windows] for a, b in pairs],
                                           round_s=2 * (run_s + cooldown),
                                           run_overhead_s=max(0.0, run_s - n_windows * window_s), window_s=window_s)
