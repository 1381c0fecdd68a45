"""buildifier, built at fetch time from the Go modules pinned in go.mod and go.sum.

No registry we reach serves buildifier's release binaries, but the Go module proxy serves its source:
`go build` fetches it through Go's own configured proxy and checks every module against go.sum (sha256
hashes), so the source is pinned as a wheel or a .deb is. The compiler is Debian 12's Go 1.19
(`golang-1.19-go`, installed by ./bazelw), named by path so that a newer `go` on PATH changes nothing.
"""

_SOURCES = ["go.mod", "go.sum", "tools.go"]

def _buildifier_repository_impl(rctx):
    go = rctx.path(rctx.attr.go)
    if not go.exists:
        fail("%s is missing: buildifier is built with Debian's golang-1.19-go (./bazelw installs it)" % rctx.attr.go)
    for name in _SOURCES:
        rctx.symlink(Label("//third_party/buildifier:" + name), "src/" + name)
    work = str(rctx.path("."))
    env = {
        "CGO_ENABLED": "0",
        "GOCACHE": work + "/_go/cache",
        "GOENV": "off",
        # -modcacherw: the module cache is normally read-only, and Bazel could not delete this repository.
        "GOFLAGS": "-mod=readonly -modcacherw",
        "GOPATH": work + "/_go/path",
        "GOTOOLCHAIN": "local",
    }
    rctx.report_progress("go build buildifier")
    result = rctx.execute(
        [go, "build", "-trimpath", "-o", work + "/buildifier", "github.com/bazelbuild/buildtools/buildifier"],
        environment = env,
        working_directory = "src",
        timeout = 1800,
        quiet = True,
    )
    if result.return_code != 0:
        fail("go build buildifier failed (exit %d):\n%s%s" % (result.return_code, result.stdout, result.stderr))
    rctx.delete("_go")
    rctx.file("BUILD.bazel", 'exports_files(["buildifier"])\n')

buildifier_repository = repository_rule(
    implementation = _buildifier_repository_impl,
    attrs = {"go": attr.string(default = "/usr/lib/go-1.19/bin/go", doc = "the Go compiler to build with")},
    doc = "A repository holding the `buildifier` binary built from the pinned modules of this folder.",
)
