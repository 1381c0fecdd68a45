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
whole latency distribution as cumulative counts (two tables: by percentile, dense in the tail, and by
latency); the rig keeps it with its counts, a run's tails are read from it, and a cell's from its runs'
merged distributions (analysis/distributions.py: counts added, never percentiles averaged).
With iterations (policy warmup_iterations / iterations) the benchmark role is bench_iterations.py, running
redis-benchmark that many times against the same loaded server: each measured iteration's rate is a sample
tagged with its iteration (the runner's steady-state check judges them), the run's tails come from the
iterations' merged distribution.
"""

import functools
import hashlib
import os
import random
import re
import subprocess
import sys
from typing import Any, Callable, Mapping

from analysis import distributions
from rigs.matrix.contract import evidence, iterations
from rigs.matrix.contract import rig as rig_contract
from rigs.matrix.contract.rig import Sample
from rigs.matrix.contract.workload import Workload
from results import safeio
from rigs.redis import callgrind

TESTS = ("get", "set")
BENCH_ITERATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_iterations.py")
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
    digest = hashlib.sha256()
    with safeio.atomic_file(path, binary=True) as f:
        for i in range(keys):
            chunk = resp(b"SET", b"key:%012d" % i, random_value(rng, value_size))
            digest.update(chunk)
            f.write(chunk)
    return digest.hexdigest()


_PRINTABLE = bytes(b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[b % 62] for b in range(256))


def random_value(rng: random.Random, size: int) -> bytes:
    return rng.randbytes(size).translate(_PRINTABLE)  # random bytes -> letters, digits


def write_request_script(path: str, test: str, requests: int, keys: int, value_size: int, seed: int) -> str:
    """`requests` GETs (or SETs of fresh values) of loaded keys drawn with `seed`, one command a line: the fixed
    request script a measure=instructions cell feeds redis-cli, which sends each and waits for its reply (one
    connection, closed loop: every request one read and one write, so the count does not depend on how a
    pipe's bytes happened to be batched); returns the sha256."""
    rng = random.Random(f"{seed}:{test}")
    digest = hashlib.sha256()
    with safeio.atomic_file(path, binary=True) as f:
        for _ in range(requests):
            key = b"key:%012d" % rng.randrange(keys)
            line = (b"GET " + key if test == "get" else b"SET " + key + b" " + random_value(rng, value_size)) + b"\n"
            digest.update(line)
            f.write(line)
    return digest.hexdigest()


def ensure_input(cache_root: str, name: str, write: Callable[[str], str]) -> tuple[str, str]:
    """(path, sha256) of a generated input, written once per run under its inputs/ folder by write(path) ->
    sha256 (atomically: a temporary name, then a rename), so cells do not each store their own copy."""
    path = os.path.join(cache_root, name)
    digest_path = path + ".sha256"
    if not os.path.exists(digest_path):
        digest = write(path)  # through safeio's atomic writer: all there or nothing
        safeio.write_text(digest_path, digest)
    return path, safeio.read_text(digest_path, 1024).strip()


def ensure_dataset(cache_root: str, keys: int, value_size: int, seed: int) -> tuple[str, str]:
    """(path, sha256) of the data set for these parameters (ensure_input)."""
    return ensure_input(cache_root, f"redis-{keys}x{value_size}-seed{seed}.resp",
                        lambda path: write_dataset(path, keys, value_size, seed))


def parse_benchmark(text: str) -> dict[str, dict[str, Any]]:
    """redis-benchmark 7.0's plain output -> {test: {"requests_per_s", "requests", "seconds",
    "percentiles": [(percent, ms)], "summary": {avg, min, p50, p95, p99, max},
    "distribution": Distribution}}. The distribution holds both printed tables' (ms, cumulative count)
    points: the by-percentile one (dense in the tail) and the by-latency one (dense in the body)."""
    tests: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    # Progress lines end in \r, not \n: they run into the next section's header.
    for line in re.split(r"[\r\n]", text):
        m = re.search(r"====== (.+?) ======", line)
        if m:
            current = tests.setdefault(m.group(1).strip().lower(), {"percentiles": [], "points": []})
            continue
        if current is None:
            continue
        m = re.match(r"\s*(\d+) requests completed in ([\d.]+) seconds", line)
        if m:
            current["requests"], current["seconds"] = int(m.group(1)), float(m.group(2))
        m = _PERCENTILE.match(line)
        if m:
            current["points"].append((float(m.group(2)), int(m.group(3))))
            if "cumulative" not in current:
                current["percentiles"].append((float(m.group(1)), float(m.group(2))))
        if line.startswith("Cumulative distribution of latencies"):
            current["cumulative"] = True  # the second table: by latency, not by percentile
        m = re.match(r"\s*throughput summary: ([\d.]+) requests per second", line)
        if m:
            current["requests_per_s"] = float(m.group(1))
        m = re.fullmatch(r"\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", line)
        if m and "requests_per_s" in current:
            current["summary"] = dict(zip(("avg", "min", "p50", "p95", "p99", "max"), map(float, m.groups())))
    for name, t in tests.items():
        t.pop("cumulative", None)
        missing = [k for k in ("requests_per_s", "summary", "requests") if k not in t]
        if missing or not t["percentiles"]:
            raise ValueError(f"redis-benchmark output for {name.upper()} lacks {missing or ['its percentiles']}")
        try:
            t["distribution"] = distributions.Distribution.from_points(t.pop("points"), total=t["requests"])
        except distributions.DistributionError as e:
            raise ValueError(f"redis-benchmark output for {name.upper()}: {e}") from None
    return tests


def parse_csv(text: str) -> dict[str, dict[str, float]]:
    """redis-benchmark --csv -> {test: {"requests_per_s", "avg", "min", "p50", "p95", "p99", "max"}} (ms)."""
    rows = [line.strip().strip('"').split('","') for line in text.splitlines() if line.strip()]
    if not rows or rows[0][:2] != ["test", "rps"]:
        raise ValueError("not redis-benchmark --csv output (no test,rps header)")
    names = ["requests_per_s", "avg", "min", "p50", "p95", "p99", "max"]
    return {r[0].lower(): dict(zip(names, map(float, r[1:]))) for r in rows[1:]}


def parse_info(text: str) -> dict[str, str]:
    return dict(line.split(":", 1) for line in text.replace("\r", "").splitlines()
                if ":" in line and not line.startswith("#"))


PER_RUN_TAILS = ((50.0, "p50"), (99.0, "p99"), (99.9, "p99_9"), (99.99, "p99_99"))


def tail_samples(dists: Mapping[str, distributions.Distribution], t: float) -> list[Sample]:
    """A run's own tails, read from its distribution as a cell's are (analysis/distributions.py: the first
    printed bound with the percentile's share of requests at or below it). A tail with fewer than
    distributions.MIN_TAIL_REQUESTS requests beyond it is left out (the "p99.99" of 20,000 requests is their
    two slowest); the cell's tails come from its runs' merged distributions."""
    samples: list[Sample] = []
    for name, dist in sorted(dists.items()):
        for percent, suffix in PER_RUN_TAILS:
            value = distributions.percentile(dist, percent)
            if value is not None:
                beyond = round(distributions.requests_beyond(dist.total, percent), 1)
                samples.append({"metric": f"{name}_latency_{suffix}", "value": value, "unit": "ms", "t": t,
                                "metadata": {"requests_beyond": beyond}})
    return samples


def samples_of(tests: Mapping[str, Mapping[str, Any]], t: float) -> list[Sample]:
    """One redis-benchmark run's samples: its rate per test, and its tails."""
    rates: list[Sample] = [{"metric": f"{name}_rate", "value": r["requests_per_s"], "unit": "requests/s", "t": t}
                           for name, r in sorted(tests.items())]
    return rates + tail_samples({name: r["distribution"] for name, r in tests.items()}, t)


def parse_runs(text: str) -> tuple[list[dict[str, dict[str, Any]]], list[dict[str, dict[str, Any]]]]:
    """(warm-up runs, measured runs) of a benchmark role's output: one run, or the iterations of
    bench_iterations.py, each behind its mark."""
    found = iterations.split(text)
    if not found:
        return [], [parse_benchmark(text)]
    runs: tuple[list, list] = ([], [])
    for it in found:
        try:
            runs[0 if it.warmup else 1].append(parse_benchmark(it.text))
        except ValueError as e:
            raise ValueError(f"iteration {it.index}: {e}") from None
    if not runs[1]:
        raise ValueError("the benchmark's iterations hold no measured one")
    return runs


def measured_samples(runs: list[dict[str, dict[str, Any]]], t: float
                     ) -> tuple[list[Sample], dict[str, distributions.Distribution]]:
    """The samples of a launch's measured runs and their merged distribution per test: one run gives its own;
    iterations give a rate each (tagged with the iteration: the runner's steady-state check) and the tails of
    their merged distribution (counts added)."""
    if len(runs) == 1:
        return samples_of(runs[0], t), {name: r["distribution"] for name, r in runs[0].items()}
    merged = {name: distributions.merge([r[name]["distribution"] for r in runs]) for name in runs[0]}
    rates: list[Sample] = [{"metric": f"{name}_rate", "value": r["requests_per_s"], "unit": "requests/s", "t": t,
                            "metadata": {"iteration": k}}
                           for k, tests in enumerate(runs) for name, r in sorted(tests.items())]
    return rates + tail_samples(merged, t), merged


def tail_percentiles_of(params: Mapping[str, str]) -> list[float]:
    """`tail_percentiles` ("50+99+99.9+99.99") as numbers, each in (0, 100)."""
    try:
        percents = [float(x) for x in params["tail_percentiles"].split("+") if x.strip()]
    except ValueError:
        percents = []
    if not percents or not all(0 < p < 100 for p in percents):
        raise ValueError(f"tail_percentiles={params['tail_percentiles']!r}: give percentiles in (0, 100) joined "
                         "by +, e.g. 50+99+99.9")
    return percents


def counted_scripts(params: Mapping[str, str], cli: list[str], inputs_dir: str
                    ) -> tuple[list[rig_contract.Process], dict[str, str]]:
    """measure=instructions: per test, callgrind_control --zero, its request script through redis-cli (one
    connection: `clients`, `pipeline`, `bench_threads` and `warmup_requests` are redis-benchmark's and not used),
    callgrind_control --dump=<test>, in phases after the load (2, 3, 4, then 5, 6, 7); and the scripts'
    sha256 by input name."""
    requests, keys, value_size, seed = (int(params[k]) for k in ("requests", "keys", "value_size", "seed"))
    processes, inputs = [], {}
    control = ["callgrind_control"]
    for k, test in enumerate(tests_of(params)):
        script, inputs[f"{test}_script.txt"] = ensure_input(
            inputs_dir, f"redis-{test}-{requests}of{keys}x{value_size}-seed{seed}.txt",
            functools.partial(write_request_script, test=test, requests=requests, keys=keys, value_size=value_size,
                              seed=seed))
        processes += [
            rig_contract.Process(f"zero_{test}", program=control + ["--zero", "{pid:server}"], under_test=False,
                                 phase=2 + 3 * k),
            rig_contract.Process(f"script_{test}", program=cli, stdin=script, under_test=False, phase=3 + 3 * k),
            rig_contract.Process(f"dump_{test}", program=control + [f"--dump={test}", "{pid:server}"],
                                 under_test=False, phase=4 + 3 * k)]
    return processes, inputs


# measure=instructions: jemalloc's time-based purging off (dirty and muzzy pages kept): its decay runs inside
# allocation calls when enough time has passed, so with it the request path itself would count by the clock.
COUNTED_ENV = {"MALLOC_CONF": "dirty_decay_ms:-1,muzzy_decay_ms:-1"}


def instruction_samples(outputs: Mapping[str, str], workdir: str, requests: int
                        ) -> tuple[list[Sample], dict[str, Any]]:
    """measure=instructions: each test's instructions between its zero and its dump over its script's requests
    (every script must have been answered without an error)."""
    dumps = callgrind.dumps(workdir)
    samples: list[Sample] = []
    counted: dict[str, Any] = {}
    for role in sorted(r for r in outputs if r.startswith("script_")):
        test = role.removeprefix("script_")
        # redis-cli prints one line per reply (GET: the value, SET: OK); an error reply is a word and a space
        # (ERR ..., WRONGTYPE ...), which no value (letters and digits) has.
        replies = outputs[role].splitlines()
        errors = [line for line in replies if " " in line or line.startswith("Could not connect")]
        if len(replies) != requests or errors:
            raise rig_contract.MeasurementInvalid(
                f"the {test.upper()} script: expected {requests} replies and no errors, redis-cli printed "
                f"{len(replies)} lines, {len(errors)} errors ({(errors or [''])[0][:80]})")
        if test not in dumps:
            raise ValueError(f"no Callgrind dump {test!r} in {workdir} (callgrind_control --dump={test} failed?)")
        samples.append({"metric": f"{test}_instructions_per_request", "value": dumps[test]["counted"] / requests,
                        "unit": "instructions/request", "t": 0.0})
        # Per function, for the comparison's per-function deltas (analysis/profiling/profiles.py): the whole dump's
        # self and inclusive instructions (timer work included: serverCron is named there as itself).
        counted[test] = {"instructions": dumps[test]["counted"], "timer_instructions": dumps[test]["timer"],
                         "requests": requests, "functions": dumps[test]["functions"]}
    if not samples:
        raise ValueError("measure=instructions: no request script ran")
    # Said in every such result: what the script does not use (it is one connection, one request at a time).
    return samples, {"instructions": counted,
                     "parameters_not_used": ["clients", "pipeline", "bench_threads", "warmup_requests"]}


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
             "numa_after", "benchmark", "zero_get", "script_get", "dump_get", "zero_set", "script_set", "dump_set")
    apart_roles = ("server",)

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
        "measure": rig_contract.Param(choices=("wall", "instructions"),
                                      doc="wall: redis-benchmark's rates and latencies; instructions: the server "
                                          "under Callgrind serving a fixed request script"),
        "tail_percentiles": rig_contract.Param(doc="the tails read from a cell's merged distributions, joined by "
                                               "+ (each needs 10 requests beyond it over the cell's runs)"),
    }

    def check(self, params: Mapping[str, str]) -> None:
        tests_of(params)
        tail_percentiles_of(params)
        if params.get("measure") == "instructions" and params.get("numa") == "pressured_migrated":
            raise ValueError("measure=instructions counts a fixed request script's instructions; "
                             "numa=pressured_migrated measures where pages are (use measure=wall)")
        if params.get("measure") == "instructions" and params.get("profile_launch", "extra") == "timed":
            # The timed launch runs the server under Callgrind; perf record attaches to the pid it is given,
            # which would be valgrind's, sampling the emulator rather than the server.
            raise ValueError("profile_launch=timed attaches perf record to the timed launch's server, which "
                             "measure=instructions runs under Callgrind (its per-function counts are this cell's "
                             "profile already): use profile_launch=extra, or measure=wall")

    def check_policy(self, params: Mapping[str, str], policy: rig_contract.PolicyView) -> None:
        """A tail the cell's runs cannot support is refused before anything runs: p99.99 needs 100,000
        requests over the runs of a cell (10 beyond it), with the count it needs."""
        if params.get("measure") == "instructions":
            return  # no latencies: counted instructions
        requests = int(params["requests"]) * policy.iterations * policy.repetitions
        for percent in tail_percentiles_of(params):
            needed = distributions.requests_needed(percent)
            if requests < needed:
                raise ValueError(
                    f"tail_percentiles asks for p{percent:g}, but {params['requests']} requests x "
                    f"{policy.iterations} iteration(s) x {policy.repetitions} runs = {requests:,} put fewer than "
                    f"{distributions.MIN_TAIL_REQUESTS} "
                    f"beyond it: it needs {needed:,} requests over the cell's runs (raise `requests` or "
                    "`repetitions`, or drop the percentile)")

    def can_iterate(self, params: Mapping[str, str]) -> bool:
        """Yes, redis-benchmark again against the same loaded server (bench_iterations.py), but not in a
        pressured_migrated cell, whose one measured run follows the migration."""
        return params.get("numa") != "pressured_migrated" and params.get("measure") != "instructions"

    def estimate_seconds(self, params: Mapping[str, str], policy: rig_contract.PolicyView) -> float | None:
        """Measured here (2 cores, 50 connections, 100-byte values): the data set written and piped at about
        100,000 keys/s, redis-benchmark at about 80,000 requests/s per test."""
        t = self.typed(params)
        runs = (policy.warmup_iterations + policy.iterations) if policy is not None else 1
        requests = (t["warmup_requests"] + t["requests"] * runs) * len(tests_of(params))
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

        counted = p["measure"] == "instructions"
        # measure=instructions: the same binary under Callgrind (a measuring wrapper, inside the placement),
        # its instructions (user space) counted between each zero and dump.
        under_callgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={workdir}/callgrind.out.%p", "--"]
        processes = [
            rig_contract.Process("server", program=server, server=True, ready_pattern=READY,
                                 ready_timeout_s=300 if counted else 30, ports=[port],
                                 fail_pattern=r"# (OOM|Can't|Fatal)", wrapper=under_callgrind if counted else [],
                                 env=COUNTED_ENV if counted else {}),
            rig_contract.Process("loader", program=cli + ["--pipe"], stdin=dataset, under_test=False, phase=0),
            rig_contract.Process("memory", program=cli + ["info", "memory"], under_test=False, phase=1),
        ]
        state = {"port": port, "cli": data["cli"], "io_threads": t["io_threads"], "home_node": home}
        if counted:
            scripts, inputs = counted_scripts(p, cli, inputs_dir)
            return rig_contract.Launch(processes + scripts, generated_inputs={"dataset.resp": digest, **inputs},
                                       state=dict(state, requests=t["requests"]))
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
        measured = bench(t["requests"])
        if policy is not None and (policy.iterations > 1 or policy.warmup_iterations > 0):
            measured = [sys.executable, BENCH_ITERATIONS, str(policy.warmup_iterations), str(policy.iterations),
                        "--"] + measured
        processes.append(rig_contract.Process("benchmark", program=measured, under_test=False,
                                              phase=6 if pressured else 3))
        return rig_contract.Launch(processes, generated_inputs={"dataset.resp": digest}, state=state)

    # A watched run's live value: redis-benchmark's progress lines ("SET: rps=77015.9 (overall: ...) ..."; each
    # ends in a carriage return, which the runner's line reader splits at too).
    live_metrics = {"requests_per_second": rig_contract.LiveMetric(
        "gauge", "redis-benchmark's rate over its last progress interval (the test it runs now)")}
    PROGRESS = re.compile(r"^\s*[A-Za-z_ -]+: rps=([0-9.]+) \(overall: ")

    def live(self, role: str, line: str) -> Mapping[str, float]:
        found = self.PROGRESS.match(line) if role.startswith("benchmark") or role == "warmup" else None
        return {"requests_per_second": float(found.group(1))} if found else {}

    def parse(self, outputs: Mapping[str, str], policy: rig_contract.PolicyView, workdir: str,
              launch: rig_contract.Launch) -> rig_contract.Parsed:
        loaded = re.search(r"errors: (\d+), replies: (\d+)", outputs.get("loader", ""))
        if not loaded:
            raise ValueError("redis-cli --pipe printed no 'errors: N, replies: N' line")
        if int(loaded.group(1)):
            raise rig_contract.MeasurementInvalid(f"loading the data set: {loaded.group(1)} errors")
        memory = parse_info(outputs["memory"])
        common = {"keys_loaded": int(loaded.group(2)), "mem_allocator": memory.get("mem_allocator"),
                  "used_memory_rss_after_load_bytes": int(memory.get("used_memory_rss", 0))}
        memory_sample: Sample = {"metric": "used_memory_after_load", "value": int(memory["used_memory"]) / 2**20,
                                 "unit": "MiB", "t": 0.0}
        if "benchmark" not in outputs:
            samples, counted = instruction_samples(outputs, workdir, launch.state["requests"])
            return rig_contract.Parsed([], samples + [memory_sample], observations={**common, **counted})
        warmup_runs, runs = parse_runs(outputs["benchmark"])
        measured, dists = measured_samples(runs, t=0.0)
        measured.append(memory_sample)
        warmup = samples_of(parse_benchmark(outputs["warmup"]), t=0.0) if outputs.get("warmup") else []
        for k, tests in enumerate(warmup_runs):
            warmup += [dict(s, metadata=dict(s.get("metadata", {}), iteration=k)) for s in samples_of(tests, t=0.0)]
        observations: dict[str, Any] = {}
        split: dict[str, dict[str, list[Sample]]] = {}
        if "numa_before" in outputs:
            observations.update(migration_observations(outputs, launch.state["home_node"]))
            split = locality_split(outputs, measured, observations["migration"])
        return rig_contract.Parsed(warmup, measured, split=split, observations={**observations, **common,
            # The whole printed distribution with its counts (the measured iterations' merged): what a cell's
            # tails are merged from (results before 2026-11-27 kept latency_percentiles_ms, percents only).
            "latency_distributions": {name: d.to_json() for name, d in dists.items()}})

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
