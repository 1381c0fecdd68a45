package tunelab.rigs.matrix;

/**
 * A driver's timed iterations inside one launch, as the runner reads them (rigs/matrix/contract/
 * iterations.py): WARMUP + MEASURED iterations, each announced by {"event":"iteration","index":K,
 * "warmup":...}, its untimed preparation, then its timed body between {@link IterationCost#start}
 * and the cost line {@link IterationCost#stop} prints after it.
 */
public final class Iterations {
  private Iterations() {}

  /** One step of an iteration. */
  public interface Step {
    void run(int index) throws Exception;
  }

  /** Runs `warmup` + `measured` iterations: `prepare` untimed, then `body` timed and costed. */
  public static void run(int warmup, int measured, Step prepare, Step body) throws Exception {
    run(warmup, measured, prepare, body, k -> {});
  }

  /** As {@link #run(int, int, Step, Step)}, with `after` run untimed once each cost line is out. */
  public static void run(int warmup, int measured, Step prepare, Step body, Step after)
      throws Exception {
    IterationCost cost = new IterationCost();
    for (int k = 0; k < warmup + measured; k++) {
      JsonLine.event("iteration").put("index", k).put("warmup", k < warmup).print();
      prepare.run(k);
      cost.start();
      body.run(k);
      System.out.println(cost.stop(k));
      System.out.flush();
      after.run(k);
    }
  }
}
