#!/bin/sh
# Offline stand-in for ijar: copies the jar instead of stripping it to an interface jar, so dependants
# recompile more often than with the real ijar. Called as: ijar [--flags values...] in.jar out.jar
set -eu
while [ "$#" -gt 2 ]; do shift; done
cp "$1" "$2"
chmod u+w "$2"
