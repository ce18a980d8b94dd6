package dev.fencekeeper;

import java.time.Instant;

/** One holder of a lock: a shared lock and a semaphore have several. */
public record Holder(long token, String owner, Instant since, boolean thisSidecar, LockMode mode,
                     int permits) {}
