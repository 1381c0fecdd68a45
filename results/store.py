"""The result store: every write under results/ goes through here, and every run folder read is checked here.

Layout: results/<host folder>/<run id>/ (manifest.json, cells/, logs/, work/), results/baselines/<name>/,
results/reference/*.json, results/.fleet/<fleet id>/. Rules:
- A host folder name is a safe name (HOST_FOLDER_RE), never a folder the repository keeps (baselines,
  reference, schema, testdata) nor one holding anything but runs; a run id has the runner's shape.
- The manifest is validated against results/schema/run_manifest.v1.schema.json on every write and read.
- A complete run is immutable: its manifest, cells and logs are never replaced. A resumed run adds only the
  cells it is missing, under the same run id. Cell results are never rewritten (write_result_file).
- The documents kept beside results (sensitivity figures, fidelity reports, a bisect's record) are written
  here too (write_side_document), each under its own name with the kind that name holds.
- A cell's profiles (its profiled launch's recording and collapsed stacks, issue 60) go under profiles/ of its
  run, compressed, once (write_profile); a resumed run removes those of a cell that has no result.
- A run or baseline arriving whole (an archive from another machine, a promotion) is written into a staging
  folder beside its target, checked, and renamed into place: never half there.
"""

import gzip
import hashlib
import os
import re
import shutil

from results import resultfile, safeio

HOST_FOLDER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RUN_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}$")
BASELINE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
# Folders under results/ that hold no host's runs (tracked by the repository, or the fleet's own state).
RESERVED_FOLDERS = frozenset({"baselines", "bisects", "db", "reference", "schema", "testdata", "site"})
MANIFEST_SCHEMA_VERSION = 1
MAX_MANIFEST_BYTES = 64 << 20


class StoreError(ValueError):
    pass


def validate_manifest(doc):
    """Raises StoreError naming the first problem: not an object, too deep, a NaN or infinite number,
    or a schema violation."""
    if not isinstance(doc, dict):
        raise StoreError(f"a run manifest must be a JSON object, not {type(doc).__name__}")
    try:
        resultfile.check_shape(doc)
    except resultfile.ResultError as e:
        raise StoreError(f"manifest: {e}") from None
    problem = resultfile.schema_problem(resultfile.load_schema(f"run_manifest.v{MANIFEST_SCHEMA_VERSION}"), doc)
    if problem:
        raise StoreError(f"manifest does not match schema v{MANIFEST_SCHEMA_VERSION} at {problem}")
    return doc


def manifest_cell(cell_id, params, skip_reason, repetitions):
    """One entry of a manifest's cells: repetitions is {repetition number: "pending" or its status}."""
    return {"id": cell_id, "params": params, "skip_reason": skip_reason or None,
            "repetitions": {str(r): status for r, status in repetitions.items()}}


def manifest_document(run_id, state, *, matrix, workload, host_id, cells, order, updated_at, preflight=None,
                      host_reference=None, revisions=None, sequential=None, noise_reruns=None, fleet=None):
    """A run's manifest (results/schema/run_manifest.v1.schema.json), validated: raises StoreError on a field
    the schema refuses, before anything is written.
    matrix: the matrix block (name, rig, spec_sha256, ...); workload: {id, sha256}; cells: manifest_cell()s;
    order: [(cell id, repetition)] as run; revisions: {name: {commit, runfiles}}; sequential and noise_reruns:
    the policy's state blocks (rigs/matrix/rounds/sequential_rounds.py, noisyrounds.py); fleet: {host, fleet_id}."""
    return validate_manifest({
        "schema_version": MANIFEST_SCHEMA_VERSION, "kind": "tunelab.run_manifest", "run_id": run_id,
        "state": state, "matrix": matrix, "workload": workload, "host_id": host_id, "preflight": preflight,
        "host_reference": host_reference, "revisions": revisions or {}, "cells": list(cells),
        "order": [[cell_id, r] for cell_id, r in order], "updated_at": updated_at, "sequential": sequential,
        "noise_reruns": noise_reruns, "fleet": fleet or None,
    })


