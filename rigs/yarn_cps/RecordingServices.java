package tunelab.rigs.yarn_cps;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateRequest;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.protocolrecords.FinishApplicationMasterRequest;
import org.apache.hadoop.yarn.api.protocolrecords.FinishApplicationMasterResponse;
import org.apache.hadoop.yarn.api.protocolrecords.RegisterApplicationMasterRequest;
import org.apache.hadoop.yarn.api.protocolrecords.RegisterApplicationMasterResponse;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerState;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.server.api.protocolrecords.NodeHeartbeatRequest;
import org.apache.hadoop.yarn.server.api.protocolrecords.NodeHeartbeatResponse;
import org.apache.hadoop.yarn.server.api.protocolrecords.RegisterNodeManagerRequest;
import org.apache.hadoop.yarn.server.api.protocolrecords.RegisterNodeManagerResponse;
import org.apache.hadoop.yarn.server.api.protocolrecords.UnRegisterNodeManagerRequest;
import org.apache.hadoop.yarn.server.api.protocolrecords.UnRegisterNodeManagerResponse;
import org.apache.hadoop.yarn.server.api.records.NodeHealthStatus;
import org.apache.hadoop.yarn.server.api.records.NodeStatus;
import org.apache.hadoop.yarn.server.resourcemanager.ApplicationMasterService;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceTrackerService;
import tunelab.rigs.matrix.JsonLine;

/**
 * What the simulated NodeManagers and AMs ask of the ResourceManager, recorded at the RM's two
 * entry points (its ResourceTrackerService and ApplicationMasterService, swapped for delegating
 * subclasses right after the RM starts) and summed up as JSON ({@code SlsDriver --record FILE}).
 * The equivalence test runs the stock and the lean simulator on one small trace and compares the
 * two summaries: registrations, the heartbeat protocol, every container's reported life, the AMs'
 * first asks by priority, locality and size, and the sizes of the containers allocated.
 * Timing-dependent details (how many asks an AM re-sends, which host got a container) are left out
 * on purpose: they differ between two runs of the same path.
 */
final class RecordingServices {
  private final Map<String, String> registrations = new TreeMap<>();
  private final Map<String, int[]> lastResponseId = new HashMap<>();
  private final Map<String, Long> lastHeartbeatMs = new HashMap<>();
  private final List<Long> heartbeatGapsMs = new ArrayList<>();
  private long heartbeats;
  private long responseIdGaps;
  private long masterKeyMissing;
  private long keepAliveNonEmpty;
  private long unhealthy;
  private long utilizationReported;
  private long statusesPerHeartbeatMax;
  // container id -> {RUNNING reports, COMPLETE/SUCCESS (0) reports, COMPLETE/other reports}
  private final Map<ContainerId, int[]> containerReports = new HashMap<>();
  private final Map<String, Long> firstAsks = new TreeMap<>();
  private final Map<String, Boolean> askSeen = new HashMap<>();
  private final Map<String, Long> allocatedBySize = new TreeMap<>();
  private long allocateCalls;
  private long releasesAsked;
  private long amRegistrations;
  private long amFinishes;

  void install(ResourceManager rm) {
    ResourceTrackerService tracker = rm.getResourceTrackerService();
    ApplicationMasterService masters = rm.getApplicationMasterService();
    LeanSimulation.write(ResourceManager.class, rm, "resourceTracker", new Tracker(rm, tracker));
    LeanSimulation.write(ResourceManager.class, rm, "masterService", new Masters(rm, masters));
  }

  private synchronized void recordRegistration(RegisterNodeManagerRequest r) {
    // By host: SLS numbers the simulated nodes' ports in the order they happen to register.
    registrations.put(
        r.getNodeId().getHost(),
        "memory_mb="
            + r.getResource().getMemorySize()
            + " vcores="
            + r.getResource().getVirtualCores()
            + " http_port="
            + r.getHttpPort()
            + " labels="
            + r.getNodeLabels());
  }

