"""Boots the two-node NUMA guest under QEMU (TCG) and brings its matrix run home as a checked result set.

  bazel run //tools/guest:run_redis_guest [-- --profile guest --results-dir DIR --timeout-s 3600]

The image (--image, a guest_image target) is built when the guest is about to boot, not before the program
starts (it is ~150 MB of packages): `--help` and a bad argument answer at once. --kernel and --initramfs boot
files built already (numa_guest_test passes its own).

The guest (//tools/guest:redis_guest) is Debian's kernel with two emulated NUMA nodes, one CPU and
`--node-mib` MiB each; its init runs the matrix profile and prints the results folder on the serial console
between two marker lines. This takes the archive from there, refuses anything but result documents that
pass the schema (a guest's output is untrusted input) and unpacks the run into --results-dir/<host>/<run>/.
The full console log is stored with it (logs/guest-console.log). KVM guests fail on this VM, so this is TCG
emulation: the numbers are functional evidence (pages moving between nodes), never timing.
"""

import argparse
import base64
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from results import safeio

BEGIN, END = "=====TUNELAB-RESULTS-BEGIN=====", "=====TUNELAB-RESULTS-END====="
MAX_ARCHIVE_BYTES = 64 << 20


class GuestError(RuntimeError):
    pass


# A value put on the guest kernel's command line (a profile, a hostname): one word of safe characters, so it
# cannot add parameters of its own (issue 39: `--profile "guest init=/bin/sh"` did).
KERNEL_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def kernel_word(what, value):
    if not KERNEL_WORD.fullmatch(str(value)):
        raise GuestError(f"{what} {str(value)[:80]!r}: 1-64 letters, digits, '.', '_' and '-' (it goes on the guest "
                         "kernel's command line)")
    return value


def qemu_argv(qemu, kernel, initramfs, profile, node_mib, cpus_per_node=1):
    kernel_word("--profile", profile)
    argv = [qemu, "-accel", "tcg", "-m", str(2 * node_mib), "-smp", str(2 * cpus_per_node),
            "-nographic", "-no-reboot", "-nic", "none",
            "-kernel", kernel, "-initrd", initramfs,
            "-append", f"console=ttyS0 rdinit=/init quiet panic=-1 tunelab.accel=tcg tunelab.profile={profile}"]
    for node in range(2):
        cpus = f"{node * cpus_per_node}-{(node + 1) * cpus_per_node - 1}" if cpus_per_node > 1 else str(node)
        argv += ["-object", f"memory-backend-ram,id=m{node},size={node_mib}M",
                 "-numa", f"node,nodeid={node},cpus={cpus},memdev=m{node}"]
    return argv


def archive_from_console(text):
    """The base64 tar.gz between the markers; raises GuestError naming what the guest printed instead."""
    if BEGIN not in text or END not in text.split(BEGIN, 1)[1]:
        tail = "\n".join(text.strip().splitlines()[-15:])
        raise GuestError(f"the guest printed no complete result archive; its console ended with:\n{tail}")
    body = text.split(BEGIN, 1)[1].split(END, 1)[0]
    data = base64.b64decode("".join(body.split()), validate=True)
    if len(data) > MAX_ARCHIVE_BYTES:
        raise GuestError(f"the result archive is {len(data)} bytes, over the {MAX_ARCHIVE_BYTES} limit")
    return data


# A guest_image target's label: it goes on a `bazel build` command line.
IMAGE_LABEL = re.compile(r"//([A-Za-z0-9_/.-]*):([A-Za-z0-9_.-]+)")


def image_files(label, workspace, bazel="bazel"):
    """Builds the guest_image `label` in `workspace` (Bazel's progress on this console) and returns (its
    vmlinuz, its initramfs)."""
    m = IMAGE_LABEL.fullmatch(label)
    if not m or ".." in m.group(1).split("/"):
        raise GuestError(f"--image {label[:80]!r}: a target label //package:name")
    if not workspace:
        raise GuestError("--image needs the checkout: run this with `bazel run`, or give --kernel and --initramfs")
    print(f"run_guest: building the guest image {label} (the first build fetches ~150 MB of packages)", flush=True)
    built = subprocess.run([bazel, "build", label], cwd=workspace)
    if built.returncode != 0:
        raise GuestError(f"`bazel build {label}` exited {built.returncode}")
    bin_dir = subprocess.run([bazel, "info", "bazel-bin"], cwd=workspace, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, check=True).stdout.strip()
    folder = os.path.join(bin_dir, m.group(1), m.group(2))
    return os.path.join(folder, "vmlinuz"), os.path.join(folder, "initramfs.cpio.gz")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    boot = parser.add_argument_group("the guest to boot (--image, or --kernel with --initramfs)")
    boot.add_argument("--image", help="a guest_image target, built before it boots (default of "
                                      "run_redis_guest: //tools/guest:redis_guest)")
    boot.add_argument("--kernel", help="a vmlinuz built already")
    boot.add_argument("--initramfs", help="its initramfs.cpio.gz")
    parser.add_argument("--profile", default="guest")
    parser.add_argument("--node-mib", type=int, default=1536)
    parser.add_argument("--timeout-s", type=float, default=3600)
    parser.add_argument("--results-dir", default=os.path.join(os.environ.get("BUILD_WORKSPACE_DIRECTORY", "."),
                                                              "results"))
    parser.add_argument("--qemu", default="qemu-system-x86_64")
    args = parser.parse_args(argv)
    if bool(args.kernel) != bool(args.initramfs) or bool(args.kernel) == bool(args.image):
        parser.error("give --image, or --kernel with --initramfs")
    from results import runarchive  # the checks of every brought-home run

    qemu = shutil.which(args.qemu)
    if not qemu:
        print(f"run_guest: error: {args.qemu} is not installed (Debian: apt-get install --no-install-recommends "
              "qemu-system-x86)", file=sys.stderr)
        return 2
    try:
        kernel_word("--profile", args.profile)
        kernel, initramfs = ((args.kernel, args.initramfs) if args.kernel else
                             image_files(args.image, os.environ.get("BUILD_WORKSPACE_DIRECTORY")))
        command = qemu_argv(qemu, kernel, initramfs, args.profile, args.node_mib)
    except GuestError as e:
        print(f"run_guest: error: {e}", file=sys.stderr)
        return 2
    os.makedirs(args.results_dir, exist_ok=True)
    console_path = os.path.join(tempfile.mkdtemp(prefix="numa-guest-"), "guest-console.log")
    print(f"run_guest: booting the two-node guest (TCG emulation, {args.node_mib} MiB per node); console: "
          f"{console_path}", flush=True)
    started = time.monotonic()
    with safeio.open_log(console_path) as console:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT)
        try:
            proc.wait(timeout=args.timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            print(f"run_guest: error: the guest did not power off within {args.timeout_s:.0f} s; console: "
                  f"{console_path}", file=sys.stderr)
            return 1
    with open(console_path, errors="replace") as f:
        text = f.read()
    try:
        data = archive_from_console(text)
        # The console log is stored with the run, in one go: a stored run is never written to afterwards.
        run_dir, _, _ = runarchive.unpack_run(data, args.results_dir,
                                              extra={"logs/guest-console.log": text.encode()})
    except (GuestError, runarchive.ArchiveError, ValueError) as e:
        print(f"run_guest: error: {e}", file=sys.stderr)
        return 1
    print(f"run_guest: guest ran {time.monotonic() - started:.0f} s; results: {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
