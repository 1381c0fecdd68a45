"""Known-answer tests of the run archive checks: what a brought-home archive may and may not contain."""

import io
import json
import os
import tarfile
import tempfile
import unittest

from results import resultfile, runarchive

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_ID = "20261121T062107Z-0c0b"  # the run of the recorded result testdata/result_v1_ok.json


def recorded_result():
    with open(os.path.join(HERE, "testdata", "result_v1_ok.json")) as f:
        return json.load(f)


def make_run(root, host="hostA", run_id=RUN_ID, state="complete"):
    run_dir = os.path.join(root, host, run_id)
    os.makedirs(os.path.join(run_dir, "cells"))
    os.makedirs(os.path.join(run_dir, "logs"))
    doc = recorded_result()
    resultfile.write_result(resultfile.result_path(run_dir, doc["cell"]["id"], 0), doc)
    with open(os.path.join(run_dir, "manifest.json"), "w") as f:
        json.dump({"run_id": run_id, "state": state}, f)
    with open(os.path.join(run_dir, "logs", "cell.log"), "w") as f:
        f.write("log line\n")
    return run_dir


def tar_bytes(entries):
    """entries: [(name, bytes or None for a folder, tarfile type)]"""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data, kind in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


class RunArchiveTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.remote = os.path.join(self.tmp, "remote")
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)
        self.run_dir = make_run(self.remote)
        self.archive = runarchive.pack_run(self.run_dir, os.path.join(self.tmp, "run.tar.gz"))

    def listing(self, root):
        return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)

    def test_a_run_comes_home_under_the_fleet_host_name(self):
        target, added, refreshed = runarchive.unpack_run(self.archive, self.home, host_folder="kunpeng-01")
        self.assertEqual(target, os.path.join(self.home, "kunpeng-01", RUN_ID))
        self.assertEqual(self.listing(target), self.listing(self.run_dir))
        self.assertEqual(sorted(added), self.listing(self.run_dir))
        self.assertEqual(refreshed, [])

    def test_bringing_a_resumed_run_home_again_adds_and_refreshes_but_keeps_results(self):
        runarchive.unpack_run(self.archive, self.home)
        # The run went on: the manifest changed and a second repetition was stored.
        doc = recorded_result()
        doc["cell"]["repetition"] = 1
        resultfile.write_result(resultfile.result_path(self.run_dir, doc["cell"]["id"], 1), doc)
        with open(os.path.join(self.run_dir, "manifest.json"), "w") as f:
            json.dump({"run_id": RUN_ID, "state": "complete", "more": True}, f)
        again = runarchive.pack_run(self.run_dir, os.path.join(self.tmp, "again.tar.gz"))
        target, added, refreshed = runarchive.unpack_run(again, self.home)
        self.assertEqual(added, [os.path.join("cells", f"{doc['cell']['id']}.r1.json")])
        self.assertEqual(refreshed, ["manifest.json"])
        with open(os.path.join(target, "manifest.json")) as f:
            self.assertTrue(json.load(f)["more"])

    def test_a_changed_stored_result_is_refused_and_nothing_is_written(self):
        target, _, _ = runarchive.unpack_run(self.archive, self.home)
        cell = os.path.join(self.run_dir, "cells", os.listdir(os.path.join(self.run_dir, "cells"))[0])
        doc = recorded_result()
        doc["duration_s"] = doc["duration_s"] + 1.0
        os.remove(cell)
        resultfile.write_result(cell, doc)
        with open(os.path.join(self.run_dir, "logs", "new.log"), "w") as f:
            f.write("x\n")
        before = self.listing(target)
        changed = runarchive.pack_run(self.run_dir, os.path.join(self.tmp, "changed.tar.gz"))
        with self.assertRaisesRegex(runarchive.ArchiveError, "a stored result is never replaced"):
            runarchive.unpack_run(changed, self.home)
        self.assertEqual(self.listing(target), before)

    def test_links_devices_and_escaping_paths_are_refused(self):
        prefix = f"h/{RUN_ID}/"
        manifest = json.dumps({"run_id": RUN_ID}).encode()
        for name, kind, why in ((prefix + "cells/x.json", tarfile.SYMTYPE, "type"),
                                ("../evil", tarfile.REGTYPE, "only regular files"),
                                ("/abs/evil", tarfile.REGTYPE, "only regular files"),
                                (prefix + "dev", tarfile.CHRTYPE, "type")):
            data = None if kind in (tarfile.SYMTYPE, tarfile.CHRTYPE) else b"x"
            archive = tar_bytes([(prefix + "manifest.json", manifest, tarfile.REGTYPE), (name, data, kind)])
            with self.subTest(name=name):
                with self.assertRaisesRegex(runarchive.ArchiveError, why):
                    runarchive.unpack_run(archive, self.home)
        self.assertEqual(os.listdir(self.home), [])

    def test_a_foreign_or_corrupt_result_is_refused(self):
        prefix = f"h/{RUN_ID}/"
        manifest = json.dumps({"run_id": RUN_ID}).encode()
        bad = recorded_result()
        del bad["provenance"]
        foreign = recorded_result()
        foreign["run_id"] = "20250101T000000Z-dead"
        cases = (("not a valid result document", json.dumps(bad).encode()),
                 ("not a valid result document", b"{not json"),
                 ("belongs to run", json.dumps(foreign).encode()))
        for why, body in cases:
            archive = tar_bytes([(prefix + "manifest.json", manifest, tarfile.REGTYPE),
                                 (prefix + "cells/a.r0.json", body, tarfile.REGTYPE)])
            with self.subTest(why=why):
                with self.assertRaisesRegex(runarchive.ArchiveError, why):
                    runarchive.unpack_run(archive, self.home)
        self.assertEqual(os.listdir(self.home), [])

    def test_the_manifest_must_name_the_run_and_there_is_one_run(self):
        cases = (("names run", [(f"h/{RUN_ID}/manifest.json", json.dumps({"run_id": "other"}).encode())]),
                 ("no h/", [(f"h/{RUN_ID}/logs/x.log", b"x")]),
                 ("expected one run", [(f"h/{RUN_ID}/manifest.json", b"{}"), ("h/other/manifest.json", b"{}")]),
                 ("not a readable", None))
        for why, entries in cases:
            archive = b"garbage" if entries is None else tar_bytes([(n, d, tarfile.REGTYPE) for n, d in entries])
            with self.subTest(why=why):
                with self.assertRaisesRegex(runarchive.ArchiveError, why):
                    runarchive.unpack_run(archive, self.home)

    def test_size_limits(self):
        with self.assertRaisesRegex(runarchive.ArchiveError, "over the 10 limit"):
            runarchive.unpack_run(self.archive, self.home, max_archive_bytes=10)
        with self.assertRaisesRegex(runarchive.ArchiveError, "unpacks to more than 100 bytes"):
            runarchive.unpack_run(self.archive, self.home, max_unpacked_bytes=100)
        with self.assertRaisesRegex(runarchive.ArchiveError, "more than 2 members"):
            runarchive.unpack_run(self.archive, self.home, max_members=2)
        self.assertEqual(os.listdir(self.home), [])

    def test_a_bad_host_folder_name_is_refused(self):
        with self.assertRaisesRegex(runarchive.ArchiveError, "bad host folder"):
            runarchive.unpack_run(self.archive, self.home, host_folder="a/b")


if __name__ == "__main__":
    unittest.main()
