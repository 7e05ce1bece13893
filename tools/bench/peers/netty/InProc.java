// The in-process workloads W1-W6 on Netty 4.1's DefaultEventExecutor, defined exactly as
// //benchmarks:inproc defines them for gyre, so the figures compare in one sitting:
//
//   W1  one producer thread execute()s 10,000,000 counting no-ops on one started
//       DefaultEventExecutor; from the producer's release to the last task run; tasks/s.
//   W2  as W1, two producers of 5,000,000 each, released together.
//   W3  two started executors; a task on A re-posts to B, B to A: 1,000,000 one-way hops;
//       ns per hop. Also the CPU time an idle executor's thread uses over 1 s.
//   W4  on the loop thread: executor.newPromise() (a Promise<Void>), addListener(counting),
//       trySuccess(null), 10,000,000 times; ops/s.
//   W5  on the loop thread: schedule(no-op, delay, NANOSECONDS) 1,000,000 times, delays
//       1 ms..10 s from xorshift64* seeded 0x9E3779B97F4A7C15, then cancel(false) them all
//       (each must return true and none may run); schedules/s and cancels/s separately.
//   W6  on the loop thread: a task that re-submits itself with execute() 10,000,000 times.
//
// Each workload runs 1 untimed round (it also warms the JIT) and 5 timed ones and prints
// one JSON line with the median round. Exit status 1 when a check fails (a listener that
// did not run, a cancel() that returned false, a cancelled timer that ran).
//
//   java -Xms2g -Xmx2g -XX:+UseParallelGC -cp CLASSES:NETTY_JARS InProc [--divisor=N]
//        [--workloads=W1,W5] [--idle-ms=1000]
import io.netty.util.concurrent.DefaultEventExecutor;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GenericFutureListener;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

public final class InProc {
  static final int TIMED_ROUNDS = 5;

  static long divisor = 1;
  static long idleMs = 1000;
  static boolean failed = false;

  interface Round {
    double run() throws Exception;  // seconds
  }

  // Runs `round` once untimed and TIMED_ROUNDS times; the timed rounds' seconds.
  static double[] rounds(Round round) throws Exception {
    round.run();
    double[] t = new double[TIMED_ROUNDS];
    for (int i = 0; i < TIMED_ROUNDS; ++i) t[i] = round.run();
    return t;
  }

