"""Ansible for the fleet: the command-line launchers ansible-runner starts (with a cap on what they may write
here), their environment, the inventory as Ansible reads it, and one playbook run collecting per-host
outcomes from its events."""

import os
import sys
import time

from results import runarchive
from tools.fleet.hostinput import REMOTE_PYTHON, FleetError, describe_failure
from results import safeio

HERE = os.path.dirname(os.path.abspath(__file__))
PLAYBOOKS = os.path.join(HERE, "playbooks")


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
        safeio.write_text(path, f"#!{sys.executable}\n# written by tools/fleet/fleet.py\nimport os, resource, sys\n"
                          f"cap = int(os.environ.get({MAX_FILE_BYTES_ENV!r}) or 0)\n"
                          "if cap:\n    resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))\n"
                          f"from {module} import main\nsys.exit(main())\n", mode=0o755)
    return folder


def ansible_env(work, site_bin, control):
    """Environment for ansible-playbook and ansible-inventory: their own home and temp folders under `work`,
    SSH connections shared through sockets in `control`, keep-alives so a host that drops out is noticed
    within a minute, no retry files. No SSH compression: the bundle and the runs brought home are gzip
    already (-C spent CPU on both ends of a 277 MiB copy for nothing). Pipelining: a module runs in the SSH
    session that sends it, no temporary file copied first (a task is one round trip, not three or four; root
    needs no tty)."""
    return {
        "PATH": site_bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
        "ANSIBLE_HOME": os.path.join(work, "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": os.path.join(work, "ansible-tmp"),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": control,
        "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=60s -o ServerAliveInterval=15 "
                            "-o ServerAliveCountMax=4 -o ConnectTimeout=15",
        "ANSIBLE_PIPELINING": "true",
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
