"""Run folders that travel as archives: packed on the machine that ran them (a fleet host, the NUMA guest),
unpacked here only after every check passes. An archive from another machine is untrusted input.

An archive holds one run: `<host>/<run>/manifest.json`, `<host>/<run>/cells/*.json`, logs. Before tarfile
parses anything, every header of the decompressed stream (pax and GNU long-name headers too) is counted
against the limits, and an extended header may not be larger than MAX_EXTENDED_HEADER_BYTES. Then it refuses
links, devices, absolute paths and paths leaving the tree, unsafe or over-long names, a manifest that fails
its schema or does not name the run (or, from a fleet, the run, host and fleet that started it), and any
cell document that fails the result schema. Nothing is written until all of that holds, and then only
through results/store.py (staged, renamed into place; a stored run is never rewritten). Every failure is an
ArchiveError.
"""

import gzip
import io
import os
import re
import tarfile
import zlib

from results import resultfile, store
from results import safeio

MAX_ARCHIVE_BYTES = 512 << 20  # compressed
MAX_UNPACKED_BYTES = 2 << 30  # every header and member, as the stream decompresses
MAX_MEMBERS = 200_000  # headers, extended ones included
MAX_EXTENDED_HEADER_BYTES = 64 << 10  # a pax or GNU long-name header; tarfile reads one whole into memory
MAX_NAME_BYTES = 255  # a path component (NAME_MAX)
MAX_PATH_BYTES = 1024  # a path inside the run
BLOCK = 512
_EXTENDED_TYPES = (b"x", b"g", b"L", b"K", b"X")
_UNSAFE_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")
# What a run folder holds (rigs/matrix/runner.py, cellrunner.py): the manifest, cell results, logs, rig work
# folders and cached inputs.
RUN_TOP_LEVEL = ("manifest.json", "cells", "logs", "work", "inputs", "profiles")


class ArchiveError(ValueError):
    pass


def pack_run(run_dir, out_path):
    """Writes run_dir as `<host>/<run>/...` (its last two path parts) into a .tar.gz at out_path."""
    run_dir = os.path.abspath(run_dir)
    arcname = os.path.join(os.path.basename(os.path.dirname(run_dir)), os.path.basename(run_dir))
    with safeio.atomic_file(out_path, binary=True) as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
        tar.add(run_dir, arcname=arcname)
    return out_path


def _header_size(field):
    """A tar header's size field: octal digits, or GNU's base-256 (high bit set, big-endian, signed)."""
    if field[0] & 0x80:
        value = int.from_bytes(field[1:], "big")
        return -value if field[0] & 0x40 else value
    text = field.replace(b"\0", b" ").strip()
    if not text:
        return 0
    if not re.fullmatch(rb"[0-7]+", text):
        raise ArchiveError(f"a tar header's size field {field!r} is not a number")
    return int(text, 8)


