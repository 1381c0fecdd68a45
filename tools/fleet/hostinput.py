"""What a fleet host sends back, read as untrusted input: its plan (size cap, strict JSON, a schema), the JSON
its remote_run prints, and the failures Ansible reports for it (any type, bounded, for the console)."""

import json

from results import resultfile, safeio, store

REMOTE_PYTHON = "/usr/bin/python3"  # the bundle's launcher names this interpreter (tools/python/BUILD.bazel)


class FleetError(ValueError):
    pass


MAX_PLAN_BYTES = 16 << 20
# What the controller reads of a host's plan (rigs/matrix/planning/planview.py plan_document); the rest is shown only
# through escape(). A host is untrusted: a plan that does not fit fails that host, never the fleet.
_NAME = {"type": "string", "minLength": 1, "maxLength": 200}
PLAN_SCHEMA = {
    "type": "object",
    "required": ["estimated_s", "cells", "doctor"],
    "properties": {
        "estimated_s": {"type": "number", "minimum": 0, "maximum": 10 * 365 * 86400},
        "cells": {"type": "array", "maxItems": 100000, "items": {
            "type": "object", "required": ["id", "skip_reason"],
            "properties": {"id": _NAME, "skip_reason": {"type": ["string", "null"], "maxLength": 20000}}}},
        "doctor": {"type": "object", "required": ["host", "cpu"], "properties": {
            "host": {"type": "object", "required": ["host_id"], "properties": {
                "host_id": {"type": "string", "pattern": store.HOST_FOLDER_RE.pattern}}},
            "cpu": {"type": "object", "properties": {"online_cpus": {"type": ["integer", "string", "null"]}}},
            "numa": {"type": "object", "properties": {"nodes": {"type": ["array", "null"], "maxItems": 4096}}}}},
    },
}


def read_plan(path):
    """A host's plan.json, as untrusted input: the bounded reader (a regular file, size cap, strict JSON,
    bounded depth and integers) and PLAN_SCHEMA."""
    try:
        return safeio.read_json(path, MAX_PLAN_BYTES, PLAN_SCHEMA)
    except safeio.InputError as e:
        raise FleetError(f"its plan is not usable: {str(e).removeprefix(f'{path}: ')}") from None


def host_json(text, what):
    """A JSON object a host printed (a remote_run status), or FleetError."""
    try:
        doc = resultfile.parse_json(text.encode(), 1 << 20)
    except resultfile.ResultError as e:
        raise FleetError(f"{what}: {e}") from None
    if not isinstance(doc, dict):
        raise FleetError(f"{what}: not a JSON object")
    return doc


def runner_error(stdout):
    """The matrix runner's own error message in a command's output ("error: ..." to the end, its wrapped
    lines joined; remote_run's closing JSON line left out), or ''."""
    lines = [line.strip() for line in stdout.strip().splitlines()]
    starts = [i for i, line in enumerate(lines) if line.lower().startswith("error:")]
    if not starts:
        return ""
    return " ".join(line for line in lines[starts[-1]:] if line and not line.startswith("{"))


def describe_failure(kind, task, res):
    text_of = lambda key: str(res.get(key) or "")[-4000:]  # noqa: E731 - a host's words, any type, bounded
    if kind == "runner_on_unreachable":
        return f"unreachable over SSH: {text_of('msg').strip()}"
    msg = text_of("msg").strip()
    detail = (text_of("stderr") or text_of("module_stderr")).strip().splitlines()
    said = runner_error(text_of("stdout"))
    if said:
        detail = [said]
    text = msg if not detail else f"{msg}: {detail[-1]}" if msg and msg != "non-zero return code" else detail[-1]
    if task == "python":
        return f"no usable {REMOTE_PYTHON} (the host needs CPython; {text})"
    return f"{task}: {text or json.dumps(res)[:300]}"
