package tunelab.rigs.mapreduce;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;

import com.sun.jna.Native;
import java.io.File;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.io.nativeio.NativeIO;
import org.junit.Test;

/**
 * The counter counts Hadoop's advice by node and advice, and gives each call, as Hadoop made it, to
 * the kernel.
 */
public class FadviseCounterTest {
  private static final int DONTNEED = 4;
  private static final int WILLNEED = 3;

  /** What a C library was asked (the arguments as they reach posix_fadvise). */
  static final class RecordingLibC implements FadviseCounter.LibC {
    final List<long[]> calls = new ArrayList<>();

    @Override
    public int posix_fadvise(int fd, long offset, long len, int advice) {
      calls.add(new long[] {fd, offset, len, advice});
      return 0;
    }
  }

  private static File tempFile(File dir, String name, int bytes) throws Exception {
    File f = new File(dir, name);
    Files.write(f.toPath(), new byte[bytes]);
    return f;
  }

  @Test
  public void countsByNodeAndAdviceAndPassesTheCallOnAsMade() throws Exception {
    File root =
        Files.createTempDirectory(new File(System.getenv("TEST_TMPDIR")).toPath(), "fadv").toFile();
    File nm0 = new File(root, "nm-0/usercache");
    File nm1 = new File(root, "nm-1/usercache");
    nm0.mkdirs();
    nm1.mkdirs();
    RecordingLibC libc = new RecordingLibC();
    FadviseCounter counter = new FadviseCounter(libc);
    counter.addNode(new File(root, "nm-0").getPath(), "nm-0");
    counter.addNode(new File(root, "nm-1").getPath(), "nm-1");
    File out0 = tempFile(nm0, "file.out", 8192);
    File out1 = tempFile(nm1, "file.out", 4096);
    try (RandomAccessFile f0 = new RandomAccessFile(out0, "r");
        RandomAccessFile f1 = new RandomAccessFile(out1, "r")) {
      counter.posixFadviseIfPossible(out0.getPath(), f0.getFD(), 0, 4096, DONTNEED);
      counter.posixFadviseIfPossible(out0.getPath(), f0.getFD(), 4096, 4096, DONTNEED);
      counter.posixFadviseIfPossible(out1.getPath(), f1.getFD(), 0, 4096, WILLNEED);
      counter.posixFadviseIfPossible("/elsewhere/x", f1.getFD(), 0, 1, DONTNEED);
    }
    Map<String, Map<String, Long>> counts = counter.snapshot();
    assertEquals("{nm-0={dontneed=2}, nm-1={willneed=1}, other={dontneed=1}}", counts.toString());
    assertEquals(4, libc.calls.size());
    assertEquals(4096, libc.calls.get(1)[1]); // offset
    assertEquals(4096, libc.calls.get(1)[2]); // length
    assertEquals(DONTNEED, libc.calls.get(1)[3]);
    // The descriptor's own number reached the call (read through --add-opens java.base/java.io).
    assertEquals(libc.calls.get(0)[0], libc.calls.get(1)[0]);
    assertEquals(0, counter.unreachable());
  }

  @Test
  public void theRealCallReachesTheKernel() throws Exception {
    FadviseCounter.LibC libc = Native.load("c", FadviseCounter.LibC.class);
    // posix_fadvise returns the error number itself: EBADF (9) on a descriptor that is not open, 0
    // on one that is.
    assertEquals(9, libc.posix_fadvise(-1, 0, 0, DONTNEED));
    File f = tempFile(new File(System.getenv("TEST_TMPDIR")), "real.out", 4096);
    FadviseCounter counter = new FadviseCounter(libc);
    try (RandomAccessFile raf = new RandomAccessFile(f, "r")) {
      counter.posixFadviseIfPossible(f.getPath(), raf.getFD(), 0, 4096, DONTNEED);
    }
    assertEquals(0, counter.failed());
    assertEquals(0, counter.unreachable());
    assertEquals("{other={dontneed=1}}", counter.snapshot().toString());
  }

  @Test
  public void installingMakesItHadoopsCacheManipulatorWithLinuxsAdviceNumbers() {
    FadviseCounter counter = FadviseCounter.install();
    assertSame(counter, NativeIO.POSIX.getCacheManipulator());
    assertEquals(DONTNEED, NativeIO.POSIX.POSIX_FADV_DONTNEED);
    assertEquals(WILLNEED, NativeIO.POSIX.POSIX_FADV_WILLNEED);
  }
}
