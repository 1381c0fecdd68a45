"""A run watched live (issue 63): an OpenMetrics/Prometheus endpoint on loopback (`--metrics-port`) and, for
shops on InfluxDB, line-protocol writes to a URL the user gives (`--influx-url`).

What it serves: the run's progress (cell repetitions planned and done by status, the ETA), the running cell's
labels (rig, cell id, every axis of the matrix, repetition), the CPU time of each process of the cell (the
runner samples it once a second), and the host's CPU time by mode (user, system, iowait, steal, ...), load and
available memory, read from /proc when scraped. Names follow Prometheus' conventions: `tunelab_` prefix, units
in names, `_total` for counters.

Watching never changes the run: the endpoint only answers GET with the current values (prometheus_client's
server, in daemon threads, so a slow scraper holds only its own thread); a port in use or an InfluxDB that
refuses or is down is said once, and the run goes on.
"""

import re
import threading
import time
import urllib.error
import urllib.request

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import start_http_server

from results import safeio
from rigs.host import hostnoise

PREFIX = "tunelab_"
LOOPBACK = "127.0.0.1"
MAX_LABEL_CHARS = 120
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
INFLUX_TIMEOUT_S = 2.0


class LiveMetricsError(ValueError):
    pass


def label_name(axis):
    """A Prometheus label name for a matrix axis (axes are words already; anything else is refused)."""
    if not LABEL_NAME.fullmatch(axis) or axis.startswith("__") or axis in ("cell", "repetition", "rig"):
        raise LiveMetricsError(f"axis {axis!r} cannot be a metric label")
    return axis


class LiveMetrics:
    """The run's live values (set by the runner's loop) and the collector that serves them with the host's."""

    def __init__(self, run_id, rig, matrix, profile, axes, proc="/proc", rig_metrics=None):
        self.axes = [label_name(a) for a in axes]
        self.rig_metrics = dict(rig_metrics or {})  # name -> rig contract LiveMetric (the rig's live_metrics)
        for name in self.rig_metrics:
            if not LABEL_NAME.fullmatch(name) or name.endswith("_total"):
                raise LiveMetricsError(f"the {rig} rig's live metric {name!r}: a word, without _total")
        self.rig_values = {}  # (role, name) -> value of the running cell
        self.problem = ""  # the first thing the rig's live() could not say (told once, at the run's end)
        self.proc = proc
        self.info = {"run_id": run_id, "rig": rig, "matrix": matrix, "profile": profile or ""}
        self.lock = threading.Lock()
        self.planned = 0
        self.done = {}  # status -> count
        self.eta_s = float("nan")
        self.cell = None  # {label: value} of the running cell
        self.process_cpu = {}  # role -> CPU seconds of the cell's process so far
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    # The runner's side.
    def set_planned(self, count, eta_s=None):
        with self.lock:
            self.planned = int(count)
            self.eta_s = float("nan") if eta_s is None else float(eta_s)

    def cell_started(self, cell_id, repetition, params):
        labels = {"cell": cell_id, "repetition": str(repetition)}
        labels.update({a: str(params.get(a, ""))[:MAX_LABEL_CHARS] for a in self.axes})
        with self.lock:
            self.cell, self.process_cpu, self.rig_values = labels, {}, {}

    def cell_done(self, status):
        with self.lock:
            self.done[status] = self.done.get(status, 0) + 1
            self.cell, self.process_cpu, self.rig_values = None, {}, {}

    def process_cpu_seconds(self, role, seconds):
        with self.lock:
            self.process_cpu[role] = float(seconds)

    def set_rig_values(self, role, values):
        """The rig's newest live values of `role` ({name: value}, names of its live_metrics: the cell's monitor
        read them, rigs/matrix/cell/monitor.py)."""
        with self.lock:
            self.rig_values.update({(role, n): float(v) for n, v in values.items() if n in self.rig_metrics})

    # The collector's side (prometheus_client calls it for every scrape or write).
    def collect(self):
        with self.lock:
            planned, done, eta_s = self.planned, dict(self.done), self.eta_s
            cell, process_cpu = (dict(self.cell) if self.cell else None), dict(self.process_cpu)
            rig_values = dict(self.rig_values)
        info = GaugeMetricFamily(PREFIX + "run_info", "The run being measured (always 1)", labels=list(self.info))
        info.add_metric(list(self.info.values()), 1)
        yield info
        yield GaugeMetricFamily(PREFIX + "run_cell_repetitions", "Cell repetitions this invocation of the run plans "
                                "now (a sequential policy's decisions remove some, noisy rounds add some)", value=planned)
        finished = CounterMetricFamily(PREFIX + "run_cell_repetitions_done",
                                       "Cell repetitions this invocation finished, by status", labels=["status"])
        for status in sorted(done):
            finished.add_metric([status], done[status])
        yield finished
        yield GaugeMetricFamily(PREFIX + "run_eta_seconds", "The run's estimated time left (NaN before the first "
                                "cell ends)", value=eta_s)
        running = GaugeMetricFamily(PREFIX + "cell_info", "The cell running now, its axes as labels (1; absent "
                                    "between cells)", labels=["rig", "cell", "repetition", *self.axes])
        if cell:
            running.add_metric([self.info["rig"], cell["cell"], cell["repetition"], *(cell[a] for a in self.axes)], 1)
        yield running
        cpu = CounterMetricFamily(PREFIX + "cell_process_cpu_seconds", "CPU time of each process of the running "
                                  "cell so far, sampled once a second (resets with each launch)",
                                  labels=["cell", "role"])
        for role in sorted(process_cpu):
            cpu.add_metric([cell["cell"] if cell else "", role], process_cpu[role])
        yield cpu
        for name, declared in sorted(self.rig_metrics.items()):
            kind = CounterMetricFamily if declared.kind == "counter" else GaugeMetricFamily
            family = kind(f"{PREFIX}{self.info['rig']}_{name}", declared.help, labels=["cell", "role"])
            for (role, value_name), value in sorted(rig_values.items()):
                if value_name == name:
                    family.add_metric([cell["cell"] if cell else "", role], value)
            yield family
        yield from self.host_families()

    def host_families(self):
        host = hostnoise.host_values(self.proc)
        if "cpu_seconds" in host:
            cpu = CounterMetricFamily(PREFIX + "host_cpu_seconds", "The host's CPU time by mode (all CPUs, /proc/stat)",
                                      labels=["mode"])
            for mode, seconds in host["cpu_seconds"].items():
                cpu.add_metric([mode], seconds)
            yield cpu
        if "load1" in host:
            yield GaugeMetricFamily(PREFIX + "host_load1", "The host's 1-minute load average", value=host["load1"])
        if "memory_available_bytes" in host:
            yield GaugeMetricFamily(PREFIX + "host_memory_available_bytes", "MemAvailable of /proc/meminfo",
                                    value=host["memory_available_bytes"])


