"""Host-dependent planning: which JDK each cell runs on, and which cells this host cannot express.

Errors (a JDK that is not installed, a GC the JDK refuses) stop the run before anything starts.
Cells the host cannot express (bind_remote on one NUMA node, hugepages it cannot reserve, CPUs it does
not have) are skipped with the reason; they are never run in some other form.
"""

import dataclasses
import os

from rigs.matrix.contract import knobvalues
from rigs.matrix.knobs import container, hugepages, jvm, numa, pinning
from rigs.matrix.planning import spec
from rigs.host.cpuid import cpu_set


@dataclasses.dataclass
class PlannedCell:
    cell: spec.Cell
    jdk: dict = None  # the doctor's record of the JDK
    gc_flags: list = None
    skip_reason: str = ""


def resolve_jdk(name, jdks):
    """Finds the JDK an axis value names: 11/17/21 -> pinned jdkNN; else a host or declared JDK by name."""
    usable = [j for j in jdks if not j.get("error")]
    by_name = {j["name"]: j for j in usable}
    major = knobvalues.jdk_major(name)
    if major is not None and f"jdk{major}" in by_name:
        return by_name[f"jdk{major}"]
    if name in by_name:
        return by_name[name]
    known = ", ".join(sorted(by_name)) or "none"
    broken = [f"{j['name']} ({j['error']})" for j in jdks if j.get("error")]
    hint = f"; unusable: {'; '.join(broken)}" if broken else ""
    raise spec.SpecError(
        f"jdk={name}: not installed. Known JDKs: {known}{hint}. Declare one with --jdk NAME=PATH or "
        "TUNELAB_JDKS=NAME=PATH (e.g. a JDK 8 no registry serves).")


def host_nodes(report):
    return {n["id"]: cpu_set(n["cpus"]) for n in report["numa"]["nodes"]} or {0: set(range(os.cpu_count()))}


def plan(matrix, report, runner_image=""):
    """PlannedCell per cell; raises SpecError for problems no host could run past. runner_image: the rigs'
    image this runner itself runs in (RunEnvironment.runner_image), if it does."""
    caps = report["capabilities"]
    nodes = host_nodes(report)
    host_cpus = set().union(*nodes.values())
    planned = []
    errors = []
    for cell in matrix.cells:
        p = cell.params
        if p["jdk"] == spec.NO_JDK:
            pc = PlannedCell(cell, None, [])
            pc.skip_reason = host_skip_reason(matrix, cell, caps, nodes, host_cpus, None,
                                              report.get("memory", {}).get("available_kb"),
                                              report.get("memory", {}).get("hugepage_size_kb"), runner_image)
            planned.append(pc)
            continue
        try:
            jdk = resolve_jdk(p["jdk"], report["jdks"])
        except spec.SpecError as e:
            # A pinned JDK this machine has no build of (JDK 11 on aarch64): the cell is skipped, with why.
            major = knobvalues.jdk_major(p["jdk"])
            why = (report.get("jdks_unavailable") or {}).get(f"jdk{major}") if major is not None else None
            if why:
                pc = PlannedCell(cell, None, [])
                pc.skip_reason = f"jdk={p['jdk']}: {why}"
                planned.append(pc)
            else:
                errors.append(str(e))
            continue
        gc_flags, refused = jvm.selection(jdk, p["gc"], p["jdk"])
        if refused:
            errors.append(refused)
            continue
        pc = PlannedCell(cell, jdk, gc_flags)
        pc.skip_reason = host_skip_reason(matrix, cell, caps, nodes, host_cpus, jdk,
                                          report.get("memory", {}).get("available_kb"),
                                          report.get("memory", {}).get("hugepage_size_kb"), runner_image)
        planned.append(pc)
    if errors:
        raise spec.SpecError("cannot run this matrix:\n  " + "\n  ".join(sorted(set(errors))))
    return planned


def host_skip_reason(matrix, cell, caps, nodes, host_cpus, jdk, memory_available_kb=None, hugepage_kb=None,
                     runner_image=""):
    p = cell.params
    reason = container.host_skip_reason(p.get("executor"), p["numa"], runner_image)
    if reason:
        return reason
    if p.get("measure") == "instructions":
        missing = [t for t in ("valgrind", "callgrind_control") if not caps.get(t, {}).get("available")]
        if missing:
            return f"measure=instructions needs {' and '.join(missing)} (Debian's valgrind package)"
    return (pinning.host_skip_reason(matrix.pinnings[p["pinning"]], jdk, caps, host_cpus, p["numa"], spec.NO_JDK)
            or numa.host_skip_reason(p["numa"], caps, nodes)
            or hugepages.host_skip_reason(p["hugepages"], p["heap"], caps, hugepage_kb, memory_available_kb))
