"""The calibration rig: starts tunelab.rigs.calibration.Calibration and reads its per-second rates."""

from typing import Mapping

from rigs.matrix.contract.rig import MAIN_ROLE, CellView, Launch, Param, Parsed, PolicyView, Rig, Sample
from rigs.matrix.contract.workload import Workload
from results import safeio

UNITS = {"cpu_loop_rate": "ops/s", "memory_copy_rate": "MiB/s"}


class CalibrationRig(Rig):
    name = "calibration"
    parameters = {
        "mode": Param(choices=("cpu", "memory"), doc="a CPU-bound loop or a memory copy"),
        "threads": Param(int, low=1),
        "buffer_mib": Param(int, low=1, doc="the memory copy's buffer"),
        "injected_slowdown_pct": Param(float, low=0, high=99.9, doc="a known slowdown, for gate calibration"),
        "arm": Param(doc="a label only: two arms of one configuration (A/A calibration)"),
    }

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
