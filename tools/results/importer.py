"""Run and set folders read as the readers read them (analysis/resultsets.py: a folder they refuse is refused
here too, named), then indexed in the results database (results/db/store.py), one run per transaction."""

import dataclasses
import os

from analysis import resultsets
from results import resultfile, safeio, store as file_store
from results.db import rows

MANIFEST = "manifest.json"


@dataclasses.dataclass
class Outcome:
    added: rows.Imported
    folders: int
    refused: list  # [(folder, reason)]


def _subfolders(path):
    return [os.path.join(path, name) for name in sorted(os.listdir(path))
            if not name.startswith(".") and os.path.isdir(os.path.join(path, name))
            and not os.path.islink(os.path.join(path, name))]


def folders_under(path):
    """The run or set folders at `path`: itself when it holds a manifest, else those one level down (a baselines/
    folder, a host folder), else two (the results root: every host's runs and baselines/, not the folders the
    repository keeps for other things). Links are not followed."""
    if os.path.isfile(os.path.join(path, MANIFEST)):
        return [path]
    one = [f for f in _subfolders(path) if os.path.isfile(os.path.join(f, MANIFEST))]
    if one:
        return one
    skipped = file_store.RESERVED_FOLDERS - {"baselines"}
    return [run for sub in _subfolders(path) if os.path.basename(sub).lower() not in skipped
            for run in _subfolders(sub) if os.path.isfile(os.path.join(run, MANIFEST))]


def default_folders(results_root):
    """Every committed set (baselines/NAME) and every fresh run (HOST/RUN) under the results root."""
    folders = folders_under(os.path.join(results_root, "baselines")) if os.path.isdir(
        os.path.join(results_root, "baselines")) else []
    for host in sorted(os.listdir(results_root)) if os.path.isdir(results_root) else []:
        folder = os.path.join(results_root, host)
        if (host.lower() in file_store.RESERVED_FOLDERS or host.startswith(".") or os.path.islink(folder)
                or not os.path.isdir(folder)):
            continue
        folders += sorted(os.path.join(folder, run) for run in os.listdir(folder)
                          if file_store.RUN_ID_RE.fullmatch(run) and os.path.isfile(os.path.join(folder, run, MANIFEST)))
    return folders


def _relative(path, results_root):
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(results_root))
    return os.path.abspath(path) if rel.startswith("..") else rel


def _document(path, kind, content, results_root):
    return rows.Document(kind=kind, path=_relative(path, results_root), sha256=safeio.sha256_of(path),
                          size_bytes=os.stat(path).st_size, content=content)


def read_folder(folder, results_root):
    """(manifest Document, [result Documents], set name or None) of a run or set folder, checked by the readers."""
    result_set = resultsets.load_run(folder)
    manifest = _document(os.path.join(folder, MANIFEST), "tunelab.run_manifest", result_set.manifest, results_root)
    results = [_document(resultfile.result_path(folder, d["cell"]["id"], d["cell"]["repetition"]),
                         "tunelab.cell_result", d, results_root) for d in result_set.docs]
    return manifest, results, _set_name(folder, results_root)


def _set_name(folder, results_root):
    parent = os.path.dirname(os.path.abspath(folder))
    return os.path.basename(folder) if parent == os.path.abspath(os.path.join(results_root, "baselines")) else None


def _held_already(engine, folder, results_root):
    """Whether every file the readers would read here is held by its sha256 (the folder adds nothing, so it is not
    read again); a file that changed or is new is not held, and the folder is read and checked in full."""
    cells = os.path.join(folder, "cells")
    names = [n for n in os.listdir(cells) if n.endswith(".json") and not n.startswith(".tmp-")] \
        if os.path.isdir(cells) and not os.path.islink(cells) else []
    paths = [os.path.join(folder, MANIFEST)] + [os.path.join(cells, n) for n in sorted(names)]
    if not names or any(os.path.islink(p) or not os.path.isfile(p) for p in paths):
        return False
    return rows.holds(engine, [safeio.sha256_of(p) for p in paths], _set_name(folder, results_root))


def import_folders(engine, folders, results_root, progress=None, everything=False):
    """Indexes each folder; a folder the readers refuse, or one that contradicts the database, is listed with its
    reason and the others still go in. A folder whose files are all held is not read again, unless a migration
    asked that every folder be (rows.reread_pending): `everything` (the folders are every set and run) then
    clears that. progress(folder) is called before each."""
    total, refused = rows.Imported(), []
    reread = rows.reread_pending(engine)
    for folder in folders:
        if progress:
            progress(folder)
        try:
            if not reread and _held_already(engine, folder, results_root):
                continue
            manifest, results, set_name = read_folder(folder, results_root)
            total.add(rows.import_run(engine, manifest, results, set_name=set_name))
        except (resultsets.ResultSetError, rows.ImportRefused, safeio.InputError, OSError) as e:
            refused.append((_relative(folder, results_root), str(e)))
    if reread and everything:
        rows.clear_reread(engine)
    return Outcome(added=total, folders=len(folders), refused=refused)
