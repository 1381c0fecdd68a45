"""The YARN CPS rig: the Scheduler Load Simulator in the JVM the matrix chose, measured in containers/s.

launch() writes the cell's trace (or inspects the user's), hosts file and configuration folder into the
cell's work folder, and starts tunelab.rigs.yarn_cps.SlsDriver on the classpath of the cell's Hadoop
version. parse() finds the steady window in the driver's per-second series of the RM's own counters and
returns the per-second allocation and release rates inside it as samples (those before it as warm-up),
plus observations: the full series, the window, CPU per thread group, GC, heap, peak RSS, apps.
"""

import os
import socket
from typing import Any, Mapping

from rigs.matrix.contract.rig import (
    MAIN_ROLE,
    CellView,
    Launch,
    LiveMetric,
    MeasurementInvalid,
    Param,
    Parsed,
    PolicyView,
    Rig,
    Sample,
    read_classpath_file,
)
from rigs.matrix.contract.workload import Workload
from rigs.yarn_cps import configs, window
from workloads.yarn_cps import trace
from results import safeio

HADOOP_VERSIONS = {"3.4.2": "classpath_3_4_2", "3.4.3": "classpath_3_4_3", "3.3.5": "classpath_3_3_5"}
# 3.4.2 reads `job.tasks` of SLS traces as a string; every AM fails, SLS hangs with 0 apps (README.md, "Facts").
# 3.4.3 (the bump study, issue 61): synthetic traces only, as 3.4.2 (its SLS traces not tried).
TRACE_FORMATS = {"3.4.2": ("synth",), "3.4.3": ("synth",), "3.3.5": ("synth", "sls", "rumen")}
DEFAULT_FORMAT = {"3.4.2": "synth", "3.4.3": "synth", "3.3.5": "sls"}
LEAN_VERSIONS = ("3.4.2", "3.4.3")  # whose SLS runners the lean simulator drives (built against each)
SLS_TRACE_TYPE = {"synth": "SYNTH", "sls": "SLS", "rumen": "RUMEN"}
RATE_UNIT = "containers/s"
# stock: SLS as shipped; lean: SLS's runners with the rig's NodeManagers (LeanSimulation.java).
SIMULATORS = ("stock", "lean")
# The shortest sub-window of the measured window an iteration may be (policy.iterations > 1): two samples.
MIN_SUB_WINDOW_S = 2.0
SERIES_KEYS = ("t", "allocated", "released", "pending_containers", "running_containers", "apps_submitted",
               "apps_completed", "apps_failed", "heap_used_bytes", "gc_time_ms", "rss_kb", "scheduler_event_queue",
               "rm_event_queue")


def trace_format(params: Mapping[str, str]) -> str:
    fmt = params["trace_format"]
    return DEFAULT_FORMAT.get(params["hadoop"], "synth") if fmt == "auto" else fmt


def records(stdout_text: str) -> list[dict[str, Any]]:
    out = []
    for line in stdout_text.splitlines():
        if line.startswith("{"):
            out.append(safeio.parse_json(line))
    return out


