"""Known-answer tests of the run archive checks: what a brought-home archive may and may not contain, and
that a stored run is never rewritten. Each hostile case here got through (or crashed) before the store."""

import gzip
import json
import os
import shutil
import tarfile
import tempfile
import unittest

from results import resultfile, runarchive, safeio, store
from results.testruns import RUN_ID, make_run, manifest_for, recorded_result, tar_bytes

FLEET = {"host": "kunpeng-01", "fleet_id": "fleet-20261124T101500Z-1a2b"}


def listing(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def snapshot(root):
    """{path: bytes} of every file below root."""
    out = {}
    for rel in listing(root):
        with open(os.path.join(root, rel), "rb") as f:
            out[rel] = f.read()
    return out


def with_run(entries, manifest=None):
    """An archive of one run h/RUN_ID with a valid manifest (or the one given) and extra entries."""
    body = json.dumps(manifest_for() if manifest is None else manifest).encode()
    return tar_bytes([(f"h/{RUN_ID}/manifest.json", body, tarfile.REGTYPE)] + entries)


def pax_header_of_size(size):
    """A gzipped tar whose first header is a pax extended header declaring `size` bytes (GNU base-256 size)."""
    info = tarfile.TarInfo("././@PaxHeader")
    info.type = tarfile.XHDTYPE
    block = bytearray(info.tobuf(tarfile.USTAR_FORMAT))
    block[124:136] = b"\x80" + size.to_bytes(11, "big")
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return gzip.compress(bytes(block) + bytes(1024))


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def nested(depth):
    return "[" * depth + "]" * depth


class RunArchiveTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.remote = os.path.join(self.tmp, "remote")
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)
        self.run_dir = make_run(self.remote)
        self.archive = runarchive.pack_run(self.run_dir, os.path.join(self.tmp, "run.tar.gz"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_a_run_comes_home_under_the_fleet_host_name(self):
        target, added, refreshed = runarchive.unpack_run(self.archive, self.home, host_folder="kunpeng-01")
        self.assertEqual(target, os.path.join(self.home, "kunpeng-01", RUN_ID))
        self.assertEqual(listing(target), listing(self.run_dir))
        self.assertEqual(sorted(added), listing(self.run_dir))
        self.assertEqual(refreshed, [])
        self.assertEqual(os.listdir(os.path.join(self.home, "kunpeng-01")), [RUN_ID])  # no staging left

    def test_what_the_caller_adds_is_stored_with_the_run_in_one_go(self):
        target, added, _ = runarchive.unpack_run(self.archive, self.home, extra={"logs/guest-console.log": b"boot\n"})
        self.assertIn("logs/guest-console.log", added)
        with open(os.path.join(target, "logs", "guest-console.log"), "rb") as f:
            self.assertEqual(f.read(), b"boot\n")
        for extra, why in (({"logs/cell.log": b"x"}, "has logs/cell.log already"), ({"../x": b"x"}, "holds only")):
            with self.assertRaisesRegex(runarchive.ArchiveError, why):
                runarchive.unpack_run(self.archive, os.path.join(self.tmp, "other"), extra=extra)

    def test_a_resumed_run_brought_home_again_only_adds_its_missing_cells(self):
        shutil.rmtree(self.run_dir)
        make_run(self.remote, state="interrupted")
        first = runarchive.pack_run(self.run_dir, os.path.join(self.tmp, "first.tar.gz"))
        target, _, _ = runarchive.unpack_run(first, self.home)
        make_run(self.remote, repetitions=(0, 1))  # resumed there: the missing repetition, complete
        again = runarchive.pack_run(self.run_dir, os.path.join(self.tmp, "again.tar.gz"))
        target, added, refreshed = runarchive.unpack_run(again, self.home)
        self.assertEqual(added, [os.path.join("cells", f"{recorded_result()['cell']['id']}.r1.json")])
        self.assertEqual(refreshed, ["manifest.json"])
        self.assertEqual(store.load_manifest(os.path.join(target, "manifest.json"))["state"], "complete")

    def test_a_complete_stored_run_is_never_rewritten(self):
        target, _, _ = runarchive.unpack_run(self.archive, self.home)
        before = snapshot(target)
        # The host says more: a changed manifest, a replaced log, an extra cell: each refused alone.
        changes = {
            "manifest": lambda: make_run(self.remote, repetitions=(0, 1)),
            "log": lambda: write(os.path.join(self.run_dir, "logs", "cell.log"), "rewritten\n"),
            "cell": lambda: store.write_result_file(resultfile.result_path(
                self.run_dir, recorded_result()["cell"]["id"], 7), dict(recorded_result(7), run_id=RUN_ID)),
        }
        for what, change in changes.items():
            with self.subTest(what=what):
                shutil.rmtree(self.run_dir)
                make_run(self.remote)
                change()
                changed = runarchive.pack_run(self.run_dir, os.path.join(self.tmp, f"{what}.tar.gz"))
                with self.assertRaisesRegex(runarchive.ArchiveError, "complete run: refused"):
                    runarchive.unpack_run(changed, self.home)
                self.assertEqual(snapshot(target), before)

    def test_a_changed_stored_file_of_an_incomplete_run_is_refused_and_nothing_written(self):
        shutil.rmtree(self.run_dir)
        make_run(self.remote, state="interrupted")
        target, _, _ = runarchive.unpack_run(runarchive.pack_run(self.run_dir, self.archive), self.home)
        before = snapshot(target)
        cell = resultfile.result_path(self.run_dir, recorded_result()["cell"]["id"], 0)
        doc = dict(recorded_result(), run_id=RUN_ID)
        doc["duration_s"] += 1.0
        os.remove(cell)
        store.write_result_file(cell, doc)
        with open(os.path.join(self.run_dir, "logs", "new.log"), "w") as f:
            f.write("x\n")
        changed = runarchive.pack_run(self.run_dir, os.path.join(self.tmp, "changed.tar.gz"))
        with self.assertRaisesRegex(runarchive.ArchiveError, "never replaced"):
            runarchive.unpack_run(changed, self.home)
        self.assertEqual(snapshot(target), before)

    def test_a_resume_archive_never_rewrites_what_the_stored_manifest_says(self):
        # Issue 58, row 8: for an interrupted run, an archive changed host_id, the question and the parameters
        # of cells already stored, and the store took the new manifest.
        shutil.rmtree(self.run_dir)
        make_run(self.remote, state="interrupted")
        target, _, _ = runarchive.unpack_run(runarchive.pack_run(self.run_dir, self.archive), self.home)
        before = snapshot(target)
        changes = {
            "host_id": lambda m: m.update(host_id="another-host"),
            "question": lambda m: m["matrix"].update(question="a question nobody asked"),
            "params": lambda m: m["cells"][0]["params"].update(jdk="21"),
            "status": lambda m: m["cells"][0]["repetitions"].update({"0": "failed"}),
        }
        for name, change in changes.items():
            manifest = manifest_for(state="complete")
            change(manifest)
            safeio.write_json(os.path.join(self.run_dir, "manifest.json"), manifest)
            archive = runarchive.pack_run(self.run_dir, os.path.join(self.tmp, f"{name}.tar.gz"))
            with self.assertRaisesRegex(runarchive.ArchiveError, "contradicts the stored one", msg=name):
                runarchive.unpack_run(archive, self.home)
            self.assertEqual(snapshot(target), before, name)
        # What only adds (a later state) is taken.
        safeio.write_json(os.path.join(self.run_dir, "manifest.json"), manifest_for(state="complete"))
        runarchive.unpack_run(runarchive.pack_run(self.run_dir, os.path.join(self.tmp, "ok.tar.gz")), self.home)

    def test_the_archive_must_be_the_run_host_and_fleet_that_were_started(self):
        shutil.rmtree(self.run_dir)
        make_run(self.remote, fleet=FLEET)
        archive = runarchive.pack_run(self.run_dir, self.archive)
        with self.assertRaisesRegex(runarchive.ArchiveError, "not 20250101T000000Z-dead, the run started"):
            runarchive.unpack_run(archive, self.home, "kunpeng-01", expect={"run_id": "20250101T000000Z-dead"})
        for fleet in ({"host": "kunpeng-02", "fleet_id": FLEET["fleet_id"]},
                      {"host": "kunpeng-01", "fleet_id": "fleet-20250101T000000Z-0000"}):
            with self.assertRaisesRegex(runarchive.ArchiveError, "refused"):
                runarchive.unpack_run(archive, self.home, "kunpeng-01", expect={"run_id": RUN_ID, "fleet": fleet})
        self.assertEqual(os.listdir(self.home), [])
        runarchive.unpack_run(archive, self.home, "kunpeng-01", expect={"run_id": RUN_ID, "fleet": FLEET})

    def test_host_folders_that_are_not_a_hosts_are_refused(self):
        baselines = os.path.join(self.home, "baselines", "kept")
        os.makedirs(baselines)
        for name, why in (("a/b", "host folder"), ("../x", "host folder"), ("baselines", "reserved"),
                          ("Reference", "reserved"), (".fleet", "host folder"), ("-x", "host folder")):
            with self.subTest(name=name):
                with self.assertRaisesRegex(runarchive.ArchiveError, why):
                    runarchive.unpack_run(self.archive, self.home, host_folder=name)
        # A folder of something else (here: files a user keeps) is no host's folder either.
        os.makedirs(os.path.join(self.home, "notes"))
        with open(os.path.join(self.home, "notes", "todo.txt"), "w") as f:
            f.write("x")
        with self.assertRaisesRegex(runarchive.ArchiveError, "not a host's folder"):
            runarchive.unpack_run(self.archive, self.home, host_folder="notes")
        self.assertEqual(sorted(os.listdir(self.home)), ["baselines", "notes"])
        # Inside the archive, the host folder is a run's host folder only when safe too.
        archive = tar_bytes([(f"baselines/{RUN_ID}/manifest.json", json.dumps(manifest_for()).encode(),
                              tarfile.REGTYPE)])
        with self.assertRaisesRegex(runarchive.ArchiveError, "reserved"):
            runarchive.unpack_run(archive, self.home)
        self.assertEqual(os.listdir(baselines), [])

    def test_links_devices_and_escaping_paths_are_refused(self):
        prefix = f"h/{RUN_ID}/"
        for name, kind, why in ((prefix + "cells/x.json", tarfile.SYMTYPE, "type"),
                                ("../evil", tarfile.REGTYPE, "only regular files"),
                                ("/abs/evil", tarfile.REGTYPE, "only regular files"),
                                (prefix + "dev", tarfile.CHRTYPE, "type"),
                                (prefix + "etc/passwd", tarfile.REGTYPE, "a run folder holds only"),
                                (prefix + "logs/a\x1b[31mred", tarfile.REGTYPE, "control characters")):
            data = None if kind in (tarfile.SYMTYPE, tarfile.CHRTYPE) else b"x"
            with self.subTest(name=name):
                with self.assertRaisesRegex(runarchive.ArchiveError, why):
                    runarchive.unpack_run(with_run([(name, data, kind)]), self.home)
        self.assertEqual(os.listdir(self.home), [])

    def test_an_over_long_name_is_refused_before_anything_is_written(self):
        # Before: the cell was written, then the long log name raised OSError (ENAMETOOLONG).
        prefix = f"h/{RUN_ID}/"
        cell = json.dumps(dict(recorded_result(), run_id=RUN_ID)).encode()
        for name in ("logs/" + "a" * 300, "logs/" + "/".join(["d" * 200] * 6) + "/x"):
            with self.subTest(length=len(name)):
                archive = with_run([(prefix + f"cells/{recorded_result()['cell']['id']}.r0.json", cell, tarfile.REGTYPE),
                                    (prefix + name, b"x", tarfile.REGTYPE)])
                with self.assertRaisesRegex(runarchive.ArchiveError, "over"):
                    runarchive.unpack_run(archive, self.home)
        self.assertEqual(os.listdir(self.home), [])

    def test_a_foreign_or_corrupt_result_is_refused(self):
        prefix = f"h/{RUN_ID}/"
        bad = recorded_result()
        del bad["provenance"]
        foreign = recorded_result()
        foreign["run_id"] = "20250101T000000Z-dead"
        cases = (("not a valid result document", json.dumps(bad).encode()),
                 ("not a valid result document", b"{not json"),
                 ("not a valid result document.*nested", nested(100_000).encode()),
                 ("not a valid result document.*nested", ("{\"a\":" * 200 + "1" + "}" * 200).encode()),
                 ("not a valid result document.*NaN", json.dumps(dict(recorded_result(), duration_s=float("nan"))).encode()),
                 ("not a valid result document.*not list", b"[]"),
                 ("belongs to run", json.dumps(foreign).encode()))
        for why, body in cases:
            with self.subTest(why=why):
                with self.assertRaisesRegex(runarchive.ArchiveError, why):
                    runarchive.unpack_run(with_run([(prefix + "cells/a.r0.json", body, tarfile.REGTYPE)]), self.home)
        self.assertEqual(os.listdir(self.home), [])

    def test_the_manifest_is_checked_and_there_is_one_run(self):
        other = manifest_for(run_id="20250101T000000Z-dead")
        cases = (("names run", with_run([], other)),
                 ("must be a JSON object, not NoneType",
                  tar_bytes([(f"h/{RUN_ID}/manifest.json", b"null", tarfile.REGTYPE)])),
                 ("must be a JSON object, not list", tar_bytes([(f"h/{RUN_ID}/manifest.json", b"[1]", tarfile.REGTYPE)])),
                 ("nested", tar_bytes([(f"h/{RUN_ID}/manifest.json", nested(50_000).encode(), tarfile.REGTYPE)])),
                 ("does not match schema", with_run([], dict(manifest_for(), state="done"))),
                 ("not a finite number|NaN", tar_bytes([(f"h/{RUN_ID}/manifest.json", json.dumps(dict(
                     manifest_for(), host_reference={"probe": "p", "measurements": [
                         {"when": "before", "metric": "cpu_loop_rate", "unit": "ops/s", "median": float("nan")}]}
                 )).encode(), tarfile.REGTYPE)])),
                 ("no h/", tar_bytes([(f"h/{RUN_ID}/logs/x.log", b"x", tarfile.REGTYPE)])),
                 ("expected one run", tar_bytes([(f"h/{RUN_ID}/manifest.json", b"{}", tarfile.REGTYPE),
                                                 ("h/other/manifest.json", b"{}", tarfile.REGTYPE)])),
                 ("run id", tar_bytes([("h/yarn_cps-full-20k/manifest.json", b"{}", tarfile.REGTYPE)])),
                 ("not a readable", b"garbage"))
        for why, archive in cases:
            with self.subTest(why=why):
                with self.assertRaisesRegex(runarchive.ArchiveError, why):
                    runarchive.unpack_run(archive, self.home)
        self.assertEqual(os.listdir(self.home), [])

    def test_size_limits_count_every_header(self):
        with self.assertRaisesRegex(runarchive.ArchiveError, "over the 10 limit"):
            runarchive.unpack_run(self.archive, self.home, max_archive_bytes=10)
        with self.assertRaisesRegex(runarchive.ArchiveError, "unpacks to more than 100 bytes"):
            runarchive.unpack_run(self.archive, self.home, max_unpacked_bytes=100)
        with self.assertRaisesRegex(runarchive.ArchiveError, "more than 2 (tar headers|members)"):
            runarchive.unpack_run(self.archive, self.home, max_members=2)
        # A 200-byte archive whose pax header declares 2^80 bytes: before, tarfile read it (MemoryError).
        tiny = pax_header_of_size(1 << 80)
        self.assertLess(len(tiny), 300)
        with self.assertRaisesRegex(runarchive.ArchiveError, "extended tar header"):
            runarchive.unpack_run(tiny, self.home)
        # Long names travel in pax headers: they count as headers too.
        many = with_run([(f"h/{RUN_ID}/logs/{'n' * 120}{i}", b"", tarfile.REGTYPE) for i in range(40)])
        with self.assertRaisesRegex(runarchive.ArchiveError, "more than 60 tar headers"):
            runarchive.unpack_run(many, self.home, max_members=60)
        self.assertEqual(os.listdir(self.home), [])


if __name__ == "__main__":
    unittest.main()
