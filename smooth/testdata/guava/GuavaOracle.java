// GuavaOracle runs the scenarios of package smooth's tests through Guava's own RateLimiter
// and prints them back with Guava's waits, in microseconds: the golden files the Go tests
// compare package smooth against (the Go tests never need Java).
//
// Regenerate (from the smooth directory; guava.jar from Debian's libguava-java, 31.1):
//
//   javac -cp /usr/share/java/guava.jar -d /tmp/oracle testdata/guava/GuavaOracle.java
//   java -cp /usr/share/java/guava.jar:/tmp/oracle com.google.common.util.concurrent.GuavaOracle \
//       < testdata/scenarios.txt > testdata/scenarios.golden
//   java -cp /usr/share/java/guava.jar:/tmp/oracle com.google.common.util.concurrent.GuavaOracle \
//       --random > testdata/random.golden
//
// It lives in Guava's package to reach RateLimiter's package-private test hooks (a fake
// SleepingStopwatch, the cold factor, SmoothBursty's maxBurstSeconds), as Guava's own
// RateLimiterTest does.
//
// Scenario format, one operation per line ('#' starts a comment):
//
//   scenario NAME
//   bursty RATE [MAX_BURST_SECONDS]        (create; RATE may be "inf")
//   warmup RATE WARMUP_US [COLD_FACTOR]    (create)
//   acquire N                              -> "acquire N = WAIT_US"
//   try N TIMEOUT_US                       -> "try N TIMEOUT_US = WAIT_US" or "= F"
//   sleep US                               (the user sleeps)
//   rate R                                 (setRate)
//   end
package com.google.common.util.concurrent;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.util.Random;
import java.util.concurrent.TimeUnit;

public final class GuavaOracle {
  /** A stopwatch whose time moves only when someone sleeps; it remembers the last sleep. */
  static final class Fake extends RateLimiter.SleepingStopwatch {
    long micros;
    long lastSleep;

    @Override
    protected long readMicros() {
      return micros;
    }

    @Override
    protected void sleepMicrosUninterruptibly(long m) {
      lastSleep = m;
      micros += m;
    }
  }

  private Fake clock;
  private RateLimiter limiter;
  private final PrintStream out;

  private GuavaOracle(PrintStream out) {
    this.out = out;
  }

  private static double rate(String s) {
    return s.equals("inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(s);
  }

  /** Runs one line and prints it, with its result for acquire and try. */
  private void run(String line) {
    String[] f = line.trim().split("\\s+");
    switch (f[0]) {
      case "scenario":
      case "end":
        out.println(line.trim());
        return;
      case "bursty": {
        clock = new Fake();
        double burst = f.length > 2 ? Double.parseDouble(f[2]) : 1.0;
        limiter = new SmoothRateLimiter.SmoothBursty(clock, burst);
        limiter.setRate(rate(f[1]));
        out.println(line.trim());
        return;
      }
      case "warmup": {
        clock = new Fake();
        double cold = f.length > 3 ? Double.parseDouble(f[3]) : 3.0;
        limiter = RateLimiter.create(rate(f[1]), Long.parseLong(f[2]), TimeUnit.MICROSECONDS, cold, clock);
        out.println(line.trim());
        return;
      }
      case "acquire": {
        clock.lastSleep = -1;
        limiter.acquire(Integer.parseInt(f[1]));
        out.println("acquire " + f[1] + " = " + clock.lastSleep);
        return;
      }
      case "try": {
        clock.lastSleep = -1;
        boolean ok = limiter.tryAcquire(Integer.parseInt(f[1]), Long.parseLong(f[2]), TimeUnit.MICROSECONDS);
        out.println("try " + f[1] + " " + f[2] + " = " + (ok ? Long.toString(clock.lastSleep) : "F"));
        return;
      }
      case "sleep":
        clock.micros += Long.parseLong(f[1]);
        out.println(line.trim());
        return;
      case "rate":
        limiter.setRate(rate(f[1]));
        out.println(line.trim());
        return;
      default:
        throw new IllegalArgumentException("unknown operation: " + line);
    }
  }

  private static final double[] RATES = {0.5, 1, 2, 3, 5, 7.5, 10, 1.0 / 3, 0.7, 33.3, 100, 250};
  private static final long[] WARMUPS = {1, 250_000, 1_000_000, 3_000_000, 4_000_000, 10_000_000};
  private static final double[] COLDS = {1, 1.5, 2, 3, 4.25, 10};
  private static final double[] BURSTS = {1, 0.5, 2, 3.7, 10};

  private static String fmt(double r) {
    return Double.isInfinite(r) ? "inf" : Double.toString(r);
  }

  /**
   * Writes random scenarios: per kind, a few sequences of acquires, tryAcquires with
   * various timeouts, sleeps from nothing to long idleness, and rate changes (some to +Inf
   * and back). java.util.Random is specified, so the output is the same everywhere.
   */
  private void random() {
    Random r = new Random(20240611L);
    for (int seq = 0; seq < 8; seq++) {
      boolean warm = seq % 2 == 1;
      double rate = RATES[r.nextInt(RATES.length)];
      run("scenario random-" + seq);
      if (warm) {
        run("warmup " + fmt(rate) + " " + WARMUPS[r.nextInt(WARMUPS.length)] + " " + COLDS[r.nextInt(COLDS.length)]);
      } else {
        run("bursty " + fmt(rate) + " " + BURSTS[r.nextInt(BURSTS.length)]);
      }
      for (int step = 0; step < 800; step++) {
        double interval = Double.isInfinite(rate) ? 1000 : 1e6 / rate;
        int x = r.nextInt(100);
        if (x < 30) {
          int n = r.nextInt(10) == 0 ? 1 + r.nextInt(20) : 1 + r.nextInt(3);
          run("acquire " + n);
        } else if (x < 55) {
          int n = 1 + r.nextInt(3);
          long timeout;
          switch (r.nextInt(4)) {
            case 0: timeout = 0; break;
            case 1: timeout = (long) (r.nextDouble() * interval * 3); break;
            case 2: timeout = (long) (r.nextDouble() * interval); break;
            default: timeout = 1_000_000_000_000L; break;
          }
          run("try " + n + " " + timeout);
        } else if (x < 95) {
          long us;
          switch (r.nextInt(5)) {
            case 0: us = 0; break;
            case 1: us = (long) (r.nextDouble() * interval / 4); break;
            case 2: us = (long) (r.nextDouble() * interval * 2); break;
            case 3: us = (long) (r.nextDouble() * interval * 20); break;
            default: us = (long) (r.nextDouble() * 15_000_000); break;
          }
          run("sleep " + us);
        } else {
          rate = r.nextInt(8) == 0 ? Double.POSITIVE_INFINITY : RATES[r.nextInt(RATES.length)];
          run("rate " + fmt(rate));
        }
      }
      run("end");
    }
  }

  public static void main(String[] args) throws Exception {
    GuavaOracle o = new GuavaOracle(System.out);
    if (args.length > 0 && args[0].equals("--random")) {
      o.random();
      return;
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
    for (String line; (line = in.readLine()) != null; ) {
      String t = line.trim();
      if (t.isEmpty() || t.startsWith("#")) {
        System.out.println(line);
        continue;
      }
      o.run(t);
    }
  }
}
