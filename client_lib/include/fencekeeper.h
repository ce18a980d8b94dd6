/* fencekeeper C ABI: fenced leases from the pod's sidecar, for C and for every language with a C
 * FFI (Python ctypes, Go cgo, Rust, Java FFM). Link with -lfencekeeper (libfencekeeper.so).
 *
 * LOSS IS FATAL TO THE WORK IN HAND. When a lease is lost (its TTL passed without a renew, the
 * sidecar lost or cannot vouch for its ZooKeeper session, the sidecar stopped, the connection to
 * the sidecar dropped), another process may already hold the lock with a larger token. Stop the
 * work at once; storage that checks fencing tokens rejects what a stale holder still sends.
 *
 * Calls. Every function may be called from any thread, concurrently, with two exceptions: a
 * handle must not be used, by any thread, once fk_client_close() or fk_lease_free() was called
 * on it; and those two must not run while another call on the same handle is in progress.
 * Functions returning int return FK_OK (0) or an fk_error_code, and fill `*err` when `err` is
 * not NULL (code FK_OK and an empty message on success). No C++ exception crosses this ABI.
 *
 * Loss callbacks run on the client's I/O thread, one per client. Keep them short and do not block
 * there: nothing else of that client (keep-alive, other callbacks, answers) runs meanwhile. From a
 * callback, every call that would talk to the sidecar returns FK_ERR_WRONG_THREAD instead of
 * deadlocking (a lost lease answers FK_ERR_EXPIRED or FK_ERR_LOST first, without asking); the
 * local getters, fk_lease_check_in(), fk_lease_free() and fk_client_close() work (the last two
 * finish their work after the callback returns).
 *
 * Keep-alive renews a lease from the I/O thread while the process lives, three times per validity
 * granted (the TTL, or less when the sidecar can vouch for its ZooKeeper session for less). With
 * renew_only_if_checked_in it renews only if fk_lease_check_in() was called since the previous
 * renew, so a hung application loses its lease instead of being kept alive by a healthy thread.
 *
 * Ownership:
 *   - fk_client: created by fk_connect(), freed by fk_client_close() (NULL is a no-op).
 *   - fk_lease: created by fk_acquire(), freed by fk_lease_free() (NULL is a no-op), which also
 *     releases the lease if still held. A lease may outlive its client: fk_client_close()
 *     releases every lease still held through it (the sidecar drops them with the connection,
 *     without calling their loss callback); their handles must still be freed, and until then
 *     their local getters report a released lease and their other calls fail with
 *     FK_ERR_SIDECAR_UNAVAILABLE.
 *   - Strings passed in (socket path, lock name, owner label) are copied before the call
 *     returns: the caller keeps ownership.
 *   - Strings returned by fk_error_name() and fk_loss_reason_name() are static. The string
 *     returned by fk_lease_name() lives as long as its lease handle. fk_error, fk_holder_info
 *     and fk_status_info are caller-allocated structs that the library fills in (fixed-size,
 *     NUL-terminated text). The text fk_status_json() returns is the caller's, freed with
 *     fk_free().
 *   - fk_holder_watch: created by fk_watch_holder(), freed by fk_holder_watch_free() (NULL is a
 *     no-op). It may outlive its client (it then calls nothing any more).
 *   - fk_request: created by fk_acquire_start(), freed by fk_request_free() (NULL is a no-op),
 *     which cancels it if not done and releases a grant no fk_request_wait() took. It may
 *     outlive its client (it then ends with FK_ERR_SIDECAR_UNAVAILABLE).
 *   - `user_data` is the caller's: the library only passes it to on_lost. It must stay valid
 *     until fk_lease_free() returns (or fk_acquire() failed).
 */
#ifndef FENCEKEEPER_H_
#define FENCEKEEPER_H_

#include <stddef.h>
#include <stdint.h>

