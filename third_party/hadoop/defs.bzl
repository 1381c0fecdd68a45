"""Patched Hadoop builds: a patch series becomes an overlay jar placed before the stock Maven set.

No full Hadoop build: only the files the series touches are taken from the release's -sources jars,
patched (tools/patches/apply_series.py: `patch -p1`, no fuzz; a patch that does not apply fails the build
naming the file and the hunk) and compiled against the stock jars at the stock bytecode level (Java 8).
"""

load("@rules_java//java:defs.bzl", "java_library")
load("//rigs:defs.bzl", "java_classpath")

def hadoop_patched(name, series, patches, sources, stock, rig_deps = []):
    """Declares a patched build of a Hadoop module for every prefix of a patch series.

    For k = 1..len(patches) (the first k patches of the series):
      <name>_upto_<k>: java_library of the patched classes (the overlay), compiled against `stock`
      <name>_upto_<k>_manifest: JSON with the applied patches and the patch set's content hash
      <name>_upto_<k>_classpath: java_classpath file, the overlay first, then `rig_deps` and `stock`
    and <name>, <name>_manifest, <name>_classpath for the whole series (k = len(patches)).

    Args:
      name: the patch set's name, e.g. "nn_log_out_of_lock".
      series: label of the series file (third_party/<component>/patches/<set>/series).
      patches: labels of the patches, in the series' order (the tool checks it against the series).
      sources: labels of the release's -sources jars holding the touched files.
      stock: the stock Maven set (java_library) the overlay compiles against and runs on.
      rig_deps: the rig's own java_libraries built on `stock` (e.g. its driver), on the same classpath.
    """
    for k in range(1, len(patches) + 1):
        prefix = "%s_upto_%d" % (name, k)
        native.genrule(
            name = prefix + "_sources",
            srcs = [series] + patches + sources,
            outs = [prefix + ".srcjar", prefix + "_manifest.json"],
            cmd = " ".join(
                ["$(location //tools/patches:apply_series)", "--series $(location %s)" % series, "--upto %d" % k] +
                ["--patch $(location %s)" % p for p in patches] +
                ["--sources $(locations %s)" % s for s in sources] +
                [
                    "--out-srcjar $(location %s.srcjar)" % prefix,
                    "--out-manifest $(location %s_manifest.json)" % prefix,
                    "--overlay-jar lib%s.jar" % prefix,
                ],
            ),
            tools = ["//tools/patches:apply_series"],
        )
        java_library(
            name = prefix,
            srcs = [":%s.srcjar" % prefix],
            # The stock jars' bytecode level: Hadoop 3.x ships Java 8 class files.
            javacopts = ["-source", "8", "-target", "8", "-nowarn", "-Xlint:-options"],
            deps = [stock],
        )
        native.filegroup(name = prefix + "_manifest", srcs = [":%s_manifest.json" % prefix])
        java_library(name = prefix + "_with_rig", runtime_deps = rig_deps + [stock])
        java_classpath(name = prefix + "_classpath", dep = ":%s_with_rig" % prefix, overlay = [":" + prefix])
    whole = "%s_upto_%d" % (name, len(patches))
    native.alias(name = name, actual = ":" + whole)
    native.alias(name = name + "_manifest", actual = ":%s_manifest" % whole)
    native.alias(name = name + "_classpath", actual = ":%s_classpath" % whole)
