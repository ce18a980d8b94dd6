/* The C ABI used from C99 the way an application would, against a real sidecar. */
#define _POSIX_C_SOURCE 200809L

#include "tests/c_abi/c_abi_scenarios.h"

#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fencekeeper.h"
#include "tests/c_abi/c_checks.h"

/* What a loss callback saw, and what it does from the I/O thread. */
typedef struct loss_record {
  pthread_mutex_t mutex;
  int calls;
  uint64_t token;
  int reason;
  int64_t at_ms;
  fk_lease* lease; /* tried from the callback, which must get FK_ERR_WRONG_THREAD */
  fk_client* client;
  int renew_code;
  int holder_code;
  int free_lease;   /* the callback frees `lease` */
  int close_client; /* the callback closes `client` */
} loss_record;

static void record_init(loss_record* r) {
  memset(r, 0, sizeof(*r));
  pthread_mutex_init(&r->mutex, NULL);
  r->renew_code = -1;
  r->holder_code = -1;
}

static void record_watch(loss_record* r, fk_lease* lease, fk_client* client) {
  pthread_mutex_lock(&r->mutex);
  r->lease = lease;
  r->client = client;
  pthread_mutex_unlock(&r->mutex);
}

static void record_loss(void* user_data, uint64_t token, int reason) {
  loss_record* r = (loss_record*)user_data;
  fk_holder_info info;
  pthread_mutex_lock(&r->mutex);
  r->calls++;
  r->token = token;
  r->reason = reason;
  r->at_ms = now_ms();
  if (r->lease) r->renew_code = fk_lease_renew(r->lease, 0, NULL);
  if (r->client) {
    info.size = sizeof(info);
    r->holder_code = fk_holder(r->client, "c-abi/any", &info, NULL);
  }
  if (r->free_lease) {
    fk_lease_free(r->lease);
    r->lease = NULL;
  }
  if (r->close_client) {
    fk_client_close(r->client);
    r->client = NULL;
  }
  pthread_mutex_unlock(&r->mutex);
}

static int loss_calls(loss_record* r) {
  int n;
  pthread_mutex_lock(&r->mutex);
  n = r->calls;
  pthread_mutex_unlock(&r->mutex);
  return n;
}

static int held(fk_client* client, const char* name) {
  fk_holder_info info;
  info.size = sizeof(info);
  return fk_holder(client, name, &info, NULL) == FK_OK ? info.held : -1;
}

int fk_scenario_lifecycle(const char* socket) {
  fk_error err;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_acquire_options options;
  uint64_t first;
  uint64_t token = 1;
  int64_t valid = 1;

  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  CHECK(client != NULL && err.message[0] == '\0');
  fk_acquire_options_init(&options);
  options.ttl_ms = 5000;
  options.owner_label = "c-lifecycle";
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/lifecycle", &options, &lease, &err));
  CHECK(lease != NULL);
  CHECK(strcmp(fk_lease_name(lease), "c-abi/lifecycle") == 0);
  first = fk_lease_token(lease);
  CHECK(first > 0);
  CHECK(fk_lease_valid_for_ms(lease) > 0 && fk_lease_valid_for_ms(lease) <= 5000);
  CHECK(!fk_lease_lost(lease));
  CHECK_CODE(FK_OK, fk_lease_check(lease, &token, &valid, &err));
  CHECK(token == first && valid > 0 && valid <= 5000);
  CHECK_CODE(FK_OK, fk_lease_renew(lease, 8000, &err));
  CHECK(fk_lease_valid_for_ms(lease) > 0);
  CHECK_CODE(FK_OK, fk_lease_renew(lease, 0, &err));
  CHECK_CODE(FK_OK, fk_lease_release(lease, &err));
  CHECK(fk_lease_valid_for_ms(lease) == 0 && !fk_lease_lost(lease));
  CHECK_CODE(FK_ERR_NOT_HELD, fk_lease_release(lease, &err));
  CHECK_CODE(FK_ERR_NOT_HELD, fk_lease_renew(lease, 0, &err));
  CHECK_CODE(FK_ERR_NOT_HELD, fk_lease_check(lease, &token, &valid, &err));
  CHECK(token == 0 && valid == 0);
  fk_lease_free(lease);

  /* The next holder gets a larger token; freeing a held lease releases it. */
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/lifecycle", NULL, &lease, &err));
  CHECK(fk_lease_token(lease) > first);
  CHECK(held(client, "c-abi/lifecycle") == 1);
  fk_lease_free(lease);
  CHECK_SOON(held(client, "c-abi/lifecycle") == 0, 10000);
  fk_client_close(client);
  return 0;
}

