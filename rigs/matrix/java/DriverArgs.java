package tunelab.rigs.matrix;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A driver's command line: options declared with the number of values each takes (0: a flag), read
 * once; anything wrong (an unknown option, a missing or malformed value, a missing required option)
 * ends the JVM with status 2 after "DRIVER: what is wrong" and the usage line on stderr, before the
 * driver starts anything. An option given twice keeps every value ({@link #all}); "--" ends the
 * options where the driver takes the rest as its own ({@link #rest}).
 */
public final class DriverArgs {
  private final String driver;
  private final String usage;
  private final Map<String, Integer> arity = new LinkedHashMap<>();
  private final Map<String, List<String[]>> given = new LinkedHashMap<>();
  private final boolean exits;
  private boolean takesRest;
  private List<String> rest = Collections.emptyList();

  /** The driver's name (first word of every error) and its usage line. */
  public DriverArgs(String driver, String usage) {
    this(driver, usage, true);
  }

  /** `exits` false: a usage error throws IllegalArgumentException with the message (tests). */
  DriverArgs(String driver, String usage, boolean exits) {
    this.driver = driver;
    this.usage = usage;
    this.exits = exits;
  }

  /** Declares an option taking `values` values (0: a flag). */
  public DriverArgs option(String name, int values) {
    arity.put(name, values);
    return this;
  }

  /** Declares that "--" ends the options and what follows is the driver's own ({@link #rest}). */
  public DriverArgs restAfterDashDash() {
    takesRest = true;
    return this;
  }

  /** Reads `args` against the declared options; ends the JVM (status 2) on anything undeclared. */
  public DriverArgs parse(String[] args) {
    int i = 0;
    while (i < args.length) {
      String name = args[i];
      if (takesRest && name.equals("--")) {
        rest = Collections.unmodifiableList(Arrays.asList(args).subList(i + 1, args.length));
        return this;
      }
      Integer n = arity.get(name);
      if (n == null) {
        fail("unknown argument " + name);
      }
      if (i + n >= args.length) {
        fail(name + " takes " + n + (n == 1 ? " value" : " values"));
      }
      given
          .computeIfAbsent(name, k -> new ArrayList<>())
          .add(Arrays.copyOfRange(args, i + 1, i + 1 + n));
      i += 1 + n;
    }
    return this;
  }

  /** Whether the flag (or option) was given. */
  public boolean flag(String name) {
    return given.containsKey(declared(name));
  }

  /** The option's last values, or null when it was not given. */
  private String[] last(String name) {
    List<String[]> all = given.get(declared(name));
    return all == null ? null : all.get(all.size() - 1);
  }

  /** The option's value (its `index`th for an option of several), or `otherwise`. */
  public String string(String name, int index, String otherwise) {
    String[] v = last(name);
    return v == null ? otherwise : v[index];
  }

  /** The option's value; a usage error when it was not given. */
  public String required(String name) {
    String[] v = last(name);
    if (v == null) {
      fail("missing " + name);
    }
    return v[0];
  }

  /** The option's `index`th value as an int, or `otherwise`; a usage error when it is not one. */
  public int integer(String name, int index, int otherwise) {
    String v = string(name, index, null);
    if (v == null) {
      return otherwise;
    }
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      fail(name + ": expected an integer, not " + v);
      return otherwise;
    }
  }

  /** The option's value as a long, or `otherwise`; a usage error when it is not one. */
  public long longInteger(String name, long otherwise) {
    String v = string(name, 0, null);
    if (v == null) {
      return otherwise;
    }
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      fail(name + ": expected an integer, not " + v);
      return otherwise;
    }
  }

  /** The option's value as a finite double, or `otherwise`; a usage error when it is not one. */
  public double number(String name, double otherwise) {
    String v = string(name, 0, null);
    if (v == null) {
      return otherwise;
    }
    try {
      double d = Double.parseDouble(v);
      if (!Double.isNaN(d) && !Double.isInfinite(d)) {
        return d;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    fail(name + ": expected a number, not " + v);
    return otherwise;
  }

  /** Every value of a one-value option given any number of times, in order. */
  public List<String> all(String name) {
    List<String> out = new ArrayList<>();
    for (String[] v : given.getOrDefault(declared(name), Collections.emptyList())) {
      out.add(v[0]);
    }
    return out;
  }

  /** What followed "--" (empty without it). */
  public List<String> rest() {
    return rest;
  }

  /** A usage error unless `ok`: for what the driver checks across options. */
  public void check(boolean ok, String message) {
    if (!ok) {
      fail(message);
    }
  }

  private String declared(String name) {
    if (!arity.containsKey(name)) {
      throw new IllegalArgumentException(driver + ": " + name + " is not a declared option");
    }
    return name;
  }

  private void fail(String message) {
    if (!exits) {
      throw new IllegalArgumentException(driver + ": " + message);
    }
    System.err.println(driver + ": " + message);
    System.err.println("usage: " + usage);
    System.err.flush();
    System.exit(2);
  }
}
