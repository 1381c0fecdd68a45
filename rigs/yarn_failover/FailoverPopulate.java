package tunelab.rigs.yarn_failover;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.protocolrecords.GetNewApplicationRequest;
import org.apache.hadoop.yarn.api.protocolrecords.SubmitApplicationRequest;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMAppState;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttempt;
import tunelab.rigs.matrix.DriverArgs;

/**
 * {@code --mode populate}: the first ResourceManager, whose only job is the state it leaves in the
 * store and the handoff file (what lives outside the RM) before the runner kills it at {@link
 * FailoverDriver#KILL_LINE}.
 */
final class FailoverPopulate extends FailoverDriver {
  FailoverPopulate(DriverArgs args) {
    super(args);
  }

  @Override
  int run(Configuration conf) throws Exception {
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
    long steadyMs = count("--steady-s") * 1000L;
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
}
