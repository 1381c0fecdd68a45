"""The live endpoint and the InfluxDB writer (rigs/matrix/livemetrics.py) against a host of files: what a
scrape reads (progress, the running cell's labels, its processes' CPU, the host's CPU by mode, load, memory),
OpenMetrics when asked, loopback by default, a port in use refused to the caller, a scraper that cannot change
the run, and line protocol written to a server, a refusal said once."""

import http.server
import os
import tempfile
import threading
import unittest
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from rigs.matrix import livemetrics
from rigs.matrix.contract.rig import LiveMetric

HZ = os.sysconf("SC_CLK_TCK")


def fake_proc(steal_ticks=250):
    proc = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    with open(os.path.join(proc, "stat"), "w") as f:
        f.write(f"cpu  1000 5 300 9000 40 0 7 {steal_ticks} 0 0\ncpu0 500 2 150 4500 20 0 3 125 0 0\n")
    with open(os.path.join(proc, "loadavg"), "w") as f:
        f.write("1.25 0.80 0.50 2/300 4242\n")
    with open(os.path.join(proc, "meminfo"), "w") as f:
        f.write("MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n")
    return proc


def scrape(url, accept=None):
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.read().decode()


def samples(text):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


class Endpoint(unittest.TestCase):
    def setUp(self):
        self.live = livemetrics.LiveMetrics("20261129T060000Z-abcd", "calibration", "calibration", "smoke",
                                            ["gc", "jdk"], proc=fake_proc())
        self.server, self.url = livemetrics.serve(self.live, 0)
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)

    def test_a_scrape_reads_the_run_the_cell_and_the_host(self):
        self.live.set_planned(6, 120.0)
        self.live.cell_started("2c0b5e67fcfd", 1, {"gc": "g1", "jdk": "17", "other": "x"})
        self.live.process_cpu_seconds("loop", 3.5)
        got = samples(scrape(self.url))
        cell = ("tunelab_cell_info", (("cell", "2c0b5e67fcfd"), ("gc", "g1"), ("jdk", "17"), ("repetition", "1"),
                                      ("rig", "calibration")))
        self.assertEqual(got[cell], 1)
        self.assertEqual(got[("tunelab_run_cell_repetitions", ())], 6)
        self.assertEqual(got[("tunelab_run_eta_seconds", ())], 120)
        self.assertEqual(got[("tunelab_cell_process_cpu_seconds_total", (("cell", "2c0b5e67fcfd"), ("role", "loop")))],
                         3.5)
        self.assertAlmostEqual(got[("tunelab_host_cpu_seconds_total", (("mode", "steal"),))], 250 / HZ)
        self.assertAlmostEqual(got[("tunelab_host_cpu_seconds_total", (("mode", "user"),))], 1000 / HZ)
        self.assertEqual(got[("tunelab_host_load1", ())], 1.25)
        self.assertEqual(got[("tunelab_host_memory_available_bytes", ())], 20000000 * 1024)
        run = [k for k in got if k[0] == "tunelab_run_info"]
        self.assertEqual(dict(run[0][1])["run_id"], "20261129T060000Z-abcd")

        self.live.cell_done("ok")
        got = samples(scrape(self.url))
        self.assertFalse([k for k in got if k[0] in ("tunelab_cell_info", "tunelab_cell_process_cpu_seconds_total")])
        self.assertEqual(got[("tunelab_run_cell_repetitions_done_total", (("status", "ok"),))], 1)

    def test_openmetrics_when_asked_and_loopback_by_default(self):
        text = scrape(self.url, "application/openmetrics-text; version=1.0.0; charset=utf-8")
        self.assertTrue(text.endswith("# EOF\n"))
        self.assertEqual(self.server.server_address[0], "127.0.0.1")
        self.assertTrue(self.url.startswith("http://127.0.0.1:"))

    def test_a_port_in_use_is_an_error_for_the_caller(self):
        with self.assertRaises(OSError):
            livemetrics.serve(self.live, self.server.server_port)

    def test_a_scraper_cannot_change_the_run(self):
        self.live.set_planned(4, 60.0)
        self.live.cell_started("c1", 0, {"gc": "g1", "jdk": "11"})
        before = {k: v for k, v in samples(scrape(self.url)).items() if not k[0].startswith("tunelab_host")}
        for method, body in (("POST", b"tunelab_run_cell_repetitions 0\n"), ("PUT", b"x"), ("DELETE", None)):
            request = urllib.request.Request(self.url + "?name[]=tunelab_run_info", data=body, method=method)
            try:
                urllib.request.urlopen(request, timeout=5).read()
            except urllib.error.HTTPError:
                pass  # refused is as good as ignored
        after = {k: v for k, v in samples(scrape(self.url)).items() if not k[0].startswith("tunelab_host")}
        self.assertEqual(before, after)

    def test_an_axis_that_cannot_be_a_label_is_refused(self):
        for axis in ("cell", "__name", "with-dash", "rig"):
            with self.subTest(axis), self.assertRaises(livemetrics.LiveMetricsError):
                livemetrics.LiveMetrics("r", "calibration", "m", "p", [axis])

    def test_a_host_without_proc_files_serves_the_rest(self):
        live = livemetrics.LiveMetrics("r", "calibration", "m", "p", [], proc="/nonexistent")
        names = {f.name for f in live.registry.collect()}
        self.assertIn("tunelab_run_info", names)
        self.assertFalse({n for n in names if n.startswith("tunelab_host")})


