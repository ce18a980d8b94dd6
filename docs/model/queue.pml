/* The lock queue protocol of the engine (sidecar/engine/lock_engine*.cc, lock_queue.cc), checked
 * with spin: never two exclusive holders, never an exclusive holder with any other, never more
 * than N holders of a semaphore, and no run where a waiter is left waiting for good once every
 * other request is done (an invalid end state).
 *
 * What is modeled: NS sidecars, one ZooKeeper session and one request at a time each, ROUNDS
 * acquires each, in mode M<i> (0 exclusive, 1 shared, 2 permits of P<i>). One lock directory:
 * node i is the i-th created (its sequence number), with its sidecar, its request's guid, its
 * mode and N. A request creates its node, lists the queue, and decides as lock_queue.cc does:
 * granted, refused (a mode or N it never shares with), or waiting behind a set of nodes (the node
 * just ahead; the last writer ahead; the N nodes just ahead), with "the deletion of any of them
 * grants" when the policy says so (the hand-over without a second listing). Watches are level
 * triggered here: a waiter wakes once a node it waits behind, or its own node, is gone, which
 * covers every order in which one-shot watches and their answers arrive.
 *
 * Faults, at most FAULTS in a run: a create whose answer is lost (applied or not: the request
 * finds its node again by guid, or creates it again), a request withdrawn while its create was
 * ambiguous (its node left an orphan, which its sidecar's next listing deletes), a node deleted
 * behind its sidecar's back (an operator), a session that expires (its nodes go). A release
 * deletes the node a while after the lease ends. A sidecar that is done closes its session.
 *
 * Holders counted are those whose node exists: a lease whose node was deleted behind its back is
 * told so by its own node's watch, and until then only the fence covers it (docs/fencing.md);
 * the vouching model (vouch.pml) covers a session's expiry. This model is about the queue: who
 * may be granted on what a listing showed, and whether each waiter wakes.
 *
 * Three changes each check must catch (scripts/check-model.sh):
 * -DHANDOVER_TWO_AHEAD: an exclusive waiter takes a deletion as a grant with two nodes ahead (the
 *   node ahead of the deleted one may still be held: two holders);
 * -DPERMITS_WINDOW_ONE: a permit waiter watches only the node just ahead (a holder further ahead
 *   leaving admits it, and nobody tells it: a lost wake-up);
 * -DNO_ORPHAN_SWEEP: a listing does not delete its sidecar's orphans (a waiter of that sidecar
 *   waits behind its own orphan, which goes only with the session: stuck).
 */
#ifndef NS
#define NS 3
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif
#ifndef FAULTS
#define FAULTS 2
#endif
#ifndef M0
#define M0 0
#endif
#ifndef M1
#define M1 0
#endif
#ifndef M2
#define M2 0
#endif
#ifndef P0
#define P0 0
#endif
#ifndef P1
#define P1 0
#endif
#ifndef P2
#define P2 0
#endif
/* every create of every round, plus one more per fault */
#define MAXN (NS * ROUNDS + 2 * FAULTS + 1)
#define EX 0
#define SH 1
#define PM 2

int alive;              /* bit i: node i exists */
int exMask;             /* bit i: node i is exclusive */
byte nodes;             /* nodes created: the next sequence number */
byte nowner[MAXN];      /* the sidecar that made node i */
byte nguid[MAXN];       /* its request's guid */
byte nkind[MAXN];
byte nperm[MAXN];
byte faults;

byte mode[NS];
byte permits[NS];
bool held[NS];          /* the sidecar counts its lease as held */
byte mine[NS];          /* the node of its request */
bool waiting[NS];       /* queued, its watches set ... */
int watched[NS];        /* ... on these nodes */

#define ALIVE(i) ((alive >> (i)) & 1)
#define VALID(q) (q < NS && held[q] && ALIVE(mine[q]))
#define NEX(q) (VALID(q) && mode[q] == EX)
#define NSH(q) (VALID(q) && mode[q] == SH)
#define NPM(q) (VALID(q) && mode[q] == PM)
#define EXCL (NEX(0) + NEX(1) + NEX(2))
#define SHARED (NSH(0) + NSH(1) + NSH(2))
#define PERMIT (NPM(0) + NPM(1) + NPM(2))
/* Permit holders hold with the same N (a conflict refuses), so any holder's N bounds them. */
#define PERMIT_OK(q) (!NPM(q) || PERMIT <= permits[q])
#define SAFE (EXCL <= 1 && (EXCL == 0 || SHARED + PERMIT == 0) && (SHARED == 0 || PERMIT == 0) && \
              PERMIT_OK(0) && PERMIT_OK(1) && PERMIT_OK(2))