def parse_manifest(data, name="manifest.json"):
    """A manifest from bytes, as untrusted input."""
    try:
        doc = resultfile.parse_json(data, MAX_MANIFEST_BYTES)
    except resultfile.ResultError as e:
        raise StoreError(f"{name}: {e}") from None
    try:
        return validate_manifest(doc)
    except StoreError as e:
        raise StoreError(f"{name}: {e}") from None


def load_manifest(path):
    try:
        data = safeio.read_bytes(path, MAX_MANIFEST_BYTES)
    except safeio.InputError as e:
        raise StoreError(str(e)) from None
    except OSError as e:
        raise StoreError(f"{path}: cannot be read ({e.strerror or e})") from None
    return parse_manifest(data, path)


def check_run_id(run_id):
    if not isinstance(run_id, str) or not RUN_ID_RE.fullmatch(run_id):
        raise StoreError(f"run id {str(run_id)[:80]!r}: expected YYYYMMDDTHHMMSSZ-xxxx, as the runner makes them")
    return run_id


def check_host_folder(results_root, name):
    """Refuses a host folder name that is unsafe, reserved, or names a folder that holds anything but runs."""
    if not isinstance(name, str) or not HOST_FOLDER_RE.fullmatch(name):
        raise StoreError(f"host folder {str(name)[:80]!r}: use 1-64 letters, digits, '.', '_' and '-', starting "
                         "with a letter or digit")
    if name.lower() in RESERVED_FOLDERS:
        raise StoreError(f"host folder {name!r}: reserved (results/{name} is not a host's folder)")
    path = os.path.join(results_root, name)
    if os.path.islink(path) or (os.path.exists(path) and not os.path.isdir(path)):
        raise StoreError(f"host folder {path} is a link or a file, not a host's folder of runs")
    if os.path.isdir(path):
        strays = sorted(e for e in os.listdir(path) if not RUN_ID_RE.fullmatch(e) and not e.startswith(".staging-"))
        if strays:
            raise StoreError(f"{path} holds {', '.join(strays[:3])}: not a host's folder of runs; refused")
    return name


def run_dir(results_root, host_folder, run_id):
    """results_root/<host>/<run>, both names checked."""
    return os.path.join(results_root, check_host_folder(results_root, host_folder), check_run_id(run_id))


def stored_runs_hint(results_root, limit=5):
    """What a user could have meant, for an error about a run or set that is not there: the newest run ids
    (with their host folders) and the count of committed sets, one line; '' when there is nothing."""
    runs = []
    if os.path.isdir(results_root):
        for host in sorted(os.listdir(results_root)):
            folder = os.path.join(results_root, host)
            if host.lower() in RESERVED_FOLDERS or not os.path.isdir(folder) or os.path.islink(folder):
                continue
            runs += [(run, host) for run in os.listdir(folder) if RUN_ID_RE.fullmatch(run)]
    runs.sort(reverse=True)  # run ids start with their UTC start time
    baselines = os.path.join(results_root, "baselines")
    sets = sorted(n for n in os.listdir(baselines) if os.path.isdir(os.path.join(baselines, n))) \
        if os.path.isdir(baselines) else []
    parts = []
    if runs:
        parts.append(f"runs here, newest first: {', '.join(f'{r} ({h})' for r, h in runs[:limit])}"
                     + (f" and {len(runs) - limit} more" if len(runs) > limit else ""))
    if sets:
        parts.append(f"{len(sets)} committed sets under baselines/ (e.g. baselines/{sets[-1]})")
    return "; ".join(parts)


def stored_state(folder):
    """The state of the run stored in `folder` ('absent' when it has no manifest)."""
    path = os.path.join(folder, "manifest.json")
    if not os.path.exists(path):
        return "absent"
    return load_manifest(path)["state"]


