// Pins buildifier (github.com/bazelbuild/buildtools) for //:lint_test; built by defs.bzl with Debian 12's Go 1.19.
// Regenerate: with go 1.19, `go get github.com/bazelbuild/buildtools@VERSION && go mod tidy` in this folder.
module tunelab/buildifier

go 1.19

require github.com/bazelbuild/buildtools v0.0.0-20250130132114-635c1223b1e6

require (
	github.com/golang/protobuf v1.5.0 // indirect
	google.golang.org/protobuf v1.33.0 // indirect
)
