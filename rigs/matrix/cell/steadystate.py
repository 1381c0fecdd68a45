"""Is a launch's measured work at a steady state? (Barrett et al., "Virtual machine warmup blows hot and
cold", OOPSLA 2017: a steady state must be checked, not assumed.)

A rig that iterates (Rig.can_iterate) tags each measured sample with metadata {"iteration": k}. For each
metric, the iterations' values (the median of a metric's samples within one iteration, in iteration order)
are judged two ways:
- the size of a change: the medians of the first and the second half (the middle one left out when their
  count is odd), relative to the first's;
- whether the change is a trend rather than noise: Kendall's tau of the values against their order, two-sided
  p < TREND_ALPHA / k, where k is the number of metrics judged in the launch (Bonferroni: the launch's
  question is whether any metric still drifts, at 5 % in all; scipy's exact test without ties). 5 values
  reach p = 0.017, 6 reach 0.003, 8 reach 0.00005: with several metrics, judge 6 or more iterations.
A metric is NOT steady when both hold: its halves differ by more than the policy's `steady_band` and the
values trend. Assumptions, stated: iterations are independent but for a warm-up still under way, which shows
as a monotone drift (up or down); a single slow iteration (a GC pause) moves neither the medians nor the rank
trend much. Measured on the NameNode (2026-11-26): iterations of 20,000 creates scatter ~10 % around their
level, so a band alone, without the trend test, called two launches in three unsteady. A launch whose metric
is not steady is invalid: its value would average a transient.
"""

import dataclasses
import math
import statistics

from scipy import stats

from rigs.matrix.planning.policy import MIN_STEADY_ITERATIONS as MIN_ITERATIONS

# Two-sided p of Kendall's trend test below which the iterations drift; 5 values are the fewest that can reach it.
TREND_ALPHA = 0.05


@dataclasses.dataclass(frozen=True)
class Steadiness:
    metric: str
    iterations: int
    first_half_median: float
    second_half_median: float
    band: float
    trend_p: float  # Kendall's tau of the values against their order, two-sided p (1.0 for constant values)
    alpha: float = 0.05  # the p below which it trends: TREND_ALPHA over the metrics judged together

    @property
    def change(self) -> float:
        """The second half's median relative to the first's (0.12 = 12 % higher)."""
        if self.first_half_median == 0:
            return 0.0 if self.second_half_median == 0 else float("inf")
        return self.second_half_median / self.first_half_median - 1

    @property
    def trends(self) -> bool:
        return self.trend_p < self.alpha

    @property
    def steady(self) -> bool:
        return abs(self.change) <= self.band or not self.trends

    def to_json(self) -> dict:
        change = self.change
        return {"iterations": self.iterations, "first_half_median": self.first_half_median,
                "second_half_median": self.second_half_median,
                "change": round(change, 6) if math.isfinite(change) else None,
                "trend_p": round(self.trend_p, 6), "trend_alpha": round(self.alpha, 6), "steady": self.steady}

    def describe(self) -> str:
        direction = "above" if self.change > 0 else "below"
        return (f"{self.metric}: the second half of its {self.iterations} measured iterations is "
                f"{abs(self.change):.1%} {direction} the first (band {self.band:.0%}), a trend (Kendall p = "
                f"{self.trend_p:.3f} < {self.alpha:.3g})")


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
    """The steadiness of every metric whose measured samples carry iteration tags, by metric name; metrics with
    fewer than MIN_ITERATIONS iterations are not judged (the policy refuses 1 < iterations < MIN_ITERATIONS)."""
    judged = {m: v for m, v in sorted(iteration_values(samples).items()) if len(v) >= MIN_ITERATIONS}
    out = []
    for metric, values in judged.items():
        half = len(values) // 2
        trend = stats.kendalltau(range(len(values)), values)
        p = float(trend.pvalue) if math.isfinite(trend.pvalue) else 1.0  # constant values: no trend
        out.append(Steadiness(metric, len(values), statistics.median(values[:half]),
                              statistics.median(values[-half:]), band, p, TREND_ALPHA / len(judged)))
    return out


def judged_unsteady(steadiness, decide_on=()):
    """The checks that refuse a launch: every unsteady metric, or where a design decides on some metrics
    (policy.decide_on: the gated nightly) only those. The others' checks stay recorded in the result (its
    steady_state, summarized as "not steady, recorded but not judged"): on this VM a per-iteration CPU count trends
    with the host's drift, in either direction, and refusing launches for it cost a NameNode night 11 of its 44
    launches (2026-12-07: create_cpu_per_op 13-24 % above or below between halves, create_rate steady)."""
    return [s for s in steadiness if not s.steady and (not decide_on or s.metric in decide_on)]
