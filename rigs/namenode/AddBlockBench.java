package tunelab.rigs.namenode;

import java.io.File;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.crypto.CryptoProtocolVersion;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.protocol.BlockListAsLongs;
import org.apache.hadoop.hdfs.protocol.DatanodeID;
import org.apache.hadoop.hdfs.protocol.HdfsConstants;
import org.apache.hadoop.hdfs.security.token.block.ExportedBlockKeys;
import org.apache.hadoop.hdfs.server.common.HdfsServerConstants.NodeType;
import org.apache.hadoop.hdfs.server.common.StorageInfo;
import org.apache.hadoop.hdfs.server.namenode.NameNode;
import org.apache.hadoop.hdfs.server.protocol.BlockReportContext;
import org.apache.hadoop.hdfs.server.protocol.DatanodeRegistration;
import org.apache.hadoop.hdfs.server.protocol.DatanodeStorage;
import org.apache.hadoop.hdfs.server.protocol.NamenodeProtocols;
import org.apache.hadoop.hdfs.server.protocol.NamespaceInfo;
import org.apache.hadoop.hdfs.server.protocol.SlowDiskReports;
import org.apache.hadoop.hdfs.server.protocol.SlowPeerReports;
import org.apache.hadoop.hdfs.server.protocol.StorageBlockReport;
import org.apache.hadoop.hdfs.server.protocol.StorageReport;
import org.apache.hadoop.io.EnumSetWritable;
import org.apache.hadoop.util.VersionInfo;
import tunelab.rigs.matrix.DriverArgs;
import tunelab.rigs.matrix.DriverMain;
import tunelab.rigs.matrix.Iterations;
import tunelab.rigs.matrix.JsonLine;

/**
 * The operation NNThroughputBenchmark 3.4.2 does not time: block allocation. In-process, like the
 * benchmark: formats a fresh name directory, starts a NameNode, registers simulated datanodes (a
 * registration, an empty first block report and a heartbeat with free space each), then T threads
 * each create files and ask for their first block (ClientProtocol.addBlock, the path that logs
 * "BLOCK* allocate" under the namesystem write lock). Prints a stats block laid out like
 * NNThroughputBenchmark's ("--- addBlock stats ---", under its own name), so the rig parses both
 * alike.
 *
 * <p>Usage: AddBlockBench --name-dir DIR [--skip-fsync] [--iterations WARMUP MEASURED] [-threads T]
 * [-files N] [-datanodes D]
 *
 * <p>With --iterations all of it runs WARMUP + MEASURED times in this JVM, each on a freshly
 * formatted name directory with a new NameNode (the previous one stopped), so the JIT's warm-up
 * falls in the first ones. Each iteration's stats block follows
 * {"event":"iteration","index":K,"warmup":true|false} and is followed by its cost line
 * (tunelab.rigs.matrix.IterationCost), which covers the timed part only: the threads that create
 * files and allocate their blocks, not the NameNode's start.
 */
public final class AddBlockBench {
  private AddBlockBench() {}

  private static final long CAPACITY = 100L << 40;

  public static void main(String[] args) throws Exception {
    DriverArgs a =
        new DriverArgs(
                "AddBlockBench",
                "AddBlockBench --name-dir DIR [--skip-fsync] [--iterations WARMUP MEASURED] "
                    + "[-threads T] [-files N>=T] [-datanodes D]")
            .option("--name-dir", 1)
            .option("--skip-fsync", 0)
            .option("--iterations", 2)
            .option("-threads", 1)
            .option("-files", 1)
            .option("-datanodes", 1)
            .parse(args);
    String dir = a.required("--name-dir");
    boolean noFsync = a.flag("--skip-fsync");
    int threadCount = a.integer("-threads", 0, 2);
    int fileCount = a.integer("-files", 0, 10000);
    int datanodeCount = a.integer("-datanodes", 0, 3);
    int warmup = a.integer("--iterations", 0, 0);
    int measured = a.integer("--iterations", 1, 0);
    a.check(
        threadCount >= 1 && fileCount >= threadCount && datanodeCount >= 1,
        "expected -threads >= 1, -files >= -threads, -datanodes >= 1");
    a.check(warmup >= 0 && measured >= 0, "--iterations: expected WARMUP >= 0 and MEASURED >= 0");
    DriverMain.runAndHalt(
        () -> {
          Configuration conf = conf(dir, noFsync);
          if (measured == 0) {
            NameNode.format(conf);
            allocate(start(conf, datanodeCount), threadCount, fileCount, datanodeCount);
            return;
          }
          NameNode[] running = new NameNode[1];
          Iterations.run(
              warmup,
              measured,
              k -> {
                NnBenchDriver.clearTree(new File(dir));
                NameNode.format(conf);
                running[0] = start(conf, datanodeCount);
              },
              k -> allocate(running[0], threadCount, fileCount, datanodeCount),
              k -> {
                running[0].stop();
                running[0].join();
              });
          JsonLine.event("end").print();
        });
  }

