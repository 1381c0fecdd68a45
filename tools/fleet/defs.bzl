"""matrix_bundle: one rig_matrix target as a self-contained archive, for running it on another host."""

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
    for f in runfiles.files.to_list():
        short = f.short_path
        dest = "matrix.runfiles/" + (short[3:] if short.startswith("../") else "%s/%s" % (ctx.workspace_name, short))
        lines.append("file %s %s" % (dest, f.path))
        inputs.append(f)
    for name in runfiles.empty_filenames.to_list():
        # py_binary's package markers (__init__.py): empty files that exist only in the runfiles tree.
        lines.append("empty matrix.runfiles/%s/%s" % (ctx.workspace_name, name))
    listing = ctx.actions.declare_file(ctx.label.name + ".listing.txt")
    ctx.actions.write(listing, "\n".join(lines) + "\n")
    ctx.actions.run(
        executable = ctx.executable._make_bundle,
        arguments = ["--listing", listing.path, "--out", ctx.outputs.bundle.path],
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
times and owners), so its sha256 names the build. //tools:fleet ships it to each host; see
tools/fleet/README.md.""",
    attrs = {
        "matrix": attr.label(mandatory = True, executable = True, cfg = "target", doc = "a rig_matrix target"),
        "args": attr.label(mandatory = True, allow_single_file = True, doc = "its <name>.args file"),
        "_remote_run": attr.label(default = "//tools/fleet:remote_run.py", allow_single_file = True),
        "_make_bundle": attr.label(default = "//tools/fleet:make_bundle", executable = True, cfg = "exec"),
    },
    outputs = {"bundle": "%{name}.tar.gz"},
)