#if defined(FK_BUILDING_LIBRARY)
#define FK_EXPORT __attribute__((visibility("default")))
#else
#define FK_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Outcomes: the sidecar's schema (ipc/fencekeeper.capnp, enum Error) plus the client's own. */
typedef enum fk_error_code {
  FK_OK = 0,
  FK_ERR_INVALID_NAME = 1,     /* lock name malformed; do not retry as is */
  FK_ERR_INVALID_ARGUMENT = 2, /* e.g. TTL or wait out of the sidecar's bounds */
  FK_ERR_TIMED_OUT = 3,        /* not granted within wait_ms (wait_ms 0: held by someone else) */
  FK_ERR_NOT_HELD = 4,         /* the lease was released already */
  FK_ERR_EXPIRED = 5,          /* the TTL ran out before a renew: lost; acquire again */
  FK_ERR_LOST = 6,             /* lost another way (see fk_loss_reason) */
  FK_ERR_ZK_UNAVAILABLE = 7,   /* the sidecar cannot reach ZooKeeper now: retry later */
  FK_ERR_SHUTTING_DOWN = 8,    /* the sidecar is stopping */
  FK_ERR_LIMIT_REACHED = 9,    /* too many leases or waiters on this sidecar or connection */
  FK_ERR_INTERNAL = 10,        /* a bug: report it */
  FK_ERR_PERMISSION_DENIED = 11, /* this peer is not allowed, or ZooKeeper refused an ACL */
  FK_ERR_INVALID_OWNER = 12,     /* owner label: not UTF-8, a control character, or too long */
  FK_ERR_MODE_CONFLICT = 13,     /* the lock's queue holds another mode or permit count: the
                                    message names both; do not retry as is */
  FK_ERR_SIDECAR_UNAVAILABLE = 100, /* cannot connect, the connection dropped, client closed */
  FK_ERR_WRONG_THREAD = 101,        /* called from a loss callback, on the client's I/O thread */
  FK_ERR_CANCELLED = 102,           /* fk_request_cancel() withdrew the acquire */
  FK_ERR_IN_PROGRESS = 103          /* fk_request_wait(): the acquire is not done yet */
} fk_error_code;

/* Why a lease was lost (the `reason` of on_lost). */
typedef enum fk_loss_reason {
  FK_LOSS_TTL_EXPIRED = 0,        /* not renewed in time */
  FK_LOSS_SESSION_LOST = 1,       /* the sidecar's ZooKeeper session expired */
  FK_LOSS_SESSION_UNCERTAIN = 2,  /* the sidecar cannot prove its session is alive */
  FK_LOSS_SIDECAR_SHUTDOWN = 3,   /* the sidecar is stopping */
  FK_LOSS_RELEASED_ELSEWHERE = 4, /* the lock node was deleted by another path */
  FK_LOSS_CONNECTION_LOST = 100,  /* this client's connection to the sidecar dropped */
  FK_LOSS_RENEW_FAILED = 101      /* a keep-alive renew was answered with an error */
} fk_loss_reason;

#define FK_MESSAGE_MAX 256

typedef struct fk_error {
  int code;                     /* an fk_error_code */
  char message[FK_MESSAGE_MAX]; /* for people: the code's name, then after ": " the sidecar's
                                   detail when it gave one; NUL-terminated, truncated to fit */
} fk_error;

typedef struct fk_client fk_client;
typedef struct fk_lease fk_lease;
typedef struct fk_request fk_request;

/* Called once, on the client's I/O thread, when a lease is lost (never after its owner released
 * or freed it). `reason` is an fk_loss_reason. */
typedef void (*fk_lost_fn)(void* user_data, uint64_t token, int reason);

/* Jeopardy, called on the client's I/O thread: at_risk 1 when the sidecar's ZooKeeper connection
 * is down (or its heartbeats are overdue) while its session is still vouched for, left_ms being
 * how long: the lease is lost then unless the connection comes back (checkpoint now); at_risk 0
 * (left_ms 0) when it came back in time. */
typedef void (*fk_risk_fn)(void* user_data, uint64_t token, int at_risk, uint32_t left_ms);

/* How a lease shares its lock (fk_acquire_options.mode). */
typedef enum fk_lock_mode {
  FK_MODE_EXCLUSIVE = 0, /* alone (kazoo's Lock and WriteLock) */
  FK_MODE_SHARED = 1,    /* with other shared holders, never with an exclusive one (ReadLock) */
  FK_MODE_PERMITS = 2,   /* one of at most `permits` holders: a semaphore */
} fk_lock_mode;

/* Options of fk_acquire(). Fill with fk_acquire_options_init(), then change fields: `size` lets
 * a newer library accept the struct of an older caller (missing fields take their defaults) and
 * refuse options it does not know (FK_ERR_INVALID_ARGUMENT when bytes past its own struct are
 * not zero). */
