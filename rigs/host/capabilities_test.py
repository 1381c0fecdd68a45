"""The doctor's parsers and probe on recorded captures (see testdata/README.md for where each is from)."""

import os
import unittest

from rigs.host import capabilities, cpuid

TESTDATA = os.path.join(os.path.dirname(__file__), "testdata")


def fixture(host, name):
    with open(os.path.join(TESTDATA, host, name)) as f:
        return f.read()


def fixture_runner(host):
    """Answers the doctor's commands from a fixture folder; a command with no capture is 'not found'."""
    captures = {"lscpu": "lscpu.txt", "numactl": "numactl_hardware.txt", "perf": "perf_stat.txt",
                "docker": "docker_info.txt", "getconf": "page_size.txt"}

    def run(argv, timeout=20):
        path = os.path.join(TESTDATA, host, captures.get(argv[0], "-"))
        if not os.path.exists(path):
            return None, f"{argv[0]} not found"
        text = fixture(host, captures[argv[0]])
        if argv[0] == "docker":
            code = int(text.strip().splitlines()[-1].split()[-1])
            return code, text
        if argv[0] == "getconf":  # the captured value is the file's last line (a header may precede it)
            return 0, text.strip().splitlines()[-1]
        return 0, text
    return run


class ParserTest(unittest.TestCase):
    def test_cpu_lists(self):
        self.assertEqual(cpuid.parse_cpu_list("0-3,8,10-11\n"), [0, 1, 2, 3, 8, 10, 11])
        self.assertEqual(cpuid.format_cpu_list([11, 0, 1, 2, 3, 8, 10]), "0-3,8,10-11")
        self.assertEqual(cpuid.parse_cpu_list(""), [])
        self.assertEqual(cpuid.cpu_set(" 1 , 0-1 "), {0, 1})
        # The one parser refuses what is not a CPU list, and bounds a list before expanding it.
        for bad in ("0-999999999", "3-1", "a", "0,,1", "-1", "0-", f"{cpuid.MAX_CPU_ID + 1}",
                    "\u0661", "0-\u0663"):  # Arabic-Indic digits: int() reads them, no kernel does (issue 58)
            with self.assertRaises(ValueError, msg=bad):
                cpuid.parse_cpu_list(bad)
        self.assertEqual(len(cpuid.parse_cpu_list(f"0-{cpuid.MAX_CPU_ID}")), cpuid.MAX_CPU_ID + 1)

    def test_lscpu_four_socket(self):
        cpu = capabilities.parse_lscpu(fixture("xeon_e7_4870_4node", "lscpu.txt"))
        self.assertEqual((cpu["sockets"], cpu["cores_per_socket"], cpu["threads_per_core"]), (4, 10, 1))
        self.assertEqual(cpu["logical_cpus"], 40)
        self.assertEqual(cpu["numa_nodes"], 4)
        self.assertEqual(cpu["numa_node_cpus"][2][:3], [1, 5, 9])
        self.assertIsNone(cpu["hypervisor"])

    def test_lscpu_kvm_guest(self):
        cpu = capabilities.parse_lscpu(fixture("kvm_1node", "lscpu.txt"))
        self.assertEqual(cpu["hypervisor"], "KVM")
        self.assertEqual(cpu["logical_cpus"], 2)
        self.assertIn("hypervisor", cpu["flags"])

    def test_numactl_hardware_four_nodes(self):
        parsed = capabilities.parse_numactl_hardware(fixture("xeon_e7_4870_4node", "numactl_hardware.txt"))
        self.assertEqual(sorted(parsed["nodes"]), [0, 1, 2, 3])
        self.assertEqual(parsed["nodes"][1]["cpus"][:2], [2, 6])
        self.assertEqual(parsed["nodes"][0]["size_mb"], 65415)
        self.assertEqual(parsed["distances"][3], {0: 21, 1: 21, 2: 21, 3: 10})

    def test_numactl_garbage_is_an_error(self):
        with self.assertRaises(ValueError):
            capabilities.parse_numactl_hardware("numactl: command not found\n")

    def test_thp_and_perf(self):
        self.assertEqual(capabilities.parse_thp_setting("always [madvise] never\n"), "madvise")
        events = capabilities.parse_perf_stat_csv(fixture("kvm_1node", "perf_stat.txt"))
        self.assertIsNone(events["instructions"])
        self.assertIsNone(events["cycles"])
        self.assertGreater(events["task-clock"], 0)


