"""Builds the rigs' container image from pinned Debian packages (no image registry is reachable here) as
a reproducible image archive that `podman load` and `docker load` both read, and its tag from the content.

  build_image.py --deb DEB ... --out image.tar --tag-out image.tag

Packages are unpacked as debtree.py says, and /bin/sh is busybox. Entries are sorted, owned by root, time 0. The
archive is the docker-archive layout (manifest.json, the image config, one layer tar), written here: it is
three files, and building it with podman would need root and an image store inside a Bazel action.
"""

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

from tools.container import debtree
from results.safeio import sha256_of

TAG_PREFIX = "localhost/tunelab-rig-os"


def build_tree(debs, tree):
    debtree.unpack_debs(debs, tree)
    # busybox applets the runner's wrappers call by name (taskset for CPU binding) and a shell.
    if os.path.exists(os.path.join(tree, "bin", "busybox")):
        for applet in ("sh", "taskset", "cat", "sleep"):
            link = os.path.join(tree, "bin", applet)
            if not os.path.lexists(link):
                os.symlink("busybox", link)
    debtree.link_python3(tree)
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


def deb_architecture(debs):
    """The Debian architecture of the packages (amd64, arm64), which is the image's."""
    arches = {subprocess.run(["dpkg-deb", "-f", deb, "Architecture"], check=True, stdout=subprocess.PIPE,
                             text=True).stdout.strip() for deb in debs} - {"all"}
    if len(arches) != 1:
        raise SystemExit(f"the packages are for {sorted(arches) or 'no'} architecture(s); an image has one")
    return arches.pop()


def write_image_archive(layer, out, architecture, tag_prefix=TAG_PREFIX):
    """Wraps the root file system `layer` into a one-layer image archive; returns its tag, named by the
    layer's sha256 (the image's content)."""
    layer_sha = sha256_of(layer)
    tag = f"{tag_prefix}:{layer_sha[:16]}"
    config = json.dumps({
        "architecture": architecture, "os": "linux",
        "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                   "Cmd": ["/bin/sh"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_sha}"]},
        "history": [{"created_by": "tools/container/build_image.py (from pinned Debian packages)"}],
    }, sort_keys=True, separators=(",", ":")).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": [f"{layer_sha}/layer.tar"]}],
                          separators=(",", ":")).encode()

    def member(name, size, mode=0o644, kind=tarfile.REGTYPE):
        ti = tarfile.TarInfo(name)
        ti.size, ti.mode, ti.type, ti.mtime = size, mode, kind, 0
        return ti

    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(member(layer_sha, 0, 0o755, tarfile.DIRTYPE))
        with open(layer, "rb") as f:
            tar.addfile(member(f"{layer_sha}/layer.tar", os.path.getsize(layer)), f)
        tar.addfile(member(config_name, len(config)), io.BytesIO(config))
        tar.addfile(member("manifest.json", len(manifest)), io.BytesIO(manifest))
    return tag


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deb", action="append", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tag-out", required=True)
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="image-", dir=os.path.dirname(os.path.abspath(args.out)))
    try:
        tree = os.path.join(scratch, "tree")
        build_tree(sorted(args.deb), tree)
        layer = os.path.join(scratch, "layer.tar")
        write_tar(tree, layer)
        tag = write_image_archive(layer, args.out, deb_architecture(args.deb))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with open(args.tag_out, "w") as f:
        f.write(tag + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