def write_manifest(folder, doc):
    """Validates and writes a run's manifest; a complete run's manifest is never replaced."""
    validate_manifest(doc)
    if os.path.basename(folder) != doc["run_id"]:
        raise StoreError(f"manifest of run {doc['run_id']} written into {folder}")
    if stored_state(folder) == "complete":
        raise StoreError(f"{folder} is a complete run: stored runs are never rewritten")
    if stored_state(folder) != "absent":
        problem = contradiction(load_manifest(os.path.join(folder, "manifest.json")), doc)
        if problem:
            raise StoreError(f"{folder}: the new manifest contradicts the stored one ({problem}): refused")
    safeio.write_json(os.path.join(folder, "manifest.json"), doc)


# What a stored manifest says that a later manifest of the same run must repeat (issue 58, row 8: a resume
# archive changed host_id, the question and the parameters of stored cells, and the reader took it).
FIXED_FIELDS = ("run_id", "host_id", "matrix", "workload")


def contradiction(stored, arriving):
    """'' when `arriving` only adds to `stored` (new cells, repetitions, statuses of pending repetitions, a
    later state); else what it changes, named."""
    for field in FIXED_FIELDS:
        if stored.get(field) != arriving.get(field):
            return f"{field} differs"
    cells = {c["id"]: c for c in arriving["cells"]}
    for old in stored["cells"]:
        new = cells.get(old["id"])
        if new is None:
            return f"cell {old['id']} is gone"
        if new["params"] != old["params"] or new["skip_reason"] != old["skip_reason"]:
            return f"cell {old['id']} has other parameters or another skip reason"
        for rep, status in old["repetitions"].items():
            if status != "pending" and new["repetitions"].get(rep) != status:
                return f"cell {old['id']} repetition {rep} was {status}, now {new['repetitions'].get(rep)}"
    if [tuple(x) for x in arriving["order"][:len(stored["order"])]] != [tuple(x) for x in stored["order"]]:
        return "the order of rounds already run differs"
    return ""


def write_result(folder, cell_id, repetition, doc):
    """Validates and stores one cell result of an incomplete run; never rewrites one."""
    if stored_state(folder) == "complete":
        raise StoreError(f"{folder} is a complete run: nothing is added to it")
    write_result_file(resultfile.result_path(folder, cell_id, repetition), doc)


def write_result_file(path, doc):
    """Validates and writes a new result file (resultfile.ResultError if invalid or already there: a stored
    result is never rewritten)."""
    resultfile.validate(doc)
    if os.path.lexists(path):
        raise resultfile.ResultError(f"{path} exists; stored results are never rewritten")
    safeio.write_json(path, doc)


# A cell's profiles (issue 60): the profiled launch's JFR recording and its collapsed stacks per event, each
# gzip-compressed under profiles/ of the run, written once like a result.
PROFILE_EVENTS = ("cpu", "wall", "alloc", "lock")  # the events a profile may hold (the result schema's enum)
# A recording (the JVM agent's JFR, or perf script's text of a native server's perf record) and collapsed stacks per event.
PROFILE_PARTS = {"jfr": "jfr", "perf_script": "perf.script", **{event: f"{event}.collapsed" for event in PROFILE_EVENTS}}
MAX_PROFILE_SOURCE_BYTES = 1 << 30


def profile_path(folder, cell_id, repetition, part):
    """profiles/<cell>.r<rep>.<part>.gz of a run folder (part: PROFILE_PARTS)."""
    if part not in PROFILE_PARTS:
        raise StoreError(f"profile part {part!r}: one of {', '.join(PROFILE_PARTS)}")
    base = os.path.basename(resultfile.result_path(folder, cell_id, repetition))[: -len(".json")]
    return os.path.join(folder, "profiles", f"{base}.{PROFILE_PARTS[part]}.gz")


