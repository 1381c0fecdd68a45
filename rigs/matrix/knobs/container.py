"""Processes in containers (for the executor axis): a container engine runs a program in the rigs' OS image
(//tools/container:rig_os, an image archive loaded on first use; tagged by its content), with the CPU and memory-node sets
the matrix asks for, the runfiles mounted read-only at their own paths, and the host's network (servers
still bind to loopback only). executor=container runs it with podman, executor=docker with Docker's engine
(the one DOCKER_HOST names, else the system's): the same image archive, which both load.

This VM's podman needs: the cgroupfs manager and a file event log (PID 1 is not systemd), the runc runtime
(crun refuses its hybrid cgroup tree), and explicit rlimits no higher than the current hard limits (root
here lacks CAP_SYS_RESOURCE). Those are the options below; they are harmless on other hosts.
"""

import dataclasses
import json
import os
import resource
import shutil
import subprocess
import time

from rigs.host.cpuid import cpu_set

PODMAN_OPTIONS = ["--cgroup-manager=cgroupfs", "--events-backend=file", "--runtime", "runc"]


class ContainerError(RuntimeError):
    pass


@dataclasses.dataclass(frozen=True)
class Engine:
    program: str
    options: tuple  # before the command
    remove: tuple  # the command that stops and removes a container, before its name
    cgroup_marker: str  # in the cgroup path of a process in one of its containers
    install: str  # how a Debian host gets it


# executor axis value -> its engine
ENGINES = {
    "container": Engine("podman", tuple(PODMAN_OPTIONS), ("rm", "--force", "--time", "2"), "libpod",
                        "apt-get install --no-install-recommends podman runc"),
    "docker": Engine("docker", (), ("rm", "--force"), "docker",
                     "apt-get install --no-install-recommends docker.io, and a running dockerd"),
}


def engine_of(executor):
    return ENGINES[executor]


def program(executor="container"):
    return shutil.which(engine_of(executor).program)


def podman():
    return program("container")


def unavailable_reason(executor="container"):
    """Why this host cannot run containers of that executor, or None."""
    engine = engine_of(executor)
    if not program(executor):
        return f"{engine.program} is not installed (Debian: {engine.install})"
    if not shutil.which("runc"):
        return f"runc is not installed ({engine.program} needs it on this host's cgroup tree; apt-get install runc)"
    if executor == "docker":
        try:
            info = _engine(executor, "info", "--format", "{{.ServerVersion}}", timeout=20)
        except subprocess.TimeoutExpired:
            return "docker info timed out: no Docker engine answers (start dockerd, or set DOCKER_HOST)"
        if info.returncode != 0:
            why = (info.stderr.strip().splitlines() or ["no answer"])[-1][:200]
            return f"no Docker engine answers ({why}); start dockerd, or set DOCKER_HOST"
    return None


def host_skip_reason(executor, numa_value, runner_image=""):
    """Why this host cannot run a cell with `executor` ("" when it can, and for executor=process)."""
    if executor not in ENGINES:
        return ""
    if runner_image:
        return (f"executor={executor}: this matrix runs in the rigs' image already (a fleet host with "
                "tunelab_runner=image), so its process cells are the containerized ones")
    reason = unavailable_reason(executor)
    if reason:
        return f"executor={executor}: {reason}"
    if numa_value == "weighted_interleave":
        return f"executor={executor} with numa=weighted_interleave is not supported (its helper is the host's Python)"
    return ""


def problems(executor, ev):
    """What the process under test shows against `executor` (evidence keys: role, process_status, containers
    {role: {engine, cgroups, cpuset_mems}}): it ran in its engine's container, on the memory nodes it was given."""
    if executor not in ENGINES:
        return []
    found = []
    placed = ev.get("containers", {}).get(ev.get("role"), {})
    engine = placed.get("engine", "podman")
    if not placed.get("cgroups"):
        found.append(f"executor={executor}: the process under test was not seen in a {engine} container "
                     f"(its cgroups: {placed.get('cgroups', placed.get('cgroups_error', 'not read'))})")
    mems = (ev.get("process_status") or {}).get("Mems_allowed_list")
    if placed.get("cpuset_mems") and (mems is None or cpu_set(mems) != cpu_set(placed["cpuset_mems"])):
        found.append(f"executor={executor}: --cpuset-mems {placed['cpuset_mems']} not in effect: Mems_allowed_list={mems}")
    return found


