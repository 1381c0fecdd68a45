"""Report kinds and the preparation of the documents each compares (analysis/reports/report.py builds the report).

A kind names the question, the compared axis and its baseline, and what two sets' provenance may differ in.
`prepare` checks the sets fit the kind and returns copies of the documents to compare; results measured in
parts on the compared axis (their declared `split`, e.g. locality pre/post) become one document per part.
"""

import copy
import dataclasses

from analysis import resultsets


@dataclasses.dataclass
class Kind:
    title: str
    question: str  # {metric}, {a}, {b} are filled in
    axis: str = None  # None: every varying axis (the axis kind)
    baseline: str = None  # the axis value that is the baseline, when the axis has a natural one
    set_labels: tuple = ()  # the axis values given to the first and second set when two are compared
    allowed: frozenset = frozenset()  # provenance facts that may differ between the two sets
    # Further axes compared when one set varies them, {axis: baseline value} (e.g. MR1's record share sweep);
    # the title page's answer is of cells at these baselines.
    extra_axes: tuple = ()
    # Axes compared too when one set varies them, whose every value the answer covers (memory pressure:
    # MR2 vs MR1 unlimited and squeezed), ((axis, baseline value), ...).
    also_compared: tuple = ()
    # The question's own words for better and worse, said when the headline metric is a time (mr1-vs-mr2:
    # "faster or slower?").
    time_words: tuple = ()
    # Facts that may also differ when the two hosts' architectures do (cross-host: the Kunpeng vs x86
    # report): the JDK builds that follow from an architecture.
    allowed_across_architectures: frozenset = frozenset()


KINDS = {
    "axis": Kind("Axis comparison", "Which knobs change {metric}, and by how much?"),
    "stock-vs-patched": Kind("Stock vs patched", "Does the patched build change {metric} compared with stock?",
                             axis="variant", baseline="stock", allowed=frozenset({"variant"})),
    # A dependency bump (variant bump:<component>-<version>, README: Patched builds): the rig on the release we
    # build on (stock) vs the same rig on another release's pinned jars.
    "dependency-bump": Kind("Dependency bump", "Does the bumped release change {metric} compared with the one we "
                            "build on?", axis="variant", baseline="stock", allowed=frozenset({"variant"})),
    "mr1-vs-mr2": Kind("MapReduce 1 vs MapReduce 2", "Is MapReduce 2 faster or slower than MapReduce 1 on "
                       "the same job ({metric})?", axis="mapreduce", baseline="mr1", set_labels=("mr1", "mr2"),
                       allowed=frozenset({"harness"}),
                       extra_axes=(("io_sort_record_percent", "default"), ("variant", "stock")),
                       also_compared=(("memory_limit", "none"),),
                       time_words=("faster", "slower")),
    "memory-locality": Kind("Memory locality, pre vs post", "Does better memory locality change {metric}?",
                            axis="locality", baseline="pre", set_labels=("pre", "post")),
    "cross-host": Kind("Cross-host", "How does {b} compare with {a} on the same cells ({metric})?",
                       axis="host", allowed=frozenset({"host", "cpu", "host-specific inputs"}),
                       allowed_across_architectures=frozenset({"architecture", "jdk build"})),
}


class ReportError(ValueError):
    pass


@dataclasses.dataclass
class Prepared:
    """The documents to compare, with the compared axis present in every cell's params."""
    docs: list
    axes: list  # the axes compared
    baselines: dict  # axis -> baseline value
    warnings: list
    sets: list
    # The comparison groups when the preparation made its own axis (results split in parts on it),
    # instead of the ones the run's manifest declares.
    groups: list = None
    labels: tuple = ()  # the compared axis' value of the first and second set, when two are compared
    banner: str = ""  # said on every page (an emulated host)


