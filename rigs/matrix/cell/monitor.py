"""A launch's monitors (issue 63), stored with its result: once a second, the host's CPU by mode (cores busy
over that second: user, system, iowait, steal), load and available memory, and the rig's own live values as
its processes print them (the rig's live_metrics, read by its live()). A reader of the result sees whether a
slow run had a busy host; a watched run serves the same values live (rigs/matrix/livemetrics.py).

Bounded: at most MAX_POINTS points are kept (a longer launch keeps every k-th, and says how many it thinned);
a rig line its live() cannot read or a value it did not declare is kept as one problem, never a failure."""

from rigs.host import hostnoise

MAX_POINTS = 1800
BUSY_MODES = ("user", "system", "iowait", "steal")
UNITS = {"host_load1": "load", "host_memory_available_bytes": "bytes",
         **{f"host_cpu_{m}_cores": "cores" for m in BUSY_MODES}}


def live_values(rig, role, lines):
    """({name: value}, problem) of the rig's live values in `lines` (new whole lines of `role`'s stdout), the
    newest of each name; problem: what it could not read first, else ""."""
    values, problem = {}, ""
    declared = rig.live_metrics
    if not declared:
        return values, problem
    for line in lines:
        try:
            found = rig.live(role, line)
            unknown = [n for n in found if n not in declared]
            if unknown:
                raise ValueError(f"live() gave {unknown[0]!r}, not one of its live_metrics")
            values.update({n: float(v) for n, v in found.items()})
        except Exception as e:  # noqa: BLE001 -- a monitor never fails a cell
            problem = problem or f"the {rig.name} rig's live(): {type(e).__name__}: {e}"[:300]
    return values, problem


class Monitor:
    def __init__(self, rig, proc, started_monotonic):
        self.rig, self.proc, self.started = rig, proc, started_monotonic
        self.t = []
        self.series = {}  # name -> [value or None], one per point
        self.last_cpu = None  # (monotonic, {mode: s}) of the point before
        self.problem = ""
        self.thinned = 0
        self.next_at = started_monotonic + 1.0  # by the launch's clock, whatever its phases

    def due(self, now_monotonic):
        """Whether a point is due (once a second of the launch); moves the next one on when it is."""
        if now_monotonic < self.next_at:
            return False
        self.next_at = max(self.next_at + 1.0, now_monotonic + 0.5)
        return True

    def sample(self, now_monotonic, running):
        """One point: the host now and the rig's values in what each running process printed since the last
        point. Returns {role: {name: value}} of the rig's values read (for a watched run)."""
        host = hostnoise.host_values(self.proc)
        point = {}
        cpu = host.get("cpu_seconds")
        if cpu and self.last_cpu:
            seconds = now_monotonic - self.last_cpu[0]
            if seconds > 0:
                for mode in BUSY_MODES:
                    point[f"host_cpu_{mode}_cores"] = round(max(0.0, cpu[mode] - self.last_cpu[1][mode]) / seconds, 3)
        if cpu:
            self.last_cpu = (now_monotonic, cpu)
        if "load1" in host:
            point["host_load1"] = host["load1"]
        if "memory_available_bytes" in host:
            point["host_memory_available_bytes"] = host["memory_available_bytes"]
        by_role = {}
        for r in running:
            values, problem = live_values(self.rig, r.role, r.new_stdout_lines())
            self.problem = self.problem or problem
            if values:
                by_role[r.role] = values
                point.update({f"{r.role}.{n}": v for n, v in values.items()})
        self._add(round(now_monotonic - self.started, 3), point)
        return by_role

    def _add(self, t, point):
        if len(self.t) >= MAX_POINTS:  # keep every other point from here on: the series stays whole, coarser
            keep = range(0, len(self.t), 2)
            self.thinned += len(self.t) - len(keep)
            self.t = [self.t[i] for i in keep]
            self.series = {k: [v[i] for i in keep] for k, v in self.series.items()}
        n = len(self.t)
        for name in point:
            self.series.setdefault(name, [None] * n)
        for name, values in self.series.items():
            values.append(point.get(name))
        self.t.append(t)

    def document(self):
        """The result's `monitors` block, or None before any point."""
        if not self.t:
            return None
        # A rig's value: its kind (the name carries the unit; a counter only grows within the launch).
        units = {name: UNITS.get(name) or self.rig.live_metrics[name.split(".", 1)[1]].kind for name in self.series}
        out = {"interval_s": 1.0, "t": list(self.t), "series": {k: list(v) for k, v in sorted(self.series.items())},
               "units": units}
        if self.thinned:
            out["thinned_points"] = self.thinned
        if self.problem:
            out["problem"] = self.problem
        return out
