"""Boots a guest as an SSH host on a loopback port, for the fleet: an emulated aarch64 (or x86-64) machine that
Ansible reaches like any inventory host.

  bazel run //tools/guest:arm64_host_guest -- --authorized-key ~/.ssh/id_ed25519.pub [--port 2222]

prints the inventory line and keeps the guest up until interrupted (Ctrl-C powers it off). QEMU's user-mode
network forwards 127.0.0.1:PORT (loopback only) to the guest's sshd; nothing else reaches it. Under TCG
(full emulation; no KVM here): the guest's numbers are mechanics, never speed, and its doctor says
`emulated` (the kernel command line carries tunelab.accel=tcg, and QEMU's `max` CPU has implementer 0x00).

As a library: `with GuestHost(...) as guest:` boots it, waits for sshd's banner, and always stops QEMU and
frees the port on the way out (also when the body fails).
"""

import argparse
import base64
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from tools.guest import run_guest
from results import safeio

# Per Debian architecture: QEMU's program and machine, the serial console, the network device.
MACHINES = {
    "arm64": {"qemu": "qemu-system-aarch64", "machine": ["-M", "virt", "-cpu", "max"], "console": "ttyAMA0",
              "nic": "virtio-net-device", "package": "qemu-system-arm"},
    "amd64": {"qemu": "qemu-system-x86_64", "machine": ["-M", "pc"], "console": "ttyS0",
              "nic": "virtio-net-pci", "package": "qemu-system-x86"},
}


class GuestError(RuntimeError):
    pass


def free_loopback_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def qemu_argv(arch, qemu, kernel, initramfs, port, authorized_key, cpus=2, memory_mib=6144, hostname="guest"):
    try:
        run_guest.kernel_word("--name", hostname)
    except run_guest.GuestError as e:
        raise GuestError(str(e)) from None
    m = MACHINES[arch]
    key = base64.b64encode(authorized_key.strip().encode()).decode()
    append = (f"console={m['console']} rdinit=/init panic=-1 quiet tunelab.mode=host tunelab.accel=tcg "
              f"tunelab.hostname={hostname} tunelab.authorized_key={key}")
    return [qemu, *m["machine"], "-accel", "tcg", "-smp", str(cpus), "-m", str(memory_mib), "-nographic",
            "-no-reboot", "-kernel", kernel, "-initrd", initramfs, "-append", append,
            "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{port}-:22", "-device", f"{m['nic']},netdev=n0"]


def wait_for_ssh(port, deadline, proc, console_path):
    """Waits until sshd on the forwarded port sends its banner (QEMU accepts the port before the guest listens)."""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise GuestError(f"QEMU exited with status {proc.returncode} before sshd answered; console: {console_path}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.settimeout(20)
                if s.recv(64).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        time.sleep(1)
    raise GuestError(f"sshd did not answer on 127.0.0.1:{port}; console: {console_path}")


class GuestHost:
    """A booted guest with sshd on 127.0.0.1:port; a context manager that always stops it."""

    def __init__(self, arch, kernel, initramfs, authorized_key, port=None, cpus=2, memory_mib=6144,
                 hostname="guest", boot_timeout_s=600, console_path=None):
        if arch not in MACHINES:
            raise GuestError(f"no guest for architecture {arch!r} (known: {', '.join(MACHINES)})")
        self.arch, self.port = arch, port or free_loopback_port()
        qemu = shutil.which(MACHINES[arch]["qemu"])
        if not qemu:
            raise GuestError(f"{MACHINES[arch]['qemu']} is not installed (Debian: apt-get install "
                             f"--no-install-recommends {MACHINES[arch]['package']})")
        self.argv = qemu_argv(arch, qemu, kernel, initramfs, self.port, authorized_key, cpus, memory_mib, hostname)
        self.console_path = console_path or os.path.join(tempfile.mkdtemp(prefix=f"guest-{arch}-"), "console.log")
        self.boot_timeout_s = boot_timeout_s
        self.proc = None
        self.boot_s = None

    def __enter__(self):
        started = time.monotonic()
        with safeio.open_log(self.console_path, binary=True) as console:
            # Its own process group: Ctrl-C in a terminal reaches the controller, which stops QEMU itself.
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=console,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for_ssh(self.port, started + self.boot_timeout_s, self.proc, self.console_path)
        except BaseException:
            self.stop()
            raise
        self.boot_s = time.monotonic() - started
        return self

    def stop(self):
        """Stops QEMU (TERM, then KILL after 10 s); the forwarded port is free once it is gone."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __exit__(self, *exc):
        self.stop()
        return False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--initramfs", required=True)
    parser.add_argument("--arch", choices=sorted(MACHINES), default="arm64")
    parser.add_argument("--authorized-key", required=True, help="the public key file root logs in with")
    parser.add_argument("--port", type=int, help="the loopback port forwarded to the guest's sshd (default: a free one)")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--memory-mib", type=int, default=6144)
    parser.add_argument("--name", default="arm64-guest", help="the guest's hostname and inventory name")
    args = parser.parse_args(argv)
    with open(os.path.expanduser(args.authorized_key)) as f:
        key = f.read()
    try:
        with GuestHost(args.arch, args.kernel, args.initramfs, key, args.port, args.cpus, args.memory_mib,
                       args.name) as guest:
            print(f"host_guest: {args.arch} guest up after {guest.boot_s:.0f} s (TCG emulation); console: "
                  f"{guest.console_path}\ninventory line:\n  {args.name} ansible_host=127.0.0.1 ansible_port="
                  f"{guest.port} ansible_user=root\nCtrl-C powers it off.", flush=True)
            guest.proc.wait()
    except GuestError as e:
        print(f"host_guest: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("host_guest: stopping the guest", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
