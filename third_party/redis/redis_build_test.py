"""The Redis builds: what was built is Debian's 7.0.15, the patch took effect, a broken patch is named.

Runs the real binaries built by //third_party/redis:stock and :embstr_to_128_bytes on 127.0.0.1.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import hashlib

from rigs.matrix.contract.rig import free_loopback_port, port_in_use
from third_party.redis import fetch_debian_source

HERE = os.path.dirname(os.path.abspath(__file__))
BUILDS = {"stock": os.path.join(HERE, "stock"), "patched": os.path.join(HERE, "embstr_to_128_bytes_upto_1")}


class RedisServer:
    """A redis-server of one build on a free loopback port, without persistence; always shut down."""

    def __init__(self, build):
        self.build, self.port = build, free_loopback_port()
        self.workdir = tempfile.mkdtemp(prefix="redis-test-")

    def __enter__(self):
        self.proc = subprocess.Popen(
            [os.path.join(self.build, "redis-server"), "--bind", "127.0.0.1", "--port", str(self.port),
             "--save", "", "--appendonly", "no", "--dir", self.workdir],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 20
        while not port_in_use(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("redis-server did not start:\n" + self.proc.stdout.read())
            time.sleep(0.05)
        return self

    def cli(self, *args):
        return subprocess.run([os.path.join(self.build, "redis-cli"), "-p", str(self.port), *args],
                              capture_output=True, text=True, check=True).stdout.strip()

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.proc.stdout.close()
        with socket.socket() as s:  # the port is free again
            assert s.connect_ex(("127.0.0.1", self.port)) != 0


class BuiltRedisTest(unittest.TestCase):
    def test_version_and_manifest(self):
        for variant, build in BUILDS.items():
            with self.subTest(variant):
                with open(os.path.join(build, "manifest.json")) as f:
                    manifest = json.load(f)
                self.assertEqual(manifest["debian_version"], "5:7.0.15-1~deb12u10")
                self.assertIn("0004-Add-support-for-USE_SYSTEM_JEMALLOC-flag.patch", manifest["debian_patches"])
                for binary, sha in manifest["binaries"].items():
                    with open(os.path.join(build, binary), "rb") as f:
                        self.assertEqual(hashlib.sha256(f.read()).hexdigest(), sha, binary)
                version = subprocess.run([os.path.join(build, "redis-server"), "--version"],
                                         capture_output=True, text=True, check=True).stdout
                self.assertIn("v=7.0.15", version)
                self.assertIn("malloc=jemalloc", version)
        with open(os.path.join(BUILDS["patched"], "manifest.json")) as f:
            patched = json.load(f)
        self.assertEqual(patched["applied"], ["0001-embed-string-values-up-to-108-bytes.patch"])
        self.assertRegex(patched["patch_set_sha256"], "^[0-9a-f]{64}$")

    def test_the_patch_embeds_values_up_to_108_bytes(self):
        expected = {"stock": {44: "embstr", 45: "raw", 108: "raw"},
                    "patched": {44: "embstr", 45: "embstr", 108: "embstr", 109: "raw"}}
        for variant, encodings in expected.items():
            with RedisServer(BUILDS[variant]) as server:
                for size, encoding in encodings.items():
                    server.cli("SET", f"k{size}", "v" * size)
                    self.assertEqual(server.cli("OBJECT", "ENCODING", f"k{size}"), encoding, (variant, size))
                    self.assertEqual(server.cli("GET", f"k{size}"), "v" * size)

    def test_a_patch_that_does_not_apply_names_file_and_hunk(self):
        source = os.path.join(os.environ["TEST_SRCDIR"], "redis_debian_source")
        out = tempfile.mkdtemp()
        proc = subprocess.run(
            [sys.executable, os.path.join(HERE, "build_redis.py"),
             "--orig", os.path.join(source, "redis_7.0.15.orig.tar.gz"),
             "--debian", os.path.join(source, "redis_7.0.15-1~deb12u10.debian.tar.xz"),
             "--debian-version", "5:7.0.15-1~deb12u10",
             "--series", os.path.join(HERE, "testdata", "series"),
             "--patch", os.path.join(HERE, "testdata", "0001-does-not-apply.patch"),
             "--out-dir", out, "--out-manifest", os.path.join(out, "manifest.json")],
            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("patch 0001-does-not-apply.patch does not apply: src/object.c: hunk #1 FAILED at line 119",
                      proc.stderr)
        self.assertEqual(os.listdir(out), [], "nothing is left behind")


class PrivateSourcesTest(unittest.TestCase):
    def test_debian_sources_become_deb_src(self):
        # testdata/debian.sources: this image's /etc/apt/sources.list.d/debian.sources, copied as is.
        with open(os.path.join(HERE, "testdata", "debian.sources")) as f:
            converted = fetch_debian_source.source_entries(f.read())
        self.assertEqual(converted.count("Types: deb-src"), 2)
        self.assertNotRegex(converted, r"Types: deb\n")
        self.assertIn("Suites: bookworm-security", converted)
        self.assertIn("Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg", converted)

    def test_one_line_sources(self):
        text = "# comment\ndeb [arch=amd64] http://example.invalid/debian bookworm main\ndeb-src x y z\n"
        self.assertEqual(fetch_debian_source.source_lines(text),
                         "deb-src [arch=amd64] http://example.invalid/debian bookworm main\n")


if __name__ == "__main__":
    unittest.main()
