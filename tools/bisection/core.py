"""The decisions of a bisect (issue 61), apart from building and running: which commit to measure next, what
one step's two gate checks say about it, when to stop. The command that builds and runs each step is
tools/bisection/command.py; this module is pure, so its known answers are tested without a build.

One step measures the midpoint m interleaved against both known ends in one run, and asks the gate's rule
(analysis/stats.py: paired t at 1 % a side, PASS only when the asked effect is ruled out) twice:
  toward good: baseline good, candidate m   REGRESSED: m is worse than good    PASS: m is not worse
  toward bad:  baseline m, candidate bad    REGRESSED: bad is worse than m     PASS: bad is not worse than m
m is BAD (the regression is at or before it) when it is worse than good and bad is not worse than it; GOOD
when it is not worse than good and bad is worse than it; anything else is UNKNOWN: more rounds up to the
cap, then the bisect stops and says so. It never guesses (catapult #1566: a bisect on noisy data that
guesses names a wrong commit with confidence). A commit that does not build is skipped and named, as
`git bisect skip`: the next candidate is the nearest untried commit to the middle, and an answer next to a
skipped commit names both.
"""

import dataclasses

PASS, REGRESSED, INCONCLUSIVE = "PASS", "REGRESSED", "INCONCLUSIVE"
GOOD, BAD, UNKNOWN, SKIPPED = "good", "bad", "unknown", "skipped"


def judge(toward_good, toward_bad):
    """GOOD, BAD or UNKNOWN from the gate's two states (PASS, REGRESSED, INCONCLUSIVE) for one midpoint."""
    if toward_good == REGRESSED and toward_bad == PASS:
        return BAD
    if toward_good == PASS and toward_bad == REGRESSED:
        return GOOD
    return UNKNOWN


@dataclasses.dataclass
class Step:
    """One measured (or skipped) commit: its place in the range, the two checks, the rounds it took."""
    commit: str
    index: int  # in the first-parent list, good = 0, bad = len - 1
    verdict: str  # GOOD, BAD, UNKNOWN or SKIPPED
    toward_good: str = ""
    toward_bad: str = ""
    rounds: int = 0
    why: str = ""  # for SKIPPED: why it could not be measured (the build's last error line)

    def to_json(self):
        return dataclasses.asdict(self)


class BisectError(ValueError):
    pass


@dataclasses.dataclass
class Bisection:
    """The state of a bisect over `commits` (first-parent, oldest first: commits[0] is good, commits[-1] bad),
    rebuilt from its stored steps when it resumes."""
    commits: list
    steps: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        if len(self.commits) < 2:
            raise BisectError("a bisect needs a good and a bad commit")
        if len(set(self.commits)) != len(self.commits):
            raise BisectError("a commit appears twice in the range")

    def bounds(self):
        """(index of the last known good, index of the first known bad) after the steps so far."""
        good, bad = 0, len(self.commits) - 1
        for step in self.steps:
            if step.verdict == GOOD:
                good = max(good, step.index)
            elif step.verdict == BAD:
                bad = min(bad, step.index)
        if good >= bad:
            raise BisectError(f"the steps contradict each other: {self.commits[good][:12]} measured good after "
                              f"{self.commits[bad][:12]} measured bad")
        return good, bad

    def untried(self):
        tried = {s.index for s in self.steps}
        good, bad = self.bounds()
        return [i for i in range(good + 1, bad) if i not in tried]

    def next_index(self):
        """The commit to measure next: the untried one nearest the middle of the open range (the lower one on
        a tie); None when the answer is known (or every commit left was skipped)."""
        if self.stopped_unknown():
            return None
        good, bad = self.bounds()
        middle = (good + bad) / 2
        left = self.untried()
        return min(left, key=lambda i: (abs(i - middle), i)) if left else None

    def stopped_unknown(self):
        return any(s.verdict == UNKNOWN for s in self.steps)

    def record(self, step):
        if not 0 < step.index < len(self.commits) - 1 or self.commits[step.index] != step.commit:
            raise BisectError(f"step {step.commit[:12]} is not inside the range at index {step.index}")
        self.steps.append(step)
        self.bounds()  # refuses a contradiction at once

    def answer(self):
        """{"state": "found" | "unknown" | "running", "first_bad", "last_good", "skipped_between"}: found when
        no untried commit is left between the last good and the first bad; the commits skipped between them
        are named (the culprit is one of them or the first bad)."""
        good, bad = self.bounds()
        skipped = [self.commits[i] for i in range(good + 1, bad)
                   if any(s.index == i and s.verdict == SKIPPED for s in self.steps)]
        state = "unknown" if self.stopped_unknown() else ("found" if not self.untried() else "running")
        return {"state": state, "last_good": self.commits[good], "first_bad": self.commits[bad],
                "skipped_between": skipped}

    def steps_left(self):
        """The most steps still needed if none is skipped: ceil(log2(open range))."""
        good, bad = self.bounds()
        return max(0, (bad - good - 1).bit_length())
