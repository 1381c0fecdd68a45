"""Why the first bad commit is worse (issue 61, with issue 60's profiles): where a bisect's runs were profiled
(`--set policy.profile=cpu`), the frames whose share of samples moved between the last good and the first bad
commit in the answer's run, with their intervals over its rounds, and a differential flame graph per event in
the bisect's folder. //tools:bisect calls answer_profiles once it has its answer."""

import os
import subprocess

from analysis import resultsets
from analysis.profiling import profiles
from results import safeio

PROFILES_FOLDER = "profiles"


def answer_profiles(bisect, answer):
    """What moved in the profiles of the answer's run (a run with policy.profile, e.g. --set policy.profile=cpu):
    for each profiled event, the first bad commit against the last good one, its movers with their intervals
    over the rounds and, given --java and --converter, the differential flame graph in the bisect's folder.
    Stored as the record's `final_profiles`; [] for a run without profiles."""
    rec = bisect.record
    final = rec["final"] or {}
    axis = rec.get("axis") or "revision"
    base, cand = ((answer["last_good"], answer["first_bad"]) if rec.get("axis")
                  else tuple(final.get("roles") or ("good", "candidate")))
    run = os.path.realpath(str(final.get("run", "")))
    if os.path.commonpath([run, os.path.realpath(bisect.results_root)]) != os.path.realpath(bisect.results_root):
        return [{"event": "-", "why": "its run is not under this bisect's results folder: not read"}]
    try:
        result_set = resultsets.resolve(run, bisect.results_root)
        events = profiles.profiled_events(result_set)
        found = [c for e in events for c in profiles.pair_comparisons(result_set, axis, base, cand, e)]
    except (KeyError, resultsets.ResultSetError, profiles.ProfileError) as e:
        return [{"event": "-", "why": f"its profiles could not be read: {e}"}]
    out = []
    for c in found:
        entry = {"event": c.event, "cell": c.cell_id, "runs": [len(c.baseline_runs), len(c.candidate_runs)],
                 "movers": profiles.one_line(c.rows, limit=3) if c.rows else "",
                 "rows": [{"frame": m.short, "baseline": float(m.baseline), "candidate": float(m.candidate),
                           "change": float(m.change), "interval": [finite(float(m.low)), finite(float(m.high))],
                           "moved": bool(m.moved)} for m in c.rows[:10]],
                 "why": "; ".join(c.missing)[:300] if not c.rows else ""}
        if c.rows and bisect.args.java and bisect.args.converter:
            try:
                page = profiles.flame_graph(bisect.args.java, bisect.args.converter, c,
                                            safeio.inside(bisect.folder, PROFILES_FOLDER))
                entry["flame_graph"] = os.path.relpath(page, bisect.folder)
            except (profiles.ProfileError, OSError, subprocess.SubprocessError, safeio.InputError) as e:
                entry["why"] = f"no flame graph: {e}"[:300]
        out.append(entry)
    return out


def profile_text(entries):
    """The answer's lines of what moved in its profiles."""
    lines = []
    for e in entries:
        if e.get("movers"):
            line = f"profile ({e['event']}, {e['runs'][0]}/{e['runs'][1]} runs): {e['movers']}"
            lines.append(line + (f"; differential flame graph {e['flame_graph']}" if e.get("flame_graph") else ""))
        if e.get("why"):
            lines.append(f"profile ({e['event']}): {e['why']}")
    return lines


def finite(x):
    return x if isinstance(x, (int, float)) and x == x and abs(x) != float("inf") else None
