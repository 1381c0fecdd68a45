package tunelab.rigs.namenode;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Field;
import java.util.AbstractQueue;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.ToIntFunction;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.metrics2.util.MBeans;

/**
 * An RPC call queue with one queue per handler: a call goes to queue (call id mod queues), and a
 * handler takes from its own queue first and only then from the others. The idea (the case study's,
 * and HBase's {@code callqueue.handler.factor}) is that handlers stop contending on one queue's
 * lock.
 *
 * <p>Plugged into a Hadoop RPC server with {@code ipc.<port>.callqueue.impl} and sized with {@code
 * ipc.<port>.multiqueue.queues} (set it to the handler count). The capacity Hadoop passes (handlers
 * x queue size per handler) is split evenly between the queues.
 *
 * <p>Blocking: a put blocks while its own queue is full (calls keep their place by id, they never
 * spill); a take blocks until any queue holds a call. A semaphore counts the calls in all queues; a
 * call is in a queue before its permit is released, so a taker holding a permit always finds a call
 * in some queue.
 */
public final class MultiQueue<E> extends AbstractQueue<E> implements BlockingQueue<E> {
  public static final String QUEUES_SUFFIX = ".multiqueue.queues";

  private final List<LinkedBlockingQueue<E>> queues;
  private final Semaphore calls = new Semaphore(0);
  private final ToIntFunction<E> callId;
  private final AtomicInteger nextHome = new AtomicInteger();
  private final ThreadLocal<Integer> home;
  private final LongAdder takenFromOwn = new LongAdder();
  private final LongAdder takenFromOther = new LongAdder();

  /** The constructor Hadoop's CallQueueManager looks up by reflection. */
  public MultiQueue(
      int priorityLevels,
      int capacity,
      String namespace,
      int[] capacityWeights,
      boolean serverFailOverEnabled,
      Configuration conf) {
    this(queuesFrom(conf, namespace), capacity, MultiQueue::hadoopCallId);
    // Visible at http://<namenode>/jmx as Hadoop:service=<namespace>,name=MultiQueue: the rig's
    // proof that
    // this queue is the one in use.
    MBeans.register(namespace, "MultiQueue", new Stats(this));
    System.out.println(
        "MultiQueue: "
            + queues.size()
            + " queues of "
            + queues.get(0).remainingCapacity()
            + " calls for "
            + namespace);
  }

  MultiQueue(int queueCount, int capacity, ToIntFunction<E> callId) {
    if (queueCount < 1 || capacity < queueCount) {
      throw new IllegalArgumentException(
          "MultiQueue needs 1 <= queues <= capacity, got "
              + queueCount
              + " queues for capacity "
              + capacity);
    }
    this.callId = callId;
    this.queues = new ArrayList<>(queueCount);
    int each = capacity / queueCount;
    for (int i = 0; i < queueCount; i++) {
      queues.add(new LinkedBlockingQueue<>(each));
    }
    this.home =
        ThreadLocal.withInitial(() -> Math.floorMod(nextHome.getAndIncrement(), queues.size()));
  }

  private static int queuesFrom(Configuration conf, String namespace) {
    int n = conf.getInt(namespace + QUEUES_SUFFIX, 0);
    if (n < 1) {
      throw new IllegalArgumentException(
          namespace
              + QUEUES_SUFFIX
              + " must be set to the number of queues "
              + "(the handler count)");
    }
    return n;
  }

  private static final MethodHandle CALL_ID = findCallId();

