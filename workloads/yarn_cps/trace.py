"""Traces for the Scheduler Load Simulator, generated from a few declared parameters, or read from a user file.

Same parameters -> byte-identical files (sorted keys, fixed layout, no clock, no unseeded randomness), so a
result can record the trace's sha256 and a rerun can prove it replayed the same load.

Formats:
  synth  SLS's SYNTH generator description (Hadoop 3.4.2 reads only this; 3.4.2 mis-parses SLS traces).
         The simulator samples jobs from it with `rand_seed`; every sample here is a constant, so the load is
         fixed: `jobs` jobs of `tasks_per_job` map containers of `container_duration_s` each.
  sls    SLS's own job format plus a nodes file (Hadoop 3.3.5). The same load, written out job by job.
  rumen  only accepted from a user (a Rumen job history trace, Hadoop 3.3.5).

Simulated hosts are named node<i> in racks rack<i % racks>, as SLS itself names SYNTH nodes; the hosts file
maps every one of them to 127.0.0.1 so the simulator's name lookups never reach a resolver.
"""

import argparse
import dataclasses
import hashlib
import json
import os
import sys
from results import safeio

FORMATS = ("synth", "sls")
USER_FORMATS = ("synth", "sls", "rumen")


class TraceError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class TraceParams:
    nodes: int
    racks: int
    jobs: int
    tasks_per_job: int
    container_duration_s: float
    container_memory_mb: int
    container_vcores: int
    queues: int
    submit_spread_s: int
    seed: int

    @classmethod
    def from_strings(cls, params):
        """Builds the parameters from a cell's string parameters; names the bad one on error."""
        values = {}
        for field in dataclasses.fields(cls):
            raw = params.get(field.name)
            if raw is None:
                raise TraceError(f"trace parameter `{field.name}` is missing")
            try:
                values[field.name] = field.type(raw) if field.type is not float else float(raw)
            except ValueError:
                raise TraceError(f"trace parameter `{field.name}` must be a number, not {raw!r}") from None
        p = cls(**values)
        p.validate()
        return p

    def validate(self):
        for name in ("nodes", "racks", "jobs", "tasks_per_job", "container_memory_mb", "container_vcores", "queues"):
            if getattr(self, name) < 1:
                raise TraceError(f"`{name}` must be at least 1, not {getattr(self, name)}")
        if self.racks > self.nodes:
            raise TraceError(f"`racks` ({self.racks}) cannot exceed `nodes` ({self.nodes})")
        if self.nodes % self.racks:
            # SYNTH takes nodes_per_rack, not a rack count: an uneven split would silently change `nodes`.
            raise TraceError(f"`nodes` ({self.nodes}) must be a multiple of `racks` ({self.racks})")
        if self.container_duration_s <= 0:
            raise TraceError("`container_duration_s` must be positive")
        if self.submit_spread_s < 1:
            raise TraceError("`submit_spread_s` must be at least 1")

    @property
    def containers(self):
        """Task containers in the trace (each job also runs one AM container)."""
        return self.jobs * self.tasks_per_job


def node_names(nodes):
    return [f"node{i}" for i in range(nodes)]


def queue_names(queues):
    return [f"q{i}" for i in range(queues)]