int fk_scenario_try_acquire_busy(const char* socket) {
  fk_error err;
  fk_client* c1 = NULL;
  fk_client* c2 = NULL;
  fk_lease* holder = NULL;
  fk_lease* other = NULL;
  fk_acquire_options options;
  int64_t started;

  CHECK_CODE(FK_OK, fk_connect(socket, &c1, &err));
  CHECK_CODE(FK_OK, fk_connect(socket, &c2, &err));
  CHECK_CODE(FK_OK, fk_acquire(c1, "c-abi/busy", NULL, &holder, &err));

  /* Default options: wait_ms 0 tries once. */
  CHECK_CODE(FK_ERR_TIMED_OUT, fk_acquire(c2, "c-abi/busy", NULL, &other, &err));
  CHECK(other == NULL && err.message[0] != '\0');

  fk_acquire_options_init(&options);
  options.wait_ms = 400;
  started = now_ms();
  CHECK_CODE(FK_ERR_TIMED_OUT, fk_acquire(c2, "c-abi/busy", &options, &other, &err));
  CHECK(other == NULL && now_ms() - started >= 350);

  CHECK_CODE(FK_OK, fk_lease_release(holder, &err));
  CHECK_CODE(FK_OK, fk_acquire(c2, "c-abi/busy", NULL, &other, &err));
  CHECK(fk_lease_token(other) > fk_lease_token(holder));
  fk_lease_free(holder);
  fk_lease_free(other);
  fk_client_close(c1);
  fk_client_close(c2);
  return 0;
}

int fk_scenario_invalid_arguments(const char* socket) {
  static const char* const kBadNames[] = {"", "a//b", "../x", "bad name", "trailing/", "a\\b"};
  static const char* const kBadLabels[] = {"\xff", "ok\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                           "red\x1b[31m", "del\x7f", "c1\xc2\x9b"};
  fk_error err;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_acquire_options options;
  struct {
    fk_acquire_options known;
    uint64_t future;
  } newer;
  char long_text[301];
  size_t i;

  CHECK_CODE(FK_ERR_SIDECAR_UNAVAILABLE, fk_connect("/nonexistent/fk.sock", &client, &err));
  CHECK(client == NULL && strstr(err.message, "/nonexistent/fk.sock") != NULL);
  CHECK(setenv("FENCEKEEPER_SOCKET", socket, 1) == 0);
  CHECK_CODE(FK_OK, fk_connect(NULL, &client, &err));
  CHECK(unsetenv("FENCEKEEPER_SOCKET") == 0);

  for (i = 0; i < sizeof(kBadNames) / sizeof(kBadNames[0]); ++i) {
    lease = (fk_lease*)&err; /* must be reset to NULL on failure */
    CHECK_CODE(FK_ERR_INVALID_NAME, fk_acquire(client, kBadNames[i], NULL, &lease, &err));
    CHECK(lease == NULL && err.message[0] != '\0');
  }
  memset(long_text, 'n', sizeof(long_text) - 1);
  long_text[sizeof(long_text) - 1] = '\0';
  CHECK_CODE(FK_ERR_INVALID_NAME, fk_acquire(client, long_text, NULL, &lease, &err));
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_acquire(client, NULL, NULL, &lease, &err));

  fk_acquire_options_init(&options);
  options.ttl_ms = 50; /* below the sidecar's minimum */
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_acquire(client, "c-abi/args", &options, &lease, &err));
  fk_acquire_options_init(&options);
  options.owner_label = long_text;
  CHECK_CODE(FK_ERR_INVALID_OWNER, fk_acquire(client, "c-abi/args", &options, &lease, &err));
  /* The sidecar's label rule: UTF-8 (no overlong form, surrogate or value above U+10FFFF) and
   * no control character; the message names the byte. */
  for (i = 0; i < sizeof(kBadLabels) / sizeof(kBadLabels[0]); ++i) {
    options.owner_label = kBadLabels[i];
    lease = (fk_lease*)&err; /* must be reset to NULL on failure */
    CHECK_CODE(FK_ERR_INVALID_OWNER, fk_acquire(client, "c-abi/args", &options, &lease, &err));
    CHECK(lease == NULL && strstr(err.message, "invalid owner: ") == err.message);
    CHECK(strstr(err.message, "byte ") != NULL);
  }
  CHECK(strcmp(fk_error_name(FK_ERR_INVALID_OWNER), "invalid owner") == 0);

  /* size: unset is refused; an older, shorter struct takes defaults for the rest; a newer one is
   * accepted only when the fields this library does not know are zero. */
  fk_acquire_options_init(&options);
  options.size = 0;
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_acquire(client, "c-abi/args", &options, &lease, &err));
  options.size = offsetof(fk_acquire_options, owner_label);
  options.keep_alive = 0;
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/args", &options, &lease, &err));
  fk_lease_free(lease);
  memset(&newer, 0, sizeof(newer));
  fk_acquire_options_init(&newer.known);
  newer.known.size = sizeof(newer);
  newer.future = 1;
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_acquire(client, "c-abi/args", &newer.known, &lease, &err));
  newer.future = 0;
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/args", &newer.known, &lease, &err));
  fk_lease_free(lease);

  CHECK(strcmp(fk_error_name(FK_ERR_TIMED_OUT), "timed out") == 0);
  CHECK(strcmp(fk_error_name(12345), "unknown error") == 0);
  CHECK(strcmp(fk_loss_reason_name(FK_LOSS_TTL_EXPIRED), "ttl expired") == 0);
  CHECK(strcmp(fk_loss_reason_name(FK_LOSS_CONNECTION_LOST), "connection to the sidecar lost") ==
        0);
  fk_client_close(client);
  fk_client_close(NULL);
  fk_lease_free(NULL);
  return 0;
}

