package dev.fencekeeper;

/** The outcome codes of the C ABI (fk_error_code) and the schema's Error: branch on these. */
public enum ErrorCode {
  OK(0), INVALID_NAME(1), INVALID_ARGUMENT(2), TIMED_OUT(3), NOT_HELD(4), EXPIRED(5), LOST(6),
  ZK_UNAVAILABLE(7), SHUTTING_DOWN(8), LIMIT_REACHED(9), INTERNAL(10), PERMISSION_DENIED(11),
  INVALID_OWNER(12), MODE_CONFLICT(13), SIDECAR_UNAVAILABLE(100), WRONG_THREAD(101),
  CANCELLED(102), IN_PROGRESS(103), UNKNOWN(-1);

  public final int value;

  ErrorCode(int value) {
    this.value = value;
  }

  static ErrorCode of(int value) {
    for (ErrorCode code : values()) {
      if (code.value == value) return code;
    }
    return UNKNOWN;
  }
}