  static double median(double[] t) {
    double[] s = t.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  static long size(long full) {
    return Math.max(1, full / divisor);
  }

  static double seconds(long t0, long t1) {
    return (t1 - t0) / 1e9;
  }

  static DefaultEventExecutor startedExecutor() throws Exception {
    DefaultEventExecutor e = new DefaultEventExecutor();
    e.submit(() -> {}).sync();
    return e;
  }

  static void shutdown(EventExecutor... executors) {
    for (EventExecutor e : executors) e.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    for (EventExecutor e : executors) e.terminationFuture().syncUninterruptibly();
  }

  static String num(double v) {
    if (Double.isNaN(v) || Double.isInfinite(v)) return "null";
    if (v == Math.rint(v) && Math.abs(v) < 1e15) return Long.toString((long) v);
    return String.format(Locale.ROOT, "%.6g", v);
  }

  static String str(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  // One JSON line: the workload, its size, the median round and its counters.
  static void report(String workload, long ops, double[] roundsS, Map<String, Object> fields) {
    StringBuilder b = new StringBuilder();
    double med = median(roundsS);
    b.append("{\"peer\":\"netty\",\"workload\":").append(str(workload));
    b.append(",\"ops\":").append(ops);
    b.append(",\"median_s\":").append(num(med));
    b.append(",\"real_time_ns\":").append(num(med * 1e9 / ops));
    b.append(",\"rounds_s\":[");
    for (int i = 0; i < roundsS.length; ++i) b.append(i == 0 ? "" : ",").append(num(roundsS[i]));
    b.append("]");
    for (Map.Entry<String, Object> f : fields.entrySet()) {
      b.append(",").append(str(f.getKey())).append(":");
      Object v = f.getValue();
      if (v instanceof Number) {
        b.append(num(((Number) v).doubleValue()));
      } else if (v instanceof Boolean) {
        b.append(v);
      } else {
        b.append(str(String.valueOf(v)));
      }
    }
    b.append("}");
    System.out.println(b);
    System.out.flush();
  }

  static void fail(String workload, String why) {
    System.err.println("netty InProc: " + workload + ": " + why);
    failed = true;
  }

  // ---------------------------------------------------------------------------------
  // W1 / W2: producers execute() counting no-ops; release to the last task run.

  static final class Counting implements Runnable {
    final AtomicLong ran = new AtomicLong();
    final long total;
    final CountDownLatch done = new CountDownLatch(1);
    volatile long lastRan;

    Counting(long total) {
      this.total = total;
    }

    @Override
    public void run() {
      if (ran.incrementAndGet() == total) {
        lastRan = System.nanoTime();
        done.countDown();
      }
    }
  }

  static void producers(String workload, int producers) throws Exception {
    final long each = size(10_000_000) / producers;
    final long total = each * producers;
    DefaultEventExecutor executor = startedExecutor();
    double[] t = rounds(() -> {
      // The same Runnable instance each time: the queue's node is the per-task object.
      final Counting task = new Counting(total);
      final AtomicLong ready = new AtomicLong();
      final Go release = new Go();
      List<Thread> threads = new ArrayList<>();
      for (int p = 0; p < producers; ++p) {
        Thread th = new Thread(() -> {
          ready.incrementAndGet();
          while (!release.go) Thread.onSpinWait();
          for (long i = 0; i < each; ++i) executor.execute(task);
        });
        th.start();
        threads.add(th);
      }
      while (ready.get() < producers) Thread.onSpinWait();
      final long released = System.nanoTime();
      release.go = true;
      task.done.await();
      for (Thread th : threads) th.join();
      return seconds(released, task.lastRan);
    });
    shutdown(executor);
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("tasks_per_s", total / median(t));
    f.put("producers", producers);
    report(workload, total, t, f);
  }

  static final class Go {
    volatile boolean go;
  }

  // ---------------------------------------------------------------------------------
  // W3: ping-pong between two executors; then the idle CPU of a started executor.

  static final class PingPong {
    final EventExecutor[] executors;
    final Runnable[] hop = new Runnable[2];  // hop[i] runs on executors[i]
    final CountDownLatch done = new CountDownLatch(1);
    long left;  // touched by one thread at a time, handed over through the task queues

    PingPong(EventExecutor a, EventExecutor b, long hops) {
      executors = new EventExecutor[] {a, b};
      left = hops;
      for (int i = 0; i < 2; ++i) {
        final int to = 1 - i;
        hop[i] = () -> {
          if (--left == 0) {
            done.countDown();
            return;
          }
          executors[to].execute(hop[to]);
        };
      }
    }
  }

  static void w3() throws Exception {
    final long hops = size(1_000_000);
    final DefaultEventExecutor a = startedExecutor();
    final DefaultEventExecutor b = startedExecutor();
    double[] t = rounds(() -> {
      PingPong p = new PingPong(a, b, hops);
      long start = System.nanoTime();
      a.execute(p.hop[0]);
      p.done.await();
      return seconds(start, System.nanoTime());
    });
    // The CPU time a's thread uses while it has nothing to do.
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long tid = a.submit(() -> Thread.currentThread().getId()).get();
    long before = mx.getThreadCpuTime(tid);
    Thread.sleep(idleMs);
    long after = mx.getThreadCpuTime(tid);
    shutdown(a, b);
    double med = median(t);
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("ns_per_hop", med * 1e9 / hops);
    f.put("hops_per_s", hops / med);
    f.put("idle_cpu_ms_per_s", (after - before) / 1e6 / (idleMs / 1e3));
    report("W3", hops, t, f);
  }

  // ---------------------------------------------------------------------------------
  // W4: promise, listener, completion on the loop thread.

  static final class CountingListener implements GenericFutureListener<Future<Void>> {
    long heard;  // loop thread only

    @Override
    public void operationComplete(Future<Void> future) {
      ++heard;
    }
  }

  static void w4() throws Exception {
    final long n = size(10_000_000);
    final DefaultEventExecutor executor = startedExecutor();
    double[] t = rounds(() -> {
      final CountingListener listener = new CountingListener();
      final double[] s = new double[1];
      executor.submit(() -> {
        long t0 = System.nanoTime();
        for (long i = 0; i < n; ++i) {
          Promise<Void> p = executor.newPromise();
          p.addListener(listener);
          p.trySuccess(null);
        }
        s[0] = seconds(t0, System.nanoTime());
      }).sync();
      if (listener.heard != n) {
        fail("W4", "a listener did not run (" + listener.heard + " of " + n + ")");
      }
      return s[0];
    });
    shutdown(executor);
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("ops_per_s", n / median(t));
    report("W4", n, t, f);
  }

  // ---------------------------------------------------------------------------------
  // W5: schedule then cancel, on the loop thread.

  static long[] w5Delays(int n) {
    long x = 0x9E3779B97F4A7C15L;
    final long lo = TimeUnit.MILLISECONDS.toNanos(1);
    final long span = TimeUnit.SECONDS.toNanos(10) - lo + 1;
    long[] d = new long[n];
    for (int i = 0; i < n; ++i) {
      x ^= x >>> 12;
      x ^= x << 25;
      x ^= x >>> 27;
      long r = x * 0x2545F4914F6CDD1DL;
      d[i] = lo + Long.remainderUnsigned(r, span);
    }
    return d;
  }

  static void w5() throws Exception {
    final int n = (int) size(1_000_000);
    final long[] delays = w5Delays(n);
    final DefaultEventExecutor executor = startedExecutor();
    final AtomicLong ran = new AtomicLong();
    final Runnable noop = ran::incrementAndGet;
    final double[] scheduleS = new double[TIMED_ROUNDS + 1];
    final double[] cancelS = new double[TIMED_ROUNDS + 1];
    final long[] cancelled = new long[1];  // cancel() calls that returned true
    final int[] roundIndex = new int[1];
    double[] t = rounds(() -> {
      final ScheduledFuture<?>[] futures = new ScheduledFuture<?>[n];
      final int r = roundIndex[0]++;
      executor.submit(() -> {
        long t0 = System.nanoTime();
        for (int i = 0; i < n; ++i) {
          futures[i] = executor.schedule(noop, delays[i], TimeUnit.NANOSECONDS);
        }
        long t1 = System.nanoTime();
        long ok = 0;
        for (int i = 0; i < n; ++i) {
          if (futures[i].cancel(false)) ++ok;
        }
        long t2 = System.nanoTime();
        cancelled[0] += ok;
        scheduleS[r] = seconds(t0, t1);
        cancelS[r] = seconds(t1, t2);
      }).sync();
      return scheduleS[r] + cancelS[r];
    });
    // Give a timer that escaped its cancel() the time to become due and run.
    Thread.sleep(20);
    executor.submit(() -> {}).sync();
    shutdown(executor);
    final long calls = (long) n * (TIMED_ROUNDS + 1);
    if (cancelled[0] != calls) {
      fail("W5", (calls - cancelled[0]) + " cancel() calls returned false");
    }
    if (ran.get() != 0) fail("W5", ran.get() + " cancelled timers ran");
    double[] s = Arrays.copyOfRange(scheduleS, 1, TIMED_ROUNDS + 1);
    double[] c = Arrays.copyOfRange(cancelS, 1, TIMED_ROUNDS + 1);
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("schedules_per_s", n / median(s));
    f.put("cancels_per_s", n / median(c));
    f.put("ops_per_s", n / median(t));
    f.put("cancel_calls", calls);
    f.put("cancels_succeeded", cancelled[0]);
    f.put("cancelled_timers_ran", ran.get());
    f.put("all_cancelled", cancelled[0] == calls && ran.get() == 0);
    report("W5", n, t, f);
  }

  // ---------------------------------------------------------------------------------
  // W6: a task re-submitting itself on its own loop.

  static final class Again implements Runnable {
    final EventExecutor executor;
    final CountDownLatch done = new CountDownLatch(1);
    long left;
    long start;
    long end;

    Again(EventExecutor executor, long n) {
      this.executor = executor;
      this.left = n;
    }

    @Override
    public void run() {
      if (--left == 0) {
        end = System.nanoTime();
        done.countDown();
        return;
      }
      executor.execute(this);
    }
  }

  static void w6() throws Exception {
    final long n = size(10_000_000);
    final DefaultEventExecutor executor = startedExecutor();
    double[] t = rounds(() -> {
      final Again again = new Again(executor, n);
      executor.submit(() -> {
        again.start = System.nanoTime();
        executor.execute(again);
      }).sync();
      again.done.await();
      return seconds(again.start, again.end);
    });
    shutdown(executor);
    Map<String, Object> f = new LinkedHashMap<>();
    f.put("tasks_per_s", n / median(t));
    report("W6", n, t, f);
  }

  // ---------------------------------------------------------------------------------

  static void usage(String why) {
    System.err.println("netty InProc: " + why);
    System.err.println("usage: InProc [--divisor=N] [--workloads=W1,...,W6] [--idle-ms=MS]");
    System.exit(2);
  }

  public static void main(String[] args) throws Exception {
    List<String> workloads = Arrays.asList("W1", "W2", "W3", "W4", "W5", "W6");
    for (String a : args) {
      try {
        if (a.startsWith("--divisor=")) {
          divisor = Long.parseLong(a.substring("--divisor=".length()));
          if (divisor < 1) usage("--divisor must be >= 1");
        } else if (a.startsWith("--idle-ms=")) {
          idleMs = Long.parseLong(a.substring("--idle-ms=".length()));
          if (idleMs < 1) usage("--idle-ms must be >= 1");
        } else if (a.startsWith("--workloads=")) {
          workloads = Arrays.asList(a.substring("--workloads=".length()).split(","));
        } else {
          usage("unknown argument " + a);
        }
      } catch (NumberFormatException e) {
        usage("bad number in " + a);
      }
    }
    String version = DefaultEventExecutor.class.getPackage().getImplementationVersion();
    String jvm = System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version");
    String flags = String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments());
    System.out.println("{\"peer\":\"netty\",\"context\":{\"netty_version\":"
        + str(String.valueOf(version))
        + ",\"java_version\":" + str(System.getProperty("java.version"))
        + ",\"jvm\":" + str(jvm)
        + ",\"jvm_flags\":" + str(flags)
        + ",\"divisor\":" + divisor + "}}");
    for (String w : workloads) {
      System.gc();  // start each workload with a collected heap
      switch (w) {
        case "W1": producers("W1", 1); break;
        case "W2": producers("W2", 2); break;
        case "W3": w3(); break;
        case "W4": w4(); break;
        case "W5": w5(); break;
        case "W6": w6(); break;
        default: usage("unknown workload " + w);
      }
    }
    System.exit(failed ? 1 : 0);
  }
}
