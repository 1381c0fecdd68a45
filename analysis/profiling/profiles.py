"""Profiles compared (issue 60): what moved between two sides of a comparison, frame by frame, with an interval
over runs, so a frame that moved by noise says so.

Input: collapsed stacks ("frame;frame;...;leaf count" per line, jfr-converter's `-o collapsed`), one file per
(cell, repetition) and event, kept gzip-compressed with the cell's result (rigs/matrix/knobs/profiling.py).

A frame's share in one run is the fraction of that run's samples whose stack holds it (inclusive) or ends in
it (self). Per frame, the change is the candidate's mean share minus the baseline's, in percentage points; its
interval is Welch's t interval over the runs of each side (runs are the independent units: a round's profile
comes from its own launch), Bonferroni-widened over the frames compared so the 95 % holds for the whole table
at once (dozens of frames at 95 % each would show a few "moved" by noise alone: measured on an A/A pair of the
recorded profiles). Assumptions: runs independent, shares roughly normal across runs; with one run a side
there is no interval and the table says so. A frame "moved" when its interval excludes zero."""

import dataclasses
import gzip
import statistics
import io
import math
import os
import re
import subprocess
import tempfile

from scipy import stats as scipy_stats

from analysis import compare
from results import safeio, store

MAX_COLLAPSED_BYTES = 64 << 20  # one profile, decompressed
MAX_COMPRESSED_BYTES = 16 << 20
# What a profile may hold, by the cost of reading it (the largest committed: 6,750 stacks, 255 frames deep,
# 155 k frames in all, frames of 174 characters; async-profiler stops a stack at 2,048 frames by default).
MAX_STACK_FRAMES = 4096
MAX_FRAME_CHARS = 4096
MAX_STACKS = 100_000
MAX_TOTAL_FRAMES = 4_000_000
# jfr-converter marks each frame with its kind ("_[j]" compiled, "_[i]" inlined, "_[0]" interpreted,
# "_[1]" C1, "_[k]" kernel): the same method under two kinds is one frame to a reader of the table.
FRAME_KIND = re.compile(r"_\[[a-z0-9]\]$")
# A lambda's hidden class carries its address ("Foo$$Lambda$2.0x0000000100003800"): another launch, another
# name for the same code (jfr-converter's --norm does the same to what it converts); and on JDK 17 a serial
# number, which follows the order lambdas are first used: another release of a dependency renumbers them
# all (the Hadoop 3.5.0 bump: AddBlockBench$$Lambda$247 vs $403, one lambda), so the number goes too.
HIDDEN_CLASS = re.compile(r"(\$\$Lambda)(?:\$[0-9]+)?(?:[./]0x[0-9a-f]+)?")
CONFIDENCE = 0.95
EVENTS = store.PROFILE_EVENTS


class ProfileError(ValueError):
    pass


class ProfileTooCostly(ProfileError):
    """A stored profile over what a profile may hold (frames, stacks, a frame's length): not a profile tunelab
    wrote. Never left out quietly: its set is not rendered, with this reason (issue 78)."""


def parse_collapsed(text, name="profile"):
    """{stack (tuple of frames, root first): samples}; ProfileError naming the first line that is not one, or
    the bound a profile passes (frames in a stack, a frame's length, distinct stacks, frames in all): the cost
    of reading, comparing and drawing a profile grows with these, not with its bytes (issue 78: one line of
    16 M frames, a few KB compressed, took the site 300 s)."""
    stacks, total_frames = {}, 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit() or len(count) > 15:
            raise ProfileError(f"{name}:{number}: not a collapsed stack line ('frame;frame;... count')")
        depth = stack.count(";") + 1
        total_frames += depth
        if depth > MAX_STACK_FRAMES:
            raise ProfileTooCostly(f"{name}:{number}: a stack of {depth} frames, over the {MAX_STACK_FRAMES} a profile "
                               "may hold: not read")
        if total_frames > MAX_TOTAL_FRAMES:
            raise ProfileTooCostly(f"{name}: over {MAX_TOTAL_FRAMES} frames in all: not read")
        parts = stack.split(";")
        if max(map(len, parts)) > MAX_FRAME_CHARS:
            raise ProfileTooCostly(f"{name}:{number}: a frame name over {MAX_FRAME_CHARS} characters: not read")
        frames = tuple(HIDDEN_CLASS.sub(r"\1", FRAME_KIND.sub("", f)) for f in parts)
        stacks[frames] = stacks.get(frames, 0) + int(count)
        if len(stacks) > MAX_STACKS:
            raise ProfileTooCostly(f"{name}: over {MAX_STACKS} distinct stacks: not read")
    return stacks


