package tunelab.rigs.mapreduce;

import java.io.FileDescriptor;
import java.util.Map;
import org.apache.hadoop.io.nativeio.NativeIO;

/**
 * MR2's page-cache advice counted and given to the kernel (issue 62: case study 002's {@code
 * fadvise(DONTNEED)} counts per shuffle server): Hadoop 3 advises through {@code
 * NativeIO.POSIX.getCacheManipulator()}, whose own manipulator needs libhadoop, which no registry
 * serves, so without this class the shuffle's DONTNEED reaches nobody. Installed in the JVM that
 * runs the shuffle servers ({@link #install}), it hands each call to {@link AdviceCounts}.
 */
public final class FadviseCounter extends NativeIO.POSIX.CacheManipulator {
  /** The C library's call (AdviceCounts.LibC, under the name the tests know). */
  public interface LibC extends AdviceCounts.LibC {}

  private final AdviceCounts counts;

  public FadviseCounter(AdviceCounts.LibC libc) {
    this.counts = new AdviceCounts(libc);
  }

  private FadviseCounter(AdviceCounts counts) {
    this.counts = counts;
  }

  /**
   * A counter giving its advice to this process's C library, installed as Hadoop's cache
   * manipulator.
   */
  public static FadviseCounter install() {
    return install(new FadviseCounter(AdviceCounts.ofThisProcess()));
  }

  /** Installs a counter giving its advice to {@code libc}. */
  public static FadviseCounter install(AdviceCounts.LibC libc) {
    return install(new FadviseCounter(libc));
  }

  /**
   * Hadoop's advice numbers ({@code NativeIO.POSIX.POSIX_FADV_*}) are -1 until libhadoop's
   * initialisation sets the platform's: set here to Linux's, as it would, so each call says which
   * advice it is.
   */
  private static FadviseCounter install(FadviseCounter counter) {
    NativeIO.POSIX.POSIX_FADV_NORMAL = 0;
    NativeIO.POSIX.POSIX_FADV_RANDOM = 1;
    NativeIO.POSIX.POSIX_FADV_SEQUENTIAL = 2;
    NativeIO.POSIX.POSIX_FADV_WILLNEED = 3;
    NativeIO.POSIX.POSIX_FADV_DONTNEED = 4;
    NativeIO.POSIX.POSIX_FADV_NOREUSE = 5;
    NativeIO.POSIX.setCacheManipulator(counter);
    return counter;
  }

  /** Files under {@code dir} are {@code node}'s (a NodeManager's local directory). */
  public void addNode(String dir, String node) {
    counts.addNode(dir, node);
  }

  @Override
  public void posixFadviseIfPossible(
      String identifier, FileDescriptor fd, long offset, long len, int flags) {
    counts.advise(identifier, fd, offset, len, flags);
  }

  /** {node: {advice: calls}} so far. */
  public Map<String, Map<String, Long>> snapshot() {
    return counts.snapshot();
  }

  /** Calls counted but never given to the kernel. */
  public long unreachable() {
    return counts.unreachable();
  }

  /** Calls the kernel refused. */
  public long failed() {
    return counts.failed();
  }
}
