"""Macros for the pinned JDKs."""

load("@rules_python//python:defs.bzl", "py_test")
load("//tools/jdk:jdks.bzl", "PINNED_JDKS")

# The `java` of every pinned runtime, for targets that start rigs on them (found at run time in runfiles).
PINNED_JDK_JAVAS = ["@%s//:java" % name for name in PINNED_JDKS]

def jdk_version_test(name, major):
    """Runs @<name>//:java -version and asserts it reports Java `major`, with every GC probe recorded.

    Args:
      name: the JDK repository name (jdk11, jdk17, jdk21); the test is `<name>_version_test`.
      major: the Java major version the pinned wheel must report.
    """
    py_test(
        name = name + "_version_test",
        srcs = ["//tools/jdk:jdk_version_test.py"],
        main = "//tools/jdk:jdk_version_test.py",
        args = ["$(rootpath @%s//:java)" % name, str(major)],
        data = ["@%s//:java" % name],
        deps = ["//rigs/host:jdks"],
        size = "small",
    )
