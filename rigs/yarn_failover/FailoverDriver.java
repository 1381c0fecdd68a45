package tunelab.rigs.yarn_failover;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.SecurityUtil;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.util.VersionInfo;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.event.EventHandler;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.amlauncher.AMLauncherEvent;
import org.apache.hadoop.yarn.server.resourcemanager.amlauncher.ApplicationMasterLauncher;
import org.apache.hadoop.yarn.server.resourcemanager.recovery.RMStateStore.RMState;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttempt;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptEvent;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptEventType;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptImpl;
import tunelab.rigs.matrix.DriverArgs;
import tunelab.rigs.matrix.GcTime;
import tunelab.rigs.matrix.JsonLine;

/**
 * The ResourceManager failover rig's driver: one JVM per ResourceManager, run twice per cell.
 *
 * <p>{@code --mode populate} ({@link FailoverPopulate}) starts an RM with recovery on and the
 * cell's state store, registers the simulated NodeManagers, submits N applications through the RM's
 * client service, fails the first M-1 attempts of each (its AM container reported exited), lets the
 * last attempt's AM register and get K containers, keeps the nodes heartbeating for the steady
 * period, then stops every simulated caller, writes what lives outside the RM (the nodes and their
 * running containers, each application's attempt: what real NodeManagers and AMs keep across an RM
 * restart) to the handoff file and prints {@link #KILL_LINE}: the runner kills this JVM with
 * SIGKILL there.
 *
 * <p>{@code --mode recover} ({@link FailoverRecover}) starts a new RM on the same store and
 * measures how long until it is active (the store's load, then the RM's recovery of applications
 * and attempts) and every node has re-registered with its containers and every application is
 * RUNNING again (its AM re-registered). Times are from this JVM's start, so the new process's
 * start-up counts, as it does in a real failover.
 *
 * <p>This class holds what both modes share: the options, the RM's configuration, the simulated
 * nodes and AMs and their heartbeats. Stdout: one JSON record per line; everything else goes to
 * stderr (the RM's log).
 */
public abstract class FailoverDriver {
  static final String KILL_LINE = "tunelab-failover: state written, kill me now";
  static final ObjectMapper JSON = new ObjectMapper();

  final DriverArgs args;
  final int apps;
  final int attempts;
  final int containersPerApp;
  final int nodeCount;
  final int nodeMb;
  final int nodeVcores;
  final int containerMb;
  final long nmHeartbeatMs;
  final long amHeartbeatMs;
  final long timeoutMs;
  final long startNanos = System.nanoTime();
  final long jvmStartEpochMs = ManagementFactory.getRuntimeMXBean().getStartTime();
  final long nowEpochMs = System.currentTimeMillis();

  ResourceManager rm;
  final Map<NodeId, SimNode> nodes = new LinkedHashMap<>();
  final Map<ApplicationId, SimAm> ams = new ConcurrentHashMap<>();
  final ConcurrentLinkedQueue<RMAppAttempt> launched = new ConcurrentLinkedQueue<>();
  volatile boolean callersStop = false;
  volatile Throwable callerFailure;

  FailoverDriver(DriverArgs args) {
    this.args = args;
    this.apps = count("--apps");
    this.attempts = count("--attempts");
    this.containersPerApp = count("--containers");
    this.nodeCount = count("--nodes");
    this.nodeMb = count("--node-mb");
    this.nodeVcores = count("--node-vcores");
    this.containerMb = count("--container-mb");
    this.nmHeartbeatMs = count("--nm-heartbeat-ms");
    this.amHeartbeatMs = count("--am-heartbeat-ms");
    this.timeoutMs = count("--timeout-s") * 1000L;
  }

  /** What this mode does with its ResourceManager: the process' exit status. */
  abstract int run(Configuration conf) throws Exception;

  static final String USAGE =
      "FailoverDriver --mode populate|recover --store zookeeper|leveldb|filesystem --store-dir DIR"
          + " [--zk HOST:PORT] --handoff FILE --apps N --attempts N --containers N --nodes N"
          + " --node-mb MB --node-vcores N --container-mb MB --nm-heartbeat-ms MS"
          + " --am-heartbeat-ms MS --steady-s S --timeout-s S [--conf KEY=VALUE]...";

  public static void main(String[] argv) throws Exception {
    DriverArgs args = new DriverArgs("FailoverDriver", USAGE);
    for (String name :
        Arrays.asList(
            "--mode",
            "--store",
            "--store-dir",
            "--zk",
            "--handoff",
            "--apps",
            "--attempts",
            "--containers",
            "--nodes",
            "--node-mb",
            "--node-vcores",
            "--container-mb",
            "--nm-heartbeat-ms",
            "--am-heartbeat-ms",
            "--steady-s",
            "--timeout-s",
            "--conf")) {
      args.option(name, 1);
    }
    args.parse(argv);
    String mode = args.required("--mode");
    args.check(
        mode.equals("populate") || mode.equals("recover"), "--mode populate|recover, not " + mode);
    FailoverDriver driver =
        mode.equals("populate") ? new FailoverPopulate(args) : new FailoverRecover(args);
    Configuration conf = driver.configuration(args.all("--conf"));
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
      code = driver.run(conf);
    } catch (Throwable e) {
      System.err.println("tunelab-failover: " + mode + " failed:");
      e.printStackTrace();
    } finally {
      System.out.flush();
      System.err.flush();
      Runtime.getRuntime().halt(code); // the RM's non-daemon threads would keep the JVM alive
    }
  }

  /** A required option's value. */
  String need(String name) {
    return args.required("--" + name);
  }

  /** A required option's value as a count (an integer >= 0). */
  int count(String name) {
    args.required(name);
    int v = args.integer(name, 0, -1);
    args.check(v >= 0, name + ": expected an integer >= 0");
    return v;
  }

  /** The RM's configuration: recovery on, the cell's store, every address on loopback (port 0). */
  Configuration configuration(List<String> confs) {
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
    if (this instanceof FailoverPopulate) {
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
  volatile long recoverStartNanos = -1;

  volatile long recoverEndNanos = -1;

  final class DriverRM extends ResourceManager {
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

  final class SimAmLauncher extends ApplicationMasterLauncher
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

  Resource nodeCapability() {
    return Resource.newInstance(nodeMb, nodeVcores);
  }

  Resource containerAsk() {
    return Resource.newInstance(containerMb, 1);
  }

  AMRMTokenIdentifier identifier(ApplicationAttemptId id) throws Exception {
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
  Thread heartbeats() {
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

  long elapsedMs() {
    return (System.nanoTime() - startNanos) / 1_000_000L;
  }

  void checkCallers(String waitingFor, long deadlineMs) {
    if (callerFailure != null) {
      throw new IllegalStateException(
          "a simulated caller failed while " + waitingFor, callerFailure);
    }
    if (elapsedMs() > deadlineMs) {
      throw new IllegalStateException("timed out after " + timeoutMs / 1000 + " s " + waitingFor);
    }
  }

  static long heapUsed() {
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  static long gcMs() {
    return GcTime.totalMillis();
  }

  static List<Long> longs(long[] values) {
    List<Long> out = new ArrayList<>(values.length);
    for (long v : values) {
      out.add(v);
    }
    return out;
  }

  /** One JSON record on stdout: {"event": name, key: value, ...}. */
  static void record(String event, Object... keyValues) {
    JsonLine line = JsonLine.event(event);
    for (int i = 0; i + 1 < keyValues.length; i += 2) {
      line.put((String) keyValues[i], keyValues[i + 1]);
    }
    line.print();
  }
}
