"""matrix_bundle: one rig_matrix target as a self-contained archive, for running it on another host."""

def _runfiles_path(ctx, f):
    short = f.short_path
    return short[3:] if short.startswith("../") else "%s/%s" % (ctx.workspace_name, short)

def _stand_in_for(path, suffix):
    """Where another machine's file goes in the bundle, and what it replaces there as a whole.

    ("pypi/site/x.so", "pypi") for "pypi_aarch64/site/x.so": the path the file stands in at, and the folder
    (or file) it replaces. None if no path segment (or file stem) ends in the suffix.

    Args:
      path: the file's runfiles path.
      suffix: "_" + the machine, e.g. "_aarch64".

    Returns:
      (path in the bundle, the replaced folder or file), or None.
    """
    parts = path.split("/")
    for i, part in enumerate(parts):
        stem, dot, ext = part.partition(".")
        if stem.endswith(suffix):
            parts[i] = stem[:-len(suffix)] + dot + ext
            return "/".join(parts), "/".join(parts[:i + 1])
    return None

def _matrix_bundle_impl(ctx):
    info = ctx.attr.matrix[DefaultInfo]
    exe = info.files_to_run.executable
    lines = [
        "file matrix %s" % exe.path,
        "file matrix.args %s" % ctx.file.args.path,
        "file remote_run.py %s" % ctx.file._remote_run.path,
    ]
    runfiles = info.default_runfiles
    inputs = [exe, ctx.file.args, ctx.file._remote_run]

    # Another machine's files: each X_<machine> stands in for X (a repository, folder or file) as a whole.
    replaced = {}
    stand_ins = []
    for f in ctx.files.stand_ins:
        found = _stand_in_for(_runfiles_path(ctx, f), "_" + ctx.attr.machine)
        if not found:
            fail("%s: its path names no `_%s` folder or file to stand in for" % (f.short_path, ctx.attr.machine))
        stand_ins.append((found[0], f))
        replaced[found[1]] = True
    for name, reason in ctx.attr.missing.items():
        replaced[name] = True
        note = ctx.actions.declare_file("%s.%s.MISSING" % (ctx.label.name, name))
        ctx.actions.write(note, reason + "\n")
        stand_ins.append(("%s/MISSING" % name, note))
    for f in runfiles.files.to_list():
        path = _runfiles_path(ctx, f)
        parts = path.split("/")
        if [True for i in range(len(parts)) if "/".join(parts[:i + 1]) in replaced]:
            continue
        lines.append("file matrix.runfiles/%s %s" % (path, f.path))
        inputs.append(f)
    for path, f in stand_ins:
        lines.append("file matrix.runfiles/%s %s" % (path, f.path))
        inputs.append(f)
    for name in runfiles.empty_filenames.to_list():
        # py_binary's package markers (__init__.py): empty files that exist only in the runfiles tree.
        lines.append("empty matrix.runfiles/%s/%s" % (ctx.workspace_name, name))
    listing = ctx.actions.declare_file(ctx.label.name + ".listing.txt")
    ctx.actions.write(listing, "\n".join(lines) + "\n")
    ctx.actions.run(
        executable = ctx.executable._make_bundle,
        arguments = ["--listing", listing.path, "--out", ctx.outputs.bundle.path, "--machine", ctx.attr.machine],
        inputs = inputs + [listing],
        outputs = [ctx.outputs.bundle],
        mnemonic = "MatrixBundle",
        progress_message = "Packing %s as a bundle for other hosts" % ctx.attr.matrix.label,
        execution_requirements = {"block-network": "1"},
    )
    return [DefaultInfo(files = depset([ctx.outputs.bundle]), runfiles = ctx.runfiles(files = [ctx.outputs.bundle]))]

matrix_bundle = rule(
    implementation = _matrix_bundle_impl,
    doc = """<name>.tar.gz: a rig_matrix target's launcher, its runfiles (JDKs and wheels included), its
`bazel run` arguments (matrix.args) and tools/fleet/remote_run.py, packed reproducibly (sorted, zero
times and owners), so its sha256 names the build. //tools:fleet ships it to each host of its `machine`;
see tools/fleet/README.md. For another machine, `stand_ins` replace the runfiles they are named after
(@pypi_aarch64 for @pypi, //third_party/redis:stock_aarch64 for :stock, ...) and `missing` names what that
machine has no pinned build of, with the reason (the bundle carries it as <name>/MISSING); every ELF file in
the bundle must be for `machine` (make_bundle.py refuses it otherwise).""",
    attrs = {
        "machine": attr.string(default = "x86_64", values = ["x86_64", "aarch64"], doc = "`uname -m` of the hosts"),
        "stand_ins": attr.label_list(allow_files = True, doc = "files whose path holds a `X_<machine>` segment"),
        "missing": attr.string_dict(doc = "{runfiles folder: why this machine has none}, e.g. a JDK"),
        "matrix": attr.label(mandatory = True, executable = True, cfg = "target", doc = "a rig_matrix target"),
        "args": attr.label(mandatory = True, allow_single_file = True, doc = "its <name>.args file"),
        "_remote_run": attr.label(default = "//tools/fleet:remote_run.py", allow_single_file = True),
        "_make_bundle": attr.label(default = "//tools/fleet:make_bundle", executable = True, cfg = "exec"),
    },
    outputs = {"bundle": "%{name}.tar.gz"},
)