  private static Configuration conf(String nameDir, boolean skipFsync) {
    Configuration conf = NnBenchDriver.inProcessConf(nameDir, skipFsync);
    conf.setLong(DFSConfigKeys.DFS_NAMENODE_MIN_BLOCK_SIZE_KEY, 0);
    conf.setInt(DFSConfigKeys.DFS_NAMENODE_SAFEMODE_MIN_DATANODES_KEY, 0);
    conf.setInt(DFSConfigKeys.DFS_NAMENODE_SAFEMODE_EXTENSION_KEY, 0);
    // Simulated datanodes never heartbeat again: keep them live for the whole run.
    conf.setLong(DFSConfigKeys.DFS_HEARTBEAT_INTERVAL_KEY, 3 * 60);
    return conf;
  }

  /**
   * A NameNode on the formatted name directory, with `datanodes` simulated datanodes registered.
   */
  private static NameNode start(Configuration conf, int datanodes) throws Exception {
    NameNode nameNode = NameNode.createNameNode(new String[0], conf);
    NamenodeProtocols rpc = nameNode.getRpcServer();
    NamespaceInfo ns = rpc.versionRequest();
    for (int d = 0; d < datanodes; d++) {
      DatanodeID id =
          new DatanodeID(
              "127.0.0.1",
              "sim-dn-" + d,
              UUID.randomUUID().toString(),
              40000 + d,
              DFSConfigKeys.DFS_DATANODE_HTTP_DEFAULT_PORT,
              DFSConfigKeys.DFS_DATANODE_HTTPS_DEFAULT_PORT,
              DFSConfigKeys.DFS_DATANODE_IPC_DEFAULT_PORT);
      StorageInfo storageInfo =
          new StorageInfo(
              ns.getLayoutVersion(),
              ns.getNamespaceID(),
              ns.getClusterID(),
              ns.getCTime(),
              NodeType.DATA_NODE);
      DatanodeRegistration reg =
          rpc.registerDatanode(
              new DatanodeRegistration(
                  id, storageInfo, new ExportedBlockKeys(), VersionInfo.getVersion()));
      DatanodeStorage storage = new DatanodeStorage(DatanodeStorage.generateUuid());
      rpc.blockReport(
          reg,
          ns.getBlockPoolID(),
          new StorageBlockReport[] {new StorageBlockReport(storage, BlockListAsLongs.EMPTY)},
          new BlockReportContext(1, 0, System.nanoTime(), 0L));
      rpc.sendHeartbeat(
          reg,
          new StorageReport[] {new StorageReport(storage, false, CAPACITY, 0L, CAPACITY, 0L, 0L)},
          0L,
          0L,
          0,
          0,
          0,
          null,
          true,
          SlowPeerReports.EMPTY_REPORT,
          SlowDiskReports.EMPTY_REPORT);
    }
    return nameNode;
  }

  /** T threads create `files` files and allocate each one's first block; prints the stats block. */
  private static void allocate(NameNode nameNode, int threads, int files, int datanodes)
      throws Exception {
    NamenodeProtocols rpc = nameNode.getRpcServer();
    short replication = (short) Math.min(3, datanodes);
    AtomicLong opNanos = new AtomicLong();
    List<Thread> workers = new ArrayList<>();
    Throwable[] failure = new Throwable[1];
    int perThread = files / threads;
    for (int t = 0; t < threads; t++) {
      final int me = t;
      Thread w =
          new Thread(
              () -> {
                String client = "addBlock-client-" + me;
                try {
                  for (int i = 0; i < perThread; i++) {
                    String path = "/addBlockBench/t" + me + "/d" + (i / 100) + "/f" + i;
                    rpc.create(
                        path,
                        FsPermission.getDefault(),
                        client,
                        new EnumSetWritable<>(EnumSet.of(CreateFlag.CREATE)),
                        true,
                        replication,
                        16L,
                        CryptoProtocolVersion.supported(),
                        null,
                        null);
                    long start = System.nanoTime();
                    rpc.addBlock(
                        path, client, null, null, HdfsConstants.GRANDFATHER_INODE_ID, null, null);
                    opNanos.addAndGet(System.nanoTime() - start);
                  }
                } catch (Throwable e) {
                  synchronized (failure) {
                    failure[0] = e;
                  }
                }
              },
              "addBlock-worker-" + t);
      workers.add(w);
    }
    long begin = System.currentTimeMillis();
    for (Thread w : workers) {
      w.start();
    }
    for (Thread w : workers) {
      w.join();
    }
    long elapsed = System.currentTimeMillis() - begin;
    if (failure[0] != null) {
      throw new RuntimeException("a worker failed", failure[0]);
    }
    long ops = (long) perThread * threads;
    // The layout of NNThroughputBenchmark's stats blocks, under this program's own name, so the
    // rig's
    // parser reads both (times in ms; the create before each addBlock is inside the elapsed time
    // only).
    System.out.println("AddBlockBench: --- addBlock stats  ---");
    System.out.println("AddBlockBench: # operations: " + ops);
    System.out.println("AddBlockBench: Elapsed Time: " + elapsed);
    System.out.println(
        "AddBlockBench:  Ops per sec: " + (elapsed == 0 ? 0 : 1000.0 * ops / elapsed));
    System.out.println("AddBlockBench: Average Time: " + opNanos.get() / ops / 1_000_000);
    JsonLine.event("add_block_stats").put("mean_us", opNanos.get() / ops / 1000.0).print();
  }
}
