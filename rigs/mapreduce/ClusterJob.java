package tunelab.rigs.mapreduce;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Stream;
import tunelab.rigs.matrix.JsonLine;

/**
 * What both cluster drivers (Mr1Cluster, Mr2Cluster) say of one job, Hadoop-free: the history file
 * the job added, found by polling (the JobTracker or the AM writes it as the job ends), and the
 * {"event": "cluster_job",...} line from its successful attempts, which rigs/mapreduce/cluster.py
 * reads.
 */
final class ClusterJob {
  private long firstMapStart = Long.MAX_VALUE;
  private long lastMapEnd;
  private long lastReduceEnd;
  private final Map<String, Long> mapsByNode = new TreeMap<>();
  private final List<Map<String, Object>> reducers = new ArrayList<>();

  /**
   * The one history file under {@code root} that is not in {@code seen} and that {@code isHistory}
   * accepts; where two are new, the one {@code preferred} accepts (MR1 writes it where the job
   * runs, then moves it). Polls for 10 s.
   */
  static File newHistoryFile(
      File root, Predicate<Path> isHistory, Predicate<File> preferred, Set<String> seen)
      throws Exception {
    for (int tries = 0; tries < 100; tries++) {
      List<File> fresh = new ArrayList<>();
      try (Stream<Path> files = Files.walk(root.toPath())) {
        files
            .filter(Files::isRegularFile)
            .filter(isHistory)
            .filter(p -> !seen.contains(p.getFileName().toString()))
            .forEach(p -> fresh.add(p.toFile()));
      }
      if (fresh.size() > 1) {
        fresh.removeIf(preferred.negate());
        if (fresh.size() > 1) {
          throw new IllegalStateException("more than one new history file: " + fresh);
        }
      }
      if (fresh.size() == 1) {
        seen.add(fresh.get(0).getName());
        return fresh.get(0);
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException("the job wrote no history file under " + root);
  }

  void map(String node, long start, long finish) {
    firstMapStart = Math.min(firstMapStart, start);
    lastMapEnd = Math.max(lastMapEnd, finish);
    mapsByNode.merge(node, 1L, Long::sum);
  }

  void reduce(String attempt, String node, long start, long shuffleEnd, long finish) {
    lastReduceEnd = Math.max(lastReduceEnd, finish);
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("attempt", attempt);
    r.put("node", node);
    r.put("start_ms", start);
    r.put("shuffle_end_ms", shuffleEnd);
    r.put("finish_ms", finish);
    reducers.add(r);
  }

  /**
   * The job's line: its id and status ("SUCCEEDED" when it did), launch and finish, the attempts'
   * times added so far, the advice its shuffle servers gave, their reads, the reducers' WAITs (-1:
   * not logged).
   */
  JsonLine line(
      int index,
      String jobId,
      String status,
      long launchMs,
      long finishMs,
      long maps,
      long reduces,
      Map<String, Map<String, Long>> advice,
      long readBytes,
      long mergeWaits,
      Map<String, Map<String, Long>> counters) {
    return JsonLine.event("cluster_job")
        .put("index", index)
        .put("job_id", jobId)
        .put("status", status)
        .put("launch_ms", launchMs)
        .put("finish_ms", finishMs)
        .put("first_map_start_ms", firstMapStart)
        .put("last_map_end_ms", lastMapEnd)
        .put("last_reduce_end_ms", lastReduceEnd)
        .put("maps", maps)
        .put("reduces", reduces)
        .put("maps_by_node", mapsByNode)
        .put("reducers", reducers)
        .put("advice", advice)
        .put("shuffle_server_read_bytes", readBytes)
        .put("merge_waits", mergeWaits)
        .put("counters", counters);
  }
}