DECLARED = {"things_done": LiveMetric("counter", "Things done"), "queue_items": LiveMetric("gauge", "Queue")}


class RigValues(unittest.TestCase):
    def test_the_rigs_declared_values_are_served_per_role_until_the_cell_ends(self):
        live = livemetrics.LiveMetrics("r", "fake", "m", "p", [], proc="/nonexistent", rig_metrics=DECLARED)
        live.cell_started("c1", 0, {})
        live.set_rig_values("main", {"things_done": 1.0, "queue_items": 5.0})
        live.set_rig_values("main", {"things_done": 3.0, "queue_items": 7.0})
        live.set_rig_values("client", {"things_done": 9.0, "strangers": 4.0})  # undeclared: never served
        text = livemetrics.line_protocol(live.registry, now_ns=1)
        self.assertIn("tunelab_fake_things_done_total,cell=c1,role=main value=3.0 1", text)
        self.assertIn("tunelab_fake_queue_items,cell=c1,role=main value=7.0 1", text)
        self.assertIn("tunelab_fake_things_done_total,cell=c1,role=client value=9.0 1", text)
        self.assertNotIn("strangers", text)
        live.cell_done("ok")
        live.cell_started("c2", 0, {})  # a new cell starts from nothing
        self.assertNotIn("tunelab_fake_things_done_total,", livemetrics.line_protocol(live.registry))

    def test_a_declared_name_that_cannot_be_a_metric_is_refused(self):
        for name in ("things_total", "with-dash"):
            with self.subTest(name), self.assertRaises(livemetrics.LiveMetricsError):
                livemetrics.LiveMetrics("r", "fake", "m", "p", [], rig_metrics={name: LiveMetric("gauge", "x")})


