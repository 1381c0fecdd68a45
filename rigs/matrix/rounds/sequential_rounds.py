"""Sequential rounds (policy stop = "decided"): the comparisons a run decides on, their state after each
interleaved round, and which cells are still needed. The statistics are analysis/sequential.py's.

A comparison is one the matrix asks about (every declared comparison group, each cell against its partner
at the group's baseline value: analysis/compare.py `partners`, what the summary and the gate compare) for
one metric the policy decides on. A cell stays scheduled while a comparison it takes part in is open; a cell
in no comparison runs the first `min` rounds (so does every cell of a matrix that compares nothing, e.g. one
narrowed by --set to one value). Both sides of a comparison always get the same rounds.
"""

import dataclasses
import os

from analysis import compare, sequential, thresholds


@dataclasses.dataclass
class Question:
    axis: str  # the compared group, "a+b" for a zip group
    baseline_value: str
    value: str
    baseline: str  # cell ids
    candidate: str
    metric: str
    min_effect: float
    look: sequential.Look = None

    def to_json(self):
        doc = {k: v for k, v in dataclasses.asdict(self).items() if k != "look"}
        doc["look"] = self.look.to_json() if self.look else None
        doc["reason"] = self.look.reason() if self.look else "not looked at yet"
        return doc


def decided_metrics(policy, workload_dir):
    """{metric: minimum effect} the policy decides on, from the workload's gate.toml; raises ValueError naming
    the fix when a metric has none (the sequential policy cannot classify a change without it)."""
    path = os.path.join(workload_dir, "gate.toml")
    if not os.path.exists(path):
        raise ValueError(f"stop = \"decided\" needs the workload's minimum effects, and {path} does not exist: a "
                         "workload is its workload.toml and gate.toml (README: Add a rig, step 2)")
    effects = thresholds.read_gate_toml(path)
    names = list(policy.decide_on) or sorted(effects)
    if not names:
        raise ValueError(f"stop = \"decided\" needs a minimum effect to decide on: {path} names none. Add "
                         "[min_effect] <metric> = 0.05 (a fraction) there, or use a fixed count")
    missing = [m for m in names if m not in effects]
    if missing:
        raise ValueError(f"stop = \"decided\": no minimum effect for {', '.join(missing)} in {path}. Add "
                         + ", ".join(f"{m} = 0.05" for m in missing) + " (fractions) under [min_effect], or "
                         "drop them from the policy's decide_on")
    return {m: effects[m] for m in names}


class Rounds:
    """The state of a sequential run. planned: the plan's cells (with .cell and .skip_reason); effects:
    {metric: minimum effect} (decided_metrics)."""

    def __init__(self, matrix, planned, effects):
        self.policy = matrix.policy
        measured = [p.cell for p in planned if not p.skip_reason]
        known = {k.cell_id for k in matrix.known_answers}
        measured = [c for c in measured if c.id not in known]
        groups = [g for g in matrix.comparison_groups()
                  if len({tuple(c.params[a] for a in g) for c in measured}) > 1]
        self.questions = [Question("+".join(group), base_value, "/".join(c.params[a] for a in group), partner.id,
                                   c.id, metric, effect)
                          for group, base_value, partner, c in compare.partners(measured, groups)
                          for metric, effect in effects.items()]
        self.medians = {}  # (cell id, metric) -> {round: run median}
        self.rounds = 0  # complete rounds looked at

    @property
    def family(self):
        return max(1, len(self.questions))

    def describe(self):
        """What the run will decide, for the runner's first lines."""
        if not self.questions:
            return (f"nothing to decide (no declared axis has two measured values): every cell runs "
                    f"{self.policy.min_repetitions} rounds")
        return (f"deciding {len(self.questions)} comparison(s) on {', '.join(sorted({q.metric for q in self.questions}))} "
                f"after each round from {self.policy.min_repetitions} to {self.policy.repetitions}")

    def record(self, doc):
        """Keeps the run medians of an ok result (a result document of this run)."""
        for metric in {q.metric for q in self.questions}:
            median = sequential.run_median(doc, metric)
            if median is not None:
                self.medians.setdefault((doc["cell"]["id"], metric), {})[doc["cell"]["repetition"]] = median

    def look(self, rounds):
        """Looks at every comparison after `rounds` complete rounds; returns the questions that became final.
        Once every comparison is final, later rounds (not measured) change nothing, `self.rounds` included."""
        if self.questions and all(q.look is not None and q.look.final for q in self.questions):
            return []
        self.rounds = rounds
        newly = []
        for q in self.questions:
            if q.look is not None and q.look.final:
                continue
            q.look = sequential.replay(self.medians.get((q.baseline, q.metric), {}),
                                       self.medians.get((q.candidate, q.metric), {}), rounds, q.min_effect,
                                       self.policy.min_repetitions, self.policy.repetitions, self.family)
            if q.look.final:
                newly.append(q)
        return newly

    def needed(self, cell_id):
        """Whether the cell's next round is still needed: it takes part in an open comparison, or the first
        `min` rounds are not done yet."""
        if self.rounds < self.policy.min_repetitions:
            return True
        return any(not (q.look and q.look.final) for q in self.questions if cell_id in (q.baseline, q.candidate))

    def to_json(self):
        return {"design": "repeated confidence intervals (analysis/sequential.py)",
                "min": self.policy.min_repetitions, "max": self.policy.repetitions, "alpha": sequential.ALPHA,
                "first_look_share": sequential.FIRST_LOOK_SHARE, "family": self.family,
                "rounds": self.rounds, "comparisons": [q.to_json() for q in self.questions]}
