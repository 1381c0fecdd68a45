package tunelab.rigs.yarn_failover;

import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateRequest;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.protocolrecords.RegisterApplicationMasterRequest;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceRequest;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;

/**
 * A simulated AM: registers with the attempt's token, asks for K containers, starts them on their
 * nodes.
 */
final class SimAm {
  final ApplicationAttemptId attempt;
  final UserGroupInformation ugi;
  private final ResourceManager rm;
  private final Map<NodeId, SimNode> nodes;
  private final Resource ask;
  private final int containers;
  int responseId = 0;
  int granted = 0;
  boolean asked = false;

  /**
   * An AM of `attempt` asking for `containers` of size `ask`, started on their simulated `nodes`.
   */
  SimAm(
      ApplicationAttemptId attempt,
      AMRMTokenIdentifier identifier,
      ResourceManager rm,
      Resource ask,
      int containers,
      Map<NodeId, SimNode> nodes) {
    this.attempt = attempt;
    this.rm = rm;
    this.ask = ask;
    this.containers = containers;
    this.nodes = nodes;
    this.ugi = UserGroupInformation.createRemoteUser(attempt.toString());
    ugi.addTokenIdentifier(identifier);
  }

  void register() throws Exception {
    ugi.doAs(
        (PrivilegedExceptionAction<Object>)
            () ->
                rm.getApplicationMasterService()
                    .registerApplicationMaster(
                        RegisterApplicationMasterRequest.newInstance("sim-am", 0, "")));
  }

  /** One allocate call; true once all K containers are granted and started. */
  boolean allocate() throws Exception {
    List<ResourceRequest> asks = new ArrayList<>();
    if (!asked && containers > 0) {
      asks.add(
          ResourceRequest.newInstance(
              Priority.newInstance(1), ResourceRequest.ANY, ask, containers));
      asked = true;
    }
    AllocateRequest request =
        AllocateRequest.newInstance(responseId, 0f, asks, Collections.emptyList(), null);
    AllocateResponse response =
        ugi.doAs(
            (PrivilegedExceptionAction<AllocateResponse>)
                () -> rm.getApplicationMasterService().allocate(request));
    responseId = response.getResponseId();
    for (Container c : response.getAllocatedContainers()) {
      nodes.get(c.getNodeId()).start(c);
      granted++;
    }
    return granted >= containers;
  }
}
