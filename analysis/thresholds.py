"""Minimum effects: how large a change of a metric must be before the gate calls it a regression and a
report calls it better or worse. A significant change smaller than that is reported as negligible: a
deterministic metric (a count, a checksum-like total) is "significant" at any difference, however small.

Per workload, `workloads/<workload>/gate.toml` sets `[min_effect] <metric> = <fraction>` (kept out of the
workload's digest, so a new threshold orphans no stored set); a metric it does not name gets
DEFAULT_MIN_EFFECT, and every table that uses one says which. `[profile_min_effect.<profile>] <metric> =
<fraction>` asks another effect of one profile's runs: what a gated nightly can honestly decide in its budget
(issue 79) may be larger than what a study of more rounds is judged at; everything that reads a run of that
profile (the runner's stop rule, the gate, the summary, reports, the sensitivity figures) reads the same value.
"""

import math
import os
from results import safeio

DEFAULT_MIN_EFFECT = 0.05


class ThresholdError(ValueError):
    pass


def read_gate_toml(path, profile=None):
    """{metric: fraction} of one gate.toml, with `profile`'s [profile_min_effect.<profile>] over [min_effect];
    every fraction finite and in (0, 1), every profile's metric one [min_effect] names."""
    try:
        doc = safeio.read_toml(path)
    except safeio.InputError as e:
        raise ThresholdError(str(e)) from None
    out = _fractions(path, "min_effect", doc.get("min_effect", {}))
    profiles = doc.get("profile_min_effect", {})
    if not isinstance(profiles, dict) or not all(isinstance(t, dict) for t in profiles.values()):
        raise ThresholdError(f"{path}: profile_min_effect: expected [profile_min_effect.<profile>] tables")
    for name, table in profiles.items():
        fractions = _fractions(path, f"profile_min_effect.{name}", table)
        unknown = sorted(set(fractions) - set(out))
        if unknown:
            raise ThresholdError(f"{path}: profile_min_effect.{name}.{unknown[0]}: not a metric [min_effect] names")
        if name == profile:
            out.update(fractions)
    return out


def _fractions(path, where, table):
    if not isinstance(table, dict):
        raise ThresholdError(f"{path}: {where}: expected a table of metric = fraction")
    out = {}
    for name, value in table.items():
        fraction = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        if not math.isfinite(fraction) or not 0 < fraction < 1:
            raise ThresholdError(f"{path}: {where}.{name} = {value!r}: expected a fraction between 0 and 1")
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


def for_workload(workload_id, workspace_roots=None, profile=None):
    """{metric: min_effect} of one workload's gate.toml for a run of `profile` ({} when it has none); the first
    root that has the workload's folder wins (workspace_roots None: default_roots())."""
    path = _gate_toml(workload_id, workspace_roots)
    return read_gate_toml(path, profile) if path else {}


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
    """{metric: min_effect} from the gate.toml of each workload the documents ran (for_workload), for their
    matrix profile where they all ran one (a gated night's asked effect is its profile's)."""
    profiles = {(d.get("matrix") or {}).get("profile") for d in docs}
    profile = profiles.pop() if len(profiles) == 1 else None
    out = {}
    for workload_id in _workload_ids(docs):
        out.update(for_workload(workload_id, workspace_roots, profile))
    return out
