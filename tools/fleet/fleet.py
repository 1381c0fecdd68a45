"""tunelab fleet: run one matrix on several hosts over SSH through Ansible, and bring every run home.

  bazel run //tools:fleet -- --inventory hosts.ini //rigs:calibration_matrix [--profile P] [--set AXIS=V ...]
  bazel run //tools:fleet -- --inventory hosts.ini --resume FLEET_ID

The inventory is an ordinary Ansible inventory; every host in it (or in --limit) is a fleet host. Per host:
check it (its Python; the matrix planned there with the doctor's report, so cells the host cannot express
stay skips with their reasons), ship the matrix bundle once (//<target>_bundle, kept there by its sha256),
start the matrix detached with the host's lock, wait on its marker file, pack the run and bring it home into
results/<inventory host>/<run>/ after checking it (tools/fleet/README.md). A host that drops out is
reported with its reason; `--resume FLEET_ID` continues it (the matrix resumes its stored run there) and
leaves hosts whose runs are home alone. Host variables: tunelab_root (default /var/tmp/tunelab: bundles,
runs and markers), tunelab_state_dir (default: the runner's, /var/lib/tunelab: the host lock, one matrix
per host, and the knob journal; only root may write it). Exit: 0 every host's run
is home and complete; 1 some host failed or dropped out (resume it); 2 bad input.
"""

import argparse
import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from results import resultfile, runarchive, store
from rigs.matrix import hoststate, inputs

HERE = os.path.dirname(os.path.abspath(__file__))
PLAYBOOKS = os.path.join(HERE, "playbooks")
DEFAULT_ROOT = "/var/tmp/tunelab"
REMOTE_PYTHON = "/usr/bin/python3"  # the bundle's launcher names this interpreter (tools/python/BUILD.bazel)
EXIT_OK, EXIT_HOSTS_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
TARGET_RE = re.compile(r"^//([A-Za-z0-9_./-]*):([A-Za-z0-9_.-]+)$")
FLEET_ID_RE = re.compile(r"^fleet-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}$")
# Where a host's matrix runner runs (inventory variable tunelab_runner): on the host with its Python, or in
# the rigs' image (the bundle's, loaded into the host's podman), for hosts with nothing else installed.
RUNNERS = ("host", "image")
# Hosts in these states need nothing more; the others are (re)started or watched by --resume.
FINAL = ("home",)


class FleetError(ValueError):
    pass


MAX_PLAN_BYTES = 16 << 20
# What the controller reads of a host's plan (rigs/matrix/planview.py plan_document); the rest is shown only
# through escape(). A host is untrusted: a plan that does not fit fails that host, never the fleet.
_NAME = {"type": "string", "minLength": 1, "maxLength": 200}
PLAN_SCHEMA = {
    "type": "object",
    "required": ["estimated_s", "cells", "doctor"],
    "properties": {
        "estimated_s": {"type": "number", "minimum": 0, "maximum": 10 * 365 * 86400},
        "cells": {"type": "array", "maxItems": 100000, "items": {
            "type": "object", "required": ["id", "skip_reason"],
            "properties": {"id": _NAME, "skip_reason": {"type": ["string", "null"], "maxLength": 20000}}}},
        "doctor": {"type": "object", "required": ["host", "cpu"], "properties": {
            "host": {"type": "object", "required": ["host_id"], "properties": {
                "host_id": {"type": "string", "pattern": store.HOST_FOLDER_RE.pattern}}},
            "cpu": {"type": "object", "properties": {"online_cpus": {"type": ["integer", "string", "null"]}}},
            "numa": {"type": "object", "properties": {"nodes": {"type": ["array", "null"], "maxItems": 4096}}}}},
    },
}