def write_profile(folder, cell_id, repetition, part, source):
    """Stores the file `source` (a recording or collapsed stacks) compressed as the cell's profile `part`, never
    replacing one; returns {file (relative to the run), sha256 (of the stored file), bytes}."""
    if stored_state(folder) == "complete":
        raise StoreError(f"{folder} is a complete run: nothing is added to it")
    path = profile_path(folder, cell_id, repetition, part)
    if os.path.lexists(path):
        raise StoreError(f"{path} exists; stored profiles are never rewritten")
    try:
        data = safeio.read_bytes(source, MAX_PROFILE_SOURCE_BYTES)
    except (safeio.InputError, OSError) as e:
        raise StoreError(f"profile {part}: {e}") from None
    packed = gzip.compress(data, compresslevel=6, mtime=0)
    safeio.check_folder(os.path.dirname(path), create=True)
    safeio.write_bytes(path, packed)
    return {"file": os.path.relpath(path, folder), "sha256": hashlib.sha256(packed).hexdigest(), "bytes": len(packed)}


def remove_orphan_profiles(folder):
    """Deletes the profiles of a (cell, repetition) with no stored result: a cell interrupted between its
    profiled launch and its result left them, and nothing names them (a result names its profiles), so the
    resumed run profiles it again. Returns their names."""
    profiles_dir = os.path.join(folder, "profiles")
    if not os.path.isdir(profiles_dir) or os.path.islink(profiles_dir):
        return []
    done = resultfile.stored_results(folder)
    removed = []
    for name in sorted(os.listdir(profiles_dir)):
        cell_id, sep, rest = name.partition(".r")
        rep = rest.split(".", 1)[0]
        if sep and rep.isdigit() and (cell_id, int(rep)) in done:
            continue
        path = os.path.join(profiles_dir, name)
        if os.path.isfile(path) and not os.path.islink(path):
            os.unlink(path)
            removed.append(name)
    return removed


# The documents tunelab keeps beside a run's or a set's results, by file name, with the kinds each may hold:
# written here only, replaced whole (a recomputation or a bisect's next step replaces the last), never a
# result or a manifest.
SIDE_DOCUMENTS = {
    "sensitivity.json": ("kind", {"tunelab.sensitivity"}),  # tools/sensitivity/sensitivity.py: a set's gate figures
    "fidelity.json": ("kind", {"tunelab.namenode_fidelity", "tunelab.yarn_cps_fidelity"}),  # rigs/*/fidelity.py
    "fidelity-steady.json": ("kind", {"tunelab.namenode_fidelity"}),
    "bisect.json": ("schema", {"tunelab.bisect/1"}),  # tools/bisection/command.py: a bisect's record
    "gate.json": ("kind", {"tunelab.gate_verdicts"}),  # results/gaterecord.py: the gate's verdicts of a run
    # tools/sensitivity/sensitivity.py --write-nights: results/baselines/nights.json, what each gated design promises
    "nights.json": ("kind", {"tunelab.night_promises"}),
}


def write_side_document(folder, name, doc):
    """Writes `doc` as `folder`/`name`, one of SIDE_DOCUMENTS, if it declares a kind that name holds;
    StoreError otherwise. Returns the path."""
    if name not in SIDE_DOCUMENTS:
        raise StoreError(f"{name}: not a document the store keeps beside results ({', '.join(SIDE_DOCUMENTS)})")
    field, kinds = SIDE_DOCUMENTS[name]
    if not isinstance(doc, dict) or doc.get(field) not in kinds:
        raise StoreError(f"{name} holds a document of {field} {' or '.join(sorted(kinds))}, not "
                         f"{doc.get(field) if isinstance(doc, dict) else type(doc).__name__!r}")
    path = os.path.join(folder, name)
    safeio.write_json(path, doc)
    return path


