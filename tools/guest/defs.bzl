"""Guest images for QEMU: Debian's kernel plus an initramfs, for amd64 or arm64 (tools/guest/README.md)."""

# The modules the guest's network needs (build_image.py adds what they depend on, in load order): virtio-mmio
# on arm64's `virt` board, virtio-pci on amd64's PC. Debian builds them as modules.
_NET_MODULES = {
    "amd64": ["virtio_pci", "virtio_net"],
    "arm64": ["virtio_mmio", "virtio_net"],
}

def _guest_image_impl(ctx):
    args = ctx.actions.args()
    inputs = ctx.files.debs + [ctx.file.kernel, ctx.file.init]
    if ctx.attr.matrix:
        info = ctx.attr.matrix[DefaultInfo]
        exe = info.files_to_run.executable
        lines = ["matrix %s" % exe.path]
        for f in info.default_runfiles.files.to_list():
            short = f.short_path
            if short.startswith("../"):
                if short[3:].split("/")[0] in ctx.attr.leave_out:
                    continue
                dest = "matrix.runfiles/" + short[3:]
            else:
                dest = "matrix.runfiles/%s/%s" % (ctx.workspace_name, short)
            lines.append("%s %s" % (dest, f.path))
            inputs.append(f)
        listing = ctx.actions.declare_file(ctx.label.name + ".runfiles.txt")
        ctx.actions.write(listing, "\n".join(lines) + "\n")
        args.add("--runfiles", listing)
        args.add("--args", ctx.file.args)
        inputs += [exe, ctx.file.args, listing]
    args.add_all(ctx.files.debs, before_each = "--deb")
    args.add("--kernel-deb", ctx.file.kernel)
    args.add("--init", ctx.file.init)
    args.add_all(_NET_MODULES[ctx.attr.arch] if ctx.attr.network else [], before_each = "--module")
    args.add("--out-kernel", ctx.outputs.kernel)
    args.add("--out-initramfs", ctx.outputs.initramfs)
    ctx.actions.run(
        executable = ctx.executable._build,
        arguments = [args],
        inputs = inputs,
        outputs = [ctx.outputs.kernel, ctx.outputs.initramfs],
        mnemonic = "GuestImage",
        progress_message = "Building the %s guest image %s" % (ctx.attr.arch, ctx.label.name),
        use_default_shell_env = True,
        execution_requirements = {"block-network": "1"},
    )
    return [DefaultInfo(files = depset([ctx.outputs.kernel, ctx.outputs.initramfs]))]

_guest_image = rule(
    implementation = _guest_image_impl,
    doc = "<name>/vmlinuz and <name>/initramfs.cpio.gz (tools/guest/README.md).",
    attrs = {
        "arch": attr.string(mandatory = True, values = ["amd64", "arm64"]),
        "matrix": attr.label(executable = True, cfg = "target", doc = "a rig_matrix target the guest runs, or none"),
        "args": attr.label(allow_single_file = True, doc = "the matrix's <name>.args file"),
        "network": attr.bool(doc = "carry the virtio network modules (a guest that is an SSH host)"),
        "debs": attr.label(mandatory = True, allow_files = [".deb"]),
        "kernel": attr.label(mandatory = True, allow_single_file = True),
        "init": attr.label(default = "//tools/guest:init", allow_single_file = True),
        # JDKs are large and a native matrix (jdk = none) needs none of them.
        "leave_out": attr.string_list(default = ["jdk11", "jdk17", "jdk21"]),
        "_build": attr.label(default = "//tools/guest:build_image", executable = True, cfg = "exec"),
    },
    outputs = {"kernel": "%{name}/vmlinuz", "initramfs": "%{name}/initramfs.cpio.gz"},
)

def guest_image(name, arch, matrix = None, args = None, **kwargs):
    """A guest for QEMU of Debian architecture `arch` (amd64, arm64).

    With `matrix` (and its `args`), the guest runs that matrix target at boot and powers off (run_guest.py);
    without, it is an SSH host for the fleet (host_guest.py), with the virtio network modules.

    Args:
      name: the target; its files are <name>/vmlinuz and <name>/initramfs.cpio.gz.
      arch: "amd64" or "arm64": the kernel and packages of @guest_debs_<arch>.
      matrix: a rig_matrix target, or None.
      args: that target's <name>_args file.
      **kwargs: tags, visibility.
    """
    _guest_image(
        name = name,
        arch = arch,
        matrix = matrix,
        args = args,
        network = matrix == None,
        debs = "@guest_debs_%s//:debs" % arch,
        kernel = "@guest_debs_%s//:kernel.deb" % arch,
        **kwargs
    )
