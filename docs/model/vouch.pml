/* Vouching model: can the sidecar call its session safe (now < safeUntil) after the ZooKeeper leader
   has expired that session?  Discrete time, one tick a loop pass.  What is modelled:
   - the leader collects a follower's session touches only in ping exchanges, every P ticks, while it
     runs and the link is up; a forwarded request (the heartbeat sync) touches nothing at the leader
     (ZooKeeper: LearnerSessionTracker touch table, Learner.ping, LearnerHandler PING/REQUEST);
   - the leader expires the session when now > lastTouch + T (earliest possible touch times are used,
     which is the conservative choice);
   - the leader may freeze (runs nothing) or be partitioned from the sidecar's follower (runs, but no
     pings or syncs reach that follower); the follower drops its clients within SYNCL silent ticks;
   - on wake the leader may answer a queued sync before or after its expiry check (either order);
   - a reconnect goes through a follower that the leader revalidates: a touch at the leader at that time
     (Learner.validateSession -> REVALIDATE -> checkIfValidGlobalSession -> touchSession);
   - RULE 1: on one connection, an answered heartbeat anchors safeUntil at the send time of the previous
     answered one: safeUntil = sent + T - MARGIN.  Heartbeats one at a time; on a connection at least Q
     apart, the first one on a new connection at once.
   - LONG_RTT_GUARD: an answer whose round trip exceeded Q anchors nothing (it proves nothing about the
     touch before it).
   - REVALIDATE_ANCHOR (RULE 2): when a reconnect succeeds while the session is still vouched for, the
     latest heartbeat that completed before it (answered, or failed with connection loss) anchors
     safeUntil at its send time: every such heartbeat was sent before the attempt began, hence before the
     revalidation touch. REVALIDATE_RACE adds ZooKeeper's race (a revalidation answered valid while the
     leader expires the session); REVALIDATE_EVEN_AFTER_LAPSE drops the "still vouched for" condition.
   - FRESH_AFTER_LAPSE: after a lapse (now reached safeUntil), a heartbeat sent before it anchors
     nothing: vouching resumes only from evidence gathered after the lapse (one outage, one lapse).
   This is the rule of sidecar/engine/session_guard.cc (all four together); change both together.
   Units: one tick; tickTime = 2P; T >= 2 tickTime; Q = T/4.  Run (Debian package `spin`), or
   scripts/check-model.sh, which runs the configurations below and fails on any violation:
     spin -DT=16 -DP=4 -DQ=4 -DTMAX=44 -DSYNCL=20 [-DLONG_RTT_GUARD] [-DREVALIDATE_ANCHOR] -a vouch.pml
     gcc -O2 -DSAFETY -o pan pan.c && ./pan -m200000        (add -DTRACE to spin -a/-t to print a trail)
   Found (2026-12-03): RULE 1 alone, and RULE 1 + RULE 2, violate the property: a leader frozen past
   T/2 while its follower keeps its clients wakes, answers the queued heartbeat before its delayed ping
   collects the touch, then expires the session; the sidecar anchors on the previous heartbeat and
   vouches past the expiry.  With LONG_RTT_GUARD, RULE 1 and RULE 1 + RULE 2 hold (exhaustive search,
   T=16 P=4 Q=4 and T=16 P=2 Q=4, two faults, 44 ticks; a coarser grid, T=8 P=2, hides the violation).
   Found later the same day, by tests/fault/leader_change_test.cc on real servers: RULE 2 applied after a
   lapse is violated through REVALIDATE_RACE; RULE 2 only while vouched for holds with it (checked also
   with three faults over 50 ticks, SYNCL=10: 4e8 states, no violation). */
#ifndef T
#define T 8
#endif
#ifndef P
#define P 2
#endif
#ifndef Q
#define Q 2
#endif
#ifndef MARGIN
#define MARGIN 0
#endif
#ifndef SYNCL
#define SYNCL 10
#endif
#ifndef TMAX
#define TMAX 36
#endif
#ifndef FAULTS
#define FAULTS 2
#endif

byte now = 0;
bool lfrozen = false, part = false; byte faults = 0;
byte lastTouch = 0; bool expired = false;
bool fPending = false, pingDue = false; byte fSilent = 0; bool conn = true;
bool hbInFlight = false, hbAtF = false; byte hbSent = 0; byte lastSend = 0; bool sentOnConn = false;
bool haveLast = false, havePrev = false; byte lastAns = 0, prevAns = 0; bool lastLong = false;
bool haveCompleted = false; byte lastCompleted = 0;  /* latest heartbeat completed (RULE 2) */
bool didPing, didAns, didExp, expiredNow;
byte safeUntil = 0;
bool wasSafe = false; byte lapsedAt = 0;  /* FRESH_AFTER_LAPSE */

