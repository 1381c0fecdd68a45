"""Reads what a host can do for benchmarking, each answer with the evidence it was read from.

Parsers are pure functions of the tools' text (tested on captures in testdata/). `probe_host` reads the
files under `root` (normally "/") and runs commands through `run`, so a fixture folder plus canned
command output stands in for a real machine in tests.
"""

import dataclasses
import hashlib
import os
import platform
import re
import shutil
import socket
import subprocess

from rigs.host.cpuid import (X86_VENDORS, emulation, format_cpu_list, hugepage_sizes_kb, page_size_kb, parse_cpu_list,
                              parse_cpuinfo, sysfs_topology)


@dataclasses.dataclass
class Capability:
    """Whether the host can do something, the value read, and where that was read from."""
    available: bool
    evidence: str
    value: object = None
    writable: bool = None

    def to_json(self):
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def parse_lscpu(text):
    """`lscpu` (classic and util-linux 2.38 indented layouts) to a dict of the fields the doctor uses."""
    fields = {}
    for line in text.splitlines():
        if ":" not in line or line.startswith("#"):  # a fixture's header
            continue
        key, value = line.split(":", 1)
        fields[key.strip()] = value.strip()

    def num(key):
        v = fields.get(key)
        return int(v) if v and v.isdigit() else None

    nodes = {}
    for key, value in fields.items():
        m = re.fullmatch(r"NUMA node(\d+) CPU\(s\)", key)
        if m:
            nodes[int(m.group(1))] = parse_cpu_list(value)
    return {
        "architecture": fields.get("Architecture"),
        "vendor": fields.get("Vendor ID"),
        "model_name": fields.get("Model name"),
        "logical_cpus": num("CPU(s)"),
        "online_cpus": parse_cpu_list(fields["On-line CPU(s) list"]) if "On-line CPU(s) list" in fields else None,
        "threads_per_core": num("Thread(s) per core"),
        "cores_per_socket": num("Core(s) per socket"),
        "sockets": num("Socket(s)"),
        "numa_nodes": num("NUMA node(s)"),
        "numa_node_cpus": nodes,
        "hypervisor": fields.get("Hypervisor vendor"),
        "flags": fields.get("Flags", "").split(),
        "max_mhz": float(fields["CPU max MHz"]) if fields.get("CPU max MHz", "").replace(".", "", 1).isdigit() else None,
    }


def parse_numactl_hardware(text):
    """`numactl --hardware` to {"nodes": {id: {"cpus", "size_mb", "free_mb"}}, "distances": {id: {id: d}}}."""
    nodes = {}
    distances = {}
    header = None
    in_distances = False
    for line in text.splitlines():
        m = re.fullmatch(r"node (\d+) (cpus|size|free):\s*(.*)$", line)
        if m:
            node = nodes.setdefault(int(m.group(1)), {"cpus": [], "size_mb": None, "free_mb": None})
            if m.group(2) == "cpus":
                node["cpus"] = [int(c) for c in m.group(3).split()]
            else:
                node[m.group(2) + "_mb"] = int(m.group(3).split()[0])
            continue
        if line.startswith("node distances:"):
            in_distances = True
            continue
        if in_distances:
            if line.startswith("node "):
                header = [int(x) for x in line.split()[1:]]
            elif header and re.match(r"\s*\d+:", line):
                src, rest = line.split(":", 1)
                distances[int(src)] = dict(zip(header, (int(x) for x in rest.split())))
    if not nodes:
        raise ValueError("no `node N cpus:` lines in numactl --hardware output")
    return {"nodes": nodes, "distances": distances}


