#!/usr/bin/env bash
# The nightly workflow: tonight's candidate (this checkout) against the last accepted revision, both
# measured in ONE interleaved run on this host, so that host drift between days cancels out.
#
#   tools/nightly/nightly.sh [OUT_DIR]      (default OUT_DIR: results/nightly-out/<UTC date>)
#   NIGHTLY_MATRICES="calibration yarn_cps"  the matrices (default: every rig whose rigs/<rig>/rig.toml has
#                                            [nightly], `python3 -m rigs.registry --nightly`); the profile it
#                                            names has a `revision` axis ["accepted", "candidate"]
#   NIGHTLY_FIXED=1                          run a fixed 5 rounds instead of the gated rounds (the profiles stop
#                                            at the gate's PASS or REGRESSED and add rounds while it is
#                                            INCONCLUSIVE, within the rig's [nightly] budget_min)
#   NIGHTLY_BISECT_BUDGET=2h                 a REGRESSED matrix starts a bisect of accepted..HEAD within this
#                                            machine time (//tools:bisect); its answer goes into <matrix>-gate.md
#                                            and <matrix>-bisect.txt (unset: no bisect)
#   NIGHTLY_RUN_ARGS="--no-host-reference"   more arguments for every matrix run (words split on spaces; the
#                                            runner refuses one it does not know before anything runs)
#   NIGHTLY_ACCEPTED=<commit>                the accepted revision (default: the one recorded by the last
#                                            passing night in results/nightly-out/accepted-revision, or
#                                            HEAD on the first night: an A/A run)
#
# Per matrix: build the accepted revision's rig target in a git worktree (kept under
# results/nightly-out/worktrees/ for the next night), run the nightly profile with
# --revision accepted=<its runfiles>, gate candidate vs accepted inside that run (//tools/gate:gate --run
# --axis revision), write the PDF report, index the night in the results database (//tools:results), draw the
# history of the matrix's nights from the database and look for change points. When every gate passes on a clean
# checkout, HEAD becomes the accepted revision.
# Exit status: 0 every gate PASS; 1 a gate found a regression (REGRESSED); 2 a step could not run; 3 no
# regression, but a gate was INCONCLUSIVE (neither shown nor ruled out: too noisy a night, too few rounds).
# Only a night of PASSes moves the accepted revision.
#
# Without Bazel, on builds made already (its test, //tools/nightly:nightly_test, runs it so):
#   NIGHTLY_RUNFILES=<dir>           a runfiles tree holding the matrix targets, //tools/gate:gate,
#                                    //analysis/reports:report, //analysis/history and //tools/results
#                                    (and <matrix>_matrix.args):
#                                    tonight's candidate, run from there instead of `bazel run`
#   NIGHTLY_ACCEPTED_RUNFILES=<dir>  the accepted revision's runfiles tree, instead of a worktree build
# The run folder, its id and status come from the runner's --run-info file, never from its console.
set -uo pipefail

caller_dir=$PWD  # a relative OUT_DIR is the caller's, not the workspace's
cd "$(dirname "$0")/../.."
workspace=$PWD
bazel=$(command -v bazel || echo "$workspace/bazelw")
prebuilt=${NIGHTLY_RUNFILES:-}
if [[ -n "$prebuilt" && -z "${NIGHTLY_ACCEPTED_RUNFILES:-}" ]] || [[ -z "$prebuilt" && -n "${NIGHTLY_ACCEPTED_RUNFILES:-}" ]]; then
  echo "error: NIGHTLY_RUNFILES and NIGHTLY_ACCEPTED_RUNFILES go together (both builds given, or Bazel makes both)" >&2
  exit 2
fi
for tree in "$prebuilt" "${NIGHTLY_ACCEPTED_RUNFILES:-}"; do
  [[ -z "$tree" || -d "$tree/tunelab" ]] || { echo "error: $tree is not a runfiles tree (no tunelab/ in it)" >&2; exit 2; }
done

