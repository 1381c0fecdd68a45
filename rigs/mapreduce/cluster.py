"""Cluster mode of the MapReduce rig (issue 62, case study 002's shuffle): the engine as a small cluster on
loopback instead of its local runner, so the shuffle is real: map outputs served by each node's shuffle
server over HTTP, fetched by reducers in their own JVMs.

MR2 runs on MiniMRYarnCluster (rigs/mapreduce/Mr2Cluster.java: a ResourceManager and `nodes` NodeManagers,
each with its ShuffleHandler and its own local folders, in one JVM; the AM and the tasks in JVMs of their
own, its children, so a cell's cgroup and memory limit hold them all). Input and output are on the local file
system: the question is the shuffle servers' page cache; HDFS would add DataNodes, their own reads and their
own use of that cache, and MR1 and MR2 would read it through different clients.

The job: TeraSort with the simple partitioner (the key space cut evenly; the rows' keys are uniform random
bytes), `splits` maps and `reduces` reducers starting when every map is done (slow-start 1.0, so a reducer's
shuffle is fetching, not waiting for maps), each reducer's memory for map outputs the `shuffle_buffer_percent`
of its heap: small enough and its merge manager tells fetchers to WAIT, and they drop their connection and
come back (case study 002's early disconnects).

Per measured job (Mr2Cluster's "cluster_job" line, read from the job's history file): job, map and reduce
times as in local mode, shuffle_time (each reducer's start to its shuffle's end, averaged), the shuffle
servers' page-cache advice (dontneed_calls, by node in the observations, with the known answer maps on the
node x reducers), the bytes the cluster's JVM read from storage (the shuffle servers' reads of map outputs not
in the page cache, and its task JVMs' reads once they exit: Linux adds a reaped child's I/O to its parent's,
so the maps' cold input is part of it) and the reducers' WAITs.
"""

import os
from typing import Any, Mapping

from rigs.matrix.contract import iterations
from rigs.matrix.contract.rig import MeasurementInvalid
from results import safeio

DRIVERS = {"mr1": "tunelab.rigs.mapreduce.Mr1Cluster", "mr2": "tunelab.rigs.mapreduce.Mr2Cluster"}
CLASSPATHS = {"mr1": "classpath_mr1_cluster", "mr2": "classpath_mr2_cluster"}
# A container or slot of 1 GB: MR2's NodeManager offers node_memory_mb in containers of that size (the AM
# takes one); MR1's TaskTracker gets as many map slots, and the reducers' share of the nodes in reduce slots.
SLOT_MB = 1024
# JDK 17 and Hadoop 3.4.2's servers: Guice's web apps define classes by reflection; the fadvise counter reads
# a descriptor's number. The AM gets them too (its web app).
OPENS = ("java.base/java.lang", "java.base/java.io", "java.base/java.util", "java.base/java.lang.reflect",
         "java.base/sun.nio.ch", "java.base/java.net")
UNITS = {"job_duration": "s", "map_time": "s", "reduce_time": "s", "shuffle_time": "s", "shuffle_time_max": "s",
         "shuffle_server_read_bytes": "B", "dontneed_calls": "calls", "merge_waits": "waits",
         "spilled_records": "records"}
# Counters every job of a launch must share with the first: the same input, the same answer.
SAME_WORK_COUNTERS = ("Map input records", "Map output records", "Reduce output records")


def evict_input(paths: list[str]) -> int:
    """Drops the job's input from the page cache before the cluster starts (written back first, then
    POSIX_FADV_DONTNEED), as a cluster node's disks hold it: the tasks' reads then fill the cell's own page
    cache, which a memory limit squeezes, beside the map outputs (generated once a run, the input was cached
    and charged to whoever wrote it). Returns the bytes advised; a planted link is refused (O_NOFOLLOW)."""
    total = 0
    for path in paths:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return total


