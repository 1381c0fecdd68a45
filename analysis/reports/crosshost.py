"""The cross-host report's own sections (the Kunpeng vs x86 report when the two hosts' architectures differ):
the hosts' hardware side by side, and each cell's ratio normalized by the hosts' own reference.

Normalizing: every run measures its host's reference before and after the matrix (rigs/matrix/
host_reference.py: a CPU loop and a memory copy on one core). A cell's ratio (host B / host A) divided by
the ratio of the two hosts' reference medians says how much of the difference is more than "B's cores are
simply faster or slower at a plain loop / copy". The reference is one probe per run; its own spread is in
the provenance appendix. An emulated host's reference measures QEMU, not a CPU: its rows are mechanics only.
"""

import math

from analysis import compare, drift
from analysis.reports import render


def architectures(sets):
    """Each set's architecture (`uname -m` as the doctor recorded it) in order; '?' when unrecorded."""
    return [next((d["provenance"]["host"]["cpu"].get("architecture") or "?" for d in s.docs), "?") for s in sets]


def _cpu(result_set):
    return result_set.first_ok()["provenance"]["host"]


def _jdk_builds(result_set):
    return "; ".join(sorted({f"{d['provenance']['jdk']['name']}: {d['provenance']['jdk'].get('vendor', '?')} "
                             f"{d['provenance']['jdk'].get('runtime_version', '?')}"
                             for d in result_set.docs if d.get("provenance", {}).get("jdk")})) or "none"


def hardware_rows(sets, labels):
    """[fact, host A, host B] rows: what each host is, read by its doctor when it ran."""
    hosts = [_cpu(s) for s in sets]

    def each(fn):
        return [fn(h) for h in hosts]

    def model(h):
        cpu = h["cpu"]
        codes = f" (implementer {cpu['implementer']}, part {cpu['part']})" if cpu.get("implementer") else ""
        return f"{cpu.get('model_name') or '?'}, {cpu.get('vendor') or '?'}{codes}"

    def topology(h):
        cpu = h["cpu"]
        return (f"{cpu.get('sockets') or '?'} socket(s) x {cpu.get('cores_per_socket') or '?'} core(s) x "
                f"{cpu.get('threads_per_core') or '?'} thread(s) = {cpu.get('logical_cpus') or '?'} CPUs")

    def pages(h):
        page = h["cpu"].get("page_size_kb")
        huge = (h.get("memory") or {}).get("hugepage_size_kb")
        return f"{page or '?'} KiB base, {huge // 1024 if huge else '?'} MiB hugepages"

    def frequency(h):
        mhz = h["cpu"].get("max_mhz")
        return f"{mhz:.0f} MHz max" if mhz else "not reported (no cpufreq: typical of VMs)"

    rows = [["host", *labels],
            ["architecture", *each(lambda h: h["cpu"].get("architecture") or "?")],
            ["CPU", *each(model)],
            ["cores", *each(topology)],
            ["NUMA nodes", *each(lambda h: str(len((h.get("numa") or {}).get("nodes") or [])))],
            ["pages", *each(pages)],
            ["frequency", *each(frequency)],
            ["emulated", *each(lambda h: "yes: " + h["cpu"].get("emulated_evidence", "QEMU TCG")
                               if h["cpu"].get("emulated") else "no")],
            ["kernel", *each(lambda h: (h.get("host") or {}).get("kernel") or "?")],
            ["JDK builds", *[_jdk_builds(s) for s in sets]]]
    return rows


def reference_medians(result_set):
    """{probe metric: median of the run's before/after reference medians} (analysis/drift.py reads them)."""
    out = {}
    for metric, measurements in drift.reference(result_set).items():
        medians = sorted(m["median"] for m in measurements)
        mid = len(medians) // 2
        out[metric] = medians[mid] if len(medians) % 2 else (medians[mid - 1] + medians[mid]) / 2
    return out


def _pct(x):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x - 1:+.1%}"


def normalized_rows(rows, sets):
    """[cell, ratio, ratio CI, then the ratio / reference ratio per probe metric] per compared cell."""
    ref_a, ref_b = reference_medians(sets[0]), reference_medians(sets[1])
    probes = [m for m in ref_a if m in ref_b and ref_a[m]]
    out = []
    for r in rows:
        c = r.comparison
        line = [r.others or r.value, _pct(c.ratio), f"{_pct(c.ratio_ci_low)} .. {_pct(c.ratio_ci_high)}"]
        for m in probes:
            ref_ratio = ref_b[m] / ref_a[m]
            line.append(_pct(c.ratio / ref_ratio) if ref_ratio else "-")
        out.append(line)
    return probes, [f"{m}: {ref_b[m] / ref_a[m] - 1:+.1%}" for m in probes], out


def blocks(sets, labels, rows, metric, unit):
    """The hosts side by side, and the headline metric's per-cell ratios raw and normalized."""
    archs = architectures(sets)
    out = [render.Heading("The hosts"),
           render.TableBlock(["", *labels], hardware_rows(sets, labels)[1:],
                             caption="What each host's doctor recorded when it ran (provenance of the first result)")]
    if archs[0] != archs[1]:
        out.append(render.Para(
            f"The architectures differ ({archs[0]} vs {archs[1]}), and with them the builds that follow from "
            "an architecture: each host ran its own JDK builds (table above) and native programs compiled for "
            "it from the same source (third_party/redis). Nothing else may differ (the provenance check)."))
    probes, ref_changes, table = normalized_rows(rows, sets)
    if not table:
        return out
    if not probes:
        without = [label for label, s in zip(labels, sets) if not reference_medians(s)]
        ref_changes = [f"{' and '.join(without) or 'one host'} recorded no host reference: not normalized"]
    level = next((compare.fmt_level(r.comparison) for r in rows if r.comparison.tested), "CI")
    columns = ["cell", f"{labels[1]} / {labels[0]}", level] + [f"normalized by {m}" for m in probes]
    out.append(render.TableBlock(
        columns, table,
        caption=(f"{metric} ({unit}): {labels[1]} relative to {labels[0]} per cell, and the same ratio divided "
                 f"by the hosts' reference ratio ({'; '.join(ref_changes) or 'no host reference recorded'})")))
    return out
