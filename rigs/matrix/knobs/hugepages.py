"""The hugepages axis in one place: its values, what a host must offer for each (the plan's skip reason), the
JVM flags each implies, the host settings each needs (THP mode, the explicit pool: written and restored by
hostknobs.HostKnobs through its journal), and what proves it took effect in the process under test.

off / thp_always / thp_madvise: the kernel's transparent hugepage mode never / always / madvise (madvise with
-XX:+UseTransparentHugePages); explicit: a hugetlb pool that holds the heap and the code cache, the JVM on
-XX:+UseLargePages; host: THP and the pool left as the host has them (only recorded), for hosts the harness
must not change and fleet hosts that share one kernel, where a host-wide setting would race."""

from rigs.matrix.contract import knobvalues

VALUES = ("off", "thp_always", "thp_madvise", "explicit", "host")
# The THP mode each THP value needs (sysfs transparent_hugepage/enabled).
THP_MODE = {"off": "never", "thp_always": "always", "thp_madvise": "madvise"}
# The explicit hugepage size when a host does not say (x86-64, and aarch64 with 4 KiB base pages); aarch64
# kernels built with 64 KiB pages have 512 MiB ones: the host's default size (Hugepagesize) is used.
DEFAULT_PAGE_BYTES = 2 << 20
# Explicit hugepages must hold the heap and the JIT's code cache (240 MiB reserved by default, also on
# large pages); the JVM silently falls back to small pages when they do not fit.
MARGIN_BYTES = 256 << 20


def pages_for_heap(heap, page_bytes=DEFAULT_PAGE_BYTES):
    """Explicit hugepages a JVM with this heap ("512m") needs, the code cache's margin included."""
    return -(-(knobvalues.parse_heap(heap) + MARGIN_BYTES) // page_bytes)


def host_page_bytes(report):
    """The host's default hugepage size (the doctor's Hugepagesize), else 2 MiB."""
    kb = (report or {}).get("memory", {}).get("hugepage_size_kb")
    return kb * 1024 if kb else DEFAULT_PAGE_BYTES


def gc_opts_problem(value, gc_opts_name, gc_opts_flags):
    """A matrix error when a gc_opts set asks for large pages the axis would not reserve, else ""."""
    if any("UseLargePages" in f for f in gc_opts_flags) and value != "explicit":
        return (f"gc_opts={gc_opts_name} asks for large pages with hugepages={value}: no hugepages would be "
                "reserved; use the hugepages axis (explicit) instead of raw flags")
    return ""


def host_skip_reason(value, heap, caps, page_kb=None, memory_available_kb=None):
    """Why this host cannot run `value` (the doctor's capabilities), or "" when it can."""
    if value in THP_MODE:
        thp = caps.get("transparent_hugepages", {})
        wanted = THP_MODE[value]
        if not thp.get("available"):
            return f"hugepages={value}: the kernel has no transparent hugepage control"
        if thp.get("value") != wanted and not thp.get("writable"):
            return (f"hugepages={value} needs THP mode {wanted!r}; it is {thp.get('value')!r} and "
                    f"{thp.get('evidence', 'the setting')} is not writable (run as root)")
    if value == "explicit":
        explicit = caps.get("explicit_hugepages", {})
        if not explicit.get("available"):
            return f"hugepages=explicit: no hugetlb support ({explicit.get('evidence')})"
        page_kb = page_kb or DEFAULT_PAGE_BYTES // 1024
        needed = pages_for_heap(heap, page_kb * 1024)
        if not explicit.get("writable") and (explicit.get("value") or 0) < needed:
            return (f"hugepages=explicit needs {needed} {page_kb // 1024} MiB pages for heap {heap}; "
                    f"nr_hugepages is {explicit.get('value')} and not writable (run as root)")
        if memory_available_kb and needed * page_kb > memory_available_kb * 0.9:
            return (f"hugepages=explicit needs {needed * page_kb // 1024} MiB ({needed} pages of "
                    f"{page_kb // 1024} MiB); only {memory_available_kb // 1024} MiB of memory is available")
    return ""


def jvm_flags(value, page_bytes=DEFAULT_PAGE_BYTES):
    """The JVM options `value` implies (page_bytes: the host's explicit hugepage size)."""
    if value == "explicit":
        return ["-XX:+UseLargePages", f"-XX:LargePageSizeInBytes={page_bytes // (1 << 20)}m"]
    if value == "thp_madvise":
        return ["-XX:+UseTransparentHugePages"]
    return []


def problems(value, evidence):
    """What the process under test shows against `value`: its JVM flags (a JVM's only), the JVM's large-page
    warnings and hugetlb pages (explicit), the THP mode in effect (thp_*). Evidence keys as process_evidence.verify reads them."""
    found = []
    flags = evidence.get("vm_flags")
    if not evidence.get("native_program") and flags is not None:
        if value == "explicit" and flags.get("UseLargePages") is not True:
            found.append("asked for explicit hugepages but the JVM reports UseLargePages off")
        if value == "thp_madvise" and flags.get("UseTransparentHugePages") is not True:
            found.append("asked for THP (madvise) but the JVM reports UseTransparentHugePages off")
    if value == "explicit":
        warnings = evidence.get("jvm_output_warnings") or []
        if warnings:
            found.append("the JVM fell back from large pages: " + warnings[0])
        if not evidence.get("hugetlb_kb"):
            found.append("the process holds no hugetlb pages (HugetlbPages: 0 kB)")
    if value in THP_MODE and value != "off":
        wanted = THP_MODE[value]
        if evidence.get("thp_mode") != wanted:
            found.append(f"THP mode is {evidence.get('thp_mode')!r}, not {wanted!r}")
    return found
