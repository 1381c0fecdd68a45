"""Builds the rigs' container root file system from pinned Debian packages, as a reproducible tar for
`podman import` (no image registry is reachable here), and its tag from the tar's sha256.

  build_rootfs.py --deb DEB ... --out rootfs.tar --tag-out rootfs.tag

Packages are unpacked with `dpkg-deb -x` (no maintainer scripts: a container that execs one program needs
none), documentation is left out, and /bin/sh is busybox. Entries are sorted, owned by root, time 0.
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

SHRINK = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian")
TAG_PREFIX = "localhost/tunelab-rig-os"


def build_tree(debs, tree):
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", deb, tree], check=True)
    for rel in SHRINK:
        shutil.rmtree(os.path.join(tree, rel), ignore_errors=True)
    # busybox applets the runner's wrappers call by name (taskset for CPU binding) and a shell.
    if os.path.exists(os.path.join(tree, "bin", "busybox")):
        for applet in ("sh", "taskset", "cat", "sleep"):
            link = os.path.join(tree, "bin", applet)
            if not os.path.lexists(link):
                os.symlink("busybox", link)
    for folder in ("tmp", "proc", "sys", "dev", "run", "work"):
        os.makedirs(os.path.join(tree, folder), exist_ok=True)
    os.chmod(os.path.join(tree, "tmp"), 0o1777)


def write_tar(tree, out):
    def normalize(ti):
        ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0, 0, "", ""
        return ti

    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for root, dirs, files in os.walk(tree):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                path = os.path.join(root, name)
                tar.add(path, arcname=os.path.relpath(path, tree), recursive=False, filter=normalize)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deb", action="append", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tag-out", required=True)
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="rootfs-", dir=os.path.dirname(os.path.abspath(args.out)))
    try:
        tree = os.path.join(scratch, "tree")
        build_tree(sorted(args.deb), tree)
        write_tar(tree, args.out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    h = hashlib.sha256()
    with open(args.out, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    with open(args.tag_out, "w") as f:
        f.write(f"{TAG_PREFIX}:{h.hexdigest()[:16]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
