#!/usr/bin/env bash
# The nightly workflow, runnable here: run the nightly profiles, gate each against its stored baseline,
# publish a PDF report, append the run to the history and look for change points.
#
#   tools/nightly/nightly.sh [OUT_DIR]      (default OUT_DIR: results/nightly-out/<UTC date>)
#   NIGHTLY_MATRICES="calibration yarn_cps" to choose the matrices (default: both)
#
# Baselines are results/baselines/nightly-<matrix>/ (promote a good run with bazel run //tools:promote).
# Without one, the night's run is reported but not gated, and the script says so.
# Exit status: 0 all gates passed; 1 a gate found a regression; 2 a step could not run.
set -uo pipefail

cd "$(dirname "$0")/../.."
workspace=$PWD
bazel=$(command -v bazel || echo "$workspace/bazelw")
out=${1:-$workspace/results/nightly-out/$(date -u +%Y-%m-%d)}
mkdir -p "$out"
status=0

for matrix in ${NIGHTLY_MATRICES:-calibration yarn_cps}; do
  echo "== $matrix: running the nightly profile"
  log="$out/$matrix-run.log"
  "$bazel" run "//rigs:${matrix}_matrix" -- --profile nightly --no-next-steps 2>&1 | tee "$log"
  run_dir=$(sed -n 's/.*results in \([^ ]*\)$/\1/p' "$log" | tail -1)
  if [[ -z "$run_dir" || ! -f "$run_dir/manifest.json" ]]; then
    echo "error: the $matrix run did not start; see $log" >&2
    status=2
    continue
  fi

  baseline="$workspace/results/baselines/nightly-$matrix"
  if [[ -d "$baseline" ]]; then
    echo "== $matrix: gating against $baseline"
    "$bazel" run //tools:gate -- --baseline "$baseline" --candidate "$run_dir" \
      --markdown "$out/$matrix-gate.md" --junit "$out/$matrix-gate.xml"
    gate_status=$?
    if (( gate_status == 1 )); then status=1; elif (( gate_status != 0 && status == 0 )); then status=2; fi
  else
    echo "== $matrix: no baseline at $baseline: not gated. Promote this run if it is good:"
    echo "   bazel run //tools:promote -- $run_dir --name nightly-$matrix"
  fi

  echo "== $matrix: report"
  if ! "$bazel" run //analysis:report -- "$run_dir" --kind axis --out "$out/$matrix-report.pdf"; then
    echo "error: the $matrix report failed" >&2
    (( status == 0 )) && status=2
  fi

  history="$workspace/results/nightly-out/history-$matrix.txt"
  mkdir -p "$(dirname "$history")"
  echo "$run_dir" >> "$history"
  mapfile -t runs < "$history"
  if (( ${#runs[@]} >= 10 )); then
    echo "== $matrix: change points over ${#runs[@]} nights"
    "$bazel" run //analysis:history -- "${runs[@]}" --out "$out/$matrix-history.png" || true
  else
    echo "== $matrix: history has ${#runs[@]} night(s); change points need 10 or more"
  fi
done
echo "nightly outputs in $out (exit $status)"
exit $status
