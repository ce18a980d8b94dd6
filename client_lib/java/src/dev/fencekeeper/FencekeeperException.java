package dev.fencekeeper;

/**
 * A call the sidecar or the library refused: {@link #code()} to branch on, the message (the
 * code's name, then the sidecar's detail) for people.
 */
public class FencekeeperException extends Exception {
  private static final long serialVersionUID = 1L;
  private final ErrorCode code;

  public FencekeeperException(ErrorCode code, String message) {
    super(message);
    this.code = code;
  }

  public ErrorCode code() {
    return code;
  }
}
