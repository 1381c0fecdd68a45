"""The two-node NUMA guest image: Debian's kernel plus an initramfs that runs one matrix target inside it."""

def _numa_guest_image_impl(ctx):
    info = ctx.attr.matrix[DefaultInfo]
    exe = info.files_to_run.executable
    lines = ["matrix %s" % exe.path]
    runfiles = []
    for f in info.default_runfiles.files.to_list():
        short = f.short_path
        if short.startswith("../"):
            if short[3:].split("/")[0] in ctx.attr.leave_out:
                continue
            dest = "matrix.runfiles/" + short[3:]
        else:
            dest = "matrix.runfiles/%s/%s" % (ctx.workspace_name, short)
        lines.append("%s %s" % (dest, f.path))
        runfiles.append(f)
    listing = ctx.actions.declare_file(ctx.label.name + ".runfiles.txt")
    ctx.actions.write(listing, "\n".join(lines) + "\n")
    args = ctx.actions.args()
    args.add_all(ctx.files.debs, before_each = "--deb")
    args.add("--kernel-deb", ctx.file.kernel)
    args.add("--init", ctx.file.init)
    args.add("--runfiles", listing)
    args.add("--args", ctx.file.args)
    args.add("--out-kernel", ctx.outputs.kernel)
    args.add("--out-initramfs", ctx.outputs.initramfs)
    ctx.actions.run(
        executable = ctx.executable._build,
        arguments = [args],
        inputs = ctx.files.debs + runfiles + [exe, ctx.file.kernel, ctx.file.init, ctx.file.args, listing],
        outputs = [ctx.outputs.kernel, ctx.outputs.initramfs],
        mnemonic = "NumaGuestImage",
        progress_message = "Building the two-node NUMA guest image %s" % ctx.label.name,
        use_default_shell_env = True,
        execution_requirements = {"block-network": "1"},
    )
    return [DefaultInfo(files = depset([ctx.outputs.kernel, ctx.outputs.initramfs]))]

numa_guest_image = rule(
    implementation = _numa_guest_image_impl,
    doc = "<name>/vmlinuz and <name>/initramfs.cpio.gz: the guest that runs `matrix` (tools/guest/README.md).",
    attrs = {
        "matrix": attr.label(mandatory = True, executable = True, cfg = "target", doc = "a rig_matrix target"),
        "args": attr.label(mandatory = True, allow_single_file = True, doc = "its <name>.args file"),
        "debs": attr.label(default = "@guest_debs_amd64//:debs", allow_files = [".deb"]),
        "kernel": attr.label(default = "@guest_debs_amd64//:kernel.deb", allow_single_file = True),
        "init": attr.label(default = "//tools/guest:init", allow_single_file = True),
        # JDKs are large and a native matrix (jdk = none) needs none of them.
        "leave_out": attr.string_list(default = ["jdk11", "jdk17", "jdk21"]),
        "_build": attr.label(default = "//tools/guest:build_image", executable = True, cfg = "exec"),
    },
    outputs = {"kernel": "%{name}/vmlinuz", "initramfs": "%{name}/initramfs.cpio.gz"},
)
