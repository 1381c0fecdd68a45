"""The NameNode throughput rig: NNThroughputBenchmark in-process, or over RPC against a real NameNode.

In-process (`mode = inprocess`): the benchmark calls the NameNode's methods directly in the JVM the matrix
chose (rigs/namenode/NnBenchDriver.java formats a fresh name directory, optionally takes the disk out of
write operations, then runs the benchmark).

Over RPC (`mode = rpc`): role `namenode` is a NameNode JVM on 127.0.0.1 (NnServer.java: a fresh name
directory, RPC and web UI on free loopback ports), the process under test: the matrix's JVM knobs apply to
it. Roles `client-1` .. `client-N` are NNThroughputBenchmark JVMs calling it over RPC (`-fs hdfs://...`), each
in its own base directory. Axes: handlers, readers, queue size per handler and the call queue: `default`
(Hadoop's LinkedBlockingQueue), `fair` (FairCallQueue with DecayRpcScheduler) or `multi` (MultiQueue.java:
one queue per handler). The NameNode logs at INFO like a production one.

parse() reads the benchmark's own report: for every operation a "--- <op> stats ---" block with the number
of operations, elapsed time, ops/s and average time per op. One sample per operation and run (metric
`<op>_rate` in ops/s; over RPC the clients' ops/s summed); elapsed and average times are kept as observations.

Evidence over RPC: the call queue class from the NameNode's start-up log and its MBean in /jmx (a cell whose
queue is not the one asked for is invalid), and the NameNode's own metrics written every second by Hadoop's
FileSink: RpcQueueTime and RpcProcessingTime averaged over the calls of the measured window, the call queue
length, the handlers' wait for the namesystem lock (RpcLockWaitTime) and the lock's hold times per
operation (dfs.namenode.lock.detailed-metrics.enabled).
"""

import os
from typing import Any, Mapping
from xml.sax.saxutils import escape

from rigs.matrix.contract import iterations
from rigs.matrix.contract.rig import (
    MAIN_ROLE,
    CellView,
    Launch,
    MeasurementInvalid,
    Param,
    Parsed,
    PolicyView,
    Process,
    Rig,
    Sample,
    free_loopback_port,
    read_classpath_file,
)
from rigs.matrix.contract.workload import Workload
from rigs.namenode.hadoop_output import call_queue_from_log, jmx, parse_file_sink, parse_report, wait_for_calls, window_metrics
from results import safeio

OPS = ("create", "mkdirs", "open", "delete", "append", "fileStatus", "rename", "blockReport", "replication")
# The benchmark skips replication against a NameNode in another process (it needs the NameNode's internals).
RPC_OPS = tuple(op for op in OPS if op != "replication")
# Block allocation, which NNThroughputBenchmark 3.4.2 does not time: AddBlockBench.java, in-process only.
ADD_BLOCK = "addBlock"
CALL_QUEUES = {"default": "java.util.concurrent.LinkedBlockingQueue", "fair": "org.apache.hadoop.ipc.FairCallQueue",
               "multi": "tunelab.rigs.namenode.MultiQueue"}
QUEUE_MBEANS = {"fair": "FairCallQueue", "multi": "MultiQueue"}
NAMENODE_ROLE = "namenode"
LOG4J = """# Written by the namenode rig: INFO to stdout (the benchmark's report lines for parse(), and the
# NameNode's own log, as a production one logs); the audit log off as Hadoop ships it
# (hdfs.audit.logger=INFO,NullAppender).
log4j.rootLogger=INFO,console
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.out
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
"""
def metric_name(op: str) -> str:
    """The metric of one operation's throughput; its unit (ops/s) is in the sample's unit field."""
    return f"{op}_rate"


