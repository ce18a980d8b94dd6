package dev.fencekeeper;

import java.time.Duration;

/**
 * What a lock asks for. Immutable: {@code LockOptions.defaults().ttl(Duration.ofSeconds(10))
 * .owner("pod-a")} makes a new one at each step.
 */
public final class LockOptions {
  /** A wait with no deadline (an election's campaign). */
  public static final Duration WAIT_FOREVER = Duration.ofMillis(-1);

  final Duration ttl;
  final Duration wait;
  final String owner;
  final LockMode mode;
  final int permits;
  final boolean keepAlive;

  private LockOptions(Duration ttl, Duration wait, String owner, LockMode mode, int permits,
                      boolean keepAlive) {
    this.ttl = ttl;
    this.wait = wait;
    this.owner = owner;
    this.mode = mode;
    this.permits = permits;
    this.keepAlive = keepAlive;
  }

  /** TTL 30 s, kept alive; wait until granted (or the acquire is cancelled); exclusive. */
  public static LockOptions defaults() {
    return new LockOptions(Duration.ofSeconds(30), WAIT_FOREVER, null, LockMode.EXCLUSIVE, 0,
                           true);
  }

  public LockOptions ttl(Duration ttl) {
    return new LockOptions(ttl, wait, owner, mode, permits, keepAlive);
  }

  /** How long to queue: zero tries once, WAIT_FOREVER has no deadline. */
  public LockOptions waitFor(Duration wait) {
    return new LockOptions(ttl, wait, owner, mode, permits, keepAlive);
  }

  public LockOptions owner(String owner) {
    return new LockOptions(ttl, wait, owner, mode, permits, keepAlive);
  }

  public LockOptions shared() {
    return new LockOptions(ttl, wait, owner, LockMode.SHARED, 0, keepAlive);
  }

  /** One of n permits (a semaphore of n). */
  public LockOptions permits(int n) {
    return new LockOptions(ttl, wait, owner, LockMode.PERMITS, n, keepAlive);
  }

  /** Without keep-alive the caller renews (Lease.renew). */
  public LockOptions keepAlive(boolean on) {
    return new LockOptions(ttl, wait, owner, mode, permits, on);
  }
}