def write_fleet_state(results_root, fleet_id, doc):
    """The fleet controller's state file, results/.fleet/<fleet id>/fleet.json."""
    safeio.write_json(os.path.join(_fleet_folder(results_root, fleet_id), "fleet.json"), doc)


def write_fleet_service_discovery(results_root, fleet_id, targets):
    """Prometheus' file_sd list of a watched fleet run's endpoints ([{targets, labels}]), beside its state:
    results/.fleet/<fleet id>/prometheus-sd.json; its path."""
    if not isinstance(targets, list) or not all(isinstance(t, dict) and set(t) == {"targets", "labels"} for t in targets):
        raise StoreError("a service discovery file holds a list of {targets, labels}")
    path = os.path.join(_fleet_folder(results_root, fleet_id), "prometheus-sd.json")
    safeio.write_json(path, targets)
    return path


def _fleet_folder(results_root, fleet_id):
    if not re.fullmatch(r"^fleet-[0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}$", fleet_id):
        raise StoreError(f"fleet id {fleet_id[:80]!r}: not a fleet id")
    return os.path.join(results_root, ".fleet", fleet_id)


def _same_bytes(path, data):
    try:
        with open(path, "rb") as f:
            return f.read(len(data) + 1) == data
    except OSError:
        return False


def import_run(results_root, host_folder, run_id, contents):
    """Stores a run that arrives whole ({relative path: bytes}, checked by the caller file by file; this
    checks the manifest and where each file goes). A new run is staged beside its target and renamed into
    place. Into an incomplete stored run of the same id it adds only files that are not there (new cells,
    their logs) and then the new manifest; a file already stored must come back byte-identical. A complete
    stored run takes nothing that differs. Returns (run folder, added, refreshed)."""
    target = run_dir(results_root, host_folder, run_id)
    manifest = parse_manifest(contents.get("manifest.json", b"") or b"null", f"{host_folder}/{run_id}/manifest.json")
    if manifest["run_id"] != run_id:
        raise StoreError(f"{host_folder}/{run_id}/manifest.json names run {manifest['run_id']!r}")
    for rel in contents:
        parts = rel.split("/")
        if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise StoreError(f"{rel!r}: not a path inside the run")
    if not os.path.exists(target):
        staging = safeio.new_folder(os.path.dirname(target), f".staging-{run_id}-")
        try:
            for rel, data in contents.items():
                safeio.create_new(os.path.join(staging, rel), data)
            os.chmod(staging, 0o755)
            safeio.move_into_place(staging, target)  # fails if another writer got there first: nothing is mixed
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return target, sorted(contents), []
    if os.path.islink(target) or not os.path.isdir(target):
        raise StoreError(f"{target} is not a run folder")
    stored = load_manifest(os.path.join(target, "manifest.json"))
    if stored["matrix"]["spec_sha256"] != manifest["matrix"]["spec_sha256"]:
        raise StoreError(f"{target}: the arriving run has another matrix (spec {manifest['matrix']['spec_sha256'][:12]} "
                         f"vs stored {stored['matrix']['spec_sha256'][:12]}): refused")
    added, changed = [], []
    for rel, data in sorted(contents.items()):
        path = os.path.join(target, rel)
        if os.path.lexists(path):
            if not _same_bytes(path, data):
                changed.append(rel)
        else:
            added.append(rel)
    if stored["state"] == "complete" and (added or changed):
        raise StoreError(f"{target} is a complete run: refused {len(added)} new and {len(changed)} changed file(s) "
                         f"(e.g. {(changed + added)[0]}); stored runs are never rewritten")
    rewritten = [rel for rel in changed if rel != "manifest.json"]
    if rewritten:
        raise StoreError(f"{os.path.join(target, rewritten[0])} differs from the arriving copy: a stored file is "
                         "never replaced (a resumed run only adds what it was missing)")
    problem = contradiction(stored, manifest)
    if problem:
        raise StoreError(f"{target}: the arriving manifest contradicts the stored one ({problem}): refused")
    staging = safeio.new_folder(target, ".staging-")
    try:
        for index, rel in enumerate(added):
            if rel == "manifest.json":
                continue
            staged = os.path.join(staging, str(index))
            safeio.create_new(staged, contents[rel])
            safeio.move_into_place(staged, os.path.join(target, rel))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    refreshed = []
    if "manifest.json" in changed:
        safeio.write_json(os.path.join(target, "manifest.json"), manifest)
        refreshed.append("manifest.json")
    return target, [a for a in added if a != "manifest.json"], refreshed


