"""A bisect's report (issue 61): `bazel run //analysis:report -- results/bisect-out/ID --kind bisect --out b.pdf`
and its page on the results site. It reads the record //tools:bisect stores (bisect.json, schema
tunelab.bisect/1, written after every step): the answer, every step's two checks with their intervals and
what they could see, the confirmation (bad vs good) and the first bad commit against the last good one.
"""

import datetime
import os
import re

from analysis.reports import plots
from analysis.reports import render
from results import safeio

SCHEMA = "tunelab.bisect/1"
RECORD = "bisect.json"
MAX_RECORD_BYTES = 8 << 20
COMMIT = re.compile(r"[0-9a-f]{40}")
AXIS_VALUE = re.compile(r"[A-Za-z0-9_.:@+/=-]{1,200}")
RECORD_SCHEMA = "bisect_record.v1"
OWNED_SETTINGS = ("revision", "policy.repetitions")  # the bisect sets these itself
SET_ITEM = re.compile(r"([a-z][a-z0-9_]{0,63}(?:\.[a-z][a-z0-9_]{0,63})?)=([A-Za-z0-9_.:@+/,=-]{1,400})")


class BisectRecordError(ValueError):
    pass


def read_record(folder):
    """The record of the bisect in `folder` (a bisect folder, or its bisect.json): its schema (closed:
    results/schema/bisect_record.v1.schema.json) and what a schema cannot say, checked. A record is data:
    nothing in it becomes a path, a program or a setting a resumed bisect uses without passing these checks."""
    path = folder if folder.endswith(".json") else os.path.join(folder, RECORD)
    try:
        record = safeio.read_json(path, MAX_RECORD_BYTES)
    except FileNotFoundError:
        raise BisectRecordError(f"{folder}: no {RECORD} (not a bisect folder)") from None
    except safeio.InputError as e:
        raise BisectRecordError(str(e)) from None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise BisectRecordError(f"{path}: not a {SCHEMA} record")
    problem = safeio.schema_problem(RECORD_SCHEMA, record) or record_problem(record)
    if problem:
        raise BisectRecordError(f"{path}: {problem}")
    return record


def record_problem(record):
    """What is wrong with a record of the schema's shape, or ''."""
    commits, steps = record["commits"], record["steps"]
    # An axis bisect's "commits" are the axis' values in order (a patch series' prefixes, dependency versions).
    item = AXIS_VALUE if record.get("axis") else COMMIT
    if len(set(commits)) != len(commits) or not all(item.fullmatch(c) for c in commits):
        return ("`commits` is not a list of two or more distinct "
                + ("axis values" if record.get("axis") else "full commit ids (40 hex digits)"))
    if (record["good"], record["bad"]) != (commits[0], commits[-1]):
        return "`good` and `bad` are not the range's first and last commits"
    if not all(s["commit"] in commits and commits.index(s["commit"]) == s["index"] for s in steps):
        return "`steps` names a commit outside the range, or at another index"
    named = list(record["measures"]) + list(record["subjects"])
    for m in [record["measures"][c] for c in record["measures"]] + [record.get("confirmation"), record.get("final")]:
        named += list((m or {}).get("against", {}).values())
    answer = record.get("answer") or {}
    named += [answer[k] for k in ("last_good", "first_bad") if k in answer] + answer.get("skipped_between", [])
    if any(c not in commits for c in named):
        return "a commit outside the range is named in `measures`, `subjects` or `answer`"
    ends = [record.get("confirmation"), record.get("final")]
    if any(m is not None and "good->candidate" not in m["pairs"] for m in ends) or any(
            set(m["pairs"]) != {"good->candidate", "candidate->bad"} for m in record["measures"].values()):
        return "a measure lacks its pairs (the confirmation and final good->candidate, a step both)"
    if record["rounds"] > record["max_rounds"]:
        return "`rounds` is over `max_rounds`"
    for item in record["sets"]:
        problem = set_problem(item, record.get("axis"))
        if problem:
            return f"`sets`: {problem}"
    return ""


def set_problem(item, axis=None):
    """Why a bisect's --set item (from its command line, or its stored record) is refused, or ''. The bisect
    sets the revision (or its axis) and the rounds itself."""
    m = SET_ITEM.fullmatch(item) if isinstance(item, str) else None
    if not m:
        return f"{str(item)[:80]!r} is not AXIS=VALUE[,VALUE...] (a lower-case axis name, values without spaces)"
    if m.group(1) in OWNED_SETTINGS + ((axis,) if axis else ()):
        return f"{item[:80]}: the bisect sets {' and '.join(OWNED_SETTINGS + ((axis,) if axis else ()))} itself (use --rounds)"
    return ""


