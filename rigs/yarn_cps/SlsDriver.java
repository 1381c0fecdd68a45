package tunelab.rigs.yarn_cps;

import com.sun.management.OperatingSystemMXBean;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.util.ToolRunner;
import org.apache.hadoop.util.VersionInfo;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;
import org.apache.hadoop.yarn.sls.SLSRunner;
import tunelab.rigs.matrix.DriverArgs;
import tunelab.rigs.matrix.GcTime;
import tunelab.rigs.matrix.JsonLine;

/**
 * Runs the Scheduler Load Simulator in this JVM and samples the ResourceManager's own root-queue
 * counters every second, printing one JSON line per sample on stdout.
 *
 * <p>Why in-process: the root {@code QueueMetrics} counters {@code AggregateContainersAllocated}
 * and {@code AggregateContainersReleased} are what the scheduler increments on every commit; over
 * JMX they lag up to 10 s. Why not {@code SLSRunner.main}: in 3.4.2 it builds a Configuration that
 * loads none of the site files (the RM dies with an NPE in RMRunner.startRM); constructing the
 * runner ourselves and running it through ToolRunner works on 3.4.2 and 3.3.5 alike. The
 * configuration files (yarn-site.xml, sls-runner.xml, the scheduler's file, log4j.properties) come
 * from the first classpath entry, a folder the rig writes.
 *
 * <p>With SLS metrics off the simulator never exits by itself, so the driver stops the JVM once
 * every expected application has completed and nothing is pending or running.
 *
 * <p>Why {@code --static-hosts}: every container the RM hands out gets a token whose service
 * address is resolved by name ({@code NetUtils.createSocketAddrForHost}), first as the exact name
 * with a trailing dot. The JDK's hosts-file resolver scans the whole file on every cache miss, so
 * at 20,000 simulated hosts the first allocation on each host costs a 20,000-line scan: allocations
 * stalled in bursts for ~100 s (seen in thread dumps). Hadoop's own static resolution table answers
 * those lookups with no scan.
 *
 * <p>{@code --simulator lean} runs the same SLS runners but drives the NodeManagers with {@link
 * LeanSimulation} (the rig's lean path); {@code --record FILE} writes what the simulators asked of
 * the RM ({@link RecordingServices}) when the run ends, for the equivalence test.
 *
 * <p>Usage: SlsDriver --trace-type SYNTH|SLS|RUMEN --trace FILE [--nodes FILE] --output DIR
 * --expected-apps N [--interval-ms 1000] [--static-hosts HOSTS_FILE] [--thread-group NAME=REGEX]...
 * [--simulator stock|lean] [--heartbeat-threads N] [--record FILE]
 */
public final class SlsDriver {
  private static final PrintStream OUT =
      new PrintStream(
          new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);