typedef struct fk_acquire_options {
  size_t size;                  /* sizeof(fk_acquire_options) */
  uint32_t ttl_ms;              /* the lease's TTL; default 30000 (0 also means 30000) */
  uint32_t wait_ms;             /* how long to queue for the lock; default 0: try once;
                                   FK_WAIT_FOREVER: no deadline; else at most 1 h */
  const char* owner_label;      /* shown by holder queries; default NULL (none); copied */
  int keep_alive;               /* renew from the I/O thread; default 1 */
  int renew_only_if_checked_in; /* keep-alive renews only after fk_lease_check_in(); default 0 */
  int exit_on_loss;             /* on loss, print a line to stderr and _exit(70); default 0 */
  fk_lost_fn on_lost;           /* default NULL */
  void* user_data;              /* passed to on_lost */
  int mode;                     /* an fk_lock_mode; default FK_MODE_EXCLUSIVE */
  uint32_t permits;             /* FK_MODE_PERMITS: N, 1..10000; ignored otherwise */
  fk_risk_fn on_risk;           /* default NULL; gets user_data too */
} fk_acquire_options;

/* fk_acquire_options.wait_ms with no deadline: an election's campaign keeps its queue place. */
#define FK_WAIT_FOREVER 0xFFFFFFFFu

#define FK_OWNER_LABEL_MAX 256

/* Who holds a lock. `owner_label` is NUL-terminated and cut to FK_OWNER_LABEL_MAX bytes (only a
 * holder outside fencekeeper, e.g. a kazoo client, can have a longer one). */
/* One of a lock's holders (fk_holder_info.holders). */
typedef struct fk_holder_entry {
  uint64_t token;
  int mode;              /* an fk_lock_mode */
  uint32_t permits;      /* FK_MODE_PERMITS: the N its request asked for */
  int64_t since_unix_ms;
  int this_sidecar;
  char owner_label[FK_OWNER_LABEL_MAX + 1];
} fk_holder_entry;

#define FK_HOLDERS_LISTED 16

/* token, owner_label, since_unix_ms and this_sidecar are the first (oldest) holder's. */
typedef struct fk_holder_info {
  size_t size; /* set to sizeof(fk_holder_info) before the call (the size before `holder_count`,
                  an older caller's, is accepted: it gets the first holder only) */
  int held;
  uint64_t token; /* the holder's fencing token (its node's czxid) */
  char owner_label[FK_OWNER_LABEL_MAX + 1];
  int64_t since_unix_ms; /* grant time if this sidecar holds it, else the node's ctime */
  uint32_t waiters;      /* contenders queued behind the holder, from any client */
  int this_sidecar;      /* held through this sidecar's ZooKeeper session */
  uint32_t holder_count;   /* every holder: several for a shared lock or a semaphore */
  uint32_t holders_listed; /* the first ones, in `holders`: at most FK_HOLDERS_LISTED */
  fk_holder_entry holders[FK_HOLDERS_LISTED];
} fk_holder_info;

#define FK_STATUS_TEXT_MAX 64

/* The sidecar's state in numbers: what `fencectl status` summarizes (fk_status_json() has the
 * whole answer, leases and waiters included). Text is NUL-terminated, cut to fit. */
typedef struct fk_status_info {
  size_t size;                         /* set to sizeof(fk_status_info) before the call */
  char zk_state[FK_STATUS_TEXT_MAX];   /* "connected", "connecting", "expired", ... */
  char session_id[FK_STATUS_TEXT_MAX]; /* hex, "0x..." */
  uint32_t session_timeout_ms;         /* negotiated with ZooKeeper */
  uint32_t safe_for_ms;                /* how long the sidecar can still vouch for it */
  uint32_t leases_held;
  uint32_t waiters; /* acquires not granted yet */
  uint32_t connections;
  uint32_t pending_deletes; /* lock node deletions not confirmed yet */
  uint64_t uptime_ms;
  uint64_t grants_total;
  uint64_t dropped_deletes; /* unconfirmed deletions given up at the bound */
  uint64_t refused_total;   /* requests refused by a limit or the allow-list */
  uint64_t accept_failures;
  int accepting;                           /* 0 while accept() fails: nobody new gets in */
  int ready;                               /* the session is vouched for (/readyz's 200) */
  int healthy;                             /* the loop serves, every socket accepts (/healthz) */
  char not_ready_reason[FK_MESSAGE_MAX];   /* empty when ready */
  char not_healthy_reason[FK_MESSAGE_MAX]; /* empty when healthy */
  char version[FK_STATUS_TEXT_MAX];        /* fencekeeper's version */
  char instance_id[FK_STATUS_TEXT_MAX];    /* the sidecar process's id, new at every start */
} fk_status_info;