def jvm_flags(engine: str = "mr2") -> list[str]:
    """The cluster JVM's flags: the opens; MR1's also lets the driver attach Byte Buddy to itself (its
    advice counter, rigs/mapreduce/Mr1FadviseCounter.java)."""
    attach = ["-Djdk.attach.allowAttachSelf=true"] if engine == "mr1" else []
    return attach + [f"--add-opens={m}=ALL-UNNAMED" for m in OPENS]


def job_options(p: Mapping[str, Any]) -> dict[str, str]:
    """The job's settings, in its engine's names, from the cell's typed parameters."""
    heap = f"-Xmx{p['task_heap_mb']}m"
    if p["mapreduce"] == "mr1":
        # MR1's TeraSort samples the input for its partitions (it has no simple partitioner); the keys are
        # uniform, so both engines' reducers get even shares.
        return {
            "mapred.reduce.tasks": str(p["reduces"]),
            "mapred.reduce.slowstart.completed.maps": "1.0",
            "io.sort.mb": str(p["io_sort_mb"]),
            "mapred.job.shuffle.input.buffer.percent": str(p["shuffle_buffer_percent"]),
            "mapred.child.java.opts": heap,
        }
    # Containers of SLOT_MB, as MR1's slots: unset, Hadoop 3 sizes a task's container from its -Xmx / 0.8
    # (MAPREDUCE-5785: 256m -> 384 MB, 8 a node of 3072) and the AM's at 1536 MB, so MR2 ran 3-4 times as many
    # task JVMs at once as MR1 has slots (up to 16 on this 2-CPU host, 2026-12-01), not the same cluster.
    slot = str(SLOT_MB)
    return {
        "mapreduce.map.memory.mb": slot,
        "mapreduce.reduce.memory.mb": slot,
        "yarn.app.mapreduce.am.resource.mb": slot,
        "mapreduce.terasort.simplepartitioner": "true",
        "mapreduce.job.reduces": str(p["reduces"]),
        "mapreduce.job.reduce.slowstart.completedmaps": "1.0",
        "mapreduce.task.io.sort.mb": str(p["io_sort_mb"]),
        "mapreduce.reduce.shuffle.input.buffer.percent": str(p["shuffle_buffer_percent"]),
        "mapreduce.map.java.opts": heap,
        "mapreduce.reduce.java.opts": heap,
        "yarn.app.mapreduce.am.command-opts": " ".join([heap] + jvm_flags()),
    }


