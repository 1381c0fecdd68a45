"""Committed sensitivity figures: the sensitivity.json files //tools:sensitivity writes into promoted sets
(results/baselines/*/), read for the gate (the newest figure of a rig and metric), the run summary (the A/A
runs' steal band) and the site's Sensitivity page (every figure, oldest first). A file in a results folder
is untrusted: every field used is checked. The model behind the figures: analysis/sensitivity/components.py."""

import dataclasses
import math
import os

from analysis import thresholds
from analysis.gate import power as gate_power
from analysis.sensitivity.components import SensitivityError
from results import safeio

FILE_NAME = "sensitivity.json"
KIND = "tunelab.sensitivity"
# 1: an MDE from a formula for a rule the gate no longer uses; 2: the A/A rounds themselves, so that the gate
# finds D by running its own rule at each comparison's rounds and policy (analysis/gate/power.py).
SCHEMA_VERSIONS = (1, 2)
MAX_AA_ROUNDS = 10000


@dataclasses.dataclass(frozen=True)
class Figure:
    """One committed sensitivity figure, as the gate reads it."""
    rig: str
    metric: str
    paired_sd: float
    mde: float  # at design_rounds
    design_rounds: int
    set_name: str  # the A/A set it came from
    measured_at: str  # YYYY-MM-DD
    workload_sha256: str
    round_s: float  # what one A/A round cost
    stale: bool = False  # measured on another workload digest than the one being gated (for_workload)
    steal_max: float = None  # the most CPU steal (share) an A/A run saw; None where the set predates recording it
    cell: tuple = ()  # ((parameter, value), ...) of the A/A cell it was measured on, less the arm axis
    rule: str = None  # the gate rule it was computed for (gate_power.RULE); None: schema 1, an older rule
    aa_worse_log_ratios: tuple = ()  # the A/A rounds' log ratios, positive = worse (schema 2)

    @property
    def usable(self):
        """Computed for the gate's present rule, with the A/A rounds to run it on."""
        return self.rule == gate_power.RULE and len(self.aa_worse_log_ratios) >= 2

    def why_not_usable(self):
        rule = "an older gate rule (schema 1)" if self.rule is None else f"the rule {self.rule!r}"
        return (f"set {self.set_name}'s figure was computed for {rule}, not this one ({gate_power.RULE}): no "
                f"stated D; regenerate it: bazel run //tools:sensitivity -- --rig {self.rig} --from-set "
                f"baselines/{self.set_name}")

    def other_cell(self, params):
        """[(parameter, figure's value, `params`' value)] where the gated cell's parameters differ from the cell
        this figure was measured on (parameters only one side has are not compared: an axis added later)."""
        return [(k, v, str(params[k])) for k, v in self.cell if k in params and str(params[k]) != v]

    def for_workload(self, sha256):
        """This figure, marked stale when `sha256` (the gated results' workload digest) is not its own."""
        return dataclasses.replace(self, stale=bool(sha256) and sha256 != self.workload_sha256)


MAX_FILE_BYTES = 8 << 20  # the largest committed one is ~60 KB
SCHEMA = "sensitivity.v2"  # results/schema/sensitivity.v2.schema.json: versions 1 and 2


def read_document(path):
    """The JSON of one sensitivity.json through the bounded reader and its schema; SensitivityError naming the
    file and the first problem (issue 58, row 2: a rig named a/b, a string where a rate belongs, 100k levels)."""
    try:
        doc = safeio.read_json(path, MAX_FILE_BYTES)
    except (OSError, safeio.InputError) as e:
        raise SensitivityError(f"{path}: not a sensitivity file ({str(e).removeprefix(f'{path}: ')})") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("schema_version") not in SCHEMA_VERSIONS:
        raise SensitivityError(f"{path}: not a {KIND} file of schema_version {' or '.join(map(str, SCHEMA_VERSIONS))}")
    problem = safeio.schema_problem(SCHEMA, doc)
    if problem:
        raise SensitivityError(f"{path}: not a sensitivity file (does not match {SCHEMA} at {problem})")
    return doc