# What a tool wrote into a run that belongs with it when it is promoted: the sensitivity figures
# (//tools:sensitivity writes sensitivity.json into its A/A run).
PROMOTED_EXTRAS = ("sensitivity.json",)


def profiles_named(cells_folder):
    """[(path relative to the run, sha256)] of every profile file the results in `cells_folder` name."""
    named = []
    for name in sorted(os.listdir(cells_folder)):
        if name.startswith(".tmp-") or not name.endswith(".json"):
            continue
        doc = resultfile.load_result(os.path.join(cells_folder, name))
        block = doc.get("profile") or {}
        for stored in [block.get("jfr"), block.get("perf_script")] + list(block.get("collapsed", {}).values()):
            if stored:
                named.append((stored["file"], stored["sha256"]))
    return named


def promote(run_folder, baselines, name, replace=False, load_run=None):
    """Copies a run's manifest and cell results, with the profiles they name, to baselines/<name> (staged, then renamed into place);
    an existing baseline only with `replace`, swapped whole. load_run validates the run first (every
    result; analysis.resultsets.load_run)."""
    if not BASELINE_NAME_RE.fullmatch(name or ""):
        raise StoreError(f"baseline name {name!r}: use letters, digits, - and _")
    result_set = load_run(run_folder) if load_run else None
    load_manifest(os.path.join(run_folder, "manifest.json"))
    target = os.path.join(baselines, name)
    if os.path.exists(target) and not replace:
        raise StoreError(f"{target} exists; pass --replace to swap it for {run_folder}")
    staging = safeio.new_folder(baselines, f".{name}-")
    try:
        safeio.copy_file(os.path.join(run_folder, "manifest.json"), os.path.join(staging, "manifest.json"), 0o644)
        for extra in PROMOTED_EXTRAS:
            path = os.path.join(run_folder, extra)
            if os.path.isfile(path) and not os.path.islink(path):
                try:  # JSON, finite, bounded, as every file of the store
                    data = safeio.read_bytes(path, resultfile.MAX_RESULT_BYTES)
                    safeio.parse_json(data, resultfile.MAX_RESULT_BYTES)
                except safeio.InputError as e:
                    raise StoreError(f"{path}: {e}") from None
                safeio.create_new(os.path.join(staging, extra), data)
        cells = os.path.join(run_folder, "cells")
        for cell in sorted(os.listdir(cells)):
            if not cell.startswith(".tmp-"):
                safeio.copy_file(os.path.join(cells, cell), os.path.join(staging, "cells", cell), 0o644)
        for rel, sha256 in profiles_named(os.path.join(staging, "cells")):
            source = os.path.join(run_folder, rel)
            if not os.path.isfile(source) or os.path.islink(source) or safeio.sha256_of(source) != sha256:
                raise StoreError(f"{source}: missing, or not the profile its result names (sha256); not promoted")
            safeio.copy_file(source, os.path.join(staging, rel), 0o644)
        os.chmod(staging, 0o755)
        old = None
        if os.path.exists(target):
            old = target + ".old"
            safeio.move_into_place(target, old, replace=True)
        safeio.move_into_place(staging, target, replace=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if old:
        shutil.rmtree(old)
    return target, len(result_set.docs) if result_set else len(os.listdir(os.path.join(target, "cells")))
