"""The site's per-cell monitor pages (issue 63): for each cell of a study whose results stored monitors
(rigs/matrix/cell/monitor.py), a page under the study's monitors/ drawing every series the run's live
endpoint served, once a second of each run: the host's cores busy and stolen, its load and memory, and the
rig's own live values (analysis/reports/monitor_series.py). The study's page lists the cells with their largest
steal and load, so a reader finds the run that had a busy host."""

import dataclasses
import os
import re

from analysis.reports import monitor_series
from analysis.reports import plots
from analysis.reports import sections
from results import safeio

FOLDER = "monitors"


@dataclasses.dataclass
class MonitorCell:
    page: str  # file under the study's monitors/
    label: str  # the parameters that vary in its set (or the cell id)
    cell_id: str
    set_name: str
    runs: int
    steal_max: float  # cores
    load_max: float
    figures: list  # [(panel title, unit, file under monitors/)]
    notes: list  # [(repetition, points, thinned points, problem)]


def write(sets, out_dir):
    """Draws the monitors of every cell of `sets` into out_dir/monitors/; returns [MonitorCell], in the sets'
    order, for the pages (empty when no result stored monitors)."""
    found = []
    for set_index, result_set in enumerate(sets):
        cells = sections.ok_cells(result_set.docs, lambda d: (d.get("monitors") or {}).get("t"))
        for label, cell_docs in cells:
            cell_id = cell_docs[0]["cell"]["id"]
            if not re.fullmatch(r"[0-9a-f]{6,64}", cell_id):  # a file name below: only what the schema makes
                continue
            stem = f"{set_index}-{cell_id}" if len(sets) > 1 else cell_id
            os.makedirs(os.path.join(out_dir, FOLDER), exist_ok=True)
            figures = []
            for index, panel in enumerate(monitor_series.panels(cell_docs)):
                name = f"{stem}-{index}.png"
                plots.series(os.path.join(out_dir, FOLDER, name), panel.title[:90], panel.unit, panel.lines,
                             xlabel=monitor_series.XLABEL)
                figures.append((panel.title, panel.unit, name))
            found.append(MonitorCell(page=f"{stem}.html", label=label, cell_id=cell_id, set_name=result_set.name,
                                     runs=len(cell_docs), steal_max=monitor_series.largest(cell_docs, "host_cpu_steal_cores"),
                                     load_max=monitor_series.largest(cell_docs, "host_load1"), figures=figures,
                                     notes=monitor_series.notes(cell_docs)))
    return found


def render(env, staging, study, page):
    """Writes each monitored cell's page of `study` (its monitor_cells) into the study's folder."""
    for cell in study.monitor_cells:
        html = env.get_template("monitor.html.j2").render(root="../../..", study=study, cell=cell, **page)
        safeio.write_text(os.path.join(staging, study.folder, FOLDER, cell.page), html)
