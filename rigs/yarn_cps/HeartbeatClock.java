package tunelab.rigs.yarn_cps;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Drives the heartbeats of every {@link LeanNodeManager} with a few threads and no priority queue.
 *
 * <p>Why no queue: every simulated NodeManager heartbeats at the same interval, each at its own
 * offset in it (drawn as SLS draws it, uniformly in [0, interval)), so the order of heartbeats
 * within an interval never changes. A thread walks its nodes sorted by offset, round after round; a
 * heartbeat is due at {@code start + offset + round x interval} exactly as SLS's task runner would
 * run it (first one interval after the offset, fixed rate, late ones run at once so the rate
 * catches up). SLS keeps ~20,000 of these in one DelayQueue served by a pool of 100 threads: 19 %
 * of the pool's samples sat in the queue's heap. Node i goes to thread i mod threads, so each
 * thread's heartbeats are spread over the whole interval.
 */
final class HeartbeatClock {
  private final List<LeanNodeManager> nodes;
  private final long intervalMs;
  private final int threads;
  private final AtomicLong heartbeats = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong maxLateMs = new AtomicLong();

  HeartbeatClock(List<LeanNodeManager> nodes, long intervalMs, int threads) {
    if (threads < 1) {
      throw new IllegalArgumentException("heartbeat threads must be >= 1, not " + threads);
    }
    this.nodes = new ArrayList<>(nodes);
    this.nodes.sort(Comparator.comparingLong(n -> n.offsetMs));
    this.intervalMs = intervalMs;
    this.threads = threads;
  }

  void start(long startMs) {
    for (int t = 0; t < threads; t++) {
      List<LeanNodeManager> mine = new ArrayList<>();
      for (int i = t; i < nodes.size(); i += threads) {
        mine.add(nodes.get(i));
      }
      Thread thread = new Thread(() -> loop(mine, startMs), "tunelab-nm-heartbeat-" + t);
      thread.setDaemon(true);
      thread.start();
    }
  }

  private void loop(List<LeanNodeManager> mine, long startMs) {
    for (long round = 1; ; round++) {
      long roundStart = startMs + round * intervalMs;
      for (LeanNodeManager nm : mine) {
        long due = roundStart + nm.offsetMs;
        long now = System.currentTimeMillis();
        if (due > now) {
          while (due > now) { // parkNanos may return early
            LockSupport.parkNanos((due - now) * 1_000_000L);
            now = System.currentTimeMillis();
          }
        } else if (now - due > maxLateMs.get()) {
          maxLateMs.accumulateAndGet(now - due, Math::max);
        }
        try {
          nm.heartbeat(now);
          heartbeats.incrementAndGet();
        } catch (Exception e) {
          // SLS prints and goes on with the node's next heartbeat; so does this, counting it.
          if (failures.incrementAndGet() <= 10) {
            e.printStackTrace();
          }
        }
      }
    }
  }

  long heartbeats() {
    return heartbeats.get();
  }

  long failures() {
    return failures.get();
  }

  long maxLateMs() {
    return maxLateMs.get();
  }
}