def parse_meminfo(text):
    """/proc/meminfo or a node's meminfo to {key: kB or count}; 'Node 0 MemTotal' becomes 'MemTotal'."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(?:Node \d+ )?([A-Za-z0-9_()]+):\s+(\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def parse_thp_setting(text):
    """'always [madvise] never' -> 'madvise'."""
    m = re.search(r"\[(\w+)\]", text)
    if not m:
        raise ValueError(f"no [selected] value in {text.strip()!r}")
    return m.group(1)


def parse_perf_stat_csv(text):
    """`perf stat -x,` stderr to {event: count or None when `<not supported>`/`<not counted>`}."""
    events = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or line.startswith("#"):
            continue
        value, _unit, event = parts[0], parts[1], parts[2]
        if not event:
            continue
        try:
            events[event] = float(value)
        except ValueError:
            events[event] = None
    return events


def read_sysfs_numa(root):
    """NUMA nodes from sysfs: {id: {"cpus", "memory_total_kb", "memory_free_kb", "distances"}}."""
    base = os.path.join(root, "sys/devices/system/node")
    nodes = {}
    if not os.path.isdir(base):
        return nodes
    for entry in sorted(os.listdir(base)):
        m = re.fullmatch(r"node(\d+)", entry)
        if not m:
            continue
        node_dir = os.path.join(base, entry)
        node = {"cpus": parse_cpu_list(_read(os.path.join(node_dir, "cpulist")) or "")}
        meminfo = parse_meminfo(_read(os.path.join(node_dir, "meminfo")) or "")
        node["memory_total_kb"] = meminfo.get("MemTotal")
        node["memory_free_kb"] = meminfo.get("MemFree")
        distance = (_read(os.path.join(node_dir, "distance")) or "").split()
        node["distances"] = [int(d) for d in distance]
        nodes[int(m.group(1))] = node
    return nodes


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def run_command(argv, timeout=20):
    """Runs argv (no shell); returns (exit code, combined output), or (None, reason) if it cannot start."""
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        return proc.returncode, proc.stdout
    except FileNotFoundError:
        return None, f"{argv[0]} not found"
    except subprocess.TimeoutExpired:
        return None, f"{argv[0]} timed out after {timeout} s"


def _first_line(text):
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[0].strip() if lines else ""


def _error_line(text):
    """The line of a failed command's output that says why (else its first line)."""
    for line in (text or "").splitlines():
        if re.search(r"cannot|error|denied|not found|permission", line, re.I):
            return line.strip()
    return _first_line(text)


