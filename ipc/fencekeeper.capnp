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
  invalidArgument @2;    # e.g. TTL or wait out of the sidecar's bounds.
  timedOut @3;           # acquire: not granted within waitMs (waitMs = 0: held by someone else).
  notHeld @4;            # the lease was released already.
  expired @5;            # the lease's TTL ran out before a renew: lost. Acquire again.
  lost @6;               # the lease was lost another way (session lost or uncertain, deleted).
  zkUnavailable @7;      # the sidecar cannot reach ZooKeeper now: retry later.
  shuttingDown @8;       # the sidecar is stopping.
  limitReached @9;       # too many leases or waiters on this sidecar / connection.
  internal @10;          # a bug: report it.
  permissionDenied @11;  # this peer may not use the sidecar (allow-list), or ZooKeeper refused
                         # the sidecar's credentials on a lock's node (ACL).
  invalidOwner @12;      # owner label not valid UTF-8, holds a control character, or too long:
                         # the detail names the byte offset and the rule. Do not retry as is.
  modeConflict @13;      # acquire: the lock's queue holds requests of a mode that never shares it
                         # with this one (a semaphore's permits and a lock's nodes, or permits of
                         # another N): the detail names both. Do not retry as is.
}

enum LockMode {
  # How an acquire shares its lock (docs/protocol.md, "Lock modes").
  exclusive @0;          # alone (kazoo's Lock and WriteLock: `__lock__` nodes)
  shared @1;             # with other shared holders, never with an exclusive one (kazoo's
                         # ReadLock: `__rlock__` nodes)
  permits @2;            # one of at most `permits` holders of a semaphore (`__sem<N>__` nodes)
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
  atRisk @1 (token :UInt64, leftMs :UInt32);
  # Jeopardy: the lease still stands, but the sidecar's ZooKeeper connection is down (or its
  # heartbeats are overdue) while the session is still vouched for: unless that comes back, the
  # lease is lost within leftMs. Checkpoint now. A client of an older schema does not implement
  # it: the sidecar ignores the error.
  safeAgain @2 (token :UInt64);
  # The connection came back in time: the lease holds as before.
}

interface Lease {
  # A granted lease. Dropping this capability (or closing the connection) releases it.
  renew @0 (ttlMs :UInt32) -> (error :Error, validMs :UInt32, detail :Text, lossReason :LossReason);
  # Extends the lease to ttlMs from now (0: the TTL it was acquired with). lossReason says why
  # when error is expired or lost, so a loss reads the same whichever of this answer and
  # LeaseWatcher.lost the client runs first.
  token @1 () -> (error :Error, token :UInt64, validMs :UInt32, detail :Text, lossReason :LossReason);
  release @2 () -> (error :Error, confirmed :Bool, detail :Text);
  # Ends the lease at once and deletes its node. Answers once ZooKeeper confirmed the delete
  # (confirmed = true) or after about 100 ms (false: the delete is queued in the sidecar, sent again
  # after a reconnect, and the node goes with the session anyway); the next holder is granted once
  # the node is gone.
}

struct HolderEntry {
  # One holder of a lock: a shared lock and a semaphore have several.
  token @0 :UInt64;         # czxid of its node
  ownerLabel @1 :Text;
  sinceUnixMs @2 :Int64;
  thisSidecar @3 :Bool;
  mode @4 :LockMode;
  permits @5 :UInt32;       # mode permits: the N its request asked for
}

struct HolderInfo {
  # token, ownerLabel, sinceUnixMs and thisSidecar are the first (oldest) holder's.
  held @0 :Bool;
  token @1 :UInt64;         # czxid of the holder's node
  ownerLabel @2 :Text;
  sinceUnixMs @3 :Int64;    # wall-clock ms: grant time if this sidecar holds it, else the node's ctime
  waiters @4 :UInt32;       # contenders queued behind the holder, from any client or session
  thisSidecar @5 :Bool;     # held through this sidecar's session
  foreign @6 :Bool;         # the first queue entry is not ephemeral (ephemeralOwner 0): a
                            # persistent node planted in the queue; it blocks the lock until an
                            # operator deletes it (`foreignNode` names it)
  foreignNode @7 :Text;     # path of the first planted (persistent) entry in the queue, if any
  holders @8 :List(HolderEntry);  # every holder, oldest first
}

