package tunelab.rigs.mapreduce;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.io.FileDescriptor;
import java.lang.reflect.Field;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.io.nativeio.NativeIO;

/**
 * Counts the page-cache advice Hadoop gives (issue 62: case study 002's {@code fadvise(DONTNEED)}
 * counts per shuffle server) and gives it to the kernel.
 *
 * <p>Hadoop advises through {@code NativeIO.POSIX.getCacheManipulator()}; its own manipulator needs
 * libhadoop, which no registry serves, so without this class the shuffle's DONTNEED reaches nobody.
 * Installed in the JVM that runs the shuffle servers ({@link #install}), it counts each call by
 * advice and by node (the node whose local directory holds the advised file) and makes the real
 * {@code posix_fadvise(2)} through JNA: the counts are a deterministic companion of the shuffle
 * (one DONTNEED per map output fetched whole, when no reducer disconnects early), the advice a real
 * effect on the page cache.
 *
 * <p>Why reflection: a {@link FileDescriptor}'s number is private; the JVM must run with {@code
 * --add-opens java.base/java.io=ALL-UNNAMED}. Without it every call is still counted, and {@link
 * #unreachable} says how many never reached the kernel (the driver reports it as a problem, never
 * as advice given).
 */
public final class FadviseCounter extends NativeIO.POSIX.CacheManipulator {
  /** Linux's advice numbers (fcntl.h), the names the counts are reported under. */
  static final String[] ADVICE = {
    "normal", "random", "sequential", "willneed", "dontneed", "noreuse"
  };

  /** The C library's call; it returns an error number, 0 on success (not -1 and errno). */
  public interface LibC extends Library {
    int posix_fadvise(int fd, long offset, long len, int advice);
  }

  private final LibC libc;
  private final Map<String, String> nodeByDir = new ConcurrentHashMap<>();
  private final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();
  private final AtomicLong unreachable = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private static final Field FD_FIELD = fdField();

  public FadviseCounter(LibC libc) {
    this.libc = libc;
  }

  /**
   * A counter giving its advice to this process's C library, installed as Hadoop's cache
   * manipulator.
   */
  public static FadviseCounter install() {
    return install(Native.load("c", LibC.class));
  }

  /**
   * Installs a counter giving its advice to {@code libc}. Hadoop's advice numbers ({@code
   * NativeIO.POSIX.POSIX_FADV_*}) are -1 until libhadoop's initialisation sets the platform's: set
   * here to Linux's, as it would, so each call says which advice it is.
   */
  public static FadviseCounter install(LibC libc) {
    NativeIO.POSIX.POSIX_FADV_NORMAL = 0;
    NativeIO.POSIX.POSIX_FADV_RANDOM = 1;
    NativeIO.POSIX.POSIX_FADV_SEQUENTIAL = 2;
    NativeIO.POSIX.POSIX_FADV_WILLNEED = 3;
    NativeIO.POSIX.POSIX_FADV_DONTNEED = 4;
    NativeIO.POSIX.POSIX_FADV_NOREUSE = 5;
    FadviseCounter counter = new FadviseCounter(libc);
    NativeIO.POSIX.setCacheManipulator(counter);
    return counter;
  }

  /**
   * Files under {@code dir} are {@code node}'s (a NodeManager's or TaskTracker's local directory).
   */
  public void addNode(String dir, String node) {
    nodeByDir.put(dir.endsWith("/") ? dir : dir + "/", node);
  }

  @Override
  public void posixFadviseIfPossible(
      String identifier, FileDescriptor fd, long offset, long len, int flags) {
    String advice = flags >= 0 && flags < ADVICE.length ? ADVICE[flags] : "advice" + flags;
    counts
        .computeIfAbsent(nodeOf(identifier) + "\t" + advice, k -> new AtomicLong())
        .incrementAndGet();
    int number = fdNumber(fd);
    if (number < 0) {
      unreachable.incrementAndGet();
      return;
    }
    if (libc.posix_fadvise(number, offset, len, flags) != 0) {
      failed.incrementAndGet();
    }
  }

  private String nodeOf(String identifier) {
    String best = "";
    String node = "other";
    for (Map.Entry<String, String> e : nodeByDir.entrySet()) {
      if (identifier != null
          && identifier.startsWith(e.getKey())
          && e.getKey().length() > best.length()) {
        best = e.getKey();
        node = e.getValue();
      }
    }
    return node;
  }

  /** {node: {advice: calls}} so far. */
  public Map<String, Map<String, Long>> snapshot() {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    counts.forEach(
        (key, n) -> {
          String[] parts = key.split("\t", 2);
          out.computeIfAbsent(parts[0], k -> new TreeMap<>()).put(parts[1], n.get());
        });
    return out;
  }

  /** Calls counted but never given to the kernel (a descriptor whose number could not be read). */
  public long unreachable() {
    return unreachable.get();
  }

  /** Calls the kernel refused (posix_fadvise returned an error number). */
  public long failed() {
    return failed.get();
  }

  private static int fdNumber(FileDescriptor fd) {
    if (fd == null || FD_FIELD == null) {
      return -1;
    }
    try {
      return FD_FIELD.getInt(fd);
    } catch (IllegalAccessException e) {
      return -1;
    }
  }

  private static Field fdField() {
    try {
      Field f = FileDescriptor.class.getDeclaredField("fd");
      f.setAccessible(true);
      return f;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null; // InaccessibleObjectException without --add-opens: counted as unreachable
    }
  }
}
