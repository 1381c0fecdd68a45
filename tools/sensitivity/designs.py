"""What each rig gates and how (tools/sensitivity): the rigs that declare [sensitivity], the metrics a set's
results declare, and a gated profile's design (rounds and stopping rule, read from the rig's matrix) and asked
effect. Read by the calibrator (sensitivity.py) and by the README's tables and nights.json (tables.py)."""

import dataclasses
import os

from results import safeio
from rigs import registry
from analysis import sequential, thresholds
from analysis.sensitivity import components
from analysis.gate import power as gate_power


@dataclasses.dataclass(frozen=True)
class Study:
    rig: str
    matrix: str
    gated: tuple
    aa: dict
    slowdown: dict  # {} where the rig has no slowdown


def load_registry(root=registry.ROOT):
    """{rig: Study} of every rig whose rig.toml declares [sensitivity] (rigs/registry.py)."""
    return {r.rig: Study(r.rig, r.label, r.gated, r.aa, r.slowdown)
            for r in registry.load(root).values() if r.aa}


def gated_metrics(result_set):
    """{metric: declaration} of every metric the set's results declare: the gate gates each one."""
    return result_set.metrics()


def gated_design(rig, profile, metric, asked, roots=None):
    """The gate_power.Design of a gated profile for `metric`, read from the rig's matrix (the policy layers
    the runner merges: the workload's [policy], the matrix's, the profile's) in the first of `roots` (this
    build's runfiles, then the checkout) that has it. A sequential profile's metric it does not decide on is
    read at its first look (the run may stop there for the others)."""
    roots = roots or thresholds.default_roots()
    workspace = next((r for r in roots if os.path.isfile(os.path.join(r, "rigs", rig, "matrix.toml"))), roots[0])
    matrix_path = os.path.join(workspace, "rigs", rig, "matrix.toml")
    try:
        matrix = safeio.read_toml(matrix_path)
        workload = safeio.read_toml(os.path.join(workspace, matrix["matrix"]["workload"], "workload.toml"))
        policy = {**workload.get("policy", {}), **matrix.get("policy", {}),
                  **(matrix["profiles"][profile].get("policy") or {})}
    except (OSError, KeyError, TypeError, safeio.InputError) as e:
        raise components.SensitivityError(f"{rig}: the gated profile {profile!r} cannot be read from "
                                           f"{matrix_path} ({e})") from None
    repetitions = policy.get("repetitions", 3)
    rule = policy.get("stop", "fixed")
    if rule in sequential.RULES:
        decide_on = policy.get("decide_on") or []
        if decide_on and metric not in decide_on:
            return gate_power.Design(int(repetitions["min"]))
        return gate_power.Design(int(repetitions["max"]), int(repetitions["min"]), min(asked, 0.999),
                                 max(1, len(decide_on)), rule)
    return gate_power.Design(int(repetitions))


def profile_effects(doc, profile, roots=None):
    """{metric: the effect a run of `profile` is asked} (analysis/thresholds.py: [min_effect] with the gate.toml's
    [profile_min_effect.<profile>]) of the workload `doc` ran: a gated design is judged at its own profile's."""
    workload = ((doc.get("provenance") or {}).get("workload") or {}).get("id")
    return thresholds.for_workload(workload, roots, profile) if isinstance(workload, str) else {}
