package tunelab.rigs.matrix;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

/** The JVM's collectors' accumulated time, for drivers that report GC time beside their rates. */
public final class GcTime {
  private GcTime() {}

  /**
   * Milliseconds every collector has spent since the JVM started (a collector that cannot say: 0).
   */
  public static long totalMillis() {
    long ms = 0;
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      ms += Math.max(0, gc.getCollectionTime());
    }
    return ms;
  }
}
