package com.google.testing.junit.runner;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.runner.Description;
import org.junit.runner.JUnitCore;
import org.junit.runner.Request;
import org.junit.runner.Result;
import org.junit.runner.manipulation.Filter;
import org.junit.runner.notification.Failure;
import org.junit.runner.notification.RunListener;

/**
 * The JUnit 4 runner java_test starts (Bazel names this class as the main class). It runs the class
 * named by the {@code bazel.test_suite} property, honours {@code --test_filter} (a regex matched
 * against {@code Class#method}), writes Bazel's test.xml and ends with a line
 * {@code N passed, N failed, N skipped}. It has no sharding and no coverage.
 */
public final class BazelTestRunner {
  private BazelTestRunner() {}

  /** One finished test: its description, outcome and duration. */
  private static final class Outcome {
    final Description description;
    Failure failure;
    boolean skipped;
    long startNanos;
    long nanos;

    Outcome(Description description) {
      this.description = description;
    }
  }

  public static void main(String[] args) throws Exception {
    String suite = System.getProperty("bazel.test_suite");
    if (suite == null || suite.isEmpty()) {
      System.err.println("BazelTestRunner: no test class (-Dbazel.test_suite) given");
      System.exit(2);
    }
    Path premature = envPath("TEST_PREMATURE_EXIT_FILE");
    if (premature != null) {
      Files.write(premature, new byte[0]);
    }
    Class<?> testClass = Class.forName(suite);
    Request request = Request.aClass(testClass);
    String only = System.getenv("TESTBRIDGE_TEST_ONLY");
    if (only != null && !only.isEmpty()) {
      request = request.filterWith(new RegexFilter(Pattern.compile(only)));
    }

    List<Outcome> outcomes = new ArrayList<>();
    List<Failure> classFailures = new ArrayList<>();
    PrintStream out = System.out;
    JUnitCore core = new JUnitCore();
    core.addListener(new RunListener() {
      private Outcome current;

      @Override
      public void testStarted(Description d) {
        current = new Outcome(d);
        current.startNanos = System.nanoTime();
        outcomes.add(current);
      }

      @Override
      public void testFinished(Description d) {
        if (current != null) {
          current.nanos = System.nanoTime() - current.startNanos;
          out.printf("%s %s (%.3f s)%n", current.failure == null ? "PASS" : "FAIL", name(d),
              current.nanos / 1e9);
          current = null;
        }
      }

      @Override
      public void testFailure(Failure f) {
        if (current != null && f.getDescription().equals(current.description)) {
          current.failure = f;
        } else {
          classFailures.add(f);  // @BeforeClass/@AfterClass or initialization failure
        }
      }

      @Override
      public void testAssumptionFailure(Failure f) {
        if (current != null) {
          current.skipped = true;
        }
      }

      @Override
      public void testIgnored(Description d) {
        Outcome o = new Outcome(d);
        o.skipped = true;
        outcomes.add(o);
        out.println("SKIP " + name(d));
      }
    });
    long start = System.nanoTime();
    Result result = core.run(request);
    double seconds = (System.nanoTime() - start) / 1e9;

    int failed = classFailures.size();
    int skipped = 0;
    for (Outcome o : outcomes) {
      if (o.failure != null) {
        failed++;
      } else if (o.skipped) {
        skipped++;
      }
    }
    int passed = outcomes.size() - skipped - (failed - classFailures.size());
    for (Outcome o : outcomes) {
      if (o.failure != null) {
        System.out.println("\n=== FAILED " + name(o.description) + "\n" + o.failure.getTrace());
      }
    }
    for (Failure f : classFailures) {
      System.out.println("\n=== FAILED " + f.getDescription() + "\n" + f.getTrace());
    }
    writeXml(suite, outcomes, classFailures, seconds);
    boolean noTests = outcomes.isEmpty() && classFailures.isEmpty();
    if (noTests) {
      System.out.println("No tests ran" + (only != null ? " (filter: " + only + ")" : ""));
    }
    System.out.println(passed + " passed, " + failed + " failed, " + skipped + " skipped");
    if (premature != null) {
      Files.deleteIfExists(premature);
    }
    System.exit(result.wasSuccessful() && failed == 0 && !noTests ? 0 : 1);
  }

  private static String name(Description d) {
    return d.getClassName() + "#" + d.getMethodName();
  }

  private static Path envPath(String variable) {
    String value = System.getenv(variable);
    return value == null || value.isEmpty() ? null : Paths.get(value);
  }

  private static void writeXml(String suite, List<Outcome> outcomes, List<Failure> classFailures, double seconds)
      throws IOException {
    Path xml = envPath("XML_OUTPUT_FILE");
    if (xml == null) {
      return;
    }
    int failures = classFailures.size();
    int skipped = 0;
    for (Outcome o : outcomes) {
      failures += o.failure != null ? 1 : 0;
      skipped += o.skipped && o.failure == null ? 1 : 0;
    }
    StringBuilder sb = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    sb.append(String.format("  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" errors=\"0\" time=\"%.3f\">%n",
        esc(suite), outcomes.size() + classFailures.size(), failures, skipped, seconds));
    for (Outcome o : outcomes) {
      sb.append(String.format("    <testcase classname=\"%s\" name=\"%s\" time=\"%.3f\"",
          esc(o.description.getClassName()), esc(String.valueOf(o.description.getMethodName())), o.nanos / 1e9));
      if (o.failure != null) {
        sb.append(">\n      <failure message=\"").append(esc(String.valueOf(o.failure.getMessage())))
            .append("\">").append(esc(o.failure.getTrace())).append("</failure>\n    </testcase>\n");
      } else if (o.skipped) {
        sb.append(">\n      <skipped/>\n    </testcase>\n");
      } else {
        sb.append("/>\n");
      }
    }
    for (Failure f : classFailures) {
      sb.append("    <testcase classname=\"").append(esc(suite)).append("\" name=\"")
          .append(esc(f.getDescription().getDisplayName())).append("\">\n      <failure message=\"")
          .append(esc(String.valueOf(f.getMessage()))).append("\">").append(esc(f.getTrace()))
          .append("</failure>\n    </testcase>\n");
    }
    sb.append("  </testsuite>\n</testsuites>\n");
    Files.write(xml, sb.toString().getBytes(StandardCharsets.UTF_8));
  }

  private static String esc(String s) {
    StringBuilder b = new StringBuilder();
    for (char c : s.toCharArray()) {
      switch (c) {
        case '<': b.append("&lt;"); break;
        case '>': b.append("&gt;"); break;
        case '&': b.append("&amp;"); break;
        case '"': b.append("&quot;"); break;
        default:
          if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') {
            b.append('?');
          } else {
            b.append(c);
          }
      }
    }
    return b.toString();
  }

  /** Keeps the tests whose {@code Class#method} matches the regex; keeps suites with a match. */
  private static final class RegexFilter extends Filter {
    private final Pattern pattern;

    RegexFilter(Pattern pattern) {
      this.pattern = pattern;
    }

    @Override
    public boolean shouldRun(Description d) {
      if (d.isTest()) {
        return pattern.matcher(d.getClassName() + "#" + d.getMethodName()).find();
      }
      for (Description child : d.getChildren()) {
        if (shouldRun(child)) {
          return true;
        }
      }
      return false;
    }

    @Override
    public String describe() {
      return "tests matching " + pattern;
    }
  }
}