def scan_headers(stream, max_members, max_unpacked_bytes):
    """Walks the raw tar stream (decompressed) header by header, as tarfile would, counting every header and
    every byte against the limits before tarfile reads any of it."""
    headers = total = 0
    while True:
        block = stream.read(BLOCK)
        if len(block) < BLOCK or block == bytes(BLOCK):
            return headers  # the end (or a truncated tail, which tarfile reports)
        headers += 1
        total += BLOCK
        if headers > max_members:
            raise ArchiveError(f"more than {max_members} tar headers: refused")
        size = _header_size(block[124:136])
        if size < 0:
            raise ArchiveError("a tar header declares a negative size: refused")
        if block[156:157] in _EXTENDED_TYPES and size > MAX_EXTENDED_HEADER_BYTES:
            raise ArchiveError(f"an extended tar header of {size} bytes (over {MAX_EXTENDED_HEADER_BYTES}): refused")
        padded = -(-size // BLOCK) * BLOCK
        total += padded
        if total > max_unpacked_bytes:
            raise ArchiveError(f"unpacks to more than {max_unpacked_bytes} bytes: refused")
        while padded:
            chunk = stream.read(min(padded, 1 << 20))
            if not chunk:
                return headers
            padded -= len(chunk)


def check_member_name(rel):
    """Refuses a path inside the run that could not be stored safely here: unsafe characters, components
    over NAME_MAX, a path over MAX_PATH_BYTES, or a top-level entry a run folder never has."""
    if _UNSAFE_CHARS.search(rel):
        raise ArchiveError(f"archive member {rel[:120]!r}: control characters or backslashes in its name")
    if len(rel.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        raise ArchiveError(f"archive member {rel[:120]!r}...: a path over {MAX_PATH_BYTES} bytes")
    parts = rel.split("/")
    if any(len(p.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for p in parts):
        raise ArchiveError(f"archive member {rel[:120]!r}...: a name over {MAX_NAME_BYTES} bytes")
    if parts[0] not in RUN_TOP_LEVEL or (parts[0] == "manifest.json") != (len(parts) == 1):
        raise ArchiveError(f"archive member {rel[:120]!r}: a run folder holds only {', '.join(RUN_TOP_LEVEL)}")


def _members(tar, max_members, max_unpacked_bytes):
    members, total = [], 0
    for m in tar:
        members.append(m)
        if len(members) > max_members:
            raise ArchiveError(f"more than {max_members} members: refused")
        name = os.path.normpath(m.name)
        if name.startswith("..") or os.path.isabs(m.name) or not (m.isfile() or m.isdir()):
            raise ArchiveError(f"refused archive member {m.name[:200]!r} (type {m.type!r}): only regular files "
                               "and folders inside the run")
        total += m.size
        if total > max_unpacked_bytes:
            raise ArchiveError(f"unpacks to more than {max_unpacked_bytes} bytes: refused")
    return members


def _open(archive):
    return io.BytesIO(archive) if isinstance(archive, (bytes, bytearray)) else open(archive, "rb")


def read_run(archive, validate=resultfile.validate, max_archive_bytes=MAX_ARCHIVE_BYTES,
             max_unpacked_bytes=MAX_UNPACKED_BYTES, max_members=MAX_MEMBERS):
    """(host folder in the archive, run id, manifest, {path in the run: bytes}) of a checked archive."""
    size = len(archive) if isinstance(archive, (bytes, bytearray)) else os.path.getsize(archive)
    if size > max_archive_bytes:
        raise ArchiveError(f"the archive is {size} bytes, over the {max_archive_bytes} limit")
    with _open(archive) as raw, gzip.GzipFile(fileobj=raw) as stream:
        scan_headers(stream, max_members, max_unpacked_bytes)
    with _open(archive) as source, tarfile.open(fileobj=source, mode="r:gz") as tar:
        members = _members(tar, max_members, max_unpacked_bytes)
        files = {os.path.normpath(m.name): m for m in members if m.isfile()}
        runs = sorted({"/".join(n.split(os.sep)[:2]) for n in files if n.count(os.sep) >= 2})
        if len(runs) != 1:
            raise ArchiveError(f"expected one run (<host>/<run>/...) in the archive, found {runs[:3] or 'none'}")
        run_rel = runs[0]
        strays = sorted(n for n in files if not n.startswith(run_rel + os.sep))
        if strays:
            raise ArchiveError(f"files outside the run {run_rel}: {', '.join(s[:120] for s in strays[:3])}")
        host, run_id = run_rel.split("/")
        try:
            store.check_run_id(run_id)
        except store.StoreError as e:
            raise ArchiveError(str(e)) from None
        for name in files:
            check_member_name(os.path.relpath(name, run_rel))
        manifest_name = os.path.join(run_rel, "manifest.json")
        if manifest_name not in files:
            raise ArchiveError(f"no {manifest_name} in the archive")
        contents = {os.path.relpath(name, run_rel): tar.extractfile(m).read() for name, m in sorted(files.items())}
    try:
        manifest = store.parse_manifest(contents["manifest.json"], manifest_name)
    except store.StoreError as e:
        raise ArchiveError(str(e)) from None
    if manifest["run_id"] != run_id:
        raise ArchiveError(f"{run_rel}/manifest.json names run {manifest['run_id']!r}, not {run_id!r}")
    for rel, data in contents.items():
        if rel.startswith("cells/") and rel.endswith(".json"):
            try:
                doc = resultfile.migrate(resultfile.parse_json(data))
                validate(doc)
            except resultfile.ResultError as e:
                raise ArchiveError(f"{run_rel}/{rel}: not a valid result document: {e}") from None
            if doc.get("run_id") not in (None, run_id):
                raise ArchiveError(f"{run_rel}/{rel} belongs to run {str(doc.get('run_id'))[:40]!r}, not {run_id!r}")
    return host, run_id, manifest, contents


def unpack_run(archive, dest_root, host_folder=None, expect=None, extra=None, validate=resultfile.validate,
               max_archive_bytes=MAX_ARCHIVE_BYTES, max_unpacked_bytes=MAX_UNPACKED_BYTES, max_members=MAX_MEMBERS):
    """Checks the archive (a path or bytes) and stores its one run as dest_root/<host>/<run>, with <host>
    replaced by host_folder when given (a fleet stores runs under the inventory's host name).
    expect: {"run_id": ..., "fleet": {"host": ..., "fleet_id": ...}}, what the caller started; an archive
    of another run, host or fleet is refused. extra: {path in the run: bytes} the caller stores with it
    (e.g. the guest's console log under logs/), never replacing a file of the archive.
    Returns (run folder, files added, files refreshed)."""
    try:
        host, run_id, manifest, contents = read_run(archive, validate, max_archive_bytes, max_unpacked_bytes,
                                                    max_members)
        for rel, data in (extra or {}).items():
            check_member_name(rel)
            if rel in contents:
                raise ArchiveError(f"the archive has {rel} already")
            contents[rel] = data
        if expect:
            if "run_id" in expect and run_id != expect["run_id"]:
                raise ArchiveError(f"the archive holds run {run_id}, not {expect['run_id']}, the run started there")
            if "fleet" in expect and manifest.get("fleet") != expect["fleet"]:
                got = manifest.get("fleet") or {}
                raise ArchiveError(f"run {run_id} says it is host {str(got.get('host'))[:64]!r} of fleet run "
                                   f"{str(got.get('fleet_id'))[:64]!r}, not {expect['fleet']['host']!r} of "
                                   f"{expect['fleet']['fleet_id']!r}: refused")
        return store.import_run(dest_root, host_folder or host, run_id, contents)
    except ArchiveError:
        raise
    except store.StoreError as e:
        raise ArchiveError(str(e)) from None
    except (tarfile.TarError, EOFError, OSError, zlib.error, gzip.BadGzipFile) as e:
        raise ArchiveError(f"not a readable .tar.gz: {str(e)[:300]}") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, UnicodeError, RecursionError,
            MemoryError, OverflowError) as e:
        # Anything tarfile, gzip or json may still raise on a hostile archive: refused, never a crash.
        raise ArchiveError(f"unreadable archive ({type(e).__name__}: {str(e)[:300]})") from None
