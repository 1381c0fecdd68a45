"""The Grafana dashboard of a watched run (issue 63), generated from the rig registry: a row for the run (its
progress, ETA, the running cell, its processes' CPU), one for the host (CPU by mode, steal, load, memory) and
one per rig with a panel for each value its live() reads (rigs/<rig>/rig.py live_metrics: a counter drawn as
its rate per second, a gauge as it is). Every query names only metrics the run's endpoint serves
(rigs/matrix/livemetrics.py; dashboard_test checks it).

    ./bazelw run //tools/grafana:dashboard -- --write     # regenerate tools/grafana/tunelab-live.json
    ./bazelw run //tools/grafana:dashboard                # print it

Import the file in Grafana (Dashboards, Import) and pick the Prometheus data source that scrapes the run
(`--metrics-port`)."""

import argparse
import json
import os
import sys

from rigs import registry
from rigs.matrix import livemetrics
from rigs.matrix.contract import rig as rig_contract
from results import safeio

OUTPUT = os.path.join("tools", "grafana", "tunelab-live.json")
RATE_WINDOW = "15s"  # four scrapes at Prometheus' 1 s to 5 s intervals: a rate still within one cell
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
PANEL_W, PANEL_H = 12, 8


def live_metrics_by_rig(root=registry.ROOT):
    """{rig: {name: LiveMetric}} of every registered rig, in the registry's order."""
    return {name: dict(rig_contract.load_rig(name).live_metrics) for name in registry.load(root)}


def served_name(rig, name, declared):
    """The sample name the endpoint serves for a rig's live value."""
    base = f"{livemetrics.PREFIX}{rig}_{name}"
    return base + "_total" if declared.kind == "counter" else base


class Layout:
    """Panels placed two a row, rows stacked (Grafana's gridPos), ids in order."""

    def __init__(self):
        self.panels, self.y, self.x, self.next_id = [], 0, 0, 1

    def _id(self):
        self.next_id += 1
        return self.next_id - 1

    def row(self, title):
        if self.x:
            self.y, self.x = self.y + PANEL_H, 0
        self.panels.append({"type": "row", "title": title, "id": self._id(), "collapsed": False,
                            "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": []})
        self.y += 1

    def panel(self, title, exprs, kind="timeseries", unit="short", description=""):
        targets = [{"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend, "datasource": DATASOURCE}
                   for i, (expr, legend) in enumerate(exprs)]
        self.panels.append({"type": kind, "title": title, "id": self._id(), "datasource": DATASOURCE,
                            "description": description, "targets": targets,
                            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                            "gridPos": {"x": self.x, "y": self.y, "w": PANEL_W, "h": PANEL_H}})
        self.x += PANEL_W
        if self.x >= 24:
            self.y, self.x = self.y + PANEL_H, 0


def run_and_host_rows(layout):
    p = livemetrics.PREFIX
    layout.row("Run")
    layout.panel("Cell repetitions done, of planned",
                 [(f"sum(max_over_time({p}run_cell_repetitions_done_total[1h]))", "done"),
                  (f"{p}run_cell_repetitions", "planned")], kind="stat")
    layout.panel("Time left (ETA)", [(f"{p}run_eta_seconds", "ETA")], kind="stat", unit="s")
    layout.panel("Running cell", [(f"{p}cell_info", "{{cell}} r{{repetition}}")], kind="table",
                 description="the cell running now, its axes as columns")
    layout.panel("CPU of the cell's processes", [(f"rate({p}cell_process_cpu_seconds_total[{RATE_WINDOW}])",
                                                  "{{role}}")], unit="percentunit",
                 description="cores each process of the running cell uses (1 = one core)")
    layout.row("Host")
    layout.panel("Host CPU by mode", [(f"sum by (mode) (rate({p}host_cpu_seconds_total{{mode!=\"idle\"}}"
                                       f"[{RATE_WINDOW}]))", "{{mode}}")], unit="percentunit",
                 description="cores busy by mode, all CPUs")
    layout.panel("Steal", [(f"rate({p}host_cpu_seconds_total{{mode=\"steal\"}}[{RATE_WINDOW}])", "steal")],
                 unit="percentunit", description="cores the hypervisor took: a slow run on a busy host shows here")
    layout.panel("Load (1 min)", [(f"{p}host_load1", "load1")])
    layout.panel("Memory available", [(f"{p}host_memory_available_bytes", "available")], unit="bytes")


def dashboard(by_rig):
    """The dashboard document for `by_rig` ({rig: {name: LiveMetric}})."""
    layout = Layout()
    run_and_host_rows(layout)
    for rig, metrics in by_rig.items():
        layout.row(f"Rig: {rig}")
        for name, declared in sorted(metrics.items()):
            served = served_name(rig, name, declared)
            if declared.kind == "counter":
                layout.panel(f"{name} per second", [(f"rate({served}[{RATE_WINDOW}])", "{{cell}} {{role}}")],
                             description=f"{declared.help} (its rate)")
            else:
                layout.panel(name, [(served, "{{cell}} {{role}}")], description=declared.help)
    return {
        "title": "tunelab: a run, live", "uid": "tunelab-live", "schemaVersion": 37, "version": 1,
        "description": "Generated by ./bazelw run //tools/grafana:dashboard -- --write from the rig registry; do "
                       "not edit by hand.",
        "editable": True, "refresh": "5s", "time": {"from": "now-30m", "to": "now"}, "tags": ["tunelab"],
        "templating": {"list": [{"name": "datasource", "label": "Prometheus", "type": "datasource",
                                 "query": "prometheus"}]},
        "panels": layout.panels,
    }


def render(document):
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"write {OUTPUT} of the workspace instead of printing")
    args = parser.parse_args(argv)
    text = render(dashboard(live_metrics_by_rig()))
    if not args.write:
        sys.stdout.write(text)
        return 0
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    if not workspace:
        parser.error("--write needs `bazel run` (BUILD_WORKSPACE_DIRECTORY names the checkout)")
    target = os.path.join(workspace, OUTPUT)
    safeio.write_text(target, text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