def prepare(kind_name, sets, axis=None, allow_mismatch=False):
    """Checks the sets fit the kind and returns the documents to compare (copies, never the originals)."""
    kind = KINDS[kind_name]
    measured = [s for s in sets if not s.published]
    if not measured:
        raise ReportError("no measured result set given (published reference sets are only shown beside)")
    if len(measured) > 2:
        raise ReportError(f"{kind_name} compares one or two measured sets, not {len(measured)}")
    axis = axis or kind.axis
    warnings = []
    emulated = sorted({d["provenance"]["host"]["cpu"].get("model_name") or "?" for s in measured for d in s.docs
                       if d.get("provenance", {}).get("host", {}).get("cpu", {}).get("emulated")})
    banner = "EMULATED HOST: mechanics, not speed" if emulated else ""
    if emulated:
        warnings.append(f"EMULATED HOST ({', '.join(emulated)}): these results show mechanics (what ran, which knobs took "
                        "effect, pages moving between nodes), not speed")
    if len(measured) == 1:
        if kind_name == "cross-host":
            raise ReportError("cross-host needs two measured sets, one per host")
        docs = [copy.deepcopy(d) for d in measured[0].docs]
        groups = None
        if axis and any((d.get("split") or {}).get("axis") == axis for d in docs):
            docs, dropped = split_parts(docs, axis)
            groups = [[axis]]
            if dropped:
                warnings.append(f"{dropped} result(s) not measured in parts on {axis} (other placements, failed "
                                f"or skipped cells) are not part of this comparison of {axis}")
        axes = [axis] if axis else None
        if axis and not any(d["cell"]["params"].get(axis) != docs[0]["cell"]["params"].get(axis) for d in docs):
            raise ReportError(f"{measured[0].name}: axis {axis!r} does not vary; give two sets (baseline first) "
                              f"or --axis NAME")
        baselines = {axis: kind.baseline} if axis and kind.baseline else {}
        for extra, base in kind.extra_axes + kind.also_compared:
            if len({d["cell"]["params"].get(extra) for d in docs}) > 1:
                axes.append(extra)
                baselines[extra] = base
        return Prepared(docs, axes, baselines, warnings, measured, groups, banner=banner)
    a, b = measured
    if kind_name == "axis":
        raise ReportError("the axis kind compares the axes within one run: give one measured set")
    # Two sets: one result pairs with the other's when their provenance differs only where the kind allows.
    allowed = kind.allowed
    if resultsets.provenance(a.first_ok())["architecture"] != resultsets.provenance(b.first_ok())["architecture"]:
        allowed = allowed | kind.allowed_across_architectures
    diffs = resultsets.provenance_differences(a.first_ok(), b.first_ok(), allowed)
    if diffs:
        text = "; ".join(f"{k}: {va} vs {vb}" for k, va, vb in diffs)
        if not allow_mismatch:
            raise ReportError(f"{a.name} and {b.name} differ in more than the {kind_name} comparison allows "
                              f"({text}); use --allow-provenance-mismatch to report anyway")
        warnings.append(f"PROVENANCE MISMATCH, compared anyway: {text}")
    if kind_name == "cross-host":
        labels, warning = cross_host_labels(a, b)
        if warning:
            warnings.append(warning)
    elif kind.set_labels:
        labels = kind.set_labels
    else:
        labels = None  # the axis is already in the params (e.g. variant)
    docs = []
    for index, (s, label) in enumerate(zip((a, b), labels or (None, None))):
        for d in s.docs:
            d = copy.deepcopy(d)
            d["cell"]["id"] = f"{index}:{d['cell']['id']}"  # the same cell of two sets stays two cells
            if label is not None:
                d["cell"]["params"][axis] = label
            docs.append(d)
    baselines = {axis: labels[0] if labels else kind.baseline}
    return Prepared(docs, [axis], baselines, warnings, measured, labels=tuple(labels or ()), banner=banner)


def fleet_host(result_set):
    """The inventory name of the fleet host a run came from (the runner records it when //tools:fleet
    started it), or None."""
    return (result_set.manifest.get("fleet") or {}).get("host")


def cross_host_labels(a, b):
    """(labels, warning): sets are labelled by the fleet host they came home from (else the host id). Two
    fleet hosts on one physical machine (the same host id) are compared, but labelled as such."""
    ids = (a.host_ids()[0], b.host_ids()[0])
    names = (fleet_host(a), fleet_host(b))
    labels = tuple(n or i for n, i in zip(names, ids))
    if ids[0] != ids[1]:
        return labels, None
    if None in names or names[0] == names[1]:
        raise ReportError(f"both sets come from host {ids[0]}: cross-host needs two hosts")
    return labels, (f"ONE PHYSICAL MACHINE: {names[0]} and {names[1]} are two fleet hosts on host {ids[0]}; "
                    "differences between them are run-to-run variation and each other's load, not host differences")


def split_parts(docs, axis):
    """Each result measured in parts on `axis` (its declared `split`, schema v2) becomes one document per
    part, the part's value in the cell's params and the part's samples and metrics as its own. The parts come
    from the same run, so the runs stay the unit. Returns (docs, how many results had no split on `axis`)."""
    out, dropped = [], 0
    for d in docs:
        split = d.get("split") or {}
        if d.get("status") != "ok" or split.get("axis") != axis:
            dropped += 1
            continue
        for part in split["parts"]:
            half = copy.deepcopy(d)
            del half["split"]
            half["cell"]["id"] = f"{d['cell']['id']}:{part['value']}"
            half["cell"]["params"][axis] = part["value"]
            half["samples"], half["metrics"] = copy.deepcopy(part["samples"]), copy.deepcopy(part["metrics"])
            out.append(half)
    return out, dropped
