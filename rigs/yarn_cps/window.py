"""The steady window of a simulator run, and the rates measured over it.

The simulator's throughput is not steady from the start: the RM starts, nodes register, applications are
submitted, the JIT compiles (FACTS.md: at 20k nodes the first 50-60 s run slow). At the end demand runs out. CPS is
therefore a rate over a declared window of the per-second series of the RM's cumulative counters:

  start  the first sample at least `warmup_s` after the first allocation, once at least `release_fraction`
         of the run's containers have been released (so releases, which lag allocations by a container's
         lifetime, are in steady state too);
  end    the last sample with containers pending before demand runs out for good (after it, allocations
         stop because the trace has no more work, not because the scheduler is slow).

Inside the window demand may dip to zero for a moment (applications arrive over time). Such seconds are
counted; when they exceed `max_idle_fraction` of the window, the trace, not the scheduler, set the pace
and the run is invalid. The window must also last at least `min_window_s` (the policy's measure_s):
otherwise the trace was too short for the warm-up the policy asked for.
"""

import dataclasses


class WindowError(ValueError):
    """No valid steady window: the reason says which condition failed."""


@dataclasses.dataclass
class Window:
    start_index: int
    end_index: int
    start_t: float
    end_t: float
    allocation_rate: float  # containers/s over the window
    release_rate: float  # containers/s over the window
    first_allocation_t: float
    idle_samples: int  # samples inside the window with nothing pending

    @property
    def duration_s(self):
        return self.end_t - self.start_t


def counter_samples(records):
    """The sample records that carry the RM's counters, in time order."""
    samples = [r for r in records if r.get("event") == "sample" and "allocated" in r]
    samples.sort(key=lambda r: r["t"])
    return samples


def steady_window(samples, warmup_s, min_window_s, release_fraction=0.05, total=None, max_idle_fraction=0.1):
    """Finds the steady window in `samples` (dicts with t, allocated, released, pending_containers).

    total: containers the run allocates in all (default: the last sample's allocated count).
    """
    if len(samples) < 2:
        raise WindowError("fewer than two samples of the RM's counters")
    total = samples[-1]["allocated"] if total is None else total
    if total <= 0:
        raise WindowError("the run allocated no containers")
    first_alloc = next((s["t"] for s in samples if s["allocated"] > 0), None)
    start = None
    for i, s in enumerate(samples):
        if s["t"] - first_alloc >= warmup_s and s["released"] >= release_fraction * total:
            start = i
            break
    if start is None:
        raise WindowError(f"the run never got past its warm-up ({warmup_s:g} s after the first allocation, "
                          f"{release_fraction:.0%} of {total} containers released)")
    end = max((j for j in range(start, len(samples)) if samples[j]["pending_containers"] > 0), default=None)
    if end is None or end <= start:
        raise WindowError(f"demand ran out at t={samples[start]['t']:.1f} s, when the warm-up ended")
    idle = sum(1 for s in samples[start:end + 1] if s["pending_containers"] == 0)
    if idle > max_idle_fraction * (end - start + 1):
        raise WindowError(f"nothing was pending in {idle} of the window's {end - start + 1} samples: the trace, "
                          "not the scheduler, set the pace (submit the jobs closer together, or more of them)")
    a, b = samples[start], samples[end]
    span = b["t"] - a["t"]
    if span < min_window_s:
        raise WindowError(f"steady window {span:.2f} s is shorter than the declared {min_window_s:g} s "
                          f"(t={a['t']:.1f}..{b['t']:.1f} s): give the trace more containers or shorten "
                          "the warm-up")
    return Window(start_index=start, end_index=end, start_t=a["t"], end_t=b["t"],
                  allocation_rate=(b["allocated"] - a["allocated"]) / span,
                  release_rate=(b["released"] - a["released"]) / span, first_allocation_t=first_alloc,
                  idle_samples=idle)


def per_interval_rates(samples, key, lo, hi):
    """[(t, rate)] of counter `key` for each interval ending at samples lo+1..hi."""
    out = []
    for k in range(lo + 1, hi + 1):
        dt = samples[k]["t"] - samples[k - 1]["t"]
        if dt > 0:
            out.append((samples[k]["t"], (samples[k][key] - samples[k - 1][key]) / dt))
    return out


def thread_cpu_shares(samples, lo, hi):
    """CPU used per thread group over samples lo..hi, in cores (1.0 = one core busy all the time).

    Threads that exited inside the window drop out of the later sum, so a group's share can read low;
    the groups that matter here (scheduler, dispatcher, simulator pool, GC, JIT) live for the whole run.
    """
    a, b = samples[lo], samples[hi]
    span = b["t"] - a["t"]
    if span <= 0 or "thread_cpu_ns" not in a or "thread_cpu_ns" not in b:
        return {}
    shares = {g: max(0, b["thread_cpu_ns"][g] - a["thread_cpu_ns"].get(g, 0)) / 1e9 / span
              for g in b["thread_cpu_ns"]}
    shares["process"] = (b["process_cpu_ns"] - a["process_cpu_ns"]) / 1e9 / span
    return {g: round(v, 3) for g, v in shares.items()}
