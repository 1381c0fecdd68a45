"""The YARN ResourceManager failover rig (case study 003's failover from checkpoints): how long a new RM takes
to recover N applications from its state store, and what each submission's store write costs.

A cell is up to three processes: a real ZooKeeper server (`zookeeper`, only for state_store = zookeeper; its
data in the cell's work folder, on a loopback port), the first RM (`rm_killed`: populates the store through
the RM's own submission path with simulated NodeManagers and AMs, then prints its kill line and is killed by
the runner with SIGKILL: the crash is the rig's, declared as `kill_pattern`), and the second RM (`rm`, the
process under test: the matrix's JDK, GC and heap; recovers from the same store while the simulated nodes
and AMs re-register). Both RMs run tunelab.rigs.yarn_failover.FailoverDriver (its Javadoc says what each
does); the first hands the second what real NodeManagers and AMs keep across a restart (handoff.json).
"""

import hashlib
import math
import os
import socket
import time
from typing import Any, Mapping

from rigs.matrix.contract import knobvalues
from rigs.matrix.contract.rig import (
    CellView,
    Launch,
    LiveMetric,
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
from workloads.yarn_cps import trace
from results import safeio

STORES = ("zookeeper", "leveldb", "filesystem")
KILL_LINE = "tunelab-failover: state written, kill me now"  # FailoverDriver.KILL_LINE
DRIVER = "tunelab.rigs.yarn_failover.FailoverDriver"
DRIVER_FAILED = r"^tunelab-failover: \w+ failed:|^Exception in thread \"main\""  # the driver's failure lines
# The estimate that refuses a cell whose N the heap cannot hold: RM heap per application (2 attempts, 2
# containers) after recovery. Measured at 10,000 applications: 745 MB (ZooKeeper), 765 MB (LevelDB) and
# 1,074 MB (file system) in use after recovery (runs 20261127T163939Z-ea7a, 20261127T164508Z-1a47; no full
# collection before the reading, so garbage counts: an upper bound), i.e. up to 86 KB per application over
# the base; the first RM held 1.35-1.76 GB at the end of populating them (4g heap).
HEAP_BYTES_PER_APP = 90_000
HEAP_BASE_BYTES = 200 * 2**20
ZOO_CFG = """# Written by the YARN failover rig for one cell: a standalone server on loopback, its data here.
tickTime={tick_ms}
dataDir={data_dir}
clientPort={port}
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr,mntr
"""
LOG4J = """log4j.rootLogger=WARN, stderr
log4j.logger.org.apache.zookeeper.server.NIOServerCnxnFactory=INFO
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.ResourceManager=INFO
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
"""
# The rig's parameters that are the RM's own settings (yarn-default.xml / core-default.xml of 3.4.2).
RM_SETTINGS = {
    "zk_timeout_ms": "hadoop.zk.timeout-ms",
    "zk_appid_split_index": "yarn.resourcemanager.zk-appid-node.split-index",
}


def records(stdout_text: str) -> list[dict[str, Any]]:
    return [safeio.parse_json(line) for line in stdout_text.splitlines() if line.startswith("{")]


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100) of `values`: a value that occurred."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


