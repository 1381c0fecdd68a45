"""Re-running noisy rounds (policy `rerun_noisy_rounds = N`): after each round of a fixed-count run, the CPU steal
its measurement windows recorded (rigs/host/hostnoise.py) is held against the rig's steal band, the most an
A/A run of the rig's committed sensitivity set saw (analysis/sensitivity/figures.steal_band; 1 % at the least,
5 % where none was recorded). A round with a run above the band gets one more round of the same cells appended
to the run (repetition numbers after the policy's), at most N in all.

Declared and counted, never silent: the flagged round stays in the run and in every statistic (it is a
measurement; the extra round adds independent runs rather than replacing it), and the manifest's
`noise_reruns` block lists each flagged round, its steal, the band and its source, and the round run for it.
The summary and report name flagged rounds as before (analysis/summary.host_noise_line).

Only rounds are judged, never cells: the runs of one round are paired across cells, so a noisy round is re-run
whole. Under the sequential policy (stop = "decided") the spec refuses the key: that policy already runs until
the comparisons are decided."""

import random

from rich.markup import escape


class NoisyRounds:
    """The re-run state of one run. policy: the policy.Policy; band, source: steal_band()'s; stored: the
    manifest's `noise_reruns` block of a resumed run, or None."""

    def __init__(self, policy, band, source, stored=None):
        self.most = policy.rerun_noisy_rounds
        self.first_extra = policy.repetitions
        self.band, self.source = band, source
        self.reruns = list((stored or {}).get("reruns") or [])  # [{round, steal_fraction, rerun_as}]
        self.steal = {}  # round -> [steal fraction of each run that recorded one]

    @property
    def active(self):
        return self.most > 0

    def extra_rounds(self):
        """The repetition numbers of the rounds added so far, in order."""
        return [r["rerun_as"] for r in self.reruns]

    def record(self, doc):
        """Keeps the steal of an ok result's measurement window, by round."""
        steal = ((doc.get("provenance") or {}).get("noise") or {}).get("steal_fraction")
        if doc.get("status") == "ok" and isinstance(steal, (int, float)) and not isinstance(steal, bool):
            self.steal.setdefault(doc["cell"]["repetition"], []).append(float(steal))

    def after_round(self, rep):
        """Judges a complete round; returns the repetition number of the round to add, or None. A round judged
        before (a resumed run) is not judged again; a clean round judged again stays clean."""
        if not self.active or any(r["round"] == rep for r in self.reruns):
            return None
        worst = max(self.steal.get(rep, []), default=None)
        if worst is None or worst <= self.band or len(self.reruns) >= self.most:
            return None
        extra = self.first_extra + len(self.reruns)
        self.reruns.append({"round": rep, "steal_fraction": worst, "rerun_as": extra})
        return extra

    def flagged_unrerun(self):
        """The rounds above the band that no extra round answered (the most was reached), as [(round, steal)]."""
        answered = {r["round"] for r in self.reruns}
        return [(rep, max(v)) for rep, v in sorted(self.steal.items())
                if v and max(v) > self.band and rep not in answered]

    def judge(self, rep, order, seed, say):
        """Judges the complete round `rep` of the run's `order` [(cell, repetition)]; a round it adds is appended
        to `order`, said, and returned (else [])."""
        extra = self.after_round(rep)
        if extra is None:
            return []
        added = _round_order([c for c, r in order if r == rep], extra, seed)
        order.extend(added)
        say(escape(f"round {rep} lost {self.reruns[-1]['steal_fraction']:.1%} of the CPUs to steal (band "
                   f"{self.band:.1%}): its cells run again as round {extra} ({len(self.reruns)} of at most "
                   f"{self.most}); round {rep} stays in the run"))
        return added

    def restore(self, order, seed):
        """Appends to a resumed run's `order` the rounds it had added, in the order they were added."""
        for entry in self.reruns:
            order.extend(_round_order([c for c, r in order if r == entry["round"]], entry["rerun_as"], seed))

    def to_json(self):
        if not self.active:
            return None
        return {"max": self.most, "band": self.band, "band_source": self.source, "reruns": self.reruns}

    def describe(self):
        return (f"a round whose steal passes {self.band:.1%} ({self.source}) is run again, at most "
                f"{self.most} time(s)")


def _round_order(cells, extra, seed):
    """The cells of an added round in a seeded order of their own (drift spreads as in schedule.py)."""
    cells = list(cells)
    random.Random(f"{seed}:rerun:{extra}").shuffle(cells)
    return [(c, extra) for c in cells]
