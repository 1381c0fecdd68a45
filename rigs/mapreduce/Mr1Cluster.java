package tunelab.rigs.mapreduce;

import java.io.File;
import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.hadoop.examples.terasort.TeraInputFormat;
import org.apache.hadoop.examples.terasort.TeraOutputFormat;
import org.apache.hadoop.examples.terasort.TeraSort;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.Counters;
import org.apache.hadoop.mapred.DefaultJobHistoryParser;
import org.apache.hadoop.mapred.FileOutputFormat;
import org.apache.hadoop.mapred.JobClient;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.JobHistory;
import org.apache.hadoop.mapred.MiniMRCluster;
import org.apache.hadoop.mapred.Partitioner;
import org.apache.hadoop.util.GenericOptionsParser;
import tunelab.rigs.matrix.DriverArgs;
import tunelab.rigs.matrix.DriverMain;
import tunelab.rigs.matrix.Iterations;
import tunelab.rigs.matrix.JsonLine;

/**
 * MR1 as a small cluster on loopback (issue 62): a JobTracker and NODES TaskTrackers, each with its
 * map output servlet and its own local folders, in this JVM ({@code MiniMRCluster} of hadoop-test
 * 1.2.1); the tasks run in their own JVMs, children of this one. The examples' TeraSort runs WARMUP
 * + MEASURED times on it. Usage and output as {@link Mr2Cluster}'s: each job is followed by one
 * {"event":"cluster_job",...} line read from the job's history file (parsed by Hadoop 1's own
 * DefaultJobHistoryParser).
 *
 * <p>MR1's TaskTrackers advise the page cache through 1.x's static {@code NativeIO}, which has no
 * hook of its own: {@link Mr1FadviseCounter} adds one where libhadoop is not loaded. MR1's reducers
 * drop their connection without a log line when their memory is full, so merge_waits is reported as
 * -1 (not known), never as 0.
 *
 * <p>Usage: Mr1Cluster --nodes N --slots MAPS REDUCES --iterations WARMUP MEASURED -- terasort
 * [-Dname=value ...] INPUT OUTPUT
 */
public final class Mr1Cluster {
  private Mr1Cluster() {}

  public static void main(String[] args) throws Exception {
    DriverArgs a =
        new DriverArgs(
                "Mr1Cluster",
                "Mr1Cluster --nodes N --slots MAPS REDUCES --iterations WARMUP MEASURED --"
                    + " terasort [-Dk=v ...] INPUT OUTPUT")
            .option("--nodes", 1)
            .option("--slots", 2)
            .option("--iterations", 2)
            .restAfterDashDash()
            .parse(args);
    int nodes = a.integer("--nodes", 0, 2);
    int mapSlots = a.integer("--slots", 0, 3);
    int reduceSlots = a.integer("--slots", 1, 2);
    int warmup = a.integer("--iterations", 0, 0);
    int measured = a.integer("--iterations", 1, 1);
    a.check(nodes >= 1 && mapSlots >= 1 && reduceSlots >= 1, "--nodes and --slots: at least 1");
    a.check(warmup >= 0 && measured >= 1, "--iterations: expected WARMUP >= 0 and MEASURED >= 1");
    List<String> rest = a.rest();
    a.check(
        rest.size() >= 3 && rest.get(0).equals("terasort"), "expected terasort [-Dk=v ...] IN OUT");
    String[] jobArgs = rest.subList(1, rest.size()).toArray(new String[0]);
    File output = new File(jobArgs[jobArgs.length - 1]);
    DriverMain.runAndHalt(
        () -> run(nodes, mapSlots, reduceSlots, warmup, measured, jobArgs, output));
  }

