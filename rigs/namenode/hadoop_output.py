"""What NNThroughputBenchmark and the NameNode print and publish, read for the namenode rig (rig.py): the
benchmark's stats blocks, the call queue the NameNode logs at start-up, its /jmx beans and the records its
metrics FileSink writes once a second, averaged over the window in which calls were served."""

import re
import time
import urllib.parse
import urllib.request

from results import safeio

MAX_JMX_BYTES = 16 << 20  # the NameNode's whole /jmx is ~200 KB

_BLOCK = re.compile(r"--- (\w+) stats\s+---")


_FIELD = re.compile(r"(?:NNThroughputBenchmark|AddBlockBench):\s+(# operations|Elapsed Time|Ops per sec|Average Time):"
                    r"\s*([0-9.Ee+-]+)")


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


def wait_for_calls(path, calls, timeout_s=4.0):
    """True once the metrics file's last rpc record counts at least `calls` calls."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with open(path) as f:
                rpc = [r for r in parse_file_sink(f.read()) if r["record"] == "rpc.rpc"]
        except OSError:
            rpc = []
        if rpc and rpc[-1]["values"].get("RpcQueueTimeNumOps", 0) >= calls:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)


def call_queue_from_log(text, port):
    """{"queue", "capacity", "scheduler"} from the NameNode's "Using callQueue" line for `port`, or None."""
    for m in re.finditer(r"Using callQueue: class (\S+), queueCapacity: (\d+), scheduler: class (\S+)", text):
        return {"queue": m.group(1).rstrip(","), "capacity": int(m.group(2)), "scheduler": m.group(3).rstrip(",")}
    return None


def jmx(http_port, query):
    """The beans of the NameNode's /jmx servlet matching an ObjectName pattern ([] when none)."""
    url = f"http://127.0.0.1:{http_port}/jmx?qry={urllib.parse.quote(query, safe='=:,*')}"
    with urllib.request.urlopen(url, timeout=10) as r:
        return safeio.parse_json(r.read(MAX_JMX_BYTES + 1), MAX_JMX_BYTES).get("beans", [])


def parse_file_sink(text):
    """Hadoop FileSink lines to [{"t_ms", "record", "tags": {}, "values": {}}].

    A line is `<epoch ms> <context>.<record>: Tag=v, Metric=v, ...` (tags and metrics alike `name=value`):
    whatever parses as a number goes to "values" (a numeric tag such as the RPC port too), the rest to "tags"."""
    records = []
    for line in text.splitlines():
        m = re.fullmatch(r"(\d+) (\S+?): (.*)$", line)
        if not m:
            continue
        tags, values = {}, {}
        for item in m.group(3).split(", "):
            name, sep, value = item.partition("=")
            if not sep:
                continue
            try:
                values[name] = float(value)
            except ValueError:
                tags[name] = value
        records.append({"t_ms": int(m.group(1)), "record": m.group(2), "tags": tags, "values": values})
    return records


def window_metrics(records):
    """The NameNode's own metrics over the window in which RPC calls were served.

    Hadoop's rates are per interval (each record holds the calls since the previous one and their mean
    time), so a window's mean is the interval means weighted by their calls. The namesystem lock: the wait,
    from the RPC record's RpcLockWaitTime (per call, as the NameNode times it), and the hold per operation,
    from the FSNamesystem record's `FSN{Read,Write}Lock<Op>Nanos` rates summed to a total per op."""
    rpc = [r for r in records if r["record"] == "rpc.rpc" and "RpcQueueTimeNumOps" in r["values"]]
    out = {}
    if rpc:
        busy = []
        previous = 0.0
        for r in rpc:
            calls = r["values"]["RpcQueueTimeNumOps"] - previous
            previous = r["values"]["RpcQueueTimeNumOps"]
            if calls > 0:
                busy.append((calls, r))
        total = sum(c for c, _ in busy)
        if total:
            def weighted(name):
                return sum(c * r["values"].get(name, 0.0) for c, r in busy) / total
            lengths = [r["values"].get("CallQueueLength", 0.0) for _, r in busy]
            out["rpc"] = {"calls": int(total), "seconds_with_calls": len(busy),
                          "queue_time_avg_ms": weighted("RpcQueueTimeAvgTime"),
                          "processing_time_avg_ms": weighted("RpcProcessingTimeAvgTime"),
                          # The handlers' wait for the namesystem lock, as the NameNode times it per call.
                          "lock_wait_avg_ms": weighted("RpcLockWaitTimeAvgTime"),
                          "lock_wait_total_ms": weighted("RpcLockWaitTimeAvgTime") * total,
                          "call_queue_length_mean": sum(lengths) / len(lengths),
                          "call_queue_length_max": max(lengths)}
    locks = {}
    previous = {}
    for r in records:
        if r["record"] != "dfs.FSNamesystem":
            continue
        for name, value in r["values"].items():
            m = re.fullmatch(r"FSN(Read|Write)Lock(\w+)NanosNumOps", name)
            if not m:
                continue
            kind, op = m.group(1).lower(), m.group(2)
            count = value - previous.get(name, 0.0)
            previous[name] = value
            if count <= 0:
                continue
            avg_ns = r["values"].get(f"FSN{m.group(1)}Lock{op}NanosAvgTime", 0.0)
            entry = locks.setdefault(kind, {}).setdefault(op, {"count": 0, "held_ms": 0.0})
            entry["count"] += int(count)
            entry["held_ms"] += count * avg_ns / 1e6
    if locks:
        out["lock_hold"] = {kind: _main_holders(ops) for kind, ops in sorted(locks.items())}
        for ops in out["lock_hold"].values():
            for entry in ops.values():
                # Per hold: comparable between runs even when a run's last second was not written.
                entry["held_us_per_op"] = 1000.0 * entry["held_ms"] / entry["count"]
    return out


def _main_holders(ops, share=0.01):
    """Largest first; operations holding the lock under `share` of the total are summed into "others"
    (the NameNode's background monitors take it briefly every few seconds)."""
    total = sum(v["held_ms"] for op, v in ops.items() if op != "Overall") or 1.0
    kept, others = {}, {"count": 0, "held_ms": 0.0}
    for op, v in sorted(ops.items(), key=lambda kv: -kv[1]["held_ms"]):
        if op == "Overall" or v["held_ms"] >= share * total:
            kept[op] = v
        else:
            others["count"] += v["count"]
            others["held_ms"] += v["held_ms"]
    if others["count"]:
        kept["others"] = others
    return kept
