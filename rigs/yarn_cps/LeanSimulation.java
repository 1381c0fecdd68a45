package tunelab.rigs.yarn_cps;

import java.lang.reflect.Field;
import java.security.Security;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.NodeState;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.sls.AMRunner;
import org.apache.hadoop.yarn.sls.NMRunner;
import org.apache.hadoop.yarn.sls.RMRunner;
import org.apache.hadoop.yarn.sls.SLSRunner;
import org.apache.hadoop.yarn.sls.conf.SLSConfiguration;
import org.apache.hadoop.yarn.sls.nodemanager.NMSimulator;
import org.apache.hadoop.yarn.sls.scheduler.SchedulerWrapper;
import org.apache.hadoop.yarn.sls.scheduler.TaskRunner;
import org.apache.hadoop.yarn.sls.scheduler.Tracker;
import org.apache.hadoop.yarn.sls.utils.SLSUtils;

/**
 * The lean simulation path ({@code simulator=lean}): SLSRunner.start() step by step with SLS's own
 * runners (the same ResourceManager, scheduler wrapper, AM launcher and MapReduce AM simulators),
 * except that the NodeManagers are {@link LeanNodeManager}s driven by a {@link HeartbeatClock}, not
 * NMSimulator tasks in SLS's pool. SLS's task runner still runs the AM simulators. Written against
 * Hadoop 3.4.2's SLS (its NMRunner/AMRunner/RMRunner split); the private fields it needs are named
 * here and fail loudly if absent.
 */
final class LeanSimulation implements SlsDriver.Simulation {
  private final SLSRunner sls;
  private final Configuration conf;
  private final int heartbeatThreads;
  private final RecordingServices recorder;
  private HeartbeatClock clock;

  /**
   * SLSRunner.run's own steps before start(): the runner built on {@code conf}, the trace and nodes
   * set.
   */
  public LeanSimulation(
      Configuration conf,
      String traceType,
      String trace,
      String nodes,
      String output,
      int heartbeatThreads,
      boolean record)
      throws Exception {
    this.sls = new SLSRunner(conf);
    this.conf = conf;
    this.heartbeatThreads = heartbeatThreads;
    this.recorder = record ? new RecordingServices() : null;
    sls.setSimulationParams(
        SLSRunner.TraceType.valueOf(traceType),
        trace.split(","),
        nodes,
        output,
        new HashSet<>(),
        false);
  }

  /**
   * SLSRunner.start(), step by step. Stock: its own steps as shipped, plus the recorder right after
   * the RM starts (plain stock runs call SLSRunner itself; only --record comes here). Lean: the
   * NodeManagers are LeanNodeManagers on a HeartbeatClock, started with SLS's task runner (which
   * runs the AMs).
   */
  @Override
  public void start(boolean lean) throws Exception {
    RMRunner rmRunner = (RMRunner) read(SLSRunner.class, sls, "rmRunner");
    NMRunner nmRunner = (NMRunner) read(SLSRunner.class, sls, "nmRunner");
    AMRunner amRunner = (AMRunner) read(SLSRunner.class, sls, "amRunner");
    TaskRunner tasks = (TaskRunner) read(SLSRunner.class, null, "runner");
    if (conf.getBoolean(
        SLSConfiguration.DNS_CACHING_ENABLED, SLSConfiguration.DNS_CACHING_ENABLED_DEFAULT)) {
      Security.setProperty(SLSRunner.NETWORK_CACHE_TTL, "-1");
      Security.setProperty(SLSRunner.NETWORK_NEGATIVE_CACHE_TTL, "-1");
    }
    rmRunner.startRM();
    ResourceManager rm = rmRunner.getRm();
    if (recorder != null) {
      recorder.install(rm);
    }
    nmRunner.setRm(rm);
    amRunner.setResourceManager(rm);
    List<LeanNodeManager> nodes = null;
    if (lean) {
      nodes = startNodes(nmRunner, rm, rmRunner.getTableMapping());
    } else {
      nmRunner.startNM();
    }
    amRunner.startAM();
    SchedulerWrapper scheduler = (SchedulerWrapper) rm.getResourceScheduler();
    scheduler.setSLSRunner(sls);
    Tracker tracker = scheduler.getTracker();
    tracker.setQueueSet(rmRunner.getQueueAppNumMap().keySet());
    tracker.setTrackedAppSet(amRunner.getTrackedApps());
    waitForNodesRunning(rm, lean ? nodes.size() : nmRunner.getNumNMs());
    if (lean) {
      int interval =
          conf.getInt(
              SLSConfiguration.NM_HEARTBEAT_INTERVAL_MS,
              SLSConfiguration.NM_HEARTBEAT_INTERVAL_MS_DEFAULT);
      clock = new HeartbeatClock(nodes, interval, heartbeatThreads);
    }
    tasks.start();
    if (clock != null) {
      clock.start(tasks.getStartTimeMS());
    }
  }

