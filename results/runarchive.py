"""Run folders that travel as archives: packed on the machine that ran them (a fleet host, the NUMA guest),
unpacked here only after every check passes. An archive from another machine is untrusted input.

An archive holds one run: `<host>/<run>/manifest.json`, `<host>/<run>/cells/*.json`, logs. Unpacking
refuses links, devices, absolute paths and paths leaving the tree, more members or bytes than the limits,
a manifest that does not name the run, and any cell document that fails the result schema; nothing is
written until all of that holds. Into an existing run folder (a resumed run brought home again) it adds
new files and refreshes the manifest and logs, but never changes a stored cell result: a cell file that
differs from the one already here is refused.
"""

import io
import json
import os
import tarfile
import tempfile

from results import resultfile

MAX_ARCHIVE_BYTES = 512 << 20  # compressed
MAX_UNPACKED_BYTES = 2 << 30  # held in memory while checked
MAX_MEMBERS = 200_000


class ArchiveError(ValueError):
    pass


def pack_run(run_dir, out_path):
    """Writes run_dir as `<host>/<run>/...` (its last two path parts) into a .tar.gz at out_path."""
    run_dir = os.path.abspath(run_dir)
    arcname = os.path.join(os.path.basename(os.path.dirname(run_dir)), os.path.basename(run_dir))
    with tarfile.open(out_path, "w:gz") as tar:
        tar.add(run_dir, arcname=arcname)
    return out_path


def _members(tar, max_members, max_unpacked_bytes):
    members, total = [], 0
    for m in tar:
        members.append(m)
        if len(members) > max_members:
            raise ArchiveError(f"more than {max_members} members: refused")
        name = os.path.normpath(m.name)
        if name.startswith("..") or os.path.isabs(m.name) or not (m.isfile() or m.isdir()):
            raise ArchiveError(f"refused archive member {m.name!r} (type {m.type!r}): only regular files and "
                               "folders inside the run")
        total += m.size
        if total > max_unpacked_bytes:
            raise ArchiveError(f"unpacks to more than {max_unpacked_bytes} bytes: refused")
    return members


def unpack_run(archive, dest_root, host_folder=None, validate=resultfile.validate,
               max_archive_bytes=MAX_ARCHIVE_BYTES, max_unpacked_bytes=MAX_UNPACKED_BYTES, max_members=MAX_MEMBERS):
    """Checks the archive (a path or bytes) and unpacks its one run into dest_root/<host>/<run>, with <host>
    replaced by host_folder when given (a fleet stores runs under the inventory's host name). Returns
    (run folder, files added, files refreshed)."""
    size = len(archive) if isinstance(archive, (bytes, bytearray)) else os.path.getsize(archive)
    if size > max_archive_bytes:
        raise ArchiveError(f"the archive is {size} bytes, over the {max_archive_bytes} limit")
    source = io.BytesIO(archive) if isinstance(archive, (bytes, bytearray)) else open(archive, "rb")
    try:
        with tarfile.open(fileobj=source, mode="r:gz") as tar:
            members = _members(tar, max_members, max_unpacked_bytes)
            files = {os.path.normpath(m.name): m for m in members if m.isfile()}
            runs = sorted({"/".join(n.split(os.sep)[:2]) for n in files if n.count(os.sep) >= 2})
            if len(runs) != 1:
                raise ArchiveError(f"expected one run (<host>/<run>/...) in the archive, found {runs or 'none'}")
            run_rel = runs[0]
            strays = sorted(n for n in files if not n.startswith(run_rel + os.sep))
            if strays:
                raise ArchiveError(f"files outside the run {run_rel}: {', '.join(strays[:3])}")
            run_id = run_rel.split("/")[1]
            manifest = _json_member(tar, files, os.path.join(run_rel, "manifest.json"))
            if manifest.get("run_id") != run_id:
                raise ArchiveError(f"{run_rel}/manifest.json names run {manifest.get('run_id')!r}, not {run_id!r}")
            contents = {}
            for name, m in sorted(files.items()):
                data = tar.extractfile(m).read()
                rel = os.path.relpath(name, run_rel)
                if rel.startswith("cells" + os.sep) and rel.endswith(".json"):
                    try:
                        doc = json.loads(data)
                        validate(doc)
                    except (ValueError, resultfile.ResultError) as e:
                        raise ArchiveError(f"{name}: not a valid result document: {e}") from None
                    if doc.get("run_id") not in (None, run_id):
                        raise ArchiveError(f"{name} belongs to run {doc.get('run_id')!r}, not {run_id!r}")
                contents[rel] = data
    except (tarfile.TarError, EOFError, OSError) as e:
        raise ArchiveError(f"not a readable .tar.gz: {e}") from None
    finally:
        source.close()

    host = host_folder or run_rel.split("/")[0]
    if not host or host in (".", "..") or os.sep in host:
        raise ArchiveError(f"bad host folder name {host!r}")
    target = os.path.join(dest_root, host, run_id)
    added, refreshed = [], []
    for rel, data in contents.items():
        path = os.path.join(target, rel)
        if not os.path.exists(path):
            added.append(rel)
            continue
        with open(path, "rb") as f:
            if f.read() == data:
                continue
        if rel.startswith("cells" + os.sep):
            raise ArchiveError(f"{path} differs from the brought-home copy: a stored result is never replaced")
        refreshed.append(rel)
    os.makedirs(target, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target, prefix=".unpack-") as tmp:
        for index, rel in enumerate(added + refreshed):
            staged = os.path.join(tmp, str(index))
            with open(staged, "wb") as f:
                f.write(contents[rel])
            os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
            os.replace(staged, os.path.join(target, rel))
    return target, added, refreshed


def _json_member(tar, files, name):
    if name not in files:
        raise ArchiveError(f"no {name} in the archive")
    try:
        return json.loads(tar.extractfile(files[name]).read())
    except ValueError as e:
        raise ArchiveError(f"{name}: not JSON: {e}") from None
