"""Sequential rounds (policy stop = "decided" or "gated"): the comparisons a run decides on, their state after
each interleaved round, and which cells are still needed. The statistics and both rules are
analysis/sequential.py's; under "gated" a comparison's state is the gate's own (PASS, REGRESSED, INCONCLUSIVE),
and an open one stops when the next round would end past the policy's time budget (budget_s): the measuring
time is the launches' durations summed (their result documents' duration_s, so a resumed run counts what it
measured before), and a round's cost is their mean so far.

A comparison is one the matrix asks about (every declared comparison group, each cell against its partner
at the group's baseline value: analysis/compare.py `partners`, what the summary and the gate compare) for
one metric the policy decides on. A cell stays scheduled while a comparison it takes part in is open; a cell
in no comparison runs the first `min` rounds (so does every cell of a matrix that compares nothing, e.g. one
narrowed by --set to one value). Both sides of a comparison always get the same rounds.
"""

import dataclasses
import math
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
    direction: str = ""  # the metric's, from the first result that declares it (the gated rule needs it)

    def to_json(self):
        doc = {k: v for k, v in dataclasses.asdict(self).items() if k not in ("look", "direction")}
        doc["look"] = self.look.to_json() if self.look else None
        doc["reason"] = self.look.reason() if self.look else "not looked at yet"
        return doc


def decided_metrics(policy, workload_dir, profile=None):
    """{metric: minimum effect} the policy decides on, from the workload's gate.toml for a run of `profile` (its
    [profile_min_effect.<profile>], as the gate reads it); raises ValueError naming the fix when a metric has none
    (the sequential policy cannot classify a change without it)."""
    path = os.path.join(workload_dir, "gate.toml")
    if not os.path.exists(path):
        raise ValueError(f"stop = \"decided\" needs the workload's minimum effects, and {path} does not exist: a "
                         "workload is its workload.toml and gate.toml (README: Add a rig, step 2)")
    effects = thresholds.read_gate_toml(path, profile)
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
        self.rule = self.policy.stop
        self.budget_s = self.policy.budget_s if self.rule == sequential.GATED_RULE else 0.0
        self.durations = {}  # (cell id, round) -> the launch's duration_s: the measuring time so far
        self.directions = {}  # metric -> its declared direction

    @property
    def family(self):
        return max(1, len(self.questions))

    def describe(self):
        """What the run will decide, for the runner's first lines."""
        if not self.questions:
            return (f"nothing to decide (no declared axis has two measured values): every cell runs "
                    f"{self.policy.min_repetitions} rounds")
        what = (f"{len(self.questions)} comparison(s) on {', '.join(sorted({q.metric for q in self.questions}))} "
                f"after each round from {self.policy.min_repetitions} to {self.policy.repetitions}")
        if self.rule == sequential.GATED_RULE:
            budget = f", or until {self.budget_s / 60:g} min of measuring" if self.budget_s else ""
            return (f"gating {what} by the gate's own rule (stop at PASS or REGRESSED; INCONCLUSIVE adds a round"
                    f"{budget})")
        return f"deciding {what}"

    def record(self, doc):
        """Keeps the run medians of an ok result (a result document of this run)."""
        duration = doc.get("duration_s")
        if isinstance(duration, (int, float)) and math.isfinite(duration) and duration >= 0:
            self.durations[(doc["cell"]["id"], doc["cell"]["repetition"])] = float(duration)
        for decl in doc.get("metrics") or []:
            if isinstance(decl, dict) and decl.get("direction") in ("higher_is_better", "lower_is_better"):
                self.directions.setdefault(decl.get("name"), decl["direction"])
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
            q.direction = q.direction or self.directions.get(q.metric, "")
            if self.rule == sequential.GATED_RULE and not q.direction:  # no result declared it yet: nothing to judge
                q.look = sequential.Look(sequential.INCONCLUSIVE, 0, rounds, math.nan, math.nan, math.nan, math.nan,
                                         rounds >= self.policy.repetitions)
            else:
                q.look = sequential.replay(self.medians.get((q.baseline, q.metric), {}),
                                           self.medians.get((q.candidate, q.metric), {}), rounds, q.min_effect,
                                           self.policy.min_repetitions, self.policy.repetitions, self.family,
                                           rule=self.rule, direction=q.direction or None)
            if q.look.final:
                q.look = dataclasses.replace(q.look, elapsed_s=self.elapsed_s())
                newly.append(q)
        if self.over_budget(rounds):
            for q in self.questions:
                if not q.look.final:
                    q.look = dataclasses.replace(q.look, final=True, stopped_by=sequential.BUDGET,
                                                 elapsed_s=self.elapsed_s())
                    newly.append(q)
        return newly

    def elapsed_s(self):
        """The measuring time so far: the recorded launches' durations summed."""
        return sum(self.durations.values())

    def over_budget(self, rounds):
        """Under a time budget, from `min` rounds on: whether one more round (at the mean cost of those done)
        would end past it."""
        if not self.budget_s or rounds < self.policy.min_repetitions or rounds <= 0:
            return False
        spent = self.elapsed_s()
        return spent + spent / rounds > self.budget_s

    def needed(self, cell_id):
        """Whether the cell's next round is still needed: it takes part in an open comparison, or the first
        `min` rounds are not done yet."""
        if self.rounds < self.policy.min_repetitions:
            return True
        return any(not (q.look and q.look.final) for q in self.questions if cell_id in (q.baseline, q.candidate))

    def to_json(self):
        gated = self.rule == sequential.GATED_RULE
        return {"design": "the gate's three-way rule on repeated confidence intervals (analysis/sequential.py)"
                if gated else "repeated confidence intervals (analysis/sequential.py)",
                "rule": self.rule, **({"budget_s": self.budget_s} if gated and self.budget_s else {}),
                "elapsed_s": round(self.elapsed_s(), 3),
                "min": self.policy.min_repetitions, "max": self.policy.repetitions,
                "alpha": 2 * sequential.stats.GATE_ALPHA if gated else sequential.ALPHA,
                "first_look_share": sequential.FIRST_LOOK_SHARE, "family": self.family,
                "rounds": self.rounds, "comparisons": [q.to_json() for q in self.questions]}
