package tunelab.rigs.yarn_cps;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerExitStatus;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerState;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.NodeLabel;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceUtilization;
import org.apache.hadoop.yarn.api.records.impl.pb.ContainerStatusPBImpl;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.server.api.protocolrecords.NodeHeartbeatRequest;
import org.apache.hadoop.yarn.server.api.protocolrecords.NodeHeartbeatResponse;
import org.apache.hadoop.yarn.server.api.protocolrecords.impl.pb.NodeHeartbeatRequestPBImpl;
import org.apache.hadoop.yarn.server.api.records.MasterKey;
import org.apache.hadoop.yarn.server.api.records.NodeHealthStatus;
import org.apache.hadoop.yarn.server.api.records.NodeStatus;
import org.apache.hadoop.yarn.server.api.records.impl.pb.NodeStatusPBImpl;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.sls.nodemanager.NMSimulator;

/**
 * A simulated NodeManager that sends the ResourceManager what SLS's {@link NMSimulator} sends, at
 * lower cost to the simulator. It registers through {@code NMSimulator.init} (the same registration
 * request), then its heartbeats are driven by a {@link HeartbeatClock} instead of a task in SLS's
 * DelayQueue-backed pool.
 *
 * <p>Each heartbeat carries the same records as SLS's: every running task and AM container as
 * RUNNING / SUCCESS, every container that reached its end time since the last heartbeat as COMPLETE
 * / SUCCESS, every container the RM asked to clean up as COMPLETE / ABORTED, an empty keep-alive
 * list, the healthy status ({@code true, "", 0}), the NM token master key from registration,
 * consecutive response ids from 0, and the utilization when {@code
 * yarn.sls.nm.resource.utilization.ratio} is in (0, 1]. What is leaner: no {@code
 * Records.newRecord} reflection lookup (the same protobuf-backed classes are built directly), one
 * RUNNING status object per container reused every heartbeat instead of a new one (the RM only
 * reads them), one health and one utilization record per node, running containers in a heap ordered
 * by end time instead of a per-node DelayQueue, and no debug-log calls per container.
 */
final class LeanNodeManager extends NMSimulator {
  private static final Field MASTER_KEY = field(NMSimulator.class, "masterKey");

  /** A task container: its RUNNING status (built once) and when it ends. */
  private static final class Running {
    final ContainerId id;
    final ContainerStatus runningStatus;
    final long endMs;

    Running(ContainerId id, long endMs) {
      this.id = id;
      this.runningStatus = status(id, ContainerState.RUNNING, ContainerExitStatus.SUCCESS);
      this.endMs = endMs;
    }
  }

  private final Object lock = new Object();
  private final Map<ContainerId, Running> running = new HashMap<>();
  private final PriorityQueue<Running> byEnd =
      new PriorityQueue<>((a, b) -> Long.compare(a.endMs, b.endMs));
  private final Map<ContainerId, ContainerStatus> amContainers = new HashMap<>();
  private final List<ContainerId> completed = new ArrayList<>();
  private final List<ContainerId> released = new ArrayList<>();
  private ResourceManager rm;
  private NodeId nodeId;
  private MasterKey masterKey;
  private NodeHealthStatus health;
  private ResourceUtilization utilization;
  private int responseId = 0;
  final long offsetMs;

  LeanNodeManager(long offsetMs) {
    this.offsetMs = offsetMs;
  }

