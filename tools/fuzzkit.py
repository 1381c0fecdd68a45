"""What the fuzz tests share (//tools:trust_fuzz_test, //tools:file_kinds_fuzz_test): hypothesis settings,
JSON values of any shape, a real document with values replaced, TOML text of any value, and a block's budget
of time and memory."""

import contextlib
import copy
import json
import math
import os

from hypothesis import HealthCheck, settings, strategies as st

EXAMPLES = int(os.environ.get("TUNELAB_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not os.environ.get("TUNELAB_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

# Any JSON value, NaN and infinities included (Python's json writes them), nested up to a few levels, plus
# the shapes that broke readers before: deep nesting, null where an object belongs.
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(1 << 70), max_value=1 << 70),
                      st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                          max_leaves=12)
deep = st.integers(min_value=50, max_value=20_000).map(lambda n: "[" * n + "]" * n)


def leaf_paths(doc, path=()):
    """Every path to a value in a document (for replacing one with generated JSON)."""
    yield path
    children = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, child in children:
        yield from leaf_paths(child, path + (key,))


def replaced(doc, path, value):
    if not path:
        return value
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


@st.composite
def mutated_document(draw, base):
    """A real document with one to three values replaced by any JSON (or the key deleted)."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = list(leaf_paths(doc))
        path = draw(st.sampled_from(paths))
        if path and draw(st.booleans()):
            parent = doc
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, dict):
                del parent[path[-1]]
                continue
        doc = replaced(doc, path, draw(json_value))
    return doc


def dumps(doc):
    return json.dumps(doc, allow_nan=True).encode()


def toml_value(value):
    """TOML text of a JSON-like value (None: an empty inline table; NaN and infinities as TOML spells them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: the same escapes
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    return "{}"


@contextlib.contextmanager
def within_budget(test, seconds=10.0, peak_bytes=256 << 20):
    """The block runs within fixed time and memory (tracemalloc's peak), whatever the input."""
    import time
    import tracemalloc
    tracemalloc.start()
    started = time.monotonic()
    try:
        yield
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        test.assertLess(time.monotonic() - started, seconds)
        test.assertLess(peak, peak_bytes)