  private final long t0 = System.nanoTime();
  // Wall-clock time of t = 0, to line the series up with files the simulator timestamps
  // (realtimetrack.json).
  private final long t0EpochMs = System.currentTimeMillis();
  private final int expectedApps;
  // --stop-after-allocated N: stop once N containers were allocated and nothing is pending for two
  // samples
  // in a row. The CPS window ends with the last second of demand, so the drain after it (containers
  // finishing, AMs unregistering: ~6 s a run) measures nothing; short matrices skip it. -1: wait
  // for the apps.
  private long stopAfterAllocated = -1;
  private int drainedSamples = 0;
  private final Map<String, Pattern> threadGroups;
  private final CountDownLatch finished = new CountDownLatch(1);
  private final OperatingSystemMXBean os =
      (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
  private volatile String finishReason = "";
  private String simulator = "stock";
  private int heartbeatThreads = 2;
  private String recordFile;
  private volatile Simulation simulation;
  // The RM's own once-a-second gauges of its two event queues (Hadoop 3.4: ClusterMetrics; absent
  // in 3.3.5):
  // an empty scheduler queue means the scheduler waited for work, a growing one that it was the
  // limit.
  private static final java.lang.reflect.Method SCHEDULER_QUEUE =
      clusterGauge("getSchedulerEventQueueSize");
  private static final java.lang.reflect.Method RM_QUEUE = clusterGauge("getRmEventQueueSize");

  /**
   * SLSRunner.start() taken step by step (the lean path, or the stock one with the recorder):
   * implemented by LeanSimulation, compiled only against Hadoop 3.4.2's SLS (3.3.5 has no
   * NMRunner/AMRunner to drive).
   */
  interface Simulation {
    void start(boolean lean) throws Exception;

    /** Members of the done record (name -> value), in order; empty for none. */
    Map<String, Object> doneFields();

    /** What the simulators asked of the RM, as JSON (null: not recording). */
    String recording();
  }

  private SlsDriver(int expectedApps, Map<String, Pattern> threadGroups) {
    this.expectedApps = expectedApps;
    this.threadGroups = threadGroups;
  }

  public static void main(String[] args) throws Exception {
    DriverArgs a =
        new DriverArgs(
                "SlsDriver",
                "SlsDriver --trace-type SYNTH|SLS|RUMEN --trace FILE [--nodes FILE] --output DIR"
                    + " --expected-apps N [--interval-ms MS] [--static-hosts HOSTS_FILE]"
                    + " [--thread-group NAME=REGEX]... [--stop-after-allocated N] [--simulator"
                    + " stock|lean] [--heartbeat-threads N] [--record FILE]")
            .option("--trace-type", 1)
            .option("--trace", 1)
            .option("--nodes", 1)
            .option("--output", 1)
            .option("--static-hosts", 1)
            .option("--expected-apps", 1)
            .option("--stop-after-allocated", 1)
            .option("--interval-ms", 1)
            .option("--simulator", 1)
            .option("--heartbeat-threads", 1)
            .option("--record", 1)
            .option("--thread-group", 1)
            .parse(args);
    String traceType = a.required("--trace-type");
    String trace = a.required("--trace");
    String nodes = a.string("--nodes", 0, null);
    String output = a.required("--output");
    String staticHosts = a.string("--static-hosts", 0, null);
    int expectedApps = a.integer("--expected-apps", 0, -1);
    long stopAfterAllocated = a.longInteger("--stop-after-allocated", -1);
    long intervalMs = a.longInteger("--interval-ms", 1000);
    String simulator = a.string("--simulator", 0, "stock");
    int heartbeatThreads = a.integer("--heartbeat-threads", 0, 2);
    String record = a.string("--record", 0, null);
    a.check(expectedApps >= 1, "--expected-apps must be >= 1");
    a.check(intervalMs >= 1, "--interval-ms must be >= 1");
    a.check(
        simulator.equals("stock") || simulator.equals("lean"),
        "--simulator must be stock or lean, not " + simulator);
    a.check(heartbeatThreads >= 1, "--heartbeat-threads must be >= 1");
    Map<String, Pattern> groups = new LinkedHashMap<>();
    for (String group : a.all("--thread-group")) {
      int eq = group.indexOf('=');
      a.check(eq > 0, "--thread-group needs NAME=REGEX, not " + group);
      groups.put(group.substring(0, eq), Pattern.compile(group.substring(eq + 1)));
    }
    if (staticHosts != null) {
      addStaticResolutions(Paths.get(staticHosts));
    }
    SlsDriver driver = new SlsDriver(expectedApps, groups);
    driver.stopAfterAllocated = stopAfterAllocated;
    driver.simulator = simulator;
    driver.heartbeatThreads = heartbeatThreads;
    driver.recordFile = record;
    driver.run(traceType, trace, nodes, output, intervalMs);
  }

  /**
   * Registers every name of a hosts file ("ADDRESS NAME..." lines, # comments) with Hadoop's table.
   */
  private static void addStaticResolutions(Path hostsFile) throws IOException {
    for (String line : Files.readAllLines(hostsFile, StandardCharsets.UTF_8)) {
      int hash = line.indexOf('#');
      String[] fields = (hash >= 0 ? line.substring(0, hash) : line).trim().split("\\s+");
      for (int i = 1; i < fields.length; i++) {
        NetUtils.addStaticResolution(fields[i], fields[0]);
      }
    }
  }

  private static java.lang.reflect.Method clusterGauge(String name) {
    try {
      return org.apache.hadoop.yarn.server.resourcemanager.ClusterMetrics.class.getMethod(name);
    } catch (NoSuchMethodException e) {
      return null;
    }
  }

  private void run(String traceType, String trace, String nodes, String output, long intervalMs)
      throws Exception {
    emit(
        JsonLine.event("start")
            .put("hadoop", VersionInfo.getVersion())
            .put("java", System.getProperty("java.vm.version"))
            .put("expected_apps", expectedApps)
            .put("epoch_ms", t0EpochMs)
            .put("simulator", simulator));
    ScheduledExecutorService sampler =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "tunelab-sampler");
              t.setDaemon(true);
              return t;
            });
    sampler.scheduleAtFixedRate(this::sampleSafely, 0, intervalMs, TimeUnit.MILLISECONDS);
    // With SLS metrics on, the simulator calls System.exit itself: keep the last second.
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  if (finished.getCount() > 0) {
                    sampleSafely();
                    emit(
                        JsonLine.event("exit")
                            .put("t", seconds())
                            .put("reason", "the simulator exited"));
                  }
                },
                "tunelab-exit-sample"));

    List<String> slsArgs =
        new ArrayList<>(
            List.of("-tracetype", traceType, "-tracelocation", trace, "-output", output));
    if (nodes != null) {
      slsArgs.add("-nodes");
      slsArgs.add(nodes);
    }
    Configuration conf = new Configuration();
    int rc = 0;
    try {
      if (simulator.equals("stock") && recordFile == null) {
        rc = ToolRunner.run(conf, new SLSRunner(conf), slsArgs.toArray(new String[0]));
      } else {
        Class<?> type;
        try {
          type = Class.forName("tunelab.rigs.yarn_cps.LeanSimulation");
        } catch (ClassNotFoundException e) {
          throw new IllegalArgumentException(
              "--simulator lean and --record need Hadoop 3.4.2's SLS; this "
                  + "driver was built for Hadoop "
                  + VersionInfo.getVersion());
        }
        Files.createDirectories(Paths.get(output));
        Simulation s =
            (Simulation)
                type.getDeclaredConstructor(
                        Configuration.class,
                        String.class,
                        String.class,
                        String.class,
                        String.class,
                        int.class,
                        boolean.class)
                    .newInstance(
                        conf,
                        traceType,
                        trace,
                        nodes == null ? "" : nodes,
                        output,
                        heartbeatThreads,
                        recordFile != null);
        s.start(simulator.equals("lean"));
        simulation = s;
      }
    } catch (Throwable t) {
      // The RM's threads would keep the JVM alive with nothing to simulate: fail now, with the
      // cause.
      t.printStackTrace();
      emit(JsonLine.event("simulator_failed").put("t", seconds()).put("error", t.toString()));
      OUT.flush();
      Runtime.getRuntime().halt(1);
      return;
    }
    emit(JsonLine.event("simulator_started").put("t", seconds()).put("status", rc));
    if (rc != 0) {
      OUT.flush();
      Runtime.getRuntime().halt(rc);
    }
    finished.await();
    sampler.shutdown();
    sampler.awaitTermination(5, TimeUnit.SECONDS);
    JsonLine done = JsonLine.event("done").put("t", seconds()).put("reason", finishReason);
    if (simulation != null) {
      if (recordFile != null) {
        Files.write(Paths.get(recordFile), simulation.recording().getBytes(StandardCharsets.UTF_8));
      }
      simulation.doneFields().forEach(done::put);
    }
    emit(done);
    OUT.flush();
    // Skip the RM's and the simulator's shutdown: it measures nothing.
    Runtime.getRuntime().halt(0);
  }

  /** Seconds since the driver started, to the millisecond. */
  private double seconds() {
    return Math.round((System.nanoTime() - t0) / 1e6) / 1e3;
  }

  private void sampleSafely() {
    try {
      sample();
    } catch (Throwable t) { // a sampler that dies silently would end the series without saying why
      emit(JsonLine.event("sampler_error").put("t", seconds()).put("error", t.toString()));
    }
  }

  private synchronized void sample() throws IOException {
    JsonLine line = JsonLine.event("sample").put("t", seconds());
    QueueMetrics root = QueueMetrics.getQueueMetrics().get("root");
    // Each counter is read once: the line and the end-of-run check below must see the same values
    // (the RM
    // moves them on while this runs; a check on fresher values ended a run whose last line missed
    // an app).
    long allocatedTotal = 0;
    long pending = 0;
    long running = 0;
    int appsFailed = 0;
    int appsKilled = 0;
    int ended = 0;
    if (root != null) {
      allocatedTotal = root.getAggregateAllocatedContainers();
      running = root.getAllocatedContainers();
      pending = root.getPendingContainers();
      int appsCompleted = root.getAppsCompleted();
      appsFailed = root.getAppsFailed();
      appsKilled = root.getAppsKilled();
      ended = appsCompleted + appsFailed + appsKilled;
      line.put("allocated", allocatedTotal)
          .put("released", root.getAggegatedReleasedContainers())
          .put("running_containers", running)
          .put("pending_containers", pending)
          .put("apps_submitted", root.getAppsSubmitted())
          .put("apps_running", root.getAppsRunning())
          .put("apps_pending", root.getAppsPending())
          .put("apps_completed", appsCompleted)
          .put("apps_failed", appsFailed)
          .put("apps_killed", appsKilled);
    }
    if (SCHEDULER_QUEUE != null && root != null) {
      try {
        Object metrics = org.apache.hadoop.yarn.server.resourcemanager.ClusterMetrics.getMetrics();
        Object schedulerQueue = SCHEDULER_QUEUE.invoke(metrics);
        Object rmQueue = RM_QUEUE.invoke(metrics);
        line.put("scheduler_event_queue", schedulerQueue).put("rm_event_queue", rmQueue);
      } catch (ReflectiveOperationException e) {
        // a gauge that cannot be read is left out of the line
      }
    }
    MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
    long gcCount = 0;
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      gcCount += Math.max(0, gc.getCollectionCount());
    }
    long gcTimeMs = GcTime.totalMillis();
    Map<String, Long> status = readStatusKb();
    line.put("heap_used_bytes", heap.getUsed())
        .put("heap_committed_bytes", heap.getCommitted())
        .put("gc_count", gcCount)
        .put("gc_time_ms", gcTimeMs)
        .put("process_cpu_ns", os.getProcessCpuTime())
        .put("rss_kb", status.getOrDefault("VmRSS", -1L))
        .put("peak_rss_kb", status.getOrDefault("VmHWM", -1L))
        .put("thread_cpu_ns", threadCpuByGroup());
    emit(line);
    if (root != null && ended >= expectedApps && pending == 0 && running == 0) {
      // A simulated AM can fail (its container "exits" before it unregisters); it still ended.
      finishReason =
          "all "
              + expectedApps
              + " applications ended ("
              + appsFailed
              + " failed, "
              + appsKilled
              + " killed)";
      finished.countDown();
    } else if (root != null
        && stopAfterAllocated > 0
        && allocatedTotal >= stopAfterAllocated
        && pending == 0
        && ++drainedSamples >= 2) {
      finishReason =
          "all "
              + stopAfterAllocated
              + " containers allocated and nothing pending (the drain is not"
              + " measured; --stop-after-allocated)";
      finished.countDown();
    }
  }

  /**
   * Run time (ns, from schedstat) of this process' live threads, summed per group; unmatched:
   * "other".
   */
  private Map<String, Long> threadCpuByGroup() throws IOException {
    Map<String, Long> sums = new LinkedHashMap<>();
    for (String g : threadGroups.keySet()) {
      sums.put(g, 0L);
    }
    sums.put("other", 0L);
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Paths.get("/proc/self/task"))) {
      for (Path task : tasks) {
        String comm;
        long ns;
        try {
          // Linux keeps 15 characters of a thread's name; the group patterns match that prefix.
          comm =
              new String(Files.readAllBytes(task.resolve("comm")), StandardCharsets.UTF_8).trim();
          String schedstat =
              new String(Files.readAllBytes(task.resolve("schedstat")), StandardCharsets.UTF_8);
          ns = Long.parseLong(schedstat.trim().split("\\s+")[0]);
        } catch (IOException | NumberFormatException e) {
          continue; // the thread exited between listing and reading
        }
        String group = "other";
        for (Map.Entry<String, Pattern> g : threadGroups.entrySet()) {
          if (g.getValue().matcher(comm).find()) {
            group = g.getKey();
            break;
          }
        }
        sums.merge(group, ns, Long::sum);
      }
    }
    return sums;
  }

  private static Map<String, Long> readStatusKb() {
    Map<String, Long> out = new LinkedHashMap<>();
    try {
      for (String l : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.UTF_8)) {
        if (l.startsWith("VmRSS:") || l.startsWith("VmHWM:")) {
          String[] parts = l.split("\\s+");
          out.put(parts[0].substring(0, parts[0].length() - 1), Long.parseLong(parts[1]));
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux: the fields read -1
    }
    return out;
  }

  /** One line on the driver's own stdout stream (SLS' logging cannot interleave inside it). */
  private static void emit(JsonLine line) {
    String text = line.toString();
    synchronized (OUT) {
      OUT.println(text);
    }
  }
}
