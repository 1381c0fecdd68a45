#!/usr/bin/env bash
# The nightly workflow: tonight's candidate (this checkout) against the last accepted revision, both
# measured in ONE interleaved run on this host, so that host drift between days cancels out.
#
#   tools/nightly/nightly.sh [OUT_DIR]      (default OUT_DIR: results/nightly-out/<UTC date>)
#   NIGHTLY_MATRICES="calibration yarn_cps"  the matrices (default: both); each has a `nightly` profile
#                                            whose `revision` axis is ["accepted", "candidate"]
#   NIGHTLY_FIXED=1                          run the fixed 5 rounds instead of stopping once decided
#   NIGHTLY_ACCEPTED=<commit>                the accepted revision (default: the one recorded by the last
#                                            passing night in results/nightly-out/accepted-revision, or
#                                            HEAD on the first night: an A/A run)
#
# Per matrix: build the accepted revision's rig target in a git worktree (kept under
# results/nightly-out/worktrees/ for the next night), run the nightly profile with
# --revision accepted=<its runfiles>, gate candidate vs accepted inside that run (//tools:gate --run
# --axis revision), write the PDF report, append the run to the history and look for change points (host
# drift marked apart). When every gate passes on a clean checkout, HEAD becomes the accepted revision.
# Exit status: 0 all gates passed; 1 a gate found a regression; 2 a step could not run.
set -uo pipefail

cd "$(dirname "$0")/../.."
workspace=$PWD
bazel=$(command -v bazel || echo "$workspace/bazelw")
nightly_root="$workspace/results/nightly-out"
out=${1:-$nightly_root/$(date -u +%Y-%m-%d)}
mkdir -p "$out" "$nightly_root/worktrees"
status=0

head=$(git rev-parse HEAD) || { echo "error: not a git checkout" >&2; exit 2; }
accepted=${NIGHTLY_ACCEPTED:-$(cat "$nightly_root/accepted-revision" 2>/dev/null || true)}
if [[ -z "$accepted" ]]; then
  accepted=$head
  echo "== no accepted revision recorded: tonight is an A/A run of $head against itself"
fi
accepted=$(git rev-parse --verify "$accepted^{commit}") || { echo "error: unknown accepted revision" >&2; exit 2; }
echo "== candidate: this checkout ($head$([[ -n "$(git status --porcelain --untracked-files=no)" ]] && echo ', with uncommitted changes'))"
echo "== accepted:  $accepted"

worktree="$nightly_root/worktrees/$accepted"
if [[ ! -d "$worktree" ]]; then
  git worktree add --detach "$worktree" "$accepted" >/dev/null || { echo "error: git worktree add failed" >&2; exit 2; }
fi

for matrix in ${NIGHTLY_MATRICES:-calibration yarn_cps}; do
  target="//rigs:${matrix}_matrix"
  echo "== $matrix: building the accepted revision's $target (in $worktree)"
  if ! (cd "$worktree" && "$bazel" build "$target" >"$out/$matrix-accepted-build.log" 2>&1); then
    echo "error: the accepted revision does not build $target; see $out/$matrix-accepted-build.log" >&2
    status=2
    continue
  fi
  runfiles="$worktree/bazel-bin/rigs/${matrix}_matrix.runfiles"

  echo "== $matrix: running the nightly profile (accepted and candidate interleaved)"
  log="$out/$matrix-run.log"
  fixed=()
  [[ "${NIGHTLY_FIXED:-0}" == 1 ]] && fixed=(--set policy.repetitions=5)
  started=$SECONDS
  "$bazel" run "$target" -- --profile nightly --revision "accepted=$runfiles" "${fixed[@]}" --no-next-steps 2>&1 | tee "$log"
  echo "== $matrix: the run took $((SECONDS - started)) s ($([[ ${#fixed[@]} -gt 0 ]] && echo 'fixed 5 rounds' || echo 'sequential'))"
  run_dir=$(sed -n 's/.*results in \([^ ]*\)$/\1/p' "$log" | tail -1)
  if [[ -z "$run_dir" || ! -f "$run_dir/manifest.json" ]]; then
    echo "error: the $matrix run did not start; see $log" >&2
    status=2
    continue
  fi

  echo "== $matrix: gating candidate against accepted, inside run $(basename "$run_dir")"
  "$bazel" run //tools:gate -- --run "$run_dir" --axis revision --baseline-value accepted \
    --candidate-value candidate --markdown "$out/$matrix-gate.md" --junit "$out/$matrix-gate.xml"
  gate_status=$?
  if (( gate_status == 1 )); then status=1; elif (( gate_status != 0 && status == 0 )); then status=2; fi

  echo "== $matrix: report"
  if ! "$bazel" run //analysis:report -- "$run_dir" --kind axis --out "$out/$matrix-report.pdf"; then
    echo "error: the $matrix report failed" >&2
    (( status == 0 )) && status=2
  fi

  history="$nightly_root/history-$matrix.txt"
  echo "$run_dir" >> "$history"
  mapfile -t runs < "$history"
  if (( ${#runs[@]} >= 10 )); then
    echo "== $matrix: change points over ${#runs[@]} nights (host drift marked apart)"
    "$bazel" run //analysis:history -- "${runs[@]}" --out "$out/$matrix-history.png" || true
  else
    echo "== $matrix: history has ${#runs[@]} night(s); change points need 10 or more"
  fi
done

# The accepted build's Bazel server is not needed until tomorrow.
(cd "$worktree" && "$bazel" shutdown >/dev/null 2>&1) || true
if (( status == 0 )); then
  if [[ -z "$(git status --porcelain --untracked-files=no)" ]]; then
    echo "$head" > "$nightly_root/accepted-revision"
    echo "== every gate passed: $head is now the accepted revision"
  else
    echo "== every gate passed, but the checkout has uncommitted changes: the accepted revision stays $accepted"
  fi
fi
echo "nightly outputs in $out (exit $status)"
exit $status