def read_plan(path):
    """A host's plan.json, as untrusted input: size cap, strict JSON, bounded depth, PLAN_SCHEMA."""
    size = os.path.getsize(path)
    if size > MAX_PLAN_BYTES:
        raise FleetError(f"its plan is {size} bytes, over the {MAX_PLAN_BYTES}-byte limit")
    with open(path, "rb") as f:
        try:
            doc = resultfile.parse_json(f.read(MAX_PLAN_BYTES + 1), MAX_PLAN_BYTES)
        except resultfile.ResultError as e:
            raise FleetError(f"its plan is not usable: {e}") from None
    problem = resultfile.schema_problem(PLAN_SCHEMA, doc)
    if problem:
        raise FleetError(f"its plan does not fit at {problem}")
    return doc


def host_json(text, what):
    """A JSON object a host printed (a remote_run status), or FleetError."""
    try:
        doc = resultfile.parse_json(text.encode(), 1 << 20)
    except resultfile.ResultError as e:
        raise FleetError(f"{what}: {e}") from None
    if not isinstance(doc, dict):
        raise FleetError(f"{what}: not a JSON object")
    return doc


@dataclasses.dataclass
class HostState:
    run_id: str = ""
    status: str = "new"  # new, planned, skipped, running, interrupted, dropped, failed, home
    error: str = ""
    run_dir: str = ""
    host_id: str = ""

    def to_json(self):
        return dataclasses.asdict(self)


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def new_fleet_id():
    return "fleet-" + inputs.new_run_id()


ANSIBLE_CLIS = {"ansible-playbook": "ansible.cli.playbook", "ansible-inventory": "ansible.cli.inventory"}


MAX_FILE_BYTES_ENV = "TUNELAB_MAX_FILE_BYTES"


def write_cli_launchers(folder):
    """ansible-runner starts Ansible's command-line tools as programs; the locked wheels are importable here
    (PYTHONPATH) but their console scripts are not part of the runfiles, so the two it needs are written.

    Each caps the size of any file it or its children write (RLIMIT_FSIZE, from $TUNELAB_MAX_FILE_BYTES):
    what a host sends (its plan, its run's archive, fetched by sftp, scp or Ansible itself) can never be
    larger than that on this disk, whatever the host said its size was. Python and its children ignore
    SIGXFSZ, so an oversized write fails with EFBIG and the fetch task fails for that host alone."""
    os.makedirs(folder, exist_ok=True)
    for name, module in ANSIBLE_CLIS.items():
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write(f"#!{sys.executable}\n# written by tools/fleet/fleet.py\nimport os, resource, sys\n"
                    f"cap = int(os.environ.get({MAX_FILE_BYTES_ENV!r}) or 0)\n"
                    "if cap:\n    resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))\n"
                    f"from {module} import main\nsys.exit(main())\n")
        os.chmod(path, 0o755)
    return folder


