@0xf10a95e2a6e57197;
# The contract between a fencekeeper sidecar and the processes of its pod.
# Served over a Unix socket with Cap'n Proto RPC (two-party); the bootstrap capability is `Sidecar`.
# Units: every duration is milliseconds in a field named `...Ms`. A validity (`validMs`) is counted
# by the client from the moment it SENT the request, so it errs on the safe side.

$import "/capnp/c++.capnp".namespace("fencekeeper::ipc");

enum Error {
  # Outcomes a client must branch on. `ok` means the call did what it asked.
  ok @0;
  invalidName @1;        # lock name malformed: never reached ZooKeeper. Do not retry as is.
  invalidArgument @2;    # e.g. TTL out of the sidecar's bounds, owner label too long.
  timedOut @3;           # acquire: not granted within waitMs (waitMs = 0: held by someone else).
  notHeld @4;            # the lease was released already.
  expired @5;            # the lease's TTL ran out before a renew: lost. Acquire again.
  lost @6;               # the lease was lost another way (session lost or uncertain, deleted).
  zkUnavailable @7;      # the sidecar cannot reach ZooKeeper now: retry later.
  shuttingDown @8;       # the sidecar is stopping.
  limitReached @9;       # too many leases or waiters on this sidecar / connection.
  internal @10;          # a bug: report it.
}

enum LossReason {
  ttlExpired @0;         # not renewed in time
  sessionLost @1;        # the ZooKeeper session expired: the node is gone
  sessionUncertain @2;   # the sidecar cannot prove its session is alive: treat as lost
  sidecarShutdown @3;    # the sidecar is stopping
  releasedElsewhere @4;  # the node was deleted by another path (operator, another session)
}

interface LeaseWatcher {
  # Implemented by the client; the sidecar calls it when a lease is lost. Loss is final.
  lost @0 (token :UInt64, reason :LossReason);
}

interface Lease {
  # A granted lease. Dropping this capability (or closing the connection) releases it.
  renew @0 (ttlMs :UInt32) -> (error :Error, validMs :UInt32);
  # Extends the lease to ttlMs from now (0: the TTL it was acquired with).
  token @1 () -> (error :Error, token :UInt64, validMs :UInt32);
  release @2 () -> (error :Error, confirmed :Bool);
  # Ends the lease at once and deletes its node. Answers once ZooKeeper confirmed the delete
  # (confirmed = true) or after about 100 ms (false: the delete is queued in the sidecar, sent again
  # after a reconnect, and the node goes with the session anyway); the next holder is granted once
  # the node is gone.
}

struct HolderInfo {
  held @0 :Bool;
  token @1 :UInt64;         # czxid of the holder's node
  ownerLabel @2 :Text;
  sinceUnixMs @3 :Int64;    # wall-clock ms: grant time if this sidecar holds it, else the node's ctime
  waiters @4 :UInt32;       # contenders queued behind the holder, from any client or session
  thisSidecar @5 :Bool;     # held through this sidecar's session
}

struct LeaseSummary {
  name @0 :Text;
  token @1 :UInt64;
  ownerLabel @2 :Text;
  clientPid @3 :Int32;
  validMs @4 :UInt32;
}

struct Status {
  zkState @0 :Text;          # "connected", "connecting", "expired", ...
  sessionId @1 :Text;        # hex
  sessionTimeoutMs @2 :UInt32;
  safeForMs @3 :UInt32;      # how long this sidecar can still vouch for its session
  leasesHeld @4 :UInt32;
  waiters @5 :UInt32;
  connections @6 :UInt32;
  uptimeMs @7 :UInt64;
  grantsTotal @8 :UInt64;
  leases @9 :List(LeaseSummary);
  root @10 :Text;
  pendingDeletes @11 :UInt32;  # lock node deletions ZooKeeper has not confirmed yet (retried)
  droppedDeletes @12 :UInt64;  # unconfirmed deletions given up at the bound: left to the session
}

interface Sidecar {
  acquire @0 (name :Text, ttlMs :UInt32, waitMs :UInt32, ownerLabel :Text, watcher :LeaseWatcher)
      -> (error :Error, lease :Lease, token :UInt64, validMs :UInt32);
  # Queues for the lock `name` and answers when granted (error = ok, lease set) or when waitMs ran
  # out (timedOut). ttlMs = 0 takes the sidecar's default TTL; waitMs = 0 tries once.
  # Cancelling the call (or closing the connection) withdraws the request.

  holder @1 (name :Text) -> (error :Error, info :HolderInfo);
  status @2 () -> (status :Status);
}
