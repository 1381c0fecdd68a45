"""Redis built from Debian's source package: stock, and patched by a series of ours.

`redis_build` runs third_party/redis/build_redis.py in one action (make, no network) and writes
<name>/redis-server, <name>/redis-benchmark, <name>/redis-cli and <name>/manifest.json (the Debian
version, Debian's patches, our applied patches and their content hash, each binary's sha256).
"""

# The pinned Debian source package (WORKSPACE declares @redis_debian_source with its sha256 sums).
DEBIAN_SOURCE = {
    "debian": "@redis_debian_source//:redis_7.0.15-1~deb12u10.debian.tar.xz",
    "debian_version": "5:7.0.15-1~deb12u10",
    "orig": "@redis_debian_source//:redis_7.0.15.orig.tar.gz",
}

def _redis_build_impl(ctx):
    outs = [ctx.outputs.server, ctx.outputs.benchmark, ctx.outputs.cli]
    args = ctx.actions.args()
    args.add("--orig", ctx.file.orig)
    args.add("--debian", ctx.file.debian)
    args.add("--debian-version", ctx.attr.debian_version)
    args.add("--out-dir", ctx.outputs.server.dirname)
    args.add("--out-manifest", ctx.outputs.manifest)
    inputs = [ctx.file.orig, ctx.file.debian]
    if ctx.attr.cross:
        args.add("--cross", ctx.attr.cross)
        args.add_all(ctx.files.sysroot_debs, before_each = "--sysroot-deb")
        inputs += ctx.files.sysroot_debs
    if ctx.file.series:
        args.add("--series", ctx.file.series)
        args.add_all(ctx.files.patches, before_each = "--patch")
        inputs += [ctx.file.series] + ctx.files.patches
        if ctx.attr.upto:
            args.add("--upto", str(ctx.attr.upto))
    ctx.actions.run(
        executable = ctx.executable._build,
        arguments = [args],
        inputs = inputs,
        outputs = outs + [ctx.outputs.manifest],
        mnemonic = "RedisMake",
        progress_message = "Building redis-server, redis-benchmark, redis-cli (%s%s)" % (
            ctx.label.name,
            ", cross-compiled for " + ctx.attr.cross if ctx.attr.cross else "",
        ),
        # make and gcc from the host (./bazelw installs them); nothing is fetched while building.
        use_default_shell_env = True,
        execution_requirements = {"block-network": "1"},
    )
    return [DefaultInfo(files = depset(outs + [ctx.outputs.manifest]), runfiles = ctx.runfiles(files = outs + [ctx.outputs.manifest]))]

_redis_build = rule(
    implementation = _redis_build_impl,
    doc = "redis-server, redis-benchmark and redis-cli from Debian's source package (and an optional series).",
    attrs = {
        "orig": attr.label(mandatory = True, allow_single_file = [".tar.gz"]),
        "debian": attr.label(mandatory = True, allow_single_file = [".tar.xz"]),
        "debian_version": attr.string(mandatory = True),
        "series": attr.label(allow_single_file = True),
        "patches": attr.label_list(allow_files = [".patch"]),
        "upto": attr.int(doc = "apply only the first `upto` patches (0: the whole series)"),
        "cross": attr.string(doc = "a GNU triplet to cross-compile for (aarch64-linux-gnu); empty: the build host's"),
        "sysroot_debs": attr.label_list(allow_files = [".deb"], doc = "with cross: that architecture's jemalloc"),
        "_build": attr.label(default = "//third_party/redis:build_redis", executable = True, cfg = "exec"),
    },
    outputs = {
        "server": "%{name}/redis-server",
        "benchmark": "%{name}/redis-benchmark",
        "cli": "%{name}/redis-cli",
        "manifest": "%{name}/manifest.json",
    },
)

def redis_build(name, source = DEBIAN_SOURCE, aarch64_on_demand = False, **kwargs):
    """redis-server, redis-benchmark, redis-cli and manifest.json under <name>/, from Debian's source.

    Also <name>_aarch64: the same, cross-compiled for aarch64 (its files under <name>_aarch64/; the bundles
    for aarch64 hosts put them where <name>'s are: tools/fleet/defs.bzl).

    Args:
      name: e.g. "stock".
      source: the Debian source package: {"orig", "debian", "debian_version"}.
      aarch64_on_demand: tag <name>_aarch64 manual: built when an aarch64 bundle asks for it, not by
        `bazel build //...` (the patched builds: stock's cross-build already proves the toolchain, and each
        one costs ~50 s of a CPU).
      **kwargs: series, patches, upto for a patched build; visibility, tags.
    """
    _redis_build(
        name = name,
        orig = source["orig"],
        debian = source["debian"],
        debian_version = source["debian_version"],
        **kwargs
    )
    aarch64_kwargs = dict(kwargs)
    if aarch64_on_demand:
        aarch64_kwargs["tags"] = kwargs.get("tags", []) + ["manual"]
    _redis_build(
        name = name + "_aarch64",
        orig = source["orig"],
        debian = source["debian"],
        debian_version = source["debian_version"],
        cross = "aarch64-linux-gnu",
        sysroot_debs = ["@jemalloc_dev_debs_arm64//:debs"],
        **aarch64_kwargs
    )

def redis_patched(name, series, patches, source = DEBIAN_SOURCE):
    """Declares a patched Redis for every prefix of a patch series.

    For k = 1..len(patches): <name>_upto_<k> (a redis_build with the first k patches: its files are
    <name>_upto_<k>/redis-server, .../redis-benchmark, .../redis-cli, .../manifest.json), and <name>
    for the whole series (an alias; its files under <name>_upto_<len>/).

    Args:
      name: the patch set's name, e.g. "embstr_up_to_108".
      series: label of the series file (third_party/redis/patches/<set>/series).
      patches: labels of the patches, in the series' order (checked against the series when building).
      source: the Debian source package, as for redis_build.
    """
    for k in range(1, len(patches) + 1):
        redis_build(
            name = "%s_upto_%d" % (name, k),
            source = source,
            series = series,
            patches = patches,
            upto = k,
            aarch64_on_demand = True,
        )
    native.alias(name = name, actual = ":%s_upto_%d" % (name, len(patches)))
    native.alias(name = name + "_aarch64", actual = ":%s_upto_%d_aarch64" % (name, len(patches)), tags = ["manual"])
