"""tunelab publish: a static results site built from the committed result sets.

    bazel run //tools:publish -- [--out DIR] [--built-at 2026-11-24T00:00:00Z]

Every set under results/baselines/ gets a page: the question its matrix asks, the one-sentence answer of its
report, hosts, date, rig, its report as PDF and HTML (analysis/reports/report.py; the kind follows from what the
set compares: patched variants, MapReduce engines, parts before and after a page migration, else its
axes), and its provenance (the run's manifest). results/reference/ gets a page of the case studies'
published figures (not measured here); the side pages (side_pages.py): sensitivity.html what every committed
sensitivity figure says its gate catches (analysis/sensitivity/figures.py) with its history per rig; the nightly
history read from the results database (results/db: sets named nightly-<name>-... indexed into it first, and
every fresh night it holds), plotted with its change points (analysis/history/) once there are two or more nights;
the committed bisects. Relative links only, nothing fetched: the folder
can be copied to any web server or bucket, or opened from disk. The same sets give the same bytes but for
the build time, stated once at the foot of each page (--built-at). A set that cannot be rendered is listed
on the index with the reason, never left out.

Studies (results/baselines/studies.toml, tools/publish/studies.py) are what the index lists, grouped by rig and
case study: one set, or two with the report kind that compares them (Kunpeng vs x86 is two sets, cross-host),
each with its title, its answer in one line (analysis/oneline.py), a small picture of its main figure, the
emulated-host banner and the ceiling note where they apply; its page (studies/<id>/) says how to regenerate
its report and links the sets it reads. A set in no study is listed under its rig with its own page.
"""

import argparse
import concurrent.futures
import dataclasses
import datetime
import glob
import hashlib
import json
import multiprocessing
import os
import re
import shlex
import shutil
import sys
import tempfile
import time

import jinja2
import matplotlib
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from analysis import compare, resultsets
from analysis.reports import kinds
from analysis.profiling import profiles
from analysis.reports import render
from analysis.reports import parts as report_parts
from analysis.reports import report
from analysis.reports import story as story_lib
from results import safeio
from results.db import store as db_store
from rigs import registry
from rigs.host import terminal
from tools.publish import monitor_pages
from tools.publish import side_pages
from tools.publish import studies as studies_toml

matplotlib.use("Agg")
from matplotlib import image as mpimage  # noqa: E402 -- after the backend is chosen

EXIT_OK, EXIT_SOME_SETS_FAILED, EXIT_BAD_INPUT = 0, 1, 2
TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")


class PublishError(ValueError):
    pass


@dataclasses.dataclass
class Study:
    """One entry of the index: a committed set (its own page under sets/) or a declared study (studies/)."""
    name: str  # the set's name, or the study's id
    kind: str = ""
    rig: str = ""
    question: str = ""
    answer: str = ""  # the report's answer paragraph
    hosts: list = dataclasses.field(default_factory=list)
    date: str = ""
    runs: int = 0
    failed: str = ""  # why it could not be rendered, if it could not
    title: str = ""  # a declared study's heading
    one_line: str = ""  # the answer in one line (analysis/oneline.py)
    banner: str = ""  # "EMULATED HOST: mechanics, not speed", on the index row as on every page
    ceiling: list = dataclasses.field(default_factory=list)  # the report's AT CEILING notes
    picture: str = ""  # its main figure, a file in the entry's folder (thumb.png beside it: the index's)
    sets: list = dataclasses.field(default_factory=list)  # the sets a declared study reads
    case_study: str = ""
    command: str = ""  # how to regenerate its report
    declared: bool = False
    flame_graphs: list = dataclasses.field(default_factory=list)  # [(comparison, file under flames/)], interactive
    flame_note: str = ""  # why a profiled set has no flame graph pages, if it has none
    monitor_cells: list = dataclasses.field(default_factory=list)  # [monitor_pages.MonitorCell], a page each
    note: str = ""  # what the set measured, from studies.toml's [[set_note]] (its own page)

    @property
    def folder(self):
        return f"{'studies' if self.declared else 'sets'}/{self.name}"


