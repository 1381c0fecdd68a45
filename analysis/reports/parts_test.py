"""A report in parts (parts.py): two designs each reported within itself on one title page, and the MR1 vs MR2
study's mechanism first. Fixtures: the committed study sets (real runs) and the case studies' reference rows."""

import os
import tempfile
import unittest

from analysis import resultsets
from analysis.reports import kinds, parts, render, report
from analysis.reports import story as story_lib
from analysis.testing.pdffacts import pdf_facts

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_ROOT = os.path.join(os.path.dirname(HERE), "..", "results")
FIXED_TIME = "2026-11-21 00:00 UTC"


class PartsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def study_set(self, name):
        return resultsets.resolve(os.path.join(RESULTS_ROOT, "baselines", name), RESULTS_ROOT)

    def test_two_designs_are_reported_in_parts_each_within_itself(self):
        steady = self.study_set("mapreduce-mr1-vs-mr2-steady-20261126-2vcpu")
        cluster = self.study_set("mapreduce-cluster-shuffle-20261129-2vcpu")
        blocks = parts.build_parts("mr1-vs-mr2", [steady, cluster] + report.reference_sets(RESULTS_ROOT), self.dir,
                                    generated_at=FIXED_TIME, command="bazel run //analysis:report -- ... --parts")
        text = render.to_text(blocks)
        answer = next(b.text for b in blocks if isinstance(b, render.Para) and b.text.startswith("Answer: "))
        # Each part's own answer, on the one title page: local mode at steady state 4.69 vs 4.69 s (medians; the
        # rounds' geometric mean +2.5 %, one round of five read +29.7 %: undecided), the cluster MR2 +7x %
        # (its containers, not the engines: rigs/mapreduce/README.md).
        self.assertRegex(answer, r"In part 1 \(.*mapreduce-mr1-vs-mr2-steady-20261126-2vcpu, mr_compare\): "
                                 r"mapreduce=mr2 vs mr1: job_duration \+2\.5% \([\d.]+% CI [^)]*\), undecided")
        self.assertRegex(answer, r"In part 2 \(.*mapreduce-cluster-shuffle-20261129-2vcpu, mr_cluster\): "
                                 r"mapreduce=mr2 vs mr1: job_duration \+7\d\.\d%")
        # The index's one line: the pair said once, each part after its matrix' name, within the index's width.
        line = next(b.text for b in blocks if isinstance(b, render.Para) and b.text.startswith("In one line: "))
        self.assertRegex(line, r"^In one line: mr2 vs mr1: mr_compare undecided \+2\.5% \(CI [^)]*\), wider than ±5%; "
                               r"mr_cluster \+7\d\.\d% \(CI [^)]*\), worse$")
        self.assertLessEqual(len(line.removeprefix("In one line: ")), 120)
        headings = [b.text for b in blocks if isinstance(b, render.Heading) and b.level == 1]
        self.assertEqual([h.split(":")[0] for h in headings if h.startswith("Part ")],
                         ["Part 1 (baselines/mapreduce-mr1-vs-mr2-steady-20261126-2vcpu, mr_compare)",
                          "Part 2 (baselines/mapreduce-cluster-shuffle-20261129-2vcpu, mr_cluster)"])
        # The published figures once, after both parts, with the case study's cluster rows.
        self.assertEqual(text.count("Reference rows: the authors' numbers"), 1)
        self.assertGreater(text.index("Reference rows"), text.index("Part 2 ("))
        for figure in ("cluster disk reads, MR2 then", "31.2 GB", "DONTNEED per node, MR1", "768 calls/node",
                       "reducers' fetch time, MR2 then", "60 s"):
            self.assertIn(figure, text)
        # Both parts' figures were written apart (part1/, part2/), none overwriting another.
        paths = [b.path for b in blocks if isinstance(b, render.Figure)]
        self.assertEqual(len(paths), len(set(paths)))
        self.assertTrue(any("/part1/" in p for p in paths) and any("/part2/" in p for p in paths))
        out = os.path.join(self.dir, "parts.pdf")
        report.write(blocks, out, out[:-4] + ".html")
        pages, texts, _, _ = pdf_facts(out)
        self.assertIn("In part 2", " ".join(texts[0].split()))
        with self.assertRaisesRegex(kinds.ReportError, "two or more measured sets"):
            parts.build_parts("mr1-vs-mr2", [steady], self.dir)

    def test_the_mr1_vs_mr2_study_shows_its_mechanism_first_in_six_pages(self):
        # Issue 82: the study was 40 pages with its finding (stock MR2 advises the kernel no DONTNEED, and reads
        # 2.6x the bytes from disk under pressure) on none of the first. Its story, as studies.toml declares it.
        sets = [self.study_set("mapreduce-mr1-vs-mr2-steady-20261126-2vcpu"),
                self.study_set("mapreduce-cluster-pressure-20261201-2vcpu")]
        story = story_lib.Story(answer=("job_duration",), mechanism=("dontneed_calls", "shuffle_server_read_bytes"),
                                caveats=("Loopback clusters",))
        blocks = parts.build_parts("mr1-vs-mr2", sets + report.reference_sets(RESULTS_ROOT), self.dir,
                                    generated_at=FIXED_TIME, command="...", story=story, appendix=False)
        first_part = next(i for i, b in enumerate(blocks) if isinstance(b, render.Heading) and b.text.startswith("Part "))
        title, rest = blocks[:first_part], blocks[first_part:]
        figure = next(b for b in title if isinstance(b, render.Figure))
        self.assertTrue(figure.caption.startswith("Mechanism: dontneed_calls, shuffle_server_read_bytes per cell"))
        table = next(b for b in title if isinstance(b, render.TableBlock))
        rows = {(r[0], r[1]): r for r in table.rows}
        none = rows["dontneed_calls (calls)", "mapreduce=mr2 vs mr1 [memory_limit=none variant=stock]"]
        self.assertEqual(none[3], "0")  # stock MR2 gives the kernel no DONTNEED
        self.assertRegex(none[4], r"^-3\d \(-3\d\.\.-3\d\)$")
        squeezed = rows["shuffle_server_read_bytes (B)", "mapreduce=mr2 vs mr1 [memory_limit=squeezed variant=stock]"]
        self.assertEqual([v.split(" ")[1] for v in squeezed[2:4]], ["MB", "MB"])  # bytes in MB, not 9 digits
        self.assertGreater(float(squeezed[3].split(" ")[0]), 2 * float(squeezed[2].split(" ")[0]))
        # Said once: the parts draw neither the counts' figure nor their table again.
        self.assertFalse(any(isinstance(b, render.Figure) and b.caption.startswith("Mechanism") for b in rest))
        self.assertFalse(any(isinstance(b, render.Heading) and b.text.startswith("dontneed_calls") for b in rest))
        out = os.path.join(self.dir, "mr.pdf")
        report.write(blocks, out)
        pages, texts, images, _ = pdf_facts(out)
        self.assertLessEqual(pages, 6)
        self.assertIn("Mechanism: what moved", texts[0])
        self.assertGreaterEqual(images[0], 1)


if __name__ == "__main__":
    unittest.main()
