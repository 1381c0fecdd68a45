"""Repositories that let Debian's Bazel 4.2.3 build Java and Python with no access to Bazel's mirrors.

Bazel 4.2.3 fetches rules_cc, remote_java_tools_linux and remote_coverage_tools from GitHub the first
time a java or test rule is analysed. `offline_bazel_shims()` defines those names first (Bazel's
built-in definitions only fill names that are still free) with local stand-ins:

* rules_java, bazel_skylib: the copies Debian ships under /usr/share/bazel.
* rules_cc: wrappers around the native C++ rules (Bazel's own tools load it).
* rules_python: wrappers around the native Python rules, so BUILD files load py_* as with rules_python.
* remote_java_tools_{linux,darwin,windows}: JavaBuilder, singlejar, a JUnit 4 runner and a copying
  ijar, compiled from the Java sources in this folder with the host JDK when the repository is
  fetched. Only linux is real; the other two exist so that `bazel query` can resolve every select().
* remote_coverage_tools: a stub that refuses `bazel coverage`.

README.md beside this file says what is given up and how to drop all this on a Bazel with network access.
"""

_DEBIAN_BAZEL_SHARE = "/usr/share/bazel"

def _shim_repository_impl(rctx):
    """Lays out a repository from files of this workspace: {label: path in repo}."""
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)
    for label, path in rctx.attr.files.items():
        rctx.symlink(rctx.path(label), path)
    for package in rctx.attr.packages:
        rctx.file((package + "/" if package else "") + "BUILD.bazel", "package(default_visibility = [\"//visibility:public\"])\n")

shim_repository = repository_rule(
    implementation = _shim_repository_impl,
    attrs = {
        "files": attr.label_keyed_string_dict(mandatory = True, allow_files = True),
        "packages": attr.string_list(doc = "folders that get a BUILD file with public visibility"),
    },
    doc = "A repository made of files of this workspace, symlinked into place.",
)

_TOOL_SOURCES = [
    "Args.java",
    "Jars.java",
    "JavaBuilder.java",
    "SingleJar.java",
    "Unsupported.java",
]

def _run(rctx, args, what):
    result = rctx.execute(args, quiet = True)
    if result.return_code != 0:
        fail("offline_java_tools: %s failed (exit %d):\n%s%s" % (what, result.return_code, result.stdout, result.stderr))

def _offline_java_tools_impl(rctx):
    java_home = rctx.attr.java_home
    javac = rctx.path(java_home + "/bin/javac")
    jar = rctx.path(java_home + "/bin/jar")
    if not javac.exists:
        fail(("offline_java_tools: no javac at %s. The shim compiles Bazel's Java tools with a local " +
              "JDK 17: run ./bazelw (it installs openjdk-17-jdk-headless) or fix java_home in WORKSPACE.") % javac)
    src_root = rctx.path(rctx.attr.runner_source).dirname.dirname.dirname.dirname.dirname.dirname
    tools_src = src_root.get_child("tunelab").get_child("javatools")

    # Compile for Java 11 so the tools run on any JDK the project supports as a host JDK.
    _run(rctx, [javac, "--release", "11", "-nowarn", "-d", "classes/tools"] +
               [tools_src.get_child(f) for f in _TOOL_SOURCES], "compiling the Java tools")
    junit_classpath = ":".join([str(rctx.path(j)) for j in rctx.attr.junit_jars])
    _run(rctx, [
        javac,
        "--release",
        "11",
        "-nowarn",
        "-cp",
        junit_classpath,
        "-d",
        "classes/runner",
        rctx.path(rctx.attr.runner_source),
    ], "compiling the JUnit runner")

    rctx.file("java_tools/README", "Built by //third_party:offline.bzl from third_party/java_tools/src.\n")
    mains = {
        "JavaBuilder_deploy.jar": "tunelab.javatools.JavaBuilder",
        "bazel-singlejar_deploy.jar": "tunelab.javatools.SingleJar",
        "Unsupported_deploy.jar": "tunelab.javatools.Unsupported",
        "GenClass_deploy.jar": "tunelab.javatools.Unsupported",
        "turbine_deploy.jar": "tunelab.javatools.Unsupported",
        "turbine_direct_binary_deploy.jar": "tunelab.javatools.Unsupported",
        "JacocoCoverage_jarjar_deploy.jar": "tunelab.javatools.Unsupported",
    }
    for name, main in mains.items():
        _run(rctx, [
            jar,
            "--create",
            "--file",
            "java_tools/" + name,
            "--main-class",
            main,
            "-C",
            "classes/tools",
            ".",
        ], "packing " + name)
    _run(
        rctx,
        [jar, "--create", "--file", "java_tools/Runner_deploy.jar", "-C", "classes/runner", "."],
        "packing Runner_deploy.jar",
    )
    rctx.symlink(rctx.attr.ijar, "java_tools/ijar.sh")
    rctx.symlink(rctx.attr.build_file, "BUILD.bazel")
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)
    rctx.delete("classes")

offline_java_tools = repository_rule(
    implementation = _offline_java_tools_impl,
    attrs = {
        "java_home": attr.string(mandatory = True, doc = "A full JDK 17 (with javac and jar)."),
        "junit_jars": attr.label_list(mandatory = True, doc = "JUnit 4 and hamcrest jars to compile the runner against."),
        "runner_source": attr.label(
            default = "//third_party:java_tools/src/com/google/testing/junit/runner/BazelTestRunner.java",
            allow_single_file = True,
        ),
        "tool_sources": attr.label_list(
            # Listed so that editing a tool re-fetches the repository.
            default = ["//third_party:java_tools/src/tunelab/javatools/" + f for f in _TOOL_SOURCES],
        ),
        "ijar": attr.label(default = "//third_party:java_tools/ijar.sh"),
        "build_file": attr.label(default = "//third_party:java_tools/BUILD.repo"),
    },
    doc = "Bazel's java_tools, compiled from the sources in third_party/java_tools with a local JDK.",
)

# buildifier: disable=unnamed-macro (a WORKSPACE macro; the repositories it defines have fixed names)
def offline_bazel_shims(java_home, junit_jars):
    """Defines the repositories Bazel 4.2.3 would otherwise fetch from GitHub. Call it first in WORKSPACE.

    Args:
      java_home: a full JDK 17 used to compile the Java tools.
      junit_jars: labels of the JUnit 4 and hamcrest-core jars (from the Maven lock).
    """
    native.local_repository(name = "rules_java", path = _DEBIAN_BAZEL_SHARE + "/rules/java")
    native.local_repository(name = "bazel_skylib", path = _DEBIAN_BAZEL_SHARE + "/tools/skylib")
    shim_repository(
        name = "rules_cc",
        files = {
            "//third_party:rules_cc/defs.bzl": "cc/defs.bzl",
        },
        packages = ["", "cc"],
    )
    shim_repository(
        name = "rules_python",
        files = {
            "//third_party:rules_python/defs.bzl": "python/defs.bzl",
        },
        packages = ["", "python"],
    )
    for os in ("linux", "darwin", "windows"):
        offline_java_tools(
            name = "remote_java_tools_" + os,
            java_home = java_home,
            junit_jars = junit_jars,
        )
    shim_repository(
        name = "remote_coverage_tools",
        files = {
            "//third_party:coverage_tools/BUILD.repo": "BUILD.bazel",
            "//third_party:coverage_tools/unsupported.sh": "unsupported.sh",
        },
    )
