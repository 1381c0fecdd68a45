package tunelab.rigs.namenode;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.junit.Test;

/**
 * The multi-queue on its own: ordering, capacity, blocking, fairness across handlers, no lost
 * calls.
 */
public class MultiQueueTest {
  /** Calls are plain integers here; the call id is the integer itself. */
  private static MultiQueue<Integer> queue(int queues, int capacity) {
    return new MultiQueue<>(queues, capacity, Integer::intValue);
  }

  @Test
  public void callsOfOneQueueLeaveInArrivalOrder() throws Exception {
    MultiQueue<Integer> q = queue(1, 10);
    for (int i = 0; i < 10; i++) {
      q.put(i);
    }
    for (int i = 0; i < 10; i++) {
      assertEquals(Integer.valueOf(i), q.take());
    }
    assertNull(q.poll());
  }

  @Test
  public void aCallGoesToTheQueueOfItsIdAndAHandlerTakesFromItsOwnFirst() throws Exception {
    MultiQueue<Integer> q = queue(2, 8);
    q.put(3); // queue 1
    q.put(4); // queue 0
    q.put(5); // queue 1
    assertEquals(1, q.sizeOf(0));
    assertEquals(2, q.sizeOf(1));
    // This thread's home queue is the first one assigned: queue 0.
    assertEquals(Integer.valueOf(4), q.take());
    // Its own queue empty, it takes from the other one, in that queue's order.
    assertEquals(Integer.valueOf(3), q.take());
    assertEquals(Integer.valueOf(5), q.take());
    assertEquals(1, q.takenFromOwnQueue());
    assertEquals(2, q.takenFromOtherQueues());
  }

