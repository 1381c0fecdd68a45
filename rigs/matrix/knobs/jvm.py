"""The JVM's axes: gc, gc_opts and heap, in one place. Their values (GCS; gc_opts sets are the matrix's own,
heap sizes knobvalues.parse_heap's), the combinations no host can run (static_problems), the collector a JDK
accepts (selection, from the doctor's probes), the flags that apply them (flags), and their proof: the JVM's
own flags (jcmd VM.flags) show the collector, the heap and every -XX option of the cell's set (problems)."""

from rigs.host import jdks
from rigs.matrix.contract import evidence, knobvalues

GCS = ("serial", "parallel", "g1", "cms", "zgc", "shenandoah")
# The -XX flag each collector turns on, as VM.flags reports it.
GC_FLAG_NAMES = {"serial": "UseSerialGC", "parallel": "UseParallelGC", "g1": "UseG1GC",
                 "cms": "UseConcMarkSweepGC", "zgc": "UseZGC", "shenandoah": "UseShenandoahGC"}
CMS_LAST_JDK = 13  # CMS was removed in JDK 14


def static_problems(gc, gc_opts_name, gc_opts_flags, jdk_major):
    """Combinations that cannot work on any host: CMS on a JDK without it, a gc_opts set of CMS flags for
    another collector."""
    found = []
    if gc == "cms" and jdk_major is not None and jdk_major > CMS_LAST_JDK:
        found.append(f"gc=cms with jdk={jdk_major}: CMS was removed in JDK 14 (exclude it, or zip gc with jdk)")
    if any("CMS" in f for f in gc_opts_flags) and gc != "cms":
        found.append(f"gc_opts={gc_opts_name} has CMS flags but gc={gc}")
    return found


def selection(jdk, gc, jdk_name):
    """(the flags that select `gc` on this JDK, or None; why the JVM refuses it, or ""). jdk: the doctor's
    entry, whose `gcs` holds each collector's probe (absent when the probes were skipped: the plain flags,
    rigs/host/jdks.py GC_FLAGS, which the probes try)."""
    probe = (jdk.get("gcs") or {}).get(gc)
    if probe is not None and not probe["accepted"]:
        return None, f"gc={gc} on jdk={jdk_name} ({jdk['version']}): the JVM refuses it: {probe['evidence']}"
    return (probe["flags"] if probe and probe["flags"] is not None else jdks.GC_FLAGS[gc]), ""


def flags(gc_flags, gc_opts_flags, heap):
    """The JVM options of the three axes: the collector's, the cell's gc_opts set, the heap (-Xms = -Xmx)."""
    return list(gc_flags) + list(gc_opts_flags) + [f"-Xms{heap}", f"-Xmx{heap}"]


def problems(params, gc_opts_flags, ev):
    """What the JVM under test reports against the cell's gc, heap and gc_opts (ev: vm_flags parsed, or
    native_program for a program that is not a JVM: nothing to check)."""
    if ev.get("native_program"):
        return []  # a native program under test: the JVM knobs have nothing to act on (the rig's matrix omits them)
    reported = ev.get("vm_flags")
    if reported is None:
        return ["could not read the JVM's flags (jcmd VM.flags)"]
    found = []
    gc_flag = GC_FLAG_NAMES[params["gc"]]
    if reported.get(gc_flag) is not True:
        found.append(f"asked for gc={params['gc']} but the JVM does not report -XX:+{gc_flag}")
    heap = knobvalues.parse_heap(params["heap"])
    if str(reported.get("MaxHeapSize")) != str(heap):
        found.append(f"asked for heap={params['heap']} ({heap} bytes), JVM reports MaxHeapSize={reported.get('MaxHeapSize')}")
    return found + [f"gc_opts={params['gc_opts']}: {problem}"
                    for problem in evidence.declared_flag_problems(gc_opts_flags, reported)]
