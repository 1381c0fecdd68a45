"""The gate's --confirm: the runner command that reruns one regressed cell of a stored candidate set, and
running it. Only one of this checkout's rig_matrix targets is ever run, with every value checked."""

import os
import re
import subprocess
import tempfile
from results import safeio


class ConfirmError(ValueError):
    pass


SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.:@+/,=-]{1,200}$")


def matrix_targets(workspace):
    """The rig_matrix targets of this checkout (rigs/BUILD.bazel), as labels."""
    try:
        with open(os.path.join(workspace, "rigs", "BUILD.bazel")) as f:
            text = f.read()
    except OSError:
        return set()
    return {f"//rigs:{name}" for name in re.findall(r'rig_matrix\(\s*name\s*=\s*"([A-Za-z0-9_]+)"', text)}


AXIS_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}", re.ASCII)


def confirm_command(candidate, check, workspace):
    """The runner command that reruns one cell of the candidate set (its target, profile and values). The
    target comes from result data: only one of this checkout's matrix targets is run, and every value is
    passed as one --name=value argument."""
    m = candidate.manifest.get("matrix", {})
    doc = candidate.first_ok()
    target = doc["provenance"]["bazel_target"]
    if not target:
        raise ConfirmError(f"{candidate.name} does not record the target that made it; cannot rerun")
    known = matrix_targets(workspace)
    if target not in known:
        raise ConfirmError(f"{candidate.name} names the target {target[:100]!r}, which is not a matrix target of this "
                        f"checkout ({', '.join(sorted(known)) or 'none found in rigs/BUILD.bazel'}); not run")
    argv = ["bazel", "run", target, "--"]
    # An axis name is a word: "policy.measure_s" would set the policy (a week a round) and "--x" an option
    # (issue 58, row 6); both came from the candidate's results.
    names = [k for k in check.params if not AXIS_NAME.fullmatch(str(k))]
    if names:
        raise ConfirmError(f"{candidate.name}: {str(names[0])[:100]!r} is not an axis name (a word of letters, digits "
                           "and _); not run")
    values = ([m["profile"]] if m.get("profile") else []) + [f"{k}={v}" for k, v in check.params.items()]
    bad = [v for v in values if not SAFE_VALUE.fullmatch(str(v))]
    if bad:
        raise ConfirmError(f"{candidate.name}: {bad[0][:100]!r} is not a profile or axis value the runner takes; not run")
    if m.get("profile"):
        argv.append(f"--profile={m['profile']}")
    argv += [f"--set={k}={v}" for k, v in check.params.items()]
    return argv + ["--no-next-steps"]


def run_matrix(argv, workspace):
    """Runs a matrix target (a `bazel run ... --` command line) and returns (its run folder or None, its exit
    status, its output), the folder read from the runner's --run-info file: never from its console, whose
    lines wrap at the console's width."""
    with tempfile.TemporaryDirectory(prefix="tunelab-run-info-") as tmp:
        info_path = os.path.join(tmp, "run-info.json")
        proc = subprocess.run(argv + [f"--run-info={info_path}"], cwd=workspace, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        try:
            info = safeio.read_json(info_path, 1 << 20)
        except (OSError, safeio.InputError):
            info = {}
    run_dir = info.get("run_dir") if isinstance(info, dict) else None
    return (run_dir if isinstance(run_dir, str) and run_dir else None), proc.returncode, proc.stdout


def run_confirmation(argv, workspace):
    run_dir, status, output = run_matrix(argv, workspace)
    if not run_dir:
        raise ConfirmError(f"the confirmation run started no run (exit {status}):\n{output[-2000:]}")
    return run_dir