int fk_scenario_lost_without_check_in(const char* socket) {
  fk_error err;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_acquire_options options;
  loss_record rec;
  int64_t acquired;

  record_init(&rec);
  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  fk_acquire_options_init(&options);
  options.ttl_ms = 600;
  options.renew_only_if_checked_in = 1;
  options.on_lost = record_loss;
  options.user_data = &rec;
  acquired = now_ms();
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/no-check-in", &options, &lease, &err));
  record_watch(&rec, lease, client);

  CHECK_SOON(loss_calls(&rec) == 1, 10000);
  sleep_ms(300);
  CHECK(loss_calls(&rec) == 1);
  pthread_mutex_lock(&rec.mutex);
  CHECK(rec.token == fk_lease_token(lease) && rec.reason == FK_LOSS_TTL_EXPIRED);
  CHECK(rec.at_ms - acquired >= 600);
  /* From the callback, a call that would talk to the sidecar refuses instead of deadlocking;
   * the lost lease itself answers locally. */
  CHECK(rec.holder_code == FK_ERR_WRONG_THREAD && rec.renew_code == FK_ERR_EXPIRED);
  pthread_mutex_unlock(&rec.mutex);

  CHECK(fk_lease_lost(lease) && fk_lease_valid_for_ms(lease) == 0);
  CHECK_CODE(FK_ERR_EXPIRED, fk_lease_renew(lease, 0, &err));
  CHECK_CODE(FK_ERR_EXPIRED, fk_lease_release(lease, &err));
  fk_lease_free(lease);
  CHECK_SOON(held(client, "c-abi/no-check-in") == 0, 10000);
  fk_client_close(client);
  return 0;
}

int fk_scenario_check_in_keeps_lease(const char* socket) {
  fk_error err;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_acquire_options options;
  loss_record rec;
  int64_t until;

  record_init(&rec);
  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  fk_acquire_options_init(&options);
  options.ttl_ms = 600;
  options.renew_only_if_checked_in = 1;
  options.on_lost = record_loss;
  options.user_data = &rec;
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/check-in", &options, &lease, &err));

  for (until = now_ms() + 2000; now_ms() < until;) {
    fk_lease_check_in(lease);
    sleep_ms(100);
    CHECK(!fk_lease_lost(lease) && fk_lease_valid_for_ms(lease) > 0);
  }
  CHECK(loss_calls(&rec) == 0);
  CHECK_CODE(FK_OK, fk_lease_release(lease, &err));
  sleep_ms(800);
  CHECK(loss_calls(&rec) == 0); /* no callback for a lease its owner released */
  fk_lease_free(lease);
  fk_client_close(client);
  return 0;
}

int fk_scenario_keep_alive_toggle(const char* socket) {
  fk_error err;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_acquire_options options;
  loss_record rec;

  record_init(&rec);
  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  fk_acquire_options_init(&options);
  options.ttl_ms = 600;
  options.keep_alive = 0;
  options.on_lost = record_loss;
  options.user_data = &rec;
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/keep-alive", &options, &lease, &err));
  CHECK_CODE(FK_OK, fk_lease_set_keep_alive(lease, 1, &err));
  CHECK_CODE(FK_OK, fk_lease_set_keep_alive(lease, 1, &err)); /* already on: no second loop */
  sleep_ms(1500);
  CHECK(loss_calls(&rec) == 0 && !fk_lease_lost(lease));
  CHECK_CODE(FK_OK, fk_lease_check(lease, NULL, NULL, &err));

  CHECK_CODE(FK_OK, fk_lease_set_keep_alive(lease, 0, &err));
  CHECK_SOON(loss_calls(&rec) == 1, 5000);
  pthread_mutex_lock(&rec.mutex);
  CHECK(rec.reason == FK_LOSS_TTL_EXPIRED);
  pthread_mutex_unlock(&rec.mutex);
  CHECK_CODE(FK_ERR_EXPIRED, fk_lease_set_keep_alive(lease, 1, &err));
  fk_lease_free(lease);
  fk_client_close(client);
  return 0;
}

