"""Processes in containers (for the executor axis): podman runs a program in the rigs' OS image
(//tools/container:rig_os, an image archive loaded on first use; tagged by its content), with the CPU and memory-node sets
the matrix asks for, the runfiles mounted read-only at their own paths, and the host's network (servers
still bind to loopback only).

This VM's podman needs: the cgroupfs manager and a file event log (PID 1 is not systemd), the runc runtime
(crun refuses its hybrid cgroup tree), and explicit rlimits no higher than the current hard limits (root
here lacks CAP_SYS_RESOURCE). Those are the options below; they are harmless on other hosts.
"""

import json
import resource
import shutil
import subprocess
import time

PODMAN_OPTIONS = ["--cgroup-manager=cgroupfs", "--events-backend=file", "--runtime", "runc"]


class ContainerError(RuntimeError):
    pass


def podman():
    return shutil.which("podman")


def unavailable_reason():
    """Why this host cannot run containers, or None."""
    if not podman():
        return "podman is not installed (Debian: apt-get install --no-install-recommends podman runc)"
    if not shutil.which("runc"):
        return "runc is not installed (podman needs it on this host's cgroup tree; apt-get install runc)"
    return None


def _podman(*args, timeout=120):
    return subprocess.run([podman(), *PODMAN_OPTIONS, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)


def has_image(tag):
    return _podman("image", "exists", tag).returncode == 0


def ensure_image(archive, tag):
    """Loads the image archive (it carries `tag`) unless podman has the tag already; returns the image id."""
    if not has_image(tag):
        done = _podman("load", "--input", archive, timeout=600)
        if done.returncode != 0:
            raise ContainerError(f"podman load --input {archive} failed: {done.stderr.strip()[-500:]}")
        if not has_image(tag):
            raise ContainerError(f"podman load --input {archive} did not bring {tag} (it said: "
                                 f"{done.stdout.strip()[-300:]}); is the archive the one built with this tag?")
    inspected = _podman("image", "inspect", "--format", "{{.Id}}", tag)
    if inspected.returncode != 0:
        raise ContainerError(f"podman image inspect {tag}: {inspected.stderr.strip()[-300:]}")
    return inspected.stdout.strip()


# podman runs its monitor with at most this many processes (conmon's limit, podman 4.3.1), and runc, its
# child, may not raise it back.
PODMAN_NPROC_CAP = 32768


def rlimit_options():
    """--ulimit for open files and processes at the current limits (capped as podman caps them): the
    runtime sets rlimits explicitly and may not raise them."""
    out = []
    for name, which, cap in (("nofile", resource.RLIMIT_NOFILE, None),
                             ("nproc", resource.RLIMIT_NPROC, PODMAN_NPROC_CAP)):
        soft, hard = resource.getrlimit(which)
        if hard == resource.RLIM_INFINITY:
            hard = soft if soft != resource.RLIM_INFINITY else 1 << 20
        soft = hard if soft == resource.RLIM_INFINITY else soft
        if cap:
            soft, hard = min(soft, cap), min(hard, cap)
        out += ["--ulimit", f"{name}={soft}:{hard}"]
    return out


# Every cell container carries the host lock its runner held: a runner that takes the lock knows that
# any container with it is an orphan of a killed runner (SIGKILL reaches `podman run`, not the container).
HOST_LOCK_LABEL = "tunelab.host_lock"


def run_argv(name, tag, argv, workdir, env=None, read_only=(), cpus=None, mems=None, host_lock=None):
    """The podman command that runs argv in a new container `name` (removed when it ends)."""
    cmd = [podman(), *PODMAN_OPTIONS, "run", "--rm", "--name", name, "--network=host", "--init=false",
           *rlimit_options()]
    if host_lock:
        cmd += ["--label", f"{HOST_LOCK_LABEL}={host_lock}"]
    if cpus:
        cmd += ["--cpuset-cpus", cpus]
    if mems:
        cmd += ["--cpuset-mems", mems]
    for path in sorted(set(read_only)):
        cmd += ["-v", f"{path}:{path}:ro"]
    cmd += ["-v", f"{workdir}:{workdir}", "-w", workdir]
    for key, value in sorted((env or {}).items()):
        cmd += ["--env", f"{key}={value}"]
    return cmd + [tag, *argv]


def main_pid(name, timeout_s=30.0):
    """The host pid of the container's first process (what the evidence is read from), once it runs."""
    deadline = time.monotonic() + timeout_s
    while True:  # timeout_s 0: ask once
        done = _podman("inspect", "--format", "{{json .State}}", name)
        if done.returncode == 0:
            state = json.loads(done.stdout)
            if state.get("Pid"):
                return state["Pid"]
            if state.get("Status") in ("exited", "stopped"):
                raise ContainerError(f"container {name} ended before it could be inspected")
        if time.monotonic() >= deadline:
            raise ContainerError(f"container {name} not running after {timeout_s:.0f} s: {done.stderr.strip()[-300:]}")
        time.sleep(0.1)


def remove(name):
    """Stops and removes the container if it is still there (a runner killed mid-cell leaves it running:
    podman's monitor, not the runner, is its parent)."""
    _podman("rm", "--force", "--time", "2", name)


def container_prefix(run_id):
    """Every container of a run is named tl-<run id>-<cell>.r<rep>-<role>."""
    return f"tl-{run_id}-"


def remove_orphans(host_lock):
    """Removes the containers of runners that held `host_lock` before: the caller holds it now, so their
    runner is gone (killed, or its machine restarted) and they would run beside the new cells. Returns
    their names. Called when a run starts or resumes, before anything is measured."""
    if not podman():
        return []
    listed = _podman("ps", "--all", "--format", "{{.Names}}", "--filter", f"label={HOST_LOCK_LABEL}={host_lock}")
    names = listed.stdout.split()
    for name in names:
        remove(name)
    return names
