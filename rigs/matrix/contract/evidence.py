"""Proof that each knob took effect, read from the kernel and from the JVM itself.

Parsers (tested on real captures in testdata/captures) plus `verify`, which compares what a cell asked
for with what was read and returns the problems. A cell with any problem is stored as *invalid* with the
evidence, never as a measurement.
"""

import os
import re

from results import safeio
from rigs.matrix.contract import knobvalues
from rigs.host import capabilities


def parse_status(text):
    """/proc/PID/status (or a task's) to {key: value string}."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def parse_numa_maps(text):
    """/proc/PID/numa_maps summarised: pages per node and per policy, weighted to bytes by page size.

    Returns {"bytes_per_node": {node: bytes}, "bytes_per_policy": {policy: bytes}, "huge_bytes": bytes}.
    Policies are as the kernel prints them ("bind:0", "interleave:0-1", "weighted interleave:0-1",
    "prefer:0", "default"); mappings with no resident pages count nowhere.
    """
    per_node, per_policy = {}, {}
    huge = 0
    for line in text.splitlines():
        tokens = line.split()
        if len(tokens) < 2:
            continue
        policy_tokens = []
        rest = tokens[1:]
        while rest and "=" not in rest[0] and rest[0] not in ("heap", "stack", "huge"):
            policy_tokens.append(rest.pop(0))
        policy = " ".join(policy_tokens)
        fields = {}
        for tok in rest:
            key, sep, value = tok.partition("=")
            if sep:
                fields[key] = value
        page = int(fields.get("kernelpagesize_kB", "4")) * 1024
        nodes = {int(k[1:]): int(v) * page for k, v in fields.items() if re.fullmatch(r"N\d+", k)}
        total = sum(nodes.values())
        for node, b in nodes.items():
            per_node[node] = per_node.get(node, 0) + b
        if total:
            per_policy[policy] = per_policy.get(policy, 0) + total
        if "huge" in rest:
            huge += total
    return {"bytes_per_node": dict(sorted(per_node.items())), "bytes_per_policy": per_policy, "huge_bytes": huge}


def parse_vm_flags(text):
    """`jcmd PID VM.flags` to {flag: value}: booleans for -XX:+/-X, strings otherwise."""
    flags = {}
    for tok in text.split():
        m = re.fullmatch(r"-XX:([+-])(\w+)", tok)
        if m:
            flags[m.group(2)] = m.group(1) == "+"
            continue
        m = re.fullmatch(r"-XX:(\w+)=(\S*)", tok)
        if m:
            flags[m.group(1)] = m.group(2)
    return flags


def declared_flag_problems(declared, reported):
    """How the JVM's flags (parse_vm_flags) differ from a declared set's -XX options: [] when each took effect.
    A size (-XX:NewSize=256m) is compared in bytes, as the JVM reports it. Options other than -XX (-Xss1m)
    have no entry in VM.flags: the recorded command is their only evidence."""
    problems = []
    for option in declared:
        m = re.fullmatch(r"-XX:([+-])(\w+)", option)
        if m:
            if reported.get(m.group(2)) is not (m.group(1) == "+"):
                problems.append(f"asked for {option}, the JVM reports {m.group(2)}={reported.get(m.group(2), 'unset')}")
            continue
        m = re.fullmatch(r"-XX:(\w+)=(\S+)", option)
        if m:
            name, wanted = m.groups()
            try:
                wanted = str(knobvalues.parse_heap(wanted))
            except ValueError:
                pass
            if str(reported.get(name)) != wanted:
                problems.append(f"asked for {option}, the JVM reports {name}={reported.get(name, 'unset')}")
    return problems


def parse_thread_print(text):
    """`jcmd PID Thread.print` to [(java thread name, native tid)]. JDK 17 prints a name's quotes unescaped, so
    a thread named `w" nid=0x1 x` carries a nid of its choosing: the tid is the line's last nid= (the JVM's
    own, printed after the name), and ThreadPinner checks every tid is a task of the JVM before acting on it
    (issue 58, row 3)."""
    threads = []
    for m in re.finditer(r'^"(.*)".*\bnid=(0x[0-9a-fA-F]+|\d+)', text, re.M):
        nid = m.group(2)
        threads.append((m.group(1), int(nid, 16) if nid.startswith("0x") else int(nid)))
    return threads


def parse_smaps_rollup(text):
    """/proc/PID/smaps_rollup to {key: kB}: the same `Key:  N kB` lines as /proc/meminfo."""
    return capabilities.parse_meminfo(text)


def parse_class_load(text):
    """`-Xlog:class+load=info` lines to [(class name, source)], e.g. ("a.B", "file:/x/lib.jar")."""
    return re.findall(r"\[class,load\] (\S+) source: (.+?)\s*$", text, re.M)


def patched_class_problems(sources, manifest):
    """A patched cell must have loaded its patched classes, and only from the overlay jar; a bump's cell, the
    classes its manifest names from the new release's jar (`classes_jar`)."""
    bump = manifest.get("kind") == "bump"
    jar = manifest.get("classes_jar" if bump else "overlay_jar", "")
    what, where = ("bump's class", f"{manifest.get('to')}'s jar") if bump else ("patched class", "the overlay")
    loaded = {name: src for name, src in sources.items() if src is not None}
    if not loaded:
        return [f"none of the {what}es ({', '.join(sources) or 'none listed'}) was loaded: the "
                f"{'new release' if bump else 'patch'} was not exercised"]
    problems = [f"{what} {name} was loaded from {src}, not from {where} {jar}"
                for name, src in sorted(loaded.items()) if not jar or os.path.basename(src.split(":", 1)[-1]) != jar]
    wanted = manifest.get("classes_jar_sha256") if bump else None
    if wanted and not problems:  # a jar of that name is not the locked one until its bytes say so
        for path in sorted({src.split(":", 1)[-1] for src in loaded.values()}):
            try:
                found = safeio.sha256_of(path)
            except (OSError, safeio.InputError) as e:
                found = f"unreadable ({e})"
            if found != wanted:
                problems.append(f"{what}es were loaded from {path}, whose sha256 {found[:80]} is not {where} locked "
                                f"{jar} ({wanted[:12]}...)")
    return problems


