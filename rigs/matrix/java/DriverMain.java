package tunelab.rigs.matrix;

/** How a rig's JVM driver (NnBenchDriver, AddBlockBench, MrJobLoop) ends. */
public final class DriverMain {
  private DriverMain() {}

  /** A driver's work. */
  public interface Body {
    void run() throws Exception;
  }

  /**
   * Runs `body`, prints a failure's stack trace, then halts the JVM with status 0 (done) or 1
   * (failed): the non-daemon threads a driver leaves (the NameNode's, the local job runner's) would
   * otherwise keep a failed run alive until the runner's timeout.
   */
  public static void runAndHalt(Body body) {
    int status = 1;
    try {
      body.run();
      status = 0;
    } catch (Throwable t) {
      t.printStackTrace();
    } finally {
      System.out.flush();
      Runtime.getRuntime().halt(status);
    }
  }
}