/* A blocking acquire of `name` on another thread: its code, lease and error are kept. */
typedef struct waiter {
  fk_client* client;
  const char* name;
  uint32_t wait_ms;
  fk_lease* lease;
  int code;
  fk_error err;
} waiter;

static void* wait_for_lock(void* arg) {
  waiter* w = (waiter*)arg;
  fk_acquire_options options;
  fk_acquire_options_init(&options);
  options.wait_ms = w->wait_ms;
  options.owner_label = "c-waiter";
  w->code = fk_acquire(w->client, w->name, &options, &w->lease, &w->err);
  return NULL;
}

/* Shared locks and semaphores through the C ABI: two shared leases at once, a writer refused
 * beside them, every holder listed with its mode; a semaphore of 2 whose third request waits, and
 * another N refused with FK_ERR_MODE_CONFLICT naming both; an older caller's fk_holder_info (the
 * size before holder_count) still accepted, and an unknown mode refused. */
int fk_scenario_lock_modes(const char* socket) {
  fk_error err;
  fk_client* c = NULL;
  fk_lease* r1 = NULL;
  fk_lease* r2 = NULL;
  fk_lease* w = NULL;
  fk_lease* s[3] = {NULL, NULL, NULL};
  fk_acquire_options o;
  fk_holder_info info;
  size_t older = offsetof(fk_holder_info, holder_count);

  CHECK_CODE(FK_OK, fk_connect(socket, &c, &err));
  fk_acquire_options_init(&o);
  CHECK(o.mode == FK_MODE_EXCLUSIVE && o.permits == 0);
  o.mode = FK_MODE_SHARED;
  o.owner_label = "reader-1";
  CHECK_CODE(FK_OK, fk_acquire(c, "c-abi/modes", &o, &r1, &err));
  o.owner_label = "reader-2";
  CHECK_CODE(FK_OK, fk_acquire(c, "c-abi/modes", &o, &r2, &err));
  o.mode = FK_MODE_EXCLUSIVE;
  CHECK_CODE(FK_ERR_TIMED_OUT, fk_acquire(c, "c-abi/modes", &o, &w, &err));
  info.size = sizeof(info);
  CHECK_CODE(FK_OK, fk_holder(c, "c-abi/modes", &info, &err));
  CHECK(info.held && info.holder_count == 2 && info.holders_listed == 2);
  CHECK(info.holders[0].token == fk_lease_token(r1) && info.holders[1].token == fk_lease_token(r2));
  CHECK(info.holders[0].mode == FK_MODE_SHARED && info.holders[1].this_sidecar);
  CHECK(strcmp(info.holders[1].owner_label, "reader-2") == 0 && info.token == fk_lease_token(r1));
  memset(&info, 0, sizeof(info));
  info.size = older;  /* a caller built before the holders list */
  CHECK_CODE(FK_OK, fk_holder(c, "c-abi/modes", &info, &err));
  CHECK(info.held && info.token == fk_lease_token(r1) && info.holder_count == 0);
  fk_lease_free(r1);
  fk_lease_free(r2);

  o.mode = FK_MODE_PERMITS;
  o.permits = 2;
  o.owner_label = "permit";
  CHECK_CODE(FK_OK, fk_acquire(c, "c-abi/pool", &o, &s[0], &err));
  CHECK_CODE(FK_OK, fk_acquire(c, "c-abi/pool", &o, &s[1], &err));
  CHECK_CODE(FK_ERR_TIMED_OUT, fk_acquire(c, "c-abi/pool", &o, &s[2], &err));
  o.permits = 3;
  CHECK_CODE(FK_ERR_MODE_CONFLICT, fk_acquire(c, "c-abi/pool", &o, &s[2], &err));
  CHECK(strstr(err.message, "3 permits") && strstr(err.message, "2 permits"));
  info.size = sizeof(info);
  CHECK_CODE(FK_OK, fk_holder(c, "c-abi/pool", &info, &err));
  CHECK(info.holder_count == 2 && info.holders[1].mode == FK_MODE_PERMITS &&
        info.holders[1].permits == 2);
  o.mode = 7;
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_acquire(c, "c-abi/pool", &o, &s[2], &err));
  CHECK(strstr(err.message, "mode 7"));
  fk_lease_free(s[0]);
  fk_lease_free(s[1]);
  fk_client_close(c);
  return 0;
}

