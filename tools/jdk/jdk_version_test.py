"""Runs a pinned JDK's java and checks it is the major version it is pinned to."""

import os
import sys
import unittest

from rigs.host import jdks

JAVA, MAJOR = sys.argv[1], int(sys.argv[2])


class PinnedJdkTest(unittest.TestCase):
    def test_reports_pinned_major_version(self):
        jdk = jdks.probe(jdks.Jdk(name="pinned", source="pinned",
                                            java_home=os.path.dirname(os.path.dirname(JAVA)), java=JAVA))
        self.assertEqual(jdk.error, "")
        self.assertEqual(jdk.major, MAJOR, f"{JAVA} reports {jdk.version}")
        # Every JDK the project pins runs G1 and Parallel; CMS only exists up to 13.
        self.assertTrue(jdk.gcs["g1"]["accepted"], jdk.gcs["g1"])
        self.assertTrue(jdk.gcs["parallel"]["accepted"], jdk.gcs["parallel"])
        self.assertEqual(jdk.gcs["cms"]["accepted"], MAJOR <= 13, jdk.gcs["cms"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