def read_collapsed(path):
    """A stored profile (gzip-compressed collapsed stacks) through the bounded reader; ProfileError when it is
    corrupt, truncated or too large."""
    try:
        data = safeio.read_bytes(path, MAX_COMPRESSED_BYTES)
    except (safeio.InputError, OSError) as e:
        raise ProfileError(f"{path}: {e}") from None
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            text = f.read(MAX_COLLAPSED_BYTES + 1)
    except (OSError, EOFError) as e:
        raise ProfileError(f"{path}: not a complete gzip file ({e})") from None
    if len(text) > MAX_COLLAPSED_BYTES:
        raise ProfileError(f"{path}: more than {MAX_COLLAPSED_BYTES >> 20} MiB of stacks")
    try:
        return parse_collapsed(text.decode("utf-8"), path)
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not UTF-8 text") from None


def shares(stacks, self_only=False):
    """{frame: share of the samples} of one profile: inclusive (a stack counts once for every frame it
    holds) or self (the leaf only)."""
    total = sum(stacks.values())
    if not total:
        return {}
    found = {}
    for frames, count in stacks.items():
        for frame in ({frames[-1]} if self_only else set(frames)):
            found[frame] = found.get(frame, 0) + count
    return {frame: count / total for frame, count in found.items()}


@dataclasses.dataclass(frozen=True)
class Mover:
    frame: str
    baseline: float  # mean share over the baseline's runs, percentage points
    candidate: float
    change: float  # candidate - baseline, points
    low: float  # the interval of the change, points (nan: one run a side)
    high: float
    runs: tuple  # (baseline runs, candidate runs)
    unit: str = "points"  # of baseline, candidate, change: "points" of a share, or e.g. "instructions/request"

    @property
    def moved(self):
        """The interval excludes zero (False with no interval)."""
        return not math.isnan(self.low) and (self.low > 0 or self.high < 0)

    @property
    def short(self):
        """The frame as a reader names it: a Java method without its package ("Calibration.spin")."""
        return short_name(self.frame)

    def describe(self):
        interval = "no interval (one run a side)" if math.isnan(self.low) else f"[{self.low:+.1f}, {self.high:+.1f}]"
        verdict = "moved" if self.moved else "within noise"
        return (f"{self.frame}: {self.baseline:.1f} -> {self.candidate:.1f} ({self.change:+.1f} {self.unit}, "
                f"{interval}, {verdict})")


def short_name(frame):
    """A Java frame ("pkg/sub/Class.method") without its package; a native or kernel frame as it is."""
    head, _, tail = frame.rpartition("/")
    return tail if head and "." in tail else frame


def welch_interval(a, b, confidence=CONFIDENCE):
    """Welch's t interval of mean(b) - mean(a); (nan, nan) with fewer than two values a side."""
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    se2 = va / len(a) + vb / len(b)
    diff = mb - ma
    if se2 == 0:
        return diff, diff
    df = se2 ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    t = scipy_stats.t.ppf(0.5 + confidence / 2, df)
    return diff - t * math.sqrt(se2), diff + t * math.sqrt(se2)


def movers(baseline_runs, candidate_runs, self_only=False, min_share=0.005, top=10):
    """The frames whose share changed most between the sides (lists of parsed profiles, one per run), largest
    change first; frames under `min_share` in every run are left out (and out of the interval's correction)."""
    if not baseline_runs or not candidate_runs:
        raise ProfileError("a comparison of profiles needs at least one run a side")
    def points(run):
        return {frame: 100 * share for frame, share in shares(run, self_only).items()}
    return value_movers([points(r) for r in baseline_runs], [points(r) for r in candidate_runs],
                        min_value=100 * min_share, top=top, bounds=(-100.0, 100.0))


