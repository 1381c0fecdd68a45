"""A fleet host's work root and the bundle in it, checked before root runs anything from there.

The controller's own copy of this file runs on the host (the check playbook passes its text to `python3 -c`),
so a bundle planted on the host cannot vouch for itself. Standard library only, Python 3.8-clean. Prints one
JSON object; exit 1 with {"error": ...} (the reason also on stderr, one line) when the root or the bundle is
refused.

  check  --root DIR [--folder DIR ...] [--state-dir DIR] --bundle-dir DIR --manifest-sha256 HEX
         the work root, its folders and the host state folder made (mode 0700) or checked, and the bundle's state:
         "verified", "absent", or why it cannot be used (then the playbook ships it again)
  verify --bundle-dir DIR --manifest-sha256 HEX
         the bundle is exactly its manifest (after shipping it)

The rule is the host state folder's (rigs/host/hoststate.py): a folder this user (root, on a fleet host)
owns with mode 0700, and no folder above it another user owns or could rename it through (a world-writable
one only when sticky, as /var/tmp). A local user who made /var/tmp/tunelab first would otherwise own the
folder root writes its markers, logs and archives into, and could plant a bundle for root to run.
"""

import argparse
import hashlib
import json
import os
import stat
import sys

MANIFEST_NAME = "BUNDLE.sha256"  # written by tools/fleet/make_bundle.py: "<sha256> <mode> <path>" per file


class Refused(Exception):
    pass


# Kept apart from results/safeio.py's same walk on purpose: this file runs alone on a fleet host (`python3 -c`,
# standard library only, 3.8), where no tunelab module can be imported.
def check_path(path, create=False):
    """The real path of `path` after walking every component from /: each must be owned by root or this user
    and writable by others only when sticky; a link is checked by its own owner, then what it points at is
    walked the same way (issue 58: a link another user owns above a non-default tunelab_root was checked only
    at its target). Missing components are made (0755) when `create`. Raises Refused."""
    me = os.geteuid()
    target = os.path.abspath(path)
    pending = [p for p in target.split("/") if p]
    real, links = "/", 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            real = os.path.dirname(real)
            continue
        current = os.path.join(real, part)
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            if not create:
                raise Refused(f"{current} (on the way to {target}) does not exist") from None
            os.mkdir(current, 0o755)
            st = os.lstat(current)
        if st.st_uid not in (0, me):
            raise Refused(f"{current} (on the way to {target}) is owned by uid {st.st_uid}: another user could "
                          "replace what root writes there; set the folder under one root owns")
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > 40:
                raise Refused(f"{target}: more than 40 links on the way")
            pointed = os.readlink(current)
            pending = [p for p in pointed.split("/") if p] + pending
            if pointed.startswith("/"):
                real = "/"
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise Refused(f"{current} (on the way to {target}) is not a folder")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
            raise Refused(f"{current} (on the way to {target}) is writable by other users (mode "
                          f"{stat.S_IMODE(st.st_mode):04o}) and not sticky: set the folder elsewhere")
        real = current
    return real


