package tunelab.rigs.mapreduce;

import static org.junit.Assert.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.RandomAccessFile;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import org.apache.hadoop.mapred.FadvisedFileRegion;
import org.junit.Test;

/**
 * Issue 62's known answer, on the shuffle server's own file region (hadoop-mapreduce-client-shuffle
 * 3.4.2): the stock shuffle advises DONTNEED once per map output sent whole, and never for one a
 * reducer dropped part way (case study 002's fix), so with no early disconnects the count is the
 * fetches served.
 */
public class ShuffleFadviseTest {
  private static final int BYTES = 1 << 16;

  private static long send(FadvisedFileRegion region, long upTo) throws Exception {
    WritableByteChannel sink = Channels.newChannel(new ByteArrayOutputStream());
    long sent = 0;
    while (sent < upTo) {
      sent += region.transferTo(sink, sent);
    }
    return sent;
  }

  @Test
  public void stockAdvisesDontneedOncePerWholeFetchAndNeverOnADroppedOne() throws Exception {
    FadviseCounterTest.RecordingLibC libc = new FadviseCounterTest.RecordingLibC();
    FadviseCounter counter = FadviseCounter.install(libc);
    File mapOutput = mapOutputOfNode(counter, "nm-0");
    for (int fetch = 0; fetch < 3; fetch++) { // three reducers fetch it whole
      FadvisedFileRegion region = region(mapOutput);
      assertEquals(BYTES, send(region, BYTES));
      region.transferSuccessful();
      region.release();
    }
    FadvisedFileRegion dropped = region(mapOutput); // a reducer that disconnects half way
    send(dropped, BYTES / 2);
    dropped.release();
    assertEquals("{nm-0={dontneed=3}}", counter.snapshot().toString());
    // each advice reached the C library as Linux's DONTNEED (4), over the whole map output
    assertEquals(3, libc.calls.size());
    assertEquals(4, libc.calls.get(2)[3]);
    assertEquals(BYTES, libc.calls.get(2)[2]);
  }

  /**
   * The upstream finding (rigs/mapreduce/UPSTREAM.md): in the order Netty 4 runs them on a real
   * shuffle server, the written region is released (deallocate closes its file) before the write's
   * listener calls transferSuccessful(), whose advice then finds the descriptor closed and gives
   * none: stock 3.4.2 advises nothing for outputs sent whole.
   */
  @Test
  public void stockAdvisesNothingWhenTheRegionIsReleasedBeforeItsListenerRunsAsNetty4Does()
      throws Exception {
    FadviseCounterTest.RecordingLibC libc = new FadviseCounterTest.RecordingLibC();
    FadviseCounter counter = FadviseCounter.install(libc);
    File mapOutput = mapOutputOfNode(counter, "nm-0");
    for (int fetch = 0; fetch < 3; fetch++) { // three reducers fetch it whole
      FadvisedFileRegion region = region(mapOutput);
      assertEquals(BYTES, send(region, BYTES));
      region.release(); // Netty 4: the message is released once written ...
      region.transferSuccessful(); // ... then the listener is told
    }
    assertEquals("{}", counter.snapshot().toString());
    assertEquals(0, libc.calls.size());
  }

  /** A map output of BYTES in a node's own folder, the node known to the counter. */
  private static File mapOutputOfNode(FadviseCounter counter, String node) throws Exception {
    File dir =
        Files.createTempDirectory(new File(System.getenv("TEST_TMPDIR")).toPath(), "nm").toFile();
    File mapOutput = new File(dir, "file.out");
    Files.write(mapOutput.toPath(), new byte[BYTES]);
    counter.addNode(dir.getPath(), node);
    return mapOutput;
  }

  private static FadvisedFileRegion region(File f) throws Exception {
    // manageOsCache on, no readahead pool (it needs libhadoop), transferTo allowed
    return new FadvisedFileRegion(
        new RandomAccessFile(f, "r"), 0, BYTES, true, 0, null, f.getPath(), 1 << 16, true);
  }
}
