"""analysis/profiling/profiles.py on recorded profiles (testdata/profiles/README.md): the calibration driver's injected
20 % spin shows as the spinning frame within 2 points of 20, moved; an A/A pair (two launches against
two other launches of the same configuration) moves no frame beyond its interval; a corrupt or truncated
profile is refused with its name."""

import gzip
import math
import os
import tempfile
import unittest

from analysis import resultsets
from analysis.profiling import profiles

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
BASELINES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results", "baselines")
SPIN = "tunelab/rigs/calibration/Calibration.spin"


def recorded(pct, reps=(0, 1, 2)):
    return [profiles.read_collapsed(os.path.join(HERE, f"calibration_slowdown{pct}.r{r}.cpu.collapsed.gz"))
            for r in reps]


class KnownAnswers(unittest.TestCase):
    def test_the_injected_spin_is_the_top_mover_within_two_points_of_its_share(self):
        rows = profiles.movers(recorded(0), recorded(20))
        top = rows[0]
        self.assertEqual(top.frame, SPIN)
        self.assertTrue(top.moved)
        self.assertAlmostEqual(top.change, 20.0, delta=2.0)
        self.assertLess(top.low, top.change)
        self.assertGreater(top.high, top.change)
        self.assertIn("Calibration.spin +2", profiles.one_line(rows))
        self.assertEqual(profiles.short_name("__vdso_clock_gettime"), "__vdso_clock_gettime")

    def test_an_a_a_pair_moves_no_frame_beyond_its_interval(self):
        # Four launches of one configuration, two against the other two: nothing changed, so whatever differs
        # is noise and must say so.
        rows = profiles.movers(recorded(0, (0, 1)), recorded(0, (2, 3)), top=50)
        self.assertGreater(len(rows), 5)
        self.assertEqual([m.describe() for m in rows if m.moved], [])

    def test_one_run_a_side_has_no_interval_and_says_so(self):
        rows = profiles.movers(recorded(0, (0,)), recorded(20, (0,)))
        self.assertTrue(math.isnan(rows[0].low))
        self.assertFalse(rows[0].moved)
        self.assertIn("no interval (one run a side)", rows[0].describe())

    def test_self_shares_move_from_the_loop_to_the_spin(self):
        rows = {m.frame: m for m in profiles.movers(recorded(0), recorded(20), self_only=True, top=50)}
        self.assertLess(rows["tunelab/rigs/calibration/Calibration.cpuLoop"].change, -15)
        self.assertGreater(rows[SPIN].change, 0)


class LockProfiles(unittest.TestCase):
    def test_a_lock_profile_names_the_locks_the_threads_waited_on(self):
        # A committed run (results/baselines/README.md): NameNode addBlock in-process, stock vs each prefix of
        # nn-log-out-of-lock, profiled for cpu and lock (contended monitors and java.util.concurrent locks).
        result_set = resultsets.load_run(os.path.join(BASELINES, "namenode-log-out-of-lock-lock-profile-20261129-2vcpu"))
        self.assertEqual(profiles.profiled_events(result_set), ("cpu", "lock"))
        found = profiles.comparisons(result_set, "lock", self_only=True)
        self.assertEqual(len(found), 2)
        for c in found:
            self.assertEqual((len(c.baseline_runs), len(c.candidate_runs), c.missing), (5, 5, []))
            waits = {m.short: m.baseline for m in c.rows}
            # Where stock's handlers waited: the namesystem lock and the edit log, then log4j's root logger.
            self.assertGreater(waits["java.util.concurrent.locks.ReentrantReadWriteLock$FairSync"], 40)
            self.assertGreater(waits["org.apache.hadoop.hdfs.server.namenode.FSEditLogAsync"], 40)
            self.assertGreater(waits["org.apache.log4j.spi.RootLogger"], 0.5)
        # A set profiled for cpu only has no lock comparison to make.
        cpu_only = resultsets.load_run(os.path.join(BASELINES, "calibration-profile-slowdown-20261129-2vcpu"))
        self.assertEqual(profiles.profiled_events(cpu_only), ("cpu",))