def value_movers(baseline_runs, candidate_runs, min_value=0.0, top=10, bounds=None, unit="points"):
    """movers() of per-run values ({name: value} per run, a name absent from a run is 0 there): a frame's share
    in points, a function's instructions per request. Names under `min_value` in every run are left out (and
    out of the interval's correction); `bounds` clip the interval (a share moves by 100 points at most)."""
    names = {n for run in baseline_runs + candidate_runs for n, v in run.items() if abs(v) >= min_value}
    confidence = 1 - (1 - CONFIDENCE) / max(1, len(names))  # simultaneous over the table
    rows = []
    for name in names:
        a = [run.get(name, 0.0) for run in baseline_runs]
        b = [run.get(name, 0.0) for run in candidate_runs]
        low, high = welch_interval(a, b, confidence)
        if bounds and not math.isnan(low):
            low, high = max(bounds[0], low), min(bounds[1], high)
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        rows.append(Mover(name, ma, mb, mb - ma, low, high, (len(a), len(b)), unit))
    rows.sort(key=lambda m: (-abs(m.change), m.frame))
    return rows[:top]


def merged(runs):
    """One profile of several runs (their samples added), e.g. a side of a differential flame graph."""
    total = {}
    for stacks in runs:
        for frames, count in stacks.items():
            total[frames] = total.get(frames, 0) + count
    return total


def collapsed_text(stacks):
    """Collapsed lines of a parsed profile, heaviest first (the converter's input for --diff)."""
    return "".join(f"{';'.join(frames)} {count}\n" for frames, count in sorted(stacks.items(), key=lambda x: -x[1]))


def one_line(rows, limit=2):
    """The movers in one line, for a summary: "<frame> +N points, <frame> -M points" (moved ones only)."""
    moved = [m for m in rows if m.moved][:limit]
    if not moved:
        return f"no {'frame' if not rows or rows[0].unit == 'points' else 'function'} moved beyond its interval"
    return ", ".join(f"{m.short} {m.change:+.1f} {m.unit}" for m in moved)


@dataclasses.dataclass
class Comparison:
    """The profiles of one comparison of a run (a cell and its partner with the axis' baseline value)."""
    axis: str
    baseline_value: str
    value: str
    baseline_id: str
    cell_id: str
    event: str
    baseline_runs: list  # parsed profiles, one per profiled repetition
    candidate_runs: list
    missing: list  # "cell rN: why" for each repetition without a usable profile
    rows: list = dataclasses.field(default_factory=list)  # movers()
    gc: tuple = ((), ())  # the profiled launches' GC summaries (profile.gc), baseline's and candidate's
    others: str = ""  # the pair's other varying parameters ("op=create threads=1"): two pairs of one axis differ there

    def label(self):
        return f"{self.axis}: {self.value} vs {self.baseline_value}" + (f" [{self.others}]" if self.others else "")

    def gc_line(self):
        """The pauses of both sides in one line, for a comparison of collectors ("" without GC logs): the median
        over runs of the pauses' share of the JVM's wall time, of its CPU, and the longest pause."""
        def side(name, logs):
            if not logs:
                return f"{name}: no GC log"
            shares = [g["pause_share"] for g in logs if "pause_share" in g]
            cpu = [g["pause_cpu_share"] for g in logs if "pause_cpu_share" in g]
            text = f"{name}: {statistics.median(g['pauses'] for g in logs):g} pauses"
            if shares:
                text += f", {100 * statistics.median(shares):.2f} % of wall"
            if cpu:
                text += f", {100 * statistics.median(cpu):.2f} % of CPU"
            return text + f", longest {max(g['pause_ms_max'] for g in logs):.1f} ms"
        if not any(self.gc):
            return ""
        return (f"GC pauses (profiled launches, median of runs) {side(self.value, self.gc[1])}; "
                f"{side(self.baseline_value, self.gc[0])}")