# Runs a py_binary target with arguments: through `bazel run`, or from the prebuilt runfiles tree (from its
# workspace folder, as `bazel run` does, with the arguments its BUILD file gives first: <name>.args).
run_target() {
  local target=$1
  shift
  if [[ -z "$prebuilt" ]]; then
    "$bazel" run "$target" -- "$@"
    return
  fi
  local path=${target#//}
  path=${path/://}
  local build_args=()
  [[ ! -f "$prebuilt/tunelab/$path.args" ]] || mapfile -t build_args < "$prebuilt/tunelab/$path.args"
  (cd "$prebuilt/tunelab" &&
    env -u RUNFILES_DIR -u RUNFILES_MANIFEST_FILE -u TEST_SRCDIR -u PYTHON_RUNFILES \
      BUILD_WORKSPACE_DIRECTORY="$workspace" BUILD_WORKING_DIRECTORY="$workspace" \
      "./$path" "${build_args[@]}" "$@")
}

# A field of the runner's --run-info JSON file (empty if the file or the field is missing).
run_info_field() {
  python3 -c 'import json, sys
try:
    value = json.load(open(sys.argv[1])).get(sys.argv[2])
except (OSError, ValueError, AttributeError):
    value = None
print("" if value is None else value)' "$1" "$2"
}
nightly_root="$workspace/results/nightly-out"
out=${1:-$nightly_root/$(date -u +%Y-%m-%d)}
[[ "$out" == /* ]] || out="$caller_dir/$out"
mkdir -p "$out" "$nightly_root/worktrees"
out=$(cd "$out" && pwd -P)  # absolute: each build runs from its own worktree
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

# The accepted revision's worktree, kept from an earlier night, is built in (its BUILD files and .bazelrc run):
# only one this checkout's git made at that commit, unchanged (issue 78: a stored folder is data, never code).
worktree="$nightly_root/worktrees/$accepted"
if [[ -z "$prebuilt" && -e "$worktree" ]]; then
  real=$(cd "$worktree" 2>/dev/null && pwd -P) || real=""
  made_at=$(git worktree list --porcelain | awk -v p="$real" '$1 == "worktree" {w = substr($0, 10)} $1 == "HEAD" && w == p {print $2}')
  if [[ -L "$worktree" || -z "$real" || "$made_at" != "$accepted" ]] || [[ -n "$(git -C "$worktree" status --porcelain --untracked-files=all 2>/dev/null)" ]]; then
    echo "error: $worktree is not a worktree this checkout's git made at $accepted, unchanged: refused, never built in (remove it; the nightly makes it again)" >&2
    exit 2
  fi
fi

# The nightly's rigs as their rig.toml files declare them: MATRIX PROFILE BUDGET_S, one per line.
# --root: this checkout's rig.toml files, whichever rigs package Python imports (a test's PYTHONPATH has its own).
registered=$(python3 -m rigs.registry --nightly --root "$workspace") || { echo "error: the rigs' registry cannot be read (above)" >&2; exit 2; }
declare -A nightly_profile nightly_budget
registered_matrices=()
while read -r name profile budget; do
  [[ -n "$name" ]] || continue
  registered_matrices+=("$name")
  nightly_profile[$name]=$profile
  nightly_budget[$name]=$budget
done <<<"$registered"
read -r -a matrices <<<"${NIGHTLY_MATRICES:-${registered_matrices[*]}}"
for matrix in "${matrices[@]}"; do
  if [[ -z "${nightly_profile[$matrix]:-}" ]]; then
    echo "error: NIGHTLY_MATRICES names $matrix, which no rigs/<rig>/rig.toml runs nightly (registered: ${registered_matrices[*]})" >&2
    exit 2
  fi
done

if [[ -z "$prebuilt" && ! -d "$worktree" ]]; then
  git worktree add --detach "$worktree" "$accepted" >/dev/null || { echo "error: git worktree add failed" >&2; exit 2; }
fi

for matrix in "${matrices[@]}"; do
  profile=${nightly_profile[$matrix]}
  target="//rigs:${matrix}_matrix"
  if [[ -n "$prebuilt" ]]; then
    runfiles=$NIGHTLY_ACCEPTED_RUNFILES
    echo "== $matrix: the accepted revision's build: $runfiles"
  else
    echo "== $matrix: building the accepted revision's $target (in $worktree)"
    # Its args file too (beside its runfiles): the runner runs the accepted build's own rig data, which an
    # accepted commit older than the args in its runfiles names only there.
    if ! (cd "$worktree" && "$bazel" build "$target" "${target}_args" >"$out/$matrix-accepted-build.log" 2>&1); then
      echo "error: the accepted revision does not build $target; see $out/$matrix-accepted-build.log" >&2
      status=2
      continue
    fi
    runfiles="$worktree/bazel-bin/rigs/${matrix}_matrix.runfiles"
  fi

  echo "== $matrix: running the nightly profile (accepted and candidate interleaved)"
  log="$out/$matrix-run.log"
  run_info="$out/$matrix-run-info.json"
  rm -f "$run_info"
  # The gated profile adds rounds while the gate is INCONCLUSIVE, within the rig's budget (its rig.toml).
  rounds=(--set "policy.budget_s=${nightly_budget[$matrix]}")
  [[ "${NIGHTLY_FIXED:-0}" == 1 ]] && rounds=(--set policy.repetitions=5)
  read -r -a run_args <<<"${NIGHTLY_RUN_ARGS:-}"
  started=$SECONDS
  run_target "$target" --profile "$profile" --revision "accepted=$runfiles" "${rounds[@]}" "${run_args[@]}" \
    --no-next-steps --run-info "$run_info" 2>&1 | tee "$log"
  echo "== $matrix: the run took $((SECONDS - started)) s ($([[ "${NIGHTLY_FIXED:-0}" == 1 ]] && echo 'fixed 5 rounds' || echo "gated rounds within ${nightly_budget[$matrix]} s of measuring"))"
  run_dir=$(run_info_field "$run_info" run_dir)
  run_status=$(run_info_field "$run_info" status)
  if [[ -z "$run_dir" || ! -f "$run_dir/manifest.json" ]]; then
    echo "error: the $matrix run did not start (runner status: ${run_status:-none, it wrote no $run_info}); see $log" >&2
    status=2
    continue
  fi
  # 0: every cell ok or skipped; 1: some cells failed (the gate still judges what was measured).
  if [[ "$run_status" != 0 && "$run_status" != 1 ]]; then
    echo "error: the $matrix run ended with status $run_status ($(run_info_field "$run_info" status_name)); see $log" >&2
    status=2
    continue
  fi

  echo "== $matrix: gating candidate against accepted, inside run $(run_info_field "$run_info" run_id)"
  # --record: the verdict kept beside the run (gate.json) and indexed with it (the results database).
  run_target //tools/gate:gate --run "$run_dir" --axis revision --baseline-value accepted \
    --candidate-value candidate --markdown "$out/$matrix-gate.md" --junit "$out/$matrix-gate.xml" --record
  gate_status=$?
  # //tools:gate: 0 PASS, 1 REGRESSED, 2 unusable, 3 INCONCLUSIVE. A regression wins; a step that could not
  # run comes next; an inconclusive gate only over a clean night.
  case $gate_status in
    0) ;;
    1) status=1 ;;
    3) (( status == 0 )) && status=3 ;;
    *) (( status != 1 )) && status=2 ;;
  esac

  # A regression with a range to search: name the commit (tools/bisection/command.py) within the declared budget.
  if (( gate_status == 1 )) && [[ -n "${NIGHTLY_BISECT_BUDGET:-}" ]]; then
    bisect_answer="$out/$matrix-bisect.json"
    if [[ -n "$prebuilt" ]]; then
      echo "== $matrix: no bisect: NIGHTLY_RUNFILES names prebuilt builds, so there are no commits to build" | tee "$out/$matrix-bisect.txt"
    elif [[ "$accepted" == "$head" ]]; then
      echo "== $matrix: no bisect: the accepted revision is this commit (the regression is in uncommitted changes)" | tee "$out/$matrix-bisect.txt"
    else
      echo "== $matrix: bisecting $accepted..$head (budget $NIGHTLY_BISECT_BUDGET)"
      run_target //tools:bisect --matrix "$target" --profile "$profile" --good "$accepted" --bad "$head" \
        --budget "$NIGHTLY_BISECT_BUDGET" --answer-file "$bisect_answer" 2>&1 | tee "$out/$matrix-bisect.log"
      echo "$(run_info_field "$bisect_answer" state): $(run_info_field "$bisect_answer" text)" > "$out/$matrix-bisect.txt"
    fi
    { echo; echo "## Bisect"; echo; cat "$out/$matrix-bisect.txt"; } >> "$out/$matrix-gate.md"
  fi

  echo "== $matrix: report"
  if ! run_target //analysis/reports:report "$run_dir" --kind axis --appendix --out "$out/$matrix-report.pdf"; then
    echo "error: the $matrix report failed" >&2
    (( status == 0 )) && status=2
  fi

  # The night's rows in the results database (//tools:results; SQLite under results/.db unless TUNELAB_DB names
  # a team's PostgreSQL): its run, results, gate checks and night, beside the documents that stay the source.
  echo "== $matrix: indexing the night in the results database"
  if ! run_target //tools/results:results import "$run_dir"; then
    echo "error: the $matrix night is not in the results database (its run folder is kept: import it again)" >&2
    (( status == 0 )) && status=2
  fi

  # The history is the database's nights of this matrix and profile (a team's: every host's nightly).
  echo "== $matrix: the nightly history from the results database (change points once a segment has 5 nights)"
  run_target //analysis/history:history --matrix-of "$run_dir" --out "$out/$matrix-history.png" || true
done

# The accepted build's Bazel server is not needed until tomorrow.
[[ -n "$prebuilt" ]] || (cd "$worktree" && "$bazel" shutdown >/dev/null 2>&1) || true
if (( status == 0 )); then
  if [[ -z "$(git status --porcelain --untracked-files=no)" ]]; then
    echo "$head" > "$nightly_root/accepted-revision"
    echo "== every gate passed: $head is now the accepted revision"
  else
    echo "== every gate passed, but the checkout has uncommitted changes: the accepted revision stays $accepted"
  fi
elif (( status == 3 )); then
  echo "== no regression shown, but a gate was INCONCLUSIVE (see its *-gate.md): the accepted revision stays $accepted"
fi
echo "nightly outputs in $out (exit $status)"
exit $status
