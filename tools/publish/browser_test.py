"""The whole results site, built once from every committed set by //tools/publish:committed_site (a build
output, with its entries as JSON; publish_test renders a few; issue 80): every link resolves inside it, every set
is published or listed with its reason, the studies and the Sensitivity page say what they must; then in a real
browser: Debian's headless Chromium, driven through its chromium-driver, loads the site from an HTTP server on
loopback. Every page's links and images must resolve (the server answers 200 for every request the browser and
the link check make) and the console must stay free of errors. A screenshot of the index is left in the test's
undeclared outputs (bazel-testlogs/tools/publish/browser_test/test.outputs/) to be looked at.

  args: SITE_TAR ENTRIES_JSON (the committed_site rule's outputs)
"""

import functools
import html
import http.server
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import threading
import unittest
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from analysis.sensitivity import figures as sensitivity_figures
from tools.publish import publish
from tools.publish.site_links import links_of
from tools.publish import studies as studies_toml

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results")
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
PROFILED_SET = "calibration-profile-slowdown-20261129-2vcpu"  # results/baselines/README.md
MONITORED_SET = "yarn-failover-profile-overhead-20261129-2vcpu"  # its results keep their launches' monitors
SITE_TAR, ENTRIES_JSON = (os.path.abspath(p) for p in sys.argv[1:3])
del sys.argv[1:]


class RecordingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site and records (path, status) of every request."""

    def __init__(self, *args, requests, **kwargs):
        self.requests = requests
        super().__init__(*args, **kwargs)

    def log_request(self, code="-", size="-"):
        self.requests.append((urllib.parse.unquote(self.path.split("?")[0]), int(code)))

    def log_message(self, *args):
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    """Says nothing of a connection the browser closed mid-answer (it stops loading a PDF it will not show):
    every request's status is recorded before its body is sent."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class BrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in (CHROMIUM, CHROMEDRIVER):
            if not os.path.exists(tool):
                raise AssertionError(f"{tool} is missing: ./bazelw installs Debian's chromium and chromium-driver")
        cls.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.site = os.path.join(cls.dir, "site")
        with tarfile.open(SITE_TAR) as archive:  # our own build's output: a folder "site" of plain files
            archive.extractall(cls.dir, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        with open(ENTRIES_JSON) as f:
            cls.studies = [publish.Study(**entry) for entry in json.load(f)["entries"]]
        cls.requests = []
        handler = functools.partial(RecordingHandler, directory=cls.site, requests=cls.requests)
        cls.server = QuietServer(("127.0.0.1", 0), handler)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.base = f"http://127.0.0.1:{cls.server.server_address[1]}/"
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    f"--user-data-dir={os.path.join(cls.dir, 'profile')}", "--window-size=1400,1000",
                    "--no-first-run", "--disable-background-networking", "--disable-component-update"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        cls.driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER, log_output=os.path.join(
            cls.dir, "chromedriver.log")))

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.server.shutdown()
        cls.server.server_close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def visit(self, relative):
        """Loads a page; returns its links (absolute URLs on this server) and its broken images."""
        self.driver.get(self.base + relative)
        broken = self.driver.execute_script(
            "return Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
        links = [a.get_attribute("href") for a in self.driver.find_elements(By.CSS_SELECTOR, "a[href]")]
        return links, broken

    def test_the_committed_sets_make_a_site_whose_links_all_resolve_inside_it(self):
        out, studies = self.site, self.studies
        committed = sorted(n for n in os.listdir(os.path.join(RESULTS, "baselines"))
                           if os.path.isdir(os.path.join(RESULTS, "baselines", n)))
        self.assertEqual(sorted(s.name for s in studies if not s.declared), committed)  # every set: published or listed
        with open(os.path.join(RESULTS, "baselines", "studies.toml")) as f:
            declared, _ = studies_toml.parse(f.read(), set(committed))
        self.assertEqual(sorted(s.name for s in studies if s.declared), sorted(d.id for d in declared))
        with open(os.path.join(out, "index.html")) as f:
            index = f.read()
        # Issue 40: every answer on the index is one line of at most ~120 characters.
        answers = re.findall(r'<td class="one-line">(.*?)</td>', index, re.S)
        in_studies = {name for s in studies if s.declared for name in s.sets}  # listed through their study
        self.assertEqual(len(answers), sum(not s.failed and (s.declared or s.name not in in_studies) for s in studies))
        for answer in answers:
            self.assertNotIn("\n", answer)
            self.assertLessEqual(len(html.unescape(answer)), 120, answer)
        # The Kunpeng vs x86 study: two sets, its own title, the emulated banner, the heartbeat cap said.
        kunpeng = next(s for s in studies if s.name == "kunpeng-vs-x86-yarn")
        self.assertEqual((kunpeng.kind, len(kunpeng.sets), kunpeng.failed), ("cross-host", 2, ""))
        with open(os.path.join(out, "studies", "kunpeng-vs-x86-yarn", "index.html")) as f:
            page = f.read()
        for text in ("Kunpeng vs x86: YARN scheduling throughput", "EMULATED HOST: mechanics, not speed",
                     "x86 at its heartbeat cap (100 containers/s): the gap is a lower bound",
                     "bazel run //analysis:report -- results/baselines/yarn_cps-cross-arch-x86-20261125-2vcpu"):
            self.assertIn(html.escape(text, quote=False), page)
        self.assertIn('<a href="../../sets/yarn_cps-cross-arch-arm64-emulated-20261125/index.html">', page)
        self.assertNotIn("baselines/", kunpeng.question)  # a question in words, never a path
        # Issue 62: the cold MR1 vs MR2 set says on its page that it measured start-up; the study reads the steady one.
        with open(os.path.join(out, "sets", "mapreduce-mr1-vs-mr2-smoke-2vcpu", "index.html")) as f:
            self.assertIn("<strong>What this set measured:</strong> JVM start-up", f.read())
        # The study reads both designs in parts (local mode at steady state, the cluster under pressure); the
        # first cluster set's page says its MR2 cluster ran more tasks at once than MR1's.
        mr = next(s for s in studies if s.name == "mr1-vs-mr2")
        self.assertEqual(mr.sets, ["mapreduce-mr1-vs-mr2-steady-20261126-2vcpu",
                                   "mapreduce-cluster-pressure-20261201-2vcpu"])
        with open(os.path.join(out, "studies", "mr1-vs-mr2", "index.html")) as f:
            page = html.unescape(f.read())
        for text in ("--kind mr1-vs-mr2 --parts", "In part 1 (", "In part 2 (", "mr2 vs mr1: mr_compare"):
            self.assertIn(text, page)
        with open(os.path.join(out, "sets", "mapreduce-cluster-shuffle-20261129-2vcpu", "index.html")) as f:
            self.assertIn("up to ~16 tasks against MR1's 6", html.unescape(f.read()))
        # A study of another case study than its rig's (YARN's message storm, 003, under YARN's 000) says its own;
        # its answer is a slope per heartbeat interval, its figure the scaling curve.
        storm = re.search(r'>YARN&#39;s message storm:.*?</td>\s*<td class="one-line">(.*?)</td>', index, re.S)
        self.assertTrue(storm, "the message storm study's row")
        self.assertIn("<small>case study 003</small>", storm.group(0))
        self.assertIn("per 1,000 nodes: nm_heartbeat_ms 250 -219", html.unescape(storm.group(1)))
        self.assertNotRegex(index, r">Kunpeng vs x86: YARN scheduling throughput</a> <small>case study")
        for study in studies:
            # A set a study reads is reached through that study's page; every other entry is on the index.
            self.assertIn(study.name, index if study.declared or study.name not in in_studies else
                          "".join(open(os.path.join(out, s.folder, "index.html")).read() for s in studies
                                  if s.declared and study.name in s.sets))
            if study.failed:
                self.assertIn(study.failed[:40], index)
            else:
                self.assertTrue(study.question, study.name)
                self.assertTrue(study.answer, study.name)
        self.assertGreaterEqual(sum(not s.failed for s in studies), len(committed) - 2)
        # The committed bisects (results/bisects/): each on the index with its report.
        bisects = sorted(os.listdir(os.path.join(RESULTS, "bisects")))
        self.assertTrue(bisects, "no committed bisect")
        for name in bisects:
            self.assertIn(f'<a href="bisects/{name}/report.html">{name}</a>', index)
            self.assertGreater(os.path.getsize(os.path.join(out, "bisects", name, "report.pdf")), 10_000)
        # Our pages: the interactive flame graphs are async-profiler's converter's own (their footer names its
        # project), checked in the browser below.
        pages = [os.path.join(folder, f) for folder, _, files in os.walk(out) for f in files
                 if f.endswith(".html") and os.path.basename(folder) != "flames"]
        checked = 0
        for page in pages:
            for target in links_of(page):
                parsed = urllib.parse.urlparse(target)
                if parsed.scheme == "data":
                    continue  # the reports' figures are inside their page
                if target.startswith("#"):  # a place on the page itself (the index's groups)
                    with open(page) as f:
                        self.assertIn(f'id="{target[1:]}"', f.read(), f"{os.path.relpath(page, out)}: {target}")
                    continue
                self.assertFalse(parsed.scheme or parsed.netloc or target.startswith("/"),
                                 f"{os.path.relpath(page, out)} points outside the site: {target}")
                resolved = os.path.normpath(os.path.join(os.path.dirname(page), urllib.parse.unquote(parsed.path)))
                self.assertTrue(resolved.startswith(out + os.sep) and os.path.isfile(resolved),
                                f"{os.path.relpath(page, out)}: {target} does not resolve")
                checked += 1
        self.assertGreater(checked, 3 * len(studies))
        # The Sensitivity page: every committed figure, by rig and metric, with its set and its plot.
        with open(os.path.join(out, "sensitivity.html")) as f:
            page = f.read()
        rows = sensitivity_figures.history(os.path.join(RESULTS, "baselines"))
        self.assertGreaterEqual(len({r["rig"] for r in rows}), 3)
        for r in rows:
            for profile, d in r["designs"].items():  # the stated D of each gated profile, a fraction worse
                self.assertIn(f"<td>{r['metric']}</td><td>{profile} ({d['describe']})</td><td>"
                              f"{100 * d['d_worse_by']:.1f} %</td>", page)
            self.assertIn(r["set"], page)
            self.assertTrue(os.path.isfile(os.path.join(out, f"sensitivity-{r['rig']}.png")))
        mr = next((s for s in studies if s.kind == "stock-vs-patched"), None) or studies[0]
        with open(os.path.join(out, mr.folder, "report.pdf"), "rb") as f:
            self.assertEqual(f.read(5), b"%PDF-")

    def test_every_page_link_and_image_resolves_and_the_console_stays_clean(self):
        pages, seen, errors = ["index.html"], set(), []
        while pages:
            page = pages.pop()
            if page in seen:
                continue
            seen.add(page)
            links, broken = self.visit(page)
            self.assertEqual(broken, [], f"{page}: images that did not load")
            for link in links:
                self.assertTrue(link.startswith(self.base), f"{page} links outside the site: {link}")
                target = link[len(self.base):].split("#")[0]
                if target.endswith(".html") and "/flames/" not in target:
                    pages.append(target)
                else:  # a PDF, JSON or flame graph (the converter's page, its own test below): fetched
                    with urllib.request.urlopen(link, timeout=10) as response:
                        self.assertEqual(response.status, 200, link)
            errors += [f"{page}: {e['message']}" for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [])
        self.assertGreater(len(seen), 10)  # the index, the published figures, a page and a report per set
        self.assertEqual([r for r in self.requests if r[1] not in (200, 304)], [])  # 304: the cached stylesheet
        self.assertTrue(any(p.endswith("/report.html") for p in seen))
        outputs = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", self.dir)
        self.driver.get(self.base + "index.html")
        self.assertTrue(self.driver.save_screenshot(os.path.join(outputs, "index.png")))
        self.assertIn("sensitivity.html", seen)  # linked from every page's header
        self.driver.get(self.base + "sensitivity.html")
        body = self.driver.find_element(By.TAG_NAME, "body").text
        for metric in ("cpu_loop_rate", "container_allocation_rate", "create_rate"):
            self.assertIn(metric, body)
        self.assertTrue(self.driver.save_screenshot(os.path.join(outputs, "sensitivity.png")))
        self.driver.get(self.base + "sets/yarn_cps-gate-cps-lean-2vcpu/report.html")
        self.assertTrue(self.driver.save_screenshot(os.path.join(outputs, "report.png")))

    def test_a_profiled_sets_flame_graph_page_is_interactive(self):
        # Issue 60: a profiled set's page links the differential flame graph of each comparison; the page
        # draws on its canvas and a search highlights the injected spin (the converter's own page script).
        self.driver.get(self.base + f"sets/{PROFILED_SET}/index.html")
        links = self.driver.find_elements(By.CSS_SELECTOR, "a.flame")
        self.assertEqual(len(links), 1, self.driver.find_element(By.TAG_NAME, "body").text[:500])
        self.assertIn("injected_slowdown_pct: 20 vs 0 (cpu): Calibration.spin +", links[0].text)
        links[0].click()
        self.assertTrue(self.driver.current_url.endswith(".cpu.html"), self.driver.current_url)
        canvas = self.driver.find_element(By.TAG_NAME, "canvas")
        self.assertGreater(int(canvas.get_attribute("height")), 100)
        drawn = self.driver.execute_script(
            "const c = document.querySelector('canvas'); const d = c.getContext('2d')"
            ".getImageData(0, 0, c.width, c.height).data; let n = 0;"
            "for (let i = 3; i < d.length; i += 4) { if (d[i]) n++; } return n;")
        self.assertGreater(drawn, 1000)  # pixels painted: the graph was drawn, not only loaded
        # The page's own search (its names are compressed in the page): the spin's share of the merged samples.
        self.driver.execute_script("search('Calibration\\.spin')")
        matched = self.driver.find_element(By.ID, "matchval").text
        self.assertGreater(float(matched.rstrip("%")), 5.0, matched)
        self.assertEqual([e for e in self.driver.get_log("browser") if e["level"] == "SEVERE"], [])
        outputs = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", self.dir)
        self.driver.execute_script("window.scrollTo(0, document.body.scrollHeight)")  # the graph grows upwards
        self.assertTrue(self.driver.save_screenshot(os.path.join(outputs, "flame-graph.png")))

    def test_a_monitored_cells_page_draws_every_series_its_runs_stored(self):
        # Issue 63: from a set's page to one cell's monitors (the host's CPU and steal, load, memory and the
        # failover RM's own values), each a picture that loaded.
        self.driver.get(self.base + f"sets/{MONITORED_SET}/index.html")
        links = [a for a in self.driver.find_elements(By.CSS_SELECTOR, "a[href]")
                 if "/monitors/" in a.get_attribute("href")]
        self.assertEqual(len(links), 2, self.driver.find_element(By.TAG_NAME, "body").text[:500])  # extra, timed
        links[0].click()
        body = self.driver.find_element(By.TAG_NAME, "body").text
        for series in ("host cores busy", "host load average", "host memory available", "rm.recovery_seconds"):
            self.assertIn(series, body)
        sizes = self.driver.execute_script("return Array.from(document.images).map(i => i.naturalWidth)")
        self.assertGreaterEqual(len(sizes), 6)
        self.assertTrue(all(w > 300 for w in sizes), sizes)
        self.assertEqual([e for e in self.driver.get_log("browser") if e["level"] == "SEVERE"], [])
        outputs = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", self.dir)
        self.assertTrue(self.driver.save_screenshot(os.path.join(outputs, "monitors.png")))

    def test_the_kunpeng_vs_x86_study_from_the_index(self):
        # Issue 40: the study is reached from the index, says what it is, that a host was emulated and that the
        # x86 side sits at its heartbeat cap; every index answer is one line.
        self.driver.get(self.base + "index.html")
        answers = [e.text for e in self.driver.find_elements(By.CSS_SELECTOR, "td.one-line")]
        self.assertGreater(len(answers), 10)
        for answer in answers:
            self.assertNotIn("\n", answer)
            self.assertLessEqual(len(answer), 120, answer)
        row = self.driver.find_element(By.XPATH, "//tr[td/a[text()='Kunpeng vs x86: YARN scheduling throughput']]")
        self.assertIn("EMULATED HOST: mechanics, not speed", row.text)
        self.assertIn("heartbeat cap", row.text)
        row.find_element(By.LINK_TEXT, "Kunpeng vs x86: YARN scheduling throughput").click()
        self.assertTrue(self.driver.current_url.endswith("/studies/kunpeng-vs-x86-yarn/index.html"))
        self.assertEqual(self.driver.find_element(By.TAG_NAME, "h1").text, "Kunpeng vs x86: YARN scheduling throughput")
        body = self.driver.find_element(By.TAG_NAME, "body").text
        self.assertIn("EMULATED HOST: mechanics, not speed", body)
        self.assertIn("x86 at its heartbeat cap (100 containers/s): the gap is a lower bound", body)
        self.assertNotIn("baselines/yarn_cps", self.driver.find_element(By.CLASS_NAME, "question").text)
        outputs = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", self.dir)
        self.assertTrue(self.driver.save_screenshot(os.path.join(outputs, "kunpeng-vs-x86.png")))


if __name__ == "__main__":
    unittest.main()
