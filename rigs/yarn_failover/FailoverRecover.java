package tunelab.rigs.yarn_failover;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerExitStatus;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerState;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.api.protocolrecords.NMContainerStatus;
import org.apache.hadoop.yarn.server.resourcemanager.ClusterMetrics;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState;
import tunelab.rigs.matrix.DriverArgs;

/**
 * {@code --mode recover}: the ResourceManager under test, timed from its JVM's start to active,
 * every node re-registered with its containers and every application RUNNING again.
 */
final class FailoverRecover extends FailoverDriver {
  /**
   * The recovery's phases, in order, as a watched run shows them (the rig's recovery_phase): the
   * first four are read from the store's and the RM's timings while {@code rm.start()} runs.
   */
  static final String[] PHASES = {
    "starting",
    "loading the state store",
    "recovering applications",
    "becoming active",
    "nodes re-registering",
    "AMs re-registering",
    "waiting for containers and applications",
    "recovered"
  };

  /** The phase the main thread has reached after the RM's start (0 while it starts). */
  private volatile int mainPhase = 0;

  private volatile long startCallNanos = -1;

  FailoverRecover(DriverArgs args) {
    super(args);
  }

  private int phase() {
    if (mainPhase > 0) {
      return mainPhase;
    }
    if (recoverEndNanos >= 0) {
      return 3;
    }
    if (TimedStores.Timing.loadEndNanos >= 0) {
      return 2;
    }
    return TimedStores.Timing.loadStartNanos >= 0 ? 1 : 0;
  }

  /**
   * Prints a phase record when the phase changes and once a second (the driver is otherwise silent
   * until active): a daemon thread that only reads volatile fields, waking 5 times a second.
   */
  private Thread phaseReporter() {
    Thread t =
        new Thread(
            () -> {
              int last = -1;
              long lastPrint = 0;
              while (last < PHASES.length - 1) {
                int now = phase();
                long t0 = System.nanoTime();
                if (now != last || t0 - lastPrint >= 1_000_000_000L) {
                  long since = startCallNanos < 0 ? 0 : t0 - startCallNanos;
                  record(
                      "phase",
                      "phase",
                      now,
                      "phase_name",
                      PHASES[now],
                      "since_rm_start_s",
                      since / 1e9);
                  last = now;
                  lastPrint = t0;
                }
                try {
                  Thread.sleep(200);
                } catch (InterruptedException e) {
                  return;
                }
              }
            },
            "tunelab-recovery-phase");
    t.setDaemon(true);
    t.start();
    return t;
  }

