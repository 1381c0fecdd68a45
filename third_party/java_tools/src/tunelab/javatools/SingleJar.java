package tunelab.javatools;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.Attributes;
import java.util.jar.Manifest;

/**
 * A minimal stand-in for Bazel's singlejar: merges jars and resources into one jar. The first copy of
 * an entry wins, except {@code META-INF/services/*}, which are concatenated so that ServiceLoader
 * registrations of every jar survive (Hadoop's FileSystem and codec lookups depend on that). Jar
 * signatures are dropped, since a merged jar can no longer match them. Writes Main-Class when asked.
 */
public final class SingleJar {
  private SingleJar() {}

  public static void main(String[] argv) throws Exception {
    Args args = Args.parse(argv);
    Map<String, byte[]> entries = new LinkedHashMap<>();
    Map<String, ByteArrayOutputStream> services = new LinkedHashMap<>();
    List<String> prefixes = args.list("--include_prefixes");
    for (String jar : args.list("--sources")) {
      Jars.read(Paths.get(jar), (name, data) -> {
        if (!prefixes.isEmpty() && prefixes.stream().noneMatch(name::startsWith)) {
          return;
        }
        if (name.equals("META-INF/MANIFEST.MF") || isSignature(name)) {
          return;
        }
        if (name.startsWith("META-INF/services/") && !name.endsWith("/")) {
          ByteArrayOutputStream merged = services.computeIfAbsent(name, k -> new ByteArrayOutputStream());
          merged.write(data);
          if (data.length > 0 && data[data.length - 1] != '\n') {
            merged.write('\n');
          }
          return;
        }
        entries.putIfAbsent(name, data);
      });
    }
    for (String spec : args.list("--resources")) {
      int colon = spec.indexOf(':');
      String file = colon < 0 ? spec : spec.substring(0, colon);
      String inJar = colon < 0 ? spec : spec.substring(colon + 1);
      entries.putIfAbsent(inJar, Files.readAllBytes(Paths.get(file)));
    }
    for (String file : args.list("--classpath_resources")) {
      Path p = Paths.get(file);
      entries.putIfAbsent(p.getFileName().toString(), Files.readAllBytes(p));
    }
    for (Map.Entry<String, ByteArrayOutputStream> s : services.entrySet()) {
      entries.put(s.getKey(), s.getValue().toByteArray());
    }
    if (!args.has("--exclude_build_data") && !args.list("--build_info_file").isEmpty()) {
      ByteArrayOutputStream props = new ByteArrayOutputStream();
      for (String info : args.list("--build_info_file")) {
        props.write(Files.readAllBytes(Paths.get(info)));
      }
      entries.put("build-data.properties", props.toByteArray());
    }

    Map<String, String> attributes = new LinkedHashMap<>();
    if (args.one("--main_class") != null) {
      attributes.put(Attributes.Name.MAIN_CLASS.toString(), args.one("--main_class"));
    }
    Manifest manifest = Jars.manifest(attributes);
    for (String line : args.list("--deploy_manifest_lines")) {
      int colon = line.indexOf(':');
      if (colon > 0) {
        manifest.getMainAttributes().putValue(line.substring(0, colon).trim(), line.substring(colon + 1).trim());
      }
    }
    Jars.write(Paths.get(args.one("--output")), manifest, entries);
  }

  private static boolean isSignature(String name) {
    String upper = name.toUpperCase(java.util.Locale.ROOT);
    return upper.startsWith("META-INF/")
        && upper.indexOf('/', "META-INF/".length()) < 0
        && (upper.endsWith(".SF") || upper.endsWith(".RSA") || upper.endsWith(".DSA") || upper.endsWith(".EC"));
  }

}