def kind_for(result_set):
    """The report kind that answers what the set compares: a split in parts (locality pre/post), patched
    variants, an axis a rig's rig.toml gives a kind of its own (MapReduce's engines), else every axis it
    varies."""
    docs = result_set.docs
    if any((d.get("split") or {}).get("axis") == "locality" for d in docs):
        return "memory-locality"
    varying = compare.varying_params(d["cell"]["params"] for d in docs)
    if "variant" in varying:
        bumps = {d["cell"]["params"]["variant"].startswith("bump:") for d in docs if d["cell"]["params"]["variant"] != "stock"}
        return "dependency-bump" if bumps == {True} else "stock-vs-patched"
    rig = registry.load().get(result_set.manifest.get("matrix", {}).get("rig", ""))
    return next((kind for axis, kind in sorted(rig.axis_kinds.items()) if axis in varying), "axis") if rig else "axis"


def answer_of(blocks):
    """The answer paragraph of a report's title page, without its label."""
    return _para(blocks, "Answer: ")


def _para(blocks, label):
    para = next((b for b in blocks if isinstance(b, render.Para) and b.text.startswith(label)), None)
    return para.text[len(label):] if para else ""


def question_of(blocks, kind):
    title = blocks[0].text if blocks and isinstance(blocks[0], render.Title) else ""
    prefix = kinds.KINDS[kind].title
    if title.startswith(prefix):  # "Cross-host (x86_64 vs aarch64): <question>"
        rest = title[len(prefix):]
        return rest.split(": ", 1)[1] if ": " in rest else rest
    return title


THUMB_SCALE = 0.35  # of the report's figure (about 7.5 x 3 in at 100 dpi): an index row's picture


def write_flame_graphs(sets, out_dir, flame_tools):
    """The interactive differential flame graph of every profiled comparison of `sets` (analysis/profiling/profiles.py,
    async-profiler's converter), under out_dir/flames/: ([(label, file name)], why there are none)."""
    found = []
    for result_set in sets:
        events = sorted({e for d in result_set.docs for e in (d.get("profile") or {}).get("events", [])})
        for event in events:
            found += [c for c in profiles.comparisons(result_set, event) if c.rows]
    if not found:
        return [], ""
    if not flame_tools:
        return [], "no flame graph pages: this site was built without the converter (bazel run //tools:publish builds them)"
    pages = []
    for c in found:
        path = profiles.flame_graph(flame_tools[0], flame_tools[1], c, os.path.join(out_dir, "flames"))
        # The converter's page names no icon, so a browser asks the site's root for one: say there is none,
        # as the site's own pages do.
        html = safeio.read_bytes(path, MAX_SITE_FILE_BYTES).decode()
        safeio.write_text(path, html.replace("<head>", '<head>\n<link rel="icon" href="data:,">', 1))
        pages.append((f"{c.label()} ({c.event}): {profiles.one_line(c.rows)}", os.path.basename(path)))
    return pages, ""


