#!/usr/bin/env bash
# Stamps builds with the harness commit (read by targets built with stamp = 1, and by provenance).
set -u
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then dirty=true; else dirty=false; fi
echo "STABLE_GIT_COMMIT ${commit}"
echo "STABLE_GIT_DIRTY ${dirty}"
