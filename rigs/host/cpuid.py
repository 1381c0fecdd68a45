"""What the CPU is, from the kernel's own words: vendor and model (x86 `vendor_id`/`model name`; aarch64
MIDR implementer and part codes, named), and whether it is QEMU's TCG emulation.

Pure functions of text, tested on recorded /proc/cpuinfo files (rigs/host/testdata/).
"""

import os
import re

# aarch64 CPUs name themselves by MIDR fields in /proc/cpuinfo ("CPU implementer", "CPU part"), not by a
# model string. Names as util-linux's lscpu gives them (sys-utils/lscpu-arm.c) for the parts a Hadoop
# host is likely to have; 0x00 is the implementer code reserved for software, which QEMU's TCG `max` CPU uses.
ARM_IMPLEMENTERS = {0x00: "QEMU (software)", 0x41: "ARM", 0x42: "Broadcom", 0x43: "Cavium", 0x46: "Fujitsu",
                    0x48: "HiSilicon", 0x4E: "NVIDIA", 0x50: "APM", 0x51: "Qualcomm", 0x61: "Apple",
                    0xC0: "Ampere"}
ARM_PARTS = {(0x48, 0xD01): "Kunpeng-920", (0x41, 0xD03): "Cortex-A53", (0x41, 0xD07): "Cortex-A57",
             (0x41, 0xD08): "Cortex-A72", (0x41, 0xD0B): "Cortex-A76", (0x41, 0xD0C): "Neoverse-N1",
             (0x41, 0xD40): "Neoverse-V1", (0x41, 0xD49): "Neoverse-N2", (0x41, 0xD4F): "Neoverse-V2",
             (0xC0, 0xAC3): "Ampere-1", (0x00, 0x051): "QEMU TCG 'max' CPU"}
X86_VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon",
               "CentaurHauls": "Zhaoxin", "  Shanghai  ": "Zhaoxin"}


def _hex(value):
    try:
        return int(value, 16)
    except (TypeError, ValueError):
        return None


def arm_cpu_name(implementer, part):
    """(vendor, model) for MIDR implementer/part codes; unknown codes are named by their numbers."""
    vendor = ARM_IMPLEMENTERS.get(implementer, f"implementer 0x{implementer:02x}")
    return vendor, ARM_PARTS.get((implementer, part), f"{vendor} part 0x{part:03x}")


def parse_cpuinfo(text):
    """/proc/cpuinfo (x86 or aarch64 layout) to the fields parse_lscpu gives, where the kernel states them."""
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#"))  # a fixture's header
    processors = [dict((k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in block.splitlines()))
                  for block in text.strip().split("\n\n") if block.strip()]
    processors = [p for p in processors if "processor" in p] or processors
    first = processors[0] if processors else {}

    def num(key):
        v = first.get(key, "")
        return int(v) if v.isdigit() else None
    sockets = len({p["physical id"] for p in processors if "physical id" in p}) or None
    cores, siblings = num("cpu cores"), num("siblings")
    fields = {
        "vendor": first.get("vendor_id"), "model_name": first.get("model name"),
        "logical_cpus": len(processors) or None, "sockets": sockets, "cores_per_socket": cores,
        "threads_per_core": siblings // cores if cores and siblings else None,
    }
    implementer, part = _hex(first.get("CPU implementer")), _hex(first.get("CPU part"))
    if implementer is not None and part is not None:
        fields["architecture"] = "aarch64"
        fields["implementer"], fields["part"] = f"0x{implementer:02x}", f"0x{part:03x}"
        fields["vendor"], fields["model_name"] = arm_cpu_name(implementer, part)
    elif fields["vendor"]:
        fields["architecture"] = "x86_64" if "lm" in first.get("flags", "").split() else None
    return fields


