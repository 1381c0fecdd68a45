package tunelab.rigs.matrix;

import com.sun.management.GarbageCollectionNotificationInfo;
import com.sun.management.GcInfo;
import com.sun.management.OperatingSystemMXBean;
import com.sun.management.ThreadMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * What one timed iteration of a rig's driver cost the JVM, as the line
 * {"event":"cost","index":K,...} the driver prints after the iteration's report (NnBenchDriver,
 * MrJobLoop; the rigs parse it): the heap bytes the iteration allocated and the CPU time of every
 * thread but the calling one, and the calling thread's own apart (a benchmark's driving thread may
 * generate inputs or busy-wait for its workers: its CPU time is then elapsed time, not work), and
 * the JIT compiler threads' share of that CPU time apart too (jit_cpu_ns: compiling goes on long
 * after a rate is steady, so CPU time per operation without it is the steadier figure). Call
 * start() and stop(index) from the same thread.
 *
 * <p>The compiler threads' CPU time comes from Linux (/proc/self/task/TID/schedstat, nanoseconds,
 * of the threads named "C1 CompilerThre..." / "C2 CompilerThre..."; Java cannot see them): -1
 * elsewhere. A compiler thread that ends during the iteration (the JVM starts and stops them as the
 * queue asks) takes its time with it: jit_cpu_ns is then a little low.
 *
 * <p>Heap allocation is counted from the collectors, which works on every JDK (the JVM-wide thread
 * counter needs JDK 21, and worker threads' own counters end with the threads): a full collection
 * (System.gc()) before and after the iteration, and allocated = what every collection in between
 * freed + the heap in use after the last one - in use after the first. Assumed: every collection
 * that frees heap is reported to the collectors' MXBeans (true of G1's young, mixed and full
 * collections, and Parallel's; G1's concurrent cleanup, which frees only whole empty regions, is
 * not).
 */
public final class IterationCost implements NotificationListener {
  private static final long REPORT_TIMEOUT_NS = 5_000_000_000L;

  private final ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
  private final OperatingSystemMXBean os =
      (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
  private long collections; // collections reported so far
  private long freed; // bytes they freed
  private long inUseAfterLast; // heap in use after the last one
  private long startFreed;
  private long startInUse;
  private long cpu;
  private long driverAllocated;
  private long driverCpu;
  private long wall;
  private java.util.Map<String, Long> jitStart;

  public IterationCost() {
    threads.setThreadAllocatedMemoryEnabled(true);
    threads.setThreadCpuTimeEnabled(true);
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      ((NotificationEmitter) gc).addNotificationListener(this, null, null);
    }
  }

  @Override
  public synchronized void handleNotification(Notification n, Object handback) {
    if (!n.getType().equals(GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION)) {
      return;
    }
    GcInfo info =
        GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData()).getGcInfo();
    long before = 0;
    long after = 0;
    for (MemoryUsage u : info.getMemoryUsageBeforeGc().values()) {
      before += u.getUsed();
    }
    for (MemoryUsage u : info.getMemoryUsageAfterGc().values()) {
      after += u.getUsed();
    }
    freed += before - after;
    inUseAfterLast = after;
    collections++;
    notifyAll();
  }

  /**
   * A full collection, returned once the collectors have reported it (they notify on their own
   * thread).
   */
  private synchronized void collect() throws InterruptedException {
    long seen = collections;
    System.gc();
    long deadline = System.nanoTime() + REPORT_TIMEOUT_NS;
    while (collections == seen) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new IllegalStateException(
            "no collector reported System.gc() within 5 s: allocation unknown");
      }
      wait(left / 1_000_000 + 1);
    }
  }

  private long driverAllocated() {
    return threads.getThreadAllocatedBytes(Thread.currentThread().getId());
  }

  /** CPU nanoseconds of each JIT compiler thread by thread id, or null where /proc cannot say. */
  static java.util.Map<String, Long> jitThreads() {
    java.util.Map<String, Long> found = new java.util.HashMap<>();
    java.io.File[] tasks = new java.io.File("/proc/self/task").listFiles();
    if (tasks == null) {
      return null;
    }
    for (java.io.File task : tasks) {
      try {
        String comm =
            new String(java.nio.file.Files.readAllBytes(new java.io.File(task, "comm").toPath()))
                .trim();
        if (comm.startsWith("C1 CompilerThre") || comm.startsWith("C2 CompilerThre")) {
          String schedstat =
              new String(
                  java.nio.file.Files.readAllBytes(new java.io.File(task, "schedstat").toPath()));
          found.put(task.getName(), Long.parseLong(schedstat.trim().split("\\s+")[0]));
        }
      } catch (java.io.IOException | RuntimeException e) {
        // A thread that ended while we looked: not a compiler thread we can count.
      }
    }
    return found;
  }

  /** The compiler threads' CPU time since `start` (threads new since then count from 0), or -1. */
  static long jitCpuSince(java.util.Map<String, Long> start, java.util.Map<String, Long> now) {
    if (start == null || now == null) {
      return -1;
    }
    long sum = 0;
    for (java.util.Map.Entry<String, Long> e : now.entrySet()) {
      sum += e.getValue() - start.getOrDefault(e.getKey(), 0L);
    }
    return sum;
  }

  /** Starts an iteration: a full collection first, then the counters. */
  public void start() throws InterruptedException {
    collect();
    synchronized (this) {
      startFreed = freed;
      startInUse = inUseAfterLast;
    }
    cpu = os.getProcessCpuTime();
    driverAllocated = driverAllocated();
    driverCpu = threads.getCurrentThreadCpuTime();
    jitStart = jitThreads();
    wall = System.nanoTime();
  }

  /**
   * Ends the iteration `index`: the counters first (the closing collection's CPU is not the
   * iteration's).
   */
  public String stop(int index) throws InterruptedException {
    long wallNs = System.nanoTime() - wall;
    long driverCpuNs = threads.getCurrentThreadCpuTime() - driverCpu;
    long otherCpuNs = os.getProcessCpuTime() - cpu - driverCpuNs;
    long jitCpuNs = jitCpuSince(jitStart, jitThreads());
    long driverBytes = driverAllocated() - driverAllocated;
    collect();
    long allocated;
    synchronized (this) {
      allocated = freed - startFreed + inUseAfterLast - startInUse;
    }
    return JsonLine.event("cost")
        .put("index", index)
        .put("allocated_bytes", allocated - driverBytes)
        .put("cpu_ns", otherCpuNs)
        .put("driver_allocated_bytes", driverBytes)
        .put("driver_cpu_ns", driverCpuNs)
        .put("jit_cpu_ns", jitCpuNs)
        .put("wall_ns", wallNs)
        .toString();
  }
}