  @Override
  public void init(
      String nodeIdStr,
      Resource nodeResource,
      int dispatchTime,
      int heartBeatInterval,
      ResourceManager pRm,
      float utilizationRatio,
      Set<NodeLabel> labels)
      throws java.io.IOException, YarnException {
    // Registers with the RM exactly as SLS does; its task fields stay unused (the clock drives this
    // node).
    super.init(
        nodeIdStr, nodeResource, dispatchTime, heartBeatInterval, pRm, utilizationRatio, labels);
    this.rm = pRm;
    this.nodeId = getNode().getNodeID();
    try {
      this.masterKey = (MasterKey) MASTER_KEY.get(this);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
    this.health = NodeHealthStatus.newInstance(true, "", 0);
    if (utilizationRatio > 0 && utilizationRatio <= 1) {
      Resource total = getNode().getTotalCapability();
      int memUsed = Math.round(total.getMemorySize() * utilizationRatio);
      utilization =
          ResourceUtilization.newInstance(
              memUsed, memUsed, total.getVirtualCores() * utilizationRatio);
    }
  }

  /**
   * One heartbeat at wall time {@code nowMs}: the containers past their end complete first, as in
   * SLS.
   */
  void heartbeat(long nowMs) throws Exception {
    List<ContainerStatus> statuses;
    synchronized (lock) {
      Running head;
      while ((head = byEnd.peek()) != null && head.endMs <= nowMs) {
        byEnd.poll();
        running.remove(head.id);
        completed.add(head.id);
      }
      statuses =
          new ArrayList<>(
              running.size() + amContainers.size() + completed.size() + released.size());
      for (Running r : running.values()) {
        statuses.add(r.runningStatus);
      }
      statuses.addAll(amContainers.values());
      for (ContainerId id : completed) {
        statuses.add(status(id, ContainerState.COMPLETE, ContainerExitStatus.SUCCESS));
      }
      completed.clear();
      for (ContainerId id : released) {
        statuses.add(status(id, ContainerState.COMPLETE, ContainerExitStatus.ABORTED));
      }
      released.clear();
    }
    NodeHeartbeatRequest request = new NodeHeartbeatRequestPBImpl();
    request.setLastKnownNMTokenMasterKey(masterKey);
    NodeStatus ns = new NodeStatusPBImpl();
    ns.setContainersStatuses(statuses);
    ns.setNodeId(nodeId);
    ns.setKeepAliveApplications(new ArrayList<ApplicationId>(0));
    ns.setResponseId(responseId++);
    ns.setNodeHealthStatus(health);
    if (utilization != null) {
      ns.setContainersUtilization(utilization);
      ns.setNodeUtilization(utilization);
    }
    request.setNodeStatus(ns);
    NodeHeartbeatResponse response = rm.getResourceTrackerService().nodeHeartbeat(request);
    List<ContainerId> cleanup = response.getContainersToCleanup();
    if (!cleanup.isEmpty()) {
      synchronized (lock) {
        for (ContainerId id : cleanup) {
          if (amContainers.remove(id) == null) {
            Running r = running.remove(id);
            if (r != null) {
              byEnd.remove(r);
            }
            released.add(id); // as SLS: reported ABORTED even if it had already ended
          }
        }
      }
    }
  }

  @Override
  public void middleStep() {
    throw new IllegalStateException(
        "a lean NodeManager is driven by its HeartbeatClock, not SLS's task runner");
  }

  @Override
  public void addNewContainer(Container container, long lifeTimeMS, ApplicationId applicationId) {
    synchronized (lock) {
      if (lifeTimeMS != -1) {
        Running r = new Running(container.getId(), lifeTimeMS + System.currentTimeMillis());
        running.put(r.id, r);
        byEnd.add(r);
      } else { // -1: the AM's container, reported RUNNING until the AM finishes
        amContainers.put(
            container.getId(),
            status(container.getId(), ContainerState.RUNNING, ContainerExitStatus.SUCCESS));
      }
    }
  }

  @Override
  public void cleanupContainer(ContainerId containerId) {
    synchronized (lock) {
      amContainers.remove(containerId);
      completed.add(containerId);
    }
  }

  @Override
  public void finishApplication(ApplicationId applicationId) {
    // SLS keeps a per-node set of running applications that nothing sends to the RM: nothing to do.
  }

  /** Built as SLS builds them (container id, state, exit status; nothing else set). */
  static ContainerStatus status(ContainerId id, ContainerState state, int exitStatus) {
    ContainerStatus cs = new ContainerStatusPBImpl();
    cs.setContainerId(id);
    cs.setState(state);
    cs.setExitStatus(exitStatus);
    return cs;
  }

  int runningContainers() {
    synchronized (lock) {
      return running.size() + amContainers.size();
    }
  }

  private static Field field(Class<?> type, String name) {
    try {
      Field f = type.getDeclaredField(name);
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException e) {
      throw new IllegalStateException(
          "SLS changed: " + type.getName() + " has no field " + name, e);
    }
  }
}
