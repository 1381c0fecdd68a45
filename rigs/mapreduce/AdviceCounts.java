package tunelab.rigs.mapreduce;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.io.FileDescriptor;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Page-cache advice counted by node and advice, and given to the kernel (issue 62): what both
 * engines' shuffle servers advise, whichever hook of theirs hands it over ({@link FadviseCounter}
 * for MR2's cache manipulator, {@link Mr1FadviseCounter} for MR1's NativeIO). No Hadoop class here,
 * so one implementation serves both engines' drivers.
 *
 * <p>Each call is counted under the node whose local folder holds the file (its path as given, or
 * read from /proc/self/fd where the hook gives only the descriptor) and made as the real {@code
 * posix_fadvise(2)} through JNA, so the counts are a deterministic companion of the shuffle and the
 * advice has its effect. A descriptor's number is private: the JVM needs {@code --add-opens
 * java.base/java.io=ALL-UNNAMED}; without it each call is still counted and {@link #unreachable}
 * says how many never reached the kernel (the driver reports it as a problem, never as advice).
 */
public final class AdviceCounts {
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

  public AdviceCounts(LibC libc) {
    this.libc = libc;
  }

  /** Counts giving their advice to this process's C library. */
  public static AdviceCounts ofThisProcess() {
    return new AdviceCounts(Native.load("c", LibC.class));
  }

  /** Files under {@code dir} are {@code node}'s (a NodeManager's or TaskTracker's local folder). */
  public void addNode(String dir, String node) {
    nodeByDir.put(dir.endsWith("/") ? dir : dir + "/", node);
  }

  /** Counts one call and makes it; {@code path} null: read from the descriptor. */
  public void advise(String path, FileDescriptor fd, long offset, long len, int flags) {
    String advice = flags >= 0 && flags < ADVICE.length ? ADVICE[flags] : "advice" + flags;
    int number = fdNumber(fd);
    String file = path != null ? path : pathOf(number);
    counts.computeIfAbsent(nodeOf(file) + "\t" + advice, k -> new AtomicLong()).incrementAndGet();
    if (number < 0) {
      unreachable.incrementAndGet();
      return;
    }
    if (libc.posix_fadvise(number, offset, len, flags) != 0) {
      failed.incrementAndGet();
    }
  }

  private String nodeOf(String file) {
    String best = "";
    String node = "other";
    for (Map.Entry<String, String> e : nodeByDir.entrySet()) {
      if (file != null && file.startsWith(e.getKey()) && e.getKey().length() > best.length()) {
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

  /** {node: {advice: calls}} of `after` less `before`, the zeros left out. */
  public static Map<String, Map<String, Long>> difference(
      Map<String, Map<String, Long>> before, Map<String, Map<String, Long>> after) {
    Map<String, Map<String, Long>> out = new TreeMap<>();
    after.forEach(
        (node, byAdvice) ->
            byAdvice.forEach(
                (advice, n) -> {
                  long was = before.getOrDefault(node, Map.of()).getOrDefault(advice, 0L);
                  if (n - was != 0) {
                    out.computeIfAbsent(node, x -> new TreeMap<>()).put(advice, n - was);
                  }
                }));
    return out;
  }

  /** read_bytes of this process (/proc/self/io): what it made the storage layer read. */
  public static long readBytes() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/io"), StandardCharsets.UTF_8)) {
      if (line.startsWith("read_bytes:")) {
        return Long.parseLong(line.substring("read_bytes:".length()).trim());
      }
    }
    throw new IOException("/proc/self/io has no read_bytes line");
  }

  private static String pathOf(int fd) {
    try {
      return fd < 0 ? null : Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString();
    } catch (IOException | UnsupportedOperationException e) {
      return null;
    }
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