static int readable(int fd, int timeout_ms) {
  struct pollfd p;
  p.fd = fd;
  p.events = POLLIN;
  p.revents = 0;
  return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* Loss as an event: the lease's loss fd turns readable when its node is deleted behind its back
 * (and stays so), not before, and a released lease's never does; the client's loss fd turns
 * readable when the connection drops, and clears once the client has reconnected. */
int fk_scenario_loss_fds(const char* socket, void (*delete_node)(void* ctx, const char* name),
                         void (*kill_sidecar)(void* ctx), void (*restart_sidecar)(void* ctx),
                         void* ctx) {
  fk_error err;
  fk_client* c = NULL;
  fk_lease* lease = NULL;
  fk_lease* released = NULL;
  fk_acquire_options o;
  int fd, client_fd;

  CHECK_CODE(FK_OK, fk_connect(socket, &c, &err));
  CHECK(fk_lease_loss_fd(NULL) == -1);
  fk_acquire_options_init(&o);
  CHECK_CODE(FK_OK, fk_acquire(c, "c-abi/released", &o, &released, &err));
  fd = fk_lease_loss_fd(released);
  CHECK(fd >= 0);
  CHECK_CODE(FK_OK, fk_lease_release(released, &err));
  CHECK(!readable(fd, 200));

  CHECK_CODE(FK_OK, fk_acquire(c, "c-abi/loss-fd", &o, &lease, &err));
  fd = fk_lease_loss_fd(lease);
  CHECK(fd >= 0 && fd == fk_lease_loss_fd(lease));
  CHECK(!readable(fd, 0) && !fk_lease_lost(lease));
  delete_node(ctx, "c-abi/loss-fd");
  CHECK(readable(fd, 10000));
  CHECK(fk_lease_lost(lease) && fk_lease_loss_reason(lease) == FK_LOSS_RELEASED_ELSEWHERE);
  CHECK(readable(fd, 0)); /* and stays so */
  fk_lease_free(lease);
  fk_lease_free(released);

  client_fd = fk_client_loss_fd(c);
  CHECK(client_fd >= 0 && !readable(client_fd, 0));
  kill_sidecar(ctx);
  CHECK(readable(client_fd, 10000));
  CHECK(!fk_client_connected(c));
  restart_sidecar(ctx);
  CHECK_SOON(fk_client_connected(c), 20000);
  CHECK(!readable(client_fd, 0));
  fk_client_close(c);
  return 0;
}

typedef struct risk_record {
  pthread_mutex_t mutex;
  int risks, safes, losses;
  uint32_t left_ms;
} risk_record;

static void record_risk(void* user_data, uint64_t token, int at_risk, uint32_t left_ms) {
  risk_record* r = (risk_record*)user_data;
  (void)token;
  pthread_mutex_lock(&r->mutex);
  if (at_risk) {
    r->left_ms = left_ms;
    ++r->risks;
  } else {
    ++r->safes;
  }
  pthread_mutex_unlock(&r->mutex);
}

static void record_risk_loss(void* user_data, uint64_t token, int reason) {
  risk_record* r = (risk_record*)user_data;
  (void)token;
  (void)reason;
  pthread_mutex_lock(&r->mutex);
  ++r->losses;
  pthread_mutex_unlock(&r->mutex);
}

static int risk_count(risk_record* r, const int* field) {
  int n;
  pthread_mutex_lock(&r->mutex);
  n = *field;
  pthread_mutex_unlock(&r->mutex);
  return n;
}

/* Jeopardy through the C ABI: a ZooKeeper frozen for a moment puts the lease at risk (on_risk,
 * fk_lease_at_risk) with time left, and once thawed it is safe again, not lost. */
int fk_scenario_at_risk(const char* socket, void (*freeze)(void* ctx), void (*thaw)(void* ctx),
                        void* ctx) {
  fk_error err;
  fk_client* c = NULL;
  fk_lease* lease = NULL;
  fk_acquire_options o;
  risk_record r;
  uint32_t left_ms;

  memset(&r, 0, sizeof(r));
  pthread_mutex_init(&r.mutex, NULL);
  CHECK_CODE(FK_OK, fk_connect(socket, &c, &err));
  fk_acquire_options_init(&o);
  o.on_risk = record_risk;
  o.on_lost = record_risk_loss;
  o.user_data = &r;
  CHECK_CODE(FK_OK, fk_acquire(c, "c-abi/at-risk", &o, &lease, &err));
  CHECK(!fk_lease_at_risk(lease));
  freeze(ctx);
  CHECK_SOON(risk_count(&r, &r.risks) == 1, 15000);
  thaw(ctx);
  CHECK(fk_lease_at_risk(lease) || risk_count(&r, &r.safes) == 1);
  pthread_mutex_lock(&r.mutex);
  left_ms = r.left_ms;
  pthread_mutex_unlock(&r.mutex);
  CHECK(left_ms > 0 && left_ms < 4000);
  CHECK_SOON(risk_count(&r, &r.safes) == 1, 15000);
  CHECK(!fk_lease_at_risk(lease) && !fk_lease_lost(lease) && risk_count(&r, &r.losses) == 0);
  CHECK_CODE(FK_OK, fk_lease_release(lease, &err));
  fk_lease_free(lease);
  fk_client_close(c);
  return 0;
}

int fk_scenario_holder(const char* socket) {
  fk_error err;
  fk_client* c1 = NULL;
  fk_lease* lease = NULL;
  fk_acquire_options options;
  fk_holder_info info;
  waiter w;
  pthread_t thread;
  int64_t wall_ms = (int64_t)time(NULL) * 1000;

  CHECK_CODE(FK_OK, fk_connect(socket, &c1, &err));
  memset(&w, 0, sizeof(w));
  w.name = "c-abi/holder";
  w.wait_ms = 10000;
  CHECK_CODE(FK_OK, fk_connect(socket, &w.client, &err));
  info.size = sizeof(info);
  CHECK_CODE(FK_OK, fk_holder(c1, "c-abi/holder", &info, &err));
  CHECK(!info.held && info.token == 0 && info.owner_label[0] == '\0');

  fk_acquire_options_init(&options);
  options.owner_label = "c-holder";
  CHECK_CODE(FK_OK, fk_acquire(c1, "c-abi/holder", &options, &lease, &err));
  CHECK_CODE(FK_OK, fk_holder(w.client, "c-abi/holder", &info, &err));
  CHECK(info.held && info.token == fk_lease_token(lease) && info.this_sidecar);
  CHECK(strcmp(info.owner_label, "c-holder") == 0 && info.waiters == 0);
  CHECK(info.since_unix_ms > wall_ms - 60000 && info.since_unix_ms < wall_ms + 60000);

  /* A blocking acquire from another thread queues behind the holder. */
  CHECK(pthread_create(&thread, NULL, wait_for_lock, &w) == 0);
  CHECK_SOON(fk_holder(c1, "c-abi/holder", &info, &err) == FK_OK && info.waiters == 1, 10000);
  CHECK_CODE(FK_OK, fk_lease_release(lease, &err));
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK(w.code == FK_OK && fk_lease_token(w.lease) > fk_lease_token(lease));
  CHECK_CODE(FK_OK, fk_holder(c1, "c-abi/holder", &info, &err));
  CHECK(info.held && info.token == fk_lease_token(w.lease));
  CHECK(strcmp(info.owner_label, "c-waiter") == 0);

  info.size = 0;
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_holder(c1, "c-abi/holder", &info, &err));
  fk_lease_free(lease);
  fk_lease_free(w.lease);
  fk_client_close(c1);
  fk_client_close(w.client);
  return 0;
}

