"""The status of one (cell, repetition) once its processes have ended (`judge`): its exit status, a timeout, a
dead server or a failed process; otherwise the rig's parse of the output (samples finite and non-negative, its
split in parts), the knobs proven in effect (process_evidence.verify, the patched classes or binary, the rig's probes)
and the status: ok, invalid (with the first problem) or failed (with its reason). ("Verdict" elsewhere means
better or worse: analysis/compare.py.)"""

import math

from analysis import ceilings
from results import resultfile
from rigs.matrix.cell import steadystate
from rigs.matrix.contract import evidence, rig as rig_contract
from rigs.matrix.knobs import process_evidence


def judge(ctx, state, result, failure, timed_out):
    """Gives `result` (results/cellresult.CellResult) its parts and status from the ended cell `state`;
    `failure`: the reason the phase loop stopped, if any. Returns `result`.

    Why one function: the order of the checks is the rule (a timeout, then a failed process, then a dead
    server, then the parse, then the evidence): the first that fails names the cell's status."""
    ev, cell, policy = state.ev, state.cell, ctx.config.matrix.policy
    under_test = state.launch.under_test
    # The processes that end their phases (background ones are stopped by the runner; failing early is
    # handled in the phase loop).
    # A process the rig killed on purpose (its kill_pattern line: a failover) ended as it was meant to.
    clients = [r for r in state.running if not r.process.server and not r.process.background
               and r.killed_on_purpose is None]
    exit_statuses = {r.role: r.popen.returncode for r in state.running}
    # The cell's exit status: the first non-zero one of its load generators, else 0.
    exit_status = next((r.popen.returncode for r in clients if r.popen.returncode), 0) if clients else None
    single = len(state.running) <= 1
    if not single:
        ev["exit_statuses"] = exit_statuses
        # CPU per role (sampled once a second while the load ran): e.g. a load generator that
        # busy-waits shows as a full core.
        ev["process_cpu"] = {r.role: dict(r.cpu, cores=round(r.cpu["cpu_s"] / r.cpu["wall_s"], 2))
                             for r in state.running if r.cpu and r.cpu["wall_s"] > 0}
    outputs = {r.role: r.output()[0] for r in state.running}
    all_output = "\n".join("\n".join(r.output()) for r in state.running if r.process.is_jvm)
    ev["jvm_output_warnings"] = evidence.large_page_failures(all_output)
    result.ended(exit_status, ev)
    if timed_out:
        return result.failed(f"timed out after {policy.timeout_s:g} s; killed")
    dead = next((r for r in state.running if r.process.server and ev["servers"][r.role]["died_before_stop"]), None)
    if failure is None and dead is not None:
        # A server that died under load is the cause; its clients' errors are the consequence.
        failure = (f"server {dead.role} exited with status {dead.popen.returncode} while the load ran: "
                   f"{dead.stderr_tail()}")
    if failure:
        return result.failed(failure)
    failed = next((r for r in clients if r.popen.returncode != 0), None)
    if failed is not None:
        who = "" if single else f"{failed.role}: "
        limit = ev.get("memory_limit")  # read when the cell's cgroup went (supervise.CellState.kill)
        if limit and limit.get("oom_kills"):
            asked = f"{limit['named']} ({limit['asked']})" if limit.get("named") else limit["asked"]
            return result.failed(f"{who}exit status {failed.popen.returncode}: killed by the kernel at the cell's "
                                 f"memory_limit={asked} (too small for its processes; the evidence's "
                                 f"memory_limit has the peak): {failed.stderr_tail()}")
        return result.failed(f"{who}exit status {failed.popen.returncode}: {failed.stderr_tail()}")
    try:
        parsed = ctx.config.rig.parse(outputs, policy, state.workdir, state.launch)
    except rig_contract.MeasurementInvalid as e:
        return result.invalid(str(e))
    except (ValueError, KeyError) as e:
        return result.failed(f"could not parse the rig's output: {e}")
    measured = parsed.samples
    if len(parsed.split) > 1 or any(len(parts) < 2 for parts in parsed.split.values()):
        return result.failed(f"the rig's split is not one axis of two or more parts: "
                             f"{ {axis: sorted(parts) for axis, parts in parsed.split.items()} }")
    part_samples = [s for parts in parsed.split.values() for samples in parts.values() for s in samples]
    bad = next((s for s in parsed.warmup_samples + measured + part_samples
                if not isinstance(s["value"], (int, float)) or not math.isfinite(s["value"]) or s["value"] < 0), None)
    if bad is not None:
        return result.invalid(f"the rig reported {bad['metric']} = {bad['value']!r} at t={bad['t']}: "
                              "not a finite, non-negative number")

    def metrics(samples):
        return ceilings.mark(resultfile.run_metrics(samples, ctx.config.workload.metrics), ctx.config.ceilings, cell.params)
    split = next(({"axis": axis, "parts": [{"value": value, "samples": samples, "metrics": metrics(samples)}
                                           for value, samples in parts.items()]}
                  for axis, parts in parsed.split.items()), None)
    result.measured(parsed.warmup_samples, measured, metrics(measured), parsed.observations, split)
    variant = ctx.config.variants.get(cell.params["variant"])
    if variant and under_test.is_jvm:
        ev["patched_classes"] = process_evidence.patched_class_sources(state.class_load_log, variant["manifest"])
        result.add_evidence("patched_classes", ev["patched_classes"])
    problems = process_evidence.verify(cell, ctx.config.matrix, ev, ctx.host.nodes)
    if "patched_classes" in ev:
        problems += evidence.patched_class_problems(ev["patched_classes"], variant["manifest"])
    if variant and not under_test.is_jvm:
        problems += evidence.patched_binary_problems(ev.get("executable"), variant["manifest"])
    problems += [problem for role_probes in ev.get("probes", {}).values() for probe in role_probes.values()
                 for problem in probe.get("problems", [])]
    if not measured:
        problems.append("the rig reported no measured samples")
    unsteady = []
    if policy.iterating:
        steadiness = steadystate.check(measured, policy.steady_band)
        result.steady_state(policy.steady_band, {s.metric: s.to_json() for s in steadiness})
        counts = {len(values) for values in steadystate.iteration_values(measured).values()}
        if counts != {policy.iterations}:
            problems.append(f"the policy asks for {policy.iterations} measured iterations a launch; the rig reported "
                            f"{', '.join(map(str, sorted(counts))) or 'none'} (samples tagged with their iteration)")
        unsteady = steadystate.judged_unsteady(steadiness, policy.decide_on)
    if problems:
        return result.invalid("knob not in effect: " + problems[0], problems)
    if unsteady:
        # A rig that warms up in time (warmup_iterations 0: the YARN rig's sub-windows) is told warmup_s.
        knob = "policy.warmup_iterations" if policy.warmup_iterations else "policy.warmup_s"
        return result.invalid(f"no steady state: {unsteady[0].describe()}; warm up longer ({knob}) or widen "
                              "policy.steady_band", problems)
    return result.ok()
