package dev.fencekeeper;

/** How a lease shares its lock. */
public enum LockMode {
  /** Alone (kazoo's Lock and WriteLock). */
  EXCLUSIVE,
  /** With other shared holders, never with an exclusive one (kazoo's ReadLock). */
  SHARED,
  /** One of at most N holders: a semaphore. */
  PERMITS
}