enum { kThreads = 4, kRounds = 25 };

typedef struct worker {
  fk_client* client;
  fk_lease* lease;
  int failures;
} worker;

static void* hammer(void* arg) {
  worker* w = (worker*)arg;
  fk_holder_info info;
  uint64_t token;
  int i;
  for (i = 0; i < kRounds; ++i) {
    info.size = sizeof(info);
    fk_lease_check_in(w->lease);
    if (fk_lease_check(w->lease, &token, NULL, NULL) != FK_OK ||
        token != fk_lease_token(w->lease)) {
      w->failures++;
    }
    if (fk_holder(w->client, "c-abi/threads", &info, NULL) != FK_OK || info.token != token) {
      w->failures++;
    }
    if (fk_lease_renew(w->lease, 0, NULL) != FK_OK || fk_lease_valid_for_ms(w->lease) <= 0) {
      w->failures++;
    }
  }
  return NULL;
}

int fk_scenario_calls_from_threads(const char* socket) {
  fk_error err;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  worker workers[kThreads];
  pthread_t threads[kThreads];
  int i;

  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/threads", NULL, &lease, &err));
  for (i = 0; i < kThreads; ++i) {
    workers[i].client = client;
    workers[i].lease = lease;
    workers[i].failures = 0;
    CHECK(pthread_create(&threads[i], NULL, hammer, &workers[i]) == 0);
  }
  for (i = 0; i < kThreads; ++i) {
    CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK(workers[i].failures == 0);
  }
  CHECK_CODE(FK_OK, fk_lease_release(lease, &err));
  fk_lease_free(lease);
  fk_client_close(client);
  return 0;
}