def ansible_env(work, site_bin, control):
    """Environment for ansible-playbook and ansible-inventory: their own home and temp folders under `work`,
    SSH connections shared through sockets in `control`, keep-alives so a host that drops out is noticed
    within a minute, no retry files."""
    return {
        "PATH": site_bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
        "ANSIBLE_HOME": os.path.join(work, "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": os.path.join(work, "ansible-tmp"),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": control,
        "ANSIBLE_SSH_ARGS": "-C -o ControlMaster=auto -o ControlPersist=60s -o ServerAliveInterval=15 "
                            "-o ServerAliveCountMax=4 -o ConnectTimeout=15",
        "ANSIBLE_RETRY_FILES_ENABLED": "false",
        "ANSIBLE_NOCOLOR": "true",
        # The interpreter the bundle needs anyway; discovery could pick another one (a pyenv shim, say).
        # An inventory's ansible_python_interpreter still wins for Ansible's own modules.
        "ANSIBLE_PYTHON_INTERPRETER": REMOTE_PYTHON,
        "ANSIBLE_DEPRECATION_WARNINGS": "false",
        MAX_FILE_BYTES_ENV: str(runarchive.MAX_ARCHIVE_BYTES),  # the launchers' cap on every file written
    }


def load_inventory(path, env):
    """{host: hostvars} of every host in the inventory, read by Ansible itself (ansible-inventory)."""
    import ansible_runner
    out, err = ansible_runner.get_inventory(action="list", inventories=[os.path.abspath(path)],
                                            response_format="json", quiet=True, envvars=env)
    if not isinstance(out, dict):
        raise FleetError(f"{path}: Ansible could not read the inventory: {(err or out or '').strip()[-500:]}")
    hostvars = out.get("_meta", {}).get("hostvars", {})
    hosts = set(hostvars)
    for group, body in out.items():
        if isinstance(body, dict):
            hosts.update(body.get("hosts", []))
    if not hosts:
        raise FleetError(f"{path}: no hosts in the inventory")
    return {h: hostvars.get(h, {}) for h in sorted(hosts)}


def read_args_file(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def host_plan(host, hostvars, fleet_id, bundle_sha, matrix_args, run_args, commit, state):
    """Every path and argument list the playbooks use for one host (they hold no logic of their own)."""
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
        "folders": [root, f"{root}/bundles", state_dir, results],
        "host_state_dir": host_state,  # created 0700 before the runner (or its image's mount) needs it
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


class Playbook:
    """One ansible-runner run of a playbook over the fleet; collects per-host outcomes from its events."""

    def __init__(self, work, name, env, on_event=None):
        self.work, self.name, self.env, self.on_event = work, name, env, on_event
        self.errors = {}  # host -> message
        self.ok = {}  # host -> {task name: result}
        self.result = None

    def handle(self, event):
        data = event.get("event_data") or {}
        host, task, res = data.get("host"), data.get("task"), data.get("res") or {}
        if not isinstance(res, dict):  # what a module on the host returned: anything
            res = {"msg": str(res)[:300]}
        kind = event.get("event")
        try:
            if kind == "runner_on_ok" and host:
                self.ok.setdefault(host, {})[task] = res
            elif kind in ("runner_on_failed", "runner_on_unreachable") and host and not data.get("ignore_errors"):
                self.errors[host] = describe_failure(kind, task, res)
            if self.on_event:
                self.on_event(kind, host, task, res)
        except Exception as e:  # noqa: BLE001 - ansible-runner would stop every host's run on it
            if host:
                self.errors[host] = f"{task}: the controller could not handle its result ({type(e).__name__}: {e})"
        return True

    def run(self, inventory, hosts, fleet_vars):
        import ansible_runner
        # A fresh folder per playbook run: ansible-runner keeps the inputs it was given (env/envvars, whose
        # PATH names this process' temporary launchers) and would reuse them in a later run.
        ident = f"{self.name}-{time.strftime('%Y%m%dT%H%M%S')}"
        private = os.path.join(self.work, "ansible", ident)
        os.makedirs(private, exist_ok=True)
        result = self.result = ansible_runner.run(
            private_data_dir=private, ident=ident,
            playbook=os.path.join(PLAYBOOKS, self.name + ".yml"), inventory=os.path.abspath(inventory),
            limit=",".join(hosts), forks=max(5, len(hosts)), extravars={"fleet": fleet_vars}, envvars=self.env,
            quiet=True,
            event_handler=self.handle, rotate_artifacts=0)
        missing = [h for h in hosts if h not in self.errors and h not in self.ok]
        if missing:
            # Ansible stopped before any task ran (a playbook or inventory error): its own last words.
            try:
                with open(os.path.join(result.config.artifact_dir, "stdout"), errors="replace") as f:
                    tail = " | ".join(line.strip() for line in f.read().strip().splitlines()[-6:] if line.strip())
            except OSError:
                tail = ""
            for host in missing:
                self.errors[host] = (f"no result from Ansible (status {result.status}): {tail[-600:]} "
                                     f"(log: {result.config.artifact_dir})")
        return result


def runner_error(stdout):
    """The matrix runner's own error message in a command's output ("error: ..." to the end, its wrapped
    lines joined; remote_run's closing JSON line left out), or ''."""
    lines = [line.strip() for line in stdout.strip().splitlines()]
    starts = [i for i, line in enumerate(lines) if line.lower().startswith("error:")]
    if not starts:
        return ""
    return " ".join(line for line in lines[starts[-1]:] if line and not line.startswith("{"))


def describe_failure(kind, task, res):
    text_of = lambda key: str(res.get(key) or "")[-4000:]  # noqa: E731 - a host's words, any type, bounded
    if kind == "runner_on_unreachable":
        return f"unreachable over SSH: {text_of('msg').strip()}"
    msg = text_of("msg").strip()
    detail = (text_of("stderr") or text_of("module_stderr")).strip().splitlines()
    said = runner_error(text_of("stdout"))
    if said:
        detail = [said]
    text = msg if not detail else f"{msg}: {detail[-1]}" if msg and msg != "non-zero return code" else detail[-1]
    if task == "python":
        return f"no usable {REMOTE_PYTHON} (the host needs CPython; {text})"
    return f"{task}: {text or json.dumps(res)[:300]}"


class Fleet:
    def __init__(self, args, console, workspace):
        self.args, self.console, self.workspace = args, console, workspace
        self.results_root = args.results_dir or os.path.join(workspace, "results")

    # -- the fleet run's state, one JSON file, rewritten atomically after every change --
    def state_path(self, fleet_id):
        return os.path.join(self.results_root, ".fleet", fleet_id, "fleet.json")

    def save(self):
        doc = dict(self.meta, hosts={h: s.to_json() for h, s in self.hosts.items()}, updated_at=now_iso())
        store.write_fleet_state(self.results_root, self.fleet_id, doc)

    def load_or_create(self, inventory_hosts):
        a = self.args
        if a.resume:
            if not FLEET_ID_RE.match(a.resume):
                raise FleetError(f"--resume {a.resume!r}: expected a fleet id such as fleet-20261124T101500Z-1a2b")
            path = self.state_path(a.resume)
            try:
                with open(path) as f:
                    doc = json.load(f)
            except (OSError, ValueError) as e:
                raise FleetError(f"cannot resume {a.resume}: {path}: {e}") from None
            for key, given in (("target", a.target), ("profile", a.profile), ("overrides", a.set or None)):
                if given is not None and given != doc[key]:
                    raise FleetError(f"--resume {a.resume}: it ran {key} {doc[key]!r}, not {given!r}; a resumed "
                                     "fleet run keeps its matrix (start a new one instead)")
            self.fleet_id = a.resume
            self.hosts = {h: HostState(**s) for h, s in doc.pop("hosts").items()}
            doc.pop("updated_at", None)
            self.meta = doc
            unknown = sorted(set(self.hosts) - set(inventory_hosts))
            if unknown:
                raise FleetError(f"--resume {a.resume}: host(s) {', '.join(unknown)} are no longer in the inventory")
        else:
            if not a.target:
                raise FleetError("give the matrix target (e.g. //rigs:calibration_matrix) or --resume FLEET_ID")
            self.fleet_id = new_fleet_id()
            chosen = self.chosen_hosts(inventory_hosts)
            for host in chosen:
                try:
                    store.check_host_folder(self.results_root, host)
                except store.StoreError as e:
                    raise FleetError(f"inventory host {host[:80]!r} cannot name a results folder: {e}; "
                                     "rename it in the inventory (ansible_host keeps its address)") from None
            self.hosts = {h: HostState() for h in chosen}
            self.meta = {"fleet_id": self.fleet_id, "target": a.target, "profile": a.profile,
                         "overrides": a.set, "inventory": os.path.abspath(a.inventory), "bundle_sha256": "",
                         "created_at": now_iso()}

    def chosen_hosts(self, inventory_hosts):
        if not self.args.limit:
            return list(inventory_hosts)
        wanted = [h.strip() for h in self.args.limit.split(",") if h.strip()]
        missing = [h for h in wanted if h not in inventory_hosts]
        if missing:
            raise FleetError(f"--limit: {', '.join(missing)} not in the inventory ({', '.join(inventory_hosts)})")
        return wanted

    # -- the bundle --
    def bundle(self):
        if bool(self.args.bundle) != bool(self.args.args_file):
            raise FleetError("--bundle and --args-file go together")
        if self.args.bundle:
            return self.check_bundle(os.path.abspath(self.args.bundle)), read_args_file(self.args.args_file)
        return self.build_bundle()

    def check_bundle(self, bundle):
        from tools.digest import sha256_of
        sha = sha256_of(bundle)
        if self.meta["bundle_sha256"] and self.meta["bundle_sha256"] != sha:
            raise FleetError(f"the build of {self.meta['target']} changed since fleet run {self.fleet_id} started "
                             f"(bundle {self.meta['bundle_sha256'][:12]} then, {sha[:12]} now): a resumed run must "
                             "run the same build; check out that commit or start a new fleet run")
        self.meta["bundle_sha256"] = sha
        self.console.print(f"bundle {sha[:12]}: {os.path.getsize(bundle) / 2**20:.0f} MiB")
        return bundle

    def build_bundle(self):
        m = TARGET_RE.match(self.meta["target"])
        if not m:
            raise FleetError(f"{self.meta['target']!r}: expected a label like //rigs:calibration_matrix")
        package, name = m.groups()
        bundle_label = f"//{package}:{name}_bundle"
        self.console.print(f"building {bundle_label} (the matrix, its runfiles and JDKs as one archive)")
        bazel = shutil.which("bazel") or shutil.which("bazel-4.2.3")
        if not bazel:
            raise FleetError("bazel is not on PATH (run ./bazelw once)")
        build = subprocess.run([bazel, "build", "--color=no", "--curses=no", bundle_label,
                                f"//{package}:{name}_args"], cwd=self.workspace,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if build.returncode != 0:
            raise FleetError(f"bazel build {bundle_label} failed:\n{build.stdout[-2000:]}")
        bin_dir = subprocess.run([bazel, "info", "bazel-bin"], cwd=self.workspace, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True).stdout.strip()
        bundle = os.path.join(bin_dir, package, f"{name}_bundle.tar.gz")
        args_file = os.path.join(bin_dir, package, f"{name}.args")
        return self.check_bundle(bundle), read_args_file(args_file)

    def commit(self):
        def git(*a):
            return subprocess.run(["git", "-C", self.workspace, *a], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True).stdout.strip()
        sha = git("rev-parse", "HEAD") or "unknown"
        return sha + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")

    # -- the phases --
    def fleet_vars(self, bundle, matrix_args, inventory):
        run_args = (["--profile", self.meta["profile"]] if self.meta["profile"] else []) + [
            f"--set={s}" for s in self.meta["overrides"] or []]
        commit = self.meta.setdefault("commit", self.commit())
        hosts = {h: host_plan(h, inventory[h], self.fleet_id, self.meta["bundle_sha256"], matrix_args, run_args,
                              commit, s) for h, s in self.hosts.items()}
        return {"bundle": bundle, "bundle_sha256": self.meta["bundle_sha256"], "hosts": hosts,
                "staging": os.path.join(os.path.dirname(self.state_path(self.fleet_id)), "incoming"),
                "max_archive_bytes": runarchive.MAX_ARCHIVE_BYTES}

    def check(self, inventory, todo, fleet_vars, env):
        self.console.print(f"checking {len(todo)} host(s): Python, bundle, plan ({', '.join(todo)})")
        pb = Playbook(os.path.dirname(self.state_path(self.fleet_id)), "check", env)
        pb.run(self.args.inventory, todo, fleet_vars)
        plans, run_states = {}, {}
        for host in todo:
            state = self.hosts[host]
            if host in pb.errors:
                state.status, state.error = "failed", pb.errors[host]
                continue
            try:
                plans[host] = read_plan(os.path.join(fleet_vars["staging"], host, "plan.json"))
                state.host_id = plans[host]["doctor"]["host"]["host_id"]
                run_state = pb.ok.get(host, {}).get("run state")
                run_states[host] = (host_json(run_state["stdout"], "its run state")
                                    if isinstance(run_state, dict) and run_state.get("stdout") else {})
            except (OSError, FleetError) as e:
                plans.pop(host, None)
                state.status, state.error = "failed", f"no usable plan came back: {e}"
                continue
            runnable = [c for c in plans[host]["cells"] if not c["skip_reason"]]
            if not runnable:
                state.status, state.error = "skipped", "this host can run none of the cells (see the plan)"
            elif state.status in ("new", "failed"):
                state.status, state.error = "planned", ""
        self.save()
        self.print_plans(plans)
        return plans, run_states

    def print_plans(self, plans):
        t = Table(title=f"Fleet {self.fleet_id}: {self.meta['target']} (profile {self.meta['profile'] or 'default'})")
        for col in ("host", "host id", "CPUs", "NUMA nodes", "cells", "to run", "skipped", "estimate"):
            t.add_column(col, overflow="fold")
        for host, state in self.hosts.items():
            plan = plans.get(host)
            if plan is None:
                t.add_row(escape(host), escape(state.host_id or "?"), "-", "-", "-", "-", "-",
                          f"{state.status} (below)")
                continue
            doctor = plan["doctor"]
            cells = plan["cells"]
            skipped = [c for c in cells if c["skip_reason"]]
            t.add_row(escape(host), escape(doctor["host"]["host_id"]), escape(str(doctor["cpu"].get("online_cpus", "?"))),
                      str(len((doctor.get("numa") or {}).get("nodes") or [])), str(len(cells)),
                      str(len(cells) - len(skipped)), str(len(skipped)),
                      str(datetime.timedelta(seconds=round(plan["estimated_s"]))))
        self.console.print(t)
        for host, plan in plans.items():
            reasons = {}
            for c in plan["cells"]:
                if c["skip_reason"]:
                    reasons[c["skip_reason"]] = reasons.get(c["skip_reason"], 0) + 1
            for reason, count in sorted(reasons.items()):
                self.console.print(f"  {escape(host)}: {count} cell(s) skipped: {escape(reason)}")

    def run(self, inventory, todo, fleet_vars, run_states, plans, env):
        for host in todo:
            state = self.hosts[host]
            if not state.run_id:
                state.run_id = inputs.new_run_id()
        fleet_vars = self.fleet_vars(fleet_vars["bundle"], self.matrix_args, inventory)
        for host in todo:
            plan = fleet_vars["hosts"][host]
            plan["start_argv"] = start_argv(plan, run_states.get(host, {}), self.hosts[host].run_id)
            self.hosts[host].status = "running"
        self.save()
        total = sum(plans[h]["estimated_s"] for h in todo)
        self.console.print(f"running on {len(todo)} host(s) at once; longest plan "
                           f"{datetime.timedelta(seconds=max(plans[h]['estimated_s'] for h in todo))} "
                           f"(all hosts' cells: {datetime.timedelta(seconds=total)})")
        started = time.monotonic()

        def on_event(kind, host, task, res):
            if not host or host not in self.hosts:
                return
            elapsed = datetime.timedelta(seconds=round(time.monotonic() - started))
            try:
                if kind == "runner_on_ok" and task == "start":
                    self.console.print(f"[{elapsed}] {escape(host)}: started run {self.hosts[host].run_id}")
                elif kind == "runner_on_ok" and task == "bring the run home":
                    self.bring_home(host, fleet_vars, elapsed)
                elif kind in ("runner_on_failed", "runner_on_unreachable"):
                    self.console.print(f"[{elapsed}] [red]{escape(host)}[/red]: "
                                       f"{escape(describe_failure(kind, task, res))}")
            except Exception as e:  # noqa: BLE001 - one host's event must never stop the others' runs
                self.host_crashed(host, f"handling its {task!r} event", e)

        pb = Playbook(os.path.dirname(self.state_path(self.fleet_id)), "run", env, on_event)
        pb.run(self.args.inventory, todo, fleet_vars)
        for host in todo:
            state = self.hosts[host]
            if state.status != "running":
                continue  # decided while the playbook ran: home, or its archive refused (with that reason)
            error = pb.errors.get(host, "") or (
                f"Ansible ended (status {pb.result.status}, exit {pb.result.rc}) before this host's run came home; "
                f"log: {pb.result.config.artifact_dir}")
            if "unreachable" in error:
                state.status = "dropped"
            elif error.startswith("finished:"):
                state.status = "interrupted"
            else:
                state.status = "failed"
            state.error = error
        self.save()

    def bring_home(self, host, fleet_vars, elapsed):
        state = self.hosts[host]
        archive = os.path.join(fleet_vars["staging"], host, "run.tar.gz")
        expect = {"run_id": state.run_id, "fleet": {"host": host, "fleet_id": self.fleet_id}}
        try:
            target, added, refreshed = runarchive.unpack_run(archive, self.results_root, host_folder=host,
                                                             expect=expect)
            manifest = store.load_manifest(os.path.join(target, "manifest.json"))
        except (runarchive.ArchiveError, store.StoreError, OSError) as e:
            state.status, state.error = "failed", f"the archive brought home was refused: {e}"
            self.console.print(f"[{elapsed}] [red]{escape(host)}[/red]: {escape(state.error)}")
            self.save()
            return
        finally:
            if os.path.exists(archive):
                os.unlink(archive)  # checked and stored, or refused: never kept in staging
        if manifest["state"] != "complete":
            state.status, state.error = "interrupted", f"the run came home {manifest['state']}"
        else:
            state.status, state.error = "home", ""
        state.run_dir = target
        self.save()
        self.console.print(f"[{elapsed}] {escape(host)}: run {state.run_id} home ({len(added)} file(s) new, "
                           f"{len(refreshed)} refreshed) -> {escape(target)}")

    def host_crashed(self, host, doing, error):
        """An unexpected error while handling one host: that host fails (with the traceback in the fleet's
        log), the others go on."""
        import traceback
        log = os.path.join(os.path.dirname(self.state_path(self.fleet_id)), "errors.log")
        with open(log, "a") as f:
            f.write(f"{now_iso()} {host}: {doing}\n{traceback.format_exc()}\n")
        state = self.hosts[host]
        state.status, state.error = "failed", f"{doing}: {type(error).__name__}: {str(error)[:300]} (traceback: {log})"
        self.console.print(f"[red]{escape(host)}[/red]: {escape(state.error)}")
        try:
            self.save()
        except Exception:  # noqa: BLE001 - the state is saved again at the end
            pass

    def summary(self):
        t = Table(title=f"Fleet {self.fleet_id}")
        for col in ("host", "run", "status", "results / reason"):
            t.add_column(col, overflow="fold")
        for host, s in self.hosts.items():
            colour = "green" if s.status == "home" else "yellow" if s.status == "skipped" else "red"
            t.add_row(escape(host), s.run_id or "-", f"[{colour}]{s.status}[/{colour}]",
                      escape(os.path.relpath(s.run_dir, self.workspace) if s.run_dir else s.error))
        self.console.print(t)
        home = [s for s in self.hosts.values() if s.status == "home"]
        if len(home) >= 2:
            self.console.print("compare two hosts: bazel run //analysis:report -- "
                               f"{home[0].run_id} {home[1].run_id} --kind cross-host --out cross-host.pdf")
        if any(s.status not in FINAL + ("skipped",) for s in self.hosts.values()):
            self.console.print(f"continue the hosts not home with: bazel run //tools:fleet -- --inventory "
                               f"{self.args.inventory} --resume {self.fleet_id}")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Exit status: 0 every host's run is home; 1 some host failed or dropped "
                                            "out (resume it); 2 bad input.")
    parser.add_argument("--inventory", required=True, help="an Ansible inventory (INI or YAML)")
    parser.add_argument("target", nargs="?", help="a rig_matrix target, e.g. //rigs:calibration_matrix")
    parser.add_argument("--profile", help="a profile of the matrix (as for the matrix target)")
    parser.add_argument("--set", action="append", default=None, metavar="AXIS=V1,V2", help="as for the matrix target")
    parser.add_argument("--limit", help="comma-separated inventory hosts to use (default: all)")
    parser.add_argument("--resume", metavar="FLEET_ID", help="continue a fleet run: hosts whose run is home are left alone")
    parser.add_argument("--results-dir", help="where runs come home (default: <workspace>/results)")
    parser.add_argument("--plan-only", action="store_true", help="check the hosts and print their plans; run nothing")
    parser.add_argument("--bundle", help="a bundle built already (<target>_bundle.tar.gz) instead of building it; "
                                         "needs --args-file")
    parser.add_argument("--args-file", help="with --bundle: the target's <name>.args")
    return parser.parse_args(argv)


def main(argv=None, console=None):
    args = parse_args(argv)
    console = console or Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    fleet = Fleet(args, console, workspace)
    work = tempfile.mkdtemp(prefix="tl-fleet-")  # short: SSH's control sockets live here
    site_bin = write_cli_launchers(os.path.join(work, "bin"))
    # ansible-runner looks Ansible's tools up on this process' PATH.
    os.environ["PATH"] = site_bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")
    try:
        inventory = load_inventory(args.inventory, ansible_env(work, site_bin, work))
        fleet.load_or_create(inventory)
        env = ansible_env(os.path.dirname(fleet.state_path(fleet.fleet_id)), site_bin, work)
        bundle, fleet.matrix_args = fleet.bundle()
        fleet.save()
        console.print(f"fleet run {fleet.fleet_id}: state in {os.path.relpath(fleet.state_path(fleet.fleet_id), workspace)}")
        todo = [h for h, s in fleet.hosts.items() if s.status not in FINAL]
        for host in sorted(set(fleet.hosts) - set(todo)):
            console.print(f"{host}: run {fleet.hosts[host].run_id} is home already; not run again")
        if todo:
            fleet_vars = fleet.fleet_vars(bundle, fleet.matrix_args, inventory)
            plans, run_states = fleet.check(inventory, todo, fleet_vars, env)
            runnable = [h for h in todo if fleet.hosts[h].status == "planned" or
                        (h in plans and fleet.hosts[h].status in ("running", "interrupted", "dropped"))]
            if runnable and not args.plan_only:
                fleet.run(inventory, runnable, fleet_vars, run_states, plans, env)
    except FleetError as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        # The matrices run detached on their hosts and go on; a resumed fleet run watches them again.
        if getattr(fleet, "fleet_id", None):
            fleet.save()
            console.print(f"interrupted; the hosts' runs go on. Watch them again and bring them home with: bazel run "
                          f"//tools:fleet -- --inventory {args.inventory} --resume {fleet.fleet_id}")
        return EXIT_INTERRUPTED
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fleet.summary()
    if args.plan_only:
        return EXIT_OK if all(s.status in ("planned", "home", "skipped") for s in fleet.hosts.values()) else EXIT_HOSTS_FAILED
    return EXIT_OK if all(s.status in FINAL + ("skipped",) for s in fleet.hosts.values()) else EXIT_HOSTS_FAILED


if __name__ == "__main__":
    sys.exit(main())
