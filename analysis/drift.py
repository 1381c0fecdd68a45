"""Host drift between two result sets, from the host reference each run measured (rigs/host/host_reference.py).

Each run measures the same fixed probe before and after its matrix. Two sets' references differ by host
drift when, for some probe metric, the change between the sets' medians is larger than the reference's
own noise: DRIFT_FLOOR, or twice the larger before/after spread inside either set, whichever is more.
(The probe is short and has 2 measurements a run; this is a threshold, not a significance test.) A set
without a reference (older runs) gives no verdict, which callers must say.
"""

import dataclasses
import datetime

DRIFT_FLOOR = 0.02
PRIMARY_REFERENCE = "cpu_loop_rate"  # the probe metric history plots beside every series


@dataclasses.dataclass
class DriftCheck:
    metric: str
    unit: str
    baseline: float  # median of the set's reference measurements
    candidate: float
    noise: float  # the threshold's basis: the larger before/after spread inside a set (fraction)
    threshold: float

    @property
    def change(self):
        return self.candidate / self.baseline - 1.0

    @property
    def drifted(self):
        return abs(self.change) > self.threshold


def reference(result_set):
    """{metric: [measurement]} of a set's host reference: the manifest's (before and after), else the one
    the cell results carry (before only). {} when the set has none."""
    measurements = ((result_set.manifest or {}).get("host_reference") or {}).get("measurements")
    if not measurements:
        doc = next((d for d in result_set.docs if d["provenance"].get("host_reference")), None)
        measurements = doc["provenance"]["host_reference"]["measurements"] if doc else []
    out = {}
    for m in measurements:
        out.setdefault(m["metric"], []).append(m)
    return out


def _median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _spread(measurements):
    medians = [m["median"] for m in measurements]
    return (max(medians) - min(medians)) / _median(medians) if len(medians) > 1 else 0.0


def checks(baseline_set, candidate_set):
    """[DriftCheck] per probe metric both sets measured; [] when either has no host reference."""
    a, b = reference(baseline_set), reference(candidate_set)
    out = []
    for metric in a:
        if metric not in b:
            continue
        noise = max(_spread(a[metric]), _spread(b[metric]))
        out.append(DriftCheck(metric, a[metric][0]["unit"], _median([m["median"] for m in a[metric]]),
                              _median([m["median"] for m in b[metric]]), noise, max(DRIFT_FLOOR, 2 * noise)))
    return out


def describe(check):
    return (f"host reference {check.metric} {check.change:+.1%} ({check.baseline:.4g} -> {check.candidate:.4g} "
            f"{check.unit}; threshold {check.threshold:.1%} from the probe's own before/after spread "
            f"{check.noise:.1%} or {DRIFT_FLOOR:.0%})")


def measured_days(result_set):
    """The UTC dates a set's results were measured on."""
    days = set()
    for d in result_set.docs:
        try:
            days.add(datetime.datetime.fromisoformat(d["started_at"]).astimezone(datetime.timezone.utc).date())
        except (KeyError, ValueError):
            continue
    return sorted(days)


def context_warnings(baseline_set, candidate_set):
    """Loud facts about comparing two stored sets: measured on other days or hosts, no host reference."""
    out = []
    days_a, days_b = measured_days(baseline_set), measured_days(candidate_set)
    if days_a and days_b and set(days_a) != set(days_b):
        out.append(f"measured on different days ({', '.join(map(str, days_a))} vs {', '.join(map(str, days_b))}): "
                   "this host's speed drifts between days; prefer a comparison inside one run")
    hosts_a, hosts_b = baseline_set.host_ids(), candidate_set.host_ids()
    if hosts_a != hosts_b:
        out.append(f"measured on different hosts ({', '.join(hosts_a)} vs {', '.join(hosts_b)})")
    missing = [s.name for s in (baseline_set, candidate_set) if not reference(s)]
    if missing:
        out.append(f"no host reference in {', '.join(missing)}: host drift cannot be told from a regression")
    return out