enum HolderState {
  held @0;               # `info` names the holder
  free @1;               # nobody holds the lock
  unknown @2;            # this sidecar cannot vouch for its session (or read the lock): `detail`
}

struct HolderChange {
  state @0 :HolderState;
  info @1 :HolderInfo;   # held: token, ownerLabel, sinceUnixMs of the holder
  detail @2 :Text;       # unknown: why
}

interface HolderWatcher {
  # Implemented by the client; the sidecar calls it with the lock's holder at once, then on every
  # change. At most one call is out at a time: changes that happen meanwhile are coalesced to the
  # latest (a token is never lower than one told before). Hints for standbys and people, never a
  # fence: only the storage's token check is one.
  changed @0 (change :HolderChange);
}

interface HolderWatch {
  # Dropping this capability (or closing the connection) ends the watch.
}

struct LeaseSummary {
  name @0 :Text;
  token @1 :UInt64;
  ownerLabel @2 :Text;
  clientPid @3 :Int32;
  validMs @4 :UInt32;
  clientUid @5 :UInt32;
  connection @6 :UInt64;    # the connection's number in this sidecar's logs
  heldForMs @7 :UInt64;     # since the grant
  state @8 :Text;           # "held" (released and lost leases are not listed)
  mode @9 :LockMode;
  permits @10 :UInt32;      # mode permits: N
}

struct WaiterSummary {
  # An acquire not granted yet.
  name @0 :Text;
  ownerLabel @1 :Text;
  clientPid @2 :Int32;
  clientUid @3 :UInt32;
  connection @4 :UInt64;
  state @5 :Text;           # "creating" (its node is being made or placed) or "waiting" (queued)
  position @6 :UInt32;      # nodes ahead of it in the lock's queue, at the sidecar's last look
  waitedMs @7 :UInt64;      # since the acquire
  mode @8 :LockMode;
  permits @9 :UInt32;       # mode permits: N
}

struct Limits {
  # The limits a request counts against (flags of the same names); 0 means unlimited.
  maxConnections @0 :UInt32;         # --max-connections (per peer uid)
  maxLeasesPerPeer @1 :UInt32;       # --max-leases-per-peer (held leases of one uid)
  maxWaitingPerPeer @2 :UInt32;      # --max-waiting-per-peer (queued acquires of one uid)
  maxCallsPerConnection @3 :UInt32;  # --max-calls-per-connection (unanswered calls)
  maxLeases @4 :UInt32;              # --max-leases (held + waiting, whole sidecar)
  maxQueuedReplyBytes @5 :UInt64;    # per connection: replies written but not read by the peer
  maxQueuedReplies @6 :UInt32;       # --max-queued-replies (per connection)
  maxWatchesPerPeer @7 :UInt32;      # --max-watches-per-peer (holder watches of one uid)
  maxWatches @8 :UInt32;             # --max-watches (holder watches, whole sidecar)
  maxHolderReadsPerPeer @9 :UInt32;  # --max-holder-reads-per-peer (a second, per uid)
  maxCallsPerPeer @10 :UInt32;       # --max-calls-per-peer (unanswered, all of one uid's)
  maxCalls @11 :UInt32;              # --max-calls (unanswered, whole sidecar)
  maxQueuedRepliesPerPeer @12 :UInt32;     # --max-queued-replies-per-peer (unread, one uid)
  maxQueuedReplyBytesPerPeer @13 :UInt64;  # --max-queued-reply-bytes-per-peer
}

struct ConnectionSummary {
  id @0 :UInt64;
  pid @1 :Int32;             # 0 when the peer is in another PID namespace
  uid @2 :UInt32;
  gid @3 :UInt32;
  leases @4 :UInt32;         # held
  waiting @5 :UInt32;        # queued acquires
  callsInFlight @6 :UInt32;  # unanswered calls
  queuedReplyBytes @7 :UInt64;
}

