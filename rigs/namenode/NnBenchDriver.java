package tunelab.rigs.namenode;

import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.server.namenode.EditLogFileOutputStream;
import org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark;
import org.apache.hadoop.hdfs.server.namenode.NameNode;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;

/**
 * Runs NNThroughputBenchmark in-process (no RPC) against a freshly formatted name directory.
 *
 * <p>Usage: NnBenchDriver --name-dir DIR [--skip-fsync] -- BENCHMARK_ARGS...
 *
 * <p>Why a driver: the name directory must be formatted first, and taking the disk out of write
 * operations needs the test hook EditLogFileOutputStream.setShouldSkipFsyncForTesting, which only code
 * in the same JVM can call.
 */
public final class NnBenchDriver {
  private NnBenchDriver() {}

  /**
   * The configuration of a NameNode formatted and run in this JVM (name and edits in `nameDir`, RPC and
   * web UI on free loopback ports); with `skipFsync` the edit log skips fsync (a test hook).
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

  public static void main(String[] args) throws Exception {
    String nameDir = null;
    boolean skipFsync = false;
    int i = 0;
    for (; i < args.length; i++) {
      if (args[i].equals("--")) {
        i++;
        break;
      }
      switch (args[i]) {
        case "--name-dir": nameDir = args[++i]; break;
        case "--skip-fsync": skipFsync = true; break;
        default:
          System.err.println("NnBenchDriver: unknown argument " + args[i]);
          System.exit(2);
      }
    }
    if (nameDir == null) {
      System.err.println("usage: NnBenchDriver --name-dir DIR [--skip-fsync] -- BENCHMARK_ARGS...");
      System.exit(2);
    }
    String[] benchArgs = java.util.Arrays.copyOfRange(args, i, args.length);
    Configuration conf = inProcessConf(nameDir, skipFsync);
    System.out.println("{\"event\":\"start\",\"skip_fsync\":" + skipFsync + "}");
    int status = 1;
    try {
      NameNode.format(conf);
      NNThroughputBenchmark.runBenchmark(conf, benchArgs);
      System.out.println("{\"event\":\"end\"}");
      status = 0;
    } catch (Throwable t) {
      t.printStackTrace();
    } finally {
      System.out.flush();
      // Non-daemon threads of the NameNode would keep a failed run alive until the runner's timeout.
      Runtime.getRuntime().halt(status);
    }
  }
}
