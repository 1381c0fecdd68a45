"""Which bundle a fleet host gets: its machine (`uname -m`, asked over SSH before anything is shipped) and the
bundle built for that machine: //<package>:<name>_bundle for x86_64 hosts, <name>_bundle_aarch64 for aarch64
hosts (rigs/defs.bzl; their JDKs, wheels, Redis and image are that machine's). A host of any other machine is
reported with that reason before anything runs; the other hosts go on.
"""

import os
import platform
import re
import shutil
import subprocess

from tools.fleet.hostinput import FleetError

# uname -m -> the suffix of the bundle target built for it.
BUNDLE_SUFFIX = {"x86_64": "_bundle", "aarch64": "_bundle_aarch64"}
TARGET_RE = re.compile(r"^//([A-Za-z0-9_./-]*):([A-Za-z0-9_.-]+)$")


def read_machine(text):
    """A host's `uname -m` answer (untrusted), checked; raises FleetError naming what tunelab builds for."""
    machine = (text or "").strip()
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", machine):
        raise FleetError(f"its `uname -m` answered {machine[:40]!r}, not a machine name")
    if machine not in BUNDLE_SUFFIX:
        raise FleetError(f"machine {machine}: tunelab has no pinned JDK, Redis or image for it (it builds bundles "
                         f"for {', '.join(BUNDLE_SUFFIX)})")
    return machine


def controller_machine():
    return platform.machine()


def parse_bundle_option(values):
    """--bundle [MACHINE=]PATH ... -> {machine: absolute path}; a bare PATH is for the controller's machine."""
    bundles = {}
    for value in values or []:
        machine, sep, path = value.partition("=")
        if not sep or machine not in BUNDLE_SUFFIX:
            machine, path = controller_machine(), value
        if machine in bundles:
            raise FleetError(f"--bundle: two bundles for {machine}")
        bundles[machine] = os.path.abspath(path)
    return bundles


def build_bundle(workspace, target, machine):
    """Builds the target's bundle for `machine` with Bazel; returns (bundle path, args file path)."""
    m = TARGET_RE.fullmatch(target)
    if not m:
        raise FleetError(f"{target!r}: expected a label like //rigs:calibration_matrix")
    package, name = m.groups()
    label = f"//{package}:{name}{BUNDLE_SUFFIX[machine]}"
    bazel = shutil.which("bazel") or shutil.which("bazel-4.2.3")
    if not bazel:
        raise FleetError("bazel is not on PATH (run ./bazelw once)")
    build = subprocess.run([bazel, "build", "--color=no", "--curses=no", label, f"//{package}:{name}_args"],
                           cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if build.returncode != 0:
        raise FleetError(f"bazel build {label} failed:\n{build.stdout[-2000:]}")
    bin_dir = subprocess.run([bazel, "info", "bazel-bin"], cwd=workspace, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout.strip()
    return (os.path.join(bin_dir, package, f"{name}{BUNDLE_SUFFIX[machine]}.tar.gz"),
            os.path.join(bin_dir, package, f"{name}.args"))
