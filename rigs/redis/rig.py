"""Redis under NUMA placements (CASE_STUDIES 001): redis-server on loopback, loaded, then redis-benchmark.

One cell is four processes, in the rig contract's phases:
  server     redis-server (stock or patched, from third_party/redis), 127.0.0.1 on a free port, no
             persistence, `io_threads` I/O threads: the process under test (the matrix's NUMA policy and
             CPU binding apply to it)
  loader     phase 0: `redis-cli --pipe` with the generated data set on its stdin (SET key:%012d for
             every key, values of `value_size` random bytes from the matrix seed)
  memory     phase 1: `redis-cli info memory`, the server's memory after the load
  warmup     phase 2: redis-benchmark with `warmup_requests` (its numbers are kept apart as warm-up)
  benchmark  phase 3: redis-benchmark with `requests`, `-r keys` so every request hits a loaded key
With numa=pressured_migrated (case study 001's before/after; needs two nodes) the server's CPUs are on
`home_node` and its memory policy is the default (local first), and the cell becomes:
  pressure          phase 0, beside the loader: memhog preferring the home node, filling it but
                    `pressure_leave_mb`, so the loaded pages spill to the other node(s)
  numa_before       phase 1: the server's /proc/PID/numa_maps (local ratio before)
  benchmark_before  phase 3: the result's split part locality=pre
  migrate           phase 4: `migratepages PID all <home_node>`, Redis running
  numa_after        phase 5, then benchmark (phase 6): the cell's samples, after the migration (part post)
redis-benchmark is closed loop (`clients` connections, each waits for its reply). Its plain output holds the
whole latency distribution: percentiles at halving steps, so the p99.99 reported is the first printed
percentile at or above 99.99, and the sample says which one it was.
"""

import hashlib
import os
import random
import re
import subprocess
from typing import Any, Mapping

from rigs.matrix import evidence
from rigs.matrix import rig as rig_contract
from rigs.matrix.rig import Sample
from rigs.matrix.workload import Workload

TESTS = ("get", "set")
NODE_SYSFS = "/sys/devices/system/node"
READY = r"Ready to accept connections"
# The per-percentile lines of redis-benchmark's "Latency by percentile distribution" (7.0).
_PERCENTILE = re.compile(r"^\s*([\d.]+)% <= ([\d.]+) milliseconds \(cumulative count (\d+)\)")


def tests_of(params: Mapping[str, str]) -> list[str]:
    tests = [t.strip().lower() for t in params["tests"].split("+") if t.strip()]
    unknown = [t for t in tests if t not in TESTS]
    if not tests or unknown:
        raise ValueError(f"tests={params['tests']!r}: give one or more of {'+'.join(TESTS)} joined by +")
    return tests


