package tunelab.rigs.yarn_failover;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerExitStatus;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerState;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.api.protocolrecords.NMContainerStatus;
import org.apache.hadoop.yarn.server.api.protocolrecords.NodeHeartbeatRequest;
import org.apache.hadoop.yarn.server.api.protocolrecords.NodeHeartbeatResponse;
import org.apache.hadoop.yarn.server.api.protocolrecords.RegisterNodeManagerRequest;
import org.apache.hadoop.yarn.server.api.protocolrecords.RegisterNodeManagerResponse;
import org.apache.hadoop.yarn.server.api.records.MasterKey;
import org.apache.hadoop.yarn.server.api.records.NodeAction;
import org.apache.hadoop.yarn.server.api.records.NodeHealthStatus;
import org.apache.hadoop.yarn.server.api.records.NodeStatus;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.util.YarnVersionInfo;

/** A simulated NodeManager: registers, heartbeats its containers' statuses, obeys clean-ups. */
final class SimNode {
  final NodeId id;
  final Resource capability;
  final Map<ContainerId, ContainerStatus> running = new LinkedHashMap<>();
  final Map<ContainerId, Container> containers = new HashMap<>();
  final List<ContainerStatus> finished = new ArrayList<>();
  private final ResourceManager rm;
  MasterKey nmKey;
  MasterKey containerKey;
  int responseId = 0;

  SimNode(NodeId id, Resource capability, ResourceManager rm) {
    this.id = id;
    this.capability = capability;
    this.rm = rm;
  }

  void register(List<NMContainerStatus> reports, List<ApplicationId> apps) throws Exception {
    RegisterNodeManagerRequest request =
        RegisterNodeManagerRequest.newInstance(
            id, 8042, capability, YarnVersionInfo.getVersion(), reports, apps);
    RegisterNodeManagerResponse response =
        rm.getResourceTrackerService().registerNodeManager(request);
    if (response.getNodeAction() != NodeAction.NORMAL) {
      throw new IllegalStateException(
          id
              + " registration: "
              + response.getNodeAction()
              + " "
              + response.getDiagnosticsMessage());
    }
    nmKey = response.getNMTokenMasterKey();
    containerKey = response.getContainerTokenMasterKey();
  }

  synchronized void start(Container c) {
    running.put(
        c.getId(),
        ContainerStatus.newInstance(
            c.getId(), ContainerState.RUNNING, "", ContainerExitStatus.INVALID));
    containers.put(c.getId(), c);
  }

  synchronized void exit(ContainerId c, int exitStatus) {
    if (running.remove(c) != null) {
      containers.remove(c);
      finished.add(ContainerStatus.newInstance(c, ContainerState.COMPLETE, "exited", exitStatus));
    }
  }

  synchronized void forget(ContainerId c) {
    if (running.remove(c) != null) {
      containers.remove(c);
      finished.add(
          ContainerStatus.newInstance(
              c,
              ContainerState.COMPLETE,
              "killed by the RM",
              ContainerExitStatus.KILLED_BY_RESOURCEMANAGER));
    }
  }

  void heartbeat() throws Exception {
    List<ContainerStatus> statuses;
    synchronized (this) {
      statuses = new ArrayList<>(running.values());
      statuses.addAll(finished);
      finished.clear();
    }
    NodeStatus status =
        NodeStatus.newInstance(
            id,
            responseId,
            statuses,
            Collections.emptyList(),
            NodeHealthStatus.newInstance(true, "", 0),
            null,
            null,
            null);
    NodeHeartbeatRequest request =
        NodeHeartbeatRequest.newInstance(status, containerKey, nmKey, null);
    NodeHeartbeatResponse response = rm.getResourceTrackerService().nodeHeartbeat(request);
    if (response.getNodeAction() != NodeAction.NORMAL) {
      throw new IllegalStateException(
          id + " heartbeat: " + response.getNodeAction() + " " + response.getDiagnosticsMessage());
    }
    responseId = response.getResponseId();
    if (response.getContainerTokenMasterKey() != null) {
      containerKey = response.getContainerTokenMasterKey();
    }
    if (response.getNMTokenMasterKey() != null) {
      nmKey = response.getNMTokenMasterKey();
    }
    for (ContainerId c : response.getContainersToCleanup()) {
      forget(c);
    }
  }

  synchronized int runningCount() {
    return running.size();
  }
}
