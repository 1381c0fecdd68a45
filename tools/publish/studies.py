"""The studies the site publishes: results/baselines/studies.toml, read and checked (issue 40).

A study is one committed set, or two with the report kind that compares them, or two of different designs
that each answer the kind's question within themselves (`parts = true`: a part of the report each, MR1 vs MR2
in local mode and on a cluster), with its title, question and case study. Every entry is checked before
anything is rendered; an entry that cannot be published (a set that is not committed, an unknown kind) comes
back as a problem with its reason, for the index to list: one wrong
entry never takes the site down.
"""

import dataclasses
import re

from analysis.reports import kinds
from analysis.reports import story as story_lib
from results import safeio

FILE_NAME = "studies.toml"
STUDY_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
CASE_STUDY = re.compile(r"|\d{3}")
KEYS = {"id", "title", "question", "case_study", "sets", "kind", "parts", "answer", "mechanism", "caveats", "figure",
        "size_axis", "phases"}
METRIC_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
TWO_SET_KINDS = ("cross-host", "stock-vs-patched", "dependency-bump", "mr1-vs-mr2", "memory-locality")
MAX_STUDIES = 200
MAX_FILE_BYTES = 1 << 20


class StudiesError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Declared:
    id: str
    title: str
    question: str
    case_study: str
    sets: tuple
    kind: str  # "" for one set: the kind its contents call for
    parts: bool = False  # each set compared within itself, a part of the report each (analysis/reports/report.py)
    story: story_lib.Story = story_lib.Story()  # the metrics that answer it, the mechanism's counters, its caveats

    def report_args(self):
        """The report's command-line flags that tell this study's story (analysis/reports/report.py)."""
        return ([f"--answer={m}" for m in self.story.answer] + [f"--mechanism={m}" for m in self.story.mechanism]
                + [f"--caveat={c}" for c in self.story.caveats]
                + ([f"--figure={self.story.figure}", f"--size-axis={self.story.size_axis}"]
                   if self.story.figure != "change" else []) + [f"--phase={m}" for m in self.story.phases])

    def unmeasured(self, sets):
        """The story's metrics that none of `sets` (ResultSets) measures, with what they do measure, or ""."""
        known = {m for s in sets for m in s.metrics()}
        missing = [m for m in self.story.answer + self.story.mechanism + self.story.phases if m not in known]
        if missing:
            return f"{', '.join(missing)} not measured by its sets (they measure {', '.join(sorted(known))})"
        axes = {a for s in sets for g in (s.manifest.get("matrix") or {}).get("comparison_groups") or [] for a in g}
        if self.story.size_axis and self.story.size_axis not in axes:
            return f"size_axis {self.story.size_axis} is not an axis its sets compare ({', '.join(sorted(axes))})"
        return ""


def _text(entry, key, limit, where):
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > limit or "\n" in value:
        raise StudiesError(f"{where}: {key} must be one line of 1-{limit} characters")
    return value.strip()