def render_study(result_set, references, out_dir, declared=None, sets=None, flame_tools=None):
    """Writes a report (PDF, HTML), provenance and a small picture of the main figure into out_dir; returns
    its Study. Without `declared`, the report of one committed set; with it, the declared study's report of
    `sets` (its kind and question). flame_tools: (java, jfr-converter jar) for the profiled comparisons'
    interactive differential flame graphs (write_flame_graphs)."""
    sets = sets or [result_set]
    study = Study(name=declared.id if declared else result_set.name,
                  rig=result_set.manifest.get("matrix", {}).get("rig", ""),
                  hosts=sorted({h for s in sets for h in s.host_ids()}), date=max(side_pages.set_date(s) for s in sets),
                  runs=sum(d["status"] == "ok" for s in sets for d in s.docs), declared=declared is not None,
                  sets=[s.name for s in sets])
    study.kind = (declared.kind if declared else "") or kind_for(result_set)
    if declared:
        study.title, study.case_study = declared.title, declared.case_study
    paths = " ".join(f"results/baselines/{s.name}" for s in sets)
    asked = f" --question {shlex.quote(declared.question)}" if declared else ""
    asked += "".join(f" {shlex.quote(flag)}" for flag in (declared.report_args() if declared else []))
    parts = bool(declared and declared.parts)
    # A study's report is its story; a set's page has every metric (the appendix).
    study.command = (f"bazel run //analysis:report -- {paths} --kind {study.kind}{' --parts' if parts else ''}{asked}"
                     f"{'' if declared else ' --appendix'} --out report.pdf")
    with tempfile.TemporaryDirectory() as figures:
        build = report_parts.build_parts if parts else report.build
        blocks = build(study.kind, sets + references, figures, generated_at=study.date or "unknown date",
                       command=study.command, question=declared.question if declared else None,
                       story=declared.story if declared else story_lib.Story(), appendix=declared is None)
        report.write(blocks, os.path.join(out_dir, "report.pdf"), os.path.join(out_dir, "report.html"))
        main_figure = next((b.path for b in blocks if isinstance(b, render.Figure)), None)
        if main_figure:  # the page shows it whole, the index small
            safeio.copy_file(main_figure, os.path.join(out_dir, "figure.png"), 0o644)
            with safeio.atomic_file(os.path.join(out_dir, "thumb.png"), binary=True) as thumb:
                mpimage.thumbnail(main_figure, thumb, scale=THUMB_SCALE)
            study.picture = "figure.png"
    study.question, study.answer = question_of(blocks, study.kind), answer_of(blocks)
    study.one_line = _para(blocks, "In one line: ")
    study.ceiling = [b.text.removeprefix("AT CEILING: ").split(" (analysis/ceilings.py", 1)[0] for b in blocks
                     if isinstance(b, render.Para) and b.text.startswith("AT CEILING: ")]
    study.banner = blocks[0].banner if blocks and isinstance(blocks[0], render.Title) else ""
    study.flame_graphs, study.flame_note = write_flame_graphs(sets, out_dir, flame_tools)
    study.monitor_cells = monitor_pages.write(sets, out_dir)
    safeio.write_text(os.path.join(out_dir, "manifest.json"), json.dumps(
        result_set.manifest if not declared else {s.name: s.manifest for s in sets}, indent=1, sort_keys=True) + "\n")
    return study


# What render_all's forked workers inherit: the work, the sets by name, the references, the staging folder and
# the flame tools (result sets are large: never pickled to a worker, only the index of its entry).
_SHARED = {}


def _render_entry(index):
    """Renders entry `index` of the shared work into its folder under staging; a set that cannot be rendered
    comes back as a Study with its reason (each in isolation, issue 39) and its folder removed."""
    work, by_name, references, staging, flame_tools = _SHARED["args"]
    result_set, study = work[index]
    name = study.id if study else result_set.name
    folder = os.path.join(staging, "studies" if study else "sets", name)
    os.makedirs(folder)
    try:
        return render_study(result_set, references, folder, study,
                            [by_name[n] for n in study.sets] if study else None, flame_tools)
    except Exception as e:  # noqa: BLE001 -- each set in isolation: listed with its reason (issue 39)
        shutil.rmtree(folder)
        reason = str(e) if isinstance(e, (kinds.ReportError, resultsets.ResultSetError, ValueError)) \
            else f"{type(e).__name__}: {e}"
        return Study(name=name, rig=result_set.manifest.get("matrix", {}).get("rig", ""),
                     date=side_pages.set_date(result_set), failed=f"no report: {reason[:300]}", declared=study is not None)


def render_all(work, by_name, references, staging, flame_tools, jobs=None):
    """An iterator of the Study of every (set, declared study or None) of `work` as it is rendered, `jobs` at
    once in forked workers (the reports are independent and CPU-bound: matplotlib and reportlab; issue 80),
    in completion order (build_site sorts the entries afterwards). The workers are forked here, before the
    caller starts a progress bar's thread: a fork beside a running thread could inherit a lock it holds."""
    jobs = max(1, min(jobs or len(os.sched_getaffinity(0)), len(work)))
    _SHARED["args"] = (work, by_name, references, staging, flame_tools)
    if jobs == 1:
        return _rendered_here(len(work))
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"))
    futures = {pool.submit(_render_entry, i): i for i in range(len(work))}
    return _rendered_by(pool, futures, work, staging)


