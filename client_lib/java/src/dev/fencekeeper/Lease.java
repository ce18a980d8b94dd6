package dev.fencekeeper;

import com.sun.jna.Pointer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * A granted lease. Loss is fatal to the work in hand: {@link #lost()} completes the moment the
 * lease is lost (with why), and storage that checks tokens rejects what a stale holder sends.
 * Close it (try-with-resources) when the work is done: if it was lost meanwhile, close throws
 * LOST or EXPIRED, since the work was not covered to the end.
 */
public final class Lease implements AutoCloseable {
  /** What the C library calls back, made before the lease exists and kept as long as it. */
  static final class Hooks {
    final CompletableFuture<LossReason> lost = new CompletableFuture<>();
    final List<Consumer<Risk>> riskListeners = new CopyOnWriteArrayList<>();
    volatile boolean atRisk;
    // (JNA callbacks must stay reachable while the C library may call them.)
    final Native.LostFn onLost = (userData, token, reason) -> lost.complete(LossReason.of(reason));
    final Native.RiskFn onRisk = (userData, token, risky, leftMs) -> {
      atRisk = risky != 0;
      Risk risk = new Risk(risky != 0, Duration.ofMillis(Integer.toUnsignedLong(leftMs)));
      for (Consumer<Risk> listener : riskListeners) listener.accept(risk);
    };
  }

  private final String name;
  private final long token;
  private final Hooks hooks;
  private Pointer handle; // null once released

  Lease(String name, Pointer handle, Hooks hooks) {
    this.name = name;
    this.handle = handle;
    this.hooks = hooks;
    this.token = Native.LIB.fk_lease_token(handle);
  }

  public String name() {
    return name;
  }

  /** The fencing token: send it with every request to storage. */
  public long token() {
    return token;
  }

  /** How long the lease is known valid from now; zero once lost, released or past. No call. */
  public synchronized Duration validFor() {
    return handle == null ? Duration.ZERO : Duration.ofMillis(Native.LIB.fk_lease_valid_for_ms(handle));
  }

  /**
   * Completes the moment the lease is lost, with why (never for a lease its owner released):
   * chain the cancellation of the work to it.
   */
  public CompletableFuture<LossReason> lost() {
    return hooks.lost;
  }

  /** Between the sidecar's "at risk" report and its "safe again" (see {@link Risk}). */
  public boolean atRisk() {
    return hooks.atRisk && !hooks.lost.isDone();
  }

  /** Called on the client's I/O thread with every jeopardy report: keep it short. */
  public void addAtRiskListener(Consumer<Risk> listener) {
    hooks.riskListeners.add(listener);
  }

  /** Extends the lease to ttl from now (zero: the TTL it was acquired with). */
  public synchronized void renew(Duration ttl) throws FencekeeperException {
    if (handle == null) throw new FencekeeperException(ErrorCode.NOT_HELD, "not held: released");
    Native.Error err = new Native.Error();
    if (Native.LIB.fk_lease_renew(handle, (int) ttl.toMillis(), err) != 0) throw err.exception();
  }

  /** Ends the lease: the next in line gets the lock. Throws LOST or EXPIRED if it was lost. */
  public synchronized void release() throws FencekeeperException {
    if (handle == null) return;
    Native.Error err = new Native.Error();
    int code = Native.LIB.fk_lease_release(handle, err);
    Native.LIB.fk_lease_free(handle); // no callback begins after it returns
    handle = null;
    if (code != 0 && code != ErrorCode.NOT_HELD.value) throw err.exception();
  }

  @Override
  public void close() throws FencekeeperException {
    release();
  }
}
