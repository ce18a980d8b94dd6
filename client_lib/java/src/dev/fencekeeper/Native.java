package dev.fencekeeper;

import com.sun.jna.Callback;
import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.NativeLong;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import com.sun.jna.ptr.PointerByReference;
import java.nio.charset.StandardCharsets;

/**
 * libfencekeeper's C ABI (fencekeeper.h) through JNA: the structures laid out as in the header,
 * the functions this package calls. Internal: the public API is Client, Lease and their types.
 * The library is found through $FENCEKEEPER_LIB, jna.library.path, or the system loader.
 */
final class Native {
  private Native() {}

  static final int OWNER_LABEL_MAX = 256;
  static final int HOLDERS_LISTED = 16;
  static final int WAIT_FOREVER = 0xFFFFFFFF;

  interface LostFn extends Callback {
    void invoke(Pointer userData, long token, int reason);
  }

  interface RiskFn extends Callback {
    void invoke(Pointer userData, long token, int atRisk, int leftMs);
  }

  interface HolderFn extends Callback {
    void invoke(Pointer userData, int state, HolderInfo info, String detail);
  }

  @Structure.FieldOrder({"code", "message"})
  public static class Error extends Structure {
    public int code;
    public byte[] message = new byte[256];

    String text() {
      int n = 0;
      while (n < message.length && message[n] != 0) n++;
      return new String(message, 0, n, StandardCharsets.UTF_8);
    }

    FencekeeperException exception() {
      return new FencekeeperException(ErrorCode.of(code), text());
    }
  }

  @Structure.FieldOrder({"size", "expectUid"})
  public static class ConnectOptions extends Structure {
    public NativeLong size;
    public long expectUid;
  }

  @Structure.FieldOrder({"size", "ttlMs", "waitMs", "ownerLabel", "keepAlive",
                         "renewOnlyIfCheckedIn", "exitOnLoss", "onLost", "userData", "mode",
                         "permits", "onRisk"})
  public static class AcquireOptions extends Structure {
    public NativeLong size;
    public int ttlMs;
    public int waitMs;
    public Pointer ownerLabel;
    public int keepAlive;
    public int renewOnlyIfCheckedIn;
    public int exitOnLoss;
    public LostFn onLost;
    public Pointer userData;
    public int mode;
    public int permits;
    public RiskFn onRisk;
  }

  @Structure.FieldOrder({"token", "mode", "permits", "sinceUnixMs", "thisSidecar", "ownerLabel"})
  public static class HolderEntry extends Structure {
    public long token;
    public int mode;
    public int permits;
    public long sinceUnixMs;
    public int thisSidecar;
    public byte[] ownerLabel = new byte[OWNER_LABEL_MAX + 1];
  }

  @Structure.FieldOrder({"size", "held", "token", "ownerLabel", "sinceUnixMs", "waiters",
                         "thisSidecar", "holderCount", "holdersListed", "holders"})
  public static class HolderInfo extends Structure {
    public NativeLong size;
    public int held;
    public long token;
    public byte[] ownerLabel = new byte[OWNER_LABEL_MAX + 1];
    public long sinceUnixMs;
    public int waiters;
    public int thisSidecar;
    public int holderCount;
    public int holdersListed;
    public HolderEntry[] holders = (HolderEntry[]) new HolderEntry().toArray(HOLDERS_LISTED);

    public HolderInfo() {}

    public HolderInfo(Pointer p) {
      super(p);
      read();
    }
  }

  interface Lib extends Library {
    void fk_connect_options_init(ConnectOptions options);

    int fk_connect_with(String socket, ConnectOptions options, PointerByReference out, Error err);

    void fk_client_close(Pointer client);

    int fk_client_connected(Pointer client);

    void fk_acquire_options_init(AcquireOptions options);

    int fk_acquire_start(Pointer client, String name, AcquireOptions options,
                         PointerByReference out, Error err);

    void fk_request_cancel(Pointer request);

    int fk_request_wait(Pointer request, long timeoutMs, PointerByReference out, Error err);

    void fk_request_free(Pointer request);

    long fk_lease_token(Pointer lease);

    long fk_lease_valid_for_ms(Pointer lease);

    int fk_lease_at_risk(Pointer lease);

    int fk_lease_renew(Pointer lease, int ttlMs, Error err);

    int fk_lease_release(Pointer lease, Error err);

    void fk_lease_free(Pointer lease);

    int fk_holder(Pointer client, String name, HolderInfo out, Error err);

    int fk_watch_holder(Pointer client, String name, HolderFn onChange, Pointer userData,
                        PointerByReference out, Error err);

    void fk_holder_watch_free(Pointer watch);
  }

  static final Lib LIB = load();

  private static Lib load() {
    String path = System.getenv("FENCEKEEPER_LIB");
    String name = path != null && !path.isEmpty() ? path : "fencekeeper";
    return com.sun.jna.Native.load(name, Lib.class);
  }

  /** A NUL-terminated copy of `text` in native memory, or null for null. */
  static Memory cString(String text) {
    if (text == null) return null;
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    Memory m = new Memory(bytes.length + 1);
    m.write(0, bytes, 0, bytes.length);
    m.setByte(bytes.length, (byte) 0);
    return m;
  }

  static String text(byte[] bytes) {
    int n = 0;
    while (n < bytes.length && bytes[n] != 0) n++;
    return new String(bytes, 0, n, StandardCharsets.UTF_8);
  }
}
