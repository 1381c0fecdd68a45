package tunelab.rigs.yarn_failover;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.LeveldbRMStateStore;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.RMStateStore.RMState;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.ZKRMStateStore;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.records.ApplicationAttemptStateData;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.records.ApplicationStateData;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.records.impl.pb.ApplicationAttemptStateDataPBImpl;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.records.impl.pb.ApplicationStateDataPBImpl;

/**
 * The three state stores of the rig, each the RM's own class with two calls timed and nothing else
 * changed: {@code loadState} (the store's part of recovery, and the bytes of the application and
 * attempt records it returned) and {@code storeApplicationStateInternal} (one submission's write).
 * The RM is given one of these as {@code yarn.resourcemanager.store.class}; a patched RM's store
 * class is the one these extend.
 */
public final class TimedStores {
  private TimedStores() {}

  // The three subclasses below repeat the same two overrides: each extends a different store class
  // of the RM
  // (a store is chosen by class name), and the overridden methods differ in their `synchronized`,
  // visibility
  // and `throws` between the stores, so one shared base class cannot hold them.

  /** What the timed calls saw in this JVM. */
  static final class Timing {
    static volatile long loadStartNanos = -1;
    static volatile long loadEndNanos = -1;
    static volatile long readBytes = -1;
    static volatile int appsLoaded = -1;
    static volatile int attemptsLoaded = -1;
    // The first write of each application: its submission's (LevelDB's update of an application
    // calls the
    // same method again; those are not submissions).
    private static final Map<ApplicationId, Long> WRITE_NANOS = new LinkedHashMap<>();

    static synchronized void write(ApplicationId app, long nanos) {
      WRITE_NANOS.putIfAbsent(app, nanos);
    }

    static synchronized long[] writes() {
      long[] out = new long[WRITE_NANOS.size()];
      int i = 0;
      for (long nanos : WRITE_NANOS.values()) {
        out[i++] = nanos;
      }
      return out;
    }

    static void loaded(long start, RMState state) {
      long bytes = 0;
      int attempts = 0;
      for (ApplicationStateData app : state.getApplicationState().values()) {
        bytes += ((ApplicationStateDataPBImpl) app).getProto().getSerializedSize();
        for (ApplicationAttemptStateData attempt : app.attempts.values()) {
          bytes += ((ApplicationAttemptStateDataPBImpl) attempt).getProto().getSerializedSize();
          attempts++;
        }
      }
      loadStartNanos = start;
      loadEndNanos = System.nanoTime();
      readBytes = bytes;
      appsLoaded = state.getApplicationState().size();
      attemptsLoaded = attempts;
    }
  }

  /** ZooKeeper (a real server: the rig's zookeeper role). */
  public static final class Zk extends ZKRMStateStore {
    @Override
    public synchronized RMState loadState() throws Exception {
      long start = System.nanoTime();
      RMState state = super.loadState();
      Timing.loaded(start, state);
      return state;
    }

    @Override
    public synchronized void storeApplicationStateInternal(
        ApplicationId appId, ApplicationStateData app) throws Exception {
      long start = System.nanoTime();
      super.storeApplicationStateInternal(appId, app);
      Timing.write(appId, System.nanoTime() - start);
    }
  }

  /** LevelDB in the cell's work folder. */
  public static final class Leveldb extends LeveldbRMStateStore {
    @Override
    public RMState loadState() throws Exception {
      long start = System.nanoTime();
      RMState state = super.loadState();
      Timing.loaded(start, state);
      return state;
    }

    @Override
    protected void storeApplicationStateInternal(ApplicationId appId, ApplicationStateData app)
        throws IOException {
      long start = System.nanoTime();
      super.storeApplicationStateInternal(appId, app);
      Timing.write(appId, System.nanoTime() - start);
    }
  }

  /**
   * Hadoop's FileSystem store on the local file system, in the cell's work folder. Without Hadoop's
   * native library (not in the Maven set) the local file system sets each new file's permission by
   * running chmod: a process start per file written, which is in this store's write latency here
   * and not on HDFS.
   */
  public static final class FileSystem extends FileSystemRMStateStore {
    @Override
    public synchronized RMState loadState() throws Exception {
      long start = System.nanoTime();
      RMState state = super.loadState();
      Timing.loaded(start, state);
      return state;
    }

    @Override
    public synchronized void storeApplicationStateInternal(
        ApplicationId appId, ApplicationStateData app) throws Exception {
      long start = System.nanoTime();
      super.storeApplicationStateInternal(appId, app);
      Timing.write(appId, System.nanoTime() - start);
    }
  }
}
