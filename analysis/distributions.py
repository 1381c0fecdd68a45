"""Latency tails from merged distributions: counts added over a cell's runs, never percentiles averaged.

A run's distribution is what its load generator printed: cumulative counts at latency bounds ("N requests
took <= x ms"), e.g. redis-benchmark 7's two HdrHistogram tables. A cell's tail is read from the sum of its
runs' step functions: at every bound printed by any run, each run contributes the count at its own largest
bound not above it. Between printed bounds a run's count is not known, so the merged count is a lower bound
and a percentile read from it an upper bound, exact to the coarsest print resolution near that percentile.

Assumptions, stated: the runs of a cell are independent and alike (the unit of the bootstrap over runs); a
percentile needs at least MIN_TAIL_REQUESTS requests beyond it in the merged distribution, else it is not
reported (a p99.99 of 20,000 requests is two requests).
"""

import dataclasses
import math

import numpy as np

MIN_TAIL_REQUESTS = 10
TAILS = (50.0, 99.0, 99.9, 99.99)
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261126  # fixed: the same runs give the same interval


MAX_POINTS = 200_000  # as the schema's samples: redis-benchmark prints a few hundred
MAX_COUNT = 2**53  # requests in one run; MAX_RUNS of them still add up in int64
MAX_RUNS = 1000


class DistributionError(ValueError):
    pass


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@dataclasses.dataclass(frozen=True)
class Distribution:
    """Cumulative counts at latency bounds: bounds ascending, counts non-decreasing, the last one = total."""
    bounds: tuple
    counts: tuple

    @property
    def total(self):
        return self.counts[-1] if self.counts else 0

    @classmethod
    def from_points(cls, points, total=None):
        """From (bound, cumulative count) pairs in any order; duplicates keep the largest count. `total`, if
        given, must equal the largest count (the run's request count)."""
        # Stored points are untrusted: a count is a whole number (never a bool, text or fraction), small enough
        # that the counts of MAX_RUNS runs add up in int64 (issue 58, row 9: counts near 2**63 wrapped negative).
        if not isinstance(points, (list, tuple)) or len(points) > MAX_POINTS:
            raise DistributionError(f"a distribution is a list of at most {MAX_POINTS} points")
        merged = {}
        for point in points:
            if not isinstance(point, (list, tuple)) or len(point) != 2:
                raise DistributionError(f"bad point {str(point)[:40]}: expected [bound, count]")
            bound, count = point
            if (not _is_number(bound) or not math.isfinite(bound) or bound < 0 or not _is_number(count)
                    or count != int(count) or not 0 <= count <= MAX_COUNT):
                raise DistributionError(f"bad point ({str(bound)[:20]}, {str(count)[:20]}): a bound >= 0 and a "
                                        f"whole count in 0..{MAX_COUNT}")
            bound, count = float(bound), int(count)
            merged[bound] = max(count, merged.get(bound, 0))
        if not merged:
            raise DistributionError("a distribution needs at least one point")
        bounds = tuple(sorted(merged))
        counts = tuple(merged[b] for b in bounds)
        if any(b < a for a, b in zip(counts, counts[1:])):
            raise DistributionError("cumulative counts fall as the latency bound rises: not one distribution")
        if total is not None and counts[-1] != total:
            raise DistributionError(f"the distribution counts {counts[-1]} requests, the run made {total}")
        return cls(bounds, counts)

    @classmethod
    def from_percentiles(cls, percentiles, total):
        """From (percent, bound) pairs and the request count (result files written before the counts were
        kept): counts are percent x total, as the tool computed its percent from them."""
        if not isinstance(total, int) or isinstance(total, bool) or not 1 <= total <= MAX_COUNT:
            raise DistributionError("a distribution from percentiles needs the request count")
        if not isinstance(percentiles, (list, tuple)) or not all(
                isinstance(x, (list, tuple)) and len(x) == 2 and all(map(_is_number, x)) for x in percentiles):
            raise DistributionError("printed percentiles are [percent, bound] number pairs")
        return cls.from_points([(ms, round(p / 100 * total)) for p, ms in percentiles], total=total)

    def count_at(self, bound):
        """Requests known to have taken <= bound (the count at the largest printed bound not above it)."""
        i = np.searchsorted(self.bounds, bound, side="right")
        return self.counts[i - 1] if i else 0

    def to_json(self):
        return {"requests": self.total, "points": [[b, c] for b, c in zip(self.bounds, self.counts)]}

    @classmethod
    def from_json(cls, obj):
        try:
            return cls.from_points(obj["points"], total=obj["requests"])
        except (KeyError, TypeError, ValueError) as e:
            raise DistributionError(f"not a stored distribution: {e}") from None


def merge(distributions):
    """The sum of the runs' step functions, at every bound any of them printed."""
    if not distributions:
        raise DistributionError("nothing to merge")
    if len(distributions) > MAX_RUNS:
        raise DistributionError(f"{len(distributions)} runs: at most {MAX_RUNS} are merged")
    bounds = np.unique(np.concatenate([d.bounds for d in distributions]))
    counts = np.zeros(len(bounds), dtype=np.int64)
    for d in distributions:
        # Each run's count at its own largest bound at or below every merged bound (0 below its first).
        counts += np.concatenate(([0], d.counts))[np.searchsorted(d.bounds, bounds, side="right")]
    return Distribution(tuple(float(b) for b in bounds), tuple(int(c) for c in counts))