  @Override
  public Map<String, Object> doneFields() {
    Map<String, Object> fields = new LinkedHashMap<>();
    if (clock != null) {
      Map<String, Object> lean = new LinkedHashMap<>();
      lean.put("heartbeats", clock.heartbeats());
      lean.put("heartbeat_failures", clock.failures());
      lean.put("max_late_ms", clock.maxLateMs());
      fields.put("lean", lean);
    }
    return fields;
  }

  @Override
  public String recording() {
    return recorder == null ? null : recorder.toJson();
  }

  /**
   * NMRunner.startNM with LeanNodeManagers: the same node set, resources, labels, offsets and table
   * mapping.
   */
  private List<LeanNodeManager> startNodes(
      NMRunner nmRunner, ResourceManager rm, String tableMapping) throws Exception {
    int interval =
        conf.getInt(
            SLSConfiguration.NM_HEARTBEAT_INTERVAL_MS,
            SLSConfiguration.NM_HEARTBEAT_INTERVAL_MS_DEFAULT);
    float utilizationRatio =
        conf.getFloat(
            SLSConfiguration.NM_RESOURCE_UTILIZATION_RATIO,
            SLSConfiguration.NM_RESOURCE_UTILIZATION_RATIO_DEFAULT);
    Resource defaultResource = nmRunner.getNodeManagerResource();
    String nodeFile = (String) read(NMRunner.class, nmRunner, "nodeFile");
    Set<SLSRunner.NodeDetails> nodeSet;
    if (nodeFile != null && !nodeFile.isEmpty()) {
      nodeSet = SLSUtils.parseNodesFromNodeFile(nodeFile, defaultResource);
    } else if (sls.getStjp() != null) {
      nodeSet =
          SLSUtils.generateNodes(
              sls.getStjp().getNumNodes(),
              sls.getStjp().getNumNodes() / sls.getStjp().getNodesPerRack());
    } else {
      throw new YarnException(
          "simulator=lean needs a nodes file or a SYNTH trace (SLS and Rumen traces carry "
              + "their nodes inside; the rig always writes a nodes file)");
    }
    if (nodeSet == null || nodeSet.isEmpty()) {
      throw new YarnException("No node! Please configure nodes.");
    }
    SLSUtils.generateNodeTableMapping(nodeSet, tableMapping);

    Map<NodeId, NMSimulator> nmMap = nmRunner.getNmMap();
    List<LeanNodeManager> nodes = Collections.synchronizedList(new ArrayList<>());
    AtomicReference<Exception> failure = new AtomicReference<>();
    Random random = new Random();
    ExecutorService registration =
        Executors.newFixedThreadPool(
            Math.max(
                conf.getInt(
                    SLSConfiguration.RUNNER_POOL_SIZE, SLSConfiguration.RUNNER_POOL_SIZE_DEFAULT),
                SLSConfiguration.RUNNER_POOL_SIZE_DEFAULT));
    for (SLSRunner.NodeDetails details : nodeSet) {
      registration.submit(
          () -> {
            try {
              // The offset in the heartbeat interval, drawn as NMRunner draws it.
              int offset = random.nextInt(interval);
              LeanNodeManager nm = new LeanNodeManager(offset);
              Resource resource =
                  details.getNodeResource() != null ? details.getNodeResource() : defaultResource;
              nm.init(
                  details.getHostname(),
                  resource,
                  offset,
                  interval,
                  rm,
                  utilizationRatio,
                  details.getLabels());
              nmMap.put(nm.getNode().getNodeID(), nm);
              nodes.add(nm);
            } catch (Exception e) {
              failure.compareAndSet(null, e);
            }
          });
    }
    registration.shutdown();
    if (!registration.awaitTermination(10, TimeUnit.MINUTES)) {
      throw new YarnException(
          "registering " + nodeSet.size() + " simulated NodeManagers took over 10 minutes");
    }
    if (failure.get() != null) {
      throw new YarnException("a simulated NodeManager failed to register", failure.get());
    }
    return new ArrayList<>(nodes);
  }

  private static void waitForNodesRunning(ResourceManager rm, int expected)
      throws InterruptedException {
    while (true) {
      int runningNodes = 0;
      for (RMNode node : rm.getRMContext().getRMNodes().values()) {
        if (node.getState() == NodeState.RUNNING) {
          runningNodes++;
        }
      }
      if (runningNodes == expected) {
        return;
      }
      Thread.sleep(200);
    }
  }

  static Object read(Class<?> type, Object target, String name) {
    try {
      Field f = type.getDeclaredField(name);
      f.setAccessible(true);
      return f.get(target);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "SLS changed: " + type.getName() + "." + name + " is not readable", e);
    }
  }

  static void write(Class<?> type, Object target, String name, Object value) {
    try {
      Field f = type.getDeclaredField(name);
      f.setAccessible(true);
      f.set(target, value);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "SLS changed: " + type.getName() + "." + name + " is not writable", e);
    }
  }
}
