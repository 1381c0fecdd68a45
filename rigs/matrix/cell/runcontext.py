"""What the cells of one run share (RunContext: three frozen values and the loop's handles, built by runner.py
once before the first cell; the run's state is the loop's, runner.RunState), and the blocks each cell's result
starts from (results/cellresult.py)."""

import dataclasses

from results import cellresult
from rigs.host import host_reference
from rigs.matrix.contract import rig as rig_contract, workload as workload_def
from rigs.matrix.knobs import hostknobs
from rigs.matrix.planning import spec


@dataclasses.dataclass(frozen=True)
class Configuration:
    """What was asked: the matrix (its seed resolved: --seed, a resumed run's, or the file's), the profile and
    --set values it was read with, and what it names (the workload, the rig, its builds and tools)."""
    matrix: spec.Matrix
    profile: str
    overrides: tuple  # the --set values
    matrix_source: str  # the matrix file's absolute path
    workload: workload_def.Workload
    rig: rig_contract.Rig
    rig_data: dict  # the rig's data files: name -> runfiles path
    revisions: dict  # revision name -> cli.Revision (the revision axis' builds)
    variants: dict  # variant name -> {"manifest", "data"} (patched builds)
    ceilings: dict  # metric -> analysis.ceilings.Rule (ceilings.toml)
    profiler: dict  # {agent_jar, converter_jar, perf, perf_problem} under policy.profile, else empty
    varying: frozenset  # the axes whose values differ between the planned cells


@dataclasses.dataclass(frozen=True)
class HostFacts:
    """Where it runs: the host as the doctor reported it and the preflight found it, its paths, and the host
    reference measured before the first cell."""
    report: dict  # the host's capability report (rigs/host/capabilities.py)
    nodes: list  # the host's NUMA nodes
    paths: hostknobs.HostPaths  # /proc, /sys and the other host files read and set (tests: a fake tree)
    preflight: dict
    container_image: dict  # {tar, tag, mounts} of the rigs' image for executor=container, or empty
    runner_image: str  # the rigs' image this runner runs in (cli.RunEnvironment), or ""
    fleet: dict  # {host, fleet_id} when //tools:fleet drives the run, else empty
    reference_before: tuple = ()  # the host reference's measurements before the matrix


@dataclasses.dataclass(frozen=True)
class Provenance:
    """What it is: the run's id and folder, the digest of what was asked, and the harness that ran it."""
    run_id: str
    run_dir: str
    spec_sha256: str  # of the matrix, profile, --set values and workload: a resumed run must have the same
    harness_commit: str
    harness_dirty: bool
    bazel_target: str


@dataclasses.dataclass(frozen=True)
class Handles:
    """What the run's loop holds open, opened and closed by its one `with` (runner.execute's ExitStack)."""
    host_lock: str  # the host lock's file (hoststate.py), held
    knob_journal: str  # where host settings changed by a cell are journalled before they change
    live: object = None  # the run's livemetrics.LiveMetrics when watched (--metrics-port, --influx-url)


@dataclasses.dataclass(frozen=True)
class RunContext:
    """Everything the cells of one run share, made once before the first cell and never replaced (held by
    runner_test): what was asked, where it runs, what it is, and the loop's open handles."""
    config: Configuration
    host: HostFacts
    provenance: Provenance
    handles: Handles

    def start_result(self, planned, repetition, logs):
        """The cell result of (planned cell, repetition), started from what the run knows about it
        (results/cellresult.py owns it from here)."""
        config, prov = self.config, self.provenance
        m = config.matrix
        return cellresult.CellResult(
            prov.run_id,
            matrix={"name": m.name, "rig": m.rig, "source": config.matrix_source, "profile": config.profile,
                    "seed": m.seed, "spec_sha256": prov.spec_sha256},
            cell={"id": planned.cell.id, "params": planned.cell.params, "repetition": repetition},
            policy={"warmup_s": m.policy.warmup_s, "measure_s": m.policy.measure_s,
                    "repetitions": m.policy.repetitions, "cooldown_s": m.policy.cooldown_s,
                    "timeout_s": m.policy.timeout_s,
                    **({"warmup_iterations": m.policy.warmup_iterations, "iterations": m.policy.iterations,
                        "steady_band": m.policy.steady_band} if m.policy.iterating else {}),
                    **({"profile": list(m.policy.profile)} if m.policy.profile else {})},
            provenance={
                "host": self.host.report, "jdk": planned.jdk, "command": [], "harness_commit": prov.harness_commit,
                "harness_dirty": prov.harness_dirty, "bazel_target": prov.bazel_target,
                "workload": {"id": config.workload.id, "sha256": config.workload.sha256,
                             "files": config.workload.inputs},
                "variant": self.variant_provenance(planned.cell.params["variant"]),
                **self.provenance_extras(planned.cell),
            },
            logs=logs)

    def provenance_extras(self, cell):
        """The revision a cell's rig artifacts were built from (with a revision axis) and the host reference
        measured before the matrix, for the provenance block."""
        extras = {}
        name = cell.params.get("revision")
        if name is not None:
            rev = self.config.revisions.get(name)
            extras["revision"] = ({"name": name, "commit": rev.commit, "runfiles": rev.runfiles} if rev else
                                  {"name": name, "commit": self.provenance.harness_commit})
        if self.host.reference_before:
            extras["host_reference"] = host_reference_block(self.host.report, self.host.reference_before)
        if self.host.runner_image:
            # The runner itself ran in the rigs' image (a fleet host with tunelab_runner=image): its OS
            # libraries and tools, not the host's.
            extras["runner_image"] = self.host.runner_image
        return extras

    def rig_data_for(self, cell):
        """The rig's data files for this cell: from the build of the cell's revision when it names another,
        with a patched variant's files (e.g. its classpath, overlay first) in place of the stock ones."""
        rev = self.config.revisions.get(cell.params.get("revision"))
        data = dict(rev.rig_data if rev else self.config.rig_data)
        variant = self.config.variants.get(cell.params["variant"])
        if variant:
            data.update(variant["data"])
        return data

    def variant_provenance(self, name):
        """The variant's identity for provenance: its patch set's content hash and series, or a bump's releases
        and the hash of its locked jars (stock: none)."""
        variant = self.config.variants.get(name)
        if not variant:
            return {"name": name, "patch_set_sha256": None}
        m = variant["manifest"]
        if m.get("kind") == "bump":
            return {"name": name, "patch_set_sha256": None,
                    "bump": {k: m[k] for k in ("component", "from", "to", "set", "bump_sha256")}}
        return {"name": name, "patch_set_sha256": m["patch_set_sha256"], "series": m["series"],
                "applied": m["applied"], "patches_sha256": m["patches_sha256"]}


def host_reference_block(report, measurements):
    """{probe, measurements} of the host reference, or None without any measurement."""
    return ({"probe": host_reference.probe_text(host_reference.window_scale(report)), "measurements": list(measurements)}
            if measurements else None)