class YarnCpsRig(Rig):
    name = "yarn_cps"
    # The trace's own parameters (nodes, racks, jobs, ...) are declared by workloads/yarn_cps/trace.py's
    # TraceParams, which check() reads; these are the simulator's and the ResourceManager's.
    parameters = {
        "hadoop": Param(choices=tuple(HADOOP_VERSIONS)),
        "simulator": Param(choices=SIMULATORS, doc="SLS as shipped, or its runners with the rig's NodeManagers"),
        "scheduler": Param(choices=tuple(configs.SCHEDULERS)),
        "trace_format": Param(choices=("auto",) + tuple(SLS_TRACE_TYPE)),
        "trace": Param(doc="a trace file to replay instead of the generated one (empty: generate)"),
        "trace_nodes": Param(doc="its nodes file, if any"),
        "nm_heartbeat_ms": Param(int, low=1),
        "am_heartbeat_ms": Param(int, low=1),
        "offswitch_per_heartbeat": Param(int, low=1),
        "simulator_threads": Param(int, low=1),
        "heartbeat_threads": Param(int, low=1),
        "sls_metrics": Param(choices=("on", "off"), doc="SLS's metrics web app"),
    }

    def check(self, params: Mapping[str, str]) -> None:
        """Refuses cells that cannot run, with the reason, before the matrix starts."""
        hadoop = params["hadoop"]
        fmt = trace_format(params)
        if fmt not in TRACE_FORMATS[hadoop]:
            raise ValueError(f"Hadoop {hadoop} cannot read {fmt} traces (it reads {', '.join(TRACE_FORMATS[hadoop])}); "
                             "use hadoop=3.3.5 for SLS and Rumen traces")
        if fmt == "rumen" and not params["trace"]:
            raise ValueError("rumen traces are not generated: set trace=<path to a Rumen job history trace>")
        if params["trace"] and not os.path.isfile(params["trace"]):
            raise ValueError(f"trace file {params['trace']} does not exist")
        if params["trace_nodes"] and not os.path.isfile(params["trace_nodes"]):
            raise ValueError(f"nodes file {params['trace_nodes']} does not exist")
        if params["simulator"] == "lean":
            if hadoop not in LEAN_VERSIONS:
                raise ValueError(f"simulator=lean drives the SLS runners of Hadoop {' and '.join(LEAN_VERSIONS)}; "
                                 f"use one of them (or simulator=stock)")
            if params["sls_metrics"] != "off":
                raise ValueError("simulator=lean runs with sls_metrics=off (SLS's metrics web app is not wired to "
                                 "the lean NodeManagers); the fidelity benchmark uses simulator=stock")
        if not params["trace"]:
            trace.TraceParams.from_strings(params)
        configs.render(params, "/check")

    def can_iterate(self, params: Mapping[str, str]) -> bool:
        """Yes, in time: the measured window is cut into `iterations` consecutive sub-windows of equal length
        (one simulation a launch: a fresh ResourceManager per iteration is not how SLS runs), so the runner's
        steady-state check sees a window whose rate still climbs (the JIT's warm-up: see matrix.toml)."""
        return True

    def check_policy(self, params: Mapping[str, str], policy: PolicyView) -> None:
        if policy.warmup_iterations:
            raise ValueError(f"warmup_iterations = {policy.warmup_iterations}: this rig warms up for warmup_s "
                             "seconds after the first allocation (one simulation a launch); use warmup_iterations "
                             "= 0 and a longer warmup_s")
        if policy.iterations > 1 and policy.measure_s / policy.iterations < MIN_SUB_WINDOW_S:
            raise ValueError(f"iterations = {policy.iterations} cut measure_s = {policy.measure_s:g} s into sub-windows "
                             f"under {MIN_SUB_WINDOW_S:g} s (the RM's counters are sampled once a second); use "
                             f"at most {int(policy.measure_s // MIN_SUB_WINDOW_S)} iterations or a longer measure_s")

    def estimate_seconds(self, params: Mapping[str, str], policy: PolicyView) -> float | None:
        """Rough wall time of one run: RM start-up and node registration, then the trace at the heartbeat cap
        or at 7k containers/s (about what a 2-core host schedules: 7.0k/s measured in the smoke matrix's
        CPU-bound cell), then the last containers."""
        try:
            p = trace.TraceParams.from_strings(params)
        except trace.TraceError:
            return policy.warmup_s + policy.measure_s + 60  # a user trace: its length is unknown here
        cap = p.nodes * int(params["offswitch_per_heartbeat"]) * 1000 / int(params["nm_heartbeat_ms"])
        startup = 5 + p.nodes / 600
        return startup + (p.containers + p.jobs) / min(cap, 7000) + p.container_duration_s + 3

    def launch(self, cell: CellView, workload: Workload, policy: PolicyView, workdir: str, data: Mapping[str, str],
               inputs_dir: str) -> Launch:
        p = cell.params
        self.check(p)
        fmt = trace_format(p)
        local_names = sorted({socket.gethostname(), socket.getfqdn()})
        trace_dir = os.path.join(workdir, "trace")
        if p["trace"]:
            files = trace.use_user_trace(fmt, p["trace"], p["trace_nodes"], trace_dir, local_names)
        else:
            files = trace.write_generated(trace.TraceParams.from_strings(p), fmt, trace_dir, local_names)
        conf_dir = os.path.join(workdir, "conf")
        os.makedirs(conf_dir, exist_ok=True)
        for name, content in configs.render(p, conf_dir).items():
            safeio.write_bytes(os.path.join(conf_dir, name), content)
        expected_total = files.containers + files.expected_apps if files.containers >= 0 else None
        launched = {"format": fmt, "expected_apps": files.expected_apps, "task_containers": files.containers,
                    "expected_total_containers": expected_total, "sha256": files.sha256,
                    "hadoop": p["hadoop"], "simulator": p["simulator"],
                    "nodes": None if p["trace"] else int(p["nodes"])}
        args = ["--trace-type", SLS_TRACE_TYPE[fmt], "--trace", files.trace, "--output",
                os.path.join(workdir, "sls-output"), "--expected-apps", str(files.expected_apps)]
        if files.nodes:
            args += ["--nodes", files.nodes]
        # The same names in Hadoop's static table: no hosts-file scan per container token (see SlsDriver).
        args += ["--static-hosts", files.hosts]
        if expected_total and p["sls_metrics"] == "off":
            # Stop once the demand is gone: the drain after the window (~6 s a run) measures nothing.
            args += ["--stop-after-allocated", str(expected_total)]
        if p["simulator"] != "stock":
            args += ["--simulator", p["simulator"], "--heartbeat-threads", p["heartbeat_threads"]]
        for group, pattern in workload.tables.get("thread_groups", {}).items():
            args += ["--thread-group", f"{group}={pattern}"]
        return Launch.jvm(
            main_class="tunelab.rigs.yarn_cps.SlsDriver",
            # The configuration folder first: Hadoop's Configuration finds yarn-site.xml & co. on the classpath.
            classpath=[conf_dir] + read_classpath_file(data[HADOOP_VERSIONS[p["hadoop"]]]),
            args=args,
            jvm_flags=[
                "--add-opens=java.base/java.lang=ALL-UNNAMED",  # the RM web app on JDK 17+
                # Every simulated host resolves from this file, never through the resolver (FACTS.md: 10 s stalls).
                f"-Djdk.net.hosts.file={files.hosts}",
                "-Dsun.net.inetaddr.ttl=-1",
                "-Dsun.net.inetaddr.negative.ttl=-1",
            ],
            generated_inputs={name: digest for name, digest in files.sha256.items()
                              if not (p["trace"] and name in ("trace.json", "nodes.json"))},
            # The hosts file names this machine too (the RM's own names): it differs from host to host.
            host_specific_inputs=("hosts",),
            state=launched,
        )

    # The driver's once-a-second sample of the RM's counters and its JVM, as a watched run serves them.
    live_metrics = {
        "containers_allocated": LiveMetric("counter", "Containers the ResourceManager allocated (its rate: CPS)"),
        "containers_released": LiveMetric("counter", "Containers released"),
        "running_containers": LiveMetric("gauge", "Containers running"),
        "pending_containers": LiveMetric("gauge", "Containers asked for and not allocated yet"),
        "scheduler_event_queue_events": LiveMetric("gauge", "The scheduler's event queue (growing: the scheduler "
                                                            "is the limit)"),
        "rm_event_queue_events": LiveMetric("gauge", "The RM's central dispatcher queue"),
        "jvm_heap_used_bytes": LiveMetric("gauge", "The JVM's heap in use"),
        "jvm_gc_seconds": LiveMetric("counter", "Time the JVM's collectors spent"),
    }
    LIVE_KEYS = {"allocated": "containers_allocated", "released": "containers_released",
                 "running_containers": "running_containers", "pending_containers": "pending_containers",
                 "scheduler_event_queue": "scheduler_event_queue_events", "rm_event_queue": "rm_event_queue_events",
                 "heap_used_bytes": "jvm_heap_used_bytes"}

    def live(self, role: str, line: str) -> Mapping[str, float]:
        if role != MAIN_ROLE or not line.startswith("{"):
            return {}
        rec = safeio.parse_json(line)
        if not isinstance(rec, dict) or rec.get("event") != "sample":
            return {}
        out = {name: float(rec[key]) for key, name in self.LIVE_KEYS.items() if isinstance(rec.get(key), (int, float))}
        if isinstance(rec.get("gc_time_ms"), (int, float)):
            out["jvm_gc_seconds"] = rec["gc_time_ms"] / 1000
        return out

    def parse(self, outputs: Mapping[str, str], policy: PolicyView, workdir: str, launch: Launch) -> Parsed:
        stdout_text = outputs[MAIN_ROLE]
        recs = records(stdout_text)
        launched = launch.state
        start = next((r for r in recs if r.get("event") == "start"), None)
        if start is None:
            raise ValueError("the driver printed no start record")
        if start["hadoop"] != launched["hadoop"]:
            raise MeasurementInvalid(f"the classpath ran Hadoop {start['hadoop']}, the cell asked for "
                                     f"{launched['hadoop']}")
        errors = [r["error"] for r in recs if r.get("event") == "sampler_error"]
        end = next((r for r in recs if r.get("event") in ("done", "exit")), None)
        samples = window.counter_samples(recs)
        observations: dict[str, Any] = {
            "t0_epoch_ms": start.get("epoch_ms"),
            "trace": launched,
            "end": end,
            "sampler_errors": errors[:5],
            "simulator_started_t": next((r["t"] for r in recs if r.get("event") == "simulator_started"), None),
            "series": {k: [s.get(k) for s in samples] for k in SERIES_KEYS},
        }
        if samples:
            last = samples[-1]
            observations["apps"] = {k: last.get("apps_" + k) for k in ("submitted", "completed", "failed", "killed")}
            observations["peak_rss_kb"] = max(s.get("peak_rss_kb", -1) for s in samples)
        if end is None:
            raise MeasurementInvalid("the simulator did not finish its trace (no done or exit record)")
        try:
            w = window.steady_window(samples, policy.warmup_s, policy.measure_s,
                                     total=launched["expected_total_containers"])
        except window.WindowError as e:
            raise MeasurementInvalid(f"no steady window: {e}") from None
        lo, hi = w.start_index, w.end_index
        first = next(i for i, s in enumerate(samples) if s["t"] >= w.first_allocation_t)
        a, b = samples[lo], samples[hi]
        running = [s["running_containers"] for s in samples[lo:hi + 1]]
        observations["window"] = {
            "start_t": a["t"], "end_t": b["t"], "duration_s": round(w.duration_s, 3),
            "first_allocation_t": w.first_allocation_t, "idle_samples": w.idle_samples,
            "allocation_rate": round(w.allocation_rate, 3), "release_rate": round(w.release_rate, 3),
            "unit": RATE_UNIT,
            # Little's law: mean containers running / release rate = mean container lifetime.
            "container_lifetime_s": round(sum(running) / len(running) / w.release_rate, 3) if w.release_rate else None,
            "gc_time_s": (b["gc_time_ms"] - a["gc_time_ms"]) / 1000,
            "heap_used_bytes_max": max(s["heap_used_bytes"] for s in samples[lo:hi + 1]),
            "cpu_cores_by_thread_group": window.thread_cpu_shares(samples, lo, hi),
        }
        # The RM's event queues once a second: the scheduler's (near 0: heartbeats bound the rate; growing: the
        # scheduler was the limit) and the central dispatcher's (the backlog a heartbeat storm builds).
        for key in ("scheduler_event_queue", "rm_event_queue"):
            queues = [s.get(key) for s in samples[lo:hi + 1]]
            if queues and all(q is not None for q in queues):
                observations["window"][key + "_mean"] = round(sum(queues) / len(queues), 1)
                observations["window"][key + "_max"] = max(queues)
        if launched.get("nodes") and observations.get("peak_rss_kb"):
            # Memory per simulated node, RM and simulator together: the process' peak RSS and the window's
            # largest heap in use, over the nodes simulated.
            observations["memory_per_node"] = {
                "peak_rss_kb": round(observations["peak_rss_kb"] / launched["nodes"], 2),
                "heap_used_kb": round(observations["window"]["heap_used_bytes_max"] / 1024 / launched["nodes"], 2)}
        if end.get("lean"):
            observations["lean"] = end["lean"]

        def rate_samples(lo_i: int, hi_i: int) -> list[Sample]:
            out: list[Sample] = []
            for metric, key in (("container_allocation_rate", "allocated"), ("container_release_rate", "released")):
                out += [{"metric": metric, "value": round(v, 3), "unit": RATE_UNIT, "t": t}
                        for t, v in window.per_interval_rates(samples, key, lo_i, hi_i)]
            return out

        measured = rate_samples(lo, hi)
        if policy.iterations > 1:
            tag_sub_windows(measured, a["t"], b["t"], policy.iterations)
        scheduler_cores = observations["window"]["cpu_cores_by_thread_group"].get("scheduler")
        if scheduler_cores is not None and w.allocation_rate > 0:
            # The scheduler thread's CPU per allocated container over the window: what a scheduler change
            # saves even when the simulator, not the scheduler, caps the rate (one value per run).
            measured.append({"metric": "scheduler_cpu_per_container", "unit": "us/container", "t": b["t"],
                             "value": round(scheduler_cores / w.allocation_rate * 1e6, 3)})
        return Parsed(warmup_samples=rate_samples(first, lo), samples=measured, observations=observations)


def tag_sub_windows(measured: list[Sample], start_t: float, end_t: float, count: int) -> None:
    """Tags each per-second sample of the window (start_t, end_t] with metadata {"iteration": k}: the k-th of
    `count` sub-windows of equal length, by the time its interval ends."""
    span = (end_t - start_t) / count
    for s in measured:
        k = min(count - 1, max(0, int((s["t"] - start_t - 1e-9) // span)))
        s["metadata"] = {"iteration": k}


RIG = YarnCpsRig()
