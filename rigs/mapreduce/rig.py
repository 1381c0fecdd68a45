"""The MR1 vs MR2 rig: the same WordCount or TeraSort, in local mode, on hadoop-core 1.2.1 (MR1) or 3.4.2
(MR2), from the engines' own examples jars.

launch() generates the cell's input once per run (workloads/mapreduce/textgen.py for WordCount,
terarecords.py for TeraSort: one input read by both engines; cached under the run's inputs/ folder by its
parameters, with the expected answer's sha256), writes a log4j.properties that gives
both engines the same log layout, and starts the examples jar's ExampleDriver with the study's fair-
comparison settings: reduce slow-start 0.99, one reducer, the local runner (one map slot, one reduce).
parse() reads the job's log (rigs/mapreduce/joblog.py): one sample per run of the job, map and reduce
phase times, Spilled Records and the map spill count, all job counters as observations; and checks the
job's output against the expected answer: a mismatch makes the cell invalid.

With iterations (policy warmup_iterations / iterations), the launch runs MrJobLoop.java instead of the
examples' ExampleDriver: the same job again and again in one JVM, each into a fresh output folder, so the
measured jobs time the engine and not JVM start-up and the JIT's warm-up. Every iteration gives its samples
(tagged with it) and its cost: heap allocated and CPU time of the whole JVM but its JIT compiler threads
per map input record (alloc_per_record, cpu_per_record). Every iteration's counters must agree with the first's (the same work);
the last iteration's output is checked against the expected answer.
"""

import dataclasses
import hashlib
import json
import os
import shutil
from typing import Any, Mapping

from rigs.mapreduce import cluster, joblog
from rigs.matrix.contract import iterations
from rigs.matrix.contract.rig import (
    MAIN_ROLE,
    CellView,
    Launch,
    MeasurementInvalid,
    Param,
    Parsed,
    PolicyView,
    Rig,
    Sample,
    read_classpath_file,
)
from rigs.matrix.contract.workload import Workload
from workloads.mapreduce import terarecords, textgen
from results import safeio

ENGINES = ("mr1", "mr2")
JOBS = ("wordcount", "terasort")
CLASSPATHS = {"mr1": "classpath_mr1", "mr2": "classpath_mr2"}
# The same setting under each engine's name (MR2 renamed them; MAPREDUCE-64 removed io.sort.record.percent).
SORT_MB = {"mr1": "io.sort.mb", "mr2": "mapreduce.task.io.sort.mb"}
SLOWSTART = {"mr1": "mapred.reduce.slowstart.completed.maps", "mr2": "mapreduce.job.reduce.slowstart.completedmaps"}
REDUCES = {"mr1": "mapred.reduce.tasks", "mr2": "mapreduce.job.reduces"}
LOCAL_DIR = {"mr1": "mapred.local.dir", "mr2": "mapreduce.cluster.local.dir"}
LOG4J = """# Written by the mapreduce rig: the same layout for both engines, on stdout, for rigs/mapreduce/joblog.py.
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.out
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
"""
UNITS = {"job_duration": "s", "map_time": "s", "reduce_time": "s", "spilled_records": "records", "map_spills": "spills",
         "cpu_time": "s", "alloc_per_record": "B/record", "cpu_per_record": "us/record"}
# Counters every iteration of a launch must share with the first: the same input, the same answer.
SAME_WORK_COUNTERS = ("Map input records", "Map output records", "Reduce output records")
# perf stat on the JVM: software events work in this VM; the hardware ones need a PMU, which this guest
# lacks (perf prints "<not supported>"): they are recorded as skipped with that reason, never invented.
PERF_EVENTS = ("task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles", "instructions",
               "cache-references", "cache-misses")


def parse_perf_csv(text: str) -> dict[str, dict[str, Any]]:
    """{event: {"value", "unit"}} or {event: {"skipped": reason}} from `perf stat -x,` output."""
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3:
            continue
        value, unit, event = fields[0], fields[1], fields[2]
        if value.startswith("<"):
            out[event] = {"skipped": f"perf reported {value} on this host (no hardware counters: no PMU)"}
        else:
            try:
                out[event] = {"value": float(value), "unit": unit or "count"}
            except ValueError:
                continue
    return out


