"""Macros for rigs: a rig is one `rig_matrix` call plus its code."""

load("@rules_java//java:defs.bzl", "java_library")
load("@rules_python//python:defs.bzl", "py_binary", "py_library", "py_test")
load("//tools/fleet:defs.bzl", "matrix_bundle")
load("//tools/jdk:defs.bzl", "PINNED_JDK_JAVAS")
load("//tools/jdk:jdks.bzl", "MISSING_JDKS_AARCH64", "PINNED_JDKS_AARCH64")
load("//tools/maven:defs.bzl", "maven_jar_label")

# async-profiler's agent (its library for each platform inside) and converter, for policy.profile
# (rigs/matrix/knobs/profiling.py): files the runner uses, never on a classpath.
_PROFILER_JARS = {
    "agent": maven_jar_label("tools.profiler:async-profiler:4.6"),
    "converter": maven_jar_label("tools.profiler:jfr-converter:4.5"),
}

# What an aarch64 bundle carries instead of the build host's files (tools/fleet/defs.bzl: stand_ins).
_AARCH64_STAND_INS = [
    "@pypi_aarch64//:files",
    "//tools/container:rig_os_aarch64",
] + ["@%s_aarch64//:files" % name for name in PINNED_JDKS_AARCH64]

# Marks the filegroup each rig_matrix call makes of its rig's registration; rig_registry collects them.
_REGISTRATION_TAG = "rig_registration"

# Marks the py_library each rig_matrix call makes of its rig's code; rig_registry collects them too.
_RIG_CODE_TAG = "rig_code"

# Marks the filegroup each rig_matrix call makes of its workload's gate.toml; rig_registry collects them.
_GATE_TAG = "rig_gate_file"

def _java_classpath_impl(ctx):
    # An overlay's own jars come first, so its classes win over the same classes in the stock jars.
    first = [jar for o in ctx.attr.overlay for jar in o[JavaInfo].runtime_output_jars]
    jars = first + [jar for jar in ctx.attr.dep[JavaInfo].transitive_runtime_jars.to_list() if jar not in first]
    for o in ctx.attr.overlay:
        jars += [j for j in o[JavaInfo].transitive_runtime_jars.to_list() if j not in jars]
    out = ctx.actions.declare_file(ctx.label.name + ".classpath")

    # Paths relative to this file's folder, so the file works wherever the runfiles tree sits.
    up = "/".join([".."] * len(out.short_path.split("/")[:-1]))
    lines = [up + "/" + jar.short_path for jar in jars]
    ctx.actions.write(out, "\n".join(lines) + "\n")
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out] + jars))]

java_classpath = rule(
    implementation = _java_classpath_impl,
    doc = """A file listing a Java target's runtime classpath, one jar per line, relative to the file's own
folder; the jars come along in runfiles. For rigs that start a JVM of the matrix's choosing on a set's jars
(a deploy jar would merge 160 Hadoop jars and their clashing resources into one).""",
    attrs = {
        "dep": attr.label(mandatory = True, providers = [JavaInfo], doc = "the java_library or java_binary"),
        "overlay": attr.label_list(providers = [JavaInfo], doc = "java_libraries whose own jars go first (a patched build's classes before the stock jars')"),
    },
)

def rig_driver(name, srcs, maven, classpath, deps = [], runtime_deps = []):
    """A rig's JVM driver on one pinned Maven set, and the classpath its matrix passes its processes.

    A driver run on several sets (Hadoop versions, MapReduce's engines) is one call per set, in a list
    comprehension.

    Args:
      name: the java_library of `srcs`, compiled against the driver kit (//rigs/matrix:driver_kit: DriverArgs,
        JsonLine, Iterations) and `maven`.
      srcs: the driver's Java sources.
      maven: the pinned Maven set it compiles and runs against (a //tools/maven target).
      classpath: the name of the java_classpath of the library (its runtime jars, one per line), which the
        rig's rig_matrix call passes as rig_data.
      deps: the rig's own libraries the driver uses besides the kit and the set.
      runtime_deps: libraries needed only at run time.
    """
    java_library(
        name = name,
        srcs = srcs,
        runtime_deps = runtime_deps,
        deps = deps + ["//rigs/matrix:driver_kit", maven],
    )
    java_classpath(
        name = classpath,
        dep = ":" + name,
    )

