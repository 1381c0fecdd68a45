"""What the runner prints and writes about a plan: the plan table with its time estimate, the plan as JSON
(for tools that plan on another host, //tools:fleet), and the next steps after a run."""

import datetime
import json
import sys

from rich.markup import escape
from rich.table import Table

from analysis import compare
from rigs.matrix.planning import spec
from results import safeio

JVM_START_ESTIMATE_S = 2.0
HOST_REFERENCE_ESTIMATE_S = 8.0
PLAN_SCHEMA = "tunelab.plan/1"


def estimate_seconds(planned, policy, rig=None, repetitions_of=None, known=()):
    """Wall time of the runnable cells: the rig's own estimate per cell if it has one (a trace-driven rig
    runs as long as its trace), else warm-up + measurement + cool-down + JVM start; a profiled cell's extra
    launch twice that (not the cells in `known`: known answers, never profiled)."""
    total = 0.0
    for p in planned:
        if p.skip_reason:
            continue
        per = rig.estimate_seconds(p.cell.params, policy) if rig is not None else None
        if per is None:
            per = policy.warmup_s + policy.measure_s + JVM_START_ESTIMATE_S
        if (policy.profile and p.cell.params.get("profile_launch", "extra") == "extra"
                and p.cell.id not in known):
            per *= 2  # the profiled launch: the cell once more each round
        total += (per + policy.cooldown_s) * (repetitions_of(p.cell) if repetitions_of else policy.repetitions)
    return total


def run_status(matrix, cell):
    """How often a cell runs, as the plan shows it: a known answer its own fixed count (a sequential design
    stops the comparisons, never the self-check), any other cell the policy's count or min..max."""
    if any(k.cell_id == cell.id for k in matrix.known_answers):
        return f"run x{matrix.repetitions_of(cell)} (known answer)"
    pol = matrix.policy
    return f"run {pol.min_repetitions}..{pol.repetitions}" if pol.sequential else f"run x{pol.repetitions}"


def print_plan(console, matrix, planned, profile, rig=None):
    varying = set(compare.varying_axes([p.cell for p in planned]))
    pol = matrix.policy
    t = Table(title=f"Plan: {matrix.name} (profile {profile or 'default'}), rig {matrix.rig}")
    for col in ("cell", "parameters", "JDK", "status"):
        t.add_column(col, overflow="fold")
    for p in planned:
        status = f"[yellow]skip[/yellow]: {escape(p.skip_reason)}" if p.skip_reason else run_status(matrix, p.cell)
        jdk = f"{p.jdk['name']} {p.jdk.get('version', '')}" if p.jdk else spec.NO_JDK
        t.add_row(p.cell.id, escape(p.cell.label(varying)), jdk, status)
    console.print(t)
    known = {k.cell_id for k in matrix.known_answers}
    est = estimate_seconds(planned, matrix.policy, rig, matrix.repetitions_of, known) + 2 * HOST_REFERENCE_ESTIMATE_S
    runnable = sum(1 for p in planned if not p.skip_reason)
    if pol.sequential:
        shortest = est * pol.min_repetitions / pol.repetitions
        counted = (f"{pol.min_repetitions}..{pol.repetitions} rounds, each comparison stopping once decided"
                   if pol.stop == "decided" else pol.describe())
        longest = min(est, pol.budget_s + 2 * HOST_REFERENCE_ESTIMATE_S) if pol.budget_s else est
        when = (f"estimated time {datetime.timedelta(seconds=round(shortest))} (all decided at round "
                f"{pol.min_repetitions}) to {datetime.timedelta(seconds=round(longest))} "
                f"({'the budget' if longest < est else 'max'})")
    elif pol.rerun_noisy_rounds:
        longest = est * (pol.repetitions + pol.rerun_noisy_rounds) / pol.repetitions
        counted = f"{pol.repetitions} repetitions (+ at most {pol.rerun_noisy_rounds} rounds run again for steal)"
        when = (f"estimated time {datetime.timedelta(seconds=round(est))} (no noisy round) to "
                f"{datetime.timedelta(seconds=round(longest))}")
    else:
        counted, when = f"{pol.repetitions} repetitions", f"estimated time {datetime.timedelta(seconds=round(est))}"
    iterations = f"{pol.describe_iterations()}, " if pol.iterating else ""
    timed = sum(1 for p in planned if not p.skip_reason and p.cell.params.get("profile_launch") == "timed")
    iterations += f"{pol.describe_profile()}, " if pol.profile else ""
    iterations += f"{timed} cell(s) profiled in their timed launches instead (profile_launch=timed), " if timed else ""
    console.print(f"{len(planned)} cells, {runnable} to run x {counted} "
                  f"({iterations}warm-up {pol.warmup_s:g} s, measure {pol.measure_s:g} s, cool-down {pol.cooldown_s:g} s, "
                  f"timeout {pol.timeout_s:g} s), {len(planned) - runnable} skipped; {when}")


def print_next_steps(console, ctx, args):
    console.print(f"Results: {ctx.provenance.run_dir} (manifest.json, cells/, logs/)")
    target = ctx.provenance.bazel_target or "<this target>"
    profiles = sorted(safeio.read_toml(ctx.config.matrix_source).get("profiles", {}))
    others = [p for p in profiles if p != args.profile and p != "smoke"]
    if others:
        console.print(f"Other profiles of this matrix: {', '.join(others)}. Plan one with: bazel run {target} -- "
                      "--profile NAME --dry-run")


def plan_document(matrix, planned, profile, rig, report):
    """The plan as JSON: what this host will run and skip (with reasons), and the doctor report it used."""
    return {
        "schema": PLAN_SCHEMA, "matrix": matrix.name, "rig": matrix.rig, "profile": profile,
        "estimated_s": round(estimate_seconds(planned, matrix.policy, rig, matrix.repetitions_of,
                                              {k.cell_id for k in matrix.known_answers})
                             + 2 * HOST_REFERENCE_ESTIMATE_S),
        "cells": [{"id": p.cell.id, "params": p.cell.params, "repetitions": matrix.repetitions_of(p.cell),
                   "skip_reason": p.skip_reason or None} for p in planned],
        "doctor": report,
    }


def write_plan_json(path, doc):
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        safeio.write_text(path, text)
