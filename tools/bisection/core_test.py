"""Known answers for the bisect's decisions (tools/bisection/core.py): a synthetic history of 16 first-parent
commits with the regression at each place in turn, measured by a stand-in that answers as the gate would
(exactly, or INCONCLUSIVE where told); an unbuildable commit next to the culprit; a contradiction refused."""

import unittest

from tools.bisection import core

COMMITS = [f"{i:02d}" + "c" * 38 for i in range(16)]


def bisect(culprit, unbuildable=(), unclear=()):
    """Runs a bisect over COMMITS where commit `culprit` (an index) brings the regression; returns
    (answer, steps)."""
    b = core.Bisection(list(COMMITS))
    while (i := b.next_index()) is not None:
        if i in unbuildable:
            b.record(core.Step(COMMITS[i], i, core.SKIPPED, why="does not build"))
            continue
        bad = i >= culprit
        toward_good, toward_bad = (core.REGRESSED, core.PASS) if bad else (core.PASS, core.REGRESSED)
        if i in unclear:
            toward_good = core.INCONCLUSIVE
        b.record(core.Step(COMMITS[i], i, core.judge(toward_good, toward_bad), toward_good, toward_bad, rounds=5))
    return b.answer(), b.steps


class BisectCoreTest(unittest.TestCase):
    def test_every_culprit_is_named_in_at_most_four_steps(self):
        for culprit in range(1, 16):
            answer, steps = bisect(culprit)
            self.assertEqual(answer["state"], "found")
            self.assertEqual(answer["first_bad"], COMMITS[culprit], culprit)
            self.assertEqual(answer["last_good"], COMMITS[culprit - 1])
            self.assertLessEqual(len(steps), 4, culprit)  # 14 commits between the ends: ceil(log2(15))

    def test_an_unbuildable_commit_next_to_the_culprit_is_named_with_it(self):
        answer, steps = bisect(culprit=9, unbuildable={8})
        self.assertEqual(answer["state"], "found")
        self.assertEqual((answer["last_good"], answer["first_bad"]), (COMMITS[7], COMMITS[9]))
        self.assertEqual(answer["skipped_between"], [COMMITS[8]])
        self.assertLessEqual(len(steps), 5)
        answer, _ = bisect(culprit=9, unbuildable={9})
        self.assertEqual((answer["last_good"], answer["first_bad"], answer["skipped_between"]),
                         (COMMITS[8], COMMITS[10], [COMMITS[9]]))

    def test_an_unclear_step_stops_the_bisect_without_a_guess(self):
        answer, steps = bisect(culprit=11, unclear={7})
        self.assertEqual(answer["state"], "unknown")
        self.assertEqual(steps[-1].verdict, core.UNKNOWN)
        self.assertEqual(len(steps), 1)

    def test_judge_is_the_two_checks_together(self):
        self.assertEqual(core.judge(core.REGRESSED, core.PASS), core.BAD)
        self.assertEqual(core.judge(core.PASS, core.REGRESSED), core.GOOD)
        for pair in ((core.PASS, core.PASS), (core.REGRESSED, core.REGRESSED), (core.INCONCLUSIVE, core.PASS),
                     (core.PASS, core.INCONCLUSIVE)):
            self.assertEqual(core.judge(*pair), core.UNKNOWN, pair)

    def test_contradictions_and_foreign_steps_are_refused(self):
        b = core.Bisection(list(COMMITS))
        b.record(core.Step(COMMITS[5], 5, core.BAD))
        with self.assertRaisesRegex(core.BisectError, "contradict"):
            b.record(core.Step(COMMITS[9], 9, core.GOOD))
        with self.assertRaisesRegex(core.BisectError, "not inside the range"):
            core.Bisection(list(COMMITS)).record(core.Step(COMMITS[0], 0, core.GOOD))
        with self.assertRaisesRegex(core.BisectError, "twice"):
            core.Bisection([COMMITS[0], COMMITS[0]])

    def test_a_resumed_bisect_goes_on_from_its_steps(self):
        _, steps = bisect(culprit=6)
        resumed = core.Bisection(list(COMMITS), steps=steps[:2])
        self.assertEqual(resumed.next_index(), steps[2].index)


if __name__ == "__main__":
    unittest.main()
