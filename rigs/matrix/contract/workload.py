"""A workload is a data folder: `workload.toml` (its id, the rig it is for, parameters, metrics with unit and
direction, the measurement policy's defaults, inputs pinned by sha256, and the rig's own tables) beside its
inputs, and `gate.toml` (minimum effects, analysis/thresholds.py). `load_workload` reads and checks one; the
sha256 it computes (of workload.toml and every input, in path order) goes into every result's provenance."""

import dataclasses
import hashlib
import os
from typing import Any
from results import safeio


@dataclasses.dataclass
class Workload:
    id: str
    rig: str
    folder: str
    parameters: dict[str, str]
    metrics: dict[str, dict[str, str]]  # name -> {"unit", "direction"}
    policy: dict[str, Any]
    inputs: dict[str, str]  # relative path -> sha256
    sha256: str  # of workload.toml and every input, in path order
    tables: dict[str, Any] = dataclasses.field(default_factory=dict)  # the rig's own tables of workload.toml


class WorkloadError(ValueError):
    pass


def load_workload(folder: str) -> Workload:
    path = os.path.join(folder, "workload.toml")
    try:
        raw = safeio.read_bytes(path, 1 << 20)
        data = safeio.parse_toml(raw)
    except (OSError, safeio.InputError) as e:
        raise WorkloadError(f"{path}: {str(e).removeprefix(f'{path}: ')}") from None
    head = data.get("workload", {})
    for key in ("id", "rig"):
        if not isinstance(head.get(key), str):
            raise WorkloadError(f"{path}: [workload] needs a string `{key}`")
    metrics = data.get("metrics", {})
    for name, m in metrics.items():
        if m.get("direction") not in ("higher_is_better", "lower_is_better") or not m.get("unit"):
            raise WorkloadError(f"{path}: [metrics.{name}] needs `unit` and `direction` "
                                "(higher_is_better or lower_is_better)")
        if m.get("zero_possible", True) is not True:
            raise WorkloadError(f"{path}: [metrics.{name}] zero_possible: true or leave it out")
    digest = hashlib.sha256(raw)
    inputs = dict(sorted(data.get("inputs", {}).items()))
    for rel, expected in inputs.items():
        file_path = os.path.join(folder, rel)
        try:
            with open(file_path, "rb") as f:
                actual = hashlib.sha256(f.read()).hexdigest()
        except OSError as e:
            raise WorkloadError(f"{path}: input {rel}: {e.strerror}") from None
        if actual != expected:
            raise WorkloadError(f"{path}: input {rel} has sha256 {actual}, pinned {expected}")
        digest.update(rel.encode() + b"\0" + actual.encode())
    return Workload(id=head["id"], rig=head["rig"], folder=folder,
                    parameters={k: str(v) for k, v in data.get("parameters", {}).items()},
                    metrics=metrics, policy=data.get("policy", {}), inputs=inputs, sha256=digest.hexdigest(),
                    tables={k: v for k, v in data.items()
                            if k not in ("workload", "parameters", "metrics", "policy", "inputs")})