class NameNodeRig(Rig):
    name = "namenode"

    roles = (NAMENODE_ROLE, MAIN_ROLE) + tuple(f"client-{i}" for i in range(1, 9))
    parameters = {
        "mode": Param(choices=("inprocess", "rpc"), doc="the benchmark in the NameNode's JVM, or clients over RPC"),
        "op": Param(choices=("all",) + OPS + (ADD_BLOCK,)),
        "threads": Param(int, low=1),
        "files": Param(int, low=1),
        "files_per_dir": Param(int, low=1),
        "block_size": Param(int, low=1),
        "fsync": Param(choices=("on", "off"), doc="the edit log's fsync"),
        "name_dir": Param(choices=("disk", "tmpfs"), doc="where the name and edits directories are"),
        "clients": Param(int, low=1, high=8, doc="client JVMs over RPC"),
        "handlers": Param(int, low=1),
        "readers": Param(int, low=1),
        "queue_per_handler": Param(int, low=1),
        "call_queue": Param(choices=tuple(CALL_QUEUES)),
    }

    def check(self, params: Mapping[str, str]) -> None:
        ops = OPS + (ADD_BLOCK,) if params["mode"] == "inprocess" else RPC_OPS
        if params["op"] != "all" and params["op"] not in ops:
            raise ValueError(f"op={params['op']}: one of all, {', '.join(ops)} (mode={params['mode']})")
        if params["mode"] == "inprocess" and (params["clients"] != "1" or params["call_queue"] != "default"):
            raise ValueError(f"clients={params['clients']} call_queue={params['call_queue']}: the in-process mode "
                             "has no RPC clients or call queue (mode=rpc has)")
        if params["name_dir"] == "tmpfs" and params["fsync"] == "on":
            raise ValueError("name_dir=tmpfs with fsync=on: an fsync on tmpfs costs nothing, so the cell would not "
                             "measure it (fsync studies keep name_dir=disk)")
        if params["mode"] == "rpc" and int(params["clients"]) > 1 and params["op"] in ("all", "blockReport"):
            # Measured: side by side, one client's blockReport pass puts the NameNode in safe mode under the
            # other's writes, and op=all runs different operations at once, so their ops/s do not add up.
            raise ValueError(f"op={params['op']} with clients={params['clients']}: several clients need one "
                             "operation that keeps to its own directory (create, mkdirs, open, delete, append, "
                             "fileStatus, rename)")

    def estimate_seconds(self, params: Mapping[str, str], policy: PolicyView) -> float | None:
        """JVM start and format ~2 s; measured here: op=all over 2,000 files 8.7 s, create of 20,000 3 s in a
        cold JVM, ~0.6 s in a warm one (+ its two full collections for the cost line, ~0.1 s). Over RPC the
        NameNode starts in ~4 s and every call crosses loopback (about 3x slower here)."""
        files = int(params["files"])
        seconds = files / 300 if params["op"] == "all" else files / 7000
        if params["mode"] == "rpc":
            return 6 + 3 * seconds * int(params["clients"])
        later = max(0, policy.warmup_iterations + policy.iterations - 1)
        # AddBlockBench starts a NameNode and registers its datanodes again each iteration.
        restart = 0.5 if params["op"] == ADD_BLOCK else 0.0
        return 3 + seconds + later * (seconds / 4 + 0.1 + restart)

    def can_iterate(self, params: Mapping[str, str]) -> bool:
        """In-process, NNThroughputBenchmark (NnBenchDriver) and AddBlockBench run again in their JVM on a
        fresh namespace; over RPC the clients run once against a NameNode whose namespace they fill."""
        return params["mode"] == "inprocess"

    def launch(self, cell: CellView, workload: Workload, policy: PolicyView, workdir: str, data: Mapping[str, str],
               inputs_dir: str) -> Launch:
        if cell.params["mode"] == "rpc":
            return self.launch_rpc(cell.params, workdir, data)
        p = cell.params
        conf = os.path.join(workdir, "conf")
        os.makedirs(conf, exist_ok=True)
        safeio.write_text(os.path.join(conf, "log4j.properties"), LOG4J)
        # The in-process NameNode's own metrics too (lock hold per operation), as over RPC.
        write_site(os.path.join(conf, "hdfs-site.xml"), {"dfs.namenode.lock.detailed-metrics.enabled": "true"})
        safeio.write_text(os.path.join(conf, "hadoop-metrics2.properties"), metrics2_properties(os.path.join(workdir, METRICS_FILE)))
        args = ["--name-dir", os.path.join(workdir, NAME_DIR)]
        if p["fsync"] == "off":
            args.append("--skip-fsync")
        memory_dirs = (NAME_DIR,) if p["name_dir"] == "tmpfs" else ()
        if policy.iterations > 1 or policy.warmup_iterations > 0:
            args += ["--iterations", str(policy.warmup_iterations), str(policy.iterations)]
        classpath = [conf] + read_classpath_file(data["classpath"])
        if p["op"] == ADD_BLOCK:
            return Launch.jvm(main_class="tunelab.rigs.namenode.AddBlockBench", classpath=classpath,
                              args=args + ["-threads", p["threads"], "-files", p["files"], "-datanodes", "3"],
                              memory_dirs=memory_dirs)
        args += ["--", "-fs", "file:///", "-op", p["op"], "-threads", p["threads"], "-files", p["files"],
                 "-filesPerDir", p["files_per_dir"], "-blockSize", p["block_size"]]
        return Launch.jvm(main_class="tunelab.rigs.namenode.NnBenchDriver", classpath=classpath, args=args,
                          memory_dirs=memory_dirs)

    def launch_rpc(self, p: Mapping[str, str], workdir: str, data: Mapping[str, str]) -> Launch:
        rpc_port, http_port = free_loopback_port(), free_loopback_port()
        jars = read_classpath_file(data["classpath"])
        server_conf = os.path.join(workdir, "namenode-conf")
        os.makedirs(server_conf, exist_ok=True)
        safeio.write_text(os.path.join(server_conf, "log4j.properties"), LOG4J)
        write_site(os.path.join(server_conf, "core-site.xml"), {
            "fs.defaultFS": f"hdfs://127.0.0.1:{rpc_port}", "hadoop.tmp.dir": os.path.join(workdir, "namenode-tmp")})
        write_site(os.path.join(server_conf, "hdfs-site.xml"), namenode_site(p, rpc_port, http_port))
        safeio.write_text(os.path.join(server_conf, "hadoop-metrics2.properties"), metrics2_properties(os.path.join(workdir, METRICS_FILE)))
        server_args = ["--name-dir", os.path.join(workdir, NAME_DIR)]
        if p["fsync"] == "off":
            server_args.append("--skip-fsync")
        processes = [Process(NAMENODE_ROLE, main_class="tunelab.rigs.namenode.NnServer", classpath=[server_conf] + jars,
                             args=server_args, server=True, ready_pattern=r'"event":"serving"',
                             ports=[rpc_port, http_port])]
        for i in range(1, int(p["clients"]) + 1):
            role = f"client-{i}"
            conf = os.path.join(workdir, f"{role}-conf")
            os.makedirs(conf, exist_ok=True)
            safeio.write_text(os.path.join(conf, "log4j.properties"), LOG4J)
            # The benchmark writes its datanodes' include/exclude files under hadoop.tmp.dir.
            write_site(os.path.join(conf, "core-site.xml"), {"hadoop.tmp.dir": os.path.join(workdir, f"{role}-tmp")})
            processes.append(Process(
                role, main_class="org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark",
                classpath=[conf] + jars, under_test=False, jvm_flags=["-Xmx512m"],
                args=["-fs", f"hdfs://127.0.0.1:{rpc_port}", "-op", p["op"], "-threads", p["threads"],
                      "-files", p["files"], "-filesPerDir", p["files_per_dir"], "-blockSize", p["block_size"],
                      "-baseDirName", f"/bench-{role}"],
                # A failed benchmark thread leaves the main thread spinning forever: stop the cell at once.
                fail_pattern=r"StatsDaemon \d+ failed"))
        return Launch(processes, state={"rpc_port": rpc_port, "http_port": http_port, "call_queue": p["call_queue"]},
                      memory_dirs=(NAME_DIR,) if p["name_dir"] == "tmpfs" else ())

    def probe(self, role: str, when: str, launch: Launch, workdir: str, output: str) -> dict[str, Any] | None:
        """The NameNode's call queue, from its start-up log and its /jmx (after it is ready, and again after
        the clients are done, with its RPC metrics then)."""
        if role != NAMENODE_ROLE:
            return None
        launched = launch.state
        port, kind = launched["rpc_port"], launched["call_queue"]
        found: dict[str, Any] = {"problems": []}
        if when == "ready":
            logged = call_queue_from_log(output, port)
            found["call_queue_logged"] = logged
            if logged is None:
                found["problems"].append("the NameNode's log does not say which call queue it uses")
            elif logged["queue"] != CALL_QUEUES[kind]:
                found["problems"].append(f"call_queue={kind} asked for {CALL_QUEUES[kind]}, the NameNode logged "
                                         f"{logged['queue']}")
        beans = jmx(launched["http_port"], f"Hadoop:service=ipc.{port},name=*")
        found["ipc_mbeans"] = sorted(b["name"] for b in beans)
        wanted = QUEUE_MBEANS.get(kind)
        if wanted and not any(b["name"].endswith("name=" + wanted) for b in beans):
            found["problems"].append(f"call_queue={kind}: no {wanted} MBean for port {port} in the NameNode's /jmx")
        if when == "clients_done":
            rpc = jmx(launched["http_port"], f"Hadoop:service=NameNode,name=RpcActivityForPort{port}")
            found["rpc_activity"] = {k: v for k, v in (rpc[0] if rpc else {}).items()
                                     if k.startswith(("RpcQueueTime", "RpcProcessingTime", "CallQueueLength",
                                                      "NumOpenConnections", "RpcSlowCalls"))}
            # The FileSink writes once a second: wait (a little) until it holds every call the NameNode served.
            served = found["rpc_activity"].get("RpcQueueTimeNumOps", 0)
            found["metrics_file_complete"] = wait_for_calls(os.path.join(workdir, METRICS_FILE), served)
        return found

    # A watched run's live values: the iterating driver's cost lines (issue 63).
    live_metrics = iterations.LIVE_METRICS

    def live(self, role: str, line: str) -> Mapping[str, float]:
        return iterations.live_values(line) if role == MAIN_ROLE else {}

    def parse(self, outputs: Mapping[str, str], policy: PolicyView, workdir: str, launch: Launch) -> Parsed:
        clients = sorted(role for role in outputs if role.startswith("client-"))
        if not clients:
            return self.parse_inprocess(outputs[MAIN_ROLE], workdir)
        reports: dict[str, dict[str, Any]] = {}
        for role in clients:
            report = parse_report(outputs[role])
            report.pop("clean", None)
            if not report:
                raise MeasurementInvalid(f"{role} printed no stats block")
            reports[role] = report
        ops = [op for op in RPC_OPS if all(op in r for r in reports.values())]
        if not ops:
            raise MeasurementInvalid("the clients reported no operation in common")
        # The clients run side by side: the NameNode's throughput is the sum of theirs.
        samples: list[Sample] = [{"metric": metric_name(op), "value": sum(r[op]["ops_per_s"] for r in reports.values()),
                    "unit": "ops/s", "t": 0.0} for op in ops]
        observations: dict[str, Any] = {"reports": reports}
        metrics_path = os.path.join(workdir, METRICS_FILE)
        if os.path.exists(metrics_path):
            with open(metrics_path) as f:
                observations["namenode_metrics"] = window_metrics(parse_file_sink(f.read()))
        return Parsed([], samples, observations)

    def parse_inprocess(self, stdout_text: str, workdir: str) -> Parsed:
        """One report, or one per iteration (NnBenchDriver --iterations): each sample then carries its
        iteration, warm-up iterations' as warm-up samples, with the iteration's cost per create."""
        found_iterations = iterations.split(stdout_text)
        if not found_iterations:
            samples, report = report_samples(stdout_text, None)
            observations: dict[str, Any] = {"report": report}
            warmup: list[Sample] = []
        else:
            warmup, samples, reports = [], [], []
            for it in found_iterations:
                found, report = report_samples(it.text, it.index)
                cost = iterations.cost(it)
                found += cost_samples(report, cost, it.index)
                (warmup if it.warmup else samples).extend(found)
                reports.append({"iteration": it.index, "warmup": it.warmup, "report": report, "cost": cost})
            observations = {"iterations": reports}
        metrics_path = os.path.join(workdir, METRICS_FILE) if workdir else None
        if metrics_path and os.path.exists(metrics_path):
            with open(metrics_path) as f:
                observations["namenode_metrics"] = window_metrics(parse_file_sink(f.read()))
        return Parsed(warmup, samples, observations)


