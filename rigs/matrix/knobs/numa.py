"""The numa axis: the memory policy of the process under test, in one place. Its values (VALUES), what a host
must offer for each (host_skip_reason), which nodes a process's CPUs and memory go to (nodes_for), the numactl
arguments (policy_argv) and a container's --cpuset-mems (container_mems) that apply it, and its proof: the
process's resident memory carries the policy (problems, from numa_maps). Other processes of a cell keep the
default policy and get only their role's CPUs (the pinning axis)."""

import sys

from rigs.host.cpuid import cpu_set

VALUES = ("default", "bind_local", "bind_remote", "interleave", "weighted_interleave", "preferred",
          "pressured_migrated")
# Policies that only mean something with a second node to put memory on.
NEEDS_TWO_NODES = ("bind_remote", "interleave", "weighted_interleave", "pressured_migrated")
# The resident share that must carry the policy. It is inherited across exec, so nearly all resident memory
# carries it; 90 % leaves room for mappings shared with other processes (e.g. the CDS archive) that keep theirs.
MIN_SHARE = 0.9


def host_skip_reason(value, caps, nodes):
    """Why this host cannot run numa=`value` ("" when it can): caps is the doctor's capabilities, nodes its
    NUMA nodes ({id: set(cpus)})."""
    if value == "default":
        return ""
    if not caps.get("numactl", {}).get("available"):
        return f"numa={value} needs numactl, which is not installed"
    if value == "weighted_interleave" and not caps.get("weighted_interleave", {}).get("available"):
        return f"numa=weighted_interleave: {caps.get('weighted_interleave', {}).get('evidence', 'not probed')}"
    if value == "pressured_migrated":
        missing = [tool for tool in ("migratepages", "memhog") if not caps.get(tool, {}).get("available")]
        if missing:
            return f"numa=pressured_migrated needs {' and '.join(missing)} (Debian's numactl package)"
    if value in NEEDS_TWO_NODES and len(nodes) < 2:
        # Interleaving over one node is binding to it: measured, it would pass for an interleave result.
        return (f"numa={value} needs two NUMA nodes; this host has {len(nodes)} "
                f"({caps.get('numa_multi_node', {}).get('evidence', '')})")
    return ""


def nodes_for(value, cpu_text, host_nodes, under_test=True):
    """{"cpu_node", "mem_node"} of a process whose CPUs are `cpu_text` (None: unbound), from the host's nodes.
    bind_remote puts the memory of the process under test on the node farthest from its CPUs' node (any other
    node on 2-node hosts; None on a host with one)."""
    cpus = cpu_set(cpu_text) if cpu_text else None
    cpu_node = min(host_nodes)
    if cpus:
        for node, node_cpus in sorted(host_nodes.items()):
            if cpus & node_cpus:
                cpu_node = node
                break
    mem_node = cpu_node
    if under_test and value == "bind_remote":
        others = [n for n in sorted(host_nodes) if n != cpu_node]
        mem_node = others[-1] if others else None
    return {"cpu_node": cpu_node, "mem_node": mem_node}


def policy_argv(value, cpus, nodes, mempolicy_helper):
    """The numactl prefix that binds `cpus` (None: unbound) and sets policy `value` (not "default"), ending in
    "--"; weighted_interleave adds the helper that sets it (numactl 2.0.16 has no flag for it)."""
    argv = ["numactl"]
    if cpus:
        argv.append(f"--physcpubind={cpus}")
    elif value in ("bind_local", "bind_remote", "pressured_migrated"):
        argv.append(f"--cpunodebind={nodes['cpu_node']}")
    if value in ("bind_local", "bind_remote"):
        argv.append(f"--membind={nodes['mem_node']}")
    elif value == "interleave":
        argv.append("--interleave=all")
    elif value == "preferred":
        argv.append(f"--preferred={nodes['mem_node']}")
    argv.append("--")
    if value == "weighted_interleave":
        argv += [sys.executable, mempolicy_helper, "weighted-interleave", "all", "--"]
    return argv


def container_mems(value, nodes):
    """--cpuset-mems for the container of a process with policy `value`: the bound node under bind_local and
    bind_remote (the cgroup then enforces what numactl's --membind asks inside), else None (every node)."""
    return str(nodes["mem_node"]) if value in ("bind_local", "bind_remote") else None


def expected_policy_prefix(value, nodes):
    """The numa_maps policy text numactl's policy `value` produces (nodes: {"cpu_node", "mem_node"})."""
    mem = nodes.get("mem_node", 0)
    return {"bind_local": f"bind:{mem}", "bind_remote": f"bind:{mem}", "interleave": "interleave:",
            "weighted_interleave": "weighted interleave:", "preferred": f"prefer:{mem}",
            # CPUs bound, memory where the kernel puts it: the rig moves it (rigs/redis).
            "pressured_migrated": "default"}[value]


def problems(value, evidence):
    """What the process under test's numa_maps show against `value` (evidence keys numa_maps, numa_nodes)."""
    if value == "default":
        return []
    numa = evidence.get("numa_maps")
    if numa is None:
        return ["could not read numa_maps"]
    expected = expected_policy_prefix(value, evidence.get("numa_nodes", {}))
    by_policy = numa["bytes_per_policy"]
    total = sum(by_policy.values()) or 1
    share = sum(b for pol, b in by_policy.items() if pol.startswith(expected)) / total
    if share < MIN_SHARE:
        return [f"numa={value}: only {share:.0%} of resident memory has policy {expected}*; policies seen: {by_policy}"]
    return []