def profiles_of(run_dir, docs, event):
    """(parsed profiles, missing) of the ok results `docs` of one cell: each stored profile read through the
    bounded reader and checked against the sha256 its result records; a missing or unusable one named."""
    runs, missing = [], []
    for doc in sorted(docs, key=lambda d: d["cell"]["repetition"]):
        where = f"{doc['cell']['id']} r{doc['cell']['repetition']}"
        block = doc.get("profile")
        if doc["status"] != "ok":
            continue
        if block is None:
            missing.append(f"{where}: not profiled (policy.profile)")
            continue
        if "missing" in block:
            missing.append(f"{where}: {block['missing']}")
            continue
        stored = block.get("collapsed", {}).get(event)
        if stored is None:
            missing.append(f"{where}: no {event} profile (events {', '.join(block['events'])})")
            continue
        path = os.path.join(run_dir, stored["file"])
        try:
            if safeio.sha256_of(path) != stored["sha256"]:
                raise ProfileError(f"{stored['file']}: its sha256 is not the one its result records")
            runs.append(read_collapsed(path))
        except ProfileTooCostly:
            raise
        except (ProfileError, OSError) as e:
            missing.append(f"{where}: {e}")
    return runs, missing


def _pairs(result_set):
    """(axis group, baseline value, baseline cell, cell, {cell id: docs}) for every declared comparison of a
    measured set, paired as the summary pairs them (analysis/compare.py)."""
    docs_by_cell = {}
    for d in result_set.docs:
        docs_by_cell.setdefault(d["cell"]["id"], []).append(d)
    # The manifest's cell order, as the summary's: the first cell holds each axis' baseline value (stock, 0 %),
    # not whichever cell's result came first.
    order = [c["id"] for c in result_set.manifest.get("cells", [])]
    cells = [c for c in compare.collect(result_set.docs, order) if c.statuses.get("ok")]
    groups = compare.axis_groups(cells, result_set.manifest.get("matrix", {}).get("comparison_groups"))
    for group, base_value, partner, cell in compare.partners(cells, groups):
        yield group, base_value, partner, cell, docs_by_cell


def profiled_events(result_set):
    """The events any result of the set was profiled for (its policy.profile), in EVENTS' order."""
    asked = {e for d in result_set.docs for e in (d.get("policy") or {}).get("profile", [])}
    return tuple(e for e in EVENTS if e in asked)


def comparisons(result_set, event="cpu", self_only=False, top=10):
    """A Comparison with its movers for every declared comparison of a measured set whose cells were
    profiled (analysis/compare.py pairs them as the summary does)."""
    if not any(d.get("profile") for d in result_set.docs):
        return []
    varying = compare.varying_axes(compare.collect(result_set.docs))
    return [_comparison(result_set.path, group, base_value, partner, cell, docs_by_cell, event, self_only, top, varying)
            for group, base_value, partner, cell, docs_by_cell in _pairs(result_set)]


def pair_comparisons(result_set, axis, baseline_value, value, event="cpu", self_only=False, top=10):
    """A Comparison for each cell whose `axis` is `value` against the cell with `baseline_value` and every other
    parameter equal, whether or not the matrix declares that pair (a bisect's step compares its commit with the
    bad end, neither of them the axis' baseline)."""
    if not any(d.get("profile") for d in result_set.docs):
        return []
    docs_by_cell = {}
    for d in result_set.docs:
        docs_by_cell.setdefault(d["cell"]["id"], []).append(d)
    cells = [c for c in compare.collect(result_set.docs) if c.statuses.get("ok")]

    def others(c):
        return {k: v for k, v in c.params.items() if k != axis}
    out = []
    for cell in (c for c in cells if c.params.get(axis) == value):
        partner = next((c for c in cells if c.params.get(axis) == baseline_value and others(c) == others(cell)), None)
        if partner is not None:
            out.append(_comparison(result_set.path, (axis,), baseline_value, partner, cell, docs_by_cell, event,
                                   self_only, top))
    return out