def serve(live, port, address=LOOPBACK):
    """Starts the endpoint; (server, url). OSError (a port in use, an address not here) to the caller, which
    says so and runs on without it."""
    server, _ = start_http_server(port, addr=address, registry=live.registry)
    host = f"[{address}]" if ":" in address else address
    return server, f"http://{host}:{server.server_port}/metrics"


def escape_key(text, measurement=False):
    """A measurement (measurement=True), tag key, tag value or field key in InfluxDB line protocol: commas and
    spaces (and, but in a measurement, equals signs) escaped with a backslash, as its reference says. What it
    cannot carry is replaced: a newline or other control character ends the line (a new point of any
    measurement), and 1.x has no escape for a backslash (a trailing one escapes the separator after it, merging
    the next tag): each becomes '/', control characters '?'."""
    text = re.sub(r"[\x00-\x1f\x7f]", "?", str(text)).replace("\\", "/")
    return re.sub(r"([, ])" if measurement else r"([,= ])", r"\\\1", text)


def line_protocol(registry, now_ns=None):
    """The registry's samples as InfluxDB line protocol: one line per sample, the metric name as measurement,
    its labels as tags, `value` the field."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    lines = []
    for family in registry.collect():
        for s in family.samples:
            if s.value != s.value:  # NaN: InfluxDB 1.x refuses it; the point is left out
                continue
            tags = "".join(f",{escape_key(k)}={escape_key(v)}" for k, v in sorted(s.labels.items()) if v != "")
            lines.append(f"{escape_key(s.name, measurement=True)}{tags} value={float(s.value)!r} {now_ns}")
    return "\n".join(lines) + "\n"


def influx_url_problem(url):
    """Why `url` is not an InfluxDB write URL tunelab takes, or '' (the message shows it redacted)."""
    problem = safeio.http_url_problem(url)
    return (f"--influx-url {safeio.redact_url(url)!r}: {problem}; give an http(s) URL of InfluxDB's write endpoint, "
            "e.g. http://127.0.0.1:8086/write?db=tunelab") if problem else ""


def influx_request_parts(url):
    """(the URL without user and password, headers): a user:password in the URL goes as HTTP basic
    authentication (InfluxDB 1.x takes it, as it takes u= and p= in the query), never as part of the host."""
    import base64
    import urllib.parse
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname if ":" not in (parts.hostname or "") else f"[{parts.hostname}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    bare = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    if parts.username is None:
        return bare, {}
    user = urllib.parse.unquote(parts.username)
    password = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return bare, {"Authorization": f"Basic {token}"}


class InfluxWriter:
    """Writes the registry's samples to an InfluxDB 1.x /write URL every interval_s in a daemon thread;
    `say` is called once when writes start failing (and once when they work again)."""

    def __init__(self, registry, url, say, interval_s=1.0):
        problem = influx_url_problem(url)
        if problem:
            raise LiveMetricsError(problem)
        self.registry, self.say, self.interval_s = registry, say, interval_s
        self.url, self.headers = influx_request_parts(url)
        self.shown = safeio.redact_url(url)
        self.failing = False
        self.written = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="influx-writer", daemon=True)

    def start(self):
        self.thread.start()
        return self

    def write_once(self):
        body = line_protocol(self.registry).encode()
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"Content-Type": "text/plain; charset=utf-8", **self.headers})
        try:
            with urllib.request.urlopen(request, timeout=INFLUX_TIMEOUT_S) as response:  # noqa: S310 -- the user's URL
                response.read(4096)
        except (OSError, urllib.error.URLError, ValueError) as e:
            if not self.failing:
                self.failing = True
                said = str(e).replace(self.url, self.shown)
                self.say(f"InfluxDB at {self.shown} refused or is down ({said}); the run goes on, writes retried")
            return False
        if self.failing:
            self.failing = False
            self.say(f"InfluxDB at {self.shown} takes writes again")
        self.written += 1
        return True

    def loop(self):
        while not self.stopped.wait(self.interval_s):
            self.write_once()

    def stop(self):
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join(timeout=INFLUX_TIMEOUT_S + 1)
