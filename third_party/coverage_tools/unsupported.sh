#!/bin/sh
echo "coverage is not supported by tunelab's offline Bazel shims (third_party/README.md)" >&2
exit 2
