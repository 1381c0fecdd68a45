"""Is a launch's measured work at a steady state? (Barrett et al., "Virtual machine warmup blows hot and
cold", OOPSLA 2017: a steady state must be checked, not assumed.)

A rig that iterates (Rig.can_iterate) tags each measured sample with metadata {"iteration": k}. For each
metric, the iterations' values (the median of a metric's samples within one iteration, in iteration order)
are split into a first and a second half (the middle one left out when their count is odd); the metric is
steady when the halves' medians differ by at most the policy's `steady_band` (a fraction of the first
half's). Assumptions, stated: a warm-up still under way shows as a difference between the halves (a drift
up or down over the iterations); a change confined to one iteration is noise the medians resist. A launch
whose metric is not steady is invalid: its value would average a transient.
"""

import dataclasses
import math
import statistics


@dataclasses.dataclass(frozen=True)
class Steadiness:
    metric: str
    iterations: int
    first_half_median: float
    second_half_median: float
    band: float

    @property
    def change(self) -> float:
        """The second half's median relative to the first's (0.12 = 12 % higher)."""
        if self.first_half_median == 0:
            return 0.0 if self.second_half_median == 0 else float("inf")
        return self.second_half_median / self.first_half_median - 1

    @property
    def steady(self) -> bool:
        return abs(self.change) <= self.band

    def to_json(self) -> dict:
        change = self.change
        return {"iterations": self.iterations, "first_half_median": self.first_half_median,
                "second_half_median": self.second_half_median,
                "change": round(change, 6) if math.isfinite(change) else None, "steady": self.steady}

    def describe(self) -> str:
        direction = "above" if self.change > 0 else "below"
        return (f"{self.metric}: the second half of its {self.iterations} measured iterations is "
                f"{abs(self.change):.1%} {direction} the first (band {self.band:.0%})")


def iteration_values(samples: list[dict]) -> dict[str, list[float]]:
    """{metric: [value of each iteration, in iteration order]}: the median of a metric's samples within one
    iteration. Samples without an iteration tag are left out."""
    by_metric: dict[str, dict[int, list[float]]] = {}
    for s in samples:
        k = (s.get("metadata") or {}).get("iteration")
        if isinstance(k, int) and not isinstance(k, bool):
            by_metric.setdefault(s["metric"], {}).setdefault(k, []).append(float(s["value"]))
    return {m: [statistics.median(its[k]) for k in sorted(its)] for m, its in by_metric.items()}


def check(samples: list[dict], band: float) -> list[Steadiness]:
    """The steadiness of every metric whose measured samples carry iteration tags, by metric name."""
    out = []
    for metric, values in sorted(iteration_values(samples).items()):
        half = len(values) // 2
        if half < 2:
            continue  # too few iterations to judge: the policy refuses 1 < iterations < 4 beforehand
        out.append(Steadiness(metric, len(values), statistics.median(values[:half]),
                              statistics.median(values[-half:]), band))
    return out
