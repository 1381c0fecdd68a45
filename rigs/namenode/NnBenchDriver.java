package tunelab.rigs.namenode;

import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.server.namenode.EditLogFileOutputStream;
import org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark;
import org.apache.hadoop.hdfs.server.namenode.NameNode;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import tunelab.rigs.matrix.DriverArgs;
import tunelab.rigs.matrix.DriverMain;
import tunelab.rigs.matrix.Iterations;
import tunelab.rigs.matrix.JsonLine;

/**
 * Runs NNThroughputBenchmark in-process (no RPC) against a freshly formatted name directory.
 *
 * <p>Usage: NnBenchDriver --name-dir DIR [--skip-fsync] [--iterations WARMUP MEASURED] --
 * BENCHMARK_ARGS...
 *
 * <p>Why a driver: the name directory must be formatted first, and taking the disk out of write
 * operations needs the test hook EditLogFileOutputStream.setShouldSkipFsyncForTesting, which only
 * code in the same JVM can call.
 *
 * <p>With --iterations the benchmark runs WARMUP + MEASURED times in this JVM, each on a freshly
 * formatted name directory (a new, empty namespace), so the JIT's warm-up falls in the first ones.
 * Each iteration's report follows a line {"event":"iteration","index":K,"warmup":true|false} and is
 * followed by the iteration's cost ({"event":"cost",...}: see tunelab.rigs.matrix.IterationCost).
 */
public final class NnBenchDriver {
  private NnBenchDriver() {}

  /**
   * The configuration of a NameNode formatted and run in this JVM (name and edits in `nameDir`, RPC
   * and web UI on free loopback ports); with `skipFsync` the edit log skips fsync (a test hook).
   */
  static Configuration inProcessConf(String nameDir, boolean skipFsync) {
    Configuration conf = new HdfsConfiguration();
    String dir = new File(nameDir).getAbsoluteFile().toURI().toString();
    conf.set(DFSConfigKeys.DFS_NAMENODE_NAME_DIR_KEY, dir);
    conf.set(DFSConfigKeys.DFS_NAMENODE_EDITS_DIR_KEY, dir);
    conf.set(DFSConfigKeys.DFS_NAMENODE_HTTP_ADDRESS_KEY, "127.0.0.1:0");
    conf.set(DFSConfigKeys.DFS_NAMENODE_RPC_ADDRESS_KEY, "127.0.0.1:0");
    if (skipFsync) {
      EditLogFileOutputStream.setShouldSkipFsyncForTesting(true);
    }
    // Formatting and the NameNode run in one JVM: let both register their metrics sources.
    DefaultMetricsSystem.setMiniClusterMode(true);
    return conf;
  }

  /**
   * Deletes everything under `dir` (a previous iteration's namespace) and keeps `dir` itself: it
   * may be the runner's link to a folder in memory. Absent is fine.
   */
  static void clearTree(File dir) throws java.io.IOException {
    File[] children = dir.listFiles();
    if (children == null) {
      return;
    }
    for (File child : children) {
      clearTree(child);
      if (!child.delete()) {
        throw new java.io.IOException("cannot delete " + child);
      }
    }
  }

  public static void main(String[] args) throws Exception {
    DriverArgs a =
        new DriverArgs(
                "NnBenchDriver",
                "NnBenchDriver --name-dir DIR [--skip-fsync] [--iterations WARMUP MEASURED] --"
                    + " BENCHMARK_ARGS...")
            .option("--name-dir", 1)
            .option("--skip-fsync", 0)
            .option("--iterations", 2)
            .restAfterDashDash()
            .parse(args);
    String nameDir = a.required("--name-dir");
    boolean skipFsync = a.flag("--skip-fsync");
    int warmup = a.integer("--iterations", 0, 0);
    int measured = a.integer("--iterations", 1, 0);
    a.check(warmup >= 0 && measured >= 0, "--iterations: expected WARMUP >= 0 and MEASURED >= 0");
    String[] benchArgs = a.rest().toArray(new String[0]);
    Configuration conf = inProcessConf(nameDir, skipFsync);
    JsonLine.event("start").put("skip_fsync", skipFsync).print();
    DriverMain.runAndHalt(
        () -> {
          if (measured == 0) {
            NameNode.format(conf);
            NNThroughputBenchmark.runBenchmark(conf, benchArgs);
          } else {
            Iterations.run(
                warmup,
                measured,
                k -> {
                  clearTree(new File(nameDir));
                  NameNode.format(conf);
                },
                k -> NNThroughputBenchmark.runBenchmark(conf, benchArgs));
          }
          JsonLine.event("end").print();
        });
  }
}
