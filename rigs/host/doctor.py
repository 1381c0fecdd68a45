"""tunelab doctor: what this host and its JDKs can do for a benchmark, and how each answer was read.

  ./bazelw run //tools:doctor                  human-readable report
  ./bazelw run //tools:doctor -- --json        the same as JSON on stdout
  ./bazelw run //tools:doctor -- --json out.json
Every result file later embeds this report as provenance.
"""

import argparse
import datetime
import json
import os
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rigs.host import capabilities
from rigs.host import jdks
from rigs.host import terminal
from results import safeio

REPORT_SCHEMA = "tunelab.doctor/1"


def build_report(pinned_jdks, declared_jdks, probe_gcs=True, root="/"):
    report = {"schema": REPORT_SCHEMA,
              "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    report.update(capabilities.probe_host(root=root))
    # Without the collectors' probes (--no-gc-probes) none is started: they were run and thrown away before.
    found = jdks.discover(pinned=pinned_jdks, declared=declared_jdks, run_probes=True, probe_gcs=probe_gcs)
    report["jdks"] = [j.to_json() for j in found]
    return report


def _size_kb(kb):
    return f"{kb // 1048576} GiB" if kb >= 1048576 else f"{kb // 1024} MiB" if kb >= 1024 else f"{kb} KiB"


def render(report, console):
    host = report["host"]
    cpu = report["cpu"]
    console.print(f"[bold]tunelab doctor[/bold]  {host['hostname']} ({host['host_id']})  {host['os']}  {host['kernel']}")
    console.print(f"load average: {host['load_average']}")

    t = Table(title="CPU and memory", show_header=False)
    arch = cpu["architecture"] + (", emulated" if cpu.get("emulated") else "")
    codes = f", implementer {cpu['implementer']} part {cpu['part']}" if cpu.get("implementer") else ""
    t.add_row("model", f"{cpu['model_name']} ({cpu['vendor']}{codes}; {arch})")
    if cpu.get("emulated"):
        t.add_row("emulated", f"[yellow]{cpu['emulated_evidence']}: mechanics, not speed[/yellow]")
    t.add_row("topology", f"{cpu['sockets']} socket(s) x {cpu['cores_per_socket']} core(s) x "
                          f"{cpu['threads_per_core']} thread(s) = {cpu['logical_cpus']} CPUs (online {cpu['online_cpus']})")
    t.add_row("hypervisor", str(cpu["hypervisor"] or "none reported"))
    mem = report["memory"]
    sizes = ", ".join(_size_kb(k) for k in mem.get("hugepage_sizes_kb") or []) or "none"
    t.add_row("pages", f"{cpu.get('page_size_kb')} KiB base ({cpu.get('page_size_evidence')}); hugepages "
                       f"{_size_kb(mem['hugepage_size_kb']) if mem.get('hugepage_size_kb') else 'none'} by default, "
                       f"offered: {sizes}")
    t.add_row("frequency governor", str(cpu["frequency_governor"] or cpu.get("frequency_governor_evidence")))
    t.add_row("memory", f"{(mem['total_kb'] or 0) / 1048576:.1f} GiB total, "
                        f"{(mem['available_kb'] or 0) / 1048576:.1f} GiB available, swap {mem['swap_total_kb']} kB")
    t.add_row("evidence", f"{cpu['evidence']}; {mem['evidence']}")
    console.print(t)

    t = Table(title=f"NUMA ({report['numa']['evidence']})")
    for col in ("node", "cpus", "memory total", "memory free", "distances"):
        t.add_column(col)
    for n in report["numa"]["nodes"]:
        t.add_row(str(n["id"]), n["cpus"], _gib(n["memory_total_kb"]), _gib(n["memory_free_kb"]),
                  " ".join(map(str, n["distances"])))
    console.print(t)

    t = Table(title="Capabilities")
    for col in ("capability", "available", "value", "evidence"):
        t.add_column(col, overflow="fold")
    for name, cap in report["capabilities"].items():
        value = cap.get("value")
        if "writable" in cap:
            value = f"{value} ({'writable' if cap['writable'] else 'read-only'})"
        t.add_row(name, "[green]yes[/green]" if cap["available"] else "[red]no[/red]",
                  "" if value is None else escape(str(value)), escape(cap["evidence"]))
    console.print(t)

    t = Table(title="JDKs")
    for col in ("name", "source", "version", "vendor", "GCs accepted", "path"):
        t.add_column(col, overflow="fold")
    for j in report["jdks"]:
        if j["error"]:
            t.add_row(j["name"], j["source"], "[red]error[/red]", j["error"], "", j["java_home"])
            continue
        gcs = ", ".join(gc for gc, r in j["gcs"].items() if r["accepted"]) or "(not probed)"
        where = "@" + j["name"] if j["source"] == "pinned" else j["java_home"]
        t.add_row(j["name"], j["source"], j["version"], j["vendor"], gcs, where)
    console.print(t)


def _gib(kb):
    return "?" if kb is None else f"{kb / 1048576:.1f} GiB"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", nargs="?", const="-", metavar="PATH",
                        help="write the report as JSON to PATH (default: stdout)")
    parser.add_argument("--jdk", action="append", default=[], metavar="NAME=PATH",
                        help="declare a JDK (java_home or its bin/java), e.g. jdk8=/opt/jdk8; repeatable. "
                             "Also read from TUNELAB_JDKS=NAME=PATH:NAME=PATH")
    parser.add_argument("--pinned", action="append", default=[], metavar="NAME=PATH",
                        help="a pinned runtime's java (default: the @jdkNN runtimes this target carries)")
    parser.add_argument("--no-gc-probes", action="store_true", help="skip starting each JDK once per GC")
    args = parser.parse_args(argv)

    # This file is <runfiles>/tunelab/rigs/host/doctor.py.
    runfiles = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    pinned = [_runfile_spec(spec) for spec in args.pinned] or jdks.pinned_in_runfiles(runfiles)
    try:
        report = build_report(pinned, jdks.declared_from_env() + args.jdk, probe_gcs=not args.no_gc_probes)
    except ValueError as e:
        sys.exit(f"doctor: {e}")
    if args.json:
        text = json.dumps(report, indent=2, sort_keys=False) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            out = args.json
            if not os.path.isabs(out):
                out = os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()), out)
            safeio.write_text(out, text)
            print(f"wrote {out}", file=sys.stderr)
        return
    render(report, Console(soft_wrap=True, width=terminal.width()))


def _runfile_spec(spec):
    """NAME=runfiles-relative path -> NAME=real path (bazel run's cwd is the runfiles tree)."""
    name, _, path = spec.partition("=")
    return f"{name}={os.path.realpath(path)}"


if __name__ == "__main__":
    main()