def emulation(cpu, cmdline):
    """(emulated, evidence): whether this CPU is QEMU's TCG emulation, which gives mechanics, never timing."""
    if (cpu.get("model_name") or "").startswith("QEMU Virtual CPU"):
        return True, f"CPU model {cpu['model_name']!r} is QEMU's TCG CPU"
    if cpu.get("implementer") == "0x00":
        return True, "CPU implementer 0x00 (reserved for software): QEMU's TCG CPU"
    if re.search(r"(^|\s)tunelab\.accel=tcg(\s|$)", cmdline or ""):
        return True, "kernel command line tunelab.accel=tcg (a tools/guest guest under TCG)"
    return False, "no sign of emulation (CPU model and implementer, kernel command line)"


def _read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


# Linux's largest NR_CPUS (CONFIG_NR_CPUS_RANGE_END): a CPU list naming a higher CPU is no host's.
MAX_CPU_ID = 8191
CPU_LIST = re.compile(r"\s*([0-9]+(-[0-9]+)?(\s*,\s*[0-9]+(-[0-9]+)?)*)?\s*", re.ASCII)  # ASCII digits: "\u0661" is no CPU


def parse_cpu_list(text):
    """Kernel CPU list syntax ('0-3,8,10-11', as sysfs, lscpu and a matrix write it) to a sorted list of ints:
    the one parser of CPU lists. ValueError when it is not one, a range runs backwards, or it names a CPU
    above MAX_CPU_ID (a list from a file or a user is bounded before it is expanded)."""
    text = str(text)
    if not CPU_LIST.fullmatch(text):
        raise ValueError(f"bad CPU list {text[:80]!r} (expected e.g. 0-3,8)")
    cpus = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, _, hi = part.partition("-")
        lo, hi = int(lo), int(hi or lo)
        if hi > MAX_CPU_ID or lo > hi:
            raise ValueError(f"CPU list {text[:80]!r}: {part} is not a range of CPUs 0..{MAX_CPU_ID}")
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def cpu_set(text):
    """parse_cpu_list's CPUs as a set (what placement checks compare)."""
    return set(parse_cpu_list(text))


def format_cpu_list(cpus):
    """Inverse of parse_cpu_list: [0,1,2,5] -> '0-2,5'."""
    cpus = sorted(set(cpus))
    ranges = []
    for c in cpus:
        if ranges and c == ranges[-1][1] + 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)


def page_size_kb(root, run):
    """The base page size (4 KiB on x86; 4 or 64 KiB on aarch64, as the kernel was built) and its evidence."""
    code, out = run(["getconf", "PAGESIZE"])
    if code == 0 and out.strip().isdigit():
        return int(out.strip()) // 1024, "getconf PAGESIZE"
    if root == "/":
        return os.sysconf("SC_PAGE_SIZE") // 1024, "sysconf(_SC_PAGE_SIZE)"
    return None, "unknown (no getconf)"


def hugepage_sizes_kb(root):
    """The hugepage sizes the kernel offers (/sys/kernel/mm/hugepages/hugepages-<N>kB), smallest first."""
    base = os.path.join(root, "sys/kernel/mm/hugepages")
    sizes = [int(m.group(1)) for m in (re.fullmatch(r"hugepages-(\d+)kB", d) for d in
                                        (os.listdir(base) if os.path.isdir(base) else [])) if m]
    return sorted(sizes)


def sysfs_topology(root, cpus):
    """(sockets, threads per core) from /sys/devices/system/cpu/cpuN/topology, where lscpu is missing."""
    packages, siblings = set(), set()
    for cpu in cpus:
        topology = os.path.join(root, f"sys/devices/system/cpu/cpu{cpu}/topology")
        package = (_read_text(os.path.join(topology, "physical_package_id")) or "").strip()
        if package:
            packages.add(package)
        threads = _read_text(os.path.join(topology, "thread_siblings_list"))
        if threads:
            siblings.add(len(parse_cpu_list(threads)))
    return (len(packages) or None), (max(siblings) if siblings else None)
