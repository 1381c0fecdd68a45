#!/usr/bin/env bash
# The flake hunt (issue 80): the heavy tests run several times each beside a busy loop on one CPU, as CI's
# worst days load this 2-core host, then where each one's time went and which runs failed.
#
#   tools/flake_hunt.sh [--runs N] [--tags integration,e2e] [PATTERN...]
#
# PATTERN: Bazel target patterns (default //...); --tags: the tests of these tags (default: integration and
# e2e, every test that runs a rig, a server or the runner end to end); --runs: runs a test (default 5). Every
# run is a fresh one (no cached result, no retry). The table is tools/test_times.py's: a test with a failed run
# says how many of its runs failed. Exit 0 when every run passed, 1 otherwise, 2 on bad arguments.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=5 tags=integration,e2e patterns=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs=${2:-}; shift 2 || { echo "flake_hunt: --runs needs a number" >&2; exit 2; } ;;
    --tags) tags=${2:-}; shift 2 || { echo "flake_hunt: --tags needs a list" >&2; exit 2; } ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "flake_hunt: unknown option $1 (--help)" >&2; exit 2 ;;
    *) patterns+=("$1"); shift ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]?$ ]] || { echo "flake_hunt: --runs $runs: give 1 to 99" >&2; exit 2; }
[[ "$tags" =~ ^[a-z0-9_-]+(,[a-z0-9_-]+)*$ ]] || { echo "flake_hunt: --tags $tags: comma-separated tags" >&2; exit 2; }
[[ ${#patterns[@]} -gt 0 ]] || patterns=(//...)

# The load: one CPU kept busy for the whole hunt (the other is the tests'), stopped however this ends.
taskset -c 0 sh -c 'while :; do :; done' &
busy=$!
trap 'kill "$busy" 2>/dev/null' EXIT
echo "flake_hunt: ${patterns[*]} (tags ${tags}), ${runs} runs a test, CPU 0 kept busy (pid ${busy})"

./bazelw test "${patterns[@]}" --config=ci --build_tests_only "--test_tag_filters=${tags}" \
  "--runs_per_test=${runs}" --flaky_test_attempts=1 --nocache_test_results
status=$?
# 4: no test matched the tags: nothing ran, which is said, not passed over.
[[ "$status" != 4 ]] || { echo "flake_hunt: no test of ${patterns[*]} has the tags ${tags}"; exit 2; }
python3 tools/test_times.py "$(./bazelw info bazel-testlogs 2>/dev/null)" --bazel ./bazelw
echo "flake_hunt: bazel test exited ${status}: $([[ "$status" == 0 ]] && echo "every run passed" || echo "some runs failed (above)")"
[[ "$status" == 0 ]] || exit 1