def pct(x):
    return "-" if not isinstance(x, (int, float)) else f"{x:+.1%}"


def check_cells(pair):
    """(state, worse by, 98 % CI, catches >=, this run could see, rounds) of a pair's first check, as text; an
    unclear (INCONCLUSIVE) check's rounds say how many would see the gate's D (`rounds_to_see`)."""
    if not isinstance(pair, dict) or not pair.get("checks"):
        return ["-"] * 6
    c = pair["checks"][0]
    low, high = (c.get("interval_98") or [None, None])[:2]
    see = c.get("can_see")
    tonight = c.get("this_run_could_see")
    return [str(pair.get("state", "-")), pct(c.get("worse_by")), f"{pct(low)}..{pct(high)}",
            "-" if not isinstance(see, (int, float)) else f"{see:.1%}",
            "-" if not isinstance(tonight, (int, float)) else f"{tonight:.1%}",
            str(c.get("rounds", "-")) + (f" (~{c['rounds_to_see']} to see)" if pair.get("state") == "INCONCLUSIVE"
                                         and isinstance(c.get("rounds_to_see"), int)
                                         and not isinstance(c.get("rounds_to_see"), bool) else "")]


def short(commit):
    """A commit id's first 12 digits; an axis value whole (up to 60 characters)."""
    text = str(commit)
    return text[:12] if re.fullmatch(r"[0-9a-f]{40}", text) else text[:60]


def fmt_s(seconds):
    return str(datetime.timedelta(seconds=round(seconds if isinstance(seconds, (int, float)) else 0)))


def step_points(record):
    """[(index, label, worse_by, low, high, verdict)] of every measured commit against the good end it had."""
    points = []
    index_of = {c: i for i, c in enumerate(record["commits"])}
    confirmation = (record.get("confirmation") or {}).get("pairs", {}).get("good->candidate")
    if confirmation and confirmation.get("checks"):
        c = confirmation["checks"][0]
        points.append((len(record["commits"]) - 1, f"{short(record['bad'])[:7]} bad", c["worse_by"] or 0.0,
                       *(c.get("interval_98") or [None, None])[:2], "bad"))
    points.append((0, f"{short(record['commits'][0])[:7]} good", 0.0, None, None, "good"))
    for s in record["steps"]:
        pair = (record["measures"].get(s["commit"]) or {}).get("pairs", {}).get("good->candidate")
        if s.get("verdict") == "skipped":
            points.append((index_of[s["commit"]], f"{short(s['commit'])[:7]} no build", None, None, None, "skipped"))
        if s.get("verdict") == "skipped" or not pair or not pair.get("checks"):
            continue
        c = pair["checks"][0]
        points.append((index_of[s["commit"]], short(s["commit"])[:7], c["worse_by"] or 0.0,
                       *(c.get("interval_98") or [None, None])[:2], s["verdict"]))
    return sorted(points)


def judged_metrics(record):
    """The metrics the gate judged in the bisect's runs (those of its cells), else those it was asked for."""
    measured = [record.get("confirmation")] + list(record["measures"].values())
    names = {c.get("metric") for m in measured if isinstance(m, dict) for pair in (m.get("pairs") or {}).values()
             for c in (pair.get("checks") or [])}
    return sorted(n for n in names if isinstance(n, str)) or list(record.get("metrics") or [])