def _engine(executor, *args, timeout=120):
    engine = engine_of(executor)
    return subprocess.run([program(executor), *engine.options, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout)


def _podman(*args, timeout=120):
    return _engine("container", *args, timeout=timeout)


def has_image(tag, executor="container"):
    return _engine(executor, "image", "inspect", "--format", "{{.Id}}", tag).returncode == 0


def ensure_image(archive, tag, executor="container"):
    """Loads the image archive (it carries `tag`) unless the engine has the tag already; returns the image id."""
    name = engine_of(executor).program
    if not has_image(tag, executor):
        done = _engine(executor, "load", "--input", archive, timeout=600)
        if done.returncode != 0:
            raise ContainerError(f"{name} load --input {archive} failed: {done.stderr.strip()[-500:]}")
        if not has_image(tag, executor):
            raise ContainerError(f"{name} load --input {archive} did not bring {tag} (it said: "
                                 f"{done.stdout.strip()[-300:]}); is the archive the one built with this tag?")
    inspected = _engine(executor, "image", "inspect", "--format", "{{.Id}}", tag)
    if inspected.returncode != 0:
        raise ContainerError(f"{name} image inspect {tag}: {inspected.stderr.strip()[-300:]}")
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


def run_argv(name, tag, argv, workdir, env=None, read_only=(), cpus=None, mems=None, host_lock=None,
             executor="container"):
    """The engine's command that runs argv in a new container `name` (removed when it ends)."""
    cmd = [program(executor), *engine_of(executor).options, "run", "--rm", "--name", name, "--network=host",
           "--init=false", *rlimit_options()]
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


def main_pid(name, timeout_s=30.0, executor="container"):
    """The host pid of the container's first process (what the evidence is read from), once it runs."""
    deadline = time.monotonic() + timeout_s
    while True:  # timeout_s 0: ask once
        done = _engine(executor, "inspect", "--format", "{{json .State}}", name)
        if done.returncode == 0:
            state = json.loads(done.stdout)
            if state.get("Pid"):
                return state["Pid"]
            if state.get("Status") in ("exited", "stopped"):
                raise ContainerError(f"container {name} ended before it could be inspected")
        if time.monotonic() >= deadline:
            raise ContainerError(f"container {name} not running after {timeout_s:.0f} s: {done.stderr.strip()[-300:]}")
        time.sleep(0.1)


def remove(name, executor="container"):
    """Stops and removes the container if it is still there (a runner killed mid-cell leaves it running:
    the engine's monitor, not the runner, is its parent)."""
    _engine(executor, *engine_of(executor).remove, name)


def container_prefix(run_id):
    """Every container of a run is named tl-<run id>-<cell>.r<rep>-<role>."""
    return f"tl-{run_id}-"


def remove_orphans(host_lock):
    """Removes the containers of runners that held `host_lock` before: the caller holds it now, so their
    runner is gone (killed, or its machine restarted) and they would run beside the new cells. Returns
    their names. Called when a run starts or resumes, before anything is measured."""
    names = []
    for executor in ENGINES:
        if not program(executor):
            continue
        try:
            listed = _engine(executor, "ps", "--all", "--format", "{{.Names}}", "--filter",
                             f"label={HOST_LOCK_LABEL}={host_lock}", timeout=30)
        except subprocess.TimeoutExpired:
            continue  # an engine that does not answer runs no containers of ours
        for name in listed.stdout.split() if listed.returncode == 0 else []:
            remove(name, executor)
            names.append(name)
    return names


def image_in_runfiles(runfiles, runfiles_ws):
    """{tar, tag, mounts} of the rigs' OS image in this target's runfiles, or None. The mounts make the
    runfiles visible inside a container at their own paths: the tree and, when its entries are Bazel's
    symlinks, the output base they point into."""
    tar = os.path.join(runfiles_ws, "tools", "container", "rig_os.tar")
    if not os.path.exists(tar):
        return None
    with open(os.path.join(runfiles_ws, "tools", "container", "rig_os.tag")) as f:
        tag = f.read().strip()
    mounts = {runfiles}
    real = os.path.realpath(tar)
    if "/execroot/" in real:
        mounts.add(real.split("/execroot/")[0])
    return {"tar": tar, "tag": tag, "mounts": sorted(mounts)}
