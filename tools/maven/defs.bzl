"""Turns the generated Maven lock (maven_lock.bzl) into Bazel repositories and targets.

WORKSPACE calls `maven_repositories()`: one `jvm_maven_import_external` per locked jar, each pinned by
sha256, so the repository cache serves every later build without the network.
tools/maven/BUILD.bazel calls `maven_sets()`: one `java_library` per set of artifacts.toml, exporting
the set's whole runtime closure (//tools/maven:hadoop_sls_3_4_2 and so on).
"""

load("@bazel_tools//tools/build_defs/repo:jvm.bzl", "jvm_maven_import_external")
load("//tools/maven:maven_lock.bzl", "MAVEN_LOCK")

def maven_repositories(server_urls, lock = MAVEN_LOCK):
    """Declares one external repository per jar of the lock.

    Args:
      server_urls: Maven repositories to download from, tried in order: `MAVEN_SERVER_URLS` of
        `@maven_server//:urls.bzl`, this machine's (tools/maven/maven_server.bzl).
      lock: the dict written by //tools/maven:lock.
    """
    for name, entry in lock["artifacts"].items():
        srcjar_sha256 = entry.get("srcjar_sha256", "")
        jvm_maven_import_external(
            name = name,
            artifact = entry["coordinates"],
            artifact_sha256 = entry["sha256"],
            fetch_sources = bool(srcjar_sha256),
            srcjar_sha256 = srcjar_sha256,
            licenses = ["notice"],
            server_urls = server_urls,
        )

def maven_jar_label(coordinates, lock = MAVEN_LOCK):
    """The label of one locked jar file, e.g. for tools that need the file itself.

    Args:
      coordinates: `group:artifact:version` as written in tools/maven/artifacts.toml.
      lock: the dict written by //tools/maven:lock.

    Returns:
      The label of the jar, `@<repository>//jar:file`.
    """
    for name, entry in lock["artifacts"].items():
        if entry["coordinates"] == coordinates:
            return "@%s//jar:file" % name
    fail("%s is not in the Maven lock; add it to tools/maven/artifacts.toml and run //tools/maven:lock" % coordinates)

# buildifier: disable=unnamed-macro (one call per lock; the targets are named after its sets)
def maven_sets(lock = MAVEN_LOCK, visibility = ["//visibility:public"]):
    """Declares one java_library per set, exporting the set's jars, plus `<set>_sources` filegroups.

    Args:
      lock: the dict written by //tools/maven:lock.
      visibility: visibility of the generated targets.
    """
    for set_name, repos in lock["sets"].items():
        native.java_library(
            name = set_name,
            exports = ["@%s" % r for r in repos],
            visibility = visibility,
        )
        sources = [r for r in repos if lock["artifacts"][r].get("srcjar_sha256")]
        if sources:
            native.filegroup(
                name = set_name + "_sources",
                srcs = ["@%s//:%s" % (r, _srcjar_name(lock["artifacts"][r]["coordinates"])) for r in sources],
                visibility = visibility,
            )

def _srcjar_name(coordinates):
    # jvm_import_external stores a fetched -sources jar as <artifact>-<version>-src.jar.
    parts = coordinates.split(":")
    return "%s-%s-src.jar" % (parts[1], parts[-1])

def maven_bump_manifest(name, component, from_version, to_version, maven_set, classes, classes_jar, lock = MAVEN_LOCK):
    """The manifest of a dependency bump (a `bump:<component>-<version>` variant of a rig_matrix).

    Writes <name>.json with the set's locked artifacts and sha256s (its identity in results) and the classes
    whose loading from `classes_jar` proves a cell ran on the new release (tools/maven/bump_manifest.py).

    Args:
      name: the target, a filegroup of the manifest.
      component: e.g. "hadoop".
      from_version: the release the rig's stock build is on, e.g. "3.4.2".
      to_version: the release of `maven_set`, e.g. "3.5.0".
      maven_set: a set of tools/maven/artifacts.toml, e.g. "hadoop_hdfs_bench_3_5_0".
      classes: fully qualified class names the cell must load.
      classes_jar: the jar file they must be loaded from, e.g. "hadoop-hdfs-3.5.0.jar".
      lock: the dict written by //tools/maven:lock.
    """
    if maven_set not in lock["sets"]:
        fail("%s is not a set of the Maven lock; add it to tools/maven/artifacts.toml and run //tools/maven:lock" % maven_set)
    artifacts = ["--artifact %s=%s" % (lock["artifacts"][r]["coordinates"], lock["artifacts"][r]["sha256"]) for r in lock["sets"][maven_set]]
    native.genrule(
        name = name + "_json",
        outs = [name + ".json"],
        cmd = " ".join(
            [
                "$(location //tools/maven:bump_manifest)",
                "--component %s --from %s --to %s --set %s" % (component, from_version, to_version, maven_set),
                "--classes-jar %s" % classes_jar,
                "--out $@",
            ] + artifacts + ["--class %s" % c for c in classes],
        ),
        tools = ["//tools/maven:bump_manifest"],
    )
    native.filegroup(name = name, srcs = [":%s.json" % name])
