"""The results site on a few committed sets and made ones: the same sets give the same bytes, a set that cannot
be rendered is listed with the reason, monitors and nightly histories get their pages. The whole site from every
committed set, its links and its pages in a browser: //tools/publish:browser_test (the integration tier; it
builds that site once for both, issue 80)."""

import hashlib
import io
import json
import os
import shutil
import stat
import tempfile
import unittest
from unittest import mock

from rich.console import Console

from analysis import resultsets
from analysis.testing.testsets import write_set
from tools.publish import publish, side_pages
from tools.publish.site_links import links_of

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results")
BUILT_AT = "2026-11-24T00:00:00Z"
MONITORED_RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis", "testdata", "monitored_run",
                             "vm-0035969e", "20261129T072540Z-7aef")


def tree_digest(root):
    digest = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, root).encode() + b"\0")
            with open(path, "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


def quiet():
    return Console(file=io.StringIO(), highlight=False)


class PublishTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def small_results(self, names, folder="results"):
        """A results folder with some of the committed sets and every published reference."""
        root = os.path.join(self.dir, folder)
        os.makedirs(os.path.join(root, "baselines"))
        for name in names:
            shutil.copytree(os.path.join(RESULTS, "baselines", name), os.path.join(root, "baselines", name))
        shutil.copytree(os.path.join(RESULTS, "reference"), os.path.join(root, "reference"))
        return root

    def test_a_report_worker_that_dies_leaves_its_entries_listed_with_the_reason(self):
        root = self.small_results(["calibration-gate-slowdown-2vcpu", "nightly-calibration"])
        real = publish.render_study

        def dies_on_the_nightly(result_set, *args, **kwargs):
            if result_set.name == "nightly-calibration":
                os._exit(9)  # as a worker killed by the kernel would end: no exception, no result
            return real(result_set, *args, **kwargs)

        with mock.patch.object(publish, "render_study", dies_on_the_nightly):
            studies = publish.build_site(root, os.path.join(self.dir, "site"), BUILT_AT, quiet(), jobs=2)
        failed = {s.name: s.failed for s in studies if s.failed}
        self.assertIn("nightly-calibration", failed)
        self.assertTrue(all("a report worker died" in why for why in failed.values()), failed)
        self.assertEqual(len(studies), len({s.name for s in studies}), "every entry once")
        with open(os.path.join(self.dir, "site", "index.html")) as f:
            self.assertIn("a report worker died", f.read())

    def test_the_same_sets_give_the_same_bytes_and_a_broken_set_is_listed_with_its_reason(self):
        """Also whether the reports are rendered at once (forked workers) or one after another."""
        root = self.small_results(["calibration-gate-slowdown-2vcpu", "nightly-calibration"])
        broken = os.path.join(root, "baselines", "broken-set")
        os.makedirs(os.path.join(broken, "cells"))
        with open(os.path.join(broken, "manifest.json"), "w") as f:
            f.write("{not json")
        first, second = os.path.join(self.dir, "a"), os.path.join(self.dir, "b")
        studies = publish.build_site(root, first, BUILT_AT, quiet(), jobs=2)
        publish.build_site(root, second, BUILT_AT, quiet(), jobs=1)
        self.assertEqual(tree_digest(first), tree_digest(second))
        (failed,) = [s for s in studies if s.failed]
        self.assertEqual(failed.name, "broken-set")
        with open(os.path.join(first, "index.html")) as f:
            index = f.read()
        self.assertIn("Not published", index)
        self.assertIn("broken-set", index)
        self.assertIn("cannot be read", index)
        self.assertIn(BUILT_AT, index)
        # Building again over a site replaces it whole; a folder that is not a site is never deleted.
        publish.build_site(root, first, "2026-11-25T00:00:00Z", quiet())
        self.assertNotEqual(tree_digest(first), tree_digest(second))
        foreign = os.path.join(self.dir, "home")
        os.makedirs(foreign)
        with open(os.path.join(foreign, "notes.txt"), "w") as f:
            f.write("mine\n")
        with self.assertRaisesRegex(publish.PublishError, "not a site this tool built"):
            publish.build_site(root, foreign, BUILT_AT, quiet())
        self.assertTrue(os.path.exists(os.path.join(foreign, "notes.txt")))
        # Issue 39, finding 4: a folder with an index.html of someone else's was deleted whole; and the site was
        # mode 0700, which a web server's user cannot read.
        with open(os.path.join(foreign, "index.html"), "w") as f:
            f.write("<p>my page</p>\n")
        with self.assertRaisesRegex(publish.PublishError, "not a site this tool built"):
            publish.build_site(root, foreign, BUILT_AT, quiet())
        self.assertEqual(sorted(os.listdir(foreign)), ["index.html", "notes.txt"])
        with open(os.path.join(first, "extra.txt"), "w") as f:
            f.write("added by hand\n")  # a site changed since it was built is someone's now
        with self.assertRaisesRegex(publish.PublishError, "changed since this tool built it"):
            publish.build_site(root, first, BUILT_AT, quiet())
        self.assertTrue(os.path.exists(os.path.join(first, "extra.txt")))
        self.assertEqual(stat.S_IMODE(os.stat(second).st_mode), 0o755)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(second, "index.html")).st_mode) & 0o444, 0o444)
        self.assertEqual(sorted(n for n in os.listdir(self.dir) if n.startswith(".publish-")), [])

    def test_one_bad_set_or_reference_never_stops_the_site(self):
        # Issue 39, finding 3: one NaN reference file raised an uncaught error, and a report that failed in a way
        # the builder did not expect (reportlab's LayoutError, OverflowError) took the whole site down.
        root = self.small_results(["nightly-calibration", "calibration-gate-slowdown-2vcpu"])
        with open(os.path.join(root, "reference", "zz-broken.json"), "w") as f:
            f.write('{"schema_version": 1, "figures": [{"value": NaN}]}')
        real = publish.render_study

        def fails_for_one(result_set, references, folder, *declared):
            if result_set.name == "calibration-gate-slowdown-2vcpu":
                raise OverflowError("int too large to convert to float")
            return real(result_set, references, folder, *declared)
        with open(os.path.join(root, "baselines", "studies.toml"), "w") as f:  # one study good, one wrong
            f.write('[[study]]\nid = "nightly"\ntitle = "The nightly"\nquestion = "Did it change?"\n'
                    'sets = ["nightly-calibration"]\n\n[[study]]\nid = "gone"\ntitle = "T"\nquestion = "Q?"\n'
                    'sets = ["no-such-set"]\n')
        out = os.path.join(self.dir, "isolated")
        with mock.patch.object(publish, "render_study", fails_for_one):
            studies = publish.build_site(root, out, BUILT_AT, quiet())
        failed = {s.name: s.failed for s in studies if s.failed}
        self.assertEqual(set(failed), {"calibration-gate-slowdown-2vcpu", "reference/zz-broken.json",
                                       "studies.toml: study 'gone'"})
        self.assertEqual(failed["studies.toml: study 'gone'"], "no committed set 'no-such-set'")
        self.assertTrue(os.path.isfile(os.path.join(out, "studies", "nightly", "index.html")))
        self.assertIn("OverflowError: int too large", failed["calibration-gate-slowdown-2vcpu"])
        self.assertTrue(os.path.isfile(os.path.join(out, "sets", "nightly-calibration", "index.html")))
        with open(os.path.join(out, "index.html")) as f:
            index = f.read()
        self.assertIn("zz-broken.json", index)

    def test_an_unreadable_bisect_is_listed_with_its_reason(self):
        root = self.small_results([])
        for name, text in (("cut-short", '{"schema": "tunelab.bisect/1", "commits": ['), ("foreign", '{"schema": "x"}')):
            os.makedirs(os.path.join(root, "bisects", name))
            with open(os.path.join(root, "bisects", name, "bisect.json"), "w") as f:
                f.write(text)
        studies = publish.build_site(root, os.path.join(self.dir, "site"), BUILT_AT, quiet())
        failed = {s.name: s.failed for s in studies if s.failed}
        self.assertIn("cannot be read", failed["bisects/cut-short"])
        self.assertIn("not a tunelab.bisect/1 record", failed["bisects/foreign"])

    def test_the_sensitivity_page_says_what_each_design_promises_over_the_nights(self):
        # Issue 82, item 6: the committed nights file (//tools:sensitivity -- --write-nights) drawn and tabled per rig:
        # D on a median and a noisy night beside the set's stated D; a file not the calibrator's is listed, not used.
        root = self.small_results(["calibration-gate-aa-20261124-2vcpu"])
        shutil.copy(os.path.join(RESULTS, "baselines", "nights.json"), os.path.join(root, "baselines"))
        out = os.path.join(self.dir, "out")
        os.makedirs(out)
        rows, plotted, promised, failed = side_pages.write_sensitivity(os.path.join(root, "baselines"), out)
        self.assertEqual(failed, [])
        calibration = next(p for p in promised if p["rig"] == "calibration" and p["metric"] == "cpu_loop_rate")
        self.assertGreater(calibration["median_worse_by"], 0)
        by_rig = {rig: (plot, nights) for rig, plot, nights in plotted}
        self.assertEqual(by_rig["calibration"], ("sensitivity-calibration.png", "sensitivity-calibration-nights.png"))
        self.assertEqual(by_rig["namenode"][0], "")  # nights recorded, no figure of its sets in this folder
        self.assertTrue(os.path.getsize(os.path.join(out, "sensitivity-namenode-nights.png")) > 5000)
        env = publish.environment()
        html = env.get_template("sensitivity.html.j2").render(root=".", rows=rows, plots=plotted, promised=promised,
                                                              built_at=BUILT_AT)
        self.assertIn("<h3>Across nights</h3>", html)
        self.assertIn(calibration["verdict"], html)
        self.assertIn(f"{100 * calibration['median_worse_by']:.1f} %", html)
        for text, why in (("{", "cannot be read"), ('{"kind": "x"}', "not a nights file of schema 1"),
                          ('{"kind": "tunelab.night_promises", "schema_version": 1, "promises": [{"rig": 1}]}',
                           "not rows of rig"),
                          ('{"kind": "tunelab.night_promises", "schema_version": 1, "promises": [{"rig": "r", '
                           '"metric": "m", "profile": "p", "design": "d", "sd_median": "1e9"}]}', "not a finite number"),
                          ('{"kind": "tunelab.night_promises", "schema_version": 1, "promises": [{"rig": "r", '
                           '"metric": "m", "profile": "p", "design": "d", "nights": 5, "verdict": "x"}]}',
                           "without its nights")):
            with open(os.path.join(root, "baselines", "nights.json"), "w") as f:
                f.write(text)
            _, _, promised, failed = side_pages.write_sensitivity(os.path.join(root, "baselines"), out)
            self.assertEqual(promised, [])
            self.assertIn(why, failed[-1][1])

    def test_a_linked_studies_file_is_listed_not_followed(self):
        root = self.small_results([])
        target = os.path.join(self.dir, "elsewhere.toml")
        with open(target, "w") as f:
            f.write('[[study]]\nid = "x"\ntitle = "T"\nquestion = "Q?"\nsets = ["a"]\n')
        os.symlink(target, os.path.join(root, "baselines", "studies.toml"))
        sets, _ = publish.load_sets(os.path.join(root, "baselines"))
        with mock.patch.dict(os.environ, {"TEST_SRCDIR": "/nonexistent", "RUNFILES_DIR": "/nonexistent"}):
            declared, problems = publish.read_studies(os.path.join(root, "baselines"), sets)
        self.assertEqual(declared, [])
        self.assertEqual([(p.name, p.failed) for p in problems],
                         [("studies.toml", "not read: a link or not a regular file")])

    def test_every_reference_names_a_rig_the_committed_sets_measure(self):
        # case004 named rig "hdfs_namenode" (the rig is "namenode"): its published figures never reached a
        # NameNode report, and the site could not group case study 004 with its rig (issue 40).
        sets, _ = publish.load_sets(os.path.join(RESULTS, "baselines"))
        rigs = {s.manifest["matrix"]["rig"] for s in sets}
        for path in sorted(os.listdir(os.path.join(RESULTS, "reference"))):
            if path.endswith(".json"):
                with self.subTest(path):
                    ref = resultsets.load_reference(os.path.join(RESULTS, "reference", path))
                    self.assertIn(ref.reference["rig"], rigs)

    def test_titles_and_kinds_come_from_each_rigs_registration(self):
        # The site keeps no list of rigs (issue 59): yarn_failover, once missing from it, shows its rig.toml's
        # title; a rig unknown to this checkout keeps its name; MapReduce's engine axis picks its kind.
        entry = [mock.Mock(rig=r, failed=False, declared=False, sets=[], name=r) for r in ("yarn_failover", "gone")]
        titles = {g["rig"]: g["title"] for g in publish.index_groups(entry, [])}
        self.assertEqual(titles, {"yarn_failover": "ResourceManager failover", "gone": "gone"})
        sets, _ = publish.load_sets(os.path.join(RESULTS, "baselines"))
        kinds = {s.manifest["matrix"]["rig"]: publish.kind_for(s) for s in sets
                 if s.manifest["matrix"]["rig"] == "mapreduce" and
                 len({d["cell"]["params"].get("mapreduce") for d in s.docs}) == 2 and
                 len({d["cell"]["params"].get("variant") for d in s.docs}) == 1}
        self.assertEqual(kinds, {"mapreduce": "mr1-vs-mr2"})
        # A set whose variants are dependency bumps (issue 61's study) is reported as one, not as a patch.
        bumps = [s for s in sets if any(d["cell"]["params"].get("variant", "").startswith("bump:") for d in s.docs)]
        self.assertGreaterEqual(len(bumps), 2)
        self.assertEqual({publish.kind_for(s) for s in bumps}, {"dependency-bump"})

    def test_a_monitored_set_gets_a_page_per_cell_drawing_every_series_it_stored(self):
        # Issue 63: the site plots each cell's monitors (a recorded watched run, analysis/testdata/monitored_run).
        root = self.small_results([])
        name = "calibration-monitored-fixture"
        shutil.copytree(MONITORED_RUN, os.path.join(root, "baselines", name))
        out = os.path.join(self.dir, "site")
        studies = publish.build_site(root, out, BUILT_AT, quiet())
        study = next(s for s in studies if s.name == name)
        monitored = resultsets.load_run(MONITORED_RUN)
        cells = {d["cell"]["id"] for d in monitored.docs if d["status"] == "ok" and d.get("monitors")}
        self.assertEqual({c.cell_id for c in study.monitor_cells}, cells)
        set_page = os.path.join(out, "sets", name, "index.html")
        pages = [t for t in links_of(set_page) if t.startswith("monitors/")]
        self.assertEqual(len(pages), len(cells))
        for target in pages:
            page = os.path.join(out, "sets", name, target)
            images = [t for t in links_of(page) if t.endswith(".png")]
            cell = next(c for c in study.monitor_cells if c.page == os.path.basename(target))
            docs = [d for d in monitored.docs if d["cell"]["id"] == cell.cell_id and d["status"] == "ok"]
            # host CPU, load, memory, then one per rig series: every series the endpoint served is drawn.
            rig_series = {k for d in docs for k in d["monitors"]["series"] if "." in k}
            self.assertTrue(rig_series)
            self.assertEqual(len(images), 3 + len(rig_series))
            with open(page) as f:
                text = f.read()
            for series in rig_series:
                self.assertIn(series, text)
            for image in images:
                self.assertGreater(os.path.getsize(os.path.join(os.path.dirname(page), image)), 5000)
            self.assertEqual(cell.runs, len(docs))
            self.assertEqual(cell.load_max, max(v for d in docs for v in d["monitors"]["series"]["host_load1"] if v is not None))
        # A set measured before monitors were stored gets no such section.
        plain = self.small_results(["calibration-profile-overhead-20261129-2vcpu"], folder="plain-results")
        studies = publish.build_site(plain, os.path.join(self.dir, "plain"), BUILT_AT, quiet())
        self.assertEqual([s.monitor_cells for s in studies if s.name.startswith("calibration-profile")], [[]])

    def test_a_nightly_series_gets_its_history_plots(self):
        # Issue 41, item 3: history wrote OUT-0.png.. while the site looked for OUT itself: no nightly history
        # was ever shown. Issue 83: the history is read from the results database, the nightly-<series> sets
        # indexed into it first; a night promoted under another name is a study, not history.
        root = os.path.join(self.dir, "nightly-results")
        sets = []
        for n, level in enumerate([1000.0, 990.0, 1005.0]):
            path = os.path.join(root, "baselines", f"nightly-calibration-2026112{n}")
            write_set(path, [({"revision": "accepted"}, level), ({"revision": "candidate"}, level * 0.99)], runs=3,
                      seed=n)
            sets.append(resultsets.load_run(path))
        study = os.path.join(root, "baselines", "calibration-planted-20261124")
        write_set(study, [({"revision": "accepted"}, 1000.0), ({"revision": "candidate"}, 800.0)], runs=3)
        sets.append(resultsets.load_run(study))
        url = "sqlite:///" + os.path.join(self.dir, "nightly.sqlite")
        out = os.path.join(self.dir, "plots")
        os.makedirs(out)
        histories, failures = side_pages.nightly_histories(root, sets, url, out)
        self.assertEqual(failures, [])
        self.assertEqual([h["name"] for h in histories], ["calibration"])
        self.assertEqual(len(histories[0]["nights"]), 3)  # the planted study is not a night of the history
        self.assertEqual(histories[0]["plots"], ["history-calibration.png"])  # one cell, one metric
        self.assertGreater(os.path.getsize(os.path.join(out, "history-calibration.png")), 1000)
        # Read again: nothing new indexed, the same history; one night alone draws nothing.
        self.assertEqual(side_pages.nightly_histories(root, sets, url, out)[0], histories)
        self.assertEqual(side_pages.nightly_histories(root, sets[:1], "sqlite:///" + os.path.join(
            self.dir, "one.sqlite"), out)[0][0]["plots"], [])
        # A database that cannot be read is a line on the index, not a crash.
        broken = os.path.join(self.dir, "broken.sqlite")
        with open(broken, "wb") as f:
            f.write(b"not a database at all" * 10)
        self.assertEqual(side_pages.nightly_histories(root, sets, "sqlite:///" + broken, out)[0], [])
        self.assertIn("cannot be read", side_pages.nightly_histories(root, sets, "sqlite:///" + broken, out)[1][0][1])

    def test_the_command_line(self):
        root = self.small_results(["nightly-calibration"])
        out = os.path.join(self.dir, "cli-site")
        entries = os.path.join(self.dir, "entries.json")
        self.assertEqual(publish.main(["--results", root, "--out", out, "--built-at", BUILT_AT,
                                       "--entries-json", entries], console=quiet()), publish.EXIT_OK)
        self.assertTrue(os.path.isfile(os.path.join(out, "sets", "nightly-calibration", "index.html")))
        with open(entries) as f:  # what the browser test reads of the whole site (:committed_site)
            written = json.load(f)
        self.assertEqual(written["built_at"], BUILT_AT)
        self.assertEqual([(e["name"], e["failed"]) for e in written["entries"]], [("nightly-calibration", "")])
        self.assertEqual(publish.Study(**written["entries"][0]).folder, "sets/nightly-calibration")
        self.assertEqual(publish.main(["--results", root, "--out", out, "--built-at", "yesterday"],
                                      console=quiet()), publish.EXIT_BAD_INPUT)
        self.assertEqual(publish.main(["--results", os.path.join(self.dir, "nothing"), "--out", out],
                                      console=quiet()), publish.EXIT_BAD_INPUT)


class OldSiteTest(unittest.TestCase):
    def test_an_old_site_holding_a_fifo_or_a_device_link_is_refused_at_once(self):
        # Issue 58, row 11: a FIFO in an old site (with its marker) hung publish; a link to /dev/zero took
        # 2.4 GB before MemoryError. Both are named, never read.
        import threading
        for plant in (os.mkfifo, lambda p: os.symlink("/dev/zero", p)):
            with tempfile.TemporaryDirectory() as out:
                with open(os.path.join(out, "index.html"), "w") as f:
                    f.write("<html></html>\n")
                with open(os.path.join(out, publish.MARKER), "w") as f:
                    f.write(publish.tree_digest(out) + "\n")
                self.assertEqual(publish.not_our_site(out), "")
                plant(os.path.join(out, "planted.png"))
                answer = []
                worker = threading.Thread(target=lambda: answer.append(publish.not_our_site(out)), daemon=True)
                worker.start()
                worker.join(10)
                self.assertFalse(worker.is_alive(), "publish blocked on what was planted")
                self.assertIn("never writes", answer[0])
                self.assertIn("planted.png", answer[0])


if __name__ == "__main__":
    unittest.main()
