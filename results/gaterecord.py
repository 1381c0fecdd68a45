"""The gate's verdict kept as a document beside the run it judged (gate.json, a side document: results/store.py),
then indexed in the results database (issue 83: the document first, then its rows). One entry per comparison
(axis, baseline value, candidate value, or the stored set it was judged against), replaced when the same
comparison is judged again; committed sets (results/baselines/) are never written.

    bazel run //tools:gate -- --run RUN --axis revision ... --record     (the nightly does)
"""

import datetime
import math
import os

from results import safeio, store

FILE = "gate.json"
KIND = "tunelab.gate_verdicts"
SCHEMA_VERSION = 1
MAX_BYTES = 16 << 20
MAX_ENTRIES = 200  # comparisons kept per run: far more axes and pairs than any matrix has


class RecordError(ValueError):
    pass


def _number(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def entry(checks, axis, baseline_value, candidate_value, against, state):
    """One comparison's verdict: its checks as the gate judged them (fractions worse; None where it had none)."""
    rows = []
    for c in checks:
        low, high = c.worse_by_interval
        rows.append({"cell": c.cell, "metric": c.metric, "unit": c.unit, "direction": c.direction,
                     "state": c.state, "regressed": bool(c.regressed), "watched": bool(c.watched),
                     "worse_by": _number(c.worse_by), "worse_low": _number(low), "worse_high": _number(high),
                     "interval_level": _number(c.ci_level), "asked": _number(c.min_effect),
                     "stated_d": _number(c.stated_d), "tonight_d": _number(c.tonight_d),
                     "rounds": c.evidence.n if c.evidence is not None else None})
    return {"axis": axis, "baseline_value": baseline_value, "candidate_value": candidate_value, "against": against,
            "state": state, "judged_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "checks": rows}


def writable(folder, results_root):
    """Whether the gate may keep its verdict in `folder`: a run under the results root, never a committed set."""
    real, root = os.path.realpath(folder), os.path.realpath(results_root)
    baselines = os.path.join(root, "baselines")
    return (real.startswith(root + os.sep) and not real.startswith(baselines + os.sep)
            and os.path.isfile(os.path.join(real, "manifest.json")))


def read(folder):
    """The entries of `folder`'s gate.json ([] without one); RecordError when it is not one."""
    path = os.path.join(folder, FILE)
    if not os.path.lexists(path):
        return []
    try:
        doc = safeio.read_json(path, MAX_BYTES)
    except (OSError, safeio.InputError) as e:
        raise RecordError(f"{path}: not a gate record ({e})") from None
    if (not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("schema_version") != SCHEMA_VERSION
            or not isinstance(doc.get("verdicts"), list) or len(doc["verdicts"]) > MAX_ENTRIES):
        raise RecordError(f"{path}: not a {KIND} document of schema_version {SCHEMA_VERSION}")
    problem = safeio.schema_problem("gate_verdicts.v1", doc)
    if problem:
        raise RecordError(f"{path}: does not match gate_verdicts.v1 at {problem}")
    return doc["verdicts"]


def keep(folder, new):
    """Writes `new` into folder/gate.json, replacing the entry of the same comparison; returns the path."""
    key = ("axis", "baseline_value", "candidate_value", "against")
    entries = [e for e in read(folder) if tuple(e.get(k) for k in key) != tuple(new[k] for k in key)]
    doc = {"kind": KIND, "schema_version": SCHEMA_VERSION, "verdicts": (entries + [new])[-MAX_ENTRIES:]}
    return store.write_side_document(folder, FILE, doc)