METRICS_FILE = "namenode-metrics.out"
NAME_DIR = "name"
# The operations whose cost per operation is a metric (declared in workloads/namenode/workload.toml); any
# other's cost stays in the observations.
COMPANION_OPS = ("create",)


def report_samples(text: str, iteration: int | None) -> tuple[list[Sample], dict[str, Any]]:
    """(samples, report): the ops/s of every operation in one benchmark report (its own clean-up pass left
    out), tagged with the iteration when there is one; MeasurementInvalid when it has no stats block."""
    report = parse_report(text)
    report.pop("clean", None)  # the benchmark's own clean-up pass, not an operation under test
    if not report:
        where = "" if iteration is None else f" in iteration {iteration}"
        raise MeasurementInvalid(f"the benchmark printed no stats block{where}")
    samples: list[Sample] = []
    for op, v in report.items():
        if op in OPS + (ADD_BLOCK,):
            sample: Sample = {"metric": metric_name(op), "value": v["ops_per_s"], "unit": "ops/s", "t": 0.0}
            if iteration is not None:
                sample["metadata"] = {"iteration": iteration}
            samples.append(sample)
    return samples, report


def cost_samples(report: Mapping[str, Any], cost: dict[str, int], iteration: int) -> list[Sample]:
    """Heap bytes and CPU time (of every thread but the benchmark's driving one and the JIT compiler's) per
    operation of an iteration that ran one operation in COMPANION_OPS: deterministic companions of its rate.
    The CPU one is left out where the compiler threads' share is unknown (not Linux)."""
    if len(report) != 1:
        return []
    op, stats = next(iter(report.items()))
    if op not in COMPANION_OPS or not stats.get("operations"):
        return []
    ops = stats["operations"]
    meta = {"iteration": iteration}
    samples: list[Sample] = [{"metric": f"{op}_alloc_per_op", "value": cost["allocated_bytes"] / ops, "unit": "B/op",
                              "t": 0.0, "metadata": dict(meta)}]
    cpu_ns = iterations.cpu_without_jit_ns(cost)
    if cpu_ns is not None:
        samples.append({"metric": f"{op}_cpu_per_op", "value": cpu_ns / 1000 / ops, "unit": "us/op", "t": 0.0,
                        "metadata": dict(meta)})
    return samples


