"""Result files: one JSON document per cell repetition, schema-validated, written atomically, never edited.

The one module that reads stored results, validates and migrates them (results/store.py writes them): the
matrix runner (which measures and stores) and analysis/ and tools/ (which read) all import it, and neither
imports the other.

Layout of a run: results/<host-id>/<run-id>/
  manifest.json                 every planned cell, its status and reason, the interleaved order
  cells/<cell-id>.r<rep>.json   one result per repetition (results/schema/cell_result.v2.schema.json)
  logs/<cell-id>.r<rep>.{out,err}
Result files from elsewhere are untrusted: size-limited, schema-validated, parsed as data only.
"""

import copy
import os
import statistics

from results import safeio

SCHEMA_VERSION = 2
# A reader's budget per result file (issue 39: a 63 MiB cell of 850,000 samples cost 40 s and 0.93 GB to read,
# accepted). The largest result stored so far is 152 KB (415 samples); the schema caps samples at 200,000 a list.
MAX_RESULT_BYTES = 16 << 20
# One error for every refused input (results/safeio.py): callers that catch ResultError catch the reader's too.
ResultError = safeio.InputError
MAX_DEPTH = safeio.MAX_DEPTH
MAX_INTEGER = safeio.MAX_INTEGER
check_shape = safeio.check_shape
schema_problem = safeio.schema_problem
load_schema = safeio.load_schema


def schema_path(name=f"cell_result.v{SCHEMA_VERSION}"):
    return safeio.schema_path(name)


def schema():
    return load_schema(f"cell_result.v{SCHEMA_VERSION}")


def validate(doc):
    """Raises ResultError naming the first problem: too deep, a NaN or infinite number, or a schema violation."""
    if not isinstance(doc, dict):
        raise ResultError(f"a result must be a JSON object, not {type(doc).__name__}")
    check_shape(doc)
    problem = schema_problem(schema(), doc)
    if problem:
        raise ResultError(f"result does not match schema v{SCHEMA_VERSION} at {problem}")


# Version 1 named some metrics with their unit; version 2 keeps units in the unit fields only.
V1_METRIC_NAMES = {
    "get_requests_per_s": "get_rate", "set_requests_per_s": "set_rate",
    "get_p50_ms": "get_latency_p50", "get_p99_ms": "get_latency_p99", "get_p99_99_ms": "get_latency_p99_99",
    "set_p50_ms": "set_latency_p50", "set_p99_ms": "set_latency_p99", "set_p99_99_ms": "set_latency_p99_99",
    "used_memory_after_load_MiB": "used_memory_after_load",
}


def v1_metric_name(name):
    """The version 2 name of a version 1 metric (the NameNode's `<op>_ops_per_s` became `<op>_rate`)."""
    if name in V1_METRIC_NAMES:
        return V1_METRIC_NAMES[name]
    return name[:-len("_ops_per_s")] + "_rate" if name.endswith("_ops_per_s") else name


def _v1_locality_parts(doc, before, observations):
    ratios = [round(observations["migration"][when]["local_ratio"] * 100, 2) for when in ("before", "after")]
    defs = {m["name"]: {"unit": m["unit"], "direction": m["direction"]} for m in doc["metrics"]}
    defs["local_page_ratio"] = {"unit": "%", "direction": "higher_is_better"}
    units = {s["metric"]: s["unit"] for s in doc["samples"]}
    pre = [{"metric": v1_metric_name(m), "value": v, "unit": units[v1_metric_name(m)], "t": 0.0}
           for m, v in sorted(before.items())]
    parts = []
    for value, samples, ratio in (("pre", pre, ratios[0]), ("post", copy.deepcopy(doc["samples"]), ratios[1])):
        samples.append({"metric": "local_page_ratio", "value": ratio, "unit": "%", "t": 0.0})
        parts.append({"value": value, "samples": samples, "metrics": run_metrics(samples, defs)})
    return parts


def _listed(value):
    return value if isinstance(value, list) else []


