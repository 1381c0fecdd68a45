"""What the cells of one run share (RunContext, built by runner.py once the run is planned: frozen, the run's
state is the loop's, runner.RunState), and the blocks each cell's result starts from (results/cellresult.py)."""

import dataclasses

from results import cellresult
from rigs.matrix.contract import rig as rig_contract, workload as workload_def
from rigs.matrix.knobs import hostknobs
from rigs.matrix.planning import spec


@dataclasses.dataclass(frozen=True)
class RunContext:
    """Everything the cells of one run share, fixed when the run starts (the host reference measured before
    the matrix is added with dataclasses.replace before any cell runs)."""
    matrix: spec.Matrix
    workload: workload_def.Workload
    rig: rig_contract.Rig
    rig_data: dict  # the rig's data files: name -> runfiles path
    revisions: dict  # revision name -> cli.Revision (the revision axis' builds)
    variants: dict  # variant name -> {"manifest", "data"} (patched builds)
    run_id: str
    run_dir: str
    report: dict  # the host's capability report (rigs/host/capabilities.py)
    profile: str
    overrides: list  # the --set values
    spec_sha256: str
    matrix_source: str
    harness_commit: str
    harness_dirty: bool
    bazel_target: str
    preflight: dict
    nodes: list  # the host's NUMA nodes
    host_paths: hostknobs.HostPaths
    varying: list  # the axes whose values differ between the planned cells
    host_lock: str  # the host lock's file (hoststate.py)
    knob_journal: str
    container_image: dict  # {tar, tag, mounts} of the rigs' image for executor=container, or empty
    host_reference: dict = None  # the host reference measured before the matrix, for provenance
    runner_image: str = ""  # the rigs' image this runner runs in (cli.RunEnvironment), for provenance
    fleet: dict = dataclasses.field(default_factory=dict)  # {host, fleet_id} when //tools:fleet drives the run
    ceilings: dict = dataclasses.field(default_factory=dict)  # metric -> analysis.ceilings.Rule (ceilings.toml)
    profiler: dict = dataclasses.field(default_factory=dict)  # {agent_jar, converter_jar} under policy.profile
    live: object = None  # the run's livemetrics.LiveMetrics when watched (--metrics-port, --influx-url), else None

    def start_result(self, planned, repetition, logs):
        """The cell result of (planned cell, repetition), started from what the run knows about it
        (results/cellresult.py owns it from here)."""
        m = self.matrix
        return cellresult.CellResult(
            self.run_id,
            matrix={"name": m.name, "rig": m.rig, "source": self.matrix_source, "profile": self.profile,
                    "seed": m.seed, "spec_sha256": self.spec_sha256},
            cell={"id": planned.cell.id, "params": planned.cell.params, "repetition": repetition},
            policy={"warmup_s": m.policy.warmup_s, "measure_s": m.policy.measure_s,
                    "repetitions": m.policy.repetitions, "cooldown_s": m.policy.cooldown_s,
                    "timeout_s": m.policy.timeout_s,
                    **({"warmup_iterations": m.policy.warmup_iterations, "iterations": m.policy.iterations,
                        "steady_band": m.policy.steady_band} if m.policy.iterating else {}),
                    **({"profile": list(m.policy.profile)} if m.policy.profile else {})},
            provenance={
                "host": self.report, "jdk": planned.jdk, "command": [], "harness_commit": self.harness_commit,
                "harness_dirty": self.harness_dirty, "bazel_target": self.bazel_target,
                "workload": {"id": self.workload.id, "sha256": self.workload.sha256, "files": self.workload.inputs},
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
            rev = self.revisions.get(name)
            extras["revision"] = ({"name": name, "commit": rev.commit, "runfiles": rev.runfiles} if rev else
                                  {"name": name, "commit": self.harness_commit})
        if self.host_reference:
            extras["host_reference"] = self.host_reference
        if self.runner_image:
            # The runner itself ran in the rigs' image (a fleet host with tunelab_runner=image): its OS
            # libraries and tools, not the host's.
            extras["runner_image"] = self.runner_image
        return extras

    def rig_data_for(self, cell):
        """The rig's data files for this cell: from the build of the cell's revision when it names another,
        with a patched variant's files (e.g. its classpath, overlay first) in place of the stock ones."""
        rev = self.revisions.get(cell.params.get("revision"))
        data = dict(rev.rig_data if rev else self.rig_data)
        variant = self.variants.get(cell.params["variant"])
        if variant:
            data.update(variant["data"])
        return data

    def variant_provenance(self, name):
        """The variant's identity for provenance: its patch set's content hash and series, or a bump's releases
        and the hash of its locked jars (stock: none)."""
        variant = self.variants.get(name)
        if not variant:
            return {"name": name, "patch_set_sha256": None}
        m = variant["manifest"]
        if m.get("kind") == "bump":
            return {"name": name, "patch_set_sha256": None,
                    "bump": {k: m[k] for k in ("component", "from", "to", "set", "bump_sha256")}}
        return {"name": name, "patch_set_sha256": m["patch_set_sha256"], "series": m["series"],
                "applied": m["applied"], "patches_sha256": m["patches_sha256"]}