def resp(*args: bytes) -> bytes:
    """One command in the Redis protocol (what `redis-cli --pipe` sends as is)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def write_dataset(path: str, keys: int, value_size: int, seed: int) -> str:
    """SET key:%012d <value> for key 0..keys-1 (the names redis-benchmark -r reads); returns the sha256."""
    rng = random.Random(seed)
    alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    printable = bytes(alphabet[b % len(alphabet)] for b in range(256))  # random bytes -> letters, digits
    digest = hashlib.sha256()
    with open(path, "wb") as f:
        for i in range(keys):
            value = rng.randbytes(value_size).translate(printable)
            chunk = resp(b"SET", b"key:%012d" % i, value)
            digest.update(chunk)
            f.write(chunk)
    return digest.hexdigest()


def ensure_dataset(cache_root: str, keys: int, value_size: int, seed: int) -> tuple[str, str]:
    """(path, sha256) of the data set for these parameters, written once per run under its inputs/ folder
    (atomically: a temporary name, then a rename), so cells do not each store their own copy."""
    path = os.path.join(cache_root, f"redis-{keys}x{value_size}-seed{seed}.resp")
    digest_path = path + ".sha256"
    if not os.path.exists(digest_path):
        os.makedirs(cache_root, exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        digest = write_dataset(tmp, keys, value_size, seed)
        os.replace(tmp, path)
        with open(digest_path + ".tmp", "w") as f:
            f.write(digest)
        os.replace(digest_path + ".tmp", digest_path)
    with open(digest_path) as f:
        return path, f.read().strip()


def parse_benchmark(text: str) -> dict[str, dict[str, Any]]:
    """redis-benchmark 7.0's plain output -> {test: {"requests_per_s", "requests", "seconds",
    "percentiles": [(percent, ms)], "summary": {avg, min, p50, p95, p99, max}}}."""
    tests: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    # Progress lines end in \r, not \n: they run into the next section's header.
    for line in re.split(r"[\r\n]", text):
        m = re.search(r"====== (.+?) ======", line)
        if m:
            current = tests.setdefault(m.group(1).strip().lower(), {"percentiles": []})
            continue
        if current is None:
            continue
        m = re.match(r"\s*(\d+) requests completed in ([\d.]+) seconds", line)
        if m:
            current["requests"], current["seconds"] = int(m.group(1)), float(m.group(2))
        m = _PERCENTILE.match(line)
        if m and "cumulative" not in current:
            current["percentiles"].append((float(m.group(1)), float(m.group(2))))
        if line.startswith("Cumulative distribution of latencies"):
            current["cumulative"] = True  # the second table: by latency, not by percentile
        m = re.match(r"\s*throughput summary: ([\d.]+) requests per second", line)
        if m:
            current["requests_per_s"] = float(m.group(1))
        m = re.match(r"\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", line)
        if m and "requests_per_s" in current:
            current["summary"] = dict(zip(("avg", "min", "p50", "p95", "p99", "max"), map(float, m.groups())))
    for name, t in tests.items():
        t.pop("cumulative", None)
        missing = [k for k in ("requests_per_s", "summary", "requests") if k not in t]
        if missing or not t["percentiles"]:
            raise ValueError(f"redis-benchmark output for {name.upper()} lacks {missing or ['its percentiles']}")
    return tests


def parse_csv(text: str) -> dict[str, dict[str, float]]:
    """redis-benchmark --csv -> {test: {"requests_per_s", "avg", "min", "p50", "p95", "p99", "max"}} (ms)."""
    rows = [line.strip().strip('"').split('","') for line in text.splitlines() if line.strip()]
    if not rows or rows[0][:2] != ["test", "rps"]:
        raise ValueError("not redis-benchmark --csv output (no test,rps header)")
    names = ["requests_per_s", "avg", "min", "p50", "p95", "p99", "max"]
    return {r[0].lower(): dict(zip(names, map(float, r[1:]))) for r in rows[1:]}


def percentile_at_or_above(percentiles: list[tuple[float, float]], wanted: float) -> tuple[float, float]:
    """(printed percent, ms) of the first printed percentile >= wanted (redis-benchmark prints halving
    steps: 99.976, 99.988, 99.994 ...), or the last one if none reaches it."""
    for percent, ms in percentiles:
        if percent >= wanted:
            return percent, ms
    return percentiles[-1]


def parse_info(text: str) -> dict[str, str]:
    return dict(line.split(":", 1) for line in text.replace("\r", "").splitlines()
                if ":" in line and not line.startswith("#"))


def samples_of(tests: Mapping[str, Mapping[str, Any]], t: float) -> list[Sample]:
    samples: list[Sample] = []
    for name, result in sorted(tests.items()):
        p9999_at, p9999 = percentile_at_or_above(result["percentiles"], 99.99)
        for metric, value, unit in ((f"{name}_rate", result["requests_per_s"], "requests/s"),
                                    (f"{name}_latency_p50", result["summary"]["p50"], "ms"),
                                    (f"{name}_latency_p99", result["summary"]["p99"], "ms"),
                                    (f"{name}_latency_p99_99", p9999, "ms")):
            sample: Sample = {"metric": metric, "value": value, "unit": unit, "t": t}
            if metric.endswith("_latency_p99_99"):
                sample["metadata"] = {"printed_percentile": p9999_at}
            samples.append(sample)
    return samples


def node_free_mb(node: int) -> int:
    with open(os.path.join(NODE_SYSFS, f"node{node}", "meminfo")) as f:
        for line in f:
            if "MemFree:" in line:
                return int(line.split()[-2]) // 1024
    raise ValueError(f"node {node}: no MemFree in its meminfo")


def migration_observations(outputs: Mapping[str, str], home: int) -> dict[str, Any]:
    """The pressured-then-migrated phases: local ratio and bytes per node before and after the migration, and
    the bytes moved home."""
    before = evidence.parse_numa_maps(outputs["numa_before"])
    after = evidence.parse_numa_maps(outputs["numa_after"])
    ratio_before = evidence.local_memory_ratio(before, home)
    if ratio_before is None or ratio_before > 0.95:
        raise rig_contract.MeasurementInvalid(
            f"the pressure did not push the server's pages off node {home}: local ratio before the migration "
            f"{ratio_before} (raise the load or lower pressure_leave_mb)")
    return {"migration": {
        "home_node": home,
        "before": {"local_ratio": ratio_before, "bytes_per_node": before["bytes_per_node"]},
        "after": {"local_ratio": evidence.local_memory_ratio(after, home), "bytes_per_node": after["bytes_per_node"]},
        "moved_home_bytes": after["bytes_per_node"].get(home, 0) - before["bytes_per_node"].get(home, 0)}}


def locality_split(outputs: Mapping[str, str], measured: list[Sample], migration: Mapping[str, Any]
                   ) -> dict[str, dict[str, list[Sample]]]:
    """The cell's two parts for a pre/post comparison: the benchmark before the migration and the one after
    (the cell's samples), each with the server's local-page ratio (%) at that time."""
    parts: dict[str, list[Sample]] = {}
    for label, samples, when in (("pre", samples_of(parse_benchmark(outputs["benchmark_before"]), t=0.0), "before"),
                                 ("post", [dict(s) for s in measured], "after")):
        ratio = migration[when]["local_ratio"]
        parts[label] = samples + [{"metric": "local_page_ratio", "value": round(ratio * 100, 2), "unit": "%",
                                   "t": 0.0}]
    return {"locality": parts}


class RedisRig(rig_contract.Rig):
    name = "redis"
    roles = ("server", "pressure", "loader", "memory", "numa_before", "warmup", "benchmark_before", "migrate",
             "numa_after", "benchmark")

    parameters = {
        "keys": rig_contract.Param(int, low=1),
        "value_size": rig_contract.Param(int, low=1, high=512 * 1024 * 1024, doc="bytes; Redis's string limit"),
        "seed": rig_contract.Param(int, low=0),
        "tests": rig_contract.Param(doc=f"one or more of {'+'.join(TESTS)} joined by +"),
        "requests": rig_contract.Param(int, low=1),
        "warmup_requests": rig_contract.Param(int, low=0),
        "clients": rig_contract.Param(int, low=1),
        "pipeline": rig_contract.Param(int, low=1),
        "bench_threads": rig_contract.Param(int, low=1),
        "io_threads": rig_contract.Param(int, low=1),
        "home_node": rig_contract.Param(int, low=0),
        "pressure_leave_mb": rig_contract.Param(int, low=1),
    }

    def check(self, params: Mapping[str, str]) -> None:
        tests_of(params)

    def estimate_seconds(self, params: Mapping[str, str], policy: rig_contract.PolicyView) -> float | None:
        """Measured here (2 cores, 50 connections, 100-byte values): the data set written and piped at about
        100,000 keys/s, redis-benchmark at about 80,000 requests/s per test."""
        t = self.typed(params)
        requests = (t["warmup_requests"] + t["requests"]) * len(tests_of(params))
        return 1 + t["keys"] / 100_000 + requests / 80_000

    def launch(self, cell: rig_contract.CellView, workload: Workload, policy: rig_contract.PolicyView, workdir: str,
               data: Mapping[str, str], inputs_dir: str) -> rig_contract.Launch:
        p = cell.params
        t = self.typed(p)
        self.check(p)
        port = rig_contract.free_loopback_port()
        keys, value_size = t["keys"], t["value_size"]
        dataset, digest = ensure_dataset(inputs_dir, keys, value_size, t["seed"])
        home = t["home_node"]
        pressured = p.get("numa") == "pressured_migrated"
        io_threads = t["io_threads"]
        server = [data["server"], "--bind", "127.0.0.1", "--port", str(port), "--protected-mode", "yes",
                  "--save", "", "--appendonly", "no", "--dir", workdir, "--daemonize", "no",
                  "--io-threads", str(io_threads)]
        if io_threads > 1:
            server += ["--io-threads-do-reads", "yes"]
        cli = [data["cli"], "-h", "127.0.0.1", "-p", str(port)]

        def bench(requests: int) -> list[str]:
            argv = [data["benchmark"], "-h", "127.0.0.1", "-p", str(port), "-t", ",".join(tests_of(p)),
                    "-n", str(requests), "-r", str(keys), "-d", str(value_size), "-c", str(t["clients"]),
                    "-P", str(t["pipeline"])]
            if t["bench_threads"] > 1:
                argv += ["--threads", str(t["bench_threads"])]
            return argv

        processes = [
            rig_contract.Process("server", program=server, server=True, ready_pattern=READY,
                                 ready_timeout_s=30, ports=[port], fail_pattern=r"# (OOM|Can't|Fatal)"),
            rig_contract.Process("loader", program=cli + ["--pipe"], stdin=dataset, under_test=False, phase=0),
            rig_contract.Process("memory", program=cli + ["info", "memory"], under_test=False, phase=1),
        ]
        if t["warmup_requests"]:
            processes.append(rig_contract.Process("warmup", program=bench(t["warmup_requests"]),
                                                  under_test=False, phase=2))
        if pressured:
            pressure_mb = node_free_mb(home) - t["pressure_leave_mb"]
            if pressure_mb < 16:
                raise ValueError(f"node {home} has {node_free_mb(home)} MiB free: nothing to fill before the load "
                                 f"(pressure_leave_mb={p['pressure_leave_mb']})")
            numa_maps = ["cat", "/proc/{pid:server}/numa_maps"]
            processes[1:1] = [rig_contract.Process(
                # memhog touches its memory once ("." when done), then again and again until it is stopped.
                # Preferred, not bound: were the node's free memory to shrink meanwhile, the rest goes to the
                # other node instead of the kernel killing the pressure (seen with --membind in the guest).
                "pressure", program=["numactl", f"--preferred={home}", "--", "memhog", "-r1000000000",
                                     f"{pressure_mb}m"], under_test=False, background=True, ready_pattern=r"^\.",
                ready_timeout_s=600)]
            processes += [
                rig_contract.Process("numa_before", program=numa_maps, under_test=False, phase=1),
                rig_contract.Process("benchmark_before", program=bench(t["requests"]), under_test=False,
                                     phase=3),
                rig_contract.Process("migrate", program=["migratepages", "{pid:server}", "all", str(home)],
                                     under_test=False, phase=4),
                rig_contract.Process("numa_after", program=numa_maps, under_test=False, phase=5)]
        processes.append(rig_contract.Process("benchmark", program=bench(t["requests"]), under_test=False,
                                              phase=6 if pressured else 3))
        return rig_contract.Launch(processes, generated_inputs={"dataset.resp": digest},
                                   state={"port": port, "cli": data["cli"], "io_threads": t["io_threads"],
                                          "home_node": home})

    def parse(self, outputs: Mapping[str, str], policy: rig_contract.PolicyView, workdir: str,
              launch: rig_contract.Launch) -> rig_contract.Parsed:
        loaded = re.search(r"errors: (\d+), replies: (\d+)", outputs.get("loader", ""))
        if not loaded:
            raise ValueError("redis-cli --pipe printed no 'errors: N, replies: N' line")
        if int(loaded.group(1)):
            raise rig_contract.MeasurementInvalid(f"loading the data set: {loaded.group(1)} errors")
        memory = parse_info(outputs["memory"])
        measured = samples_of(parse_benchmark(outputs["benchmark"]), t=0.0)
        measured.append({"metric": "used_memory_after_load", "value": int(memory["used_memory"]) / 2**20,
                         "unit": "MiB", "t": 0.0})
        warmup = samples_of(parse_benchmark(outputs["warmup"]), t=0.0) if outputs.get("warmup") else []
        observations: dict[str, Any] = {}
        split: dict[str, dict[str, list[Sample]]] = {}
        if "numa_before" in outputs:
            observations.update(migration_observations(outputs, launch.state["home_node"]))
            split = locality_split(outputs, measured, observations["migration"])
        return rig_contract.Parsed(warmup, measured, split=split, observations={**observations,
            "keys_loaded": int(loaded.group(2)), "mem_allocator": memory.get("mem_allocator"),
            "used_memory_rss_after_load_bytes": int(memory.get("used_memory_rss", 0)),
            "latency_percentiles_ms": {name: t["percentiles"]
                                       for name, t in parse_benchmark(outputs["benchmark"]).items()}})

    def probe(self, role: str, when: str, launch: rig_contract.Launch, workdir: str,
              output: str) -> dict[str, Any] | None:
        """The running server as it describes itself: version, allocator, I/O threads, its executable."""
        if role != "server":
            return None
        setup = launch.state
        base = [setup["cli"], "-h", "127.0.0.1", "-p", str(setup["port"])]
        info = parse_info(subprocess.run(base + ["info", "server"], capture_output=True, text=True,
                                         timeout=10).stdout)
        threads = subprocess.run(base + ["config", "get", "io-threads"], capture_output=True, text=True,
                                 timeout=10).stdout.split()
        found: dict[str, Any] = {"redis_version": info.get("redis_version"), "executable": info.get("executable"),
                 "io_threads": int(threads[1]) if len(threads) == 2 and threads[1].isdigit() else None,
                 "problems": []}
        if when == "clients_done":
            keys = subprocess.run(base + ["dbsize"], capture_output=True, text=True, timeout=10).stdout.strip()
            found["dbsize"] = int(keys) if keys.isdigit() else None
        if found["io_threads"] != setup["io_threads"]:
            found["problems"].append(f"asked for {setup['io_threads']} I/O threads, the server reports "
                                     f"{found['io_threads']}")
        return found


RIG = RedisRig()
