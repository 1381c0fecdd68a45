package tunelab.rigs.matrix;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.JUnit4;

/** The driver kit: arguments, JSON lines and the iteration loop every rig's driver uses. */
@RunWith(JUnit4.class)
public class DriverKitTest {
  private static DriverArgs nnBench() {
    return new DriverArgs("NnBenchDriver", "usage", false)
        .option("--name-dir", 1)
        .option("--skip-fsync", 0)
        .option("--iterations", 2)
        .restAfterDashDash();
  }

  @Test
  public void declaredOptionsAreReadAndTheRestFollowsTheDashes() {
    DriverArgs a =
        nnBench()
            .parse(
                new String[] {
                  "--name-dir", "/tmp/nn", "--iterations", "2", "5", "--", "-op", "create", "--x"
                });
    assertEquals("/tmp/nn", a.required("--name-dir"));
    assertFalse(a.flag("--skip-fsync"));
    assertEquals(2, a.integer("--iterations", 0, -1));
    assertEquals(5, a.integer("--iterations", 1, -1));
    assertEquals(Arrays.asList("-op", "create", "--x"), a.rest());
  }

  @Test
  public void defaultsApplyAndRepeatedOptionsKeepEveryValue() {
    DriverArgs a =
        new DriverArgs("SlsDriver", "usage", false)
            .option("--thread-group", 1)
            .option("--interval-ms", 1)
            .parse(new String[] {"--thread-group", "a=x", "--thread-group", "b=y"});
    assertEquals(Arrays.asList("a=x", "b=y"), a.all("--thread-group"));
    assertEquals(1000, a.longInteger("--interval-ms", 1000));
    assertTrue(a.rest().isEmpty());
  }

  @Test
  public void everyUsageErrorNamesTheDriverAndWhatIsWrong() {
    assertError("NnBenchDriver: unknown argument --name", nnBench(), "--name", "x");
    assertError("NnBenchDriver: --iterations takes 2 values", nnBench(), "--iterations", "3");
    assertError("NnBenchDriver: --name-dir takes 1 value", nnBench(), "--name-dir");
    DriverArgs a = nnBench().parse(new String[] {"--iterations", "three", "1"});
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> a.integer("--iterations", 0, 0));
    assertEquals("NnBenchDriver: --iterations: expected an integer, not three", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> a.required("--name-dir"));
    assertEquals("NnBenchDriver: missing --name-dir", e.getMessage());
    DriverArgs c = new DriverArgs("Calibration", "usage", false).option("--measure-s", 1);
    c.parse(new String[] {"--measure-s", "NaN"});
    e = assertThrows(IllegalArgumentException.class, () -> c.number("--measure-s", 1));
    assertEquals("Calibration: --measure-s: expected a number, not NaN", e.getMessage());
  }

  @Test
  public void anUndeclaredNameAskedForIsTheDriversBugNotTheUsers() {
    DriverArgs a = nnBench().parse(new String[0]);
    assertThrows(IllegalArgumentException.class, () -> a.flag("--skip-fsnyc"));
  }

  private static void assertError(String expected, DriverArgs args, String... argv) {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> args.parse(argv));
    assertEquals(expected, e.getMessage());
  }

  @Test
  public void jsonLinesEscapeAndNest() {
    Map<String, Object> nested = new LinkedHashMap<>();
    nested.put("k", Arrays.asList(1L, 2.5, null));
    String line =
        JsonLine.event("start")
            .put("hadoop", "3.4.2 \"x\"\n\\")
            .put("ok", true)
            .put("nan", Double.NaN)
            .put("nested", nested)
            .toString();
    assertEquals(
        "{\"event\":\"start\",\"hadoop\":\"3.4.2 \\\"x\\\"\\u000a\\\\\",\"ok\":true,\"nan\":null,"
            + "\"nested\":{\"k\":[1,2.5,null]}}",
        line);
  }

  @Test
  public void iterationsAnnounceEachOneThenItsCost() throws Exception {
    PrintStream out = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    StringBuilder steps = new StringBuilder();
    System.setOut(new PrintStream(captured, true, "UTF-8"));
    try {
      Iterations.run(
          1,
          2,
          k -> steps.append("p").append(k),
          k -> steps.append("b").append(k),
          k -> steps.append("a").append(k));
    } finally {
      System.setOut(out);
    }
    assertEquals("p0b0a0p1b1a1p2b2a2", steps.toString());
    String[] lines = new String(captured.toByteArray(), StandardCharsets.UTF_8).split("\n");
    assertEquals(6, lines.length);
    assertEquals("{\"event\":\"iteration\",\"index\":0,\"warmup\":true}", lines[0]);
    assertTrue(
        lines[1], lines[1].startsWith("{\"event\":\"cost\",\"index\":0,\"allocated_bytes\":"));
    assertEquals("{\"event\":\"iteration\",\"index\":2,\"warmup\":false}", lines[4]);
    assertTrue(lines[5], lines[5].startsWith("{\"event\":\"cost\",\"index\":2,"));
  }
}
