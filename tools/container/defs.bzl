"""container_image: the rigs' container image as an image archive (podman load / docker load) plus its tag."""

def _container_image_impl(ctx):
    args = ctx.actions.args()
    args.add_all(ctx.files.debs, before_each = "--deb")
    args.add("--out", ctx.outputs.tar)
    args.add("--tag-out", ctx.outputs.tag)
    ctx.actions.run(
        executable = ctx.executable._build,
        arguments = [args],
        inputs = ctx.files.debs,
        outputs = [ctx.outputs.tar, ctx.outputs.tag],
        mnemonic = "ContainerImage",
        progress_message = "Building the rigs' container image %s" % ctx.label.name,
        use_default_shell_env = True,
        execution_requirements = {"block-network": "1"},
    )
    files = [ctx.outputs.tar, ctx.outputs.tag]
    return [DefaultInfo(files = depset(files), runfiles = ctx.runfiles(files = files))]

container_image = rule(
    implementation = _container_image_impl,
    doc = """<name>.tar, an image archive in the docker-archive layout (reproducible: the same .debs give
the same bytes), and <name>.tag (`localhost/tunelab-rig-os:<first 16 hex of the root file system layer's
sha256>`, the tag inside the archive). The matrix runner loads it into podman the first time a cell runs
with executor=container (rigs/matrix/knobs/container.py); the fleet ships it to hosts that run in the image.""",
    attrs = {
        "debs": attr.label(default = "@rig_os_debs_amd64//:debs", allow_files = [".deb"]),
        "_build": attr.label(default = "//tools/container:build_image", executable = True, cfg = "exec"),
    },
    outputs = {"tar": "%{name}.tar", "tag": "%{name}.tag"},
)
