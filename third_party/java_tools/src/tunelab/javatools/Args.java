package tunelab.javatools;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses the flag style Bazel uses for its Java tools: {@code --flag v1 v2 --other v}, with
 * {@code @params} files holding one argument per line. {@code --javacopts} runs until a lone
 * {@code --}, since javac options themselves start with dashes.
 */
final class Args {
  private final Map<String, List<String>> values = new LinkedHashMap<>();

  static Args parse(String[] argv) throws IOException {
    List<String> expanded = new ArrayList<>();
    for (String arg : argv) {
      if (arg.startsWith("@")) {
        expanded.addAll(Files.readAllLines(Paths.get(arg.substring(1)), StandardCharsets.UTF_8));
      } else {
        expanded.add(arg);
      }
    }
    Args args = new Args();
    String flag = null;
    for (int i = 0; i < expanded.size(); i++) {
      String token = expanded.get(i);
      if (token.equals("--javacopts")) {
        List<String> opts = args.values.computeIfAbsent(token, k -> new ArrayList<>());
        for (i++; i < expanded.size() && !expanded.get(i).equals("--"); i++) {
          opts.add(expanded.get(i));
        }
        flag = null;
      } else if (token.startsWith("--")) {
        flag = token;
        args.values.computeIfAbsent(flag, k -> new ArrayList<>());
      } else if (flag != null) {
        args.values.get(flag).add(token);
      } else {
        throw new IllegalArgumentException("argument outside any flag: " + token);
      }
    }
    return args;
  }

  List<String> list(String flag) {
    return values.getOrDefault(flag, new ArrayList<>());
  }

  String one(String flag) {
    List<String> v = values.get(flag);
    return v == null || v.isEmpty() ? null : v.get(0);
  }

  boolean has(String flag) {
    return values.containsKey(flag);
  }
}
