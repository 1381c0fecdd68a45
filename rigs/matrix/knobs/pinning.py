"""The pinning axis: which CPUs a cell's processes and Java threads run on, in one place. Its values are the
matrix's own [pinning.NAME] tables (spec.Pinning: the process under test's `cpus`, per-role `roles`, per-thread
`threads`); here: what a host must offer for one (host_skip_reason), the taskset prefix that binds a process
(taskset_argv; with a memory policy numa.policy_argv binds instead), the CPUs the runner may keep to itself
(spare_cpus), and the proof (problems): each process's and each pinned thread's Cpus_allowed as asked. Java
threads are pinned while the cell runs by threadpinning.ThreadPinner."""

import os

from rigs.host.cpuid import cpu_set


def host_skip_reason(pinning, jdk, caps, host_cpus, numa_value, no_jdk="none"):
    """Why this host cannot run `pinning` ("" when it can): CPUs it does not have, Java threads without a JVM or
    jcmd to find them, a binding without taskset (numactl binds when a memory policy is set)."""
    wanted = cpu_set(pinning.cpus) if pinning.cpus else set()
    for _, cpus in pinning.threads + pinning.roles:
        wanted |= cpu_set(cpus)
    missing = sorted(wanted - host_cpus)
    if missing:
        return f"pinning={pinning.name} uses CPUs {missing} this host does not have (CPUs {sorted(host_cpus)})"
    if pinning.threads and jdk is None:
        return f"pinning={pinning.name} pins Java threads; jdk={no_jdk} starts no JVM"
    if pinning.threads and not os.path.exists(os.path.join(jdk["java_home"], "bin", "jcmd")):
        return f"pinning={pinning.name} needs jcmd to find Java threads; {jdk['java_home']}/bin/jcmd is missing"
    if (pinning.cpus or pinning.roles) and numa_value == "default" and not caps.get("taskset", {}).get("available"):
        return "taskset is not installed (CPU binding)"
    return ""


def taskset_argv(cpus):
    """The prefix that binds a process to `cpus` ([] when unbound)."""
    return ["taskset", "-c", cpus] if cpus else []


def spare_cpus(pinning, processes, allowed):
    """The CPUs of `allowed` (the runner's own) that no process of the cell is bound to, when every process
    is bound to CPUs; else the empty set (an unbound process may run on any CPU: none is spare)."""
    bound = set()
    for p in processes:
        cpus = pinning.cpus_for(p.role, p.under_test)
        if not cpus:
            return set()
        bound |= cpu_set(cpus)
    return set(allowed) - bound


def problems(pinning, ev):
    """What the kernel shows against `pinning` (evidence keys: role, process_status, other_processes
    {role: {cpus_wanted, process_status}}, threads [{pattern, name, tid, wanted, cpus_allowed}])."""
    found = []
    wanted = pinning.cpus_for(ev.get("role"), True)
    if wanted:
        actual = (ev.get("process_status") or {}).get("Cpus_allowed_list")
        if actual is None or cpu_set(actual) != cpu_set(wanted):
            found.append(f"process CPU binding {wanted} not in effect: Cpus_allowed_list={actual}")
    for role, other in sorted(ev.get("other_processes", {}).items()):
        wanted = other.get("cpus_wanted")
        actual = other.get("process_status", {}).get("Cpus_allowed_list")
        if wanted and (actual is None or cpu_set(actual) != cpu_set(wanted)):
            found.append(f"{role}: CPU binding {wanted} not in effect: Cpus_allowed_list={actual}")
    for thread in ev.get("threads", []):
        if thread.get("cpus_allowed") is None:
            found.append(f"thread {thread['name']!r} (tid {thread['tid']}) vanished before it could be checked")
        elif cpu_set(thread["cpus_allowed"]) != cpu_set(thread["wanted"]):
            found.append(f"thread {thread['name']!r} (tid {thread['tid']}) allowed on {thread['cpus_allowed']}, "
                         f"wanted {thread['wanted']}")
    for pattern, _cpus in pinning.threads:
        if not any(t["pattern"] == pattern for t in ev.get("threads", [])):
            found.append(f"no Java thread matched {pattern!r}: nothing was pinned for it")
    return found
