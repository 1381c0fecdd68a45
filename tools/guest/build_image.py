"""Builds a guest: Debian's kernel and an initramfs holding a small Debian userland (busybox, Python, numactl,
the Redis binaries' libraries, OpenSSH's server), the guest's init and either a copy of one matrix target's
runfiles (a guest that runs that matrix and powers off) or nothing more (a guest that is an SSH host).

  build_image.py --deb DEB ... --kernel-deb DEB --init FILE [--runfiles FILE --args FILE] [--module NAME ...]
                 --out-kernel vmlinuz --out-initramfs initramfs.cpio.gz

--runfiles lists `destination source` pairs (destination relative to /opt/tunelab); --args is the matrix's
`bazel run` arguments, installed as /opt/tunelab/matrix.args for the init. --module copies a kernel module
of the kernel package (virtio_net and what it needs: the guest's network) to /lib/modules/, in the order
given, which is the order the init loads them. Packages are unpacked as tools/container/debtree.py says.
Written in a scratch folder under the output folder, then packed as a newc cpio (the kernel's initramfs
format) and gzipped.
"""

import argparse
import glob
import gzip
import os
import shutil
import stat
import sys
import tempfile

from tools.container import debtree


def _entry(out, name, mode, data=b"", ino=0, nlink=1, mtime=0):
    name_bytes = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, nlink, mtime, len(data), 0, 0, 0, 0, len(name_bytes), 0]
    out.write(b"070701" + b"".join(b"%08x" % f for f in fields))
    out.write(name_bytes + b"\0" * (-(110 + len(name_bytes)) % 4))
    out.write(data + b"\0" * (-len(data) % 4))


def write_cpio(tree, out):
    """Every file, folder and symlink of `tree` as a newc archive, sorted, owned by root, time 0."""
    ino = 1
    for root, dirs, files in os.walk(tree):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, tree)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                _entry(out, rel, stat.S_IFLNK | 0o777, os.readlink(path).encode(), ino)
            elif stat.S_ISDIR(st.st_mode):
                _entry(out, rel, stat.S_IFDIR | (st.st_mode & 0o7777), ino=ino, nlink=2)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    _entry(out, rel, stat.S_IFREG | (st.st_mode & 0o7777), f.read(), ino)
            ino += 1
    _entry(out, "TRAILER!!!", 0)


# The guest's accounts: root (its shell is busybox's) and OpenSSH's privilege-separation user. Root's password
# field is `*`: no password login, and not `!` (which sshd reads as a locked account and refuses keys for).
ACCOUNTS = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/sh\nsshd:x:100:65534::/run/sshd:/usr/sbin/nologin\n",
    "etc/group": "root:x:0:\nnogroup:x:65534:\n",
    "etc/shadow": "root:*:20000:0:99999:7:::\nsshd:*:20000:0:99999:7:::\n",
}


def write_accounts(tree):
    for rel, text in ACCOUNTS.items():
        path = os.path.join(tree, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    os.chmod(os.path.join(tree, "etc/shadow"), 0o600)


def module_depends(path):
    """The modules a .ko needs loaded first: its modinfo `depends=` field."""
    with open(path, "rb") as f:
        data = f.read()
    at = data.find(b"\0depends=")
    if at < 0:
        return []
    value = data[at + len(b"\0depends="):data.index(b"\0", at + 1)].decode()
    return [name.replace("-", "_") for name in value.split(",") if name]


def load_order(names, depends):
    """`names` and every module they depend on, each after its dependencies (a depth-first order)."""
    order = []

    def visit(name, path=()):
        if name in path:
            raise SystemExit(f"modules depend on each other in a cycle: {' -> '.join(path + (name,))}")
        if name not in order:
            for dep in depends(name):
                visit(dep, path + (name,))
            order.append(name)
    for name in names:
        visit(name)
    return order


def copy_modules(kernel_tree, names, tree):
    """Copies the named modules (`virtio_net`) of the unpacked kernel package and those they depend on to
    /lib/modules/tunelab/, with their load order in /lib/modules/tunelab/order (the init insmods them so)."""
    found = {os.path.basename(p)[:-3].replace("-", "_"): p
             for p in glob.glob(os.path.join(kernel_tree, "lib/modules/*/kernel/**/*.ko"), recursive=True)}

    def depends(name):
        if name not in found:
            raise SystemExit(f"the kernel package has no module {name}")
        return module_depends(found[name])
    order = load_order(names, depends)
    dest = os.path.join(tree, "lib", "modules", "tunelab")
    os.makedirs(dest, exist_ok=True)
    for name in order:
        shutil.copy(found[name], os.path.join(dest, name + ".ko"))
    with open(os.path.join(dest, "order"), "w") as f:
        f.write("".join(n + "\n" for n in order))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deb", action="append", required=True)
    parser.add_argument("--kernel-deb", required=True)
    parser.add_argument("--init", required=True)
    parser.add_argument("--runfiles")
    parser.add_argument("--args")
    parser.add_argument("--module", action="append", default=[])
    parser.add_argument("--out-kernel", required=True)
    parser.add_argument("--out-initramfs", required=True)
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="_guest_", dir=os.path.dirname(os.path.abspath(args.out_initramfs)))
    try:
        tree = os.path.join(scratch, "root")
        debtree.unpack_debs(args.deb, tree)
        debtree.merge_usr(tree)
        debtree.link_python3(tree)
        for folder in ("proc", "sys", "dev", "tmp", "run", "results", "opt/tunelab", "var/tmp", "root"):
            os.makedirs(os.path.join(tree, folder), exist_ok=True)
        if bool(args.runfiles) != bool(args.args):
            parser.error("--runfiles and --args go together")
        if args.runfiles:
            with open(args.runfiles) as f:
                pairs = [line.rstrip("\n").split(" ", 1) for line in f if line.strip()]
            for dest, src in pairs:
                target = os.path.join(tree, "opt", "tunelab", dest)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy(src, target)  # follows Bazel's symlinks; keeps the mode (executables)
            shutil.copy(args.args, os.path.join(tree, "opt", "tunelab", "matrix.args"))
        write_accounts(tree)
        shutil.copy(args.init, os.path.join(tree, "init"))
        os.chmod(os.path.join(tree, "init"), 0o755)
        kernel_tree = os.path.join(scratch, "kernel")  # unpacked once: its vmlinuz and its modules
        debtree.unpack_debs([args.kernel_deb], kernel_tree)
        (vmlinuz,) = glob.glob(os.path.join(kernel_tree, "boot", "vmlinuz-*"))
        shutil.copy(vmlinuz, args.out_kernel)
        if args.module:
            copy_modules(kernel_tree, args.module, tree)
        with open(args.out_initramfs, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6,
                                                                   mtime=0) as out:
            write_cpio(tree, out)

    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
