"""The NameNode throughput rig, in-process mode: NNThroughputBenchmark against a freshly formatted name
directory in the JVM the matrix chose (rigs/namenode/NnBenchDriver.java formats it, optionally takes the
disk out of write operations, then runs the benchmark).

parse() reads the benchmark's own report: for every operation a "--- <op> stats ---" block with the number
of operations, elapsed time, ops/s and average time per op. One sample per operation and run (metric
`<op>_ops_per_s`); elapsed and average times are kept as observations.

RPC mode (a NameNode JVM on loopback, clients over RPC, call-queue variants) is not built yet: it needs
several processes with roles, which the rig contract does not express yet; check() refuses it.
"""

import os
import re

from rigs.matrix.rig import MAIN_ROLE, Launch, MeasurementInvalid, Parsed, read_classpath_file

OPS = ("create", "mkdirs", "open", "delete", "append", "fileStatus", "rename", "blockReport", "replication")
LOG4J = """# Written by the namenode rig: the benchmark's report lines on stdout, for parse().
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.out
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
"""
_BLOCK = re.compile(r"--- (\w+) stats\s+---")
_FIELD = re.compile(r"NNThroughputBenchmark:\s+(# operations|Elapsed Time|Ops per sec|Average Time):\s*([0-9.Ee+-]+)")


def metric_name(op):
    return f"{op}_ops_per_s"


def parse_report(text):
    """{op: {"operations", "elapsed_ms", "ops_per_s", "average_ms"}} of every stats block in the output."""
    out, op = {}, None
    keys = {"# operations": "operations", "Elapsed Time": "elapsed_ms", "Ops per sec": "ops_per_s",
            "Average Time": "average_ms"}
    for line in text.splitlines():
        block = _BLOCK.search(line)
        if block:
            op = block.group(1)
            out[op] = {}
            continue
        field = _FIELD.search(line)
        if field and op is not None:
            out[op][keys[field.group(1)]] = float(field.group(2))
    return {op: v for op, v in out.items() if "ops_per_s" in v}


class NameNodeRig:
    name = "namenode"

    def check(self, params):
        if params["mode"] != "inprocess":
            raise ValueError(f"mode={params['mode']}: only the in-process mode is built so far (rpc needs a "
                             "NameNode and client processes: not yet)")
        if params["op"] != "all" and params["op"] not in OPS:
            raise ValueError(f"op={params['op']}: one of all, {', '.join(OPS)}")
        if params["fsync"] not in ("on", "off"):
            raise ValueError(f"fsync={params['fsync']}: on or off")
        for key in ("threads", "files", "files_per_dir", "block_size"):
            if not params[key].isdigit() or int(params[key]) < 1:
                raise ValueError(f"{key}={params[key]}: a positive integer")

    def estimate_seconds(self, params, policy):
        """JVM start and format ~2 s; measured here: op=all over 2,000 files 8.7 s, create of 20,000 3 s."""
        files = int(params["files"])
        return 3 + (files / 300 if params["op"] == "all" else files / 7000)

    def launch(self, cell, workload, policy, workdir, data):
        p = cell.params
        conf = os.path.join(workdir, "conf")
        os.makedirs(conf, exist_ok=True)
        with open(os.path.join(conf, "log4j.properties"), "w") as f:
            f.write(LOG4J)
        args = ["--name-dir", os.path.join(workdir, "name")]
        if p["fsync"] == "off":
            args.append("--skip-fsync")
        args += ["--", "-fs", "file:///", "-op", p["op"], "-threads", p["threads"], "-files", p["files"],
                 "-filesPerDir", p["files_per_dir"], "-blockSize", p["block_size"]]
        return Launch.jvm(main_class="tunelab.rigs.namenode.NnBenchDriver",
                      classpath=[conf] + read_classpath_file(data["classpath"]), args=args)

    def parse(self, outputs, policy, workdir):
        stdout_text = outputs[MAIN_ROLE]
        report = parse_report(stdout_text)
        report.pop("clean", None)  # the benchmark's own clean-up pass, not an operation under test
        if not report:
            raise MeasurementInvalid("the benchmark printed no stats block")
        samples = [{"metric": metric_name(op), "value": v["ops_per_s"], "unit": "ops/s", "t": 0.0}
                   for op, v in report.items() if op in OPS]
        return Parsed([], samples, {"report": report})


RIG = NameNodeRig()