def _rendered_here(count):
    try:
        for index in range(count):
            yield _render_entry(index)
    finally:
        _SHARED.clear()


def _rendered_by(pool, futures, work, staging):
    try:
        for future in concurrent.futures.as_completed(futures):
            try:
                yield future.result()
            except concurrent.futures.process.BrokenProcessPool:
                # A worker died (killed, or a crash below Python): the entries not yet back are listed with
                # the reason, never left out; the site goes on.
                result_set, study = work[futures[future]]
                name = study.id if study else result_set.name
                shutil.rmtree(os.path.join(staging, "studies" if study else "sets", name), ignore_errors=True)
                yield Study(name=name, date=side_pages.set_date(result_set), declared=study is not None,
                            failed="no report: a report worker died before it was rendered (publish --jobs 1 "
                                   "renders one at a time in one process)")
    finally:
        pool.shutdown(cancel_futures=True)
        _SHARED.clear()


def environment():
    """The site's templates: escaped, and a name a template uses that the page lacks is an error, not blank."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def load_sets(baselines):
    """([ResultSet], [Study of the sets that could not be read]) in name order."""
    loaded, failed = [], []
    for name in sorted(os.listdir(baselines)):
        path = os.path.join(baselines, name)
        if not os.path.isdir(path):
            continue
        if not side_pages.SAFE_NAME.fullmatch(name):
            failed.append(Study(name=name[:60], failed="not a set name tunelab writes"))
            continue
        try:
            loaded.append(resultsets.load_run(path, name=name))
        except (resultsets.ResultSetError, ValueError, OSError) as e:
            failed.append(Study(name=name, failed=f"cannot be read: {e}"))
    return loaded, failed


def read_studies(baselines, sets):
    """([studies_toml.Declared], [Study of each entry that cannot be published]) of the set folder's
    studies.toml (none: no declared studies)."""
    path = os.path.join(baselines, studies_toml.FILE_NAME)
    if not os.path.lexists(path):
        return [], []
    # A link is followed only where Bazel made it (a test's or a tool's runfiles), as for the sets (issue 39).
    if (os.path.islink(path) and not resultsets.in_bazel_runfiles(path)) or not os.path.isfile(path):
        return [], [Study(name=studies_toml.FILE_NAME, failed="not read: a link or not a regular file")]
    try:
        declared, problems = studies_toml.parse(safeio.read_bytes(path, studies_toml.MAX_FILE_BYTES),
                                                {s.name for s in sets})
    except (studies_toml.StudiesError, safeio.InputError, OSError) as e:
        return [], [Study(name=studies_toml.FILE_NAME, failed=f"not read: {str(e)[:300]}")]
    # A story's metrics are checked against the sets it names: a metric no set measures is refused with the reason.
    by_name = {s.name: s for s in sets}
    for study in list(declared):
        unmeasured = study.unmeasured([by_name[n] for n in study.sets])
        if unmeasured:
            declared.remove(study)
            problems.append((f"study {study.id!r}", f"its story: {unmeasured}"))
    return declared, [Study(name=f"{studies_toml.FILE_NAME}: {where}"[:80], failed=reason[:300])
                      for where, reason in problems]


def attach_set_notes(baselines, sets, studies):
    """Gives each set's entry of `studies` its note from studies.toml's [[set_note]] tables; a wrong note is
    listed (appended to `studies`) with its reason, as a wrong study is. read_studies has already said why a
    file it could not read was not read."""
    path = os.path.join(baselines, studies_toml.FILE_NAME)
    if not os.path.isfile(path) or (os.path.islink(path) and not resultsets.in_bazel_runfiles(path)):
        return
    try:
        notes, problems = studies_toml.set_notes(safeio.read_bytes(path, studies_toml.MAX_FILE_BYTES),
                                                 {s.name for s in sets})
    except (safeio.InputError, OSError):
        return
    for study in studies:
        if not study.declared and not study.failed:
            study.note = notes.get(study.name, "")
    studies += [Study(name=f"{studies_toml.FILE_NAME}: {where}"[:80], failed=reason[:300]) for where, reason in problems]


def index_groups(entries, references):
    """The index's groups, one per rig: its case study (from the published references), its declared studies,
    then its sets that no study reads. Rigs in the order of their case studies, the harness' own last."""
    cases = {}
    for ref in references:
        doc = ref.reference
        cases.setdefault(doc["rig"], (doc["source"]["case_study"], doc["source"]["title"]))
    in_studies = {name for e in entries if e.declared and not e.failed for name in e.sets}
    titles = registry.load()  # a rig's title is its rig.toml's; a set of a rig gone from the checkout keeps its name
    rigs = sorted({e.rig for e in entries if not e.failed and e.rig},
                  key=lambda r: (r not in cases, cases.get(r, ("",))[0], r))
    groups = []
    for rig in rigs:
        case = cases.get(rig)
        groups.append({
            "rig": rig, "title": titles[rig].title if rig in titles else rig,
            "case": f"case study {case[0]}: {case[1]}" if case else "",
            "case_number": case[0] if case else "",  # a study of another case study says its own
            "studies": [e for e in entries if e.declared and not e.failed and e.rig == rig],
            "sets": [e for e in entries if not e.declared and not e.failed and e.rig == rig
                     and e.name not in in_studies],
        })
    return groups


