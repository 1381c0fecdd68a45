"""A cell's stored monitors (rigs/matrix/cell/monitor.py, issue 63) as panels to plot: the host's cores busy and
stolen, its load and available memory, and each of the rig's own live values, one line per run. The report
draws the first panel per cell (analysis/reports/sections.monitor_blocks); the site's per-cell monitor page
draws them all (tools/publish/monitor_pages.py)."""

import dataclasses

NAN = float("nan")  # a point without a value (the first point has no CPU rate): a gap in the line, not a zero
BUSY_MODES = ("user", "system", "iowait")
XLABEL = "time since the launch started (s)"  # monitors run by the launch's clock, whatever its phases
HOST_PANELS = (("host_load1", "host load average (1 min)", "load"),
               ("host_memory_available_bytes", "host memory available", "bytes"))


@dataclasses.dataclass
class Panel:
    title: str
    unit: str
    lines: list  # [(label, [t in s], [value or NaN])]


def _values(values, n):
    return [NAN if v is None else v for v in (values or [None] * n)]


def host_cpu_lines(doc):
    """[(label, t, busy), (label, t, steal)] of one run: cores busy (user + system + iowait) and stolen."""
    m = doc["monitors"]
    s, n = m["series"], len(m["t"])
    parts = [s.get(f"host_cpu_{mode}_cores") or [None] * n for mode in BUSY_MODES]
    busy = [NAN if all(p[i] is None for p in parts) else sum(p[i] or 0.0 for p in parts) for i in range(n)]
    rep = doc["cell"]["repetition"]
    return [(f"r{rep} busy", m["t"], busy), (f"r{rep} steal", m["t"], _values(s.get("host_cpu_steal_cores"), n))]


def panels(cell_docs):
    """[Panel] of one cell's runs that stored monitors: the host's CPU first, then its load and memory, then
    each rig value (`<role>.<name>`, its unit the kind the rig declared) in name order."""
    docs = [d for d in cell_docs if (d.get("monitors") or {}).get("t")]
    if not docs:
        return []
    out = [Panel("host cores busy (user + system + iowait) and stolen", "cores",
                 [line for d in docs for line in host_cpu_lines(d)])]
    for name, title, unit in HOST_PANELS:
        lines = _run_lines(docs, name)
        if lines:
            out.append(Panel(title, unit, lines))
    rig_names = sorted({k for d in docs for k in d["monitors"]["series"] if "." in k})
    for name in rig_names:
        unit = next((d["monitors"].get("units", {}).get(name) for d in docs if name in d["monitors"]["series"]), "")
        out.append(Panel(name, str(unit or ""), _run_lines(docs, name)))
    return out


def _run_lines(docs, name):
    """[(label, t, values)] of series `name`, one line per run that stored it."""
    return [(f"r{d['cell']['repetition']}", d["monitors"]["t"], _values(d["monitors"]["series"][name], len(d["monitors"]["t"])))
            for d in docs if name in d["monitors"]["series"]]


def largest(cell_docs, name):
    """The largest value of host series `name` (e.g. host_load1) any run of the cell saw, 0.0 without one."""
    found = [v for d in cell_docs for v in ((d.get("monitors") or {}).get("series") or {}).get(name) or [] if v is not None]
    return max(found, default=0.0)


def notes(cell_docs):
    """[(repetition, points, thinned points, problem)] of the cell's runs with monitors."""
    return [(d["cell"]["repetition"], len(d["monitors"]["t"]), d["monitors"].get("thinned_points", 0),
             d["monitors"].get("problem", "")) for d in cell_docs if (d.get("monitors") or {}).get("t")]