_READ = {}  # (path, inode, size, mtime) -> {rig: {metric: Figure}}: a history or an import judges many nights


def read_file(path):
    """{rig: {metric: Figure}} of one sensitivity.json; SensitivityError when it is not one. Read once per process
    while the file stays the same (its inode, size and modification time)."""
    try:
        st = os.stat(path)
        key = (os.path.abspath(path), st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    if key in _READ:
        return _READ[key]
    found = _read_file(path)
    if key is not None:
        _READ[key] = found
    return found


def _read_file(path):
    doc = read_document(path)
    version = doc["schema_version"]
    out = {}
    for rig, metrics in doc.items():
        if rig in ("kind", "schema_version", "regenerate"):
            continue
        if not isinstance(metrics, dict):
            raise SensitivityError(f"{path}: {rig}: expected an object of metrics")
        for metric, e in metrics.items():
            try:
                figure = Figure(str(rig), str(metric), float(e["paired_sd"]), float(e["mde"]),
                                int(e["design"]["fixed"]["rounds"]), str(e["sets"]["aa"]),
                                str(e["measured_at"]), str(e["workload"]["sha256"]),
                                float(e["components"]["round_s"]),
                                steal_max=_fraction_or_none((e.get("noise_band") or {}).get("steal_fraction_max")),
                                cell=_cell(e.get("cell")),
                                # An entry without them (schema 1, or kept from it) was computed for an older rule.
                                rule=_text(e["rule"]) if version >= 2 and "rule" in e else None,
                                aa_worse_log_ratios=(_ratios(e["aa_worse_log_ratios"]) if version >= 2 and "rule" in e
                                                     else ()))
            except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
                raise SensitivityError(f"{path}: {rig}.{metric}: paired_sd, mde, design.fixed.rounds, sets.aa, "
                                       "measured_at, workload.sha256 and components.round_s needed, and "
                                       "cell, where given, an object of parameter values") from None
            if not (math.isfinite(figure.paired_sd) and figure.paired_sd >= 0 and math.isfinite(figure.mde)
                    and figure.mde >= 0 and figure.design_rounds >= 2):
                raise SensitivityError(f"{path}: {rig}.{metric}: paired_sd and mde must be finite and >= 0")
            out.setdefault(rig, {})[metric] = figure
    return out


def _cell(params):
    """The figure's cell as sorted (name, value) string pairs; () where the file has none."""
    if params is None:
        return ()
    if not isinstance(params, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float))
                                               and not isinstance(v, bool) for k, v in params.items()):
        raise ValueError("cell: expected an object of parameter values")
    return tuple(sorted((k, str(v)) for k, v in params.items()))


def _text(x):
    if not isinstance(x, str) or len(x) > 200:
        raise ValueError("rule: expected a short text")
    return x


def _ratios(values):
    """The A/A rounds' log ratios: 2 to MAX_AA_ROUNDS finite numbers."""
    if not isinstance(values, list) or not 2 <= len(values) <= MAX_AA_ROUNDS or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < 50 for v in values):
        raise ValueError("aa_worse_log_ratios: expected 2 or more finite numbers")
    return tuple(float(v) for v in values)


def _fraction_or_none(x):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1 else None


DEFAULT_STEAL_BAND = 0.05  # where no A/A set recorded steal: a round losing more than 5 % of its CPUs is named
# The band is never narrower than 1 %: the A/A runs here saw at most 0.1-0.3 % steal, and a band that tight
# would flag rounds for a noise far below what any gate can see.
MIN_STEAL_BAND = 0.01


def steal_band(baselines, rig):
    """(band, where it came from): the most steal any committed A/A run of `rig` saw, else the default."""
    try:
        figures = committed(baselines, rig)
    except SensitivityError:
        figures = {}
    known = [(f.steal_max, f.set_name) for f in figures.values() if f.steal_max is not None]
    if known:
        band, name = max(known)
        if band < MIN_STEAL_BAND:
            return MIN_STEAL_BAND, f"{MIN_STEAL_BAND:.0%}, the floor (an A/A run of {name} saw at most {band:.2%})"
        return band, f"the most an A/A run of {name} saw"
    return DEFAULT_STEAL_BAND, "no A/A set recorded steal: the default"


