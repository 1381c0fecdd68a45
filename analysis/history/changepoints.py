"""Change points in a history of result sets (e.g. nightly runs), per cell and metric, with Apache Otava.

    bazel run //analysis:history -- SET [SET...] --out history.png   (the command: analysis/history/command.py)

Each set contributes one point per (cell, metric): the median of its run medians (analysis/stats.py). Otava's
E-divisive means (Fleming et al., "Hunter", ICPE 2023) finds where the series' level shifts; a change point
is kept when both segments are at least --min-segment points long and the shift is larger than the
metric's minimum effect; it is a regression when it moves the metric in its bad direction.

Host drift is not a regression: every set carries its host reference (rigs/host/host_reference.py), plotted
beside the metric. A change point is attributed to host drift when, across the same split, the host
reference moved the same way by more than analysis/drift.DRIFT_FLOOR and by at least half the metric's
change (a slower host explains at least half of it); it is then reported as "host drift", never as a
regression of the system under test.

Nightly sets (each one run of the accepted and the candidate revision, interleaved: tools/nightly/nightly.sh)
are drawn as a history (plots.nightly_history): dates on the x axis, each night's candidate value with its
interval, the gate's change against that night's accepted build with its interval and state (PASS,
REGRESSED, INCONCLUSIVE: analysis/gate/decision.py, as the nightly judged it), and the band of what the gate
catches. Sets are named by date and folder name, never by a machine's path.
"""

import collections
import dataclasses
import datetime
import math
import os
import statistics

from otava.analysis import compute_change_points

from analysis import drift, sequential, stats, thresholds
from analysis.gate import decision as gate_decision

MAX_PVALUE = 0.001  # Otava's default significance for a change point
WINDOW = 50


@dataclasses.dataclass
class ChangePoint:
    index: int  # the first point of the new segment
    before: float  # mean of the segment before
    after: float
    change: float  # relative, after / before - 1
    pvalue: float
    regression: bool


def change_points(values, direction, min_segment=5, min_effect=0.0):
    """Change points of one series, filtered by segment length and size; known-answer tested."""
    found, _ = compute_change_points(list(values), window_len=WINDOW, max_pvalue=MAX_PVALUE)
    kept, last = [], 0
    for cp in sorted(found, key=lambda c: c.index):
        if cp.index - last < min_segment or len(values) - cp.index < min_segment:
            continue
        before, after = cp.stats.mean_before(), cp.stats.mean_after()
        change = after / before - 1 if before else float("inf")
        if abs(change) <= min_effect:
            continue
        worse = change < 0 if direction == "higher_is_better" else change > 0
        kept.append(ChangePoint(cp.index, before, after, change, cp.stats.pvalue, worse))
        last = cp.index
    return kept


def series(sets):
    """{(cell label, metric): [(set name, median of run medians)]} in the order of `sets` (oldest first).

    A cell is followed by its id, not its parameters: an axis added later appears in newer results at its
    default value, which leaves the id as it was (rigs/matrix/planning/spec.cell_id), so the nightly history does not
    split at the version that added it. The label shows the parameters every point's results share."""
    points = collections.OrderedDict()
    shared = {}
    for s in sets:
        by_cell = collections.defaultdict(list)
        for d in s.docs:
            if d["status"] == "ok":
                cell_id, params = d["cell"]["id"], d["cell"]["params"]
                shared[cell_id] = shared[cell_id] & params.items() if cell_id in shared else set(params.items())
                per_metric = collections.defaultdict(list)
                for sample in d["samples"]:
                    per_metric[sample["metric"]].append(sample["value"])
                for metric, values in per_metric.items():
                    by_cell[(cell_id, metric)].append(values)
        for key, runs in by_cell.items():
            points.setdefault(key, []).append((s.name, stats.summarize(runs).median))
    return collections.OrderedDict(((" ".join(f"{k}={v}" for k, v in sorted(shared[cell_id])), metric), found)
                                   for (cell_id, metric), found in points.items())


@dataclasses.dataclass(frozen=True)
class Night:
    """One nightly set's point of one (cell, metric)."""
    when: datetime.datetime  # the run's first result's start
    value: float  # the candidate's median of run medians
    value_low: float  # its 95 % bootstrap CI over runs (nan under 3 runs)
    value_high: float
    worse_by: float  # the gate's estimate, a fraction worse than that night's accepted build
    worse_low: float  # its 98 % interval (analysis/stats.py)
    worse_high: float
    catches: float  # what the gate caught that night (the rig's stated D, else the run's own; nan: unknown)
    state: str  # PASS, REGRESSED or INCONCLUSIVE


