package dev.fencekeeper;

/** Why a lease was lost (Lease.lost() completes with it). */
public enum LossReason {
  TTL_EXPIRED(0), SESSION_LOST(1), SESSION_UNCERTAIN(2), SIDECAR_SHUTDOWN(3),
  RELEASED_ELSEWHERE(4), CONNECTION_LOST(100), RENEW_FAILED(101), UNKNOWN(-1);

  public final int value;

  LossReason(int value) {
    this.value = value;
  }

  static LossReason of(int value) {
    for (LossReason reason : values()) {
      if (reason.value == value) return reason;
    }
    return UNKNOWN;
  }
}
