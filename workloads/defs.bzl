"""The macro every workload package calls (workloads/<workload>/BUILD.bazel): README, "Add a rig", step 2."""

def workload_definition(name):
    """A workload's definition as rig_matrix (rigs/defs.bzl) takes it: the filegroup `definition`.

    It holds workload.toml (parameters, inputs, measurement policy) and gate.toml (minimum effects), so a
    matrix target's runfiles hold both. Both are exported too: //rigs:gate_files lists every gate.toml
    for what reads them outside a matrix target. (No workload pins input files yet; one that does lists them
    in this filegroup, or the runner's load_workload refuses the workload for its missing input.)

    Args:
      name: "definition", the name rig_matrix looks for (`workload = "//workloads/<workload>"`).
    """
    if name != "definition":
        fail("workload_definition(name = %r): rig_matrix takes //workloads/<workload>:definition; name it so" % name)

    # ceilings.toml (a workload's metric ceilings, analysis/ceilings.py) where the workload declares any.
    native.exports_files([
        "gate.toml",
        "workload.toml",
    ] + native.glob(["ceilings.toml"]))
    native.filegroup(
        name = name,
        srcs = [
            "gate.toml",
            "workload.toml",
        ] + native.glob(["ceilings.toml"]),
        visibility = ["//rigs:__pkg__"],
    )
