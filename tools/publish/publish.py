"""tunelab publish: a static results site built from the committed result sets.

    bazel run //tools:publish -- [--out DIR] [--built-at 2026-11-24T00:00:00Z]

Every set under results/baselines/ gets a page: the question its matrix asks, the one-sentence answer of its
report, hosts, date, rig, its report as PDF and HTML (analysis/report.py; the kind follows from what the
set compares: patched variants, MapReduce engines, parts before and after a page migration, else its
axes), and its provenance (the run's manifest). results/reference/ gets a page of the case studies'
published figures (not measured here), sensitivity.html the MDE of every committed sensitivity figure
(analysis/sensitivity_figures.py) with its history per rig; sets named nightly-<name>-... form a history,
plotted with its change points (analysis/history.py) once there are two or more. Relative links only, nothing fetched: the folder
can be copied to any web server or bucket, or opened from disk. The same sets give the same bytes but for
the build time, stated once at the foot of each page (--built-at). A set that cannot be rendered is listed
on the index with the reason, never left out.
"""

import argparse
import contextlib
import dataclasses
import datetime
import glob
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time

import jinja2
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from analysis import history, plots, render, report, resultsets, sensitivity_figures
from rigs.host import terminal

EXIT_OK, EXIT_SOME_SETS_FAILED, EXIT_BAD_INPUT = 0, 1, 2
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
NIGHTLY = re.compile(r"^nightly-(?P<series>[a-z0-9_]+?)(?:-\d{8}.*)?$")
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class PublishError(ValueError):
    pass


@dataclasses.dataclass
class Study:
    """One committed set as the index shows it."""
    name: str
    kind: str = ""
    rig: str = ""
    question: str = ""
    answer: str = ""
    hosts: list = dataclasses.field(default_factory=list)
    date: str = ""
    runs: int = 0
    failed: str = ""  # why it could not be rendered, if it could not


def kind_for(result_set):
    """The report kind that answers what the set compares: a split in parts (locality pre/post), patched
    variants, MapReduce engines, else every axis it varies."""
    docs = result_set.docs
    if any((d.get("split") or {}).get("axis") == "locality" for d in docs):
        return "memory-locality"
    varying = {k for d in docs for k, v in d["cell"]["params"].items()
               if v != docs[0]["cell"]["params"].get(k)}
    if "variant" in varying:
        return "stock-vs-patched"
    if "mapreduce" in varying:
        return "mr1-vs-mr2"
    return "axis"


def set_date(result_set):
    """The day the set was measured: its last result's end (UTC)."""
    ends = sorted(d.get("finished_at", "") for d in result_set.docs)
    return ends[-1][:10] if ends and ends[-1] else ""


def answer_of(blocks):
    """The answer paragraph of a report's title page, without its label."""
    para = next((b for b in blocks if isinstance(b, render.Para) and b.text.startswith("Answer: ")), None)
    return para.text[len("Answer: "):] if para else ""


def question_of(blocks, kind):
    title = blocks[0].text if blocks and isinstance(blocks[0], render.Title) else ""
    prefix = report.KINDS[kind].title + ": "
    return title[len(prefix):] if title.startswith(prefix) else title