  @Override
  int run(Configuration conf) throws Exception {
    JsonNode handoff = JSON.readTree(new File(need("handoff")));
    rm = new DriverRM();
    rm.init(conf);
    Thread phases = phaseReporter();
    long startCall = System.nanoTime();
    startCallNanos = startCall;
    rm.start();
    long active = System.nanoTime();
    mainPhase = 4;
    if (TimedStores.Timing.loadEndNanos < 0) {
      throw new IllegalStateException(
          "the RM started without loading its state store (recovery off?)");
    }
    long deadline = elapsedMs() + timeoutMs;
    // The nodes re-register with their running containers, as NodeManagers do after the RM's
    // RESYNC.
    int expectedContainers = handoff.get("containers").asInt();
    for (JsonNode n : handoff.get("nodes")) {
      NodeId id = NodeId.fromString(n.get("id").asText());
      SimNode node = new SimNode(id, nodeCapability(), rm);
      List<NMContainerStatus> reports = new ArrayList<>();
      List<ApplicationId> running = new ArrayList<>();
      for (JsonNode c : n.get("containers")) {
        ContainerId cid = ContainerId.fromString(c.get(0).asText());
        Resource r = Resource.newInstance(c.get(1).asLong(), c.get(2).asInt());
        reports.add(
            NMContainerStatus.newInstance(
                cid,
                0,
                ContainerState.RUNNING,
                r,
                "",
                ContainerExitStatus.INVALID,
                Priority.newInstance(c.get(3).asInt()),
                nowEpochMs));
        ApplicationId app = ApplicationId.fromString(c.get(4).asText());
        if (!running.contains(app)) {
          running.add(app);
        }
        Container container =
            Container.newInstance(cid, id, "", r, Priority.newInstance(c.get(3).asInt()), null);
        node.start(container);
      }
      nodes.put(node.id, node);
      node.register(reports, running);
    }
    long registered = System.nanoTime();
    mainPhase = 5;
    Thread beats = heartbeats();
    // The AMs re-register (the new RM knows their attempts from the store).
    List<ApplicationAttemptId> pending = new ArrayList<>();
    for (JsonNode a : handoff.get("apps")) {
      pending.add(ApplicationAttemptId.fromString(a.asText()));
    }
    int apps = pending.size();
    while (!pending.isEmpty()) {
      checkCallers("re-registering " + pending.size() + " AMs", deadline);
      List<ApplicationAttemptId> again = new ArrayList<>();
      for (ApplicationAttemptId id : pending) {
        try {
          new SimAm(id, identifier(id), rm, containerAsk(), containersPerApp, nodes).register();
        } catch (
            Exception e) { // the attempt not recovered yet: its events are still in the dispatcher
          again.add(id);
        }
      }
      pending = again;
      if (!pending.isEmpty()) {
        Thread.sleep(10);
      }
    }
    long amsRegistered = System.nanoTime();
    mainPhase = 6;
    long containersBack = -1;
    long appsRunning = -1;
    while (containersBack < 0 || appsRunning < 0) {
      checkCallers("waiting for the recovered containers and applications", deadline);
      if (containersBack < 0
          && ClusterMetrics.getMetrics().getNumActiveNMs() == nodeCount
          && rm.getResourceScheduler().getRootQueueMetrics().getAllocatedContainers()
              == expectedContainers) {
        containersBack = System.nanoTime();
      }
      if (appsRunning < 0) {
        boolean all = true;
        for (RMApp app : rm.getRMContext().getRMApps().values()) {
          all &= app.getState() == RMAppState.RUNNING;
        }
        if (all && rm.getRMContext().getRMApps().size() == apps) {
          appsRunning = System.nanoTime();
        }
      }
      if (containersBack < 0 || appsRunning < 0) {
        Thread.sleep(5);
      }
    }
    long end = Math.max(containersBack, appsRunning);
    mainPhase = PHASES.length - 1;
    phases.join(1000);
    // From the JVM's start (the new process) to the RM's start call: JVM start, configuration,
    // init.
    double jvmToStart =
        (System.currentTimeMillis() - jvmStartEpochMs) / 1000.0
            - (System.nanoTime() - startCall) / 1e9;
    record(
        "recovered",
        "recovery_s",
        jvmToStart + (end - startCall) / 1e9,
        "jvm_to_rm_start_s",
        jvmToStart,
        "before_store_load_s",
        (TimedStores.Timing.loadStartNanos - startCall) / 1e9,
        "store_load_s",
        (TimedStores.Timing.loadEndNanos - TimedStores.Timing.loadStartNanos) / 1e9,
        "app_recovery_s",
        (recoverEndNanos - recoverStartNanos) / 1e9,
        "after_recovery_to_active_s",
        (active - recoverEndNanos) / 1e9,
        "reregistration_s",
        (end - active) / 1e9,
        "nodes_registered_s",
        (registered - active) / 1e9,
        "containers_recovered_s",
        (containersBack - active) / 1e9,
        "ams_registered_s",
        (amsRegistered - active) / 1e9,
        "apps_running_s",
        (appsRunning - active) / 1e9,
        "store_read_bytes",
        TimedStores.Timing.readBytes,
        "apps_loaded",
        TimedStores.Timing.appsLoaded,
        "attempts_loaded",
        TimedStores.Timing.attemptsLoaded,
        "apps",
        apps,
        "nodes",
        nodeCount,
        "containers",
        expectedContainers,
        "heap_used_bytes",
        heapUsed(),
        "gc_ms",
        gcMs());
    callersStop = true;
    beats.join();
    rm.stop();
    return 0;
  }
}
