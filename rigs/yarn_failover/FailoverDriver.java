package tunelab.rigs.yarn_failover;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.SecurityUtil;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.VersionInfo;
import org.apache.hadoop.yarn.api.protocolrecords.GetNewApplicationRequest;
import org.apache.hadoop.yarn.api.protocolrecords.SubmitApplicationRequest;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerExitStatus;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerState;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.event.EventHandler;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;
import org.apache.hadoop.yarn.server.api.protocolrecords.NMContainerStatus;
import org.apache.hadoop.yarn.server.resourcemanager.ClusterMetrics;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.amlauncher.AMLauncherEvent;
import org.apache.hadoop.yarn.server.resourcemanager.amlauncher.ApplicationMasterLauncher;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.RMStateStore.RMState;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttempt;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptEvent;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptEventType;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptImpl;

/**
 * The ResourceManager failover rig's driver: one JVM per ResourceManager, run twice per cell.
 *
 * <p>{@code --mode populate} starts an RM with recovery on and the cell's state store, registers
 * the simulated NodeManagers, submits N applications through the RM's client service, fails the
 * first M-1 attempts of each (its AM container reported exited), lets the last attempt's AM
 * register and get K containers, keeps the nodes heartbeating for the steady period, then stops
 * every simulated caller, writes what lives outside the RM (the nodes and their running containers,
 * each application's attempt: what real NodeManagers and AMs keep across an RM restart) to the
 * handoff file and prints {@link #KILL_LINE}: the runner kills this JVM with SIGKILL there.
 *
 * <p>{@code --mode recover} starts a new RM on the same store and measures how long until it is
 * active (the store's load, then the RM's recovery of applications and attempts) and every node has
 * re-registered with its containers and every application is RUNNING again (its AM re-registered).
 * Times are from this JVM's start, so the new process's start-up counts, as it does in a real
 * failover.
 *
 * <p>Stdout: one JSON record per line; everything else goes to stderr (the RM's log).
 */
public final class FailoverDriver {
  static final String KILL_LINE = "tunelab-failover: state written, kill me now";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Map<String, String> opts;
  private final int apps;
  private final int attempts;
  private final int containersPerApp;
  private final int nodeCount;
  private final int nodeMb;
  private final int nodeVcores;
  private final int containerMb;
  private final long nmHeartbeatMs;
  private final long amHeartbeatMs;
  private final long timeoutMs;
  private final long startNanos = System.nanoTime();
  private final long jvmStartEpochMs = ManagementFactory.getRuntimeMXBean().getStartTime();
  private final long nowEpochMs = System.currentTimeMillis();

  private ResourceManager rm;
  private final Map<NodeId, SimNode> nodes = new LinkedHashMap<>();
  private final Map<ApplicationId, SimAm> ams = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<RMAppAttempt> launched = new ConcurrentLinkedQueue<>();
  private volatile boolean callersStop = false;
  private volatile Throwable callerFailure;