class YarnFailoverRig(Rig):
    name = "yarn_failover"
    roles = ("zookeeper", "rm_killed", "rm")
    parameters = {
        "hadoop": Param(choices=("3.4.2",)),
        "state_store": Param(choices=STORES, doc="where the RM keeps its state for recovery"),
        "apps": Param(int, low=1, high=50_000, doc="applications running when the RM is killed (N)"),
        "attempts": Param(int, low=1, high=10, doc="attempts of each application (M); all but the last failed"),
        "containers_per_app": Param(int, low=0, high=100, doc="containers of each running attempt besides its AM (K)"),
        "nodes": Param(int, low=1, high=20_000, doc="simulated NodeManagers"),
        "node_memory_mb": Param(int, low=1024),
        "node_vcores": Param(int, low=1),
        "container_memory_mb": Param(int, low=128),
        "nm_heartbeat_ms": Param(int, low=10),
        "am_heartbeat_ms": Param(int, low=1),
        "steady_s": Param(int, low=0, high=3600, doc="heartbeats after the last container runs, before the kill"),
        "populate_heap": Param(doc="the first RM's heap (it is not under test): a size such as 2g"),
        "zk_timeout_ms": Param(int, low=1000, doc="hadoop.zk.timeout-ms: the RM's ZooKeeper session timeout"),
        "zk_appid_split_index": Param(int, low=0, high=4, doc="yarn.resourcemanager.zk-appid-node.split-index"),
        "zk_tick_ms": Param(int, low=100, doc="ZooKeeper's tickTime (sessions are 2 to 20 ticks)"),
    }

    def check(self, params: Mapping[str, str]) -> None:
        """Refuses a cell whose applications the heap cannot hold, or whose containers the nodes cannot hold."""
        p = self.typed(params)
        self.check_variant(params)
        need = HEAP_BASE_BYTES + HEAP_BYTES_PER_APP * p["apps"] * (1 + p["containers_per_app"]) // 3
        for what, text in (("heap", params["heap"]), ("populate_heap", p["populate_heap"])):
            if knobvalues.parse_heap(text) < need:
                raise ValueError(f"{what}={text} cannot hold {p['apps']:,} applications: the rig's estimate is "
                                 f"{need / 2**20:,.0f} MiB ({HEAP_BASE_BYTES // 2**20} MiB + "
                                 f"{HEAP_BYTES_PER_APP // 1000} KB per application with 2 containers); give "
                                 f"{what}={math.ceil(need / 2**30)}g or fewer apps")
        per_node = p["node_memory_mb"] // p["container_memory_mb"]
        containers = p["apps"] * (1 + p["containers_per_app"])
        if per_node * p["nodes"] < containers:
            raise ValueError(f"{containers:,} containers ({p['apps']:,} applications x {1 + p['containers_per_app']}) "
                             f"do not fit {p['nodes']:,} nodes of {per_node} containers of "
                             f"{p['container_memory_mb']} MB: give more nodes or node_memory_mb")

    def estimate_seconds(self, params: Mapping[str, str], policy: PolicyView) -> float | None:
        """Two RM starts, the populate (~430 container and attempt cycles a second, plus each store write's
        ~2.5 ms on ZooKeeper and the file system), the steady period and the recovery (~3.4 ms an application,
        ~5.4 ms on ZooKeeper): fitted to the 10,000-application probes (runs 20261127T163939Z-ea7a and
        20261127T164508Z-1a47: 284, 133 and 251 s for ZooKeeper, LevelDB and the file system)."""
        p = self.typed(params)
        cycles = p["apps"] * (p["attempts"] + p["containers_per_app"])
        writes = p["apps"] * (1 + 2 * p["attempts"])  # the application, then each attempt stored and updated
        write_s = {"zookeeper": 0.0025, "filesystem": 0.0023}.get(p["state_store"], 0.0)
        recovery_s = p["apps"] * (0.0054 if p["state_store"] == "zookeeper" else 0.0034)
        return (15 + cycles / 430 + writes * write_s + p["steady_s"] + recovery_s
                + 2 * p["nodes"] * p["nm_heartbeat_ms"] / 1e6)

    def launch(self, cell: CellView, workload: Workload, policy: PolicyView, workdir: str, data: Mapping[str, str],
               inputs_dir: str) -> Launch:
        params = cell.params
        self.check(params)
        p = self.typed(params)
        conf_dir = os.path.join(workdir, "conf")
        os.makedirs(conf_dir, exist_ok=True)
        safeio.write_text(os.path.join(conf_dir, "log4j.properties"), LOG4J)
        classpath = [conf_dir] + read_classpath_file(data["classpath_3_4_2"])
        store_dir = os.path.join(workdir, "store")
        tmp_dir = os.path.join(workdir, "tmp")  # leveldbjni unpacks its library here, not in /tmp
        os.makedirs(tmp_dir, exist_ok=True)
        # The simulated nodes resolve to loopback through the JVMs' own hosts file (as in the YARN CPS rig): an
        # unresolvable name cost each node registration ~100 ms of failed lookups.
        hosts = os.path.join(workdir, "hosts")
        local_names = sorted({socket.gethostname(), socket.getfqdn()})
        node_names = [f"sim-node-{i:05d}" for i in range(p["nodes"])]  # FailoverDriver's names
        content = trace.hosts_file(node_names, local_names)
        safeio.write_bytes(hosts, content)
        processes = []
        zk = ""
        if p["state_store"] == "zookeeper":
            port = free_loopback_port()
            zk = f"127.0.0.1:{port}"
            zk_data = os.path.join(workdir, "zookeeper-data")
            os.makedirs(zk_data, exist_ok=True)
            cfg = os.path.join(workdir, "zoo.cfg")
            safeio.write_text(cfg, ZOO_CFG.format(tick_ms=p["zk_tick_ms"], data_dir=zk_data, port=port))
            processes.append(Process(
                "zookeeper", main_class="org.apache.zookeeper.server.ZooKeeperServerMain", classpath=classpath,
                args=[cfg], jvm_flags=["-Xmx512m", f"-Djava.io.tmpdir={tmp_dir}"], under_test=False, server=True,
                ready_pattern=r"binding to port /127\.0\.0\.1:" + str(port), ready_timeout_s=60,
                fail_pattern=r"Unable to start|Address already in use", ports=[port]))
        handoff = os.path.join(workdir, "handoff.json")
        args = ["--store", p["state_store"], "--store-dir", store_dir, "--zk", zk, "--handoff", handoff,
                "--apps", str(p["apps"]), "--attempts", str(p["attempts"]),
                "--containers", str(p["containers_per_app"]), "--nodes", str(p["nodes"]),
                "--node-mb", str(p["node_memory_mb"]), "--node-vcores", str(p["node_vcores"]),
                "--container-mb", str(p["container_memory_mb"]), "--nm-heartbeat-ms", str(p["nm_heartbeat_ms"]),
                "--am-heartbeat-ms", str(p["am_heartbeat_ms"]), "--steady-s", str(p["steady_s"]),
                "--timeout-s", str(int(policy_timeout(policy)))]
        for name, key in RM_SETTINGS.items():
            args += ["--conf", f"{key}={p[name]}"]
        flags = [f"-Djava.io.tmpdir={tmp_dir}", "--add-opens=java.base/java.lang=ALL-UNNAMED",
                 f"-Djdk.net.hosts.file={hosts}", "-Dsun.net.inetaddr.ttl=-1", "-Dsun.net.inetaddr.negative.ttl=-1"]
        processes.append(Process(
            "rm_killed", main_class=DRIVER, classpath=classpath, args=["--mode", "populate"] + args,
            jvm_flags=flags + [f"-Xmx{p['populate_heap']}"], under_test=False, phase=0,
            kill_pattern="^" + KILL_LINE + "$", fail_pattern=DRIVER_FAILED))
        processes.append(Process(
            "rm", main_class=DRIVER, classpath=classpath, args=["--mode", "recover"] + args, jvm_flags=flags,
            under_test=True, phase=1, fail_pattern=DRIVER_FAILED))
        state = {"store": p["state_store"], "apps": p["apps"], "attempts": p["attempts"],
                 "containers_per_app": p["containers_per_app"], "nodes": p["nodes"], "zookeeper": zk}
        return Launch(processes, generated_inputs={"hosts": hashlib.sha256(content).hexdigest()},
                      host_specific_inputs=("hosts",), state=state)

    def check_variant(self, params: Mapping[str, str]) -> None:
        if params.get("variant", "stock").startswith("patched:zk-") and params["state_store"] != "zookeeper":
            raise ValueError(f"variant={params['variant']} changes the ZooKeeper store only; this cell's "
                             f"state_store is {params['state_store']}")

    def probe(self, role: str, when: str, launch: Launch, workdir: str, output: str) -> dict[str, Any] | None:
        """ZooKeeper's own count of what it holds (its `mntr` command), when ready and after both RMs."""
        if role != "zookeeper":
            return None
        host, port = launch.state["zookeeper"].split(":")
        return zookeeper_stats(host, int(port))

    # A watched run's live values: the recovering RM's phase while it recovers (its driver prints a phase record
    # on each change and once a second, FailoverRecover.PHASES), then its account once it is active.
    live_metrics = {
        "recovery_phase": LiveMetric("gauge", "The recovering RM's phase: 0 starting, 1 loading the state store, "
                                              "2 recovering applications, 3 becoming active, 4 nodes re-registering, "
                                              "5 AMs re-registering, 6 waiting for containers and applications, 7 recovered"),
        "recovery_elapsed_seconds": LiveMetric("gauge", "Seconds since the recovering RM's start call"),
        "recovery_seconds": LiveMetric("gauge", "The RM's recovery time, from its JVM's start to active"),
        "store_load_seconds": LiveMetric("gauge", "Of which: reading its state store"),
        "app_recovery_seconds": LiveMetric("gauge", "Of which: recovering the applications"),
    }

    def live(self, role: str, line: str) -> Mapping[str, float]:
        if role != "rm" or not line.startswith('{"event":"'):
            return {}
        if line.startswith('{"event":"phase"'):
            rec = safeio.parse_json(line)
            return {name: float(rec[key]) for name, key in (("recovery_phase", "phase"),
                                                             ("recovery_elapsed_seconds", "since_rm_start_s"))
                    if isinstance(rec.get(key), (int, float))}
        if not line.startswith('{"event":"recovered"'):
            return {}
        rec = safeio.parse_json(line)
        return {name: float(rec[key]) for name, key in (("recovery_seconds", "recovery_s"),
                                                         ("store_load_seconds", "store_load_s"),
                                                         ("app_recovery_seconds", "app_recovery_s"))
                if isinstance(rec.get(key), (int, float))}

    def parse(self, outputs: Mapping[str, str], policy: PolicyView, workdir: str, launch: Launch) -> Parsed:
        state = launch.state
        populated = next((r for r in records(outputs["rm_killed"]) if r.get("event") == "populated"), None)
        recovered = next((r for r in records(outputs["rm"]) if r.get("event") == "recovered"), None)
        if populated is None:
            raise MeasurementInvalid("the first RM printed no populated record before its kill")
        if recovered is None:
            raise MeasurementInvalid("the second RM printed no recovered record")
        expected_attempts = state["apps"] * state["attempts"]
        if (recovered["apps_loaded"], recovered["attempts_loaded"]) != (state["apps"], expected_attempts):
            raise MeasurementInvalid(f"the store gave back {recovered['apps_loaded']} applications and "
                                     f"{recovered['attempts_loaded']} attempts; the first RM wrote {state['apps']} "
                                     f"and {expected_attempts}")
        writes_ms = [ns / 1e6 for ns in populated["store_write_ns"]]
        if len(writes_ms) != state["apps"]:
            raise MeasurementInvalid(f"{len(writes_ms)} store writes of applications timed; {state['apps']} "
                                     "applications were submitted")

        def sample(metric: str, value: float, unit: str) -> Sample:
            return {"metric": metric, "value": float(value), "unit": unit, "t": 0.0}

        samples = [
            sample("recovery_time", recovered["recovery_s"], "s"),
            sample("store_load_time", recovered["store_load_s"], "s"),
            sample("app_recovery_time", recovered["app_recovery_s"], "s"),
            sample("node_reregistration_time", recovered["reregistration_s"], "s"),
            sample("store_read_bytes", recovered["store_read_bytes"], "bytes"),
            sample("store_write_latency_p50", percentile(writes_ms, 50), "ms"),
            sample("store_write_latency_p99", percentile(writes_ms, 99), "ms"),
        ]
        observations = {
            "recovered": {k: v for k, v in recovered.items() if k != "event"},
            "populated": {k: v for k, v in populated.items() if k not in ("event", "store_write_ns", "submit_call_us")},
            "store_writes": len(writes_ms),
            "store_write_ms_max": round(max(writes_ms), 3),
            "submit_call_us_p50": percentile(populated["submit_call_us"], 50),
        }
        return Parsed([], samples, observations)


