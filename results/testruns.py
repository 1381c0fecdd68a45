"""Stored runs for tests of the store, the unpacker and the fleet: a recorded result (testdata/result_v1_ok.json,
written by a real calibration run) and a manifest that describes it, packed as a run folder or an archive."""

import copy
import io
import json
import os
import tarfile

from results import resultfile, safeio, store

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_ID = "20261121T062107Z-0c0b"  # the run of the recorded result


def recorded_result(repetition=0):
    with open(os.path.join(HERE, "testdata", "result_v1_ok.json")) as f:
        doc = resultfile.migrate(json.load(f))  # as every reader sees it
    doc["cell"]["repetition"] = repetition
    return doc


def manifest_for(run_id=RUN_ID, repetitions=(0,), state="complete", fleet=None):
    """A schema-valid manifest of the recorded result's cell with these repetitions stored."""
    doc = recorded_result()
    cell = store.manifest_cell(doc["cell"]["id"], doc["cell"]["params"], None, {r: "ok" for r in repetitions})
    return store.manifest_document(
        run_id, state, matrix=copy.deepcopy(doc["matrix"]),
        workload={k: doc["provenance"]["workload"][k] for k in ("id", "sha256")},
        host_id=doc["provenance"]["host"]["host"]["host_id"], cells=[cell],
        order=[(cell["id"], r) for r in repetitions], updated_at=doc["finished_at"], fleet=fleet)


def make_run(root, host="hostA", run_id=RUN_ID, state="complete", repetitions=(0,), fleet=None):
    """A run folder with the recorded result's repetitions, a manifest and a log."""
    run_dir = os.path.join(root, host, run_id)
    os.makedirs(os.path.join(run_dir, "cells"), exist_ok=True)
    os.makedirs(os.path.join(run_dir, "logs"), exist_ok=True)
    for rep in repetitions:
        path = resultfile.result_path(run_dir, recorded_result()["cell"]["id"], rep)
        if not os.path.exists(path):
            doc = recorded_result(rep)
            doc["run_id"] = run_id
            store.write_result_file(path, doc)
    safeio.write_json(os.path.join(run_dir, "manifest.json"),
                                 manifest_for(run_id, repetitions, state, fleet))
    with open(os.path.join(run_dir, "logs", "cell.log"), "w") as f:
        f.write("log line\n")
    return run_dir


def tar_bytes(entries, mode="w:gz", fmt=tarfile.PAX_FORMAT):
    """entries: [(name, bytes or None for a folder, tarfile type)]"""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode, format=fmt) as tar:
        for name, data, kind in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()
