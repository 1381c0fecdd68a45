"""The live metrics written to Debian's InfluxDB 1.6 (./bazelw installs it) and read back (issue 63): the
test starts influxd on loopback with its data in the test's folder, a LiveMetrics with a running cell writes
through InfluxWriter for a few seconds, and InfluxQL returns the cell's labels as tags, the host's CPU by
mode growing, and the run's progress; an influxd stopped mid-run is said once and the writer goes on."""

import json
import os
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from rigs.matrix import livemetrics
from rigs.matrix.testing.localserver import LocalServer, find_binary, free_port

DATABASE = "tunelab"


class InfluxDB:
    """influxd on loopback only (HTTP and its backup RPC port), reporting and self-monitoring off."""

    def __init__(self, root):
        binary = find_binary("influxd", "influxdb")
        self.port = free_port()
        config = os.path.join(root, "influxdb.conf")
        with open(config, "w") as f:
            f.write(f'reporting-disabled = true\nbind-address = "127.0.0.1:{free_port()}"\n'
                    f'[meta]\n  dir = "{root}/meta"\n'
                    f'[data]\n  dir = "{root}/data"\n  wal-dir = "{root}/wal"\n  query-log-enabled = false\n'
                    f'[http]\n  bind-address = "127.0.0.1:{self.port}"\n  log-enabled = false\n'
                    '[monitor]\n  store-enabled = false\n[continuous_queries]\n  enabled = false\n'
                    '[subscriber]\n  enabled = false\n')
        self.server = LocalServer("influxd", [binary, "run", "-config", config], root,
                                  f"http://127.0.0.1:{self.port}/ping", 204)
        self.query(f"CREATE DATABASE {DATABASE}", post=True)

    def query(self, q, post=False):
        params = urllib.parse.urlencode({"q": q, "db": DATABASE})
        url = f"http://127.0.0.1:{self.port}/query"
        request = (urllib.request.Request(url, data=params.encode(), method="POST") if post
                   else urllib.request.Request(f"{url}?{params}"))
        with urllib.request.urlopen(request, timeout=30) as r:
            answer = json.load(r)
        result = answer["results"][0]
        if "error" in result:
            raise AssertionError(f"{q}: {result['error']}")
        return result.get("series", [])

    def stop(self):
        self.server.stop()


class InfluxWrites(unittest.TestCase):
    def test_points_written_during_a_cell_read_back(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        influx = InfluxDB(root)
        self.addCleanup(influx.stop)
        live = livemetrics.LiveMetrics("20261129T070000Z-beef", "calibration", "calibration", "smoke", ["gc", "jdk"])
        live.set_planned(4, 30.0)
        live.cell_started("2c0b5e67fcfd", 0, {"gc": "g1", "jdk": "17"})
        said = []
        writer = livemetrics.InfluxWriter(live.registry, f"http://127.0.0.1:{influx.port}/write?db={DATABASE}",
                                          said.append, interval_s=0.5).start()
        self.addCleanup(writer.stop)
        busy_until = time.monotonic() + 3.0
        while time.monotonic() < busy_until:  # the host's user CPU moves while the writer writes
            sum(i * i for i in range(20000))
        live.process_cpu_seconds("loop", 2.5)
        time.sleep(1.5)
        self.assertGreaterEqual(writer.written, 4, said)
        self.assertEqual(said, [])

        [cell] = influx.query('SELECT "value", "cell", "gc", "jdk", "repetition", "rig" FROM "tunelab_cell_info"')
        first = dict(zip(cell["columns"], cell["values"][0]))
        self.assertEqual((first["cell"], first["gc"], first["jdk"], first["repetition"], first["rig"], first["value"]),
                         ("2c0b5e67fcfd", "g1", "17", "0", "calibration", 1.0))
        [user] = influx.query('SELECT "value" FROM "tunelab_host_cpu_seconds_total" WHERE "mode" = \'user\'')
        values = [v for _, v in user["values"]]
        self.assertGreater(values[-1], values[0], "the host's user CPU did not grow between the first and last write")
        [steal] = influx.query('SELECT count("value") FROM "tunelab_host_cpu_seconds_total" WHERE "mode" = \'steal\'')
        self.assertGreaterEqual(steal["values"][0][1], 4)
        [cpu] = influx.query('SELECT last("value") FROM "tunelab_cell_process_cpu_seconds_total" WHERE "role" = \'loop\'')
        self.assertEqual(cpu["values"][0][1], 2.5)

        influx.stop()  # InfluxDB goes away mid-run: said once, the writer goes on
        time.sleep(1.6)
        self.assertEqual(len(said), 1, said)
        self.assertIn("refused or is down", said[0])
        self.assertTrue(writer.thread.is_alive())


if __name__ == "__main__":
    unittest.main()