/* Options of fk_connect_with(). Fill with fk_connect_options_init(); `size` as in
 * fk_acquire_options. */
typedef struct fk_connect_options {
  size_t size;        /* sizeof(fk_connect_options) */
  int64_t expect_uid; /* the uid the sidecar must run as (SO_PEERCRED), checked instead of the
                         default rule; default -1: $FENCEKEEPER_EXPECT_UID if set, else the
                         default rule (see fk_connect) */
} fk_connect_options;

/* Connects to the sidecar's socket: `socket_path`, or when NULL $FENCEKEEPER_SOCKET, else
 * /run/fencekeeper/fencekeeper.sock (in its subdirectory "<name>.d/" when the socket's directory
 * is writable by others, as the sidecar does). Starts the client's I/O thread. Before anything
 * is sent, the server is checked: by default its uid (SO_PEERCRED) must own the socket file,
 * whose directory no one else can write, and where that directory sits in one others can write
 * (a Kubernetes emptyDir, /tmp) it must be root or this process's uid. A server that fails the
 * check is refused with FK_ERR_SIDECAR_UNAVAILABLE, the message naming both uids. */
FK_EXPORT int fk_connect(const char* socket_path, fk_client** out, fk_error* err);

FK_EXPORT void fk_connect_options_init(fk_connect_options* options);

/* fk_connect() with options; `options` NULL: the defaults. */
FK_EXPORT int fk_connect_with(const char* socket_path, const fk_connect_options* options,
                              fk_client** out, fk_error* err);

/* Closes the connection and joins the I/O thread; releases the leases still held through it. */
FK_EXPORT void fk_client_close(fk_client* client);

FK_EXPORT void fk_acquire_options_init(fk_acquire_options* options);

/* Queues for the lock `name` and blocks until it is granted (FK_OK, `*out` set), wait_ms passed
 * (FK_ERR_TIMED_OUT), or an error. `options` NULL: the defaults. On failure `*out` is NULL.
 * `name` and owner_label are C strings: they end at their first NUL, so a binding whose strings
 * may hold NUL bytes must refuse those itself (the Python package does), or the sidecar is
 * sent only what comes before it.
 * A grant lost or expired before it could be returned (the caller was stopped, say) is dropped
 * without calling on_lost, and the lock is queued for again within what is left of wait_ms. */
FK_EXPORT int fk_acquire(fk_client* client, const char* name, const fk_acquire_options* options,
                         fk_lease** out, fk_error* err);

/* fk_acquire() without blocking, for a caller that must be able to give up: starts the acquire
 * and returns at once with `*out` set (FK_OK), or fails as fk_acquire() would before sending
 * anything (`*out` NULL). Then wait with fk_request_wait(), or poll fk_request_fd(), and cancel
 * with fk_request_cancel() from any thread or a signal handler. A request refused by the client
 * itself (called from a loss callback, the connection dropped) is returned done: its
 * fk_request_wait() says why. */
FK_EXPORT int fk_acquire_start(fk_client* client, const char* name,
                               const fk_acquire_options* options, fk_request** out, fk_error* err);

/* Withdraws the acquire: the sidecar deletes its queue node (gone from ZooKeeper within
 * milliseconds), and fk_request_wait() answers FK_ERR_CANCELLED. A grant that crossed the cancel
 * is released, never returned. Async-signal-safe (an atomic store and a write(2)): callable
 * from a signal handler or any thread, any number of times; no effect once the request is done
 * or for NULL. Do not call it concurrently with fk_request_free() of the same request. */
FK_EXPORT void fk_request_cancel(fk_request* request);

/* A file descriptor that becomes readable (POLLIN) once the request is done, and stays so: for
 * poll(2), epoll or an event loop. Never read or close it. -1 for NULL. */