def text_params(params: Mapping[str, str]) -> textgen.TextParams:
    try:
        return textgen.TextParams(words=int(params["words"]), vocabulary=int(params["vocabulary"]),
                                  zipf_s=float(params["zipf_s"]), seed=int(params["seed"]),
                                  splits=int(params["splits"]))
    except ValueError as e:
        raise ValueError(f"input parameters: {e}") from None


def input_spec(params: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """(job, the parameters the input depends on) of a cell."""
    if params["job"] == "terasort":
        return "terasort", {"rows": int(params["rows"]), "seed": int(params["seed"]), "splits": int(params["splits"])}
    return "wordcount", dataclasses.asdict(text_params(params))


def ensure_input(params: Mapping[str, str], cache_root: str) -> tuple[str, dict[str, str], str]:
    """(folder, {file: sha256}, expected output sha256): generated once per parameters, atomically."""
    job, spec = input_spec(params)
    key = hashlib.sha256(json.dumps([job, spec], sort_keys=True).encode()).hexdigest()[:16]
    folder = os.path.join(cache_root, f"{job}-{key}")
    manifest = os.path.join(folder, "expected.json")
    if not os.path.exists(manifest):
        tmp = safeio.new_folder(cache_root, ".tmp-")
        if job == "terasort":
            digests, expected = terarecords.generate(spec["rows"], spec["seed"], os.path.join(tmp, "input"),
                                                     spec["splits"])
        else:
            digests, counts = textgen.generate(textgen.TextParams(**spec), os.path.join(tmp, "input"))
            expected = textgen.wordcount_digest(counts)
        safeio.write_json(os.path.join(tmp, "expected.json"),
                          {"job": job, "params": spec, "inputs": digests, "output_sha256": expected})
        shutil.rmtree(folder, ignore_errors=True)
        safeio.move_into_place(tmp, folder)
    expected = safeio.read_json(manifest)
    return os.path.join(folder, "input"), expected["inputs"], expected["output_sha256"]


def first_out_of_order(out_dir: str, key_bytes: int = 10) -> str | None:
    """Where TeraSort's output (the part files in name order, one record per line) first has a key below the
    one before it: "part-00000 line 17", or None when it is in order."""
    previous = None
    for name in sorted(os.listdir(out_dir)):
        if not name.startswith("part-"):
            continue
        with open(os.path.join(out_dir, name), "rb") as f:
            for number, line in enumerate(f, 1):
                key = line[:key_bytes]
                if previous is not None and key < previous:
                    return f"{name} line {number}"
                previous = key
    return None


def output_digest(out_dir: str) -> str:
    """sha256 of the job's answer: every part file's lines, sorted (the form of textgen's and
    terarecords' expected digests: WordCount's "word<TAB>count" lines, TeraSort's 100-byte lines)."""
    lines: list[bytes] = []
    for name in sorted(os.listdir(out_dir)):
        if name.startswith("part-"):
            with open(os.path.join(out_dir, name), "rb") as f:
                lines += f.read().splitlines(keepends=True)
    return hashlib.sha256(b"".join(sorted(lines))).hexdigest()


class MapReduceRig(Rig):
    name = "mapreduce"

    parameters = {
        "mapreduce": Param(choices=ENGINES),
        "job": Param(choices=JOBS),
        "words": Param(int, low=1, doc="WordCount's input words"),
        "rows": Param(int, low=1, doc="TeraSort's input rows"),
        "vocabulary": Param(int, low=1),
        "zipf_s": Param(float, low=0),
        "seed": Param(int, low=0),
        "splits": Param(int, low=1),
        "io_sort_mb": Param(int, low=1),
        "io_sort_record_percent": Param(float, low=0.001, high=0.999, special=("default",),
                                        doc="MR1's share of the sort buffer for record pointers"),
        # Cluster mode (rigs/mapreduce/cluster.py; workloads/mapreduce_cluster gives these, local mode none).
        "mode": Param(choices=("local", "cluster"), optional=True, doc="local runner (absent) or a small cluster"),
        "nodes": Param(int, low=1, high=8, optional=True, doc="NodeManagers, each with its shuffle server"),
        "node_memory_mb": Param(int, low=512, optional=True, doc="memory each NodeManager offers its containers"),
        "reduces": Param(int, low=1, optional=True),
        "task_heap_mb": Param(int, low=64, optional=True, doc="each map and reduce JVM's -Xmx"),
        "shuffle_buffer_percent": Param(float, low=0.01, high=0.9, optional=True,
                                        doc="the reducer's heap share for map outputs (early disconnects when small)"),
    }

    def check(self, params: Mapping[str, str]) -> None:
        if params["mapreduce"] == "mr2" and params["io_sort_record_percent"] != "default":
            raise ValueError("io_sort_record_percent is MR1-only: MR2 removed it (MAPREDUCE-64) and ignores it; "
                             "exclude mapreduce=mr2 from that axis' other values")
        if params["mapreduce"] == "mr1" and params.get("variant", "stock") != "stock":
            raise ValueError(f"variant={params['variant']} with mapreduce=mr1: the patch sets are MR2's "
                             "(third_party/hadoop); exclude mr1 from the patched values")
        text_params(params).check()
        if params.get("mode", "local") == "cluster":
            if params["job"] != "terasort":
                raise ValueError("mode=cluster runs TeraSort (the shuffle-heavy job); set job=terasort")
            missing = [n for n in ("nodes", "node_memory_mb", "reduces", "task_heap_mb", "shuffle_buffer_percent")
                       if n not in params]
            if missing:
                raise ValueError(f"mode=cluster needs {', '.join(missing)} (workloads/mapreduce_cluster gives them)")

    def estimate_seconds(self, params: Mapping[str, str], policy: PolicyView) -> float | None:
        """JVM start-up, then about 1.2 M words/s through one map (measured: 3 M words in ~3 s of job time),
        or about 100 k TeraSort rows/s (measured: 100 k rows in 0.5-1.2 s); each job after the first of a
        launch with iterations, guessed a third faster, + two full collections for its cost line."""
        if params.get("mode") == "cluster":
            # Measured (2026-12-01, pressure_study: 1 M rows in 8 maps, 4 reducers, one job a launch): an MR2
            # launch ~95-110 s (its cluster up ~20 s, the job ~40 s, the rest stopping and checking), MR1 ~40 s.
            jobs = policy.warmup_iterations + max(1, policy.iterations)
            if params["mapreduce"] == "mr2":
                return 55 + jobs * (10 + int(params["rows"]) / 3.3e4)
            return 12 + jobs * (5 + int(params["rows"]) / 4.5e4)
        job_s = int(params["rows"]) / 1e5 if params["job"] == "terasort" else int(params["words"]) / 1.2e6
        later = max(0, policy.warmup_iterations + policy.iterations - 1)
        return 3 + job_s + later * (job_s * 2 / 3 + 0.2)

    def can_iterate(self, params: Mapping[str, str]) -> bool:
        """MrJobLoop runs either job on either engine again in its JVM."""
        return True

    def launch(self, cell: CellView, workload: Workload, policy: PolicyView, workdir: str, data: Mapping[str, str],
               inputs_dir: str) -> Launch:
        p = cell.params
        engine = p["mapreduce"]
        cached, input_digests, expected = ensure_input(p, inputs_dir)
        # The cell's own input folder of links to the cached files: MR1's TeraSort writes its partition file
        # into the input folder, which must stay the same for every cell.
        input_dir = os.path.join(workdir, "input")
        os.makedirs(input_dir, exist_ok=True)
        for name in input_digests:
            os.symlink(os.path.join(cached, name), os.path.join(input_dir, name))
        if p.get("mode") == "cluster":
            evicted = cluster.evict_input([os.path.join(cached, name) for name in input_digests])
            launch = self._launch_cluster(p, policy, workdir, data, input_dir, input_digests, expected)
            launch.state["input_evicted_bytes"] = evicted
            return launch
        if p["job"] == "terasort" and engine == "mr1":
            # MR1's local runner cannot link the partition file into the task's working directory
            # ("LocalJobRunner does not support symlinking"): the rig links it into the JVM's own (the cell
            # folder), and the localRunner folder must exist (README.md, "Facts the rigs rely on").
            os.makedirs(os.path.join(workdir, "tmp", "mapred", "local", "localRunner"), exist_ok=True)
            os.symlink(os.path.join(input_dir, "_partition.lst"), os.path.join(workdir, "_partition.lst"))
        conf = os.path.join(workdir, "conf")
        os.makedirs(conf, exist_ok=True)
        safeio.write_text(os.path.join(conf, "log4j.properties"), LOG4J)
        out_dir = os.path.join(workdir, "output")
        options = {SLOWSTART[engine]: "0.99", REDUCES[engine]: "1", SORT_MB[engine]: p["io_sort_mb"],
                   "hadoop.tmp.dir": os.path.join(workdir, "tmp")}
        if not (p["job"] == "terasort" and engine == "mr1"):
            options[LOCAL_DIR[engine]] = os.path.join(workdir, "local")  # MR1 TeraSort: under hadoop.tmp.dir
        if p["io_sort_record_percent"] != "default":
            options["io.sort.record.percent"] = p["io_sort_record_percent"]
        args = [p["job"]] + [f"-D{k}={v}" for k, v in sorted(options.items())] + [input_dir, out_dir]
        main_class = "org.apache.hadoop.examples.ExampleDriver"
        if policy.iterations > 1 or policy.warmup_iterations > 0:
            main_class = "tunelab.rigs.mapreduce.MrJobLoop"
            args = ["--iterations", str(policy.warmup_iterations), str(policy.iterations), "--"] + args
        perf = shutil.which("perf")
        wrapper = ([perf, "stat", "-x,", "-o", os.path.join(workdir, "perf.csv"), "-e", ",".join(PERF_EVENTS), "--"]
                   if perf else [])
        return Launch.jvm(main_class=main_class,
                      classpath=[conf] + read_classpath_file(data[CLASSPATHS[engine]]), args=args,
                      generated_inputs=dict(input_digests), wrapper=wrapper,
                      state={"job": p["job"], "output": out_dir, "expected_output_sha256": expected})

    def _launch_cluster(self, p: Mapping[str, str], policy: PolicyView, workdir: str, data: Mapping[str, str],
                        input_dir: str, input_digests: Mapping[str, str], expected: str) -> Launch:
        """The engine as a small cluster in the cell's folder (its work folder, history, logs)."""
        typed = self.typed(p)
        conf = os.path.join(workdir, "conf")
        os.makedirs(conf, exist_ok=True)
        safeio.write_text(os.path.join(conf, "log4j.properties"), LOG4J)
        out_dir = os.path.join(workdir, "output")
        args = cluster.driver_args(typed, policy.warmup_iterations, max(1, policy.iterations), input_dir, out_dir)
        return Launch.jvm(main_class=cluster.DRIVERS[p["mapreduce"]], jvm_flags=cluster.jvm_flags(p["mapreduce"]),
                          classpath=[conf] + read_classpath_file(data[cluster.CLASSPATHS[p["mapreduce"]]]), args=args,
                          generated_inputs=dict(input_digests),
                          state={"mode": "cluster", "job": "terasort", "output": out_dir,
                                 "expected_output_sha256": expected})

    # A watched run's live values: the iterating driver's cost lines (issue 63).
    live_metrics = iterations.LIVE_METRICS

    def live(self, role: str, line: str) -> Mapping[str, float]:
        return iterations.live_values(line) if role == MAIN_ROLE else {}

    def parse(self, outputs: Mapping[str, str], policy: PolicyView, workdir: str, launch: Launch) -> Parsed:
        stdout_text = outputs[MAIN_ROLE]
        check_output(launch.state)
        if launch.state.get("mode") == "cluster":
            warmup_samples, measured_samples, observed = cluster.parse(stdout_text)
            return Parsed(warmup_samples, measured_samples, dict(observed, output_sha256=launch.state["expected_output_sha256"],
                                                                 input_evicted_bytes=launch.state["input_evicted_bytes"]))
        found = iterations.split(stdout_text)
        logs = [(it, job_log(it.text, f" in iteration {it.index}")) for it in found]
        single = None if found else job_log(stdout_text)
        actual = launch.state["expected_output_sha256"]
        perf_path = os.path.join(workdir, "perf.csv")
        perf: dict[str, Any]  # {event: {"value", "unit"} or {"skipped": why}}, or {"skipped": why} without perf
        if os.path.exists(perf_path):
            with open(perf_path) as f:
                perf = parse_perf_csv(f.read())
        else:
            perf = {"skipped": "perf is not installed on this host (Debian: linux-perf)"}
        if single is not None:
            log = single
            values = job_values(log)
            if "value" in perf.get("task-clock", {}):
                values["cpu_time"] = perf["task-clock"]["value"] / 1000.0  # msec -> s, the whole JVM
            samples = [{"metric": m, "value": v, "unit": UNITS[m], "t": log.job_s} for m, v in values.items()]
            return Parsed([], samples, {"counters": log.counters, "output_sha256": actual, "perf_stat": perf})
        first = logs[0][1]
        warmup: list[Sample] = []
        measured: list[Sample] = []
        per_iteration = []
        for it, log in logs:
            for name in SAME_WORK_COUNTERS:
                if log.counter(name) != first.counter(name):
                    raise MeasurementInvalid(f"iteration {it.index}: {name} = {log.counter(name)}, iteration "
                                             f"{logs[0][0].index} had {first.counter(name)}: not the same work")
            cost = iterations.cost(it)
            records = log.counter("Map input records")
            values = job_values(log)
            if records > 0:
                # The whole JVM: the job client's thread submits and polls, the local runner's run the tasks;
                # the JIT compiler's CPU apart (it goes on after the job times settle).
                values["alloc_per_record"] = (cost["allocated_bytes"] + cost["driver_allocated_bytes"]) / records
                cpu_ns = iterations.cpu_without_jit_ns(cost, with_driver=True)
                if cpu_ns is not None:
                    values["cpu_per_record"] = cpu_ns / 1000 / records
            (warmup if it.warmup else measured).extend(
                {"metric": m, "value": v, "unit": UNITS[m], "t": log.job_s, "metadata": {"iteration": it.index}}
                for m, v in values.items())
            per_iteration.append({"iteration": it.index, "warmup": it.warmup, "counters": log.counters, "cost": cost})
        # perf stat covers the whole launch (every iteration): kept for the reader, not a sample.
        return Parsed(warmup, measured, {"iterations": per_iteration, "output_sha256": actual, "perf_stat": perf})


def check_output(state: Mapping[str, Any]) -> None:
    """The last job's output is the expected answer (and TeraSort's in key order), else the cell is invalid."""
    actual = output_digest(state["output"])
    if actual != state["expected_output_sha256"]:
        raise MeasurementInvalid(f"the job's output (sha256 {actual[:12]}) is not the expected answer "
                                 f"({state['expected_output_sha256'][:12]}): wrong result, not measured")
    if state["job"] == "terasort":
        # The digest is over the lines re-sorted: it proves the records, not their order.
        disorder = first_out_of_order(state["output"])
        if disorder:
            raise MeasurementInvalid(f"the job's output is not sorted: {disorder}: wrong result, not measured")


def job_log(text: str, where: str = "") -> joblog.JobLog:
    try:
        return joblog.parse(text)
    except joblog.JobLogError as e:
        raise MeasurementInvalid(f"{e}{where}") from None


def job_values(log: joblog.JobLog) -> dict[str, float]:
    """The samples' values of one job: its phase times, Spilled Records and the map spill count."""
    return {"job_duration": log.job_s, "map_time": log.map_s, "reduce_time": log.reduce_s,
            "spilled_records": float(log.counter("Spilled Records")), "map_spills": float(log.map_spills)}


RIG = MapReduceRig()
