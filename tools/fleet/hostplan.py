"""One fleet host's plan (tools/fleet/fleet.py): every path and argument list the playbooks run there, from its
inventory variables and the fleet's state, and how its run is (re)started from what the host said of it. Pure:
nothing here talks to a host.
"""

import os
import sys

from rigs.host import hoststate
from tools.fleet import fleetmetrics
from tools.fleet.hostinput import REMOTE_PYTHON, FleetError

DEFAULT_ROOT = "/var/tmp/tunelab"
# Where a host's matrix runner runs (inventory variable tunelab_runner): on the host with its Python, or in
# the rigs' image (the bundle's, loaded into the host's podman), for hosts with nothing else installed.
RUNNERS = ("host", "image")

# The controller's copy of the work root check, run on the host with `python3 -c` (never the host's copy).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "work_root.py")) as _f:
    WORK_ROOT_SOURCE = _f.read()


def host_plan(host, hostvars, fleet_id, bundle_sha, manifest_sha, matrix_args, run_args, commit, state, metrics=None):
    """Every path and argument list the playbooks use for one host (they hold no logic of their own).
    bundle_sha names the bundle's folder; manifest_sha is its BUNDLE.sha256's digest, what the host's copy
    is checked against. metrics: {port, address} when the runs serve their live metrics (the host's
    `tunelab_metrics_port` and `tunelab_metrics_address` override them: tools/fleet/fleetmetrics.py)."""
    root = hostvars.get("tunelab_root", DEFAULT_ROOT)
    if not os.path.isabs(root):
        raise FleetError(f"{host}: tunelab_root {root!r} must be an absolute path")
    bundle_dir = f"{root}/bundles/{bundle_sha[:16]}"
    state_dir, results = f"{root}/fleet", f"{root}/results"
    runner = hostvars.get("tunelab_runner", "host")
    if runner not in RUNNERS:
        raise FleetError(f"{host}: tunelab_runner {runner!r}: expected one of {', '.join(RUNNERS)}")
    env = {"TUNELAB_HARNESS_COMMIT": commit, "TUNELAB_FLEET_HOST": host, "TUNELAB_FLEET_ID": fleet_id}
    host_state = hostvars.get("tunelab_state_dir") or hoststate.ROOT_STATE_DIR  # the lock and knob journal
    if not os.path.isabs(host_state):
        raise FleetError(f"{host}: tunelab_state_dir {host_state!r} must be an absolute path")
    if hostvars.get("tunelab_state_dir"):
        env[hoststate.STATE_DIR_ENV] = host_state
    if hostvars.get("tunelab_jdks"):
        env["TUNELAB_JDKS"] = hostvars["tunelab_jdks"]  # the host's own JDKs, NAME=PATH:NAME=PATH
    run_args = [*run_args, *fleetmetrics.runner_args(host, hostvars, metrics)]
    matrix = [f"{bundle_dir}/matrix", *matrix_args, *run_args, "--results-dir", results]
    remote_run = [REMOTE_PYTHON, f"{bundle_dir}/remote_run.py"]
    cwd = f"{bundle_dir}/matrix.runfiles/tunelab"
    # In the image, the runner sees the host's folders it needs at their own paths, and only those: the
    # bundle, the runs, the fleet's state (the plan is written there), the host state folder and a declared JDK's.
    mounts = [bundle_dir, results, state_dir, host_state] + [
        path.split("=", 1)[1] for path in env.get("TUNELAB_JDKS", "").split(":") if "=" in path]
    in_image = ["--cwd", cwd, f"--image-tag-file={cwd}/tools/container/rig_os.tag",
                *[f"--mount={m}" for m in mounts]] if runner == "image" else []
    run_id = state.run_id
    plan_argv = [*matrix, "--dry-run", "--plan-json", f"{state_dir}/{fleet_id}.plan.json"]
    if in_image:
        plan_argv = [*remote_run, "exec", *in_image, *[f"--env={k}={v}" for k, v in sorted(env.items())],
                     "--", *plan_argv]
    plan = {
        "runner": runner,
        # Ansible's own modules need 3.8; a runner on the host needs the wheels' CPython, in the image its own.
        "python_needed": "3.8" if in_image else f"{sys.version_info.major}.{sys.version_info.minor}",
        "python_argv": [REMOTE_PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        # root's own, mode 0700, made or checked before anything is written there (tools/fleet/work_root.py)
        "work_root_argv": [REMOTE_PYTHON, "-c", WORK_ROOT_SOURCE, "check", "--root", root,
                           *[f"--folder={f}" for f in (f"{root}/bundles", state_dir, results)], "--state-dir", host_state,
                           "--bundle-dir", bundle_dir, "--manifest-sha256", manifest_sha],
        "verify_argv": [REMOTE_PYTHON, "-c", WORK_ROOT_SOURCE, "verify", "--bundle-dir", bundle_dir,
                        "--manifest-sha256", manifest_sha],
        "host_state_dir": host_state,  # made 0700 and checked by work_root_argv before anything uses it
        "bundle_dir": bundle_dir, "cwd": cwd, "env": env,
        "image_argv": [*remote_run, "image", "--cwd", cwd] if in_image else [],
        "plan_file": f"{state_dir}/{fleet_id}.plan.json",
        "plan_argv": plan_argv,
        "status_argv": [*remote_run, "status", "--state", state_dir, "--run-id", run_id] if run_id else [],
        "start_argv": [], "wait_argv": [], "pack_argv": [], "archive": "",
    }
    if run_id:
        plan["wait_argv"] = [*remote_run, "wait", "--state", state_dir, "--run-id", run_id, "--interval-s", "10"]
        plan["pack_argv"] = [*remote_run, "pack", "--results", results, "--run-id", run_id,
                             "--out", f"{state_dir}/{run_id}.tar.gz"]
        plan["archive"] = f"{state_dir}/{run_id}.tar.gz"
        plan["matrix_argv"] = matrix
        plan["start_base"] = [*remote_run, "start", "--state", state_dir, "--run-id", run_id, "--cwd", plan["cwd"],
                              *in_image[2:], *[f"--env={k}={v}" for k, v in sorted(env.items())], "--", *matrix,
                              "--no-next-steps"]
    return plan


def start_argv(plan, run_state, run_id):
    """How the run must be (re)started, from what the host said about it: [] when it is running or has
    finished (then it is only watched and brought home)."""
    state = run_state.get("state", "absent")
    if state == "running" or (state == "finished" and run_state.get("exit_status") in (0, 1)):
        return []
    if state == "absent":
        return plan["start_base"] + ["--run-id", run_id]
    return plan["start_base"] + ["--resume", run_id]