  private FailoverDriver(Map<String, String> opts) {
    this.opts = opts;
    this.apps = Integer.parseInt(need("apps"));
    this.attempts = Integer.parseInt(need("attempts"));
    this.containersPerApp = Integer.parseInt(need("containers"));
    this.nodeCount = Integer.parseInt(need("nodes"));
    this.nodeMb = Integer.parseInt(need("node-mb"));
    this.nodeVcores = Integer.parseInt(need("node-vcores"));
    this.containerMb = Integer.parseInt(need("container-mb"));
    this.nmHeartbeatMs = Long.parseLong(need("nm-heartbeat-ms"));
    this.amHeartbeatMs = Long.parseLong(need("am-heartbeat-ms"));
    this.timeoutMs = Long.parseLong(need("timeout-s")) * 1000;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new LinkedHashMap<>();
    List<String> confs = new ArrayList<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("expected --name value pairs, got " + args[i]);
      }
      if (args[i].equals("--conf")) {
        confs.add(args[i + 1]);
      } else {
        opts.put(args[i].substring(2), args[i + 1]);
      }
    }
    FailoverDriver driver = new FailoverDriver(opts);
    Configuration conf = driver.configuration(confs);
    String mode = driver.need("mode");
    record(
        "start",
        "mode",
        mode,
        "hadoop",
        VersionInfo.getVersion(),
        "epoch_ms",
        driver.nowEpochMs,
        "jvm_start_epoch_ms",
        driver.jvmStartEpochMs);
    int code = 1;
    try {
      if (mode.equals("populate")) {
        code = driver.populate(conf);
      } else if (mode.equals("recover")) {
        code = driver.recover(conf);
      } else {
        throw new IllegalArgumentException("--mode populate|recover, got " + mode);
      }
    } catch (Throwable e) {
      System.err.println("tunelab-failover: " + mode + " failed:");
      e.printStackTrace();
    } finally {
      System.out.flush();
      System.err.flush();
      Runtime.getRuntime().halt(code); // the RM's non-daemon threads would keep the JVM alive
    }
  }

  private String need(String name) {
    String v = opts.get(name);
    if (v == null) {
      throw new IllegalArgumentException("missing --" + name);
    }
    return v;
  }

  /** The RM's configuration: recovery on, the cell's store, every address on loopback (port 0). */
  private Configuration configuration(List<String> confs) {
    YarnConfiguration conf = new YarnConfiguration();
    conf.setBoolean(YarnConfiguration.RECOVERY_ENABLED, true);
    conf.setBoolean(YarnConfiguration.RM_WORK_PRESERVING_RECOVERY_ENABLED, true);
    String store = need("store");
    String dir = need("store-dir");
    switch (store) {
      case "zookeeper":
        conf.set(YarnConfiguration.RM_STORE, TimedStores.Zk.class.getName());
        conf.set("hadoop.zk.address", need("zk"));
        break;
      case "leveldb":
        conf.set(YarnConfiguration.RM_STORE, TimedStores.Leveldb.class.getName());
        conf.set(YarnConfiguration.RM_LEVELDB_STORE_PATH, dir);
        break;
      case "filesystem":
        conf.set(YarnConfiguration.RM_STORE, TimedStores.FileSystem.class.getName());
        conf.set(YarnConfiguration.FS_RM_STATE_STORE_URI, new File(dir).toURI().toString());
        // chmod in this process, not a process per file written (NioLocalFileSystem says why);
        // uncached, so
        // the store gets this class even if another part of the RM opened file:// first.
        conf.set("fs.file.impl", NioLocalFileSystem.class.getName());
        conf.setBoolean("fs.file.impl.disable.cache", true);
        break;
      default:
        throw new IllegalArgumentException("--store zookeeper|leveldb|filesystem, got " + store);
    }
    for (String key :
        Arrays.asList(
            YarnConfiguration.RM_ADDRESS,
            YarnConfiguration.RM_SCHEDULER_ADDRESS,
            YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS,
            YarnConfiguration.RM_ADMIN_ADDRESS,
            YarnConfiguration.RM_WEBAPP_ADDRESS)) {
      conf.set(key, "127.0.0.1:0");
    }
    // The simulated nodes' names resolve nowhere: token services by name, not by address.
    // SecurityUtil
    // reads the setting once, from the default configuration, so it is set there too.
    conf.setBoolean("hadoop.security.token.service.use_ip", false);
    SecurityUtil.setConfiguration(conf);
    conf.setInt(YarnConfiguration.RM_AM_MAX_ATTEMPTS, Math.max(2, attempts));
    conf.setInt(YarnConfiguration.GLOBAL_RM_AM_MAX_ATTEMPTS, Math.max(2, attempts));
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, Math.min(containerMb, 1024));
    // Every application runs at once: the AM share, the application count and the off-switch
    // assignments per
    // heartbeat are not what this rig measures (the YARN CPS rig does).
    conf.set("yarn.scheduler.capacity.root.queues", "default");
    conf.set("yarn.scheduler.capacity.root.default.capacity", "100");
    conf.set("yarn.scheduler.capacity.root.default.user-limit-factor", "1000");
    conf.set("yarn.scheduler.capacity.maximum-am-resource-percent", "1.0");
    conf.set(
        "yarn.scheduler.capacity.maximum-applications", String.valueOf(Math.max(10000, apps * 2)));
    conf.set("yarn.scheduler.capacity.per-node-heartbeat.maximum-offswitch-assignments", "1000");
    if (need("mode").equals("populate")) {
      // The first RM is not under test; only its store is. With the default FIFO ordering every
      // container
      // assignment walks past every satisfied application first (O(N) per container; with the
      // file-system
      // store's chmod processes, 5,000 applications had 7 % of their second attempts after 4.5
      // minutes);
      // fair ordering puts the applications still asking first (10,000 now populate in 1.5-4
      // minutes, the
      // store's writes included). The RM under test keeps the default: ordering is configuration,
      // not state.
      conf.set("yarn.scheduler.capacity.root.default.ordering-policy", "fair");
    }
    for (String kv : confs) {
      int eq = kv.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("--conf key=value, got " + kv);
      }
      conf.set(kv.substring(0, eq), kv.substring(eq + 1));
    }
    return conf;
  }

  /**
   * The RM with an AM launcher that starts no process: the simulated node runs the AM container.
   */
  private volatile long recoverStartNanos = -1;

  private volatile long recoverEndNanos = -1;

  private final class DriverRM extends ResourceManager {
    @Override
    protected ApplicationMasterLauncher createAMLauncher() {
      return new SimAmLauncher(getRMContext());
    }

    /** The RM's recovery from the loaded state (applications, attempts, tokens), timed. */
    @Override
    public void recover(RMState state) throws Exception {
      recoverStartNanos = System.nanoTime();
      super.recover(state);
      recoverEndNanos = System.nanoTime();
    }
  }

  private final class SimAmLauncher extends ApplicationMasterLauncher
      implements EventHandler<AMLauncherEvent> {
    SimAmLauncher(RMContext context) {
      super(context);
    }

    @Override
    protected void serviceInit(Configuration conf) {}

    @Override
    protected void serviceStart() {}

    @Override
    protected void serviceStop() {}

    @Override
    public void handle(AMLauncherEvent event) {
      RMAppAttempt attempt = event.getAppAttempt();
      Container am = attempt.getMasterContainer();
      switch (event.getType()) {
        case LAUNCH:
          Token<AMRMTokenIdentifier> token =
              context.getAMRMTokenSecretManager().createAndGetAMRMToken(attempt.getAppAttemptId());
          ((RMAppAttemptImpl) attempt).setAMRMToken(token);
          context
              .getDispatcher()
              .getEventHandler()
              .handle(
                  new RMAppAttemptEvent(attempt.getAppAttemptId(), RMAppAttemptEventType.LAUNCHED));
          nodes.get(am.getNodeId()).start(am);
          launched.add(attempt);
          break;
        case CLEANUP:
          nodes.get(am.getNodeId()).forget(am.getId());
          break;
        default:
          throw new IllegalStateException("unexpected AM launcher event " + event.getType());
      }
    }
  }

  private Resource nodeCapability() {
    return Resource.newInstance(nodeMb, nodeVcores);
  }

  private Resource containerAsk() {
    return Resource.newInstance(containerMb, 1);
  }

  private AMRMTokenIdentifier identifier(ApplicationAttemptId id) throws Exception {
    RMAppAttempt attempt =
        rm.getRMContext().getRMApps().get(id.getApplicationId()).getRMAppAttempt(id);
    Token<AMRMTokenIdentifier> token = attempt == null ? null : attempt.getAMRMToken();
    if (token != null) {
      return token.decodeIdentifier();
    }
    int keyId =
        rm.getRMContext().getAMRMTokenSecretManager().getMasterKey().getMasterKey().getKeyId();
    return new AMRMTokenIdentifier(id, keyId);
  }

  /** Heartbeats every node once per interval until told to stop; a failure stops the driver. */
  private Thread heartbeats() {
    Thread t =
        new Thread(
            () -> {
              try {
                while (!callersStop) {
                  long next = System.nanoTime() + nmHeartbeatMs * 1_000_000L;
                  for (SimNode node : nodes.values()) {
                    node.heartbeat();
                  }
                  long sleepMs = (next - System.nanoTime()) / 1_000_000L;
                  if (sleepMs > 0) {
                    Thread.sleep(sleepMs);
                  }
                }
              } catch (Throwable e) {
                callerFailure = e;
              }
            },
            "sim-node-heartbeats");
    t.setDaemon(true);
    t.start();
    return t;
  }

  private long elapsedMs() {
    return (System.nanoTime() - startNanos) / 1_000_000L;
  }

  private void checkCallers(String waitingFor, long deadlineMs) {
    if (callerFailure != null) {
      throw new IllegalStateException(
          "a simulated caller failed while " + waitingFor, callerFailure);
    }
    if (elapsedMs() > deadlineMs) {
      throw new IllegalStateException("timed out after " + timeoutMs / 1000 + " s " + waitingFor);
    }
  }

  private int populate(Configuration conf) throws Exception {
    rm = new DriverRM();
    rm.init(conf);
    rm.start();
    for (int i = 0; i < nodeCount; i++) {
      SimNode node =
          new SimNode(
              NodeId.newInstance(String.format("sim-node-%05d", i), 8041), nodeCapability(), rm);
      nodes.put(node.id, node);
      node.register(Collections.emptyList(), Collections.emptyList());
    }
    Thread beats = heartbeats();
    long deadline = elapsedMs() + timeoutMs;
    long[] submitMs = new long[apps];
    List<ApplicationId> ids = new ArrayList<>(apps);
    long t0 = System.nanoTime();
    for (int i = 0; i < apps; i++) {
      long s = System.nanoTime();
      ApplicationId id =
          rm.getClientRMService()
              .getNewApplication(GetNewApplicationRequest.newInstance())
              .getApplicationId();
      ApplicationSubmissionContext ctx =
          ApplicationSubmissionContext.newInstance(
              id,
              "failover-" + i,
              "default",
              Priority.newInstance(0),
              ContainerLaunchContext.newInstance(null, null, null, null, null, null),
              false,
              true,
              attempts,
              Resource.newInstance(containerMb, 1),
              "tunelab");
      rm.getClientRMService().submitApplication(SubmitApplicationRequest.newInstance(ctx));
      submitMs[i] = (System.nanoTime() - s) / 1000;
      ids.add(id);
    }
    record("submitted", "apps", apps, "seconds", (System.nanoTime() - t0) / 1e9);
    // The AMs: fail the first M-1 attempts (their AM container exits 1), register the last and ask
    // for K.
    List<SimAm> asking = new ArrayList<>();
    AtomicInteger done = new AtomicInteger();
    while (done.get() < apps) {
      checkCallers(
          "populating (" + done.get() + " of " + apps + " applications with all their containers)",
          deadline);
      RMAppAttempt a;
      while ((a = launched.poll()) != null) {
        ApplicationAttemptId id = a.getAppAttemptId();
        if (id.getAttemptId() < attempts) {
          nodes.get(a.getMasterContainer().getNodeId()).exit(a.getMasterContainer().getId(), 1);
        } else {
          SimAm am = new SimAm(id, identifier(id), rm, containerAsk(), containersPerApp, nodes);
          am.register();
          ams.put(id.getApplicationId(), am);
          asking.add(am);
        }
      }
      List<SimAm> still = new ArrayList<>();
      for (SimAm am : asking) {
        if (am.allocate()) {
          done.incrementAndGet();
        } else {
          still.add(am);
        }
      }
      asking = still;
      Thread.sleep(amHeartbeatMs);
    }
    int expected = apps * (containersPerApp + 1);
    long reportedAfter = -1;
    while (true) {
      checkCallers("waiting for the RM to see every container running", deadline);
      int allocated = rm.getResourceScheduler().getRootQueueMetrics().getAllocatedContainers();
      boolean allRunning =
          ids.stream()
              .allMatch(
                  id -> rm.getRMContext().getRMApps().get(id).getState() == RMAppState.RUNNING);
      if (allocated == expected && allRunning) {
        reportedAfter = elapsedMs();
        break;
      }
      Thread.sleep(50);
    }
    // Two heartbeats more so every node has reported its containers RUNNING, then the steady
    // period.
    long steadyMs = Long.parseLong(need("steady-s")) * 1000;
    Thread.sleep(2 * nmHeartbeatMs + steadyMs);
    checkCallers("in the steady period", Long.MAX_VALUE);
    callersStop = true;
    beats.join();
    writeHandoff(ids);
    long[] writes = TimedStores.Timing.writes();
    record(
        "populated",
        "apps",
        apps,
        "attempts_per_app",
        attempts,
        "containers",
        expected,
        "nodes",
        nodeCount,
        "all_running_after_ms",
        reportedAfter,
        "submit_call_us",
        longs(submitMs),
        "store_write_ns",
        longs(writes),
        "heap_used_bytes",
        heapUsed(),
        "gc_ms",
        gcMs());
    System.out.println(KILL_LINE);
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE); // the runner's SIGKILL ends this JVM
    return 0;
  }

  /**
   * What real NodeManagers and AMs keep across an RM restart: each node's containers, each app's
   * attempt.
   */
  private void writeHandoff(List<ApplicationId> ids) throws Exception {
    ObjectNode root = JSON.createObjectNode();
    ArrayNode nodeList = root.putArray("nodes");
    int total = 0;
    for (SimNode node : nodes.values()) {
      ObjectNode n = nodeList.addObject();
      n.put("id", node.id.toString());
      ArrayNode cs = n.putArray("containers");
      synchronized (node) {
        for (Container c : node.containers.values()) {
          ArrayNode entry = cs.addArray();
          entry
              .add(c.getId().toString())
              .add(c.getResource().getMemorySize())
              .add(c.getResource().getVirtualCores())
              .add(c.getPriority().getPriority())
              .add(c.getId().getApplicationAttemptId().getApplicationId().toString());
          total++;
        }
      }
    }
    root.put("containers", total);
    ArrayNode appList = root.putArray("apps");
    for (ApplicationId id : ids) {
      appList.add(
          rm.getRMContext()
              .getRMApps()
              .get(id)
              .getCurrentAppAttempt()
              .getAppAttemptId()
              .toString());
    }
    File target = new File(need("handoff"));
    File tmp = new File(target.getPath() + ".tmp");
    JSON.writeValue(tmp, root);
    Files.move(tmp.toPath(), target.toPath(), StandardCopyOption.ATOMIC_MOVE);
  }

  private int recover(Configuration conf) throws Exception {
    JsonNode handoff = JSON.readTree(new File(need("handoff")));
    rm = new DriverRM();
    rm.init(conf);
    long startCall = System.nanoTime();
    rm.start();
    long active = System.nanoTime();
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

  private static long heapUsed() {
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  private static long gcMs() {
    long ms = 0;
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      ms += Math.max(0, gc.getCollectionTime());
    }
    return ms;
  }

  private static List<Long> longs(long[] values) {
    List<Long> out = new ArrayList<>(values.length);
    for (long v : values) {
      out.add(v);
    }
    return out;
  }

  /** One JSON record on stdout: {"event": name, key: value, ...}. */
  static synchronized void record(String event, Object... keyValues) throws Exception {
    Map<String, Object> rec = new LinkedHashMap<>();
    rec.put("event", event);
    for (int i = 0; i + 1 < keyValues.length; i += 2) {
      rec.put((String) keyValues[i], keyValues[i + 1]);
    }
    System.out.println(JSON.writeValueAsString(rec));
    System.out.flush();
  }
}
