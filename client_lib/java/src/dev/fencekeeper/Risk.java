package dev.fencekeeper;

import java.time.Duration;

/**
 * A jeopardy report: at risk while the sidecar cannot reach ZooKeeper but the lease still stands
 * ({@code left}: how long at most, unless ZooKeeper comes back: checkpoint now), then not at risk
 * when it came back in time.
 */
public record Risk(boolean atRisk, Duration left) {}
