package dev.fencekeeper;

import com.sun.jna.Memory;
import com.sun.jna.NativeLong;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * One connection to the pod's fencekeeper sidecar, over libfencekeeper's C ABI (JNA). Safe for
 * concurrent use. <pre>{@code
 * try (Client client = Client.connect(null);  // $FENCEKEEPER_SOCKET or the default
 *      Lease lease = client.lock("reconcile", LockOptions.defaults().owner("pod-a"))) {
 *   lease.lost().thenRun(work::cancel);        // loss is cancellation
 *   store.write(data, lease.token());
 * }
 * }</pre>
 */
public final class Client implements AutoCloseable {
  private static final long SLICE_MS = 100; // how soon a blocking lock() sees an interrupt

  private Pointer handle; // null once closed

  private Client(Pointer handle) {
    this.handle = handle;
  }

  /** Connects to the sidecar at socket (null: $FENCEKEEPER_SOCKET, else the default path). */
  public static Client connect(Path socket) throws FencekeeperException {
    Native.ConnectOptions options = new Native.ConnectOptions();
    Native.LIB.fk_connect_options_init(options);
    PointerByReference out = new PointerByReference();
    Native.Error err = new Native.Error();
    if (Native.LIB.fk_connect_with(socket == null ? null : socket.toString(), options, out, err)
        != 0) {
      throw err.exception();
    }
    return new Client(out.getValue());
  }

  /** Whether the connection is up (it reconnects by itself after a drop). */
  public synchronized boolean connected() {
    return handle != null && Native.LIB.fk_client_connected(handle) != 0;
  }

  /** An acquire under way: its request, the hooks its lease will have, its name. */
  private final class Request {
    final Lease.Hooks hooks = new Lease.Hooks();
    final String name;
    final Pointer request;
    final Memory owner; // (kept until the call is done: the C library copies it then)
    private boolean freed; // guarded by this: a cancel from another thread must not follow the free

    Request(String name, LockOptions options) throws FencekeeperException {
      this.name = name;
      Native.AcquireOptions o = new Native.AcquireOptions();
      Native.LIB.fk_acquire_options_init(o);
      o.ttlMs = (int) options.ttl.toMillis();
      o.waitMs = options.wait.isNegative() ? Native.WAIT_FOREVER : (int) options.wait.toMillis();
      owner = Native.cString(options.owner);
      o.ownerLabel = owner;
      o.keepAlive = options.keepAlive ? 1 : 0;
      o.mode = options.mode.ordinal();
      o.permits = options.permits;
      o.onLost = hooks.onLost;
      o.onRisk = hooks.onRisk;
      PointerByReference out = new PointerByReference();
      Native.Error err = new Native.Error();
      if (Native.LIB.fk_acquire_start(handle(), name, o, out, err) != 0) throw err.exception();
      request = out.getValue();
    }

    /** The lease once done; null while in progress after `timeoutMs`. Frees the request when done. */
    Lease waitFor(long timeoutMs) throws FencekeeperException {
      PointerByReference out = new PointerByReference();
      Native.Error err = new Native.Error();
      int code = Native.LIB.fk_request_wait(request, timeoutMs, out, err);
      if (code == ErrorCode.IN_PROGRESS.value) return null;
      synchronized (this) {
        Native.LIB.fk_request_free(request);
        freed = true;
      }
      if (code != 0) throw err.exception();
      return new Lease(name, out.getValue(), hooks);
    }

    synchronized void cancel() {
      if (!freed) Native.LIB.fk_request_cancel(request); // from any thread, until freed
    }
  }

  private synchronized Pointer handle() throws FencekeeperException {
    if (handle == null) {
      throw new FencekeeperException(ErrorCode.SIDECAR_UNAVAILABLE, "the client is closed");
    }
    return handle;
  }

