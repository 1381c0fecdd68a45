"""What a command that reads the profiler's recordings is given: a JDK and async-profiler's jfr-converter."""

load("//tools/maven:defs.bzl", "maven_jar_label")

_CONVERTER = maven_jar_label("tools.profiler:jfr-converter:4.5")

# The targets' data: the java that runs the converter, and the converter's jar.
PROFILE_TOOLS = [
    "@jdk17//:java",
    _CONVERTER,
]

# The targets' args: where the two are in the runfiles (--java, --converter).
PROFILE_TOOLS_ARGS = [
    "--java=$(rootpath @jdk17//:java)",
    "--converter=$(rootpath %s)" % _CONVERTER,
]