def _comparison(run_dir, group, base_value, partner, cell, docs_by_cell, event, self_only, top, varying=()):
    base_runs, base_missing = profiles_of(run_dir, docs_by_cell[partner.id], event)
    cand_runs, cand_missing = profiles_of(run_dir, docs_by_cell[cell.id], event)
    comparison = Comparison("+".join(group), base_value, "/".join(cell.params[a] for a in group), partner.id,
                            cell.id, event, base_runs, cand_runs, base_missing + cand_missing,
                            others=" ".join(f"{a}={cell.params[a]}" for a in varying if a not in group))
    if base_runs and cand_runs:
        comparison.rows = movers(base_runs, cand_runs, self_only=self_only, top=top)
    comparison.gc = tuple([d["profile"]["gc"] for d in docs_by_cell[c.id]
                           if d["status"] == "ok" and "gc" in d.get("profile", {})] for c in (partner, cell))
    return comparison


INSTRUCTIONS_UNIT = "instructions/request"


def function_costs(docs, test, self_only=False):
    """([{function: instructions per request}] one per ok run, missing) of one cell's results that counted
    instructions (Redis' measure=instructions: observations.instructions[test].functions, from Callgrind)."""
    runs, missing = [], []
    for doc in sorted(docs, key=lambda d: d["cell"]["repetition"]):
        if doc["status"] != "ok":
            continue
        counted = doc.get("observations", {}).get("instructions", {}).get(test, {})
        if "functions" not in counted or not counted.get("requests"):
            missing.append(f"{doc['cell']['id']} r{doc['cell']['repetition']}: no per-function counts for {test} "
                           "(a result from before 2026-11-29, or not measure=instructions)")
            continue
        column = 0 if self_only else 1
        runs.append({name: costs[column] / counted["requests"] for name, costs in counted["functions"].items()})
    return runs, missing


def instruction_comparisons(result_set, self_only=True, top=10):
    """Per-function instruction deltas per request (self by default: a change in one function moves the
    inclusive count of every caller up to main by the same amount; inclusive with self_only=False) for every
    declared comparison whose results counted instructions per function, a Comparison per request type.
    Callgrind counts each run exactly, so the interval over runs holds what differs between launches (the
    data set's layout, the timer's work), not sampling."""
    out = []
    for group, base_value, partner, cell, docs_by_cell in _pairs(result_set):
        tests = sorted({t for d in docs_by_cell[cell.id] + docs_by_cell[partner.id]
                        for t in d.get("observations", {}).get("instructions", {})})
        for test in tests:
            base_runs, base_missing = function_costs(docs_by_cell[partner.id], test, self_only)
            cand_runs, cand_missing = function_costs(docs_by_cell[cell.id], test, self_only)
            comparison = Comparison("+".join(group), base_value, "/".join(cell.params[a] for a in group),
                                    partner.id, cell.id, f"instructions ({test.upper()})", base_runs, cand_runs,
                                    base_missing + cand_missing)
            if base_runs and cand_runs:
                comparison.rows = value_movers(base_runs, cand_runs, top=top, unit=INSTRUCTIONS_UNIT)
            out.append(comparison)
    return out


def flame_graph(java, converter, comparison, html_dir, timeout_s=300):
    """The differential flame graph of one comparison (async-profiler's converter, --diff: candidate against
    baseline, each side merged over its runs; red grew, blue shrank), an interactive HTML page written to
    html_dir; its path. ProfileError with the converter's words when it fails."""
    name = f"{comparison.cell_id}_vs_{comparison.baseline_id}.{comparison.event}.html"
    with tempfile.TemporaryDirectory() as tmp:
        sides = []
        for side, runs in (("baseline", comparison.baseline_runs), ("candidate", comparison.candidate_runs)):
            path = os.path.join(tmp, f"{side}.collapsed")
            safeio.write_text(path, collapsed_text(merged(runs)))
            sides.append(path)
        out = os.path.join(tmp, name)
        argv = [java, "-jar", converter, "--diff", "--title", f"{comparison.label()} ({comparison.event})",
                *sides, out]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ProfileError(f"jfr-converter --diff: {e}") from None
        if done.returncode != 0 or not os.path.exists(out):
            raise ProfileError(f"jfr-converter --diff: {(done.stderr or done.stdout).strip()[-300:]}")
        target = os.path.join(html_dir, name)
        safeio.check_folder(html_dir, create=True)
        safeio.copy_file(out, target)
    return target