def render_study(result_set, references, out_dir):
    """Writes the set's report (PDF, HTML), provenance and figures into out_dir; returns its Study."""
    study = Study(name=result_set.name, rig=result_set.manifest.get("matrix", {}).get("rig", ""),
                  hosts=result_set.host_ids(), date=set_date(result_set),
                  runs=sum(d["status"] == "ok" for d in result_set.docs))
    study.kind = kind_for(result_set)
    with tempfile.TemporaryDirectory() as figures:
        blocks = report.build(study.kind, [result_set] + references, figures,
                              generated_at=study.date or "unknown date",
                              command=f"bazel run //analysis:report -- results/baselines/{result_set.name} "
                                      f"--kind {study.kind}")
        report.write(blocks, os.path.join(out_dir, "report.pdf"), os.path.join(out_dir, "report.html"))
    study.question, study.answer = question_of(blocks, study.kind), answer_of(blocks)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(result_set.manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return study


def nightly_series(studies_sets):
    """{series: [ResultSet in date order]} of the sets named nightly-<series>[-<date>...]."""
    series = {}
    for result_set in studies_sets:
        m = NIGHTLY.fullmatch(result_set.name)
        if m:
            series.setdefault(m.group("series"), []).append(result_set)
    return {name: sorted(sets, key=set_date) for name, sets in sorted(series.items())}


def write_history(name, sets, out_dir):
    """The series' history plots (two or more sets: one per cell and metric, change points marked), [] with
    fewer. A change point found (history's exit 1) still has its plot."""
    if len(sets) < 2:
        return []
    path = os.path.join(out_dir, f"history-{name}.png")
    with contextlib.redirect_stdout(io.StringIO()):
        code = history.main([s.path for s in sets] + ["--out", path])
    if code not in (0, 1):
        return []
    stem = os.path.splitext(path)[0]
    return sorted((os.path.basename(p) for p in glob.glob(glob.escape(stem) + "*.png")
                   if p == path or re.fullmatch(r"-[0-9]+\.png", p[len(stem):])),
                  key=lambda n: (len(n), n))


def write_sensitivity(baselines, out_dir):
    """(rows, [(rig, plot file)], [Study of each unusable sensitivity file]) of the Sensitivity page: every
    committed figure, and per rig its metrics' MDE over the committed sensitivity sets."""
    unreadable = []
    rows = sensitivity_figures.history(baselines, unreadable)
    failed = [Study(name=f"{name}/{sensitivity_figures.FILE_NAME}"[:80], failed=f"cannot be read: {reason[:300]}")
              for name, reason in unreadable]
    out = []
    for rig in sorted({r["rig"] for r in rows}):
        series = {}
        for r in rows:
            if r["rig"] == rig:
                series.setdefault(r["metric"], []).append((r["measured_at"], r["worse_by"]))
        name = f"sensitivity-{rig}.png"
        plots.sensitivity_history(os.path.join(out_dir, name), f"{rig}: the smallest regression the gate can catch",
                                  series)
        out.append((rig, name))
    return rows, out, failed


def load_sets(baselines):
    """([ResultSet], [Study of the sets that could not be read]) in name order."""
    loaded, failed = [], []
    for name in sorted(os.listdir(baselines)):
        path = os.path.join(baselines, name)
        if not os.path.isdir(path):
            continue
        if not SAFE_NAME.fullmatch(name):
            failed.append(Study(name=name[:60], failed="not a set name tunelab writes"))
            continue
        try:
            loaded.append(resultsets.load_run(path, name=name))
        except (resultsets.ResultSetError, ValueError, OSError) as e:
            failed.append(Study(name=name, failed=f"cannot be read: {e}"))
    return loaded, failed


def build_site(results_root, out, built_at, console=None):
    """Builds the site into `out` (replaced whole, through a temporary folder beside it); returns the
    studies, failed ones included."""
    console = console or Console(highlight=False, soft_wrap=True)
    baselines = os.path.join(results_root, "baselines")
    if not os.path.isdir(baselines):
        raise PublishError(f"{baselines} does not exist: nothing to publish")
    references, unreadable = [], []
    for path in sorted(glob.glob(os.path.join(glob.escape(results_root), "reference", "*.json"))):
        try:  # one bad reference file is listed, never the end of the site (issue 39)
            references.append(resultsets.load_reference(path))
        except resultsets.ResultSetError as e:
            unreadable.append(Study(name="reference/" + os.path.basename(path)[:60], failed=f"cannot be read: {e}"))
    sets, studies = load_sets(baselines)
    studies += unreadable
    parent = os.path.dirname(os.path.abspath(out)) or "."
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".publish-", dir=parent)
    try:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                 undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
        columns = [TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TimeRemainingColumn()]
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task("reports", total=len(sets))
            for result_set in sets:
                progress.update(task, description=f"report {result_set.name[:40]}")
                folder = os.path.join(staging, "sets", result_set.name)
                os.makedirs(folder)
                try:
                    studies.append(render_study(result_set, references, folder))
                except Exception as e:  # noqa: BLE001 -- each set in isolation: listed with its reason (issue 39)
                    shutil.rmtree(folder)
                    reason = str(e) if isinstance(e, (report.ReportError, resultsets.ResultSetError, ValueError)) \
                        else f"{type(e).__name__}: {e}"
                    studies.append(Study(name=result_set.name, rig=result_set.manifest.get("matrix", {}).get("rig", ""),
                                         date=set_date(result_set), failed=f"no report: {reason[:300]}"))
                progress.advance(task)
        # Newest first, then by name; those that could not be rendered last.
        studies.sort(key=lambda s: s.name)
        studies.sort(key=lambda s: s.date, reverse=True)
        studies.sort(key=lambda s: bool(s.failed))
        histories = []
        for name, series_sets in nightly_series(sets).items():
            histories.append({"name": name, "sets": [s.name for s in series_sets],
                              "plots": write_history(name, series_sets, staging)})
        rows, sensitivity_plots, unusable = write_sensitivity(baselines, staging)
        studies += unusable  # listed last with their reasons, as a set that cannot be read
        page = dict(built_at=built_at, studies=studies, histories=histories,
                    references=[r.reference for r in references], rows=rows, plots=sensitivity_plots)
        for template, target in (("index.html.j2", "index.html"), ("reference.html.j2", "reference.html"),
                                 ("sensitivity.html.j2", "sensitivity.html")):
            with open(os.path.join(staging, target), "w") as f:
                f.write(env.get_template(template).render(root=".", **page))
        for study in studies:
            if not study.failed:
                with open(os.path.join(staging, "sets", study.name, "index.html"), "w") as f:
                    f.write(env.get_template("set.html.j2").render(root="../..", study=study, **page))
        shutil.copy(os.path.join(TEMPLATES, "style.css"), os.path.join(staging, "style.css"))
        with open(os.path.join(staging, MARKER), "w") as f:
            f.write(tree_digest(staging) + "\n")
        os.chmod(staging, 0o755)  # a static site: readable by the web server's user (mkdtemp made it 0700)
        if os.path.lexists(out):
            problem = not_our_site(out)
            if problem:
                raise PublishError(f"{out}: {problem}; not replaced (choose another --out, or remove it yourself)")
            shutil.rmtree(out)
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return studies


