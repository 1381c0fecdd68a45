"""The evidence of a cell's processes, read from the host: the process under test's JVM flags, placement,
memory and NUMA maps, container cgroups; where the other processes run; which jar each patched class came
from. Parsers of what is read live in evidence.py, and checks of it against the matrix too (verify: evidence.py's
checks and those of the axes with a module of their own, hugepages.py)."""

import os
import subprocess

from rigs.matrix.contract import evidence
from rigs.matrix.knobs import container, hostknobs, hugepages, jvm, numa, pinning


def verify(cell, matrix, ev, host_nodes):
    """Problems with the evidence for one cell ([] when every knob took effect): each axis' own proof, in the
    order a reader fixes them (executor, then the JVM's gc, heap and gc_opts, pinning, hugepages, numa), then
    servers that kept their ports. Evidence keys: each module's `problems` names those it reads."""
    p = cell.params
    return (container.problems(p.get("executor", "process"), ev)
            + jvm.problems(p, matrix.gc_opts.get(p["gc_opts"], []), ev)
            + pinning.problems(matrix.pinnings[p["pinning"]], ev) + hugepages.problems(p["hugepages"], ev)
            + numa.problems(p["numa"], ev) + evidence.server_problems(ev))


def placement(host_paths, running, pinning):
    """Where a process that is not under test runs: its CPU binding as asked and as the kernel has it
    (`host_paths`: hostknobs.HostPaths, its /proc)."""
    pid = ((jvm_pid(running.program_pid(), host_paths.proc) if running.process.is_jvm
            else running.program_pid()) or running.pid)
    try:
        with open(os.path.join(host_paths.proc, str(pid), "status")) as f:
            status = evidence.parse_status(f.read())
    except OSError:
        status = {}
    return {"pid": pid, "cpus_wanted": pinning.cpus_for(running.role, False),
            "process_status": {k: status[k] for k in ("Cpus_allowed_list", "Mems_allowed_list", "VmRSS",
                                                      "Threads") if k in status}}


def collect(host_paths, jcmd, pid, ev, at_s, program=()):
    """The evidence of the process under test `pid` at `at_s` into `ev` (`host_paths`: hostknobs.HostPaths):
    its JVM flags (jcmd), its status, NUMA maps and smaps, its container's cgroup, the host's THP mode; for a
    native process, the program it runs (`program`: [its path] as launched, found among its mappings when a
    wrapper such as Valgrind runs it inside its own executable)."""
    proc_dir = os.path.join(host_paths.proc, str(pid))
    role = ev.get("role")
    if role in ev.get("containers", {}):
        # Proof that the process under test ran in its container: its cgroup is the engine's.
        engine = ev["containers"][role].get("engine", "podman")
        marker = next(e.cgroup_marker for e in container.ENGINES.values() if e.program == engine)
        try:
            with open(os.path.join(proc_dir, "cgroup")) as f:
                ev["containers"][role]["cgroups"] = sorted({line.split(":", 2)[2].strip() for line in f
                                                            if marker in line})
        except OSError as e:
            ev["containers"][role]["cgroups_error"] = str(e)
    if jcmd:
        try:
            flags_out = subprocess.run([jcmd, str(pid), "VM.flags"], stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True, timeout=30).stdout
            parsed = evidence.parse_vm_flags(flags_out)
            if parsed:
                ev["vm_flags"] = parsed
        except (OSError, subprocess.TimeoutExpired) as e:
            ev["vm_flags_error"] = str(e)
    for name, key, parser in (("status", "process_status", evidence.parse_status),
                              ("numa_maps", "numa_maps", evidence.parse_numa_maps),
                              ("smaps_rollup", "smaps_rollup", evidence.parse_smaps_rollup)):
        try:
            with open(os.path.join(proc_dir, name)) as f:
                text = f.read()
        except OSError:
            continue
        if not text.strip() and key in ev:
            # The process ended between the look and the read (its maps read empty, as a busy host showed):
            # an empty read is no evidence, so the earlier capture stands.
            continue
        ev[key] = parser(text)
    if "numa_maps" in ev and "numa_nodes" in ev:
        ev["local_memory_ratio"] = evidence.local_memory_ratio(ev["numa_maps"], ev["numa_nodes"]["cpu_node"])
    if not jcmd and "executable" not in ev:
        ev["executable"] = evidence.executable(proc_dir, program[0] if program else None)
    status = ev.get("process_status", {})
    ev["process_status"] = {k: status[k] for k in ("Cpus_allowed_list", "Mems_allowed_list", "HugetlbPages",
                                                   "VmRSS", "Threads") if k in status}
    hugetlb = status.get("HugetlbPages", "0 kB").split()[0]
    ev["hugetlb_kb"] = int(hugetlb) if hugetlb.isdigit() else 0
    ev["thp_mode"] = hostknobs.HostKnobs(host_paths).thp_mode()
    ev["collected_at_s"] = round(at_s, 2)


def patched_class_sources(log_path, manifest):
    """{patched class: the jar it was loaded from, or None if never loaded}, from -Xlog:class+load."""
    found = {name: None for name in manifest.get("classes", [])}
    try:
        with open(log_path, errors="replace") as f:
            text = f.read()
    except OSError:
        return found
    for name, source in evidence.parse_class_load(text):
        if name in found:
            found[name] = source
    return found


def jvm_pid(root, proc="/proc"):
    """`root` if it runs java, else its first descendant that does (breadth first); None if none yet."""
    queue = [root]
    while queue:
        pid = queue.pop(0)
        try:
            with open(os.path.join(proc, str(pid), "comm")) as f:
                if f.read().strip() == "java":
                    return pid
            with open(os.path.join(proc, str(pid), "task", str(pid), "children")) as f:
                queue += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return None
