"""Builds the two-node NUMA guest: Debian's kernel and an initramfs holding a small Debian userland (busybox,
Python, numactl, the Redis binaries' libraries), a copy of one matrix target's runfiles and the guest's init.

  build_image.py --deb DEB ... --kernel-deb DEB --init FILE --runfiles FILE --args FILE
                 --out-kernel vmlinuz --out-initramfs initramfs.cpio.gz

--runfiles lists `destination source` pairs (destination relative to /opt/tunelab); --args is the matrix's
`bazel run` arguments, installed as /opt/tunelab/matrix.args for the init. Packages are unpacked as
tools/container/debtree.py says. Written in a scratch folder under the output folder, then packed as a
newc cpio (the kernel's initramfs format) and gzipped.
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deb", action="append", required=True)
    parser.add_argument("--kernel-deb", required=True)
    parser.add_argument("--init", required=True)
    parser.add_argument("--runfiles", required=True)
    parser.add_argument("--args", required=True)
    parser.add_argument("--out-kernel", required=True)
    parser.add_argument("--out-initramfs", required=True)
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="_guest_", dir=os.path.dirname(os.path.abspath(args.out_initramfs)))
    try:
        tree = os.path.join(scratch, "root")
        debtree.unpack_debs(args.deb, tree)
        debtree.link_python3(tree)
        for folder in ("proc", "sys", "dev", "tmp", "run", "results", "opt/tunelab"):
            os.makedirs(os.path.join(tree, folder), exist_ok=True)
        with open(args.runfiles) as f:
            pairs = [line.rstrip("\n").split(" ", 1) for line in f if line.strip()]
        for dest, src in pairs:
            target = os.path.join(tree, "opt", "tunelab", dest)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy(src, target)  # follows Bazel's symlinks; keeps the mode (executables)
        shutil.copy(args.args, os.path.join(tree, "opt", "tunelab", "matrix.args"))
        shutil.copy(args.init, os.path.join(tree, "init"))
        os.chmod(os.path.join(tree, "init"), 0o755)
        with open(args.out_initramfs, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6,
                                                                   mtime=0) as out:
            write_cpio(tree, out)
        kernel_tree = os.path.join(scratch, "kernel")
        debtree.unpack_debs([args.kernel_deb], kernel_tree)
        (vmlinuz,) = glob.glob(os.path.join(kernel_tree, "boot", "vmlinuz-*"))
        shutil.copy(vmlinuz, args.out_kernel)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
