package tunelab.rigs.mapreduce;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.examples.WordCount;
import org.apache.hadoop.examples.terasort.TeraSort;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.CounterGroup;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.jobhistory.JobHistoryParser;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.apache.hadoop.util.GenericOptionsParser;
import org.apache.hadoop.util.ToolRunner;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import tunelab.rigs.matrix.DriverArgs;
import tunelab.rigs.matrix.DriverMain;
import tunelab.rigs.matrix.Iterations;
import tunelab.rigs.matrix.JsonLine;

/**
 * MR2 as a small cluster on loopback (issue 62): a ResourceManager and NODES NodeManagers, each
 * with its ShuffleHandler and its own local and log folders, in this JVM ({@code
 * MiniMRYarnCluster}); the tasks run in their own JVMs, children of this one. The examples'
 * WordCount or TeraSort runs WARMUP + MEASURED times on it.
 *
 * <p>Usage: Mr2Cluster --nodes N --node-memory-mb MB --iterations WARMUP MEASURED -- JOB
 * [-Dname=value ...] INPUT OUTPUT
 *
 * <p>Each job is followed by one line {"event":"cluster_job",...} read from the job's history file
 * (the AM's .jhist, parsed by Hadoop's own JobHistoryParser): the phases, each reducer's shuffle
 * (its start to its shuffle's end), the map attempts per node, the job counters; and what the
 * shuffle servers did meanwhile: the page-cache advice they gave, counted by node ({@link
 * FadviseCounter}: libhadoop is not served, so without it Hadoop's advice reaches nobody), the
 * bytes this JVM read from storage ({@code /proc/self/io} read_bytes: the shuffle servers' reads of
 * map outputs not in the page cache, and the task JVMs' once reaped: Linux adds a reaped child's
 * I/O to its parent's), and how often a reducer was told to wait by its merge manager and dropped
 * its connection (the reducers' logs). The job history server is off (its ports and threads are not
 * under test): the history files stay where the AM writes them.
 */
public final class Mr2Cluster {
  private Mr2Cluster() {}

  private static final String WAIT_LINE = "MergeManager returned status WAIT";

  public static void main(String[] args) throws Exception {
    DriverArgs a =
        new DriverArgs(
                "Mr2Cluster",
                "Mr2Cluster --nodes N --node-memory-mb MB --iterations WARMUP MEASURED --"
                    + " wordcount|terasort [-Dk=v ...] INPUT OUTPUT")
            .option("--nodes", 1)
            .option("--node-memory-mb", 1)
            .option("--iterations", 2)
            .restAfterDashDash()
            .parse(args);
    int nodes = a.integer("--nodes", 0, 2);
    int nodeMemoryMb = a.integer("--node-memory-mb", 0, 4096);
    int warmup = a.integer("--iterations", 0, 0);
    int measured = a.integer("--iterations", 1, 1);
    a.check(nodes >= 1, "--nodes: at least 1");
    a.check(warmup >= 0 && measured >= 1, "--iterations: expected WARMUP >= 0 and MEASURED >= 1");
    List<String> rest = a.rest();
    a.check(rest.size() >= 3, "expected JOB [-Dk=v ...] INPUT OUTPUT after --");
    String job = rest.get(0);
    a.check(
        job.equals("wordcount") || job.equals("terasort"),
        "job " + job + ": wordcount or terasort");
    String[] jobArgs = rest.subList(1, rest.size()).toArray(new String[0]);
    File output = new File(jobArgs[jobArgs.length - 1]);
    DriverMain.runAndHalt(() -> run(nodes, nodeMemoryMb, warmup, measured, job, jobArgs, output));
  }