def rig_matrix(
        name,
        rig,
        matrix,
        workload,
        rig_data = {},
        variants = {},
        smoke_profile = "smoke",
        smoke_size = "medium",
        extra_smoke_profiles = [],
        dockerd_smoke_profiles = [],
        watched_smoke_profiles = [],
        smoke_needs = {},
        smoke_sets = {},
        smoke_host_reference = False,
        aarch64_data = []):
    """A runnable matrix for one rig, with its tests.

    Creates:
      <name>: `bazel run` it to run the matrix (`-- --help` lists the options), then print the summary.
      <name>_dry_run_test: plans every profile's cells on this host (fast; no rig runs).
      <name>_smoke_test: runs the `smoke_profile` for real into a temporary folder and checks the stored
        results (tagged integration and exclusive: it measures, so it runs alone).
      <name>_rig_code: a py_library of the rig's code, which rig_registry collects.
      <name>.args: the arguments `bazel run` passes, one per line (runfiles-relative paths), for running the
        matrix elsewhere from a copy of its runfiles (e.g. inside //tools/guest's guest).
      <name>_bundle: <name>_bundle.tar.gz, the target with its runfiles and arguments as one archive for
        other hosts (//tools:fleet builds it when needed; tagged manual, it is large).
      <name>_bundle_aarch64: the same for aarch64 hosts: their JDKs, wheels, image and `aarch64_data`.

    Args:
      name: target name, e.g. "calibration_matrix".
      rig: the rig's py_library; its package must hold rig.py defining RIG.
      matrix: label of the matrix TOML file.
      workload: the workload's package, e.g. "//workloads/calibration": its `definition` filegroup
        (workload.toml and gate.toml) comes along in runfiles, and its folder is the workload.
      rig_data: {name: label} of files the rig needs at run time (e.g. {"jar": ":calibration_deploy.jar"}),
        passed to the rig as absolute paths.
      variants: {variant axis value: {name: label}}: each patched build's files, e.g.
        {"patched:nn-log-out-of-lock": {"classpath": "//third_party/hadoop:nn_log_out_of_lock_classpath",
        "manifest": "//third_party/hadoop:nn_log_out_of_lock_manifest"}}; `manifest` (the patch set's
        identity, third_party/hadoop/defs.bzl) is required, the others replace the rig_data of that name.
      smoke_profile: the profile the smoke test runs.
      smoke_size: test size of the real-run tests (the smoke test and each profile's below), or
        {profile: size} with "medium" for a profile it does not name: a size whose time range holds the test's
        wall time in CI (Bazel warns of a size too big or too small; tools/test_times.py prints which fits).
      extra_smoke_profiles: more profiles run for real the same way, each as <name>_<profile>_test.
      dockerd_smoke_profiles: profiles run the same way with a Docker engine the test starts for itself
        (executor=docker; its own data root, no bridge, no iptables), each as <name>_<profile>_test.
      watched_smoke_profiles: profiles run the same way while Debian's Prometheus (on loopback, started by
        the test) scrapes the run's live metrics endpoint (--metrics-port), each as <name>_<profile>_watched_test;
        the smoke profile among them is watched in <name>_smoke_test itself (one run, both checks).
      smoke_host_reference: whether <name>_smoke_test measures the host reference before and after its run
        (one probe, whatever the rig: one rig's smoke test proves it, the others skip its ~20 s).
      smoke_needs: {profile: [tag]}: what a profile's smoke test needs of its host beyond root, as tags that
        tools/cleanroom/cleanroom.sh knows (e.g. "needs-podman"); dockerd_smoke_profiles get "needs-dockerd".
      smoke_sets: {profile: ["AXIS=VALUE"]}: `--set`s its real-run test gives the runner (a cheaper way
        through what the test checks; the profile itself stays as users and committed sets run it).
      aarch64_data: the aarch64 builds of the rig's native files, each named as what it stands in for plus
        `_aarch64` (//third_party/redis:stock_aarch64 for :stock); a rig of jars needs none.
    """
    if not workload.startswith("//workloads/") or ":" in workload:
        fail("rig_matrix %s: workload = %r: give the workload's package, e.g. \"//workloads/calibration\"" % (name, workload))
    workload_toml = workload + ":workload.toml"
    data_args = ["--rig-data=%s=$(rootpath %s)" % (k, v) for k, v in sorted(rig_data.items())]
    args = [
        "--matrix=$(rootpath %s)" % matrix,
        "--workload=$(rootpath %s)" % workload_toml,
        "--bazel-target=//%s:%s" % (native.package_name(), name),
    ] + data_args + ["--profiler-jar=%s=$(rootpath %s)" % (k, v) for k, v in sorted(_PROFILER_JARS.items())]
    variant_labels = []
    for variant, files in sorted(variants.items()):
        for k, v in sorted(files.items()):
            args.append("--variant-data=%s=%s=$(rootpath %s)" % (variant, k, v))
            variant_labels.append(v)

    # The calibration program doubles as the host reference probe run before and after every matrix.
    probe = "//rigs/calibration:calibration_deploy.jar"

    # The rigs' container OS image, for cells with executor = container (rigs/matrix/knobs/container.py).
    container_os = ["//tools/container:rig_os.tar", "//tools/container:rig_os.tag"]

    # The committed sensitivity figures: the steal band of rerun_noisy_rounds comes from this build, not the checkout.
    stored = ["//results:schema", "//results:sensitivity_figures"]
    data = [matrix, workload_toml, workload + ":definition"] + rig_data.values() + variant_labels + PINNED_JDK_JAVAS + stored + container_os + _PROFILER_JARS.values()
    if probe not in rig_data.values():
        data.append(probe)
    deps = [rig, "//rigs/matrix:runner", "//analysis:summary_lib", "//analysis:indexer", "//results/db"]
    test_deps = deps + ["//rigs/matrix/testing:localserver"]  # the watched test's Prometheus

    # What the registry (//rigs:registry, rig_registry below) reads of this rig: its rig.toml, and the matrix
    # and workload the calibrator reads its gated profiles' designs from.
    native.filegroup(
        name = name + "_registration",
        srcs = [rig.rsplit(":", 1)[0] + ":rig.toml", matrix, workload_toml],
        tags = [_REGISTRATION_TAG],
    )
    native.filegroup(
        name = name + "_gate_file",
        srcs = [workload + ":gate.toml"],
        tags = [_GATE_TAG],
    )
    py_library(
        name = name + "_rig_code",
        deps = [rig],
        tags = [_RIG_CODE_TAG],
    )
    native.genrule(
        name = name + "_args",
        srcs = data,
        outs = [name + ".args"],
        cmd = "printf '%s\\n' " + " ".join(["'%s'" % a for a in args]) + " > $@",
    )
    py_binary(
        name = name,
        srcs = ["//rigs:main.py"],
        main = "//rigs:main.py",
        args = args,
        # Its own args file in its runfiles: run as another revision of a nightly (--revision), it is asked
        # which rig data it passes, never looked up by the candidate's paths (rigs/matrix/planning/cli.py).
        data = data + [":" + name + "_args"],
        deps = deps,
    )
    matrix_bundle(
        name = name + "_bundle",
        matrix = ":" + name,
        args = ":" + name + "_args",
        tags = ["manual"],
    )
    matrix_bundle(
        name = name + "_bundle_aarch64",
        matrix = ":" + name,
        args = ":" + name + "_args",
        machine = "aarch64",
        stand_ins = _AARCH64_STAND_INS + aarch64_data,
        missing = MISSING_JDKS_AARCH64,
        tags = ["manual"],
    )
    py_test(
        name = name + "_dry_run_test",
        # small: it asks the doctor (a JVM start per JDK, no collector probes) once per profile, ~15 profiles
        # for a big rig: 3-10 s (36-60 s while --no-gc-probes still started seven JVMs a JDK).
        size = "small",
        srcs = ["//rigs/matrix:rig_matrix_test.py", "//rigs:main.py"],
        main = "//rigs/matrix:rig_matrix_test.py",
        args = ["--mode=dry-run", "--"] + args,
        data = data,
        tags = ["e2e"],  # the runner planning every profile, a JVM start each: not in the quick tier
        deps = test_deps,
    )

    # The smoke profile, when it is also watched, is run once and checked both ways (issue 80: two real runs
    # of one profile asserted different things of the same kind of run).
    smoke_watched = smoke_profile in watched_smoke_profiles
    for test_name, profile, mode_args, needs in [
        (
            name + "_smoke_test",
            smoke_profile,
            (["--prometheus"] if smoke_watched else []) + (["--host-reference"] if smoke_host_reference else []),
            [],
        ),
    ] + [
        ("%s_%s_test" % (name, p), p, [], [])
        for p in extra_smoke_profiles
    ] + [
        ("%s_%s_test" % (name, p), p, ["--dockerd"], ["needs-dockerd"])
        for p in dockerd_smoke_profiles
    ] + [
        ("%s_%s_watched_test" % (name, p), p, ["--prometheus"], [])
        for p in watched_smoke_profiles
        if p != smoke_profile
    ]:
        py_test(
            name = test_name,
            size = smoke_size.get(profile, "medium") if type(smoke_size) == "dict" else smoke_size,
            srcs = ["//rigs/matrix:rig_matrix_test.py", "//rigs:main.py"],
            main = "//rigs/matrix:rig_matrix_test.py",
            args = ["--mode=smoke", "--profile=" + profile] + mode_args +
                   ["--set=" + s for s in smoke_sets.get(profile, [])] + ["--"] + args,
            data = data,
            deps = test_deps,
            tags = ["integration", "exclusive"] + needs + smoke_needs.get(profile, []),
        )