struct PeerSummary {
  # One principal: every connection of one uid counts together.
  uid @0 :UInt32;
  connections @1 :UInt32;
  leases @2 :UInt32;
  waiting @3 :UInt32;
  watches @4 :UInt32;        # holder watches open
  callsInFlight @5 :UInt32;  # unanswered calls, all its connections (--max-calls-per-peer)
  queuedReplies @6 :UInt32;  # replies its connections have not read (--max-queued-replies-per-peer)
  queuedReplyBytes @7 :UInt64;
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
  limits @13 :Limits;
  connectionList @14 :List(ConnectionSummary);
  peers @15 :List(PeerSummary);
  refusedTotal @16 :UInt64;    # requests refused by a limit or the allow-list since start
  acceptFailures @17 :UInt64;  # failed accept() calls since start (EMFILE...), retried with backoff
  accepting @18 :Bool;         # false while accept() fails: new clients cannot connect
  foreignNodes @19 :List(Text);  # planted (persistent) queue entries seen in locks waited on
  waiterList @20 :List(WaiterSummary);
  version @21 :Text;         # fencekeeper's version
  build @22 :Text;           # the source revision and build type it was built from
  zkServers @23 :Text;       # the --zk connect string (or the --dev server's)
  instanceId @24 :Text;      # this process's id (in its node names), new at every start
  listingTruncated @25 :Bool;  # `leases` or `waiterList` holds only the first `listingCap`
  listingCap @26 :UInt32;    # the most entries either list holds in this answer
  ready @27 :Bool;           # the session is vouched for: leases can be granted and trusted
  notReadyReason @28 :Text;  # why not, when ready is false
  healthy @29 :Bool;         # the loop serves and every socket accepts
  notHealthyReason @30 :Text;
}

interface Sidecar {
  acquire @0 (name :Text, ttlMs :UInt32, waitMs :UInt32, ownerLabel :Text, watcher :LeaseWatcher,
              mode :LockMode, permits :UInt32)
      -> (error :Error, lease :Lease, token :UInt64, validMs :UInt32, detail :Text,
          tableSlot :UInt32, tableGeneration :UInt64);
  # Queues for the lock `name` and answers when granted (error = ok, lease set) or when waitMs ran
  # out (timedOut). ttlMs = 0 takes the sidecar's default TTL; waitMs = 0 tries once;
  # waitMs = 4294967295 waits with no deadline (a campaign for leadership keeps its place in the
  # queue); other waits are at most one hour.
  # tableSlot/tableGeneration: the lease's slot in the shared-memory lease table (leaseTable());
  # tableGeneration 0 when it has none (no table, or the table is full).
  # Cancelling the call (or closing the connection) withdraws the request.
  # mode: exclusive (the default), shared, or permits (one of `permits` holders, 1..10000);
  # `permits` is ignored in the other modes.

  holder @1 (name :Text) -> (error :Error, info :HolderInfo, detail :Text);
  watchHolder @4 (name :Text, watcher :HolderWatcher) -> (error :Error, watch :HolderWatch, detail :Text);
  # Streams the holder of `name` to `watcher` until `watch` is dropped: one ZooKeeper watch per
  # lock in the sidecar, however many watch it; a lock with no node is watched for its creation
  # (nothing is created). error limitReached past 1,000 watches open on one connection,
  # --max-watches-per-peer of one uid, or --max-watches on the sidecar.
  status @2 () -> (status :Status, error :Error, detail :Text);
  leaseTable @3 () -> (path :Text, instance :UInt64, layoutVersion :UInt32, error :Error, detail :Text);
  # Where this sidecar publishes its lease table (ipc/lease_table_layout.h) and the instance id its
  # header carries; error notHeld when it publishes none (--lease-table none).
  # `detail`, in every result: for people, what was wrong when error is not ok (which argument
  # and its bound, which limit with its value and the flag that raises it). Empty on ok.
}