  private static void run(
      int nodes,
      int nodeMemoryMb,
      int warmup,
      int measured,
      String job,
      String[] jobArgs,
      File output)
      throws Exception {
    FadviseCounter counter = FadviseCounter.install();
    File history = new File("history").getAbsoluteFile();
    MiniMRYarnCluster cluster = new MiniMRYarnCluster("tunelab-mr2", nodes);
    cluster.init(clusterConf(nodeMemoryMb, history));
    cluster.start();
    try {
      if (!cluster.waitForNodeManagersToConnect(60_000)) {
        throw new IllegalStateException("the NodeManagers did not register within 60 s");
      }
      Map<Integer, String> nodeByPort = new TreeMap<>();
      List<File> logDirs = new ArrayList<>();
      for (int i = 0; i < nodes; i++) {
        NodeManager nm = cluster.getNodeManager(i);
        String node = "nm-" + i;
        long offered =
            cluster
                .getResourceManager()
                .getRMContext()
                .getRMNodes()
                .get(nm.getNMContext().getNodeId())
                .getTotalCapability()
                .getMemorySize();
        if (offered != nodeMemoryMb) {
          // MiniYARNCluster gives each NodeManager its own memory setting (4096 unless told): a
          // node
          // offering other than asked is another cluster, with other task JVMs at once.
          throw new IllegalStateException(
              node + " offers " + offered + " MB, not the " + nodeMemoryMb + " MB asked");
        }
        nodeByPort.put(nm.getNMContext().getNodeId().getPort(), node);
        for (String dir : nm.getConfig().getTrimmedStrings(YarnConfiguration.NM_LOCAL_DIRS)) {
          counter.addNode(new File(dir).getAbsolutePath(), node);
        }
        for (String dir : nm.getConfig().getTrimmedStrings(YarnConfiguration.NM_LOG_DIRS)) {
          logDirs.add(new File(dir));
        }
      }
      JsonLine.event("cluster")
          .put("nodes", nodes)
          .put("node_memory_mb", nodeMemoryMb)
          .put("nodes_by_port", nodeByPort)
          .put("work_dir", cluster.getTestWorkDir().getAbsolutePath())
          .print();
      Configuration jobConf = new Configuration(cluster.getConfig());
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
          k -> ok[0] = runJob(job, new Configuration(jobConf), jobArgs),
          k -> {
            if (!ok[0]) {
              throw new IllegalStateException("iteration " + k + ": the job failed");
            }
            long read = AdviceCounts.readBytes() - readBefore[0];
            File jhist = newHistoryFile(history, seen);
            report(k, jhist, nodeByPort, logDirs, counter, before[0], read);
          });
      JsonLine.event("advice_problems")
          .put("unreachable", counter.unreachable())
          .put("failed", counter.failed())
          .print();
      JsonLine.event("end").print();
    } finally {
      cluster.stop();
    }
  }

  static Configuration clusterConf(int nodeMemoryMb, File history) {
    YarnConfiguration conf = new YarnConfiguration();
    // Every server on loopback (the ShuffleHandler binds its port on every address: 3.4.2 has no
    // setting for it; this JVM's cgroup and the rig's port check see it).
    conf.set("yarn.resourcemanager.bind-host", "127.0.0.1");
    conf.set("yarn.nodemanager.bind-host", "127.0.0.1");
    conf.set("yarn.timeline-service.bind-host", "127.0.0.1");
    conf.setInt(YarnConfiguration.NM_PMEM_MB, nodeMemoryMb);
    // MiniYARNCluster sets each NodeManager's memory from its own key (4096 MB unless told), not
    // NM_PMEM_MB.
    conf.setInt(YarnConfiguration.YARN_MINICLUSTER_NM_PMEM_MB, nodeMemoryMb);
    conf.setInt(YarnConfiguration.NM_VCORES, 8);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    conf.setBoolean("mapreduce.jobhistory.minicluster.enabled", false);
    conf.set("mapreduce.jobhistory.intermediate-done-dir", history.getPath());
    conf.set("mapreduce.jobhistory.done-dir", new File(history, "done").getPath());
    // The task containers' java: this JVM's.
    conf.set(
        YarnConfiguration.NM_ADMIN_USER_ENV,
        "MALLOC_ARENA_MAX=4,JAVA_HOME=" + System.getProperty("java.home"));
    return conf;
  }

  static boolean runJob(String job, Configuration conf, String[] jobArgs) throws Exception {
    if (job.equals("terasort")) {
      return ToolRunner.run(new JobConf(conf), new TeraSort(), jobArgs) == 0;
    }
    String[] rest = new GenericOptionsParser(conf, jobArgs).getRemainingArgs();
    if (rest.length != 2) {
      throw new IllegalArgumentException(
          "wordcount: INPUT OUTPUT after the -D options, got " + rest.length);
    }
    Job j = Job.getInstance(conf, "word count");
    j.setJarByClass(WordCount.class);
    j.setMapperClass(WordCount.TokenizerMapper.class);
    j.setCombinerClass(WordCount.IntSumReducer.class);
    j.setReducerClass(WordCount.IntSumReducer.class);
    j.setOutputKeyClass(Text.class);
    j.setOutputValueClass(IntWritable.class);
    FileInputFormat.addInputPath(j, new org.apache.hadoop.fs.Path(rest[0]));
    FileOutputFormat.setOutputPath(j, new org.apache.hadoop.fs.Path(rest[1]));
    return j.waitForCompletion(false);
  }

  /** The one history file the last job added (the AM writes it on completion). */
  static File newHistoryFile(File history, Set<String> seen) throws Exception {
    return ClusterJob.newHistoryFile(
        history, p -> p.toString().endsWith(".jhist"), f -> false, seen);
  }

  private static void report(
      int k,
      File jhist,
      Map<Integer, String> nodeByPort,
      List<File> logDirs,
      FadviseCounter counter,
      Map<String, Map<String, Long>> before,
      long readBytes)
      throws Exception {
    JobHistoryParser.JobInfo info =
        new JobHistoryParser(
                FileSystem.getLocal(new Configuration()),
                new org.apache.hadoop.fs.Path(jhist.getAbsolutePath()))
            .parse();
    ClusterJob out = new ClusterJob();
    for (JobHistoryParser.TaskAttemptInfo t : info.getAllCompletedTaskAttempts().values()) {
      if (!"SUCCEEDED".equals(t.getTaskStatus())) {
        continue;
      }
      String node = nodeByPort.getOrDefault(t.getPort(), "unknown");
      if (t.getTaskType() == TaskType.MAP) {
        out.map(node, t.getStartTime(), t.getFinishTime());
      } else if (t.getTaskType() == TaskType.REDUCE) {
        out.reduce(
            t.getAttemptId().toString(),
            node,
            t.getStartTime(),
            t.getShuffleFinishTime(),
            t.getFinishTime());
      }
    }
    out.line(
            k,
            info.getJobId().toString(),
            info.getJobStatus(),
            info.getLaunchTime(),
            info.getFinishTime(),
            info.getTotalMaps(),
            info.getTotalReduces(),
            AdviceCounts.difference(before, counter.snapshot()),
            readBytes,
            waitLines(logDirs, info.getJobId().toString()),
            counters(info.getTotalCounters()))
        .print();
  }

  /** Lines of the application's task logs where a reducer's merge manager said WAIT. */
  static long waitLines(List<File> logDirs, String jobId) throws IOException {
    String app = "application_" + jobId.substring(jobId.indexOf('_') + 1);
    long n = 0;
    for (File dir : logDirs) {
      Path appDir = new File(dir, app).toPath();
      if (!Files.isDirectory(appDir)) {
        continue;
      }
      try (Stream<Path> files = Files.walk(appDir)) {
        for (Path p : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
          try (Stream<String> lines = Files.lines(p, StandardCharsets.ISO_8859_1)) {
            n += lines.filter(l -> l.contains(WAIT_LINE)).count();
          }
        }
      }
    }
    return n;
  }

  static Map<String, Map<String, Long>> counters(Counters counters) {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    for (CounterGroup group : counters) {
      Map<String, Long> g = new TreeMap<>();
      for (Counter c : group) {
        g.put(c.getDisplayName(), c.getValue());
      }
      out.put(group.getDisplayName(), g);
    }
    return out;
  }
}