ZOOKEEPER_STATS = ("zk_version", "zk_znode_count", "zk_approximate_data_size", "zk_packets_received",
                   "zk_packets_sent", "zk_num_alive_connections", "zk_avg_latency", "zk_max_latency")


def zookeeper_stats(host: str, port: int, timeout_s: float = 30.0) -> dict[str, Any]:
    """The server's `mntr` answer (tab-separated name and value per line), the keys of ZOOKEEPER_STATS. The
    server logs its port before it serves (the rig's ready line): an empty answer, a refused connection or one
    that stays silent for 2 s is asked again, until `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    answer = ""
    while True:
        try:
            with socket.create_connection((host, port), timeout=2.0) as conn:
                conn.sendall(b"mntr")
                chunks = []
                while chunk := conn.recv(65536):
                    chunks.append(chunk)
            answer = b"".join(chunks).decode(errors="replace")
        except OSError as e:
            answer = f"({e})"
        stats: dict[str, Any] = {}
        for line in answer.splitlines():
            name, _, value = line.partition("\t")
            if name in ZOOKEEPER_STATS:
                stats[name] = int(value) if value.isdigit() else value
        if stats:
            return stats
        if time.monotonic() > deadline:
            return {"problems": [f"ZooKeeper answered mntr with nothing this rig reads within {timeout_s:g} s: "
                                 f"{answer.strip()[:200]!r}"]}
        time.sleep(0.2)


def policy_timeout(policy: PolicyView) -> float:
    """The driver's own wait limit: under the runner's timeout, so a stuck recovery is reported by the driver
    with what it was waiting for."""
    return max(30.0, float(policy.timeout_s) * 0.8)


RIG = YarnFailoverRig()