int fk_scenario_lease_outlives_client(const char* socket) {
  fk_error err;
  fk_client* client = NULL;
  fk_client* observer = NULL;
  fk_lease* lease = NULL;
  fk_acquire_options options;
  loss_record rec;
  uint64_t token;

  record_init(&rec);
  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  CHECK_CODE(FK_OK, fk_connect(socket, &observer, &err));
  fk_acquire_options_init(&options);
  options.on_lost = record_loss;
  options.user_data = &rec;
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/outlives", &options, &lease, &err));
  token = fk_lease_token(lease);

  fk_client_close(client);
  CHECK(fk_lease_valid_for_ms(lease) == 0 && !fk_lease_lost(lease));
  CHECK(fk_lease_token(lease) == token);
  CHECK_CODE(FK_ERR_SIDECAR_UNAVAILABLE, fk_lease_renew(lease, 0, &err));
  CHECK_CODE(FK_ERR_SIDECAR_UNAVAILABLE, fk_lease_check(lease, NULL, NULL, &err));
  CHECK_CODE(FK_ERR_SIDECAR_UNAVAILABLE, fk_lease_release(lease, &err));
  CHECK_SOON(held(observer, "c-abi/outlives") == 0, 10000);
  fk_lease_free(lease);
  CHECK(loss_calls(&rec) == 0);
  fk_client_close(observer);
  return 0;
}

int fk_scenario_free_in_callback(const char* socket, void (*kill_sidecar)(void* ctx), void* ctx) {
  fk_error err;
  fk_client* client = NULL;
  fk_lease* first = NULL;
  fk_lease* second = NULL;
  fk_acquire_options options;
  loss_record frees;
  loss_record closes;

  record_init(&frees);
  record_init(&closes);
  frees.free_lease = 1;
  closes.free_lease = 1;
  closes.close_client = 1;
  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  fk_acquire_options_init(&options);
  options.ttl_ms = 900; /* keep-alive renews every 300 ms, racing the loss */
  options.on_lost = record_loss;
  options.user_data = &frees;
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/free-1", &options, &first, &err));
  options.user_data = &closes;
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/free-2", &options, &second, &err));
  record_watch(&frees, first, NULL);
  record_watch(&closes, second, client);

  kill_sidecar(ctx);
  CHECK_SOON(loss_calls(&frees) == 1 && loss_calls(&closes) == 1, 10000);
  pthread_mutex_lock(&frees.mutex);
  CHECK(frees.reason == FK_LOSS_CONNECTION_LOST && frees.lease == NULL);
  pthread_mutex_unlock(&frees.mutex);
  pthread_mutex_lock(&closes.mutex);
  CHECK(closes.reason == FK_LOSS_CONNECTION_LOST && closes.client == NULL);
  pthread_mutex_unlock(&closes.mutex);
  return 0;
}

int fk_scenario_connection_drop(const char* socket, void (*kill_sidecar)(void* ctx), void* ctx) {
  fk_error err;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_holder_info info;
  waiter w;
  pthread_t thread;

  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  CHECK(fk_client_connected(client) == 1 && fk_client_connected(NULL) == 0);
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/drop", NULL, &lease, &err));
  CHECK(fk_lease_loss_reason(lease) == -1 && fk_lease_loss_reason(NULL) == -1);
  memset(&w, 0, sizeof w);
  w.client = client;
  w.name = "c-abi/drop";
  w.wait_ms = 20000;
  CHECK(pthread_create(&thread, NULL, wait_for_lock, &w) == 0);
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  CHECK_SOON(fk_holder(client, "c-abi/drop", &info, &err) == FK_OK && info.waiters == 1, 10000);

  kill_sidecar(ctx);
  pthread_join(thread, NULL);
  CHECK(w.code == FK_ERR_SIDECAR_UNAVAILABLE && w.lease == NULL);
  CHECK(strstr(w.err.message, "closed the connection") != NULL);
  CHECK(strstr(w.err.message, "Peer disconnected") == NULL);
  CHECK_SOON(fk_client_connected(client) == 0, 10000);
  CHECK_SOON(fk_lease_lost(lease) == 1, 10000);
  CHECK(fk_lease_loss_reason(lease) == FK_LOSS_CONNECTION_LOST);
  fk_lease_free(lease);
  fk_client_close(client);
  return 0;
}