/* Whether node i ahead rules out a request of mode m with n permits (lock_queue.cc conflicts()). */
#define CONFLICTS(i, m, n) (((nkind[i] == PM) != (m == PM)) || (m == PM && nperm[i] != n))

/* No lost wake-up: a waiter whose watched nodes (and own node) all stand is not one the policy
 * would grant on the queue as it is now; else it would wait for an event that need not come.
 * (With bit masks, so that the monitor stays one blocked step: a loop would always be enabled,
 * and spin would see no run end stuck.) */
#define AHEAD(q) (alive & ((1 << mine[q]) - 1))
#define CLR(x) ((x) & ((x) - 1))
#define FEWER(x, n) ((n == 1 && (x) == 0) || (n == 2 && CLR(x) == 0) || \
                     (n == 3 && CLR(CLR(x)) == 0))
#define GRANTABLE(q) ((mode[q] == EX && AHEAD(q) == 0) || (mode[q] == SH && (AHEAD(q) & exMask) == 0) \
                      || (mode[q] == PM && FEWER(AHEAD(q), permits[q])))
#define STUCK(q) (q < NS && waiting[q] && ALIVE(mine[q]) && (watched[q] & ~alive) == 0 && \
                  GRANTABLE(q))
#define FINE (SAFE && !STUCK(0) && !STUCK(1) && !STUCK(2))

active proctype monitor() {
end:
  atomic { !FINE -> assert(FINE) }
}

inline deleteNode(i) { alive = alive & ~(1 << (i)) }
/* Scratch variables back to 0 once used: states differing only in them are one state. */
inline forget() { i = 0; ahead = 0; writers = 0; lastWriter = 0; taken = 0; conflict = false }

