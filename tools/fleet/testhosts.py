"""Fleet hosts a test makes on this machine: an sshd of Debian's openssh-server on a loopback address with its
own host key, root folder and authorized keys, and the helpers that take one away (every process of its run).
Used by tools/fleet/fleet_integration_test.py and tools/guest/arm64_fleet_test.py.
"""

import glob
import os
import shutil
import signal
import socket
import subprocess
import time

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port(address):
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def children_of():
    tree = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(stat.split("/")[2]))
    return tree


def descendants(pid):
    tree, out, todo = children_of(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(tree.get(p, []))
    return out


def processes_running_from(root):
    """Processes whose program or script lies under `root` (a host's bundle: remote_run.py, the runner, the
    JVMs). Not the controller's: its ansible-playbook knows every host's paths too."""
    pids = []
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(cmdline, "rb") as f:
                argv = f.read().split(b"\0")[:2]
        except OSError:
            continue
        if any(a.startswith(root.encode() + b"/") for a in argv):
            pids.append(int(cmdline.split("/")[2]))
    return [p for p in pids if p != os.getpid()]


def kill_all(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Host:
    """env: variables sshd sets in every session (SetEnv), e.g. a PYTHONPATH that makes the host hostile."""

    def __init__(self, base, name, address, env=None):
        self.name, self.address, self.port = name, address, free_port(address)
        self.dir = os.path.join(base, name)
        self.root = os.path.join(self.dir, "root")
        os.makedirs(self.dir)
        os.mkdir(self.root, 0o700)  # a work root as root makes it (tools/fleet/work_root.py)
        self.config = os.path.join(self.dir, "sshd_config")
        self.proc = None
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(self.dir, "host_key")],
                       check=True)
        with open(self.config, "w") as f:
            f.write("\n".join([
                f"ListenAddress {address}:{self.port}",
                f"HostKey {self.dir}/host_key",
                f"PidFile {self.dir}/sshd.pid",
                f"AuthorizedKeysFile {base}/authorized_keys",
                "StrictModes no", "UsePAM no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password", "Subsystem sftp internal-sftp", "LogLevel ERROR",
                *[f"SetEnv {key}={value}" for key, value in sorted((env or {}).items())], ""]))

    def start(self):
        with open(self.config + ".log", "ab") as log:
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", self.config], stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection((self.address, self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"sshd for {self.name} did not listen on {self.address}:{self.port}")

    def drop_out(self):
        """The host goes away: its sshd with every session, and every process of its matrix run."""
        if self.proc:
            kill_all(descendants(self.proc.pid))
            self.proc.wait()
            self.proc = None
        kill_all(processes_running_from(self.root))

    def cells(self):
        return sorted(glob.glob(os.path.join(self.root, "results", "*", "*", "cells", "*.json")))