  private static void run(
      int nodes,
      int mapSlots,
      int reduceSlots,
      int warmup,
      int measured,
      String[] jobArgs,
      File output)
      throws Exception {
    AdviceCounts counter = Mr1FadviseCounter.install();
    if (counter == null) {
      throw new IllegalStateException(
          "libhadoop is loaded: MR1 advises by itself and tunelab cannot count it");
    }
    File logs = new File("logs").getAbsoluteFile();
    System.setProperty("hadoop.log.dir", logs.getPath());
    System.setProperty("test.build.data", new File("cluster").getAbsolutePath());
    JobConf conf = new JobConf();
    conf.setInt("mapred.tasktracker.map.tasks.maximum", mapSlots);
    conf.setInt("mapred.tasktracker.reduce.tasks.maximum", reduceSlots);
    conf.set("mapred.job.tracker.http.address", "127.0.0.1:0");
    conf.set("mapred.task.tracker.http.address", "127.0.0.1:0");
    conf.set("mapred.task.tracker.report.address", "127.0.0.1:0");
    MiniMRCluster cluster = new MiniMRCluster(0, 0, nodes, "file:///", 1, null, null, null, conf);
    try {
      Map<String, String> nodeByTracker = new TreeMap<>();
      for (int i = 0; i < nodes; i++) {
        String node = "tt-" + i;
        for (String dir : cluster.getTaskTrackerLocalDirs(i)) {
          counter.addNode(new File(dir).getAbsolutePath(), node);
        }
        // MiniMRCluster names its TaskTrackers' hosts host<i>.foo.com (resolved to localhost in-JVM
        // and
        // in the tasks' JVMs by Hadoop's static resolution): the history names a task's host so.
        nodeByTracker.put("host" + i + ".foo.com", node);
      }
      JsonLine.event("cluster")
          .put("nodes", nodes)
          .put("map_slots", mapSlots)
          .put("reduce_slots", reduceSlots)
          .put("nodes_by_host", nodeByTracker)
          .print();
      Set<String> seen = new HashSet<>();
      Map<String, Map<String, Long>>[] before = new Map[1];
      long[] readBefore = new long[1];
      boolean[] ok = new boolean[1];
      Iterations.run(
          warmup,
          measured,
          k -> {
            FileUtil.fullyDelete(output);
            before[0] = counter.snapshot();
            readBefore[0] = AdviceCounts.readBytes();
          },
          k -> ok[0] = teraSort(cluster.createJobConf(new JobConf(conf)), jobArgs),
          k -> {
            if (!ok[0]) {
              throw new IllegalStateException("iteration " + k + ": the job failed");
            }
            long read = AdviceCounts.readBytes() - readBefore[0];
            report(k, historyFile(logs, seen), nodeByTracker, counter, before[0], read);
          });
      JsonLine.event("advice_problems")
          .put("unreachable", counter.unreachable())
          .put("failed", counter.failed())
          .print();
      JsonLine.event("end").print();
    } finally {
      cluster.shutdown();
    }
  }

  /**
   * TeraSort's job as 1.2.1's {@code TeraSort.run} makes it (its input and output formats, identity
   * map and reduce, one output replica, a final sync), partitioned by {@link KeyPrefixPartitioner}
   * instead of its sampled total-order partitioner, whose partition file reaches the tasks through
   * the distributed cache's symlinks, which MiniMRCluster's tasks do not get (nor
   * MiniMRYarnCluster's: MR2 uses TeraSort's simple partitioner, the same rule).
   */
  static boolean teraSort(JobConf base, String[] args) throws Exception {
    JobConf job = new JobConf(base, TeraSort.class);
    String[] rest = new GenericOptionsParser(job, args).getRemainingArgs();
    if (rest.length != 2) {
      throw new IllegalArgumentException("terasort: INPUT OUTPUT after the -D options");
    }
    TeraInputFormat.setInputPaths(job, new org.apache.hadoop.fs.Path(rest[0]));
    FileOutputFormat.setOutputPath(job, new org.apache.hadoop.fs.Path(rest[1]));
    job.setJobName("TeraSort");
    job.setOutputKeyClass(Text.class);
    job.setOutputValueClass(Text.class);
    job.setInputFormat(TeraInputFormat.class);
    job.setOutputFormat(TeraOutputFormat.class);
    job.setPartitionerClass(KeyPrefixPartitioner.class);
    job.setInt("dfs.replication", 1);
    TeraOutputFormat.setFinalSync(job, true);
    try {
      return JobClient.runJob(job).isSuccessful();
    } catch (IOException e) {
      System.err.println("the job failed: " + e);
      return false;
    }
  }