  private static MethodHandle findCallId() {
    try {
      // Server.Call keeps its id package-private; the classpath is one unnamed module, so
      // reflection may read it.
      Field f = Class.forName("org.apache.hadoop.ipc.Server$Call").getDeclaredField("callId");
      f.setAccessible(true);
      return MethodHandles.lookup().unreflectGetter(f);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private static <E> int hadoopCallId(E call) {
    if (CALL_ID != null) {
      try {
        return (int) CALL_ID.invoke(call);
      } catch (Throwable t) {
        // not a Server.Call: fall through
      }
    }
    return System.identityHashCode(call);
  }

  private LinkedBlockingQueue<E> queueFor(E e) {
    if (e == null) {
      throw new NullPointerException();
    }
    return queues.get(Math.floorMod(callId.applyAsInt(e), queues.size()));
  }

  /** The taking thread's own queue first, then the others in order; null if all are empty. */
  private E pollAny() {
    int own = home.get();
    int n = queues.size();
    for (int i = 0; i < n; i++) {
      E e = queues.get((own + i) % n).poll();
      if (e != null) {
        (i == 0 ? takenFromOwn : takenFromOther).increment();
        return e;
      }
    }
    return null;
  }

  /**
   * After a permit was acquired: a call is in some queue (see the class comment), maybe after a
   * race.
   */
  private E takeHeld() {
    while (true) {
      E e = pollAny();
      if (e != null) {
        return e;
      }
      Thread.onSpinWait();
    }
  }

  @Override
  public void put(E e) throws InterruptedException {
    queueFor(e).put(e);
    calls.release();
  }

  @Override
  public boolean offer(E e) {
    if (queueFor(e).offer(e)) {
      calls.release();
      return true;
    }
    return false;
  }

  @Override
  public boolean offer(E e, long timeout, TimeUnit unit) throws InterruptedException {
    if (queueFor(e).offer(e, timeout, unit)) {
      calls.release();
      return true;
    }
    return false;
  }

  @Override
  public E take() throws InterruptedException {
    calls.acquire();
    return takeHeld();
  }

  @Override
  public E poll(long timeout, TimeUnit unit) throws InterruptedException {
    return calls.tryAcquire(timeout, unit) ? takeHeld() : null;
  }

  @Override
  public E poll() {
    return calls.tryAcquire() ? takeHeld() : null;
  }

  @Override
  public E peek() {
    int own = home.get();
    for (int i = 0; i < queues.size(); i++) {
      E e = queues.get((own + i) % queues.size()).peek();
      if (e != null) {
        return e;
      }
    }
    return null;
  }

  @Override
  public int size() {
    return calls.availablePermits();
  }

  @Override
  public int remainingCapacity() {
    int sum = 0;
    for (LinkedBlockingQueue<E> q : queues) {
      sum += q.remainingCapacity();
    }
    return sum;
  }

  @Override
  public int drainTo(Collection<? super E> c) {
    return drainTo(c, Integer.MAX_VALUE);
  }

  @Override
  public int drainTo(Collection<? super E> c, int maxElements) {
    int n = 0;
    E e;
    while (n < maxElements && (e = poll()) != null) {
      c.add(e);
      n++;
    }
    return n;
  }

  /**
   * A weakly consistent view of every queue in turn (Hadoop only iterates a queue it is swapping
   * out).
   */
  @Override
  public Iterator<E> iterator() {
    List<E> all = new ArrayList<>();
    for (LinkedBlockingQueue<E> q : queues) {
      all.addAll(q);
    }
    return all.iterator();
  }

  int queueCount() {
    return queues.size();
  }

  int sizeOf(int queue) {
    return queues.get(queue).size();
  }

  long takenFromOwnQueue() {
    return takenFromOwn.sum();
  }

  long takenFromOtherQueues() {
    return takenFromOther.sum();
  }

  /** What the NameNode's /jmx shows for this queue. */
  public interface StatsMXBean {
    int getQueueCount();

    int[] getQueueSizes();

    long getTakenFromOwnQueue();

    long getTakenFromOtherQueues();
  }

  /** Public, as JMX requires of an MBean's class. */
  public static final class Stats implements StatsMXBean {
    private final MultiQueue<?> queue;

    Stats(MultiQueue<?> queue) {
      this.queue = queue;
    }

    @Override
    public int getQueueCount() {
      return queue.queueCount();
    }

    @Override
    public int[] getQueueSizes() {
      int[] sizes = new int[queue.queueCount()];
      for (int i = 0; i < sizes.length; i++) {
        sizes[i] = queue.sizeOf(i);
      }
      return sizes;
    }

    @Override
    public long getTakenFromOwnQueue() {
      return queue.takenFromOwnQueue();
    }

    @Override
    public long getTakenFromOtherQueues() {
      return queue.takenFromOtherQueues();
    }
  }
}
