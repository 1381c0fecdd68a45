"""Synthetic result sets for tests of reports and gating: real result documents (a stored calibration run)
with chosen sample values and rewritten provenance. They test mechanics; they are not measurements."""

import copy
import datetime
import json
import os

import numpy

from analysis import resultsets
from results import store

REAL_RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "sets", "calibration_smoke")


def template():
    with open(os.path.join(REAL_RUN, "cells", sorted(os.listdir(os.path.join(REAL_RUN, "cells")))[0])) as f:
        return json.load(f)


def write_set(folder, cells, host="vm-x86", cpu="AMD EPYC", rig="calibration", workload_sha=None,
              metric="cpu_loop_rate", unit="ops/s", runs=5, noise=None, seed=0, reference=None, fleet_host=None,
              direction="higher_is_better", question=None, host_cpu=None, jdk=None, memory=None):
    """A SYNTHETIC set: cells = [(params overrides, level)], `runs` repetitions x 5 samples. Without `noise`
    the run-to-run jitter is a fixed pattern; with it, run medians scatter by that relative stdev (seeded).
    reference: the host reference's cpu_loop_rate (before and after the matrix, 0.5 % apart), if any.
    fleet_host: the inventory name //tools:fleet would record in the manifest, if any. question: the matrix's
    own question, as a run's manifest states it. host_cpu, jdk, memory: fields laid over the template's
    provenance (another architecture's CPU, JDK build, hugepage size)."""
    rng = numpy.random.default_rng(seed)
    os.makedirs(os.path.join(folder, "cells"))
    base = template()
    run_id = f"20261121T0000{len(os.listdir(os.path.dirname(folder))):02d}Z-0000"
    cells_entries, order = [], []
    for n, (overrides, level) in enumerate(cells):
        cells_entries.append(store.manifest_cell(f"{n:012x}", dict(base["cell"]["params"], **overrides), None,
                                                 {r: "ok" for r in range(runs)}))
        order += [(f"{n:012x}", rep) for rep in range(runs)]
        for rep in range(runs):
            d = copy.deepcopy(base)
            d["run_id"] = run_id
            d["matrix"]["rig"] = d["matrix"]["name"] = rig
            d["cell"] = {"id": f"{n:012x}", "params": dict(base["cell"]["params"], **overrides), "repetition": rep}
            d["status"] = "ok"
            d.pop("reason", None)
            # Every launch starts at its own time, as on a real host (a reader refuses one measurement stored twice).
            d["started_at"] = (datetime.datetime(2026, 11, 21, tzinfo=datetime.timezone.utc)
                               + datetime.timedelta(seconds=10 * (n * runs + rep))).isoformat(timespec="milliseconds")
            jitter = float(rng.normal(0, noise)) if noise else (-0.002, 0.001, 0.0, 0.002, -0.001)[rep % 5]
            d["samples"] = [{"metric": metric, "value": level * (1 + jitter + 0.001 * (k - 2)), "unit": unit,
                             "t": float(k + 1)} for k in range(5)]
            d["warmup_samples"] = []
            d["metrics"] = [{"name": metric, "unit": unit, "direction": direction, "statistic": "median",
                             "value": level, "n": 5}]
            d["provenance"]["host"]["host"]["host_id"] = host
            d["provenance"]["host"]["cpu"]["model_name"] = cpu
            d["provenance"]["host"]["cpu"].update(host_cpu or {})
            d["provenance"]["host"]["memory"].update(memory or {})
            if d["provenance"].get("jdk"):
                d["provenance"]["jdk"].update(jdk or {})
            if "variant" in overrides:
                d["provenance"]["variant"] = {"name": overrides["variant"], "patch_set_sha256":
                                              None if overrides["variant"] == "stock" else "ab" * 32}
            if workload_sha:
                d["provenance"]["workload"]["sha256"] = workload_sha
            with open(os.path.join(folder, "cells", f"{n:012x}.r{rep}.json"), "w") as f:
                json.dump(d, f)
    matrix = {"name": rig, "rig": rig, "profile": "smoke", "overrides": [], "seed": 1, "spec_sha256": "0" * 64}
    if question:
        matrix["question"] = question
    host_reference = {"probe": "synthetic", "measurements": [
        {"when": when, "metric": "cpu_loop_rate", "unit": "ops/s", "median": reference * k, "samples": [reference * k]}
        for when, k in (("before", 1.0), ("after", 0.995))]} if reference else None
    manifest = store.manifest_document(
        run_id, "complete", matrix=matrix, host_id=host, cells=cells_entries, order=order,
        workload={"id": base["provenance"]["workload"]["id"],
                  "sha256": workload_sha or base["provenance"]["workload"]["sha256"]},
        updated_at=base["finished_at"], host_reference=host_reference,
        fleet={"host": fleet_host, "fleet_id": "fleet-20261124T000000Z-0000"} if fleet_host else None)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    return resultsets.load_run(folder, name=os.path.basename(folder))