def rig_registry(name, visibility = None, gate_files_visibility = None):
    """The registry of every rig: call once, after the last rig_matrix call of the package.

    Args:
      name: the registry's name ("registry": rigs/registry.py).
      visibility: who may read it (the tools that read the registry).
      gate_files_visibility: who may read gate_files (what reads minimum effects outside a matrix target).

    Creates:
      <name>s: a filegroup of every rig_matrix's registration (the rig's rig.toml, its matrix.toml and its
        workload.toml), collected from the calls above it, so adding a rig adds no line here.
      <name>: the py_library rigs/registry.py with those files, for what reads the registry (the site, the
        calibrator, the gate's tests).
      <name>_rigs: a py_library of every rig's code (rigs.<rig>.rig), for what reads the rigs' declarations
        (the live dashboard, tools/grafana), collected the same way.
      gate_files: every rig's workload's gate.toml (minimum effects per metric), collected the same way, for
        what reads them outside a matrix target: the gate, the reports, the summary (//analysis:thresholds).
    """
    registrations = sorted([
        ":" + rule["name"]
        for rule in native.existing_rules().values()
        if rule["kind"] == "filegroup" and _REGISTRATION_TAG in rule.get("tags", [])
    ])
    native.filegroup(
        name = name + "s",
        srcs = registrations,
    )
    native.filegroup(
        name = "gate_files",
        srcs = sorted([
            ":" + rule["name"]
            for rule in native.existing_rules().values()
            if rule["kind"] == "filegroup" and _GATE_TAG in rule.get("tags", [])
        ]),
        visibility = gate_files_visibility,
    )
    py_library(
        name = name + "_rigs",
        deps = sorted([
            ":" + rule["name"]
            for rule in native.existing_rules().values()
            if rule["kind"] == "py_library" and _RIG_CODE_TAG in rule.get("tags", [])
        ]),
        visibility = visibility,
    )
    py_library(
        name = name,
        srcs = ["registry.py"],
        data = [":" + name + "s"],
        deps = ["//results:safeio"],
        visibility = visibility,
    )