class Influx(unittest.TestCase):
    def serve(self):
        bodies, auths = [], []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 -- the standard library's name
                bodies.append((self.path, self.rfile.read(int(self.headers["Content-Length"])).decode()))
                auths.append(self.headers.get("Authorization"))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.auths = auths
        return server, bodies

    def test_line_protocol_is_written_and_a_refusal_said_once(self):
        server, bodies = self.serve()
        live = livemetrics.LiveMetrics("r1", "calibration", "cal", "smoke", ["gc"], proc=fake_proc())
        live.cell_started("c1", 2, {"gc": "g 1,=x"})
        said = []
        writer = livemetrics.InfluxWriter(live.registry, f"http://127.0.0.1:{server.server_port}/write?db=tunelab",
                                          said.append)
        self.assertTrue(writer.write_once())
        [(path, body)] = bodies
        self.assertEqual(path, "/write?db=tunelab")
        lines = body.splitlines()
        self.assertIn(r"tunelab_cell_info,cell=c1,gc=g\ 1\,\=x,repetition=2,rig=calibration value=1.0 ", body)
        self.assertTrue(any(line.startswith("tunelab_host_cpu_seconds_total,mode=steal value=") for line in lines))
        self.assertFalse([line for line in lines if "NaN" in line or "nan" in line.split(" ")[1]])  # the ETA unknown
        server.shutdown()
        server.server_close()
        self.assertFalse(writer.write_once())
        self.assertFalse(writer.write_once())
        self.assertEqual(len(said), 1)
        self.assertIn("refused or is down", said[0])

    def test_a_password_in_the_url_is_sent_as_authentication_and_never_shown(self):
        # Issue 78, row 6: the password went whole into the "refused or is down" message, user@host was a host.
        server, bodies = self.serve()
        live = livemetrics.LiveMetrics("r1", "calibration", "cal", "smoke", [], proc=fake_proc())
        said = []
        port = server.server_port
        writer = livemetrics.InfluxWriter(live.registry, f"http://tl:S3cretPw@127.0.0.1:{port}/write?db=t&u=tl&p=S3cretPw",
                                          said.append)
        self.assertTrue(writer.write_once())
        self.assertEqual(self.auths, ["Basic dGw6UzNjcmV0UHc="])  # base64 of tl:S3cretPw
        self.assertEqual([path for path, _ in bodies], ["/write?db=t&u=tl&p=S3cretPw"])
        server.shutdown()
        server.server_close()
        self.assertFalse(writer.write_once())
        self.assertEqual(len(said), 1)
        self.assertNotIn("S3cretPw", said[0])
        self.assertIn(f"http://tl:***@127.0.0.1:{port}/write?db=t&u=tl&p=***", said[0])
        with self.assertRaises(livemetrics.LiveMetricsError) as refused:
            livemetrics.InfluxWriter(live.registry, "http://tl:S3cretPw@127.0.0.1:8086write", print)
        self.assertNotIn("S3cretPw", str(refused.exception))

    def test_a_url_that_is_not_one_is_refused(self):
        live = livemetrics.LiveMetrics("r1", "calibration", "cal", "smoke", [])
        for url in ("", "ftp://x/write", "http://", "127.0.0.1:8086/write"):
            with self.subTest(url), self.assertRaises(livemetrics.LiveMetricsError):
                livemetrics.InfluxWriter(live.registry, url, print)


class HostileValues(unittest.TestCase):
    """Issue 78, rows 5 and 6: every value an axis, a profile or a user can give, in each output by its rules."""

    def test_line_protocol_keeps_one_point_a_line_whatever_a_value_holds(self):
        live = livemetrics.LiveMetrics("r1", "calibration", "cal", "smoke", ["gc", "heap"], proc=fake_proc())
        live.cell_started("c1", 0, {"gc": "g1\nevil_measurement,host=x value=666 1", "heap": "trailing\\"})
        body = livemetrics.line_protocol(live.registry, now_ns=7)
        self.assertNotIn("evil_measurement,host", [line.split(" ")[0] for line in body.splitlines()])
        [info] = [line for line in body.splitlines() if line.startswith("tunelab_cell_info,")]
        self.assertEqual(info, r"tunelab_cell_info,cell=c1,gc=g1?evil_measurement\,host\=x\ value\=666\ 1,"
                               r"heap=trailing/,repetition=0,rig=calibration value=1.0 7")
        for line in body.splitlines():  # every line: measurement[,tags] value=V T (spaces escaped), nothing more
            self.assertRegex(line, r"^(?:[^ \\]|\\[ ,=])+ value=[^ ]+ 7$")

    def test_known_answers_per_part(self):
        self.assertEqual(livemetrics.escape_key("a b,c=d"), r"a\ b\,c\=d")
        self.assertEqual(livemetrics.escape_key("m=x y,z", measurement=True), r"m=x\ y\,z")
        self.assertEqual(livemetrics.escape_key("x\r\ny\t\\"), "x??y?/")

    def test_prometheus_labels_carry_any_value(self):
        # prometheus_client escapes a label value itself (backslash, quote, newline): a scrape parses back to it.
        live = livemetrics.LiveMetrics("r1", "calibration", "cal", "smoke", ["gc"], proc=fake_proc())
        hostile = 'a"b\\c\nd} x{y="1"'
        live.cell_started("c1", 0, {"gc": hostile})
        server, url = livemetrics.serve(live, 0)
        try:
            found = samples(scrape(url))
        finally:
            server.shutdown()
            server.server_close()
        [labels] = [dict(k[1]) for k in found if k[0] == "tunelab_cell_info"]
        self.assertEqual(labels["gc"], hostile)


if __name__ == "__main__":
    unittest.main()
