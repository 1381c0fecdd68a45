"""Result files: one JSON document per cell repetition, schema-validated, written atomically, never edited.

The one module that reads and writes stored results: the matrix runner (which measures and stores) and
analysis/ and tools/ (which read) all import it, and neither imports the other.

Layout of a run: results/<host-id>/<run-id>/
  manifest.json                 every planned cell, its status and reason, the interleaved order
  cells/<cell-id>.r<rep>.json   one result per repetition (results/schema/cell_result.v2.schema.json)
  logs/<cell-id>.r<rep>.{out,err}
Result files from elsewhere are untrusted: size-limited, schema-validated, parsed as data only.
"""

import copy
import json
import math
import os
import stat
import statistics
import tempfile

import jsonschema

SCHEMA_VERSION = 2
# A reader's budget per result file (issue 39: a 63 MiB cell of 850,000 samples cost 40 s and 0.93 GB to read,
# accepted). The largest result stored so far is 152 KB (415 samples); the schema caps samples at 200,000 a list.
MAX_RESULT_BYTES = 16 << 20
_SCHEMA_CACHE = {}


class ResultError(ValueError):
    pass


def schema_path(name=f"cell_result.v{SCHEMA_VERSION}"):
    # In the source tree and in runfiles alike, the schemas sit in results/schema beside this file.
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "schema", f"{name}.schema.json")


def load_schema(name):
    """A schema of results/schema by name (e.g. run_manifest.v1), read once."""
    if name not in _SCHEMA_CACHE:
        with open(schema_path(name)) as f:
            _SCHEMA_CACHE[name] = json.load(f)
    return _SCHEMA_CACHE[name]


def schema():
    return load_schema(f"cell_result.v{SCHEMA_VERSION}")


def _whole_pattern(validator, pattern, instance, schema_doc):
    """JSON Schema's `pattern`, with its `$` meaning the end of the string as in ECMA-262 (Python's `$` also
    matches before a final newline, so a run id with a newline after it passed: issue 39)."""
    yield from _PATTERN(validator, pattern, instance, schema_doc)
    if isinstance(instance, str) and pattern.endswith("$") and instance.endswith("\n"):
        yield jsonschema.ValidationError(f"{instance[:80]!r} ends in a newline, which {pattern!r} does not allow")


_PATTERN = jsonschema.Draft202012Validator.VALIDATORS["pattern"]
_VALIDATOR = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _whole_pattern})


def schema_problem(schema_doc, doc):
    """"<path>: <message>" of the first violation of a JSON schema (by path), or ''."""
    errors = sorted(_VALIDATOR(schema_doc).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if not errors:
        return ""
    message = errors[0].message  # it quotes the value: a long one keeps its head and the verdict at its end
    message = message if len(message) <= 300 else f"{message[:160]} ... {message[-120:]}"
    return f"{'/'.join(str(p) for p in errors[0].absolute_path) or '(top)'}: {message}"


MAX_DEPTH = 64  # far deeper than any document tunelab writes; deeper ones exhaust recursion in readers
# The largest integer a document may hold: far above any count, byte size or nanosecond total tunelab writes
# (2**63, a signed 64-bit counter), far below what a float can hold exactly enough to compare.
MAX_INTEGER = 2**63


def check_shape(doc, max_depth=MAX_DEPTH):
    """Raises ResultError for a document nested deeper than max_depth or holding a NaN or infinite number or an
    integer beyond MAX_INTEGER (walked without recursion, so a hostile document cannot exhaust the stack)."""
    stack = [(doc, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > max_depth:
            raise ResultError(f"nested deeper than {max_depth} levels at {'/'.join(map(str, path[:8]))}/...")
        if isinstance(value, float) and not math.isfinite(value):
            raise ResultError(f"holds a value that is not a finite number at {'/'.join(map(str, path)) or '(top)'}")
        # A JSON integer beyond a float's range passes as "finite" but breaks every reader that computes with it
        # (issue 39: a 400-digit sample crashed the site build with OverflowError).
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
            raise ResultError(f"holds an integer beyond {MAX_INTEGER:.0e} at {'/'.join(map(str, path)) or '(top)'}")
        if isinstance(value, dict):
            stack.extend((child, path + (key,)) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, path + (i,)) for i, child in enumerate(value))


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


class _NonFinite(ValueError):
    pass


# Python refuses integers over 4,300 digits with a ValueError of its own that the fleet's readers did not catch
# (issue 58, row 7: a 5,000-digit integer in a host's plan); check_shape bounds the value itself (MAX_INTEGER).
MAX_INT_DIGITS = 1000


def _bounded_int(text):
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _refuse_constant(name):
    """Python's json reads NaN, Infinity and -Infinity, which JSON does not allow: a value a rig could not
    measure must never be averaged into a table as if it were a number."""
    raise _NonFinite(name)


def atomic_write_json(path, doc):
    """Writes doc to path via a temporary file in the same folder, fsync and rename: all or nothing. Only a
    regular file or nothing is replaced: a link, folder, FIFO or device there is refused (issue 58: as root,
    `--run-info /dev/null` replaced /dev/null with a file)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise ResultError(f"{path}: not a regular file (a link, folder, FIFO or device): refusing to replace it")
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False, allow_nan=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; results are meant to be shared
        os.replace(tmp, path)
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_result(path, doc):
    """Validates and writes a new result; an existing result is never overwritten."""
    validate(doc)
    if os.path.exists(path):
        raise ResultError(f"{path} exists; stored results are never rewritten")
    atomic_write_json(path, doc)


def parse_json(data, max_bytes=MAX_RESULT_BYTES):
    """A JSON document from untrusted bytes: size limit, strict JSON (no NaN/Infinity), bounded depth.
    Raises ResultError for anything else."""
    if len(data) > max_bytes:
        raise ResultError(f"{len(data)} bytes or more, over the {max_bytes}-byte limit")
    try:
        doc = json.loads(data, parse_constant=_refuse_constant, parse_int=_bounded_int)
    except _NonFinite as e:
        raise ResultError(f"holds {e.args[0]}, not a number: a corrupt measurement") from None
    except RecursionError:
        raise ResultError(f"nested too deeply (over {MAX_DEPTH} levels)") from None
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError, and an integer over MAX_INT_DIGITS
        raise ResultError(f"not valid JSON ({str(e)[:200]})") from None
    check_shape(doc)
    return doc


def load_result(path, max_bytes=MAX_RESULT_BYTES):
    """Reads a result file as untrusted input: size limit, JSON, migration, schema."""
    size = os.path.getsize(path)
    if size > max_bytes:
        raise ResultError(f"{path}: {size} bytes, over the {max_bytes}-byte limit for a result file")
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    try:
        doc = migrate(parse_json(data, max_bytes))
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
    return metrics


def result_path(run_dir, cell_id, repetition):
    return os.path.join(run_dir, "cells", f"{cell_id}.r{repetition}.json")


def run_folders(results_root):
    """Run folders (<results>/<host>/<run>) present now (a tool that starts a run finds its folder as the new one)."""
    if not os.path.isdir(results_root):
        return set()
    return {os.path.join(results_root, h, r) for h in os.listdir(results_root)
            if os.path.isdir(os.path.join(results_root, h)) for r in os.listdir(os.path.join(results_root, h))}


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
