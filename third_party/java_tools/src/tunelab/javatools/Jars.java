package tunelab.javatools;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

/** Writes deterministic jars: sorted-as-added entries, one fixed timestamp, a generated manifest. */
final class Jars {
  // Bazel's own tools stamp 2010-01-01 so that outputs are byte-identical across builds.
  static final long FIXED_TIME = 1262304000000L;

  private Jars() {}

  static Manifest manifest(Map<String, String> attributes) {
    Manifest m = new Manifest();
    Attributes main = m.getMainAttributes();
    main.put(Attributes.Name.MANIFEST_VERSION, "1.0");
    main.putValue("Created-By", "tunelab offline java_tools");
    for (Map.Entry<String, String> e : attributes.entrySet()) {
      main.putValue(e.getKey(), e.getValue());
    }
    return m;
  }

  /** Writes {@code entries} (path in jar to bytes) after the manifest, creating parent directories. */
  static void write(Path out, Manifest manifest, Map<String, byte[]> entries) throws IOException {
    Files.createDirectories(out.toAbsolutePath().getParent());
    try (OutputStream os = Files.newOutputStream(out);
        JarOutputStream jar = new JarOutputStream(os)) {
      if (manifest != null) {
        put(jar, "META-INF/", null);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        manifest.write(bytes);
        put(jar, "META-INF/MANIFEST.MF", bytes.toByteArray());
      }
      Map<String, Boolean> dirs = new LinkedHashMap<>();
      dirs.put("META-INF/", true);
      for (Map.Entry<String, byte[]> e : entries.entrySet()) {
        String name = e.getKey();
        for (int i = name.indexOf('/'); i >= 0 && i < name.length() - 1; i = name.indexOf('/', i + 1)) {
          String dir = name.substring(0, i + 1);
          if (dirs.putIfAbsent(dir, true) == null) {
            put(jar, dir, null);
          }
        }
        if (!name.endsWith("/")) {
          put(jar, name, e.getValue());
        }
      }
    }
  }

  private static void put(JarOutputStream jar, String name, byte[] data) throws IOException {
    ZipEntry entry = new ZipEntry(name);
    entry.setTime(FIXED_TIME);
    jar.putNextEntry(entry);
    if (data != null) {
      jar.write(data);
    }
    jar.closeEntry();
  }

  /** Visits every file entry of a jar. */
  interface EntryVisitor {
    void visit(String name, byte[] data) throws IOException;
  }

  static void read(Path jarPath, EntryVisitor visitor) throws IOException {
    try (InputStream in = Files.newInputStream(jarPath);
        ZipInputStream zip = new ZipInputStream(in)) {
      for (ZipEntry e = zip.getNextEntry(); e != null; e = zip.getNextEntry()) {
        if (!e.isDirectory()) {
          visitor.visit(e.getName(), zip.readAllBytes());
        }
      }
    }
  }
}