def local_memory_ratio(numa_summary, cpu_node):
    """The share of a process's resident bytes on the node its CPUs are on (parse_numa_maps' summary);
    None when nothing is resident. The case study's before/after: 0.43 -> 0.98."""
    per_node = numa_summary.get("bytes_per_node", {})
    total = sum(per_node.values())
    if not total:
        return None
    return round(per_node.get(cpu_node, per_node.get(str(cpu_node), 0)) / total, 4)


def executable(proc_dir, program=None):
    """The program a native process runs, as the kernel has it: {"path", "sha256"} of /proc/PID/exe. When that
    is not `program` (the path it was launched with) but `program` is mapped into the process (a wrapper that
    loads it into its own executable, as Valgrind does), that file, with "runs_under": the executable."""
    try:
        path = os.readlink(os.path.join(proc_dir, "exe"))
        wanted = os.path.realpath(program) if program else None
        if wanted and wanted != path and wanted in mapped_files(proc_dir):
            return {"path": wanted, "sha256": safeio.sha256_of(wanted), "runs_under": path}
        return {"path": path, "sha256": safeio.sha256_of(os.path.join(proc_dir, "exe"))}
    except OSError as e:
        return {"error": str(e)}


def mapped_files(proc_dir):
    """The files mapped into a process (/proc/PID/maps' paths)."""
    with open(os.path.join(proc_dir, "maps")) as f:
        return {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}


def patched_binary_problems(executable, manifest):
    """A patched native cell must run a binary of its patched build (the manifest lists their sha256)."""
    built = manifest.get("binaries", {})
    if not built:
        return []
    if not executable or "sha256" not in executable:
        return [f"could not read which program the patched cell ran: {(executable or {}).get('error', 'no evidence')}"]
    if executable["sha256"] not in built.values():
        return [f"the process ran {executable['path']} (sha256 {executable['sha256'][:12]}), none of the patched "
                f"build's binaries ({', '.join(sorted(built))})"]
    return []


def large_page_failures(jvm_output):
    """Lines where the JVM says it fell back from large pages (it keeps UseLargePages on regardless)."""
    return [line.strip() for line in jvm_output.splitlines()
            if "Failed to reserve" in line or "UseLargePages disabled" in line
            or ("large pages" in line.lower() and "fail" in line.lower())]


def server_problems(evidence):
    """Servers that still held their ports after they were stopped (evidence key servers: {role: {ports_freed}}).
    Every axis proves itself in its own module (rigs/matrix/knobs/: jvm, pinning, hugepages, numa, container);
    rigs/matrix/knobs/process_evidence.verify runs them all with this."""
    problems = []
    for server_role, server in sorted(evidence.get("servers", {}).items()):
        held = [port for port, freed in server.get("ports_freed", {}).items() if not freed]
        if held:
            problems.append(f"server {server_role} still holds ports {held} after it was stopped")
    return problems