def build_site(results_root, out, built_at, console=None, flame_tools=None, jobs=None, db=None):
    """Builds the site into `out` (replaced whole, through a temporary folder beside it); returns the
    entries (sets and declared studies), failed ones included. flame_tools: (java, jfr-converter jar), for
    the profiled sets' flame graph pages. jobs: reports rendered at once (default: this process' CPUs). db: the
    results database the nightly history is read from (default: TUNELAB_DB, else results/.db/tunelab.sqlite)."""
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
    declared, problems = read_studies(baselines, sets)
    studies += problems
    by_name = {s.name: s for s in sets}
    parent = os.path.dirname(os.path.abspath(out)) or "."
    staging = safeio.new_folder(parent, ".publish-")
    try:
        env = environment()
        columns = [TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TimeRemainingColumn()]
        work = [(s, None) for s in sets] + [(by_name[d.sets[0]], d) for d in declared]
        rendered = render_all(work, by_name, references, staging, flame_tools, jobs)
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task("reports", total=len(work))
            for study in rendered:
                studies.append(study)
                progress.update(task, description=f"report {study.name[:40]}")
                progress.advance(task)
        attach_set_notes(baselines, sets, studies)
        studies.sort(key=lambda s: s.name)  # newest first, then by name; those not rendered last
        studies.sort(key=lambda s: s.date, reverse=True)
        studies.sort(key=lambda s: bool(s.failed))
        histories, unread_nights = side_pages.nightly_histories(results_root, sets,
                                                                db or db_store.database_url(None, results_root),
                                                                staging)
        rows, sensitivity_plots, promised, unusable = side_pages.write_sensitivity(baselines, staging)
        bisects, unreadable_bisects = side_pages.write_bisects(results_root, staging)
        # listed last with their reasons, as a set that cannot be read
        studies += [Study(name=name, failed=reason) for name, reason in unusable + unreadable_bisects + unread_nights]
        page = dict(built_at=built_at, studies=studies, histories=histories, groups=index_groups(studies, references),
                    references=[r.reference for r in references], rows=rows, plots=sensitivity_plots,
                    promised=promised, bisects=bisects)
        for template, target in (("index.html.j2", "index.html"), ("reference.html.j2", "reference.html"),
                                 ("sensitivity.html.j2", "sensitivity.html")):
            safeio.write_text(os.path.join(staging, target), env.get_template(template).render(root=".", **page))
        for study in studies:
            if not study.failed:
                safeio.write_text(os.path.join(staging, study.folder, "index.html"),
                                  env.get_template("set.html.j2").render(root="../..", study=study, **page))
                monitor_pages.render(env, staging, study, page)
        safeio.copy_file(os.path.join(TEMPLATES, "style.css"), os.path.join(staging, "style.css"), 0o644)
        safeio.write_text(os.path.join(staging, MARKER), tree_digest(staging) + "\n")
        os.chmod(staging, 0o755)  # a static site: readable by the web server's user (mkdtemp made it 0700)
        if os.path.lexists(out):
            problem = not_our_site(out)
            if problem:
                raise PublishError(f"{out}: {problem}; not replaced (choose another --out, or remove it yourself)")
            shutil.rmtree(out)
        safeio.move_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return studies