class ProbeHostTest(unittest.TestCase):
    def probe(self, host, tools=("numactl", "taskset", "perf", "docker")):
        return capabilities.probe_host(root=os.path.join(TESTDATA, host), run=fixture_runner(host),
                                     which=lambda t: f"/usr/bin/{t}" if t in tools else None)

    def test_four_node_host(self):
        report = self.probe("xeon_e7_4870_4node", tools=("numactl", "taskset"))
        nodes = report["numa"]["nodes"]
        self.assertEqual([n["id"] for n in nodes], [0, 1, 2, 3])
        self.assertEqual(nodes[0]["cpus"], "0,4,8,12,16,20,24,28,32,36")
        self.assertEqual(nodes[2]["distances"], [21, 21, 10, 21])
        self.assertEqual(nodes[1]["memory_total_kb"], 65536 * 1024)
        caps = report["capabilities"]
        self.assertTrue(caps["numa_multi_node"]["available"])
        self.assertEqual(caps["numa_multi_node"]["value"], 4)
        # Nothing was captured for these on that host: they must read as absent, with the reason.
        self.assertFalse(caps["perf_hardware_counters"]["available"])
        self.assertIn("not found", caps["perf_hardware_counters"]["evidence"])
        self.assertFalse(caps["docker_engine"]["available"])
        self.assertFalse(caps["migratepages"]["available"])
        self.assertEqual(report["cpu"]["sockets"], 4)

    def test_one_node_kvm_guest(self):
        report = self.probe("kvm_1node")
        caps = report["capabilities"]
        self.assertFalse(caps["numa_multi_node"]["available"])
        self.assertFalse(caps["perf_hardware_counters"]["available"])
        self.assertIn("<not supported>", caps["perf_hardware_counters"]["evidence"])
        self.assertTrue(caps["perf_software_events"]["available"])
        self.assertEqual(caps["transparent_hugepages"]["value"], "madvise")
        self.assertIn("always [madvise] never", caps["transparent_hugepages"]["evidence"])
        self.assertEqual(caps["explicit_hugepages"]["value"], 0)
        self.assertFalse(caps["docker_engine"]["available"])
        self.assertIn("Cannot connect to the Docker daemon", caps["docker_engine"]["evidence"])
        self.assertEqual(report["numa"]["nodes"][0]["cpus"], "0-1")
        self.assertEqual(report["cpu"]["hypervisor"], "KVM")
        self.assertEqual(len(report["host"]["load_average"]), 3)

    def test_without_lscpu_the_kernel_says_it(self):
        # The rigs' image and the NUMA guest have no lscpu: /proc/cpuinfo and the online CPU list instead.
        full = fixture_runner("kvm_1node")
        report = capabilities.probe_host(root=os.path.join(TESTDATA, "kvm_1node"),
                                       run=lambda argv, timeout=20: (None, "lscpu not found") if argv[0] == "lscpu"
                                       else full(argv, timeout), which=lambda name: None)
        cpu = report["cpu"]
        self.assertEqual((cpu["model_name"], cpu["vendor"], cpu["logical_cpus"], cpu["online_cpus"]),
                         ("AMD EPYC", "AuthenticAMD", 2, "0-1"))
        self.assertEqual((cpu["sockets"], cpu["cores_per_socket"], cpu["threads_per_core"]), (1, 2, 1))
        self.assertEqual(cpu["evidence"], "/proc/cpuinfo (lscpu failed: lscpu not found)")


class Aarch64Test(unittest.TestCase):
    def test_kunpeng_920_is_named(self):
        report = capabilities.probe_host(root=os.path.join(TESTDATA, "kunpeng920_2socket"),
                                       run=fixture_runner("kunpeng920_2socket"), which=lambda name: None)
        cpu = report["cpu"]
        self.assertEqual((cpu["architecture"], cpu["vendor"], cpu["model_name"]), ("aarch64", "HiSilicon", "Kunpeng-920"))
        self.assertEqual((cpu["implementer"], cpu["part"]), ("0x48", "0xd01"))
        self.assertEqual((cpu["sockets"], cpu["cores_per_socket"], cpu["threads_per_core"], cpu["smt"]), (2, 64, 1, False))
        self.assertEqual((cpu["page_size_kb"], cpu["max_mhz"]), (64, 2600.0))
        self.assertEqual(report["memory"]["hugepage_size_kb"], 512 * 1024)  # 64 KiB pages: 512 MiB hugepages
        self.assertFalse(cpu["emulated"])

    def test_the_tcg_guest_says_aarch64_emulated(self):
        # Recorded inside //tools/guest:arm64_host (no lscpu there: the kernel's own words and sysfs).
        report = capabilities.probe_host(root=os.path.join(TESTDATA, "qemu_tcg_arm64"),
                                       run=fixture_runner("qemu_tcg_arm64"), which=lambda name: None)
        cpu = report["cpu"]
        self.assertEqual((cpu["architecture"], cpu["implementer"], cpu["part"]), ("aarch64", "0x00", "0x051"))
        self.assertEqual(cpu["model_name"], "QEMU TCG 'max' CPU")
        self.assertTrue(cpu["emulated"])
        self.assertIn("implementer 0x00", cpu["emulated_evidence"])
        self.assertEqual((cpu["sockets"], cpu["cores_per_socket"], cpu["threads_per_core"]), (1, 2, 1))
        self.assertEqual(cpu["page_size_kb"], 4)
        self.assertEqual(report["memory"]["hugepage_sizes_kb"], [64, 2048, 32768, 1048576])
        self.assertEqual(report["memory"]["hugepage_size_kb"], 2048)
        self.assertEqual(report["numa"]["nodes"][0]["cpus"], "0-1")

    def test_unknown_parts_and_x86_are_named_plainly(self):
        cpu = cpuid.parse_cpuinfo("processor : 0\nCPU implementer : 0x41\nCPU part : 0xfff\n")
        self.assertEqual((cpu["vendor"], cpu["model_name"]), ("ARM", "ARM part 0xfff"))
        x86 = cpuid.parse_cpuinfo(fixture("kvm_1node", "proc/cpuinfo"))
        self.assertEqual(x86["architecture"], "x86_64")
        self.assertEqual(cpuid.X86_VENDORS[x86["vendor"]], "AMD")

    def test_emulation_signals(self):
        self.assertEqual(cpuid.emulation({"model_name": "QEMU Virtual CPU version 2.5+"}, "")[0], True)
        self.assertEqual(cpuid.emulation({"implementer": "0x48"}, "ro quiet")[0], False)
        emulated, why = cpuid.emulation({"implementer": "0x41"}, "console=ttyAMA0 tunelab.accel=tcg")
        self.assertTrue(emulated)
        self.assertIn("tunelab.accel=tcg", why)


if __name__ == "__main__":
    unittest.main()
