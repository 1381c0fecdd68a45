"""The one owner of a cell result while its (cell, repetition) runs: CellResult starts the document from the
blocks the run knows (matrix, cell, policy, provenance, logs), is filled only through its methods, and hands
out the finished document validated against the result schema (results/schema/cell_result.v2.schema.json).

The runner's cell room (rigs/matrix/cell/) calls it; the store (results/store.py) writes what it hands out.
Each method fills one part of the document, so a new part of a result (a profile, say) is one more method
here and one more property in the schema, not a key set somewhere in the runner."""

import copy
import datetime
import time

from results import resultfile

KIND = "tunelab.cell_result"
STATUSES = ("ok", "failed", "invalid", "skipped")


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class CellResultError(ValueError):
    """A method called out of its order (a status given twice, a part filled after the status)."""


class CellResult:
    """One (cell, repetition)'s result while it is made. A status is given once (skipped, failed, invalid, ok);
    the parts a status needs are filled before it. `document()` validates and returns a copy."""

    def __init__(self, run_id, *, matrix, cell, policy, provenance, logs):
        self._started = time.monotonic()
        self._status = None
        self._doc = {
            "schema_version": resultfile.SCHEMA_VERSION, "kind": KIND, "run_id": run_id,
            "matrix": dict(matrix), "cell": dict(cell), "status": "failed", "exit_status": None,
            "policy": dict(policy), "metrics": [], "samples": [], "warmup_samples": [], "evidence": {},
            "problems": [], "provenance": copy.deepcopy(provenance), "logs": dict(logs),
            "started_at": now_iso(), "finished_at": now_iso(),
        }

    @property
    def status(self):
        """The status given, or None while the cell runs."""
        return self._status

    # The parts, filled while the cell runs.

    def add_provenance(self, key, value):
        """One entry of the provenance block (the command, each process' commands, the noise measured)."""
        self._open()
        self._doc["provenance"][key] = value

    def add_generated_inputs(self, generated, host_specific=()):
        """The inputs the rig generated for this cell (name -> sha256), and which of them hold this host's
        names or paths (so another host's run of the same workload may differ in them)."""
        self._open()
        workload = self._doc["provenance"]["workload"]
        workload["generated"] = dict(sorted(generated.items()))
        if host_specific:
            workload["generated_host_specific"] = sorted(host_specific)

    def set_logs(self, logs):
        """The cell's logs: {stdout, stderr} of the process under test, and {role.stdout, ...} of each."""
        self._open()
        self._doc["logs"] = dict(logs)

    def ended(self, exit_status, evidence):
        """The processes have ended: the cell's exit status (None when no load generator ran) and the evidence
        read while they ran."""
        self._open()
        self._doc.update(exit_status=exit_status, evidence=dict(evidence))
        self._clock()

    def add_evidence(self, key, value):
        """Evidence read after the processes ended (the patched classes found in the class-load log)."""
        self._open()
        self._doc["evidence"][key] = value

    def measured(self, warmup_samples, samples, metrics, observations=None, split=None):
        """The rig's samples and their metrics (resultfile.run_metrics, marked against the ceilings);
        observations: the rig's one-off figures; split: {axis, parts: [{value, samples, metrics}]}."""
        self._open()
        self._doc.update(warmup_samples=list(warmup_samples), samples=list(samples), metrics=list(metrics))
        if observations:
            self._doc["observations"] = observations
        if split is not None:
            self._doc["split"] = split

    def steady_state(self, band, metrics):
        """The steady-state check of an iterating policy: the band and, per metric, what the check found."""
        self._open()
        self._doc["steady_state"] = {"band": band, "metrics": dict(metrics)}

    def add_monitors(self, monitors):
        """The launch's monitors (rigs/matrix/cell/monitor.py): the host and the rig's live values once a
        second, bounded there."""
        self._doc["monitors"] = copy.deepcopy(monitors)

    def add_profile(self, profile):
        """The profiled launch's block (rigs/matrix/cell/cellrunner.py _profile): its events, the stored
        recording and collapsed stacks, or why it is missing. Taken after the status too: the profile comes from
        its own launch after the timed one was judged, and changes nothing of the measurement."""
        if self._status not in (None, "ok"):
            raise CellResultError(f"a {self._status} cell has no profile: only a measured one is profiled")
        self._doc["profile"] = copy.deepcopy(profile)

    # The status, given once.

    def skipped(self, reason, ran=True):
        """Not measured, for `reason` (the plan's skip, or the host that cannot apply a knob now); `ran`:
        whether anything was started (a planned skip takes no time)."""
        return self._give("skipped", reason, None if ran else 0.0)

    def failed(self, reason, evidence=None):
        """The cell did not produce a measurement: `reason` names why; `evidence`: what was read before."""
        self._open()
        if evidence is not None:
            self._doc["evidence"] = dict(evidence)
        return self._give("failed", reason)

    def invalid(self, reason, problems=None):
        """Measured, but not as the cell says (a knob not in effect, no steady state, a sample not a
        number): `problems` lists every one found, `reason` names the first."""
        self._open()
        if problems is not None:
            self._doc["problems"] = list(problems)
        return self._give("invalid", reason)

    def ok(self, problems=()):
        """Measured as the cell says: every knob proven in effect."""
        if problems:
            raise CellResultError(f"a cell with problems is invalid, not ok: {problems[0]}")
        self._open()
        self._doc["problems"] = []
        return self._give("ok", None)

    def document(self):
        """The finished result, validated (resultfile.ResultError names the first problem); a copy."""
        if self._status is None:
            raise CellResultError("the result has no status yet")
        resultfile.validate(self._doc)
        return copy.deepcopy(self._doc)

    def _give(self, status, reason, duration_s=None):
        self._open()
        self._status = status
        self._doc["status"] = status
        if reason is not None:
            self._doc["reason"] = reason
        self._clock(duration_s)
        return self

    def _clock(self, duration_s=None):
        self._doc["finished_at"] = now_iso()
        self._doc["duration_s"] = time.monotonic() - self._started if duration_s is None else duration_s

    def _open(self):
        if self._status is not None:
            raise CellResultError(f"the result is already {self._status}: its parts are fixed")
