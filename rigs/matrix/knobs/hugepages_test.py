"""The hugepages axis (hugepages.py) on its own: pages for a heap, the plan's skip reasons on recorded host
capabilities, the JVM flags, and the proof on real captures (rigs/matrix/testdata/captures/README.md)."""

import os
import unittest

from rigs.matrix.contract import evidence
from rigs.matrix.knobs import hugepages, process_evidence
from rigs.matrix.planning import spec

CAPTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "testdata", "captures")


def capture(name):
    with open(os.path.join(CAPTURES, name)) as f:
        return f.read()


def cap(**fields):
    return {"evidence": "/sys/kernel/mm/transparent_hugepage/enabled", **fields}


ROOT = {"transparent_hugepages": cap(available=True, value="madvise", writable=True),
        "explicit_hugepages": cap(available=True, value=0, writable=True)}


class PagesTest(unittest.TestCase):
    def test_pages_cover_heap_and_code_cache(self):
        self.assertEqual(hugepages.pages_for_heap("256m"), 256)  # (256 + 256 MiB margin) / 2 MiB

    def test_pages_of_the_hosts_size(self):
        # aarch64 with 64 KiB base pages: 512 MiB hugepages (the doctor's Hugepagesize).
        self.assertEqual(hugepages.host_page_bytes({"memory": {"hugepage_size_kb": 512 * 1024}}), 512 << 20)
        self.assertEqual(hugepages.host_page_bytes({}), 2 << 20)
        self.assertEqual(hugepages.pages_for_heap("256m", 512 << 20), 1)
        self.assertEqual(hugepages.pages_for_heap("1g", 512 << 20), 3)


class PlanTest(unittest.TestCase):
    def test_a_root_runner_can_run_every_value(self):
        for value in hugepages.VALUES:
            self.assertEqual(hugepages.host_skip_reason(value, "512m", ROOT, 2048, 16 << 20), "", value)

    def test_what_a_host_lacks_is_the_reason(self):
        user = {"transparent_hugepages": cap(available=True, value="always", writable=False),
                "explicit_hugepages": cap(available=True, value=10, writable=False)}
        self.assertIn("needs THP mode 'madvise'; it is 'always'",
                      hugepages.host_skip_reason("thp_madvise", "512m", user))
        self.assertEqual(hugepages.host_skip_reason("thp_always", "512m", user), "")  # already as wanted
        self.assertIn("needs 384 2 MiB pages for heap 512m; nr_hugepages is 10 and not writable",
                      hugepages.host_skip_reason("explicit", "512m", user, 2048))
        self.assertIn("no transparent hugepage control", hugepages.host_skip_reason("off", "512m", {}))
        self.assertIn("no hugetlb support", hugepages.host_skip_reason("explicit", "512m", {}))
        self.assertIn("only 512 MiB of memory is available",
                      hugepages.host_skip_reason("explicit", "1g", ROOT, 2048, 512 * 1024))
        self.assertEqual(hugepages.host_skip_reason("host", "1g", {}), "")  # never changed, never skipped


class LaunchTest(unittest.TestCase):
    def test_flags_of_each_value(self):
        self.assertEqual(hugepages.jvm_flags("explicit", 2 << 20), ["-XX:+UseLargePages", "-XX:LargePageSizeInBytes=2m"])
        self.assertEqual(hugepages.jvm_flags("thp_madvise"), ["-XX:+UseTransparentHugePages"])
        for value in ("off", "thp_always", "host"):
            self.assertEqual(hugepages.jvm_flags(value), [], value)

    def test_raw_large_page_flags_without_the_axis_are_a_matrix_error(self):
        self.assertIn("use the hugepages axis", hugepages.gc_opts_problem("off", "lp", ["-XX:+UseLargePages"]))
        self.assertEqual(hugepages.gc_opts_problem("explicit", "lp", ["-XX:+UseLargePages"]), "")
        data = {"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], "gc_opts": ["lp"]},
                "gc_opts": {"lp": {"flags": ["-XX:+UseLargePages"]}}}
        with self.assertRaisesRegex(spec.SpecError, "gc_opts=lp asks for large pages with hugepages=off"):
            spec.from_dict(data)


class ProofTest(unittest.TestCase):
    def cell(self, value):
        data = {"matrix": {"name": "t", "rig": "r"}, "axes": {"jdk": [17], "gc": ["g1"], "heap": ["256m"],
                                                             "hugepages": [value]}}
        m = spec.from_dict(data)
        return m, m.cells[0]

    def evidence(self, flags="vm_flags.txt", thp="never"):
        return {"vm_flags": evidence.parse_vm_flags(capture(flags)),
                "process_status": evidence.parse_status(capture("status.txt")),
                "numa_maps": evidence.parse_numa_maps(capture("numa_maps_membind0.txt")),
                "numa_nodes": {"cpu_node": 0, "mem_node": 0}, "threads": [], "thp_mode": thp}

    def test_large_pages_that_fell_back_are_invalid(self):
        m, cell = self.cell("explicit")
        ev = self.evidence("vm_flags_largepages.txt")
        ev["jvm_output_warnings"] = evidence.large_page_failures(capture("jvm_output_largepages.txt"))
        ev["hugetlb_kb"] = 12288
        problems = process_evidence.verify(cell, m, ev, {0: {0, 1}})
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("fell back from large pages", problems[0])
        del ev["jvm_output_warnings"]
        self.assertEqual(process_evidence.verify(cell, m, ev, {0: {0, 1}}), [])

    def test_explicit_without_large_pages_or_hugetlb_pages(self):
        self.assertEqual(hugepages.problems("explicit", self.evidence()), [
            "asked for explicit hugepages but the JVM reports UseLargePages off",
            "the process holds no hugetlb pages (HugetlbPages: 0 kB)"])
        # A native program (redis-server): no JVM flags to check, the pages still are.
        self.assertEqual(hugepages.problems("explicit", {"native_program": True, "hugetlb_kb": 4096}), [])

    def test_thp_mode_in_effect(self):
        self.assertEqual(hugepages.problems("thp_always", self.evidence(thp="always")), [])
        self.assertEqual(hugepages.problems("thp_always", self.evidence(thp="madvise")),
                         ["THP mode is 'madvise', not 'always'"])
        self.assertIn("asked for THP (madvise) but the JVM reports UseTransparentHugePages off",
                      hugepages.problems("thp_madvise", self.evidence(thp="madvise")))
        self.assertEqual(hugepages.problems("host", self.evidence(thp="always")), [])  # only recorded
        self.assertEqual(hugepages.problems("off", self.evidence(thp="always")), [])  # as before: not proven


if __name__ == "__main__":
    unittest.main()
