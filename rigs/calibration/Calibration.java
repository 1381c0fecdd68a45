package tunelab.rigs.calibration;

import java.util.concurrent.atomic.AtomicLongArray;
import tunelab.rigs.matrix.DriverArgs;
import tunelab.rigs.matrix.JsonLine;

/**
 * The calibration workload: a CPU-bound integer loop and a memory-copy loop in named worker
 * threads, reporting a rate once per second as one JSON line on stdout. Small, deterministic in
 * shape, no dependencies: it tests the matrix runner end to end and serves as an A/A canary for
 * gating.
 *
 * <p>Usage: Calibration --mode cpu|memory --threads N --warmup-s S --measure-s S [--buffer-mib M]
 * [--injected-slowdown-pct P]
 */
public final class Calibration {
  private static volatile boolean running = true;
  // Fraction of each batch's time spent spinning without counting: rate falls by
  // injected_slowdown_pct.
  private static double spinPerWork = 0;
  private static volatile long sink;

  private Calibration() {}

  public static void main(String[] args) throws Exception {
    DriverArgs a =
        new DriverArgs(
                "Calibration",
                "Calibration --mode cpu|memory --threads N --warmup-s S --measure-s S [--buffer-mib"
                    + " M] [--injected-slowdown-pct P]")
            .option("--mode", 1)
            .option("--threads", 1)
            .option("--warmup-s", 1)
            .option("--measure-s", 1)
            .option("--buffer-mib", 1)
            .option("--injected-slowdown-pct", 1)
            .parse(args);
    String mode = a.string("--mode", 0, "cpu");
    int threads = a.integer("--threads", 0, 1);
    double warmupS = a.number("--warmup-s", 3);
    double measureS = a.number("--measure-s", 10);
    int bufferMib = a.integer("--buffer-mib", 0, 64);
    double pct = a.number("--injected-slowdown-pct", 0);
    a.check(pct >= 0 && pct < 100, "--injected-slowdown-pct must be in [0, 100), not " + pct);
    a.check(
        mode.equals("cpu") || mode.equals("memory"), "--mode must be cpu or memory, not " + mode);
    a.check(threads >= 1 && bufferMib >= 1, "--threads and --buffer-mib must be at least 1");
    a.check(warmupS >= 0 && measureS > 0, "--warmup-s must be >= 0 and --measure-s > 0");
    spinPerWork =
        pct / (100 - pct); // work w, spin w*s/(100-s): the rate is (100-s)% of the original
    final boolean cpu = mode.equals("cpu");
    final int bufferBytes = bufferMib << 20;
    // Per-thread counters, one slot per thread, 8 slots apart so threads do not share a cache line.
    final AtomicLongArray counters = new AtomicLongArray(threads * 8);
    Thread[] workers = new Thread[threads];
    for (int w = 0; w < threads; w++) {
      final int slot = w * 8;
      Runnable body =
          cpu ? () -> cpuLoop(counters, slot) : () -> copyLoop(counters, slot, bufferBytes);
      workers[w] = new Thread(body, "calibration-" + (cpu ? "cpu" : "mem") + "-worker-" + w);
      workers[w].setDaemon(true);
      workers[w].start();
    }
    String metric = cpu ? "cpu_loop_rate" : "memory_copy_rate";
    double unitDivisor = cpu ? 1.0 : (1 << 20); // ops/s, or MiB/s for copies counted in bytes
    long start = System.nanoTime();
    long last = start;
    long lastTotal = 0;
    long end = start + (long) ((warmupS + measureS) * 1e9);
    long warmupEnd = start + (long) (warmupS * 1e9);
    for (long next = start + 1_000_000_000L; next <= end + 50_000_000L; next += 1_000_000_000L) {
      long sleepNanos = next - System.nanoTime();
      if (sleepNanos > 0) {
        Thread.sleep(sleepNanos / 1_000_000L, (int) (sleepNanos % 1_000_000L));
      }
      long now = System.nanoTime();
      long total = 0;
      for (int w = 0; w < threads; w++) {
        total += counters.get(w * 8);
      }
      double rate = (total - lastTotal) / unitDivisor / ((now - last) / 1e9);
      // A sample covers the second before it; it is warm-up if that second ends by the warm-up's
      // end
      // (50 ms of slack for the sleep's wake-up latency).
      String phase = now <= warmupEnd + 50_000_000L ? "warmup" : "measure";
      JsonLine.object()
          .put("t", Math.round((now - start) / 1e6) / 1e3)
          .put("phase", phase)
          .put("metric", metric)
          .put("value", Math.round(rate * 1e3) / 1e3)
          .print();
      last = now;
      lastTotal = total;
    }
    running = false;
  }

  private static void cpuLoop(AtomicLongArray counters, int slot) {
    long x = 0x9E3779B97F4A7C15L;
    long lcg = slot;
    while (running) {
      long t0 = System.nanoTime();
      // Batches of 0.5 to 1.5 M steps, drawn anew each time (~1 ms each): a loop of equal batches
      // is periodic, and a profiler sampling at a fixed interval read its spin in lockstep
      // (17-31 % of the samples for 20 %).
      lcg = lcg * 6364136223846793005L + 1442695040888963407L;
      int steps = 500_000 + (int) (lcg >>> 44);
      for (int i = 0; i < steps; i++) {
        x ^= x << 13;
        x ^= x >>> 7;
        x ^= x << 17;
      }
      counters.addAndGet(slot, steps);
      sink = x;
      spin(t0);
    }
  }

  private static void copyLoop(AtomicLongArray counters, int slot, int bytes) {
    byte[] a = new byte[bytes];
    byte[] b = new byte[bytes];
    for (int i = 0; i < bytes; i += 4096) {
      a[i] = (byte) i; // touch every page so the copy measures memory, not page faults
    }
    while (running) {
      long t0 = System.nanoTime();
      System.arraycopy(a, 0, b, 0, bytes);
      byte[] t = a;
      a = b;
      b = t;
      counters.addAndGet(slot, bytes);
      spin(t0);
    }
  }

  /**
   * The injected slowdown: busy-waits spinPerWork times as long as the batch that started at t0
   * took.
   */
  private static void spin(long t0) {
    if (spinPerWork > 0) {
      long until = System.nanoTime() + (long) ((System.nanoTime() - t0) * spinPerWork);
      while (System.nanoTime() < until) {
        Thread.onSpinWait();
      }
    }
  }
}