MARKER = ".tunelab-site"
MAX_SITE_FILE_BYTES = 256 << 20  # a report's PDF is ~1 MB  # written last into a site this tool built: the digest of every other file in it


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
            # Never followed into a FIFO or a device, never larger than a site file can be (issue 58, row 11:
            # a FIFO in an old site hung publish, a link to /dev/zero took 2.4 GB).
            digest.update(hashlib.sha256(safeio.read_bytes(path, MAX_SITE_FILE_BYTES)).digest())
    return digest.hexdigest()


def not_our_site(out):
    """Why `out` may not be replaced, or '': only a folder this tool built (its marker holds the digest of
    everything in it) and nobody changed since (issue 39: any folder with an index.html was deleted whole)."""
    marker = os.path.join(out, MARKER)
    if os.path.islink(out) or not os.path.isdir(out):
        return "exists and is not a folder"
    if not os.path.isfile(marker) or os.path.islink(marker):
        return f"not a site this tool built (no {MARKER})" if os.listdir(out) else ""
    try:
        recorded = safeio.read_text(marker, 1 << 10).strip()
        digest = tree_digest(out)
    except (safeio.InputError, OSError) as e:
        return f"holds what this tool never writes ({str(e)[:200]})"
    if recorded != digest:
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
    parser.add_argument("--db", help="the results database the nightly history is read from (default: TUNELAB_DB, "
                                     "else results/.db/tunelab.sqlite, made and filled from the nightly sets)")
    parser.add_argument("--built-at", help="the build time stated on every page, ISO 8601 (default: now); "
                                           "the same sets and --built-at give the same bytes")
    parser.add_argument("--jobs", type=int, help="reports rendered at once (default: the CPUs this process may "
                                                 "use); 1 renders them one after another in this process")
    parser.add_argument("--entries-json", metavar="FILE", help="also write every entry of the index (sets and studies, "
                                                               "the failed ones with why) to FILE as JSON, for scripts")
    parser.add_argument("--java", help=argparse.SUPPRESS)  # with --converter: given by the binary's BUILD args
    parser.add_argument("--converter", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None, console=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    console = console or Console(highlight=False, soft_wrap=True, width=terminal.width())
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    results_root = args.results or os.path.join(workspace, "results")
    out = args.out if os.path.isabs(args.out) else os.path.join(workspace, args.out)
    built_at = args.built_at or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if args.jobs is not None and not 1 <= args.jobs <= 64:
        console.print(f"[red]error:[/red] --jobs {args.jobs}: give 1 to 64 reports at once")
        return EXIT_BAD_INPUT
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?Z?)?", built_at):
        console.print(f"[red]error:[/red] --built-at {built_at!r} is not an ISO 8601 date or time")
        return EXIT_BAD_INPUT
    started = time.monotonic()
    try:
        studies = build_site(results_root, out, built_at, console,
                             (args.java, args.converter) if args.java and args.converter else None, args.jobs,
                             db=args.db)
    except PublishError as e:
        console.print(f"[red]error:[/red] {e}")
        return EXIT_BAD_INPUT
    if args.entries_json:
        safeio.write_json(args.entries_json, {"built_at": built_at,
                                              "entries": [dataclasses.asdict(s) for s in studies]})
    failed = [s for s in studies if s.failed]
    published = [s for s in studies if not s.failed]
    console.print(f"site: {out} ({sum(not s.declared for s in published)} sets and "
                  f"{sum(s.declared for s in published)} studies published, {site_bytes(out) / 2**20:.1f} MiB, "
                  f"{time.monotonic() - started:.0f} s); open {os.path.join(out, 'index.html')}")
    for s in failed:
        console.print(f"[yellow]not published:[/yellow] {s.name}: {s.failed}")
    return EXIT_SOME_SETS_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