def own_folder(path, what):
    """Makes `path` (mode 0700) unless it exists; refuses it unless it is this user's folder, mode 0700."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise Refused(f"{what} {path} is not a folder (a link or a file): refused; remove it (root makes it)")
    if st.st_uid != os.geteuid():
        raise Refused(f"{what} {path} is owned by uid {st.st_uid}, not by this runner's user ({os.geteuid()}): "
                      "refused, nothing written there; remove it (root makes it, mode 0700)")
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise Refused(f"{what} {path} has mode {stat.S_IMODE(st.st_mode):04o}: other users could plant files "
                      f"root acts on; refused (fix, if it is yours: chmod 700 {path})")


def ensure_root(root, folders, state_dir=None):
    """The work root, its folders and the host state folder made (0700) or checked, before anything is
    written there (the host state folder used to be made by Ansible's file module, through any link)."""
    if state_dir:
        state_dir = os.path.join(check_path(os.path.dirname(os.path.abspath(state_dir)), create=True),
                                 os.path.basename(state_dir))
        own_folder(state_dir, "host state folder")
    root = os.path.abspath(root)
    root = os.path.join(check_path(os.path.dirname(root), create=True), os.path.basename(root))
    own_folder(root, "work root")
    for folder in folders:
        folder = os.path.abspath(folder)
        if os.path.dirname(folder) != root and not os.path.dirname(folder).startswith(root + os.sep):
            raise Refused(f"{folder} is not inside the work root {root}")
        own_folder(folder, "work folder")


def read_nofollow(path, limit=None):
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise Refused(f"{path} is not a regular file")
        return f.read() if limit is None else f.read(limit)


def file_sha256(path):
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parse_manifest(data):
    entries = {}
    for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        parts = line.split(" ")
        if len(parts) != 3 or len(parts[0]) != 64 or parts[1] not in ("0644", "0755"):
            raise Refused(f"{MANIFEST_NAME} line {number} is not '<sha256> <0644|0755> <path>'")
        entries[parts[2]] = (parts[0], int(parts[1], 8))
    return entries


def bundle_problem(bundle_dir, manifest_sha256):
    """None when the bundle folder holds exactly the files its manifest lists, with their digests and modes,
    and the manifest is the one the controller built; else what is wrong (the first thing found)."""
    try:
        st = os.lstat(bundle_dir)
    except FileNotFoundError:
        return "absent"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return f"{bundle_dir} is not this user's folder"
    manifest_path = os.path.join(bundle_dir, MANIFEST_NAME)
    try:
        data = read_nofollow(manifest_path)
    except FileNotFoundError:
        return f"no {MANIFEST_NAME} (a partial or planted bundle)"
    if hashlib.sha256(data).hexdigest() != manifest_sha256:
        return f"its {MANIFEST_NAME} is not the controller's (sha256 {hashlib.sha256(data).hexdigest()[:12]})"
    entries = parse_manifest(data)
    seen = set()
    for folder, dirs, files in os.walk(bundle_dir):
        for name in dirs + files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, bundle_dir)
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) and not stat.S_ISREG(st.st_mode):
                return f"{rel} is not a regular file (a bundle holds files and folders only)"
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                return f"{rel}: owned by uid {st.st_uid} with mode {stat.S_IMODE(st.st_mode):04o}"
            if stat.S_ISDIR(st.st_mode):
                continue
            if rel == MANIFEST_NAME:
                continue
            if rel not in entries:
                return f"{rel} is not in the manifest"
            sha, mode = entries[rel]
            if bool(st.st_mode & 0o111) != bool(mode & 0o111):
                return f"{rel}: mode {stat.S_IMODE(st.st_mode):04o}, the manifest says {mode:04o}"
            if file_sha256(path) != sha:
                return f"{rel}: its content differs from the manifest's"
            seen.add(rel)
    missing = sorted(set(entries) - seen)
    if missing:
        return f"{len(missing)} file(s) of the manifest missing, e.g. {missing[0]}"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="work_root.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    check = sub.add_parser("check")
    check.add_argument("--root", required=True)
    check.add_argument("--folder", action="append", default=[])
    check.add_argument("--state-dir", help="the host state folder (the lock, the knob journal)")
    verify = sub.add_parser("verify")
    for p in (check, verify):
        p.add_argument("--bundle-dir", required=True)
        p.add_argument("--manifest-sha256", required=True)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error("give check or verify")
    try:
        if args.command == "check":
            ensure_root(args.root, args.folder, args.state_dir)
            problem = bundle_problem(args.bundle_dir, args.manifest_sha256)
            doc = {"root": os.path.abspath(args.root), "bundle": problem or "verified"}
        else:
            problem = bundle_problem(args.bundle_dir, args.manifest_sha256)
            doc = {"error": f"the bundle shipped to {args.bundle_dir} is refused: {problem}"} if problem else {
                "verified": True}
    except (Refused, OSError, UnicodeDecodeError) as e:
        doc = {"error": str(e)}
    print(json.dumps(doc))
    if "error" in doc:
        print(doc["error"], file=sys.stderr)  # the line the controller reports for the host
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