FK_EXPORT int fk_request_fd(const fk_request* request);

/* Waits up to timeout_ms (negative: no limit) for the request to be done. Done: FK_OK with
 * `*out` the lease (to the first fk_request_wait() only; later ones return FK_ERR_NOT_HELD), or
 * the acquire's error (FK_ERR_CANCELLED after a cancel, FK_ERR_TIMED_OUT when wait_ms ran out,
 * ...). Not done in time: FK_ERR_IN_PROGRESS. `*out` is NULL unless FK_OK. A signal does not
 * end the wait early: wait in slices, or cancel from the handler (the wait then ends). */
FK_EXPORT int fk_request_wait(fk_request* request, int64_t timeout_ms, fk_lease** out,
                              fk_error* err);

/* Cancels the request if it is not done, releases a grant no fk_request_wait() took, and frees
 * the handle. Does not block on the sidecar. */
FK_EXPORT void fk_request_free(fk_request* request);

/* The lock's name; valid until fk_lease_free(). */
FK_EXPORT const char* fk_lease_name(const fk_lease* lease);

/* The fencing token: send it with every request to storage. */
FK_EXPORT uint64_t fk_lease_token(const fk_lease* lease);

/* How long the lease is valid from now; 0 once lost, released or past. Local: no round trip, no
 * syscall. Read from the sidecar's shared-memory lease table where this client can map it (a loss
 * the sidecar decides shows at once); else counted from the sidecar's last answer (from when
 * that request was sent). fk_client_uses_lease_table() says which. */
FK_EXPORT int64_t fk_lease_valid_for_ms(const fk_lease* lease);

/* Why the lease was lost (an fk_loss_reason) once fk_lease_lost() says 1; -1 before that, and for
 * a lease its owner released. */
FK_EXPORT int fk_lease_loss_reason(const fk_lease* lease);

/* 1 while the client's connection to the sidecar is up; 0 from a drop (every lease of that
 * connection is then lost, with FK_LOSS_CONNECTION_LOST) until the client has reconnected by
 * itself (it keeps trying: 20 ms, backing off to 1 s; calls meanwhile fail with
 * FK_ERR_SIDECAR_UNAVAILABLE), after fk_client_close(), or for NULL. */
FK_EXPORT int fk_client_connected(const fk_client* client);

/* 1 when fk_lease_valid_for_ms() of this client's leases reads the sidecar's shared-memory lease
 * table, else 0; `detail` (if not NULL) gets the table's path or why it is not read, cut to
 * `size` bytes with its NUL. */
FK_EXPORT int fk_client_uses_lease_table(fk_client* client, char* detail, size_t size);

/* Advisory, for a process without the lease: *valid = 1 when the sidecar's lease table shows a
 * lease on `name` with `token`, held and valid now, else 0. A check followed by a write can race
 * a loss: the storage's token check is the fence. FK_ERR_NOT_HELD when there is no table. */
FK_EXPORT int fk_lease_table_shows_valid(fk_client* client, const char* name, uint64_t token,
                                         int* valid, fk_error* err);

/* 1 once the lease was lost (the loss callback has been or is being called), else 0. */
FK_EXPORT int fk_lease_lost(const fk_lease* lease);

/* Loss as an event: a file descriptor that becomes readable (POLLIN) the moment the lease is
 * lost, and stays so (never when released), for poll(2), epoll, select or another runtime's
 * poller, beside the work's own descriptors. It lives as long as the lease handle: never read or
 * close it. -1 for NULL, or if the system refused an eventfd (EMFILE). */
FK_EXPORT int fk_lease_loss_fd(const fk_lease* lease);

/* 1 between the sidecar's "at risk" push and its "safe again" (see fk_risk_fn), else 0. */
FK_EXPORT int fk_lease_at_risk(const fk_lease* lease);

/* As fk_lease_loss_fd(), for the client's connection: readable while fk_client_connected() says
 * 0 after a drop (every lease it carried is lost), until the client has reconnected. */
FK_EXPORT int fk_client_loss_fd(fk_client* client);

/* Asks the sidecar: the token and how long the lease stays valid (either pointer may be NULL). */
FK_EXPORT int fk_lease_check(fk_lease* lease, uint64_t* token, int64_t* valid_ms, fk_error* err);

