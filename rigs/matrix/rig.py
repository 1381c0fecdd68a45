"""The contract every rig implements, and workload definitions (a workload is a data folder).

A rig module `rigs/<name>/rig.py` exposes `RIG`, an object with:
  name                  the rig's unique name (the loader refuses a module whose RIG.name differs)
  launch(cell, workload, policy, workdir, data) -> Launch     what to start in the JVM the matrix chose
  parse(stdout_text, policy, workdir) -> Parsed               the samples, warm-up kept apart
  check(params) (optional)                                    raises ValueError for a cell it cannot run
The matrix runner owns everything else: JVM selection and flags, pinning, host knobs, evidence, timeouts,
results. `data` maps the names the rig's Bazel macro passed (e.g. "jar") to runfiles paths. `workdir` is the
cell's own folder: launch may write generated inputs and configs there, and parse may read them back.
parse raises MeasurementInvalid when the run completed but measured nothing valid (the reason is stored).
"""

import dataclasses
import hashlib
import importlib
import os
import tomllib


@dataclasses.dataclass
class Launch:
    main_class: str
    classpath: list
    args: list
    jvm_flags: list = dataclasses.field(default_factory=list)
    env: dict = dataclasses.field(default_factory=dict)
    # Inputs the rig generated for this cell (e.g. a trace): file name -> sha256, stored in provenance.
    generated_inputs: dict = dataclasses.field(default_factory=dict)
    # A measuring tool the JVM runs under (e.g. ["perf", "stat", ..., "--"]), placed after the runner's own
    # placement wrapper (numactl/taskset), so it inherits the cell's CPU and memory binding. Never for
    # placement. The runner finds the JVM among its children for evidence and pinning.
    wrapper: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Parsed:
    warmup_samples: list  # {"metric", "value", "unit", "t"}
    samples: list
    # Rig-specific facts for the reader, stored as the result's `observations` (e.g. a per-second series).
    observations: dict = dataclasses.field(default_factory=dict)


class MeasurementInvalid(ValueError):
    """The rig ran to completion but its output holds no valid measurement (e.g. no steady window)."""


@dataclasses.dataclass
class Workload:
    id: str
    rig: str
    folder: str
    parameters: dict
    metrics: dict  # name -> {"unit", "direction"}
    policy: dict
    inputs: dict  # relative path -> sha256
    sha256: str  # of workload.toml and every input, in path order
    tables: dict = dataclasses.field(default_factory=dict)  # the rig's own tables of workload.toml


class WorkloadError(ValueError):
    pass


def load_workload(folder):
    path = os.path.join(folder, "workload.toml")
    try:
        with open(path, "rb") as f:
            raw = f.read()
        data = tomllib.loads(raw.decode())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise WorkloadError(f"{path}: {e}") from None
    head = data.get("workload", {})
    for key in ("id", "rig"):
        if not isinstance(head.get(key), str):
            raise WorkloadError(f"{path}: [workload] needs a string `{key}`")
    metrics = data.get("metrics", {})
    for name, m in metrics.items():
        if m.get("direction") not in ("higher_is_better", "lower_is_better") or not m.get("unit"):
            raise WorkloadError(f"{path}: [metrics.{name}] needs `unit` and `direction` "
                                "(higher_is_better or lower_is_better)")
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


def read_classpath_file(path):
    """Jar paths of a java_classpath file (rigs/defs.bzl), each relative to the file's folder: a rig that
    starts a JVM on a Maven set's jars gets the file as rig data and turns it into a classpath."""
    folder = os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        return [os.path.normpath(os.path.join(folder, line.strip())) for line in f if line.strip()]


def load_rig(name):
    module = importlib.import_module(f"rigs.{name}.rig")
    rig = getattr(module, "RIG", None)
    if rig is None or getattr(rig, "name", None) != name:
        raise ImportError(f"rigs/{name}/rig.py must define RIG with RIG.name == {name!r}")
    return rig
