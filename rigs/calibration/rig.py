"""The calibration rig: starts tunelab.rigs.calibration.Calibration and reads its per-second rates."""

import json

from rigs.matrix.rig import MAIN_ROLE, Launch, Parsed, Rig

UNITS = {"cpu_loop_rate": "ops/s", "memory_copy_rate": "MiB/s"}


class CalibrationRig(Rig):
    name = "calibration"

    def launch(self, cell, workload, policy, workdir, data, inputs_dir):
        p = cell.params
        return Launch.jvm(
            main_class="tunelab.rigs.calibration.Calibration",
            classpath=[data["jar"]],
            args=["--mode", p["mode"], "--threads", p["threads"], "--buffer-mib", p["buffer_mib"],
                  "--injected-slowdown-pct", p["injected_slowdown_pct"],
                  "--warmup-s", str(policy.warmup_s), "--measure-s", str(policy.measure_s)],
        )

    def parse(self, outputs, policy, workdir, launch):
        stdout_text = outputs[MAIN_ROLE]
        warmup, measured = [], []
        for line in stdout_text.splitlines():
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            sample = {"metric": rec["metric"], "value": float(rec["value"]), "unit": UNITS[rec["metric"]],
                      "t": float(rec["t"])}
            (warmup if rec["phase"] == "warmup" else measured).append(sample)
        return Parsed(warmup, measured)


RIG = CalibrationRig()