/* Extends the lease to ttl_ms from now (0: the TTL it was acquired with). */
FK_EXPORT int fk_lease_renew(fk_lease* lease, uint32_t ttl_ms, fk_error* err);

/* Tells keep-alive that the application is alive (see renew_only_if_checked_in). */
FK_EXPORT void fk_lease_check_in(fk_lease* lease);

/* Starts (on != 0) or stops keep-alive for this lease. */
FK_EXPORT int fk_lease_set_keep_alive(fk_lease* lease, int on, fk_error* err);

/* Releases the lease: the next in line gets the lock. The handle stays to be freed. Releasing a
 * lease that was lost meanwhile is harmless: it answers FK_ERR_LOST or FK_ERR_EXPIRED (news for
 * the caller that its work was not covered to the end), FK_ERR_NOT_HELD if released already, and
 * changes nothing at the sidecar; cleanup code may ignore those codes. */
FK_EXPORT int fk_lease_release(fk_lease* lease, fk_error* err);

/* Releases the lease if still held, and frees the handle. */
FK_EXPORT void fk_lease_free(fk_lease* lease);

/* Who holds the lock `name`, through any sidecar or a kazoo client. Set out->size first. */
FK_EXPORT int fk_holder(fk_client* client, const char* name, fk_holder_info* out, fk_error* err);

/* What a holder watch reports (fk_watch_holder). */
typedef enum fk_holder_state {
  FK_HOLDER_HELD = 0,    /* `info` names the holder */
  FK_HOLDER_FREE = 1,    /* nobody holds the lock */
  FK_HOLDER_UNKNOWN = 2, /* the sidecar cannot vouch for its session, or the connection to it is
                            down: `detail` says why */
} fk_holder_state;

typedef struct fk_holder_watch fk_holder_watch;

/* Called on the client's I/O thread: `state` is an fk_holder_state; `info` (held: the holder) and
 * `detail` (unknown: why; else "") are valid during the call only. Keep it short; do not call the
 * library from it except fk_holder_watch_free() of its own watch. */
typedef void (*fk_holder_fn)(void* user_data, int state, const fk_holder_info* info,
                             const char* detail);

/* Watches who holds `name`: `on_change` is called with the holder now, then on every change,
 * pushed by the sidecar from its one ZooKeeper watch of the lock (changes may be coalesced; a
 * token is never lower than one reported before). FK_HOLDER_UNKNOWN while the sidecar cannot
 * vouch for its session or the connection is down; the watch resumes after a reconnect. Hints
 * for standbys and people, never a fence. On FK_OK `*out` is the watch, freed with
 * fk_holder_watch_free(); `user_data` must stay valid until then. */
FK_EXPORT int fk_watch_holder(fk_client* client, const char* name, fk_holder_fn on_change,
                              void* user_data, fk_holder_watch** out, fk_error* err);

/* Ends the watch: no call of its on_change begins after this returns. NULL is a no-op. */
FK_EXPORT void fk_holder_watch_free(fk_holder_watch* watch);

/* The sidecar's state (one status() call). Set out->size first: a larger size (a caller built
 * against a newer header) gets the fields this library knows, the rest left as they were;
 * a smaller one is refused with FK_ERR_INVALID_ARGUMENT. */
FK_EXPORT int fk_status(fk_client* client, fk_status_info* out, fk_error* err);

/* The sidecar's whole state as JSON, the document the status socket's GET /status serves: Cap'n
 * Proto's JsonCodec encoding of the schema's Status (ipc/fencekeeper.capnp; field names as
 * there, 64-bit numbers as strings, leases and waiters listed up to `listingCap`). On FK_OK
 * `*json_out` is a NUL-terminated UTF-8 string, the caller's to free with fk_free(); on
 * failure it is NULL. */
FK_EXPORT int fk_status_json(fk_client* client, char** json_out, fk_error* err);

/* Frees memory the library handed to the caller (fk_status_json's text); NULL is a no-op. */
FK_EXPORT void fk_free(void* memory);

/* Names for logs, e.g. "timed out", "ttl expired"; static strings ("unknown ..." otherwise). */
FK_EXPORT const char* fk_error_name(int code);
FK_EXPORT const char* fk_loss_reason_name(int reason);

#ifdef __cplusplus
}
#endif

#endif /* FENCEKEEPER_H_ */