def probe_host(root="/", run=run_command, which=shutil.which):
    """The host part of the doctor report. Reads files under root; runs commands through run.

    Why one function: one pass over the host's files and tools, each answer filed with its evidence into the
    one report, in the order the doctor prints it; the parsers it calls are cpuid.py's and this module's."""
    path = lambda p: os.path.join(root, p)  # noqa: E731
    report = {}

    code, lscpu_text = run(["lscpu"])
    cpu = parse_lscpu(lscpu_text) if code == 0 else {}
    if not cpu.get("model_name"):  # no lscpu (a busybox guest, the rigs' image): the kernel's own words
        from_kernel = parse_cpuinfo(_read(path("proc/cpuinfo")) or "")
        online = _read(path("sys/devices/system/cpu/online"))
        if online:
            from_kernel["online_cpus"] = parse_cpu_list(online)
            sockets, threads = sysfs_topology(root, from_kernel["online_cpus"])
            from_kernel["sockets"] = from_kernel.get("sockets") or sockets
            from_kernel["threads_per_core"] = from_kernel.get("threads_per_core") or threads
            if from_kernel["sockets"] and from_kernel["threads_per_core"] and not from_kernel.get("cores_per_socket"):
                from_kernel["cores_per_socket"] = len(from_kernel["online_cpus"]) // (
                    from_kernel["sockets"] * from_kernel["threads_per_core"])
        cpu = {**from_kernel, **{k: v for k, v in cpu.items() if v}}
    elif (cpu.get("architecture") or "").startswith("aarch64"):
        # lscpu names aarch64 parts by its own table; the kernel's codes are the evidence, read them too.
        arm = parse_cpuinfo(_read(path("proc/cpuinfo")) or "")
        cpu.update({k: arm.get(k) for k in ("implementer", "part")})
    governor = _read(path("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"))
    max_khz = (_read(path("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")) or "").strip()
    emulated, emulated_evidence = emulation(cpu, _read(path("proc/cmdline")))
    page_kb, page_evidence = page_size_kb(root, run)
    report["cpu"] = {
        "model_name": cpu.get("model_name"),
        "vendor": cpu.get("vendor"),
        "architecture": cpu.get("architecture") or platform.machine(),
        "sockets": cpu.get("sockets"),
        "cores_per_socket": cpu.get("cores_per_socket"),
        "threads_per_core": cpu.get("threads_per_core"),
        "logical_cpus": cpu.get("logical_cpus"),
        "online_cpus": format_cpu_list(cpu["online_cpus"]) if cpu.get("online_cpus") else None,
        "hypervisor": cpu.get("hypervisor"),
        "implementer": cpu.get("implementer"),
        "part": cpu.get("part"),
        "vendor_name": X86_VENDORS.get(cpu.get("vendor"), cpu.get("vendor")),
        "smt": (cpu.get("threads_per_core") or 1) > 1,
        "max_mhz": cpu.get("max_mhz") or (int(max_khz) / 1000 if max_khz.isdigit() else None),
        "page_size_kb": page_kb,
        "page_size_evidence": page_evidence,
        # An emulated host (QEMU's TCG) gives functional evidence, never timing.
        "emulated": emulated,
        "emulated_evidence": emulated_evidence,
        "frequency_governor": governor.strip() if governor else None,
        "evidence": "lscpu" if code == 0 else f"/proc/cpuinfo (lscpu failed: {_first_line(lscpu_text)})",
    }
    if not governor:
        report["cpu"]["frequency_governor_evidence"] = "no cpufreq in sysfs (typical of VMs)"

    sys_nodes = read_sysfs_numa(root)
    code, numactl_text = run(["numactl", "--hardware"])
    numactl = parse_numactl_hardware(numactl_text) if code == 0 else None
    nodes = []
    for node_id in sorted(sys_nodes or (numactl or {}).get("nodes", {})):
        sys_node = sys_nodes.get(node_id, {})
        num_node = (numactl or {}).get("nodes", {}).get(node_id, {})
        nodes.append({
            "id": node_id,
            "cpus": format_cpu_list(sys_node.get("cpus") or num_node.get("cpus") or []),
            "memory_total_kb": sys_node.get("memory_total_kb") or (
                num_node["size_mb"] * 1024 if num_node.get("size_mb") is not None else None),
            "memory_free_kb": sys_node.get("memory_free_kb") or (
                num_node["free_mb"] * 1024 if num_node.get("free_mb") is not None else None),
            "distances": sys_node.get("distances") or [
                d for _, d in sorted((numactl or {}).get("distances", {}).get(node_id, {}).items())],
        })
    evidence = []
    if sys_nodes:
        evidence.append("/sys/devices/system/node")
    evidence.append("numactl --hardware" if numactl else f"numactl --hardware unavailable: {_first_line(numactl_text)}")
    report["numa"] = {"nodes": nodes, "evidence": "; ".join(evidence),
                      "note": "per-node MemTotal can be unreliable in VMs with lazily hot-plugged memory"}

    meminfo = parse_meminfo(_read(path("proc/meminfo")) or "")
    report["memory"] = {
        "total_kb": meminfo.get("MemTotal"),
        "available_kb": meminfo.get("MemAvailable"),
        "swap_total_kb": meminfo.get("SwapTotal"),
        "hugepage_size_kb": meminfo.get("Hugepagesize"),
        "hugepage_sizes_kb": hugepage_sizes_kb(root),
        "hugepages_total": meminfo.get("HugePages_Total"),
        "hugepages_free": meminfo.get("HugePages_Free"),
        "evidence": "/proc/meminfo" if meminfo else "/proc/meminfo unreadable",
    }

    caps = {}
    thp_path = path("sys/kernel/mm/transparent_hugepage/enabled")
    thp_text = _read(thp_path)
    if thp_text:
        caps["transparent_hugepages"] = Capability(
            True, f"/sys/kernel/mm/transparent_hugepage/enabled: {thp_text.strip()}",
            value=parse_thp_setting(thp_text), writable=os.access(thp_path, os.W_OK))
    else:
        caps["transparent_hugepages"] = Capability(False, "no /sys/kernel/mm/transparent_hugepage/enabled")
    nr_path = path("proc/sys/vm/nr_hugepages")
    nr_text = _read(nr_path)
    caps["explicit_hugepages"] = Capability(
        bool(nr_text is not None and meminfo.get("Hugepagesize")),
        f"/proc/sys/vm/nr_hugepages = {nr_text.strip()}; Hugepagesize {meminfo.get('Hugepagesize')} kB"
        if nr_text is not None else "no /proc/sys/vm/nr_hugepages",
        value=int(nr_text) if nr_text and nr_text.strip().isdigit() else None,
        writable=os.access(nr_path, os.W_OK) if nr_text is not None else None)

    caps["numa_multi_node"] = Capability(
        len(nodes) > 1, f"{len(nodes)} NUMA node(s) ({report['numa']['evidence']})", value=len(nodes))

    code, perf_text = run(["perf", "stat", "-x,", "-e", "instructions,cycles,task-clock", "true"])
    if code is None:
        caps["perf_hardware_counters"] = Capability(False, perf_text)
        caps["perf_software_events"] = Capability(False, perf_text)
    else:
        events = parse_perf_stat_csv(perf_text)
        hw = {e: events.get(e) for e in ("instructions", "cycles")}
        caps["perf_hardware_counters"] = Capability(
            all(v is not None for v in hw.values()) and bool(hw),
            "perf stat -e instructions,cycles: " + ", ".join(
                f"{e}={'<not supported>' if v is None else int(v)}" for e, v in hw.items()))
        caps["perf_software_events"] = Capability(
            events.get("task-clock") is not None, f"perf stat -e task-clock: {events.get('task-clock')}")

    weights = path("sys/kernel/mm/mempolicy/weighted_interleave")
    caps["weighted_interleave"] = Capability(
        os.path.isdir(weights), f"{weights}: " + ("present (kernel >= 6.9)" if os.path.isdir(weights) else
                                                 "missing: this kernel has no weighted interleave (needs 6.9)"))

    for tool in ("numactl", "taskset", "migratepages", "numastat", "memhog", "jcmd", "valgrind", "callgrind_control"):
        found = which(tool)
        caps[tool] = Capability(bool(found), f"which {tool}: {found or 'not found'}", value=found)

    docker = which("docker")
    if not docker:
        caps["docker_engine"] = Capability(False, "no docker client on PATH")
    else:
        code, info = run(["docker", "info", "--format", "{{.ServerVersion}}"])
        caps["docker_engine"] = Capability(
            code == 0, f"docker info: {(_first_line(info) if code == 0 else _error_line(info)) or 'exit ' + str(code)}",
            value=_first_line(info) if code == 0 else None)

    report["capabilities"] = {name: cap.to_json() for name, cap in caps.items()}

    uname = platform.uname()
    loadavg = (_read(path("proc/loadavg")) or "").split()
    report["host"] = {
        "hostname": socket.gethostname(),
        "host_id": host_id(root),
        "kernel": f"{uname.system} {uname.release}",
        "os": _os_release(root),
        "load_average": [float(x) for x in loadavg[:3]] if loadavg else None,
    }
    return report


def host_id(root="/"):
    """A stable, non-reversible id of the machine (from /etc/machine-id, else the hostname)."""
    seed = (_read(os.path.join(root, "etc/machine-id")) or socket.gethostname()).strip()
    return socket.gethostname().split(".")[0] + "-" + hashlib.sha256(seed.encode()).hexdigest()[:8]


def _os_release(root):
    text = _read(os.path.join(root, "etc/os-release")) or ""
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.M)
    return m.group(1) if m else None