MARKER = ".tunelab-site"  # written last into a site this tool built: the digest of every other file in it


def tree_digest(folder):
    """sha256 over every file under `folder` but the marker (relative path and content, in order)."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            if rel == MARKER:
                continue
            digest.update(rel.encode() + b"\0")
            with open(path, "rb") as f:
                digest.update(hashlib.sha256(f.read()).digest())
    return digest.hexdigest()


def not_our_site(out):
    """Why `out` may not be replaced, or '': only a folder this tool built (its marker holds the digest of
    everything in it) and nobody changed since (issue 39: any folder with an index.html was deleted whole)."""
    marker = os.path.join(out, MARKER)
    if os.path.islink(out) or not os.path.isdir(out):
        return "exists and is not a folder"
    if not os.path.isfile(marker) or os.path.islink(marker):
        return f"not a site this tool built (no {MARKER})" if os.listdir(out) else ""
    with open(marker) as f:
        recorded = f.read().strip()
    if recorded != tree_digest(out):
        return "changed since this tool built it (its files differ from the digest it recorded)"
    return ""


def site_bytes(out):
    """Total size of the site's files."""
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(out) for f in files)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--out", default="site", help="the site's folder, replaced whole (default: site, in "
                                                       "the workspace)")
    parser.add_argument("--results", help="the results folder (default: the workspace's results/)")
    parser.add_argument("--built-at", help="the build time stated on every page, ISO 8601 (default: now); "
                                           "the same sets and --built-at give the same bytes")
    return parser.parse_args(argv)


def main(argv=None, console=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    console = console or Console(highlight=False, soft_wrap=True, width=terminal.width())
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    results_root = args.results or os.path.join(workspace, "results")
    out = args.out if os.path.isabs(args.out) else os.path.join(workspace, args.out)
    built_at = args.built_at or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?Z?)?", built_at):
        console.print(f"[red]error:[/red] --built-at {built_at!r} is not an ISO 8601 date or time")
        return EXIT_BAD_INPUT
    started = time.monotonic()
    try:
        studies = build_site(results_root, out, built_at, console)
    except PublishError as e:
        console.print(f"[red]error:[/red] {e}")
        return EXIT_BAD_INPUT
    failed = [s for s in studies if s.failed]
    console.print(f"site: {out} ({len(studies) - len(failed)} set(s) published, {site_bytes(out) / 2**20:.1f} MiB, "
                  f"{time.monotonic() - started:.0f} s); open {os.path.join(out, 'index.html')}")
    for s in failed:
        console.print(f"[yellow]not published:[/yellow] {s.name}: {s.failed}")
    return EXIT_SOME_SETS_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