def blocks(record, name, out_dir, command=None):
    """The report's blocks (analysis/reports/render.py)."""
    answer = record.get("answer") or {"state": "running", "text": "the bisect has not ended (resume it)"}
    subjects = record["subjects"]
    metrics = ", ".join(judged_metrics(record)) or "the gated metrics"
    axis = record.get("axis")
    span = (f"{axis} = {', '.join(record['commits'])[:200]}" if axis else
            f"{short(record['commits'][0])}..{short(record['commits'][-1])}, {len(record['commits'])} first-parent commits")
    out = [render.Title(f"Bisect: which {'value of ' + axis if axis else 'commit'} made {metrics} worse?",
                        f"{record.get('matrix', '?')} --profile {record.get('profile', '?')}; {span}; bisect {name}"),
           render.Heading("Answer"), render.Para(f"{answer['state'].upper()}: {answer.get('text', '')}", strong=True),
           render.Para(f"Machine time {fmt_s(record.get('machine_s'))} ({len(record['steps'])} step(s), from "
                       f"{record.get('started', '?')} to {record.get('ended', 'not ended')}). Each step ran the commit "
                       "interleaved with both known ends in one run, rounds as --rounds "
                       f"{record.get('rounds')} (an unclear step again with twice the rounds, up to "
                       f"{record.get('max_rounds')}), and asked the gate's rule twice: the commit against the last good "
                       "one, the first bad one against it (paired t over the rounds at 1 % a side; PASS only where the "
                       "interval rules out a regression the gate can see). A commit is good or bad only when both "
                       "agree; otherwise the bisect stops UNKNOWN rather than guess.")]
    points = step_points(record)
    if points:
        first_bad = answer.get("first_bad")
        index = record["commits"].index(first_bad) if first_bad in record["commits"] else None
        out.append(render.Figure(plots.bisect_steps(os.path.join(out_dir, "bisect-steps.png"),
                                                    f"{metrics}: each measured commit against the good end",
                                                    points, index),
                                 "Worse than the good end it was measured with, and the 98 % interval of the paired "
                                 "rounds (green: judged good, red: bad; x: does not build, not measured; the first "
                                 "point is the good end itself)."))
    rows = []
    for s in sorted(record["steps"], key=lambda s: record["commits"].index(s["commit"])):
        measure = record["measures"].get(s["commit"]) or {}
        pairs = measure.get("pairs", {})
        vs_good, vs_bad = check_cells(pairs.get("good->candidate")), check_cells(pairs.get("candidate->bad"))
        rows.append([short(s["commit"]), str(subjects.get(s["commit"], ""))[:40], f"{vs_good[0]} {vs_good[1]}",
                     vs_good[2], f"{vs_bad[0]} {vs_bad[1]}", vs_bad[2], str(s.get("rounds") or "-"),
                     str(s.get("verdict", "")), os.path.basename(str(measure.get("run", "")))
                     or str(s.get("why", ""))[:60]])
    if rows:
        out += [render.Heading("Steps"),
                render.TableBlock(["commit", "subject", "vs good", "98% CI", "bad vs it", "98% CI", "rounds", "state",
                                   "run (or why skipped)"], rows,
                                  "Each step's two checks: worse by (a fraction worse; negative is better).")]
    pairs = [("bad vs good (the confirmation)", record.get("confirmation")),
             ("first bad vs last good", record.get("final"))]
    rows = [[label] + check_cells((m or {}).get("pairs", {}).get("good->candidate")) + [
        os.path.basename(str((m or {}).get("run", "-")))] for label, m in pairs if m]
    if rows:
        out += [render.Heading("Comparisons"),
                render.TableBlock(["pair", "state", "worse by", "98% CI", "catches >=", "this run could see", "rounds",
                                   "run"], rows, "catches >=: the smallest regression the gate promises to catch "
                                                 "here (the larger of the asked effect and the rig's stated D).")]
    out += profile_blocks(record)
    commands = [f"bazel run //tools:bisect -- --resume results/bisect-out/{name}"] + ([command] if command else [])
    out += [render.Heading("Rerun"), render.Code("\n".join(commands))]
    return out


def points(x):
    return "-" if not isinstance(x, (int, float)) or x != x else f"{x:+.1f}"


def profile_blocks(record):
    """What moved in the profiles of the answer's run (the record's final_profiles: //tools:bisect's
    tools/bisection/step_profiles.py), a table per event; none for a bisect without profiles."""
    out = []
    for e in record.get("final_profiles") or []:
        if not isinstance(e, dict):
            continue
        event = str(e.get("event", "?"))[:20]
        rows = [[str(r.get("frame", ""))[:70], points(r.get("baseline")).lstrip("+"),
                 points(r.get("candidate")).lstrip("+"), points(r.get("change")),
                 f"{points((r.get('interval') or [None, None])[0])}..{points((r.get('interval') or [None, None])[-1])}",
                 "moved" if r.get("moved") is True else "noise"]
                for r in e.get("rows") or [] if isinstance(r, dict)]
        if not out:
            out.append(render.Heading("What moved: the profiles of the first bad against the last good"))
        if rows:
            out.append(render.TableBlock(["frame", "last good", "first bad", "change", "interval", ""], rows[:10],
                                         f"{event}: share of samples (points) in the answer's run, merged over its "
                                         "rounds; the interval is Welch's over the rounds (Bonferroni over the "
                                         "frames), 'noise' where it holds zero."))
        if isinstance(e.get("flame_graph"), str):
            out.append(render.Para(f"Differential flame graph ({event}): {e['flame_graph'][:200]} in the bisect's "
                                   "folder (red grew, blue shrank)."))
        if e.get("why"):
            out.append(render.Para(f"Profile ({event}): {str(e['why'])[:300]}"))
    return out
