"""Packs a matrix bundle (tools/fleet/defs.bzl) reproducibly: entries sorted, times and owners zeroed, file
contents followed through Bazel's symlinks, modes kept (launchers and JDK binaries stay executable).

  make_bundle.py --listing LISTING --out BUNDLE.tar.gz [--machine aarch64]
LISTING lines: `file DEST SOURCE` or `empty DEST` (DEST relative to the bundle's root; a SOURCE folder brings
every file under it).

The bundle's first member, BUNDLE.sha256, lists every file's sha256, mode and path: a fleet host checks the
unpacked bundle against it (tools/fleet/work_root.py), and the controller checks that manifest's own digest,
before root runs anything from the bundle.

With --machine, every ELF file in the bundle (programs, shared libraries: JDKs, wheels, Redis) must be built
for that machine; a bundle for aarch64 hosts holding an x86-64 library is refused, naming the files.
"""

import argparse
import fnmatch
import gzip
import hashlib
import io
import os
import re
import sys
import tarfile

from results.safeio import sha256_of


def read_listing(path):
    entries = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            parts = line.rstrip("\n").split(" ")
            if parts == [""]:
                continue
            kind, dest = parts[0], parts[1] if len(parts) > 1 else ""
            if kind == "file" and len(parts) == 3:
                source = parts[2]
            elif kind == "empty" and len(parts) == 2:
                source = None
            else:
                raise ValueError(f"{path}:{number}: expected `file DEST SOURCE` or `empty DEST`: {line!r}")
            if dest == MANIFEST_NAME:
                raise ValueError(f"{path}:{number}: {MANIFEST_NAME} is the bundle's own manifest")
            if os.path.isabs(dest) or os.path.normpath(dest).startswith(".."):
                raise ValueError(f"{path}:{number}: destination leaves the bundle: {dest}")
            for file_dest, file_source in expand_folder(dest, source):
                if entries.get(file_dest, file_source) != file_source:
                    raise ValueError(f"{path}:{number}: {file_dest} listed twice with different sources")
                entries[file_dest] = file_source
    return entries


def expand_folder(dest, source):
    """[(dest, source)] for a file; for a folder (a runfile that is a whole folder, like the locked Python
    site), each file under it, links followed, bytecode caches left out (they hold times: not reproducible),
    and names with white space left out as Bazel's runfiles leave them out: BUNDLE.sha256 is one path a line
    after two fields (the site's are a few test data files of its wheels, e.g. scipy's "Transparent Busy.ani")."""
    if source is None or not os.path.isdir(source):
        return [(dest, source)]
    found = []
    for folder, subfolders, files in os.walk(source, followlinks=True):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__" and not WHITE_SPACE.search(d))
        rel = os.path.relpath(folder, source)
        for name in sorted(files):
            if not WHITE_SPACE.search(name):
                found.append((os.path.normpath(os.path.join(dest, rel, name)), os.path.join(folder, name)))
    return found


WHITE_SPACE = re.compile(r"\s")


# ELF e_machine values (the ELF specification's registry).
ELF_MACHINES = {"x86_64": 62, "aarch64": 183}


def elf_machine(path):
    """The e_machine of an ELF file, or None for anything else."""
    with open(path, "rb") as f:
        header = f.read(20)
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return None
    return int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")


# Programs a pure-Python wheel carries for every platform and no host runs: selenium's driver manager (the
# results site's browser test uses it on the build host only).
FOREIGN_ELF_ALLOWED = ("matrix.runfiles/pypi/site/selenium/webdriver/common/*/selenium-manager",)


def foreign_elf_files(entries, machine, allowed=FOREIGN_ELF_ALLOWED):
    """[(dest, e_machine)] of the ELF files not built for `machine` (but those `allowed` patterns match)."""
    want = ELF_MACHINES[machine]
    found = []
    for dest, source in sorted(entries.items()):
        if source is not None and not any(fnmatch.fnmatchcase(dest, pattern) for pattern in allowed):
            got = elf_machine(source)
            if got is not None and got != want:
                found.append((dest, got))
    return found


def folders_of(paths):
    out = set()
    for p in paths:
        parent = os.path.dirname(p)
        while parent:
            out.add(parent)
            parent = os.path.dirname(parent)
    return out


MANIFEST_NAME = "BUNDLE.sha256"  # tools/fleet/work_root.py reads it by this name


def mode_of(source):
    return 0o644 if source is None or not os.stat(source).st_mode & 0o111 else 0o755


def manifest(entries):
    """BUNDLE.sha256's text: a line per file, '<sha256> <mode> <path>', sorted by path."""
    lines = ["# every file of this bundle: sha256, mode, path (written by tools/fleet/make_bundle.py)"]
    for dest in sorted(entries):
        source = entries[dest]
        sha = hashlib.sha256(b"").hexdigest() if source is None else sha256_of(source)
        lines.append(f"{sha} {mode_of(source):04o} {dest}")
    return "\n".join(lines) + "\n"


def manifest_sha256(bundle):
    """The sha256 of a bundle's BUNDLE.sha256 (its first member): what a host's unpacked copy must match."""
    with tarfile.open(bundle, "r:gz") as tar:
        first = tar.next()
        if first is None or first.name != MANIFEST_NAME or not first.isfile() or first.size > 1 << 26:
            raise ValueError(f"{bundle} does not start with its {MANIFEST_NAME} (a bundle of an older "
                             "tunelab: build it again)")
        return hashlib.sha256(tar.extractfile(first).read()).hexdigest()


def pack(entries, out):
    def info(name, kind, mode, size=0):
        ti = tarfile.TarInfo(name)
        ti.type, ti.mode, ti.size, ti.mtime = kind, mode, size, 0
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        return ti

    # gzip's header carries a time and a file name; both are fixed so the same inputs give the same bytes.
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=1) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        listed = manifest(entries).encode()
        tar.addfile(info(MANIFEST_NAME, tarfile.REGTYPE, 0o644, len(listed)), io.BytesIO(listed))
        for folder in sorted(folders_of(entries)):
            tar.addfile(info(folder, tarfile.DIRTYPE, 0o755))
        for dest in sorted(entries):
            source = entries[dest]
            if source is None:
                tar.addfile(info(dest, tarfile.REGTYPE, 0o644), io.BytesIO(b""))
                continue
            st = os.stat(source)  # follows the symlink to the real file
            with open(source, "rb") as f:
                tar.addfile(info(dest, tarfile.REGTYPE, mode_of(source), st.st_size), f)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listing", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--machine", choices=sorted(ELF_MACHINES), help="the machine every ELF file must be for")
    args = parser.parse_args(argv)
    try:
        entries = read_listing(args.listing)
        if args.machine:
            foreign = foreign_elf_files(entries, args.machine)
            if foreign:
                names = {v: k for k, v in ELF_MACHINES.items()}
                raise ValueError(f"{len(foreign)} ELF file(s) not built for {args.machine}: " + "; ".join(
                    f"{dest} ({names.get(got, f'e_machine {got}')})" for dest, got in foreign[:10]))
        pack(entries, args.out)
    except (OSError, ValueError) as e:
        print(f"make_bundle: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