def driver_args(p: Mapping[str, Any], warmup: int, measured: int, input_dir: str, out_dir: str) -> list[str]:
    opts = job_options(p)
    if p["mapreduce"] == "mr1":
        reduce_slots = -(-int(p["reduces"]) // int(p["nodes"]))
        shape = ["--slots", str(max(1, int(p["node_memory_mb"]) // SLOT_MB)), str(reduce_slots)]
    else:
        shape = ["--node-memory-mb", str(p["node_memory_mb"])]
    return (["--nodes", str(p["nodes"])] + shape + ["--iterations", str(warmup), str(measured), "--", "terasort"]
            + [f"-D{k}={v}" for k, v in sorted(opts.items())] + [input_dir, out_dir])


def _counter(counters: Mapping[str, Mapping[str, int]], name: str) -> int:
    for group in counters.values():
        if name in group:
            return int(group[name])
    raise MeasurementInvalid(f"the job's counters lack {name!r}")


def job_line(it: iterations.Iteration) -> dict[str, Any]:
    """The iteration's one "cluster_job" line, checked: a job that succeeded, its reducers' times in order."""
    lines = [line for line in it.text.splitlines() if line.startswith('{"event":"cluster_job"')]
    if len(lines) != 1:
        raise MeasurementInvalid(f"iteration {it.index}: {len(lines)} cluster_job lines (1 expected)")
    try:
        job = safeio.parse_json(lines[0])
    except ValueError as e:
        raise MeasurementInvalid(f"iteration {it.index}: malformed cluster_job line: {e}") from None
    if job.get("index") != it.index or job.get("status") != "SUCCEEDED":
        raise MeasurementInvalid(f"iteration {it.index}: job {job.get('job_id')} is {job.get('status')} "
                                 f"(index {job.get('index')})")
    if not job["reducers"] or len(job["reducers"]) != job["reduces"]:
        raise MeasurementInvalid(f"iteration {it.index}: {len(job['reducers'])} reducers in the history, "
                                 f"{job['reduces']} in the job")
    for r in job["reducers"]:
        if not r["start_ms"] <= r["shuffle_end_ms"] <= r["finish_ms"]:
            raise MeasurementInvalid(f"iteration {it.index}: reducer {r['attempt']}: its shuffle does not fall "
                                     "inside its run")
    return job


def fetches_by_node(job: Mapping[str, Any]) -> dict[str, int]:
    """{node: map outputs its shuffle server serves whole}: each reducer fetches each map's part once, so
    maps on the node x reducers (the known answer of the advice given once per whole fetch)."""
    return {node: int(maps) * int(job["reduces"]) for node, maps in job["maps_by_node"].items()}


def job_values(job: Mapping[str, Any]) -> dict[str, float]:
    reducers = job["reducers"]
    shuffles = [(r["shuffle_end_ms"] - r["start_ms"]) / 1000 for r in reducers]
    first, last_map, last = job["first_map_start_ms"], job["last_map_end_ms"], job["last_reduce_end_ms"]
    return {
        "job_duration": (last - first) / 1000, "map_time": (last_map - first) / 1000,
        "reduce_time": (last - last_map) / 1000, "shuffle_time": sum(shuffles) / len(shuffles),
        "shuffle_time_max": max(shuffles), "shuffle_server_read_bytes": float(job["shuffle_server_read_bytes"]),
        "dontneed_calls": float(sum(a.get("dontneed", 0) for a in job["advice"].values())),
        "spilled_records": float(_counter(job["counters"], "Spilled Records")),
        # MR1's reducers drop their connection without a log line: not known there (-1), so no sample.
        **({"merge_waits": float(job["merge_waits"])} if job["merge_waits"] >= 0 else {}),
    }


def parse(stdout_text: str) -> tuple[list, list, dict]:
    """(warm-up samples, measured samples, observations) of a cluster launch's output."""
    found = iterations.split(stdout_text)
    if not found:
        raise MeasurementInvalid("the cluster driver ran no job (no iteration marks in its output)")
    problems = [line for line in stdout_text.splitlines() if line.startswith('{"event":"advice_problems"')]
    advice_problems = safeio.parse_json(problems[-1]) if problems else None
    if advice_problems is None:
        raise MeasurementInvalid("the cluster driver did not end (no advice_problems line)")
    if advice_problems["unreachable"] or advice_problems["failed"]:
        # Counted advice that never reached the kernel would count a page-cache drop that did not happen.
        raise MeasurementInvalid(f"page-cache advice that did not reach the kernel: {advice_problems}")
    warmup: list = []
    measured: list = []
    per_job = []
    first_counters = None
    for it in found:
        job = job_line(it)
        if first_counters is None:
            first_counters = job["counters"]
        for name in SAME_WORK_COUNTERS:
            if _counter(job["counters"], name) != _counter(first_counters, name):
                raise MeasurementInvalid(f"iteration {it.index}: {name} differs from the first job's: not the "
                                         "same work")
        values = job_values(job)
        (warmup if it.warmup else measured).extend(
            {"metric": m, "value": v, "unit": UNITS[m], "t": values["job_duration"],
             "metadata": {"iteration": it.index}} for m, v in values.items())
        per_job.append({"iteration": it.index, "warmup": it.warmup, "job_id": job["job_id"],
                        "maps_by_node": job["maps_by_node"], "advice_by_node": job["advice"],
                        "whole_fetches_by_node": fetches_by_node(job), "reducers": job["reducers"],
                        "counters": job["counters"], "cost": iterations.cost(it)})
    return warmup, measured, {"jobs": per_job}