def requests_beyond(total, percent):
    """How many requests lie beyond `percent` in a distribution of `total` requests."""
    return total * (100.0 - percent) / 100.0


def requests_needed(percent, beyond=MIN_TAIL_REQUESTS):
    """The smallest request count with `beyond` requests past `percent` (p99.99 and 10: 100,000)."""
    return math.ceil(beyond * 100.0 / (100.0 - percent) - 1e-9)


def percentile(dist, percent):
    """The smallest printed bound with at least percent % of the requests at or below it; None when fewer than
    MIN_TAIL_REQUESTS lie beyond the percentile."""
    if not 0 < percent < 100:
        raise DistributionError(f"percentile {percent} is not in (0, 100)")
    if requests_beyond(dist.total, percent) < MIN_TAIL_REQUESTS:
        return None
    rank = math.ceil(percent / 100.0 * dist.total - 1e-9)
    i = int(np.searchsorted(dist.counts, rank, side="left"))
    return dist.bounds[min(i, len(dist.bounds) - 1)]


@dataclasses.dataclass
class Tail:
    percent: float
    value: float | None  # ms from the merged distribution; None: too few requests behind it
    ci_low: float  # bootstrap over runs; nan under 3 runs
    ci_high: float
    requests_beyond: float  # in the merged distribution
    runs: int


def tails(distributions, percents=TAILS, seed=BOOTSTRAP_SEED, resamples=BOOTSTRAP_RESAMPLES):
    """Each percentile of the merged runs with a 95 % percentile-bootstrap interval over runs (resampled with
    replacement, merged again); no interval under 3 runs."""
    merged = merge(distributions)
    n = len(distributions)
    boot = _bootstrap(distributions, np.asarray(merged.bounds), percents, seed, resamples) if n >= 3 else None
    out = []
    for p in percents:
        value = percentile(merged, p)
        low = high = float("nan")
        if value is not None and boot is not None and boot[p]:
            low, high = np.percentile(np.array(boot[p]), [2.5, 97.5])
        out.append(Tail(p, value, float(low), float(high), requests_beyond(merged.total, p), n))
    return out


def _bootstrap(distributions, bounds, percents, seed, resamples):
    """{percent: [its value in each resample that has one]}: the runs resampled with replacement and merged
    again, as merge() would (at the bounds the chosen runs printed), from one table of each run's count at
    every bound: memory of runs x bounds, never resamples x bounds (issue 58, row 9: 3 runs of 10,000 points
    took 3 GB)."""
    table = np.stack([np.concatenate(([0], np.asarray(d.counts, dtype=np.int64)))[
        np.searchsorted(d.bounds, bounds, side="right")] for d in distributions])
    printed = np.stack([np.isin(bounds, d.bounds) for d in distributions])
    rng = np.random.default_rng(seed)
    found = {p: [] for p in percents}
    n = len(distributions)
    for _ in range(resamples):
        rows = rng.integers(0, n, n)
        keep = printed[rows].any(axis=0)
        counts, at = table[rows].sum(axis=0)[keep], bounds[keep]
        total = int(counts[-1])
        for p in percents:
            if requests_beyond(total, p) >= MIN_TAIL_REQUESTS:
                i = int(np.searchsorted(counts, math.ceil(p / 100.0 * total - 1e-9), side="left"))
                found[p].append(float(at[min(i, len(at) - 1)]))
    return found


def tail_label(percent):
    """99.99 -> "p99.99", 50 -> "p50"."""
    return "p" + f"{percent:g}"


def run_distributions(doc):
    """{test: Distribution} of one stored run: its kept counts, or (result files written before they were
    kept) its printed percentiles with the cell's `requests`. {} for a run without a latency distribution."""
    observations = doc.get("observations") or {}
    kept = observations.get("latency_distributions")
    if kept:
        return {test: Distribution.from_json(obj) for test, obj in sorted(kept.items())}
    printed = observations.get("latency_percentiles_ms")
    requests = (doc.get("cell") or {}).get("params", {}).get("requests", "")
    if printed and str(requests).isdigit():
        return {test: Distribution.from_percentiles(points, int(requests)) for test, points in sorted(printed.items())}
    return {}


def cell_tails(docs, percents=TAILS):
    """{test: [Tail]} over the ok runs among `docs` (one cell's)."""
    per_test = {}
    for d in docs:
        if d.get("status") != "ok":
            continue
        for test, dist in run_distributions(d).items():
            per_test.setdefault(test, []).append(dist)
    return {test: tails(dists, percents) for test, dists in sorted(per_test.items())}


def percents_of(params):
    """A cell's `tail_percentiles` ("50+99+99.9") as numbers; TAILS when it has none (or none readable)."""
    try:
        percents = [float(x) for x in str(params.get("tail_percentiles", "")).split("+") if x.strip()]
    except ValueError:
        percents = []
    return percents or list(TAILS)


def tail_text(tail):
    """A tail for tables: "0.311 (0.29..0.34)" ms, without an interval under 3 runs, "- (N beyond)" unread."""
    if tail.value is None:
        return f"- ({tail.requests_beyond:.0f} beyond)"
    if tail.ci_low != tail.ci_low:
        return f"{tail.value:.3g}"
    return f"{tail.value:.3g} ({tail.ci_low:.2g}..{tail.ci_high:.2g})"