def checkout_steal_band(rig):
    """steal_band() of the committed sets of the first tree that has results/baselines: this build's runfiles,
    then the user's checkout (thresholds.default_roots)."""
    for root in thresholds.default_roots():
        baselines = os.path.join(root, "results", "baselines")
        if os.path.isdir(baselines):
            return steal_band(baselines, rig)
    return DEFAULT_STEAL_BAND, "no A/A set recorded steal: the default"


def noisy_rounds(docs, band):
    """(rounds with a run whose measurement window lost more than `band` of the CPUs to steal, as
    [(repetition, steal)], and [steal fractions] of every run that recorded one)."""
    seen, flagged = [], {}
    for d in docs:
        steal = ((d.get("provenance") or {}).get("noise") or {}).get("steal_fraction")
        if isinstance(steal, (int, float)) and not isinstance(steal, bool):
            seen.append(float(steal))
            if steal > band:
                r = (d.get("cell") or {}).get("repetition")
                flagged[r] = max(flagged.get(r, 0.0), float(steal))
    return sorted(flagged.items(), key=lambda x: (str(x[0]))), seen


def committed(baselines, rig):
    """{metric: Figure}: the newest (by measured_at, then set name) committed figure of each of `rig`'s
    metrics among results/baselines/*/sensitivity.json."""
    best = {}
    names = sorted(os.listdir(baselines)) if os.path.isdir(baselines) else []
    for name in names:
        path = os.path.join(baselines, name, FILE_NAME)
        if not os.path.isfile(path):
            continue
        for metric, figure in read_file(path).get(rig, {}).items():
            old = best.get(metric)
            # A figure of the present rule wins over any older-rule one, then the newest.
            if old is None or ((figure.usable, figure.measured_at, figure.set_name)
                               > (old.usable, old.measured_at, old.set_name)):
                best[metric] = figure
    return best


def history(baselines, unreadable=None):
    """Every committed figure, oldest first: [{rig, metric, set, measured_at, rule, worse_by (the stated D of
    its first gated design, a fraction worse; None for an older rule's figure), designs ({profile: {describe,
    d_worse_by, detection_at_d, false_alarm_rate, aa_rates, slowdown_rates}}), paired_sd, components (sd by
    level), rounds, asked, slowdown, unit, direction}] for the site's Sensitivity page and the README table.
    Files are checked as the gate checks them (read_file); with `unreadable` (a list), a file that fails is
    appended to it as (set name, reason) and skipped, else SensitivityError."""
    rows = []
    names = sorted(os.listdir(baselines)) if os.path.isdir(baselines) else []
    for name in names:
        path = os.path.join(baselines, name, FILE_NAME)
        if not os.path.isfile(path):
            continue
        try:
            figures = read_file(path)
        except SensitivityError as e:
            if unreadable is None:
                raise
            unreadable.append((name, str(e)))
            continue
        doc = read_document(path)
        for rig, metrics in figures.items():
            for metric, figure in metrics.items():
                e = doc[rig][metric]
                sd = (e.get("components") or {}).get("sd") or {}
                designs = e.get("designs") if figure.usable and isinstance(e.get("designs"), dict) else {}
                first = next(iter(designs.values()), {})
                rows.append({
                    "rig": rig, "metric": metric, "set": figure.set_name, "measured_at": figure.measured_at,
                    "rule": figure.rule, "unit": e.get("unit", ""),
                    "direction": e.get("direction", "higher_is_better"),
                    "worse_by": first.get("d_worse_by") if figure.usable else None, "designs": designs,
                    "paired_sd": figure.paired_sd, "rounds": e.get("rounds"),
                    "components": {k: sd.get(k) for k in ("rounds", "runs", "windows")},
                    "asked": e.get("asked_min_effect"), "slowdown": e.get("slowdown"),
                })
    rows.sort(key=lambda r: (r["measured_at"], r["rig"], r["metric"], r["set"]))
    return rows
