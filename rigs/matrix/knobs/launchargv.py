"""A cell's launch as argument lists: the JVM flags its knobs imply (GC, heap, hugepages) and the wrapper that
places a process (taskset/numactl, or the memory-policy helper mempolicy.py) on its role's CPUs and NUMA nodes;
the container engines' cpuset for the same. Everything shells out with argument lists, never a shell."""

import os

from rigs.matrix.knobs import hugepages, jvm, numa
from rigs.matrix.knobs import pinning as pinning_axis

MEMPOLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mempolicy.py")


def jvm_flags(cell, matrix, gc_probe_flags, hugepage_bytes=hugepages.DEFAULT_PAGE_BYTES):
    """The JVM options a cell implies. gc_probe_flags: the flags the doctor found select that GC on this JDK;
    hugepage_bytes: the host's explicit hugepage size."""
    p = cell.params
    flags = jvm.flags(gc_probe_flags, matrix.gc_opts[p["gc_opts"]], p["heap"])
    flags += hugepages.jvm_flags(p["hugepages"], hugepage_bytes)
    # Sandboxes and shared /tmp make hsperfdata files collide; jcmd attaches without them.
    flags += ["-XX:-UsePerfData"]
    return flags


def numa_nodes_for(cell, matrix, host_nodes, role=None, under_test=True):
    """{"cpu_node", "mem_node"} of a process for its NUMA policy (numa.nodes_for), from its role's CPUs."""
    pinning = matrix.pinnings[cell.params["pinning"]]
    return numa.nodes_for(cell.params["numa"], pinning.cpus_for(role, under_test), host_nodes, under_test)


def wrapper_argv(cell, matrix, host_nodes, role=None, under_test=True):
    """numactl/taskset prefix for a process's CPU binding and memory policy ([] when neither is asked).
    The NUMA policy is the process under test's; every process gets its role's CPUs."""
    pinning = matrix.pinnings[cell.params["pinning"]]
    cpus = pinning.cpus_for(role, under_test)
    policy = cell.params["numa"] if under_test else "default"
    nodes = numa_nodes_for(cell, matrix, host_nodes, role, under_test)
    if policy == "default":
        return pinning_axis.taskset_argv(cpus)
    return numa.policy_argv(policy, cpus, nodes, MEMPOLICY)


def spare_cpus(cell, matrix, processes, allowed):
    """The CPUs of `allowed` (the runner's own) no process of the cell is bound to (pinning.spare_cpus)."""
    return pinning_axis.spare_cpus(matrix.pinnings[cell.params["pinning"]], processes, allowed)


def container_mems(cell, matrix, host_nodes, role=None, under_test=True):
    """--cpuset-mems for a process's container: the bound memory node under numa=bind_local/bind_remote (the
    cgroup then enforces what numactl's --membind asks inside), else None (every node, as the policy needs)."""
    policy = cell.params["numa"] if under_test else "default"
    return numa.container_mems(policy, numa_nodes_for(cell, matrix, host_nodes, role, under_test))
