package tunelab.javatools;

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * A minimal stand-in for Bazel's JavaBuilder: compiles with the host JDK's javac in-process and
 * writes the outputs the Java rules declare. It gives up strict deps, classpath reduction, Error
 * Prone and header compilation (see third_party/README.md).
 */
public final class JavaBuilder {
  private JavaBuilder() {}

  public static void main(String[] argv) throws Exception {
    System.exit(run(Args.parse(argv)));
  }

  static int run(Args args) throws IOException {
    Path output = Paths.get(args.one("--output"));
    Path scratch = Files.createTempDirectory(output.toAbsolutePath().getParent(), "javabuilder");
    try {
      Path classes = Files.createDirectories(scratch.resolve("classes"));
      Path gensrc = Files.createDirectories(scratch.resolve("gensrc"));
      Path headers = Files.createDirectories(scratch.resolve("headers"));
      List<String> sources = new ArrayList<>(args.list("--sources"));
      for (String srcJar : args.list("--source_jars")) {
        sources.addAll(extractSources(Paths.get(srcJar), scratch.resolve("srcjars")));
      }
      sources.removeIf(s -> !s.endsWith(".java"));

      if (!sources.isEmpty()) {
        List<String> javac = new ArrayList<>(javacOptions(args.list("--javacopts")));
        javac.add("-d");
        javac.add(classes.toString());
        javac.add("-s");
        javac.add(gensrc.toString());
        javac.add("-h");
        javac.add(headers.toString());
        javac.add("-cp");
        javac.add(String.join(File.pathSeparator, args.list("--classpath")));
        if (args.list("--processors").isEmpty()) {
          javac.add("-proc:none");
        } else {
          javac.add("-processorpath");
          javac.add(String.join(File.pathSeparator, args.list("--processorpath")));
          javac.add("-processor");
          javac.add(String.join(",", args.list("--processors")));
        }
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        if (compiler == null) {
          System.err.println("JavaBuilder: the host Java runtime has no javac (need a full JDK)");
          return 1;
        }
        StringWriter diagnostics = new StringWriter();
        boolean ok;
        try (StandardJavaFileManager files =
            compiler.getStandardFileManager(null, null, StandardCharsets.UTF_8)) {
          ok = compiler.getTask(new PrintWriter(diagnostics), files, null, javac, null,
                  files.getJavaFileObjectsFromStrings(sources))
              .call();
        }
        System.err.print(diagnostics);
        if (!ok) {
          return 1;
        }
      }

      Map<String, byte[]> entries = new TreeMap<>();
      collect(classes, entries);
      for (String resource : args.list("--resources")) {
        addResource(resource, entries);
      }
      for (String resource : args.list("--classpath_resources")) {
        Path p = Paths.get(resource);
        entries.put(p.getFileName().toString(), Files.readAllBytes(p));
      }
      for (String resourceJar : args.list("--resource_jars")) {
        Jars.read(Paths.get(resourceJar), (name, data) -> {
          if (!name.equals("META-INF/MANIFEST.MF")) {
            entries.putIfAbsent(name, data);
          }
        });
      }
      Map<String, String> attributes = new LinkedHashMap<>();
      if (args.one("--target_label") != null) {
        attributes.put("Target-Label", args.one("--target_label"));
      }
      if (args.one("--injecting_rule_kind") != null) {
        attributes.put("Injecting-Rule-Kind", args.one("--injecting_rule_kind"));
      }
      Jars.write(output, Jars.manifest(attributes), entries);

      writeJarOf(args.one("--native_header_output"), headers);
      writeJarOf(args.one("--generated_sources_output"), gensrc);
      // Empty protobuf messages are valid: no dependency or manifest information is reported.
      touch(args.one("--output_deps_proto"));
      touch(args.one("--output_manifest_proto"));
      return 0;
    } finally {
      deleteTree(scratch);
    }
  }

  /** Keeps javac's own options; turns -source/-target into --release so JDK APIs match too. */
  static List<String> javacOptions(List<String> opts) {
    List<String> out = new ArrayList<>();
    String release = null;
    for (int i = 0; i < opts.size(); i++) {
      String o = opts.get(i);
      if ((o.equals("-source") || o.equals("-target") || o.equals("--release")) && i + 1 < opts.size()) {
        release = opts.get(++i);
      } else if (o.startsWith("-Xep") || o.startsWith("-XepOpt")) {
        // Error Prone flags: the shim has no Error Prone.
      } else {
        out.add(o);
      }
    }
    if (release != null && !release.isEmpty()) {
      out.add("--release");
      out.add(release.startsWith("1.") ? release.substring(2) : release);
    }
    return out;
  }

  private static List<String> extractSources(Path srcJar, Path dir) throws IOException {
    List<String> out = new ArrayList<>();
    Path root = Files.createDirectories(dir.resolve(Integer.toString(srcJar.toString().hashCode())));
    Jars.read(srcJar, (name, data) -> {
      Path dest = root.resolve(name).normalize();
      if (!dest.startsWith(root)) {
        throw new IOException("entry escapes the source jar: " + name);
      }
      Files.createDirectories(dest.getParent());
      Files.write(dest, data);
      out.add(dest.toString());
    });
    return out;
  }

  private static void addResource(String spec, Map<String, byte[]> entries) throws IOException {
    int colon = spec.indexOf(':');
    String file = colon < 0 ? spec : spec.substring(0, colon);
    String inJar = colon < 0 ? spec : spec.substring(colon + 1);
    entries.put(inJar, Files.readAllBytes(Paths.get(file)));
  }

  private static void collect(Path root, Map<String, byte[]> entries) throws IOException {
    try (Stream<Path> files = Files.walk(root)) {
      for (Path p : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
        entries.put(root.relativize(p).toString().replace(File.separatorChar, '/'), Files.readAllBytes(p));
      }
    }
  }

  private static void writeJarOf(String out, Path dir) throws IOException {
    if (out != null) {
      Map<String, byte[]> entries = new TreeMap<>();
      collect(dir, entries);
      Jars.write(Paths.get(out), Jars.manifest(new LinkedHashMap<>()), entries);
    }
  }

  private static void touch(String out) throws IOException {
    if (out != null) {
      Files.createDirectories(Paths.get(out).toAbsolutePath().getParent());
      Files.write(Paths.get(out), new byte[0]);
    }
  }

  static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> files = Files.walk(root)) {
      for (Path p : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
        Files.delete(p);
      }
    }
  }
}