  private synchronized void recordHeartbeat(NodeHeartbeatRequest r) {
    heartbeats++;
    NodeStatus ns = r.getNodeStatus();
    String node = ns.getNodeId().toString();
    int[] last = lastResponseId.computeIfAbsent(node, k -> new int[] {-1});
    if (ns.getResponseId() != last[0] + 1) {
      responseIdGaps++;
    }
    last[0] = ns.getResponseId();
    long now = System.currentTimeMillis();
    Long before = lastHeartbeatMs.put(node, now);
    if (before != null) {
      heartbeatGapsMs.add(now - before);
    }
    if (r.getLastKnownNMTokenMasterKey() == null) {
      masterKeyMissing++;
    }
    if (ns.getKeepAliveApplications() != null && !ns.getKeepAliveApplications().isEmpty()) {
      keepAliveNonEmpty++;
    }
    NodeHealthStatus health = ns.getNodeHealthStatus();
    if (health == null
        || !health.getIsNodeHealthy()
        || !"".equals(health.getHealthReport())
        || health.getLastHealthReportTime() != 0) {
      unhealthy++;
    }
    if (ns.getNodeUtilization() != null) {
      utilizationReported++;
    }
    List<ContainerStatus> statuses = ns.getContainersStatuses();
    statusesPerHeartbeatMax = Math.max(statusesPerHeartbeatMax, statuses.size());
    for (ContainerStatus s : statuses) {
      int[] c = containerReports.computeIfAbsent(s.getContainerId(), k -> new int[3]);
      if (s.getState() == ContainerState.RUNNING) {
        c[0]++;
      } else if (s.getState() == ContainerState.COMPLETE && s.getExitStatus() == 0) {
        c[1]++;
      } else {
        c[2]++;
      }
    }
  }

  private synchronized void recordAsks(AllocateRequest r) {
    allocateCalls++;
    // SLS's AMs call allocate as a remote user named after their attempt id.
    String attempt;
    try {
      attempt = UserGroupInformation.getCurrentUser().getShortUserName();
    } catch (IOException e) {
      attempt = "?";
    }
    for (ResourceRequest ask : r.getAskList()) {
      String name = ask.getResourceName();
      String locality =
          ResourceRequest.ANY.equals(name) ? "any" : name.startsWith("/") ? "rack" : "host";
      String key =
          "priority="
              + ask.getPriority().getPriority()
              + " locality="
              + locality
              + " memory_mb="
              + ask.getCapability().getMemorySize()
              + " vcores="
              + ask.getCapability().getVirtualCores()
              + " relax="
              + ask.getRelaxLocality();
      String askId = attempt + " " + ask.getPriority().getPriority() + " " + name;
      if (ask.getNumContainers() > 0 && askSeen.putIfAbsent(askId, true) == null) {
        firstAsks.merge(key, (long) ask.getNumContainers(), Long::sum);
      }
    }
    releasesAsked += r.getReleaseList().size();
  }

  private synchronized void recordAllocated(AllocateResponse response) {
    for (Container c : response.getAllocatedContainers()) {
      allocatedBySize.merge(
          "memory_mb="
              + c.getResource().getMemorySize()
              + " vcores="
              + c.getResource().getVirtualCores(),
          1L,
          Long::sum);
    }
  }

