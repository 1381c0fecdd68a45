"""Known-answer tests of the Maven lock generator, on real `mvn dependency:list` captures in testdata/,
and a consistency check of the checked-in lock against artifacts.toml (a stale lock fails here)."""

import os
import tempfile
import unittest

from tools.maven import lock

HERE = os.path.dirname(__file__)


def read(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read()


class CoordinateTest(unittest.TestCase):
    def test_parse_forms(self):
        c = lock.Coordinate.parse("org.apache.hadoop:hadoop-hdfs:jar:tests:3.4.2")
        self.assertEqual((c.group, c.artifact, c.packaging, c.classifier, c.version),
                         ("org.apache.hadoop", "hadoop-hdfs", "jar", "tests", "3.4.2"))
        self.assertEqual(str(c), "org.apache.hadoop:hadoop-hdfs:jar:tests:3.4.2")
        self.assertEqual(str(lock.Coordinate.parse("junit:junit:4.13.2")), "junit:junit:4.13.2")
        with self.assertRaisesRegex(ValueError, "bad Maven coordinate"):
            lock.Coordinate.parse("junit")

    def test_repo_names_keep_versions_and_classifiers_apart(self):
        names = {lock.Coordinate.parse(c).repo_name for c in (
            "org.apache.hadoop:hadoop-common:3.4.2", "org.apache.hadoop:hadoop-common:3.3.5",
            "org.apache.hadoop:hadoop-common:jar:tests:3.4.2")}
        self.assertEqual(names, {"maven__org_apache_hadoop__hadoop_common__3_4_2",
                                 "maven__org_apache_hadoop__hadoop_common__3_3_5",
                                 "maven__org_apache_hadoop__hadoop_common__tests__3_4_2"})


class DependencyListTest(unittest.TestCase):
    def test_parses_real_capture(self):
        jars = lock.parse_dependency_list(read("testdata/dependency_list_hadoop_mr1_1_2_1.txt"))
        self.assertEqual(len(jars), 46)
        first = jars[0]
        self.assertEqual(str(first.coordinate), "org.apache.hadoop:hadoop-core:1.2.1")
        self.assertEqual(first.scope, "compile")
        self.assertTrue(first.path.endswith("/hadoop-core-1.2.1.jar"), first.path)  # module suffix dropped

    def test_parses_classifiers(self):
        jars = lock.parse_dependency_list(read("testdata/dependency_list_sources.txt"))
        self.assertEqual({j.coordinate.classifier for j in jars}, {"sources"})
        self.assertEqual(len(jars), 2)

    def test_rejects_garbage(self):
        with self.assertRaises(ValueError):
            lock.parse_dependency_list("   a:b:/x.jar\n")


class LockTest(unittest.TestCase):
    def test_build_lock_attaches_sources_and_dedupes(self):
        core = lock.Coordinate.parse("org.apache.hadoop:hadoop-core:1.2.1")
        cli = lock.Coordinate.parse("commons-cli:commons-cli:1.2")
        resolved = {
            "b": [lock.ResolvedJar(core, "compile", "/r/core.jar"), lock.ResolvedJar(cli, "compile", "/r/cli.jar")],
            "a": [lock.ResolvedJar(cli, "compile", "/r/cli.jar")],
        }
        result = lock.build_lock(resolved, {core: "/r/core-sources.jar"}, hasher=lambda p: "h(" + p + ")")
        self.assertEqual(result["sets"], {
            "a": ["maven__commons_cli__commons_cli__1_2"],
            "b": ["maven__commons_cli__commons_cli__1_2", "maven__org_apache_hadoop__hadoop_core__1_2_1"],
        })
        self.assertEqual(result["artifacts"]["maven__org_apache_hadoop__hadoop_core__1_2_1"], {
            "coordinates": "org.apache.hadoop:hadoop-core:1.2.1",
            "sha256": "h(/r/core.jar)",
            "srcjar_sha256": "h(/r/core-sources.jar)",
        })

    def test_render_read_round_trip(self):
        data = {"version": 1, "artifacts": {"x": {"coordinates": "a:b:1", "sha256": "0" * 64}}, "sets": {"s": ["x"]}}
        text = lock.render_lock(data)
        self.assertTrue(text.startswith("# GENERATED"))
        self.assertIn("./bazelw run //tools/maven:lock", text)
        self.assertEqual(lock.read_lock(text), data)

    def test_pom_for_sources_is_not_transitive(self):
        pom = lock.render_pom("s", [lock.Coordinate.parse("a:b:1")], "sources", transitive=False)
        self.assertIn("<classifier>sources</classifier>", pom)
        self.assertIn("<exclusion><groupId>*</groupId>", pom)

    def test_a_managed_version_is_in_the_poms_dependency_management_not_its_dependencies(self):
        pom = lock.render_pom("s", [lock.Coordinate.parse("a:b:1")], managed=[lock.Coordinate.parse("a:r:0.9")])
        management, dependencies = pom.split("</dependencyManagement>")
        self.assertIn("<artifactId>r</artifactId><version>0.9</version>", management)
        self.assertNotIn("<artifactId>r</artifactId>", dependencies)
        self.assertIn("<artifactId>b</artifactId>", dependencies)
        self.assertNotIn("dependencyManagement", lock.render_pom("s", [lock.Coordinate.parse("a:b:1")]))

    def test_spec_errors(self):
        cases = {
            '[sets.Bad]\nartifacts = ["a:b:1"]\n': "lower_snake_case",
            '[sets.ok]\nartifacts = []\n': "lists no artifacts",
            '[sets.ok]\nartifacts = ["a:b:1"]\nsources = ["c:d:1"]\n': "not among its artifacts",
            '[sets.ok]\nartifacts = ["a:b:1"]\nextra = 1\n': "unknown keys",
        }
        for text, message in cases.items():
            with tempfile.NamedTemporaryFile("w", suffix=".toml", dir=os.environ.get("TEST_TMPDIR")) as f:
                f.write(text)
                f.flush()
                with self.assertRaisesRegex(ValueError, message):
                    lock.load_spec(f.name)


class CheckedInLockTest(unittest.TestCase):
    def test_lock_covers_every_declared_artifact(self):
        spec = lock.load_spec(os.path.join(HERE, "artifacts.toml"))
        locked = lock.read_lock(read("maven_lock.bzl"))
        self.assertEqual(set(locked["sets"]), set(spec), "sets differ: regenerate with //tools/maven:lock")
        for set_name, body in spec.items():
            for coordinate in body["artifacts"]:
                self.assertIn(coordinate.repo_name, locked["sets"][set_name],
                              f"{coordinate} missing from set {set_name}: regenerate with //tools/maven:lock")
            for coordinate in body["sources"]:
                self.assertIn("srcjar_sha256", locked["artifacts"][coordinate.repo_name])
        for entry in locked["artifacts"].values():
            self.assertRegex(entry["sha256"], "^[0-9a-f]{64}$")


if __name__ == "__main__":
    unittest.main()
