"""container_rootfs: the rigs' container image as a root file system tar plus its content-derived tag."""

def _container_rootfs_impl(ctx):
    args = ctx.actions.args()
    args.add_all(ctx.files.debs, before_each = "--deb")
    args.add("--out", ctx.outputs.tar)
    args.add("--tag-out", ctx.outputs.tag)
    ctx.actions.run(
        executable = ctx.executable._build,
        arguments = [args],
        inputs = ctx.files.debs,
        outputs = [ctx.outputs.tar, ctx.outputs.tag],
        mnemonic = "ContainerRootfs",
        progress_message = "Building the rigs' container root file system %s" % ctx.label.name,
        use_default_shell_env = True,
        execution_requirements = {"block-network": "1"},
    )
    files = [ctx.outputs.tar, ctx.outputs.tag]
    return [DefaultInfo(files = depset(files), runfiles = ctx.runfiles(files = files))]

container_rootfs = rule(
    implementation = _container_rootfs_impl,
    doc = """<name>.tar (reproducible: the same .debs give the same bytes) and <name>.tag
(`localhost/tunelab-rig-os:<first 16 hex of the tar's sha256>`). The matrix runner imports the tar into
podman under that tag the first time a cell runs with executor=container (rigs/matrix/container.py).""",
    attrs = {
        "debs": attr.label(default = "@rig_os_debs//:debs", allow_files = [".deb"]),
        "_build": attr.label(default = "//tools/container:build_rootfs", executable = True, cfg = "exec"),
    },
    outputs = {"tar": "%{name}.tar", "tag": "%{name}.tag"},
)