proctype sidecar(byte me) {
  byte round, guid, i, ahead, writers, lastWriter, taken;
  int waitsBehind;
  bool anyDeletionGrants, conflict;

  do
  :: round == ROUNDS -> break
  :: else ->
    guid++;
create:
    assert(nodes < MAXN);
    if
    :: atomic {  /* made, and answered */
         mine[me] = nodes; nowner[nodes] = me; nguid[nodes] = guid; nkind[nodes] = mode[me];
         nperm[nodes] = permits[me]; alive = alive | (1 << nodes);
         if :: mode[me] == EX -> exMask = exMask | (1 << nodes) :: else fi; nodes++ }
    :: atomic { faults < FAULTS ->  /* made, the answer lost: found again by guid */
         faults++; nowner[nodes] = me; nguid[nodes] = guid; nkind[nodes] = mode[me];
         nperm[nodes] = permits[me]; alive = alive | (1 << nodes);
         if :: mode[me] == EX -> exMask = exMask | (1 << nodes) :: else fi; nodes++ }
       goto recover
    :: atomic { faults < FAULTS -> faults++ }  /* lost before it was applied */
       goto recover
    :: atomic { faults < FAULTS ->  /* made, the answer lost, and the caller gave up */
         faults++; nowner[nodes] = me; nguid[nodes] = guid; nkind[nodes] = mode[me];
         nperm[nodes] = permits[me]; alive = alive | (1 << nodes);
         if :: mode[me] == EX -> exMask = exMask | (1 << nodes) :: else fi; nodes++ }
       round++;
       goto next
    fi;
    goto list;

recover:  /* sync, list, and look for the guid (findCreatedNode) */
    atomic {
      mine[me] = 255; i = 0;
      do
      :: i < nodes -> if :: ALIVE(i) && nowner[i] == me && nguid[i] == guid -> mine[me] = i
                         :: else fi; i++
      :: else -> break
      od;
      i = 0
    }
    if
    :: mine[me] == 255 -> goto create
    :: else
    fi;

list:  /* one listing, then the policy on what it showed (onQueue, decide) */
    atomic {
      if
      :: !ALIVE(mine[me]) -> goto gone
      :: else
      fi;
      /* this sidecar's orphans (its nodes no live request owns) are deleted, never waited for */
#ifndef NO_ORPHAN_SWEEP
      i = 0;
      do
      :: i < nodes -> if :: ALIVE(i) && nowner[i] == me && nguid[i] != guid -> deleteNode(i)
                         :: else fi; i++
      :: else -> break
      od;
#endif
      ahead = 0; writers = 0; conflict = false; i = 0;
      do
      :: i < mine[me] ->
         if
         :: ALIVE(i) -> ahead++;
            conflict = conflict || CONFLICTS(i, mode[me], permits[me]);
            if :: nkind[i] == EX -> writers++; lastWriter = i :: else fi
         :: else
         fi; i++
      :: else -> break
      od;
      waitsBehind = 0;
      if
      :: conflict -> deleteNode(mine[me]); round++; forget(); goto next  /* refused */
      :: !conflict && mode[me] == EX && ahead > 0 ->
         i = mine[me] - 1;
         do :: ALIVE(i) -> break :: else -> i-- od;
         waitsBehind = 1 << i;
#ifdef HANDOVER_TWO_AHEAD
         anyDeletionGrants = ahead <= 2
#else
         anyDeletionGrants = ahead == 1
#endif
      :: !conflict && mode[me] == SH && writers > 0 ->
         waitsBehind = 1 << lastWriter; anyDeletionGrants = writers == 1
      :: !conflict && mode[me] == PM && ahead >= permits[me] ->
         i = mine[me] - 1; taken = 0;  /* the N nodes just ahead */
         do
#ifdef PERMITS_WINDOW_ONE
         :: taken == 1 -> break
#endif
         :: taken == permits[me] -> break
         :: else -> if :: ALIVE(i) -> waitsBehind = waitsBehind | (1 << i); taken++ :: else fi; i--
         od;
         anyDeletionGrants = ahead == permits[me]
      :: else -> held[me] = true; forget(); goto holding  /* granted */
      fi;
      waiting[me] = true; watched[me] = waitsBehind;
      forget()
    }

    /* waiting: until its own node or one it waits behind is gone */
    atomic {
      (!ALIVE(mine[me]) || (waitsBehind & ~alive) != 0) ->
      waiting[me] = false; watched[me] = 0;
      if
      :: !ALIVE(mine[me]) -> goto gone  /* deleted behind its back, or its session expired */
      :: else
      fi;
      if
      :: anyDeletionGrants -> held[me] = true; goto holding  /* the hand-over without listing */
      :: else -> goto list
      fi
    }

gone:  /* a waiter whose node vanished queues again, at the back (ownNodeGone) */
    goto create;

holding:
    if
    :: held[me] = false;  /* released: valid no more at once, its node deleted a while later */
       deleteNode(mine[me])
    :: atomic { !ALIVE(mine[me]) -> held[me] = false }  /* lost: its own node's watch fired */
    fi;
    round++;
next:
    skip
  od;
  /* done: the sidecar closes its session, and its nodes (orphans too) go with it */
  atomic {
    i = 0;
    do
    :: i < nodes -> if :: nowner[i] == me -> deleteNode(i) :: else fi; i++
    :: else -> break
    od;
    i = 0
  }
}

/* An operator deleting a node behind its sidecar's back, and sessions expiring. */
active proctype nemesis() {
  byte i, q;
end:
  do
  :: atomic { faults < FAULTS -> select(i : 0 .. MAXN - 1);
       if :: ALIVE(i) -> faults++; deleteNode(i) :: else fi;
       i = 0 }
  :: atomic { faults < FAULTS -> select(q : 0 .. NS - 1); faults++;
       i = 0;
       do
       :: i < nodes -> if :: nowner[i] == q -> deleteNode(i) :: else fi; i++
       :: else -> break
       od;
       i = 0; q = 0 }
  od
}

init {
  byte s;
  atomic {
    mode[0] = M0; permits[0] = P0;
    mode[1] = M1; permits[1] = P1;
#if NS > 2
    mode[2] = M2; permits[2] = P2;
#endif
    do
    :: s < NS -> run sidecar(s); s++
    :: else -> break
    od
  }
}
