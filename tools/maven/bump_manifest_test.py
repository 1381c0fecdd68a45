"""The manifest of a dependency bump: its identity follows the locked jars, and a bump nobody could check is
refused at build time."""

import json
import os
import tempfile
import unittest

from tools.maven import bump_manifest

SET = {  # two of hadoop_hdfs_bench_3_5_0's entries as the lock has them
    "org.apache.hadoop:hadoop-hdfs:3.5.0": "1" * 64,
    "org.apache.hadoop:hadoop-hdfs:jar:tests:3.5.0": "2" * 64,
}


def make(**overrides):
    args = dict(component="hadoop", from_version="3.4.2", to_version="3.5.0", set_name="s", artifacts=dict(SET),
                classes=["org.apache.hadoop.hdfs.server.namenode.FSNamesystem"], classes_jar="hadoop-hdfs-3.5.0.jar")
    args.update(overrides)
    return bump_manifest.manifest(**args)


class BumpManifestTest(unittest.TestCase):
    def test_jar_names_are_mavens(self):
        self.assertEqual(bump_manifest.jar_name("org.apache.hadoop:hadoop-hdfs:3.5.0"), "hadoop-hdfs-3.5.0.jar")
        self.assertEqual(bump_manifest.jar_name("org.apache.hadoop:hadoop-hdfs:jar:tests:3.5.0"),
                         "hadoop-hdfs-3.5.0-tests.jar")

    def test_identity_follows_every_jar_and_not_the_order(self):
        base = make()
        self.assertEqual(len(base["bump_sha256"]), 64)
        self.assertEqual(base["bump_sha256"], make(artifacts=dict(reversed(list(SET.items()))))["bump_sha256"])
        relocked = dict(SET, **{"org.apache.hadoop:hadoop-hdfs:jar:tests:3.5.0": "3" * 64})
        self.assertNotEqual(base["bump_sha256"], make(artifacts=relocked)["bump_sha256"])
        self.assertEqual((base["kind"], base["from"], base["to"], base["classes_jar"]),
                         ("bump", "3.4.2", "3.5.0", "hadoop-hdfs-3.5.0.jar"))

    def test_a_bump_nobody_could_check_is_refused(self):
        with self.assertRaisesRegex(ValueError, "is not a jar of set s"):
            make(classes_jar="hadoop-hdfs-3.4.2.jar")
        with self.assertRaisesRegex(ValueError, "no --class"):
            make(classes=[])
        with self.assertRaisesRegex(ValueError, "to itself"):
            make(from_version="3.5.0")
        with self.assertRaisesRegex(ValueError, "no artifacts"):
            make(artifacts={})
        with self.assertRaisesRegex(ValueError, "not of release 3.5.0"):
            make(artifacts=dict(SET, **{"org.apache.hadoop:hadoop-hdfs:3.4.9": "4" * 64}),
                 classes_jar="hadoop-hdfs-3.4.9.jar")

    def test_main_writes_the_manifest_and_refuses_a_bad_artifact(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.json")
            argv = ["--component", "hadoop", "--from", "3.4.2", "--to", "3.5.0", "--set", "s",
                    "--class", "org.apache.hadoop.hdfs.server.namenode.FSNamesystem",
                    "--classes-jar", "hadoop-hdfs-3.5.0.jar", "--out", out]
            artifact_args = [a for c, sha in SET.items() for a in ("--artifact", f"{c}={sha}")]
            self.assertEqual(bump_manifest.main(argv + artifact_args), 0)
            with open(out) as f:
                self.assertEqual(json.load(f), make(set_name="s"))
            with self.assertRaises(SystemExit):
                bump_manifest.main(argv + ["--artifact", "org.apache.hadoop:hadoop-hdfs:3.5.0=nothex"])


if __name__ == "__main__":
    unittest.main()