def _fraction(seed, label, i):
    """A reproducible number in [0, 1) from (seed, label, i): the same on every Python and platform."""
    digest = hashlib.sha256(f"{seed}:{label}:{i}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


def synth_trace(p):
    """The SYNTH description: one workload per queue, equally weighted, constant samples only.

    A task's `time` goes in milliseconds: SLS 3.4.2 hands it straight to the container's duration in ms
    (SynthJob -> TaskContainerDefinition.withDuration), whatever its documentation says.
    """
    duration_s = p.container_duration_s
    job_class = {
        "class_name": "cps",
        "user_name": "tunelab",
        "class_weight": 1.0,
        "type": "mapreduce",
        "deadline_factor": {"val": 10},
        "duration": {"val": round(duration_s * 1000)},
        "reservation": {"val": 0},
        "tasks": [{
            "type": "map",
            "priority": 20,
            "count": {"val": p.tasks_per_job},
            "time": {"val": round(duration_s * 1000)},
            "max_memory": {"val": p.container_memory_mb},
            "max_vcores": {"val": p.container_vcores},
        }],
    }
    workloads = [{
        "workload_name": f"cps-{q}",
        "workload_weight": 1.0,
        "queue_name": q,
        "job_classes": [job_class],
        # Submission times are uniform over [0, submit_spread_s).
        "time_distribution": [{"time": 0, "weight": 100}, {"time": p.submit_spread_s, "weight": 0}],
    } for q in queue_names(p.queues)]
    doc = {
        "description": f"tunelab yarn_cps: {p.jobs} jobs x {p.tasks_per_job} containers of {duration_s:g} s "
                       f"on {p.nodes} nodes",
        "num_nodes": p.nodes,
        "nodes_per_rack": p.nodes // p.racks,
        "num_jobs": p.jobs,
        "rand_seed": p.seed,
        "workloads": workloads,
    }
    return _dump(doc)


def sls_trace(p):
    """SLS job objects, one after another (the format is a stream of JSON objects, not an array)."""
    queues = queue_names(p.queues)
    spread_ms = p.submit_spread_s * 1000
    duration_ms = round(p.container_duration_s * 1000)
    chunks = []
    for i in range(p.jobs):
        start_ms = int(_fraction(p.seed, "submit", i) * spread_ms)
        job = {
            "am.type": "mapreduce",
            "job.id": f"job_{i}",
            "job.queue.name": queues[i % len(queues)],
            "job.start.ms": start_ms,
            "job.user": "tunelab",
            "job.tasks": [{
                "count": p.tasks_per_job,
                "duration.ms": duration_ms,
                "container.priority": 20,
                "container.type": "map",
            }],
        }
        chunks.append(_dump(job))
    return b"".join(chunks)


def sls_nodes(p):
    """The topology file: racks of node<i>, node i in rack i % racks."""
    racks = [{"rack": f"rack{r}", "nodes": []} for r in range(p.racks)]
    for i, name in enumerate(node_names(p.nodes)):
        racks[i % p.racks]["nodes"].append({"node": name})
    return b"".join(_dump(r) for r in racks)


HOSTS_PER_LINE = 50


def hosts_file(names, local_names=()):
    """A hosts file (for -Djdk.net.hosts.file) mapping every name to the loopback address.

    The JVM then resolves nothing else, so `local_names` must hold this machine's own name(s): the RM
    looks itself up at start-up. Names are packed HOSTS_PER_LINE to a line because the JDK's hosts-file
    resolver reads the whole file, line by line through a regex, on every lookup that misses its cache:
    one name per line made registering 20,000 simulated NodeManagers take ~70 s instead of ~28 s.
    """
    local = " ".join(["localhost"] + [n for n in local_names if n and n != "localhost"])
    names = list(names)
    lines = ["# generated by tunelab workloads/yarn_cps/trace.py: every simulated host is 127.0.0.1",
             f"127.0.0.1 {local}"]
    lines += ["127.0.0.1 " + " ".join(names[i:i + HOSTS_PER_LINE]) for i in range(0, len(names), HOSTS_PER_LINE)]
    return ("\n".join(lines) + "\n").encode()


def _dump(obj):
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


@dataclasses.dataclass
class TraceFiles:
    """What the simulator is given. Paths are absolute; sha256 maps file name -> digest."""
    format: str
    trace: str
    nodes: str  # "" when the trace carries its own topology (SYNTH)
    hosts: str
    expected_apps: int
    containers: int  # task containers, or -1 when a user trace does not say
    sha256: dict


def write_generated(p, fmt, folder, local_names=()):
    """Writes a generated trace (and nodes file for sls) plus the hosts file into `folder`."""
    if fmt not in FORMATS:
        raise TraceError(f"trace format must be one of {', '.join(FORMATS)} to generate, not {fmt!r}")
    os.makedirs(folder, exist_ok=True)
    files = {"trace.json": synth_trace(p) if fmt == "synth" else sls_trace(p),
             "hosts": hosts_file(node_names(p.nodes), local_names)}
    if fmt == "sls":
        files["nodes.json"] = sls_nodes(p)
    digests = {}
    for name, data in files.items():
        safeio.write_bytes(os.path.join(folder, name), data)
        digests[name] = hashlib.sha256(data).hexdigest()
    return TraceFiles(format=fmt, trace=os.path.join(folder, "trace.json"),
                      nodes=os.path.join(folder, "nodes.json") if fmt == "sls" else "",
                      hosts=os.path.join(folder, "hosts"), expected_apps=p.jobs, containers=p.containers,
                      sha256=digests)


def iter_json_objects(text, source):
    """The JSON objects of a stream of concatenated objects (SLS and Rumen traces are such streams)."""
    try:
        for obj, _ in safeio.json_stream(text):
            if not isinstance(obj, dict):
                raise TraceError(f"{source}: expected JSON objects, found {type(obj).__name__}")
            yield obj
    except safeio.InputError as e:
        raise TraceError(f"{source}: not a stream of JSON objects: {e}") from None


def _host_name(value):
    # "/rack3/node17" -> "node17"
    return str(value).rstrip("/").rsplit("/", 1)[-1]


def inspect_user_trace(fmt, trace_path, nodes_path=""):
    """Reads a user's trace: counts its applications and collects every host it names.

    Returns (expected_apps, containers or -1, sorted host names). Raises TraceError on anything the
    simulator would choke on hours later: unreadable files, no jobs, an SLS job without tasks.
    """
    if fmt not in USER_FORMATS:
        raise TraceError(f"trace format must be one of {', '.join(USER_FORMATS)}, not {fmt!r}")
    try:
        with open(trace_path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise TraceError(f"cannot read the trace {trace_path}: {e}") from None
    hosts = set()
    if fmt == "synth":
        objs = list(iter_json_objects(text, trace_path))
        if len(objs) != 1 or "num_jobs" not in objs[0] or "num_nodes" not in objs[0]:
            raise TraceError(f"{trace_path}: a SYNTH trace is one object with num_jobs and num_nodes")
        doc = objs[0]
        hosts.update(node_names(int(doc["num_nodes"])))
        apps, containers = int(doc["num_jobs"]), -1
    elif fmt == "sls":
        apps, containers = 0, 0
        for job in iter_json_objects(text, trace_path):
            if "num.nodes" in job and "job.tasks" not in job:
                continue  # the optional header object
            tasks = job.get("job.tasks")
            if not tasks:
                raise TraceError(f"{trace_path}: job {job.get('job.id', '?')} has no job.tasks")
            count = max(int(job.get("job.count", 1)), 1)
            apps += count
            for task in tasks:
                containers += count * int(task.get("count", 1))
                if task.get("container.host"):
                    hosts.add(_host_name(task["container.host"]))
    else:  # rumen
        apps, containers = 0, -1
        for job in iter_json_objects(text, trace_path):
            if "jobID" not in job:
                continue
            apps += 1
            for key in ("mapTasks", "reduceTasks", "otherTasks"):
                for task in job.get(key) or []:
                    for attempt in task.get("attempts") or []:
                        if attempt.get("hostName"):
                            hosts.add(_host_name(attempt["hostName"]))
    if nodes_path:
        try:
            with open(nodes_path, encoding="utf-8") as f:
                for rack in iter_json_objects(f.read(), nodes_path):
                    for node in rack.get("nodes", []):
                        hosts.add(_host_name(node["node"]))
        except OSError as e:
            raise TraceError(f"cannot read the nodes file {nodes_path}: {e}") from None
    if apps < 1:
        raise TraceError(f"{trace_path}: no applications found in this {fmt} trace")
    return apps, containers, sorted(hosts)


def use_user_trace(fmt, trace_path, nodes_path, folder, local_names=()):
    """Inspects a user trace and writes the hosts file for it; the trace itself is used in place."""
    apps, containers, hosts = inspect_user_trace(fmt, trace_path, nodes_path)
    os.makedirs(folder, exist_ok=True)
    hosts_data = hosts_file(hosts, local_names)
    safeio.write_bytes(os.path.join(folder, "hosts"), hosts_data)
    digests = {"hosts": hashlib.sha256(hosts_data).hexdigest()}
    for name, path in (("trace.json", trace_path), ("nodes.json", nodes_path)):
        if path:
            with open(path, "rb") as f:
                digests[name] = hashlib.sha256(f.read()).hexdigest()
    return TraceFiles(format=fmt, trace=os.path.abspath(trace_path),
                      nodes=os.path.abspath(nodes_path) if nodes_path else "",
                      hosts=os.path.join(folder, "hosts"), expected_apps=apps, containers=containers,
                      sha256=digests)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Write a SYNTH or SLS trace (plus nodes and hosts files) for the yarn_cps workload.",
        epilog="Same parameters, same bytes: the printed sha256 identifies the load.")
    parser.add_argument("--format", choices=FORMATS, default="synth",
                        help="synth for Hadoop 3.4.2, sls for 3.3.5 (default: synth)")
    parser.add_argument("--out", required=True, help="folder to write trace.json, hosts (and nodes.json)")
    defaults = {"nodes": 500, "racks": 10, "jobs": 20, "tasks_per_job": 1500, "container_duration_s": 5,
                "container_memory_mb": 4096, "container_vcores": 1, "queues": 1, "submit_spread_s": 5,
                "seed": 20261121}
    for name, default in defaults.items():
        parser.add_argument("--" + name.replace("_", "-"), default=str(default), help=f"(default: {default})")
    args = parser.parse_args(argv)
    try:
        p = TraceParams.from_strings({k: getattr(args, k) for k in defaults})
        files = write_generated(p, args.format, args.out)
    except (TraceError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for name, digest in sorted(files.sha256.items()):
        print(f"{digest}  {os.path.join(args.out, name)}")
    print(f"{files.expected_apps} applications, {files.containers} task containers, {p.nodes} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
