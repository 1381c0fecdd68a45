package tunelab.rigs.matrix;

import java.util.Map;

/**
 * One JSON object on one line, the form every driver reports in ({"event":"iteration",...}): keys
 * in the order given, strings escaped, numbers as Java prints them (a NaN or infinite double as
 * null: JSON has neither), lists and maps nested. Printed with {@link #print}, which flushes, so
 * the runner sees each line when it happens.
 */
public final class JsonLine {
  private final StringBuilder text = new StringBuilder("{");

  private JsonLine() {}

  /** A line with no "event" key: a sample a rig's parser reads by its own keys. */
  public static JsonLine object() {
    return new JsonLine();
  }

  /** A line whose first key is "event". */
  public static JsonLine event(String name) {
    return new JsonLine().put("event", name);
  }

  /** Adds `key`: `value` (String, Number, Boolean, null, Iterable or Map of these). */
  public JsonLine put(String key, Object value) {
    if (text.length() > 1) {
      text.append(',');
    }
    string(text, key);
    text.append(':');
    value(text, value);
    return this;
  }

  /** Adds every member of `members`, in its order. */
  public JsonLine putAll(Map<String, ?> members) {
    members.forEach(this::put);
    return this;
  }

  @Override
  public String toString() {
    return text + "}";
  }

  /** Prints the line on stdout and flushes (several threads may report: one line each, whole). */
  public void print() {
    String line = toString();
    synchronized (System.out) {
      System.out.println(line);
      System.out.flush();
    }
  }

  private static void value(StringBuilder out, Object v) {
    if (v == null) {
      out.append("null");
    } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long) {
      out.append(v);
    } else if (v instanceof Number) {
      double d = ((Number) v).doubleValue();
      out.append(Double.isNaN(d) || Double.isInfinite(d) ? "null" : v.toString());
    } else if (v instanceof Map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        if (!first) {
          out.append(',');
        }
        first = false;
        string(out, String.valueOf(e.getKey()));
        out.append(':');
        value(out, e.getValue());
      }
      out.append('}');
    } else if (v instanceof Iterable) {
      out.append('[');
      boolean first = true;
      for (Object item : (Iterable<?>) v) {
        if (!first) {
          out.append(',');
        }
        first = false;
        value(out, item);
      }
      out.append(']');
    } else {
      string(out, v.toString());
    }
  }

  private static void string(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    out.append('"');
  }
}
