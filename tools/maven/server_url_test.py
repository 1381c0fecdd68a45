"""The Maven repository address found as this machine's Maven finds it (tools/maven/server_url.py): the
environment first, then a mirror of central in the user's settings, then the machine's, then the super POM of
Debian's maven (read from the real jar where this machine has it), and a clear error when there is none. And a
download through the address found reaches a mirror the user names (a loopback file server)."""

import functools
import http.server
import os
import tempfile
import threading
import unittest
import urllib.request
import zipfile

from tools.maven import server_url

SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<settings>
  <mirrors>
    <mirror><id>blocker</id><mirrorOf>external:http:*</mirrorOf><url>http://0.0.0.0/</url><blocked>true</blocked></mirror>
    <mirror><id>other</id><mirrorOf>snapshots</mirrorOf><url>https://other.invalid/m2</url></mirror>
    <mirror><id>not-central</id><mirrorOf>*,!central</mirrorOf><url>https://notcentral.invalid/m2</url></mirror>
    <mirror><id>team</id><mirrorOf>central</mirrorOf><url>{url}</url></mirror>
  </mirrors>
</settings>
"""
SUPER_POM = ('<project><modelVersion>4.0.0</modelVersion><repositories><repository><id>central</id>'
             '<url>https://superpom.invalid/repository</url></repository></repositories></project>')


class ServerUrlTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.home = os.path.join(self.dir, "home")
        os.makedirs(os.path.join(self.home, ".m2"))
        self.jar = os.path.join(self.dir, "maven-model-builder-3.8.7.jar")
        with zipfile.ZipFile(self.jar, "w") as z:
            z.writestr(server_url.SUPER_POM, SUPER_POM)

    def find(self, environ=None):
        return server_url.find(environ or {}, self.home, global_settings=(os.path.join(self.dir, "global.xml"),),
                               jar_patterns=(os.path.join(self.dir, "*.jar"),))

    def test_the_order_maven_uses(self):
        self.assertEqual(self.find()[0], "https://superpom.invalid/repository")  # no settings: the super POM
        with open(os.path.join(self.dir, "global.xml"), "w") as f:
            f.write(SETTINGS.format(url="https://machine.invalid/m2/"))
        self.assertEqual(self.find(), ("https://machine.invalid/m2", f"a mirror of central in {self.dir}/global.xml"))
        with open(os.path.join(self.home, ".m2", "settings.xml"), "w") as f:
            f.write(SETTINGS.format(url="https://user.invalid/m2"))
        self.assertEqual(self.find()[0], "https://user.invalid/m2")  # the user's settings win
        self.assertEqual(self.find({server_url.ENV: "https://env.invalid/m2/"})[0], "https://env.invalid/m2")

    def test_none_found_or_a_bad_one_says_what_to_do(self):
        os.remove(self.jar)
        url, why = self.find()
        self.assertEqual(url, "")
        self.assertIn("apt-get install maven", why)
        url, why = self.find({server_url.ENV: "file:///etc"})
        self.assertEqual(url, "")
        self.assertIn("not an http(s) URL", why)
        with open(os.path.join(self.home, ".m2", "settings.xml"), "w") as f:
            f.write("<settings><mirrors>" + "<x>" * 100 + "not xml")
        self.assertEqual(self.find()[0], "")

    def test_mirror_of(self):
        for value, covers in [("*", True), ("central", True), ("external:*", True), ("a,central", True),
                              ("*,!central", False), ("snapshots", False), ("", False)]:
            self.assertEqual(server_url.mirrors_central(value), covers, value)

    def test_debians_maven_as_installed(self):
        # The real jar of Debian's maven package, where this machine has it (./bazelw installs maven).
        url = server_url.super_pom_central()
        if not url:
            self.skipTest("Debian's maven is not installed here: no super POM to read")
        self.assertRegex(url, r"^https://[a-z0-9.-]+/[a-z0-9/_-]+$")  # a host and a path

    def test_a_jar_is_fetched_from_the_users_mirror(self):
        # A loopback file server stands for the team's mirror; what the address names is where a download goes.
        root = os.path.join(self.dir, "mirror")
        path = os.path.join(root, "org", "example", "demo", "1.0")
        os.makedirs(path)
        with open(os.path.join(path, "demo-1.0.jar"), "wb") as f:
            f.write(b"PK demo")
        handler = functools.partial(Quiet, directory=root)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        with open(os.path.join(self.home, ".m2", "settings.xml"), "w") as f:
            f.write(SETTINGS.format(url=f"http://127.0.0.1:{server.server_address[1]}/"))
        url, _ = self.find()
        with urllib.request.urlopen(f"{url}/org/example/demo/1.0/demo-1.0.jar", timeout=10) as r:
            self.assertEqual(r.read(), b"PK demo")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


if __name__ == "__main__":
    unittest.main()
