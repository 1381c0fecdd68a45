"""Minimum effects: how large a change of a metric must be before the gate calls it a regression and a
report calls it better or worse. A significant change smaller than that is reported as negligible: a
deterministic metric (a count, a checksum-like total) is "significant" at any difference, however small.

Per workload, `workloads/<workload>/gate.toml` sets `[min_effect] <metric> = <fraction>` (kept out of the
workload's digest, so a new threshold orphans no stored set); a metric it does not name gets
DEFAULT_MIN_EFFECT, and every table that uses one says which.
"""

import math
import os
from results import safeio

DEFAULT_MIN_EFFECT = 0.05


class ThresholdError(ValueError):
    pass


def read_gate_toml(path):
    """{metric: fraction} of one gate.toml; every fraction finite and in (0, 1)."""
    try:
        table = safeio.read_toml(path).get("min_effect", {})
    except safeio.InputError as e:
        raise ThresholdError(str(e)) from None
    out = {}
    for name, value in table.items():
        fraction = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        if not math.isfinite(fraction) or not 0 < fraction < 1:
            raise ThresholdError(f"{path}: min_effect.{name} = {value!r}: expected a fraction between 0 and 1")
        out[name] = fraction
    return out


def default_roots():
    """Where gate.toml files are looked up: this build's tree (the runfiles), then the user's checkout."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [here] + ([os.environ["BUILD_WORKSPACE_DIRECTORY"]] if os.environ.get("BUILD_WORKSPACE_DIRECTORY") else [])


def read_companions(path):
    """{companion metric: the metric it explains} of one gate.toml's `[companion_of]` (e.g. heap allocated
    per create is a deterministic companion of create_rate); both names strings."""
    try:
        table = safeio.read_toml(path).get("companion_of", {})
    except safeio.InputError as e:
        raise ThresholdError(str(e)) from None
    for name, of in table.items():
        if not isinstance(of, str) or not of or of == name:
            raise ThresholdError(f"{path}: companion_of.{name} = {of!r}: expected another metric's name")
    return dict(table)


def _gate_toml(workload_id, workspace_roots):
    folder = workload_id.split("/")[0]
    for root in default_roots() if workspace_roots is None else workspace_roots:
        path = os.path.join(root, "workloads", folder, "gate.toml")
        if os.path.exists(path):
            return path
    return None


def for_workload(workload_id, workspace_roots=None):
    """{metric: min_effect} of one workload's gate.toml ({} when it has none); the first root that has the
    workload's folder wins (workspace_roots None: default_roots())."""
    path = _gate_toml(workload_id, workspace_roots)
    return read_gate_toml(path) if path else {}


def companions(workspace_roots, docs):
    """{companion metric: the metric it explains} from the gate.toml of each workload the documents ran."""
    out = {}
    for workload_id in _workload_ids(docs):
        path = _gate_toml(workload_id, workspace_roots)
        if path:
            out.update(read_companions(path))
    return out


def _workload_ids(docs):
    ids = {((d.get("provenance") or {}).get("workload") or {}).get("id") for d in docs}
    return sorted(i for i in ids if isinstance(i, str))


def min_effects(workspace_roots, docs):
    """{metric: min_effect} from the gate.toml of each workload the documents ran (for_workload)."""
    out = {}
    for workload_id in _workload_ids(docs):
        out.update(for_workload(workload_id, workspace_roots))
    return out