  @Test
  public void capacityIsSplitAndAFullQueueRefusesOrBlocks() throws Exception {
    MultiQueue<Integer> q = queue(2, 4); // 2 calls per queue
    assertEquals(4, q.remainingCapacity());
    assertTrue(q.offer(0));
    assertTrue(q.offer(2));
    assertFalse("queue 0 is full", q.offer(4));
    assertTrue("queue 1 still has room", q.offer(1));
    assertFalse(q.offer(6, 50, TimeUnit.MILLISECONDS));
    assertEquals(3, q.size());

    CountDownLatch putDone = new CountDownLatch(1);
    Thread producer =
        new Thread(
            () -> {
              try {
                q.put(8); // queue 0: blocks until a call leaves it
                putDone.countDown();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    producer.start();
    assertFalse("put must block on a full queue", putDone.await(200, TimeUnit.MILLISECONDS));
    assertEquals(Integer.valueOf(0), q.take());
    assertTrue("put must go on once there is room", putDone.await(5, TimeUnit.SECONDS));
    producer.join();
  }

  @Test
  public void takeBlocksUntilACallArrivesAndPollTimesOut() throws Exception {
    MultiQueue<Integer> q = queue(4, 16);
    long start = System.nanoTime();
    assertNull(q.poll(100, TimeUnit.MILLISECONDS));
    assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(90));
    AtomicReference<Integer> got = new AtomicReference<>();
    Thread handler =
        new Thread(
            () -> {
              try {
                got.set(q.take());
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    handler.start();
    Thread.sleep(100);
    assertTrue("take must block on an empty queue", handler.isAlive());
    q.put(7); // another handler's queue: the blocked one still gets it
    handler.join(5000);
    assertEquals(Integer.valueOf(7), got.get());
  }

  @Test
  public void everyHandlerTakesFromItsOwnQueueFirstAndEveryCallIsServed() throws Exception {
    int handlers = 4;
    int perHandler = 20000;
    int total = handlers * perHandler;
    MultiQueue<Integer> q = queue(handlers, total);
    for (int i = 0; i < total; i++) {
      q.put(i); // ids spread evenly: perHandler calls in each queue
    }
    int[] taken = new int[handlers];
    AtomicInteger left = new AtomicInteger(total);
    CountDownLatch homes = new CountDownLatch(handlers);
    CountDownLatch go = new CountDownLatch(1);
    // A first round in lockstep: every handler takes one call while every queue is full, so each
    // must
    // take it from its own queue whatever the scheduler does (a free-running race could let one
    // handler
    // drain the lot on a loaded machine; seen in CI).
    CountDownLatch firstTaken = new CountDownLatch(handlers);
    CountDownLatch rest = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int h = 0; h < handlers; h++) {
      final int me = h;
      Thread t =
          new Thread(
              () -> {
                try {
                  q.peek(); // claims this thread's home queue
                  homes.countDown();
                  go.await();
                  if (q.poll(10, TimeUnit.SECONDS) != null) {
                    taken[me]++;
                    left.decrementAndGet();
                  }
                  firstTaken.countDown();
                  rest.await();
                  while (left.get() > 0) {
                    if (q.poll(50, TimeUnit.MILLISECONDS) != null) {
                      taken[me]++;
                      left.decrementAndGet();
                    }
                  }
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              });
      threads.add(t);
      t.start();
    }
    homes.await();
    go.countDown();
    assertTrue("the first round did not finish", firstTaken.await(60, TimeUnit.SECONDS));
    assertEquals(
        "first calls taken from the handlers' own queues", handlers, q.takenFromOwnQueue());
    assertEquals("first calls stolen", 0, q.takenFromOtherQueues());
    rest.countDown();
    int sum = 0;
    for (int h = 0; h < handlers; h++) {
      threads.get(h).join(60000);
      assertFalse("a handler is stuck", threads.get(h).isAlive());
      assertTrue("handler " + h + " got no work", taken[h] > 0);
      sum += taken[h];
    }
    assertEquals(total, sum);
    assertEquals(total, q.takenFromOwnQueue() + q.takenFromOtherQueues());
  }

  @Test
  public void noCallIsLostOrDuplicatedUnderConcurrentProducersAndConsumers() throws Exception {
    int producers = 4;
    int consumers = 4;
    int perProducer = 50000;
    int total = producers * perProducer;
    MultiQueue<Integer> q = queue(consumers, 64); // small: producers block often
    BitSet seen = new BitSet(total);
    AtomicInteger duplicates = new AtomicInteger();
    AtomicInteger consumed = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(producers + consumers);
    List<Future<?>> futures = new ArrayList<>();
    for (int p = 0; p < producers; p++) {
      final int base = p * perProducer;
      futures.add(
          pool.submit(
              () -> {
                for (int i = 0; i < perProducer; i++) {
                  // Mix the blocking and the timed entry points, as Hadoop's server does.
                  if (i % 2 == 0) {
                    q.put(base + i);
                  } else if (!q.offer(base + i, 10, TimeUnit.SECONDS)) {
                    throw new AssertionError("offer timed out");
                  }
                }
                return null;
              }));
    }
    for (int c = 0; c < consumers; c++) {
      futures.add(
          pool.submit(
              () -> {
                while (consumed.get() < total) {
                  Integer call = q.poll(100, TimeUnit.MILLISECONDS);
                  if (call == null) {
                    continue;
                  }
                  synchronized (seen) {
                    if (seen.get(call)) {
                      duplicates.incrementAndGet();
                    }
                    seen.set(call);
                  }
                  consumed.incrementAndGet();
                }
                return null;
              }));
    }
    for (Future<?> f : futures) {
      f.get(120, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertEquals(0, duplicates.get());
    assertEquals(total, seen.cardinality());
    assertEquals(0, q.size());
    assertNull(q.poll());
  }

  @Test
  public void hadoopsConstructorNeedsTheQueueCount() {
    Configuration conf = new Configuration(false);
    try {
      new MultiQueue<Integer>(1, 100, "ipc.9000", new int[] {1}, false, conf);
      fail("expected a clear error without ipc.9000.multiqueue.queues");
    } catch (IllegalArgumentException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("ipc.9000.multiqueue.queues"));
    }
    conf.setInt("ipc.9000.multiqueue.queues", 4);
    MultiQueue<Integer> q = new MultiQueue<>(1, 400, "ipc.9000", new int[] {1}, false, conf);
    assertEquals(4, q.queueCount());
    assertEquals(400, q.remainingCapacity());
  }
}