def parse(text, set_names):
    """([Declared], [(where, reason)]) of a studies.toml's text; set_names: the committed sets. A file that
    is not TOML, or not a list of [[study]] tables, is a StudiesError (the whole file is wrong)."""
    try:
        doc = safeio.parse_toml(text, MAX_FILE_BYTES)
    except safeio.InputError as e:
        raise StudiesError(f"{FILE_NAME}: {e}") from None
    unknown = set(doc) - {"study", "set_note"}
    if unknown:
        raise StudiesError(f"{FILE_NAME}: unknown table(s) {', '.join(sorted(unknown))}: studies are [[study]] "
                           "tables, notes on a set's page [[set_note]] tables")
    entries = doc.get("study", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise StudiesError(f"{FILE_NAME}: study must be a list of [[study]] tables")
    if len(entries) > MAX_STUDIES:
        raise StudiesError(f"{FILE_NAME}: {len(entries)} studies, at most {MAX_STUDIES}")
    studies, problems, seen = [], [], set()
    for number, entry in enumerate(entries, 1):
        sid = entry.get("id")
        where = f"study {sid!r}" if isinstance(sid, str) and STUDY_ID.fullmatch(sid) else f"study #{number}"
        try:
            if not isinstance(sid, str) or not STUDY_ID.fullmatch(sid):
                raise StudiesError(f"{where}: id must be 1-64 of a-z, 0-9, '-' and '_'")
            if sid in seen:
                raise StudiesError(f"{where}: a second study with this id")
            seen.add(sid)
            extra = set(entry) - KEYS
            if extra:
                raise StudiesError(f"{where}: unknown key(s) {', '.join(sorted(extra))} (known: {', '.join(sorted(KEYS))})")
            title = _text(entry, "title", 100, where)
            question = _text(entry, "question", 200, where)
            case = entry.get("case_study", "")
            if not isinstance(case, str) or not CASE_STUDY.fullmatch(case):
                raise StudiesError(f"{where}: case_study must be three digits (results/reference/README.md) or \"\"")
            sets = entry.get("sets")
            if not isinstance(sets, list) or not 1 <= len(sets) <= 2 or not all(isinstance(s, str) for s in sets):
                raise StudiesError(f"{where}: sets must list one or two committed sets")
            missing = [s[:80] for s in sets if s not in set_names]
            if missing:
                raise StudiesError(f"{where}: no committed set {', '.join(map(repr, missing))}")
            if len(set(sets)) != len(sets):
                raise StudiesError(f"{where}: the same set twice")
            kind = entry.get("kind", "")
            if not isinstance(kind, str) or (kind and kind not in kinds.KINDS):
                raise StudiesError(f"{where}: kind {str(kind)[:40]!r} is not a report kind ({', '.join(kinds.KINDS)})")
            parts = entry.get("parts", False)
            if not isinstance(parts, bool):
                raise StudiesError(f"{where}: parts must be true or false")
            if parts and (len(sets) != 2 or not kind or not kinds.KINDS[kind].axis or kind == "cross-host"):
                raise StudiesError(f"{where}: parts = true takes two sets and a kind that compares an axis within "
                                   "one run (stock-vs-patched, dependency-bump, mr1-vs-mr2, memory-locality)")
            if len(sets) == 2 and not parts and kind not in TWO_SET_KINDS:
                raise StudiesError(f"{where}: two sets need the kind that compares them ({', '.join(TWO_SET_KINDS)})")
            if len(sets) == 1 and kind == "cross-host":
                raise StudiesError(f"{where}: cross-host compares two sets, one per host")
            figure, size_axis = entry.get("figure", "change"), entry.get("size_axis", "")
            if figure not in story_lib.FIGURE_KINDS:
                raise StudiesError(f"{where}: figure must be one of {', '.join(story_lib.FIGURE_KINDS)}")
            if (figure == "scaling") != bool(size_axis) or not isinstance(size_axis, str) or (
                    size_axis and not METRIC_NAME.fullmatch(size_axis)):
                raise StudiesError(f"{where}: figure = \"scaling\" takes size_axis (an axis name), and size_axis "
                                   "figure = \"scaling\"")
            story = story_lib.Story(_metrics(entry, "answer", where), _metrics(entry, "mechanism", where),
                                 _lines(entry, "caveats", where), figure, size_axis, _metrics(entry, "phases", where))
            studies.append(Declared(sid, title, question, case, tuple(sets), kind, parts, story))
        except StudiesError as e:
            problems.append((where, str(e).removeprefix(where + ": ")))
    return studies, problems


def _metrics(entry, key, where):
    """A story's list of metric names (at most 4), or () when not given."""
    value = entry.get(key, [])
    if (not isinstance(value, list) or len(value) > 4
            or not all(isinstance(m, str) and METRIC_NAME.fullmatch(m) for m in value)):
        raise StudiesError(f"{where}: {key} must list at most 4 metric names")
    return tuple(value)


def _lines(entry, key, where):
    """A story's list of lines (at most 5, each one line of at most 300 characters)."""
    value = entry.get(key, [])
    if (not isinstance(value, list) or len(value) > 5 or not all(
            isinstance(c, str) and c.strip() and len(c) <= 300 and "\n" not in c for c in value)):
        raise StudiesError(f"{where}: {key} must list at most 5 lines of 1-300 characters")
    return tuple(c.strip() for c in value)


def set_notes(text, set_names):
    """({set: note}, [(where, reason)]) of the file's [[set_note]] tables (set, text: one line of at most 400
    characters), said on that set's own page: what a set measured where its name or its study could mislead
    (a cold set measured start-up, not the engines)."""
    doc = safeio.parse_toml(text, MAX_FILE_BYTES)
    entries = doc.get("set_note", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return {}, [(f"{FILE_NAME}", "set_note must be a list of [[set_note]] tables")]
    notes, problems = {}, []
    for number, entry in enumerate(entries, 1):
        where = f"set_note #{number}"
        try:
            if set(entry) != {"set", "text"}:
                raise StudiesError(f"{where}: needs exactly set and text")
            name = entry["set"]
            if name not in set_names:
                raise StudiesError(f"{where}: no committed set {str(name)[:80]!r}")
            if name in notes:
                raise StudiesError(f"{where}: a second note for {name}")
            notes[name] = _text(entry, "text", 400, where)
        except StudiesError as e:
            problems.append((where, str(e).removeprefix(where + ": ")))
    return notes, problems
