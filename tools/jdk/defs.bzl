"""Macros for the pinned JDKs."""

load("@rules_python//python:defs.bzl", "py_test")

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
        deps = ["//tools/jdk:discovery"],
        size = "small",
    )
