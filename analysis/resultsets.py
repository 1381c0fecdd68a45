"""Result sets, read as untrusted data: a stored run, a promoted baseline, or a published reference.

A measured set is a folder holding `manifest.json` and `cells/*.json` (results/<host-id>/<run-id>/ or
results/baselines/<name>/). A published set is one JSON file under results/reference/ (schema
results/schema/published_reference.v1.schema.json): figures from the case studies, never measured here.
"""

import collections
import dataclasses
import glob
import hashlib
import json
import os
import stat

from results import resultfile, store

REFERENCE_KIND = "tunelab.published_reference"
PUBLISHED_LABEL = "published, not measured here"


class ResultSetError(ValueError):
    pass


@dataclasses.dataclass
class ResultSet:
    name: str
    path: str
    manifest: dict  # {} for a published set
    docs: list  # cell result documents (schema-valid), every status
    reference: dict = None  # the published set's document, None for a measured set

    @property
    def published(self):
        return self.reference is not None

    def host_ids(self):
        return sorted({d["provenance"]["host"]["host"]["host_id"] for d in self.docs})

    def metrics(self):
        """{metric: {"unit", "direction"}} from the documents' own declarations, in first-seen order, the
        documents taken in the matrix's order (the manifest's plan): the first metric of the matrix's first cell
        heads a report, not the one whose cell id sorts first."""
        plan = {c["id"]: i for i, c in enumerate(self.manifest.get("cells", [])) if isinstance(c, dict) and "id" in c}
        out = collections.OrderedDict()
        for d in sorted(self.docs, key=lambda d: plan.get(d["cell"]["id"], len(plan))):
            for m in d.get("metrics", []):
                out.setdefault(m["name"], {"unit": m["unit"], "direction": m["direction"],
                                           **({"zero_possible": True} if m.get("zero_possible") else {})})
        return out

    def first_ok(self):
        return next((d for d in self.docs if d["status"] == "ok"), self.docs[0] if self.docs else None)


# Units of a figure that may be negative: a change, a difference. A level in any other unit (a rate, a
# time, a count, a size) is a non-negative amount.
SIGNED_UNITS = frozenset({"%", "percent", "ratio", "change"})


def reference_problem(doc):
    """Why a schema-valid published reference set cannot be shown, or '': every figure finite, and a level
    figure (anything but a change) non-negative, as its unit says."""
    for i, fig in enumerate(doc["figures"]):
        signed = fig.get("kind") == "change" or fig["unit"] in SIGNED_UNITS
        for key in ("value", "low", "high"):
            if key in fig and not signed and fig[key] < 0:
                return f"figures/{i}/{key}: {fig[key]} {fig['unit']} is negative, which a level in that unit cannot be"
        if "low" in fig and "high" in fig and fig["low"] > fig["high"]:
            return f"figures/{i}: low {fig['low']} is above high {fig['high']}"
    return ""


def load_reference(path):
    """A published reference set; raises ResultSetError on anything but a schema-valid document with finite
    (and, for levels, non-negative) figures."""
    try:
        with open(path, "rb") as f:
            doc = resultfile.parse_json(f.read(resultfile.MAX_RESULT_BYTES + 1))
    except OSError as e:
        raise ResultSetError(f"{path}: not a readable file ({e})") from None
    except resultfile.ResultError as e:
        raise ResultSetError(f"{path}: {e}") from None
    problem = resultfile.schema_problem(resultfile.load_schema("published_reference.v1"), doc)
    if problem:
        raise ResultSetError(f"{path}: not a published reference set at {problem}")
    problem = reference_problem(doc)
    if problem:
        raise ResultSetError(f"{path}: {problem}")
    return ResultSet(name=f"reference/{doc['id']}", path=path, manifest={}, docs=[], reference=doc)


def in_bazel_runfiles(path):
    """True for a path inside this process' Bazel runfiles tree (a test's or a `bazel run` tool's own data):
    Bazel makes every file there a link to its source, so links there are Bazel's, not a set's."""
    for var in ("TEST_SRCDIR", "RUNFILES_DIR"):
        root = os.environ.get(var)
        if root and os.path.abspath(path).startswith(os.path.abspath(root).rstrip(os.sep) + os.sep):
            return True
    return False


def _regular_files_only(folder):
    """Refuses a set whose folder, manifest, cells/ folder or any file in cells/ is a link or not a regular
    file (issue 39: linked cells and set folders were followed, and a FIFO hung the site build). Inside a
    Bazel runfiles tree the links are Bazel's: what they point at must still be a regular file."""
    bazels = in_bazel_runfiles(folder)
    for path in (folder, os.path.join(folder, "cells")):
        if os.path.islink(path) and not bazels:
            raise ResultSetError(f"{path} is a symbolic link: a result set holds its own files")
    manifest = os.path.join(folder, "manifest.json")
    if os.path.lexists(manifest) and not stat.S_ISREG((os.stat if bazels else os.lstat)(manifest).st_mode):
        raise ResultSetError(f"{manifest} is not a regular file (a link, a FIFO or a device): refused")
    cells = os.path.join(folder, "cells")
    if os.path.isdir(cells):
        with os.scandir(cells) as entries:
            for entry in entries:
                if not entry.is_file(follow_symlinks=bazels):
                    raise ResultSetError(f"{entry.path} is not a regular file (a link, a FIFO or a device): refused")