  /**
   * Reducer = the key's first three bytes (unsigned, big-endian) divided by ceil(2^24 / reducers):
   * the key space cut in equal ranges, in key order (MR2's TeraSort simple partitioner's rule).
   */
  public static final class KeyPrefixPartitioner implements Partitioner<Text, Text> {
    @Override
    public void configure(JobConf job) {}

    @Override
    public int getPartition(Text key, Text value, int reducers) {
      byte[] b = key.getBytes();
      int prefix = 0;
      for (int i = 0; i < 3; i++) {
        prefix = (prefix << 8) | (i < key.getLength() ? b[i] & 0xff : 0);
      }
      int perReducer = (int) Math.ceil((1 << 24) / (double) reducers);
      return prefix / perReducer;
    }
  }

  /** The one history file (not its _conf.xml) the last job added under the log folder. */
  static File historyFile(File logs, Set<String> seen) throws Exception {
    // The JobTracker writes the file where jobs run, then moves it to the done folder.
    return ClusterJob.newHistoryFile(
        logs,
        p -> {
          String name = p.getFileName().toString();
          return name.startsWith("job_") && !name.endsWith(".xml") && !name.endsWith(".crc");
        },
        f -> f.getPath().contains("/done/"),
        seen);
  }

  private static void report(
      int k,
      File history,
      Map<String, String> nodeByTracker,
      AdviceCounts counter,
      Map<String, Map<String, Long>> before,
      long readBytes)
      throws Exception {
    String name = history.getName();
    JobHistory.JobInfo job = new JobHistory.JobInfo(jobId(name));
    DefaultJobHistoryParser.parseJobTasks(
        history.getPath(), job, FileSystem.getLocal(new JobConf()));
    ClusterJob out = new ClusterJob();
    for (JobHistory.Task task : job.getAllTasks().values()) {
      for (JobHistory.TaskAttempt t : task.getTaskAttempts().values()) {
        if (!"SUCCESS".equals(t.get(JobHistory.Keys.TASK_STATUS))) {
          continue;
        }
        String type = t.get(JobHistory.Keys.TASK_TYPE);
        String node = nodeOf(t.get(JobHistory.Keys.TRACKER_NAME), nodeByTracker);
        long start = t.getLong(JobHistory.Keys.START_TIME);
        long finish = t.getLong(JobHistory.Keys.FINISH_TIME);
        if ("MAP".equals(type)) {
          out.map(node, start, finish);
        } else if ("REDUCE".equals(type)) {
          out.reduce(
              t.get(JobHistory.Keys.TASK_ATTEMPT_ID),
              node,
              start,
              t.getLong(JobHistory.Keys.SHUFFLE_FINISHED),
              finish);
        }
      }
    }
    String status = job.get(JobHistory.Keys.JOB_STATUS);
    out.line(
            k,
            job.get(JobHistory.Keys.JOBID),
            "SUCCESS".equals(status) ? "SUCCEEDED" : status,
            job.getLong(JobHistory.Keys.LAUNCH_TIME),
            job.getLong(JobHistory.Keys.FINISH_TIME),
            job.getInt(JobHistory.Keys.TOTAL_MAPS),
            job.getInt(JobHistory.Keys.TOTAL_REDUCES),
            AdviceCounts.difference(before, counter.snapshot()),
            readBytes,
            -1L,
            counters(Counters.fromEscapedCompactString(job.get(JobHistory.Keys.COUNTERS))))
        .print();
  }

  private static String jobId(String fileName) {
    int at = fileName.indexOf("job_");
    String[] parts = fileName.substring(at).split("_");
    return parts[0] + "_" + parts[1] + "_" + parts[2];
  }

  private static String nodeOf(String tracker, Map<String, String> nodeByHost) {
    if (tracker == null) {
      return "unknown";
    }
    for (Map.Entry<String, String> e : nodeByHost.entrySet()) {
      if (tracker.startsWith("tracker_" + e.getKey() + ":") || tracker.endsWith("/" + e.getKey())) {
        return e.getValue();
      }
    }
    return "unknown";
  }

  static Map<String, Map<String, Long>> counters(Counters counters) {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    for (Counters.Group group : counters) {
      Map<String, Long> g = new TreeMap<>();
      for (Counters.Counter c : group) {
        g.put(c.getDisplayName(), c.getValue());
      }
      out.put(group.getDisplayName(), g);
    }
    return out;
  }
}