  /**
   * Queues for the lock name and returns the lease once granted. {@code Thread.interrupt()}
   * withdraws the request (InterruptedException): a grant that crossed it is released.
   */
  public Lease lock(String name, LockOptions options)
      throws FencekeeperException, InterruptedException {
    Request request = new Request(name, options);
    while (true) {
      if (Thread.interrupted()) {
        request.cancel();
        try {
          Lease crossed = request.waitFor(-1);
          crossed.release();
        } catch (FencekeeperException expected) {
          // CANCELLED: the request is gone
        }
        throw new InterruptedException("lock " + name + " withdrawn");
      }
      Lease lease = request.waitFor(SLICE_MS);
      if (lease != null) return lease;
    }
  }

  /** Tries once: TIMED_OUT at once when someone else holds name. */
  public Lease tryLock(String name, LockOptions options)
      throws FencekeeperException, InterruptedException {
    return lock(name, options.waitFor(Duration.ZERO));
  }

  /**
   * lock() as a future. {@code cancel(true)} withdraws the request (the future is then
   * cancelled, and a grant that crossed it released).
   */
  public CompletableFuture<Lease> lockAsync(String name, LockOptions options) {
    final Request request;
    try {
      request = new Request(name, options);
    } catch (FencekeeperException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<Lease> future = new CompletableFuture<>() {
      @Override
      public boolean cancel(boolean mayInterrupt) {
        // Cancelled first, withdrawn second: withdrawing first let the waiter complete the
        // future with CANCELLED before super.cancel, which then returned false.
        if (!super.cancel(mayInterrupt)) return false;
        request.cancel();
        return true;
      }
    };
    Thread waiter = new Thread(() -> {
      try {
        Lease lease = request.waitFor(-1);
        if (!future.complete(lease)) lease.release(); // cancelled as it was granted
      } catch (FencekeeperException e) {
        future.completeExceptionally(e);
      }
    }, "fencekeeper-lock-" + name);
    waiter.setDaemon(true);
    waiter.start();
    return future;
  }

  /** Who holds the lock name (through any sidecar, or a kazoo client). */
  public HolderInfo holder(String name) throws FencekeeperException {
    Native.HolderInfo info = new Native.HolderInfo();
    info.size = new NativeLong(info.size());
    Native.Error err = new Native.Error();
    if (Native.LIB.fk_holder(handle(), name, info, err) != 0) throw err.exception();
    return HolderInfo.of(info);
  }

  /** What a holder watch reports. */
  public enum HolderState { HELD, FREE, UNKNOWN }

  /** One report of a holder watch; detail says why when UNKNOWN. */
  public record HolderChange(HolderState state, HolderInfo info, String detail) {}

  /**
   * Reports who holds name now, then every change, to onChange (on the client's I/O thread: keep
   * it short) until the returned watch is closed.
   */
  public AutoCloseable watchHolder(String name, Consumer<HolderChange> onChange)
      throws FencekeeperException {
    Native.HolderFn callback = (userData, state, info, detail) -> onChange.accept(
        new HolderChange(HolderState.values()[state], HolderInfo.of(info), detail));
    PointerByReference out = new PointerByReference();
    Native.Error err = new Native.Error();
    if (Native.LIB.fk_watch_holder(handle(), name, callback, null, out, err) != 0) {
      throw err.exception();
    }
    Pointer watch = out.getValue();
    return new AutoCloseable() {
      private boolean closed;
      private final Native.HolderFn keep = callback; // reachable while the watch lives

      @Override
      public synchronized void close() {
        if (closed) return;
        closed = true;
        Native.LIB.fk_holder_watch_free(watch); // no call of `keep` begins after it returns
      }
    };
  }

  /** Leader election on name's queue, as owner. */
  public Election election(String name, String owner) {
    return new Election(this, name, owner);
  }

  @Override
  public synchronized void close() {
    if (handle == null) return;
    Native.LIB.fk_client_close(handle);
    handle = null;
  }
}