class CountedInstructions(unittest.TestCase):
    def test_the_embstr_patch_moves_the_allocations_of_a_set(self):
        # A committed run (results/baselines/README.md): stock vs the embstr patch, Callgrind's counts per
        # function in each result. Per SET of a 100-byte value the value is embedded: one allocation fewer.
        run = resultsets.load_run(os.path.join(BASELINES, "redis-embstr-instructions-functions-20261128-2vcpu"),
                                  name="embstr")
        found = {c.event: c for c in profiles.instruction_comparisons(run)}
        self.assertEqual(sorted(found), ["instructions (GET)", "instructions (SET)"])
        sets = found["instructions (SET)"]
        self.assertEqual((sets.baseline_value, sets.value), ("stock", "patched:embstr-to-128-bytes"))
        self.assertEqual((len(sets.baseline_runs), len(sets.candidate_runs), sets.missing), (6, 6, []))
        rows = {m.frame: m for m in sets.rows}
        self.assertEqual(sets.rows[0].frame, "malloc_usable_size")
        self.assertAlmostEqual(rows["malloc_usable_size"].change, -80.0, delta=0.5)
        self.assertAlmostEqual(rows["_sdsnewlen"].change, -74.0, delta=0.5)
        self.assertTrue(rows["_sdsnewlen"].moved)
        self.assertEqual(rows["_sdsnewlen"].unit, "instructions/request")
        self.assertIn("malloc_usable_size -80.0 instructions/request", profiles.one_line(sets.rows))
        # Inclusive counts move every caller too: the event loop's count moves with the request's.
        inclusive = {c.event: c for c in profiles.instruction_comparisons(run, self_only=False)}
        callers = {m.frame for m in inclusive["instructions (SET)"].rows}
        self.assertIn("aeMain", callers)
        # A run that counted no functions (before 2026-11-29) says so per result.
        older = resultsets.load_run(os.path.join(BASELINES, "redis-embstr-instructions-20261127-2vcpu"), name="old")
        old = profiles.instruction_comparisons(older)
        self.assertTrue(old and not any(c.rows for c in old))
        self.assertIn("no per-function counts", old[0].missing[0])


class Parsing(unittest.TestCase):
    def test_frame_kinds_are_one_frame_and_counts_add_up(self):
        stacks = profiles.parse_collapsed("a_[0];b_[j] 3\na_[0];b_[i] 2\na_[0] 5\n")
        self.assertEqual(stacks, {("a", "b"): 5, ("a",): 5})
        self.assertEqual(profiles.shares(stacks), {"a": 1.0, "b": 0.5})
        self.assertEqual(profiles.shares(stacks, self_only=True), {"a": 0.5, "b": 0.5})
        # A lambda's hidden class is named as jfr-converter's --norm names it, whatever its address.
        lam = profiles.parse_collapsed("p/C$$Lambda$2.0x0000000100003800.run_[0] 1\np/C$$Lambda$2.0x00ff.run_[0] 2\n"
                                       "p/C$$Lambda$403.0x00ff.run_[0] 4\np/C$$Lambda.0x00ff.run_[0] 8\np/C$$Lambda$7.run 16")
        self.assertEqual(lam, {("p/C$$Lambda.run",): 31})

    def test_merged_sides_round_trip_through_collapsed_text(self):
        runs = recorded(20)
        both = profiles.merged(runs)
        self.assertEqual(sum(both.values()), sum(sum(r.values()) for r in runs))
        self.assertEqual(profiles.parse_collapsed(profiles.collapsed_text(both)), both)

    def test_a_corrupt_truncated_or_foreign_profile_is_refused_with_its_name(self):
        folder = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        with open(os.path.join(HERE, "calibration_slowdown0.r0.cpu.collapsed.gz"), "rb") as f:
            whole = f.read()
        cases = {"truncated.gz": (whole[: len(whole) // 2], "not a complete gzip file"),
                 "plain.gz": (b"a;b 1\n", "not a complete gzip file"),
                 "foreign.gz": (gzip.compress(b"<html>a flame graph</html>\n"), "not a collapsed stack line")}
        for name, (data, expected) in cases.items():
            path = os.path.join(folder, name)
            with open(path, "wb") as f:
                f.write(data)
            with self.subTest(name=name), self.assertRaisesRegex(profiles.ProfileError, f"{name}.*{expected}"):
                profiles.read_collapsed(path)


class CostBoundTest(unittest.TestCase):
    """Issue 78, row 4: a stored profile over what a profile may hold is not left out quietly: its reader
    raises ProfileTooCostly, which fails the set's report (the site lists it not published); a profile that is
    merely unreadable is still left out with its reason."""

    def test_a_costly_profile_fails_and_a_broken_one_is_left_out(self):
        import gzip
        import hashlib
        import tempfile
        run = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        os.makedirs(os.path.join(run, "profiles"))

        def stored(name, data):
            with open(os.path.join(run, "profiles", name), "wb") as f:
                f.write(data)
            return {"file": f"profiles/{name}", "sha256": hashlib.sha256(data).hexdigest()}

        deep = stored("deep.gz", gzip.compress(("a;" * (profiles.MAX_STACK_FRAMES + 1) + "leaf 1\n").encode()))
        broken = stored("broken.gz", b"not gzip")
        doc = lambda rep, block: {"cell": {"id": "c", "repetition": rep}, "status": "ok",  # noqa: E731
                                  "profile": {"events": ["cpu"], "collapsed": {"cpu": block}}}
        runs, missing = profiles.profiles_of(run, [doc(0, broken)], "cpu")
        self.assertEqual(runs, [])
        self.assertIn("not a complete gzip file", missing[0])
        with self.assertRaisesRegex(profiles.ProfileTooCostly, "a stack of 4098 frames, over the 4096"):
            profiles.profiles_of(run, [doc(0, broken), doc(1, deep)], "cpu")


if __name__ == "__main__":
    unittest.main()