def _same_run_problem(doc, cell_id, repetition, run_id):
    """Why a result file does not belong where it lies, or '': its name must be its cell id and repetition,
    its run id the manifest's (issue 39: one run copied to r0..r4 counted as five)."""
    cell = doc.get("cell") or {}
    if cell.get("id") != cell_id or cell.get("repetition") != repetition:
        return (f"holds cell {str(cell.get('id'))[:20]} repetition {cell.get('repetition')} under the name "
                f"{cell_id}.r{repetition}")
    if run_id and doc.get("run_id") != run_id:
        return f"is of run {str(doc.get('run_id'))[:30]}, the manifest's run is {run_id}"
    return ""


def load_run(folder, name=None):
    """A measured set: its manifest and every cell result of the folder, validated; a corrupt file is an
    error, never skipped. Only regular files; each result where its name says (cell id, repetition, the
    manifest's run id), and no measurement twice (the same samples and start time under two names)."""
    _regular_files_only(folder)
    try:
        manifest = store.load_manifest(os.path.join(folder, "manifest.json"))
    except store.StoreError as e:
        raise ResultSetError(f"{folder}: no usable manifest.json: {e}") from None
    docs, seen = [], {}
    for key in sorted(resultfile.stored_results(folder)):
        path = resultfile.result_path(folder, *key)
        try:
            doc = resultfile.load_result(path)
        except (resultfile.ResultError, OSError) as e:
            raise ResultSetError(f"corrupt result in {folder}: {e}") from None
        problem = _same_run_problem(doc, key[0], key[1], manifest.get("run_id"))
        if problem:
            raise ResultSetError(f"foreign result in {folder}: {os.path.basename(path)} {problem}")
        fingerprint = hashlib.sha256(json.dumps([doc.get("started_at"), doc.get("samples")], sort_keys=True)
                                     .encode()).hexdigest()
        if doc.get("status") == "ok" and fingerprint in seen:
            raise ResultSetError(f"duplicated result in {folder}: {os.path.basename(path)} holds the same measurement "
                                 f"as {seen[fingerprint]} (same samples, same start)")
        seen[fingerprint] = os.path.basename(path)
        docs.append(doc)
    if not docs:
        raise ResultSetError(f"{folder}: no cell results (cells/*.json)")
    return ResultSet(name=name or os.path.relpath(folder, os.path.dirname(os.path.dirname(folder))),
                     path=folder, manifest=manifest, docs=docs)


def resolve(spec, results_root):
    """A result set from what a user types: a folder, a reference .json file, a run id, or a name relative
    to `results_root` (baselines/NAME, reference/NAME, HOST/RUN)."""
    candidates = [spec, os.path.join(results_root, spec)]
    for path in candidates:
        if os.path.isfile(path) and path.endswith(".json"):
            return load_reference(path)
        if os.path.isfile(path + ".json"):
            return load_reference(path + ".json")
        if os.path.isdir(path):
            rel = os.path.relpath(os.path.abspath(path), os.path.abspath(results_root))
            return load_run(path, name=spec if rel.startswith("..") else rel)
    runs = sorted(glob.glob(os.path.join(glob.escape(results_root), "*", glob.escape(spec), "manifest.json")))
    if len(runs) == 1:
        folder = os.path.dirname(runs[0])
        return load_run(folder, name=os.path.relpath(folder, results_root))
    if len(runs) > 1:
        raise ResultSetError(f"run id {spec} exists for several hosts: {', '.join(os.path.dirname(r) for r in runs)}")
    hint = store.stored_runs_hint(results_root)
    raise ResultSetError(f"no result set {spec!r}: not a folder with manifest.json, a reference .json file, or a "
                         f"run id under {results_root}" + (f" ({hint})" if hint else ""))


def provenance(doc):
    """The facts two compared results should share, by name. Values are strings, for display."""
    p = doc["provenance"]
    jdk = p.get("jdk") or {}
    return {
        "host": p["host"]["host"]["host_id"],
        "cpu": p["host"]["cpu"].get("model_name", "?"),
        "architecture": p["host"]["cpu"].get("architecture") or "?",
        "workload": f"{p['workload']['id']} sha256 {p['workload']['sha256'][:12]}",
        "generated inputs": " ".join(f"{k}={v[:12]}" for k, v in sorted((p["workload"].get("generated") or {}).items())
                                     if k not in (p["workload"].get("generated_host_specific") or [])),
        "host-specific inputs": " ".join(f"{k}={v[:12]}" for k, v in sorted((p["workload"].get("generated") or {}).items())
                                         if k in (p["workload"].get("generated_host_specific") or [])),
        "jdk build": f"{jdk.get('vendor', '?')} {jdk.get('runtime_version', jdk.get('version', '?'))}" if jdk else "none",
        "variant": (f"{p['variant']['name']} jars {p['variant']['bump']['bump_sha256'][:12]}" if p["variant"].get("bump")
                    else f"{p['variant']['name']} patches {(p['variant'].get('patch_set_sha256') or 'none')[:12]}"),
        "harness": p["harness_commit"][:12] + (" (dirty)" if p.get("harness_dirty") else ""),
        "rig": doc["matrix"]["rig"],
        "runner": f"in image {p['runner_image']}" if p.get("runner_image") else "on the host",
    }


def provenance_differences(doc_a, doc_b, allowed):
    """[(fact, value a, value b)] for every provenance fact that differs and is not in `allowed`."""
    a, b = provenance(doc_a), provenance(doc_b)
    return [(k, a[k], b[k]) for k in a if k not in allowed and a[k] != b[k]]
