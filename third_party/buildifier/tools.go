//go:build tools

// Package tools only names the command defs.bzl builds, so that `go mod tidy` keeps its modules in go.sum.
package tools

import _ "github.com/bazelbuild/buildtools/buildifier"