def write_site(path: str, properties: Mapping[str, object]) -> None:
    """A Hadoop *-site.xml with `properties` (name -> value)."""
    lines = ['<?xml version="1.0"?>\n<!-- Written by the namenode rig for one cell. -->\n<configuration>\n']
    for name, value in properties.items():
        lines.append(f"  <property><name>{escape(name)}</name><value>{escape(str(value))}</value></property>\n")
    safeio.write_text(path, "".join(lines) + "</configuration>\n")


def namenode_site(p: Mapping[str, str], rpc_port: int, http_port: int) -> dict[str, str]:
    """The NameNode's hdfs-site.xml for an RPC cell."""
    site = {
        "dfs.namenode.rpc-address": f"127.0.0.1:{rpc_port}",
        "dfs.namenode.http-address": f"127.0.0.1:{http_port}",
        "dfs.namenode.handler.count": p["handlers"],
        "ipc.server.read.threadpool.size": p["readers"],
        "ipc.server.handler.queue.size": p["queue_per_handler"],
        # The benchmark's blocks are 16 bytes (see the workload), below the default minimum.
        "dfs.namenode.fs-limits.min-block-size": "0",
        "dfs.namenode.lock.detailed-metrics.enabled": "true",
        # A fresh namespace has no blocks: leave safe mode at once.
        "dfs.namenode.safemode.threshold-pct": "0", "dfs.namenode.safemode.min.datanodes": "0",
        "dfs.namenode.safemode.extension": "0",
    }
    ns = f"ipc.{rpc_port}"
    if p["call_queue"] == "fair":
        site[f"{ns}.callqueue.impl"] = CALL_QUEUES["fair"]
        site[f"{ns}.scheduler.impl"] = "org.apache.hadoop.ipc.DecayRpcScheduler"
    elif p["call_queue"] == "multi":
        site[f"{ns}.callqueue.impl"] = CALL_QUEUES["multi"]
        site[f"{ns}.multiqueue.queues"] = p["handlers"]
    return site


def metrics2_properties(path: str) -> str:
    """Hadoop's FileSink writes every metrics record of the NameNode once a second to `path`."""
    return ("# Written by the namenode rig: the NameNode's own metrics, once a second, for the window averages.\n"
            "*.period=1\n"
            "namenode.sink.file.class=org.apache.hadoop.metrics2.sink.FileSink\n"
            f"namenode.sink.file.filename={path}\n")


RIG = NameNodeRig()
