"""The calibration rig: starts tunelab.rigs.calibration.Calibration and reads its per-second rates."""

from typing import Mapping

from rigs.matrix.contract.rig import MAIN_ROLE, CellView, Launch, LiveMetric, Param, Parsed, PolicyView, Rig, Sample
from rigs.matrix.contract.workload import Workload
from results import safeio

UNITS = {"cpu_loop_rate": "ops/s", "memory_copy_rate": "MiB/s"}
# The per-second rate lines, as a watched run serves them (issue 63).
LIVE_NAMES = {"cpu_loop_rate": "cpu_loop_ops_per_second", "memory_copy_rate": "memory_copy_mib_per_second"}


class CalibrationRig(Rig):
    name = "calibration"
    parameters = {
        "mode": Param(choices=("cpu", "memory"), doc="a CPU-bound loop or a memory copy"),
        "threads": Param(int, low=1),
        "buffer_mib": Param(int, low=1, doc="the memory copy's buffer"),
        "injected_slowdown_pct": Param(float, low=0, high=99.9, doc="a known slowdown, for gate calibration"),
        "arm": Param(doc="a label only: two arms of one configuration (A/A calibration)"),
    }
    live_metrics = {
        "cpu_loop_ops_per_second": LiveMetric("gauge", "The CPU loop's rate over the last second (mode=cpu)"),
        "memory_copy_mib_per_second": LiveMetric("gauge", "The memory copy's rate over the last second (mode=memory)"),
    }

    def live(self, role: str, line: str) -> Mapping[str, float]:
        if role != MAIN_ROLE or not line.startswith("{"):
            return {}
        rec = safeio.parse_json(line)
        name = LIVE_NAMES.get(str(rec.get("metric"))) if isinstance(rec, dict) else None
        return {name: float(rec["value"])} if name else {}

    def launch(self, cell: CellView, workload: Workload, policy: PolicyView, workdir: str, data: Mapping[str, str],
               inputs_dir: str) -> Launch:
        p = cell.params
        return Launch.jvm(
            main_class="tunelab.rigs.calibration.Calibration",
            classpath=[data["jar"]],
            args=["--mode", p["mode"], "--threads", p["threads"], "--buffer-mib", p["buffer_mib"],
                  "--injected-slowdown-pct", p["injected_slowdown_pct"],
                  "--warmup-s", str(policy.warmup_s), "--measure-s", str(policy.measure_s)],
        )

    def parse(self, outputs: Mapping[str, str], policy: PolicyView, workdir: str, launch: Launch) -> Parsed:
        stdout_text = outputs[MAIN_ROLE]
        warmup: list[Sample] = []
        measured: list[Sample] = []
        for line in stdout_text.splitlines():
            if not line.startswith("{"):
                continue
            rec = safeio.parse_json(line)
            sample = {"metric": rec["metric"], "value": float(rec["value"]), "unit": UNITS[rec["metric"]],
                      "t": float(rec["t"])}
            (warmup if rec["phase"] == "warmup" else measured).append(sample)
        return Parsed(warmup, measured)


RIG = CalibrationRig()
