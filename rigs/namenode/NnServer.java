package tunelab.rigs.namenode;

import java.io.File;
import java.net.InetSocketAddress;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.server.namenode.EditLogFileOutputStream;
import org.apache.hadoop.hdfs.server.namenode.NameNode;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import tunelab.rigs.matrix.DriverArgs;
import tunelab.rigs.matrix.JsonLine;

/**
 * A NameNode for the RPC mode: formats a fresh name directory, starts the NameNode with the
 * configuration the rig wrote (hdfs-site.xml on the classpath: loopback RPC and HTTP addresses,
 * handlers, readers, call queue), prints one JSON line with its addresses once it serves, and runs
 * until it is stopped (SIGTERM).
 *
 * <p>Usage: NnServer --name-dir DIR [--skip-fsync]
 *
 * <p>Why not the NameNode's own main: the name directory must be formatted first, and taking the
 * disk out of write operations needs the test hook
 * EditLogFileOutputStream.setShouldSkipFsyncForTesting, which only code in the NameNode's JVM can
 * call.
 */
public final class NnServer {
  private NnServer() {}

  public static void main(String[] args) throws Exception {
    DriverArgs a =
        new DriverArgs("NnServer", "NnServer --name-dir DIR [--skip-fsync]")
            .option("--name-dir", 1)
            .option("--skip-fsync", 0)
            .parse(args);
    String nameDir = a.required("--name-dir");
    boolean skipFsync = a.flag("--skip-fsync");
    HdfsConfiguration conf = new HdfsConfiguration();
    String dir = new File(nameDir).getAbsoluteFile().toURI().toString();
    conf.set("dfs.namenode.name.dir", dir);
    conf.set("dfs.namenode.edits.dir", dir);
    if (skipFsync) {
      EditLogFileOutputStream.setShouldSkipFsyncForTesting(true);
    }
    NameNode nameNode;
    try {
      NameNode.format(conf);
      // Formatting registered metrics sources (e.g. the retry cache's) that the NameNode registers
      // again.
      DefaultMetricsSystem.setMiniClusterMode(true);
      nameNode = NameNode.createNameNode(new String[0], conf);
    } catch (Throwable t) {
      t.printStackTrace();
      System.out.flush();
      Runtime.getRuntime().halt(1);
      return;
    }
    if (nameNode.getNamesystem().isInSafeMode()) {
      // The rig's configuration sets every safe-mode threshold to zero; a NameNode still in safe
      // mode
      // would refuse the benchmark's writes, so say it rather than serve.
      System.err.println(
          "NnServer: the NameNode is in safe mode after start-up; check dfs.namenode.safemode.*");
      Runtime.getRuntime().halt(3);
    }
    InetSocketAddress rpc = nameNode.getNameNodeAddress();
    InetSocketAddress http = nameNode.getHttpAddress();
    JsonLine.event("serving")
        .put("rpc_port", rpc.getPort())
        .put("http_port", http.getPort())
        .put("skip_fsync", skipFsync)
        .print();
    nameNode.join();
  }
}
