package tunelab.rigs.mapreduce;

import static net.bytebuddy.matcher.ElementMatchers.named;

import java.io.FileDescriptor;
import java.lang.instrument.Instrumentation;
import java.util.Map;
import net.bytebuddy.agent.ByteBuddyAgent;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import org.apache.hadoop.io.nativeio.NativeIO;

/**
 * MR1's page-cache advice counted and given to the kernel: hadoop-core 1.2.1's TaskTracker advises
 * through the static {@code NativeIO.posixFadviseIfPossible}, which does nothing without libhadoop
 * (no registry serves it) and offers no hook (MR2's {@code CacheManipulator} came later), and 1.2.1
 * has no sources jar to patch one in. So Byte Buddy adds one call at the method's entry: where
 * libhadoop is not loaded (where the method does nothing) the call goes to {@link AdviceCounts},
 * which counts it by node and advice and makes the real {@code posix_fadvise(2)} through JNA; where
 * it is loaded the added call does nothing and the method advises as before. Instrumentation of
 * every MR1 cluster cell, not a change under study. {@link #install} must run before NativeIO is
 * loaded (the driver's first act); the JVM needs {@code -Djdk.attach.allowAttachSelf=true}.
 */
public final class Mr1FadviseCounter {
  /** Where the added call goes (public: the advice runs inside NativeIO). */
  public static volatile AdviceCounts counts;

  private Mr1FadviseCounter() {}

  /** Counts giving their advice to this process's C library, hooked into MR1's NativeIO. */
  public static AdviceCounts install() {
    counts = AdviceCounts.ofThisProcess();
    Instrumentation instrumentation = ByteBuddyAgent.install();
    new AgentBuilder.Default()
        .disableClassFormatChanges()
        .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
        .type(named("org.apache.hadoop.io.nativeio.NativeIO"))
        .transform(
            (builder, type, loader, module, domain) ->
                builder.visit(Advice.to(Entry.class).on(named("posixFadviseIfPossible"))))
        .installOn(instrumentation);
    if (NativeIO.isAvailable()) {
      counts = null; // libhadoop is loaded: Hadoop advises by itself, nothing to count here
    }
    return counts;
  }

  /** The code added at the entry of {@code NativeIO.posixFadviseIfPossible}. */
  public static final class Entry {
    private Entry() {}

    @Advice.OnMethodEnter
    static void enter(
        @Advice.Argument(0) FileDescriptor fd,
        @Advice.Argument(1) long offset,
        @Advice.Argument(2) long len,
        @Advice.Argument(3) int flags) {
      AdviceCounts c = Mr1FadviseCounter.counts;
      if (c != null) {
        c.advise(null, fd, offset, len, flags);
      }
    }
  }

  /** {node: {advice: calls}} so far (empty where libhadoop advises by itself). */
  public static Map<String, Map<String, Long>> snapshot() {
    AdviceCounts c = counts;
    return c == null ? Map.of() : c.snapshot();
  }
}