def _v1_to_v2(doc):
    for key in ("samples", "warmup_samples"):
        for sample in _listed(doc.get(key)):
            if isinstance(sample, dict) and isinstance(sample.get("metric"), str):
                sample["metric"] = v1_metric_name(sample["metric"])
    for metric in _listed(doc.get("metrics")):
        if isinstance(metric, dict) and isinstance(metric.get("name"), str):
            metric["name"] = v1_metric_name(metric["name"])
    observations = doc.get("observations")
    if isinstance(observations, dict) and isinstance(observations.get("before_migration"), dict):
        # The Redis rig's pressured-then-migrated cells kept the benchmark before the migration aside; version 2
        # declares both halves as parts of the result, each with the server's local-page ratio.
        before = observations.pop("before_migration")
        try:
            doc["split"] = {"axis": "locality", "parts": _v1_locality_parts(doc, before, observations)}
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ResultError(f"version 1 result: cannot migrate its observations.before_migration ({e!r})") from None
    doc["schema_version"] = 2
    return doc


MIGRATIONS = {1: _v1_to_v2}  # version -> the step to the next one


def migrate(doc):
    """Brings an older result document up to SCHEMA_VERSION (in place, and returns it); refuses newer or
    unknown versions. Each version adds one step to MIGRATIONS, so old result sets stay comparable.
    """
    if not isinstance(doc, dict):
        raise ResultError(f"a result is a JSON object, not {type(doc).__name__}")
    version = doc.get("schema_version")
    while isinstance(version, int) and not isinstance(version, bool) and version in MIGRATIONS:
        doc = MIGRATIONS[version](doc)
        version = doc["schema_version"]
    if version == SCHEMA_VERSION:
        return doc
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise ResultError(f"result has schema_version {version}, newer than this harness ({SCHEMA_VERSION}); "
                          "update tunelab to read it")
    raise ResultError(f"result has unknown schema_version {version!r}")


def parse_json(data, max_bytes=MAX_RESULT_BYTES):
    """A JSON document from untrusted bytes (safeio.parse_json at a result file's size limit)."""
    return safeio.parse_json(data, max_bytes)


def load_result(path, max_bytes=MAX_RESULT_BYTES):
    """Reads a result file as untrusted input: size limit, JSON, migration, schema."""
    try:
        doc = migrate(safeio.parse_json(safeio.read_bytes(path, max_bytes), max_bytes))
        validate(doc)
    except ResultError as e:
        raise ResultError(f"{path}: {e}") from None
    return doc


def run_metrics(samples, metric_defs):
    """One run's value of each metric: the median of its measured samples (analysis/stats.summarize then
    summarizes runs). metric_defs: {name: {"unit", "direction"}}."""
    metrics = []
    for name, d in metric_defs.items():
        values = [s["value"] for s in samples if s["metric"] == name]
        if values:
            metrics.append({"name": name, "unit": d["unit"], "direction": d["direction"], "statistic": "median",
                            "value": statistics.median(values), "n": len(values)})
            if d.get("zero_possible"):
                metrics[-1]["zero_possible"] = True
    return metrics


def result_path(run_dir, cell_id, repetition):
    return os.path.join(run_dir, "cells", f"{cell_id}.r{repetition}.json")


def run_folders(results_root):
    """Run folders (<results>/<host>/<run>) present now (a tool that starts a run finds its folder as the new one)."""
    if not os.path.isdir(results_root):
        return set()
    return {os.path.join(results_root, h, r) for h in os.listdir(results_root)
            if not h.startswith(".") and os.path.isdir(os.path.join(results_root, h))  # .db: the database, not a host
            for r in os.listdir(os.path.join(results_root, h)) if os.path.isdir(os.path.join(results_root, h, r))}


def stored_results(run_dir):
    """{(cell_id, repetition)} of the complete result files in a run (temporary files ignored)."""
    folder = os.path.join(run_dir, "cells")
    done = set()
    if os.path.isdir(folder):
        for name in os.listdir(folder):
            if name.startswith(".tmp-") or not name.endswith(".json"):
                continue
            stem = name[:-len(".json")]
            cell_id, _, rep = stem.rpartition(".r")
            if rep.isdigit():
                done.add((cell_id, int(rep)))
    return done


def remove_partial_files(run_dir):
    """Temporary files left by a process killed mid-write (a cell result in cells/, or the manifest in the run
    folder itself): never results, safe to delete."""
    removed = []
    for folder in (os.path.join(run_dir, "cells"), run_dir):
        if os.path.isdir(folder):
            for name in os.listdir(folder):
                path = os.path.join(folder, name)
                if name.startswith(".tmp-") and os.path.isfile(path) and not os.path.islink(path):
                    os.unlink(path)
                    removed.append(name)
    return removed