  /** The summary, as one JSON object. */
  synchronized String toJson() {
    long tasks = 0;
    long completedOnce = 0;
    long completedTwice = 0;
    long abortedReports = 0;
    long neverRunning = 0;
    long amContainers = 0;
    long amCompletionsMax = 0;
    for (Map.Entry<ContainerId, int[]> e : containerReports.entrySet()) {
      int[] c = e.getValue();
      int ends = c[1] + c[2];
      abortedReports += c[2];
      if (c[0] == 0) {
        neverRunning++;
      }
      if (e.getKey().getContainerId() == 1) {
        // An attempt's first container is its AM's. SLS reports an AM container COMPLETE twice
        // (once when
        // the AM finishes, once when the launcher cleans it up); the last one may come after the
        // run stops.
        amContainers++;
        amCompletionsMax = Math.max(amCompletionsMax, ends);
        continue;
      }
      tasks++;
      if (ends == 1) {
        completedOnce++;
      } else if (ends > 1) {
        completedTwice++;
      }
    }
    List<Long> gaps = new ArrayList<>(heartbeatGapsMs);
    Collections.sort(gaps);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("registrations", registrations);
    out.put("heartbeats", heartbeats);
    out.put("heartbeat_gap_ms_median", gaps.isEmpty() ? -1 : gaps.get(gaps.size() / 2));
    out.put("response_id_gaps", responseIdGaps);
    out.put("master_key_missing", masterKeyMissing);
    out.put("keep_alive_non_empty", keepAliveNonEmpty);
    out.put("unhealthy", unhealthy);
    out.put("utilization_reported", utilizationReported);
    out.put("statuses_per_heartbeat_max", statusesPerHeartbeatMax);
    out.put("task_containers_reported", tasks);
    out.put("task_containers_completed_once", completedOnce);
    out.put("task_containers_completed_more_than_once", completedTwice);
    out.put("am_containers_reported", amContainers);
    out.put("am_container_completions_max", amCompletionsMax);
    out.put("containers_never_reported_running", neverRunning);
    out.put("completions_not_success", abortedReports);
    out.put("first_asks", firstAsks);
    out.put("allocated_by_size", allocatedBySize);
    out.put("allocate_calls", allocateCalls);
    out.put("releases_asked", releasesAsked);
    out.put("am_registrations", amRegistrations);
    out.put("am_finishes", amFinishes);
    return JsonLine.object().putAll(out).toString();
  }

  /** The RM's node-facing service, recording then delegating to the RM's own instance. */
  private final class Tracker extends ResourceTrackerService {
    private final ResourceTrackerService delegate;

    Tracker(ResourceManager rm, ResourceTrackerService delegate) {
      super(rm.getRMContext(), null, null, null, null);
      this.delegate = delegate;
    }

    @Override
    public RegisterNodeManagerResponse registerNodeManager(RegisterNodeManagerRequest request)
        throws YarnException, IOException {
      recordRegistration(request);
      return delegate.registerNodeManager(request);
    }

    @Override
    public NodeHeartbeatResponse nodeHeartbeat(NodeHeartbeatRequest request)
        throws YarnException, IOException {
      recordHeartbeat(request);
      return delegate.nodeHeartbeat(request);
    }

    @Override
    public UnRegisterNodeManagerResponse unRegisterNodeManager(UnRegisterNodeManagerRequest request)
        throws YarnException, IOException {
      return delegate.unRegisterNodeManager(request);
    }
  }

  /** The RM's AM-facing service, recording then delegating to the RM's own instance. */
  private final class Masters extends ApplicationMasterService {
    private final ApplicationMasterService delegate;

    Masters(ResourceManager rm, ApplicationMasterService delegate) {
      super(rm.getRMContext(), rm.getResourceScheduler());
      this.delegate = delegate;
    }

    @Override
    public RegisterApplicationMasterResponse registerApplicationMaster(
        RegisterApplicationMasterRequest request) throws YarnException, IOException {
      synchronized (RecordingServices.this) {
        amRegistrations++;
      }
      return delegate.registerApplicationMaster(request);
    }

    @Override
    public AllocateResponse allocate(AllocateRequest request) throws YarnException, IOException {
      recordAsks(request);
      AllocateResponse response = delegate.allocate(request);
      recordAllocated(response);
      return response;
    }

    @Override
    public FinishApplicationMasterResponse finishApplicationMaster(
        FinishApplicationMasterRequest request) throws YarnException, IOException {
      synchronized (RecordingServices.this) {
        amFinishes++;
      }
      return delegate.finishApplicationMaster(request);
    }

    @Override
    public boolean hasApplicationMasterRegistered(ApplicationAttemptId attemptId) {
      return delegate.hasApplicationMasterRegistered(attemptId);
    }

    @Override
    public void registerAppAttempt(ApplicationAttemptId attemptId) {
      delegate.registerAppAttempt(attemptId);
    }

    @Override
    public void unregisterAttempt(ApplicationAttemptId attemptId) {
      delegate.unregisterAttempt(attemptId);
    }
  }
}