inline answer() {
  prevAns = lastAns; havePrev = haveLast; lastAns = hbSent; haveLast = true;
  haveCompleted = true; lastCompleted = hbSent;
#ifdef LONG_RTT_GUARD
  if :: (now - hbSent > Q) -> havePrev = false  /* a slow answer anchors nothing */
     :: else -> skip fi;
#endif
#ifdef FRESH_AFTER_LAPSE
  if :: prevAns < lapsedAt -> havePrev = false  /* sent before the latest lapse */
     :: else -> skip fi;
#endif
  if :: havePrev && prevAns + T - MARGIN > safeUntil -> safeUntil = prevAns + T - MARGIN
     :: else -> skip fi;
  if :: safeUntil > now -> wasSafe = true :: else -> skip fi;
  hbInFlight = false
}
inline expiryCheck() {
  if :: !lfrozen && !expired && now > lastTouch + T -> expired = true; expiredNow = true; conn = false
     :: else -> skip fi
}
/* RULE 2, only while still vouched for: a session the sidecar vouches for is not yet due at the
   leader, so the revalidation's touch takes effect (a due session's may not: the leader's tracker
   can answer a revalidation as valid while it expires the session, REVALIDATE_RACE below). */
#ifdef REVALIDATE_EVEN_AFTER_LAPSE
#define STILL_VOUCHED true
#else
#define STILL_VOUCHED (now < safeUntil)
#endif
inline reconnectAnchor() {
#ifdef REVALIDATE_ANCHOR
  if :: haveCompleted && STILL_VOUCHED && lastCompleted + T - MARGIN > safeUntil -> safeUntil = lastCompleted + T - MARGIN; wasSafe = true
     :: else -> skip fi
#else
  skip
#endif
}

active proctype world() {
  do
  :: now >= TMAX -> break
  :: else ->
    /* 0. the guard notices a lapse when its timer fires */
    if :: wasSafe && now >= safeUntil -> wasSafe = false; lapsedAt = now :: else -> skip fi;
    /* 1. faults: freeze or partition the leader, or end one */
    if
    :: faults < FAULTS && !lfrozen && !part -> lfrozen = true; faults++
    :: faults < FAULTS && !lfrozen && !part -> part = true; faults++
    :: lfrozen -> lfrozen = false
    :: part -> part = false
    :: skip
    fi;
    /* 2. heartbeat reaches the follower (at most one tick late): a touch registered there */
    if
    :: conn && hbInFlight && !hbAtF -> hbAtF = true; fPending = true
    :: conn && hbInFlight && !hbAtF && now == hbSent -> skip
    :: else -> skip
    fi;
    /* 3-4. the leader's threads, in any order within a tick: the ping exchange with the follower (due
       every P ticks, sent when the leader next runs: a frozen leader pings late, never skips), the
       answer to a queued sync, and the session-expiry check */
    if :: now % P == 0 -> pingDue = true :: else -> skip fi;
    didPing = false; didAns = false; didExp = false; expiredNow = false;
    do
    :: !didPing -> didPing = true;
       if
       :: pingDue && !lfrozen && !part -> pingDue = false; fSilent = 0; if :: fPending -> lastTouch = now; fPending = false :: else -> skip fi
       :: else -> if :: lfrozen || part -> fSilent++ :: else -> skip fi
       fi
    :: !didAns -> didAns = true;
       if :: conn && hbInFlight && hbAtF && !lfrozen && !part && !expired -> answer()
          :: conn && hbInFlight && hbAtF && !lfrozen && !part && !expired && now == hbSent -> skip  /* next tick */
          :: else -> skip fi
    :: !didExp -> didExp = true; expiryCheck()
    :: didPing && didAns && didExp -> break
    od;
    /* 5. follower notices its leader is gone and drops its clients (within SYNCL silent ticks) */
    if
    :: conn && fSilent > 0 && fSilent < SYNCL -> skip
    :: conn && fSilent > 0 -> conn = false
    :: else -> skip
    fi;
    if
    :: !conn && hbInFlight -> haveCompleted = true; lastCompleted = hbSent; hbInFlight = false; fPending = false;
                              haveLast = false; havePrev = false; sentOnConn = false
    :: !conn && !hbInFlight -> fPending = false; haveLast = false; havePrev = false; sentOnConn = false
    :: else -> skip
    fi;
    /* 6. THE PROPERTY: never vouch for a session the leader has expired */
#ifdef TRACE
    printf("t=%d frozen=%d part=%d conn=%d fSilent=%d lastTouch=%d expired=%d hb=%d sent=%d atF=%d lastAns=%d prevAns=%d safeUntil=%d\n", now, lfrozen, part, conn, fSilent, lastTouch, expired, hbInFlight, hbSent, hbAtF, lastAns, prevAns, safeUntil);
#endif
    assert(!(expired && now < safeUntil));
    /* 7. reconnect through a follower the leader revalidates (a touch at the leader now) */
    if
    :: !conn && !expired && !lfrozen -> conn = true; part = false; fSilent = 0; lastTouch = now;
       reconnectAnchor()
#ifdef REVALIDATE_RACE
    /* ZooKeeper's SessionTrackerImpl polls the due sessions, then marks them closing: a
       revalidation touched in between is answered valid, and the session expires all the same
       (seen on a 3-server ensemble: "connected" 11 ms after the leader's "Expiring session"). */
    :: !conn && expiredNow && !lfrozen -> reconnectAnchor()
#endif
    :: skip
    fi;
    /* 8. send the next heartbeat: one in flight; on a connection at least Q after the last, the first at once */
    if
    :: conn && !hbInFlight && (!sentOnConn || now >= lastSend + Q) -> hbInFlight = true; hbAtF = false; hbSent = now; lastSend = now; sentOnConn = true
    :: else -> skip
    fi;
    now++
  od
}