int fk_scenario_connect_options(const char* socket) {
  fk_error err;
  fk_client* client = NULL;
  fk_connect_options options;
  struct {
    fk_connect_options known;
    uint64_t future;
  } newer;

  fk_connect_options_init(&options);
  CHECK(options.size == sizeof(options) && options.expect_uid == -1);
  CHECK_CODE(FK_OK, fk_connect_with(socket, NULL, &client, &err));
  fk_client_close(client);
  options.expect_uid = (int64_t)geteuid();
  CHECK_CODE(FK_OK, fk_connect_with(socket, &options, &client, &err));
  fk_client_close(client);
  options.expect_uid = (int64_t)geteuid() + 12345;
  CHECK_CODE(FK_ERR_SIDECAR_UNAVAILABLE, fk_connect_with(socket, &options, &client, &err));
  CHECK(client == NULL && strstr(err.message, "expected uid") != NULL);

  fk_connect_options_init(&newer.known);
  newer.known.size = sizeof(newer);
  newer.future = 1;
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT,
             fk_connect_with(socket, (const fk_connect_options*)&newer, &client, &err));
  newer.future = 0;
  CHECK_CODE(FK_OK, fk_connect_with(socket, (const fk_connect_options*)&newer, &client, &err));
  fk_client_close(client);
  return 0;
}

int fk_scenario_impostor(const char* socket, int64_t impostor_uid, const char* detail) {
  fk_error err;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_connect_options options;
  fk_holder_info info;
  char uid_text[32];
  char expected[FK_MESSAGE_MAX];

  snprintf(uid_text, sizeof uid_text, "uid %lld", (long long)impostor_uid);
  CHECK_CODE(FK_ERR_SIDECAR_UNAVAILABLE, fk_connect(socket, &client, &err));
  CHECK(client == NULL && strstr(err.message, uid_text) != NULL);

  fk_connect_options_init(&options);
  options.expect_uid = impostor_uid;
  CHECK_CODE(FK_OK, fk_connect_with(socket, &options, &client, &err));
  snprintf(expected, sizeof expected, "limit reached: %s", detail);
  CHECK_CODE(FK_ERR_LIMIT_REACHED, fk_acquire(client, "c-abi/x", NULL, &lease, &err));
  CHECK(lease == NULL && strcmp(err.message, expected) == 0);
  info.size = sizeof(info);
  CHECK_CODE(FK_ERR_LIMIT_REACHED, fk_holder(client, "c-abi/x", &info, &err));
  CHECK(strcmp(err.message, expected) == 0);
  fk_client_close(client);
  return 0;
}

int fk_scenario_status(const char* socket) {
  fk_error err;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_acquire_options options;
  fk_status_info st;
  char* json = NULL;
  char want[96];

  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  memset(&st, 0, sizeof(st));
  st.size = sizeof(st);
  CHECK_CODE(FK_OK, fk_status(client, &st, &err));
  CHECK(strcmp(st.zk_state, "connected") == 0 && strncmp(st.session_id, "0x", 2) == 0);
  CHECK(st.session_timeout_ms > 0 && st.safe_for_ms > 0 && st.ready && st.healthy);
  CHECK(st.not_ready_reason[0] == '\0' && st.not_healthy_reason[0] == '\0');
  CHECK(st.version[0] != '\0' && st.instance_id[0] != '\0' && st.accepting);
  CHECK(st.leases_held == 0 && st.waiters == 0 && st.connections >= 1);

  fk_acquire_options_init(&options);
  options.owner_label = "c-status";
  CHECK_CODE(FK_OK, fk_acquire(client, "c-abi/status", &options, &lease, &err));
  CHECK_CODE(FK_OK, fk_status(client, &st, &err));
  CHECK(st.leases_held == 1 && st.grants_total >= 1 && st.uptime_ms > 0);

  /* The JSON is the status socket's: the schema's field names, 64-bit numbers as strings. */
  CHECK_CODE(FK_OK, fk_status_json(client, &json, &err));
  CHECK(json != NULL && json[0] == '{');
  CHECK(strstr(json, "\"zkState\":\"connected\"") != NULL);
  CHECK(strstr(json, "\"ready\":true") != NULL && strstr(json, "\"leasesHeld\":1") != NULL);
  CHECK(strstr(json, "\"name\":\"c-abi/status\"") != NULL);
  CHECK(strstr(json, "\"ownerLabel\":\"c-status\"") != NULL);
  snprintf(want, sizeof want, "\"token\":\"%llu\"", (unsigned long long)fk_lease_token(lease));
  CHECK(strstr(json, want) != NULL);
  fk_free(json);
  fk_free(NULL);

  st.size = sizeof(st) - 1;
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_status(client, &st, &err));
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_status(client, NULL, &err));
  json = (char*)&st; /* set to NULL on failure */
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_status_json(NULL, &json, &err));
  CHECK(json == NULL);
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_status_json(client, NULL, &err));
  fk_lease_free(lease);
  fk_client_close(client);
  return 0;
}