@dataclasses.dataclass(frozen=True)
class NightCheck:
    """One (cell, metric) of a night as the gate judged it, with what the database keeps beside the plotted
    point (results/db: night_checks)."""
    cell: str
    metric: str
    unit: str
    direction: str
    night: Night
    asked: float  # the effect the gate was asked to rule out, a fraction
    stated_d: float  # the rig's committed figure's D at this design (nan: none usable)
    tonight_d: float  # this run's own D (nan: too few rounds)
    watched: bool  # a gated run's companion: shown and able to fail the night, never left undecided by it


def started(result_set):
    """The run's start (its earliest result), or None."""
    stamps = sorted(str(d.get("started_at")) for d in result_set.docs if d.get("started_at"))
    try:
        return datetime.datetime.fromisoformat(stamps[0]) if stamps else None
    except ValueError:
        return None


def short_name(result_set):
    """A set as a reader knows it: its folder's name, never the path of the machine that stored it."""
    return os.path.basename(os.path.normpath(result_set.path or result_set.name)) or result_set.name


def nights(sets, results_root=None):
    """{(cell label, metric): [Night]} of nightly sets (each a run with revision values accepted and candidate),
    in the order given; {} unless every set is one (a history mixing kinds is drawn as a plain series)."""
    out = collections.OrderedDict()
    for s in sets:
        found = night_checks(s, results_root)
        if not found:
            return {}
        for c in found:
            out.setdefault((c.cell, c.metric), []).append(c.night)
    return out


def _finite(x):
    return x if x is not None and math.isfinite(x) else math.nan


def night_checks(result_set, results_root=None):
    """[NightCheck] of one nightly set (a run with revision values accepted and candidate), judged by the gate's
    rule as the nightly judged it (its design, the rig's committed figures under results_root); [] when the set
    is not a night."""
    when = started(result_set)
    try:
        base, cand = gate_decision.split_run(result_set, "revision", "accepted", "candidate")
        design = sequential.Design.of(result_set.manifest)
        figures = gate_decision.figures_for(results_root, result_set.docs) if results_root else {}
        checks = gate_decision.gate(base, cand, thresholds.min_effects(None, result_set.docs), same_run=True,
                                    design=design, figures=figures, draws=500)
    except (gate_decision.GateError, ValueError):
        return []
    if when is None:
        return []
    out = []
    for c in checks:
        runs = [[v for v in r] for r in gate_decision._runs([d for d in cand.docs if _params(d) == c.params],
                                                            c.metric)]
        summary = stats.summarize([r for r in runs if r]) if any(runs) else None
        low, high = c.worse_by_interval
        catches = c.stated_d if c.stated_d is not None else c.tonight_d
        night = Night(when, summary.median if summary else math.nan, summary.ci_low if summary else math.nan,
                      summary.ci_high if summary else math.nan, c.worse_by, low, high, _finite(catches), c.state)
        out.append(NightCheck(c.cell, c.metric, c.unit, c.direction, night, c.min_effect, _finite(c.stated_d),
                              _finite(c.tonight_d), c.watched))
    return out


def _nan(x):
    return math.nan if x is None else float(x)


def nights_from_rows(rows):
    """({(cell label, metric): [Night]}, {metric: {unit, direction}}) of night checks as the results database holds
    them (results/db/queries.night_checks, oldest first): the same Nights night_checks made when they were indexed."""
    out, declared = collections.OrderedDict(), {}
    for row in rows:
        declared.setdefault(row["metric"], {"unit": row["unit"], "direction": row["direction"]})
        out.setdefault((row["cell"], row["metric"]), []).append(Night(
            row["night_start"], _nan(row["candidate_value"]), _nan(row["candidate_low"]), _nan(row["candidate_high"]),
            _nan(row["worse_by"]), _nan(row["worse_low"]), _nan(row["worse_high"]), _nan(row["catches"]),
            row["state"]))
    return out, declared


def _params(doc):
    return doc["cell"]["params"]


def reference_series(sets, metric=drift.PRIMARY_REFERENCE):
    """(metric, unit, [the set's host reference median, or None]) in the order of `sets`."""
    values, unit = [], ""
    for s in sets:
        measurements = drift.reference(s).get(metric, [])
        values.append(statistics.median(m["median"] for m in measurements) if measurements else None)
        unit = unit or (measurements[0]["unit"] if measurements else "")
    return metric, unit, values


def drift_explains(change_point, reference_values, min_segment):
    """True when the host reference moved across the same split the same way, by more than the drift floor
    and by at least half the metric's change (see the module docstring)."""
    before = [v for v in reference_values[:change_point.index] if v is not None]
    after = [v for v in reference_values[change_point.index:] if v is not None]
    if len(before) < min(min_segment, 2) or len(after) < min(min_segment, 2):
        return False
    ref_change = statistics.mean(after) / statistics.mean(before) - 1
    same_way = (ref_change > 0) == (change_point.change > 0)
    return same_way and abs(ref_change) > drift.DRIFT_FLOOR and abs(ref_change) >= 0.5 * abs(change_point.change)
