/* Cancellable acquires through the C ABI (fk_acquire_start, fk_request_*), from C99. */
#define _POSIX_C_SOURCE 200809L

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fencekeeper.h"
#include "tests/c_abi/c_abi_scenarios.h"
#include "tests/c_abi/c_checks.h"

/* A cancel takes effect within this long, its queue node gone from ZooKeeper by then. */
#define CANCEL_BOUND_MS 100

static int fd_readable(int fd) {
  struct pollfd p;
  p.fd = fd;
  p.events = POLLIN;
  p.revents = 0;
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* The lock's holder and queue, as the sidecar reads them from ZooKeeper (held -1 on error). */
static fk_holder_info holder_of(fk_client* client, const char* name) {
  fk_holder_info info;
  fk_error err;
  memset(&info, 0, sizeof(info));
  info.size = sizeof(info);
  if (fk_holder(client, name, &info, &err) != FK_OK) {
    info.held = -1;
    info.waiters = UINT32_MAX;
  }
  return info;
}

/* Whether the queue of `name` is empty (the cancelled request's node gone from ZooKeeper) by
 * `deadline_ms`, polled every 2 ms. */
static int queue_empty_by(fk_client* client, const char* name, int64_t deadline_ms) {
  while (holder_of(client, name).waiters != 0 && now_ms() < deadline_ms) sleep_ms(2);
  return holder_of(client, name).waiters == 0;
}

static fk_request* start(fk_client* client, const char* name, uint32_t wait_ms, fk_error* err) {
  fk_acquire_options options;
  fk_request* request = NULL;
  fk_acquire_options_init(&options);
  options.wait_ms = wait_ms;
  options.owner_label = "c-request";
  if (fk_acquire_start(client, name, &options, &request, err) != FK_OK) return NULL;
  return request;
}

/* On a thread of its own, 200 ms after its start: notes the time, then cancels `request`, or when
 * that is NULL sends `target` SIGUSR1 (whose handler cancels). */
typedef struct delayed_cancel {
  fk_request* request;
  pthread_t target;
  int64_t at_ms;
} delayed_cancel;

static void* cancel_after_200ms(void* arg) {
  delayed_cancel* d = (delayed_cancel*)arg;
  sleep_ms(200);
  d->at_ms = now_ms();
  if (d->request) {
    fk_request_cancel(d->request);
  } else {
    pthread_kill(d->target, SIGUSR1);
  }
  return NULL;
}

int fk_scenario_cancel_waiting_acquire(const char* socket) {
  const char* name = "c-abi/cancel";
  fk_error err;
  fk_client* holder_client = NULL;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_lease* got = NULL;
  fk_request* request;
  delayed_cancel c;
  pthread_t thread;
  int64_t cancelled_after;

  CHECK_CODE(FK_OK, fk_connect(socket, &holder_client, &err));
  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  CHECK_CODE(FK_OK, fk_acquire(holder_client, name, NULL, &lease, &err));

  request = start(client, name, 60000, &err);
  CHECK(request != NULL);
  CHECK(fk_request_fd(request) >= 0 && !fd_readable(fk_request_fd(request)));
  CHECK_CODE(FK_ERR_IN_PROGRESS, fk_request_wait(request, 0, &got, &err));
  CHECK(got == NULL);
  CHECK_SOON(holder_of(holder_client, name).waiters == 1, 10000);

  /* Cancelled from another thread while this one waits without a limit. */
  memset(&c, 0, sizeof(c));
  c.request = request;
  CHECK(pthread_create(&thread, NULL, cancel_after_200ms, &c) == 0);
  CHECK_CODE(FK_ERR_CANCELLED, fk_request_wait(request, -1, &got, &err));
  cancelled_after = now_ms();
  CHECK(pthread_join(thread, NULL) == 0); /* before reading what the thread wrote */
  cancelled_after -= c.at_ms;
  CHECK(got == NULL && strstr(err.message, "cancelled") != NULL);
  CHECK(cancelled_after <= CANCEL_BOUND_MS);
  CHECK(fk_request_fd(request) >= 0 && fd_readable(fk_request_fd(request)));
  /* Its queue node is gone from ZooKeeper within the bound of the cancel. */
  CHECK(queue_empty_by(holder_client, name, c.at_ms + CANCEL_BOUND_MS));
  /* Done is done: the answer stays, a second cancel changes nothing. */
  fk_request_cancel(request);
  CHECK_CODE(FK_ERR_CANCELLED, fk_request_wait(request, 0, &got, &err));
  fk_request_free(request);

  /* The holder is untouched, and the lock goes to the next one in line as usual. */
  CHECK(fk_lease_valid_for_ms(lease) > 0);
  CHECK_CODE(FK_OK, fk_lease_release(lease, &err));
  request = start(client, name, 10000, &err);
  CHECK(request != NULL);
  CHECK_CODE(FK_OK, fk_request_wait(request, 10000, &got, &err));
  CHECK(got != NULL && fk_lease_token(got) > fk_lease_token(lease));
  fk_lease_free(got);
  /* The lease went to the first wait: a second one is told so. */
  CHECK_CODE(FK_ERR_NOT_HELD, fk_request_wait(request, 0, &got, &err));
  fk_request_free(request);

  fk_request_cancel(NULL);
  fk_request_free(NULL);
  CHECK(fk_request_fd(NULL) == -1);
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_request_wait(NULL, 0, &got, &err));
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_acquire_start(client, NULL, NULL, &request, &err));
  CHECK(request == NULL);
  fk_lease_free(lease);
  fk_client_close(holder_client);
  fk_client_close(client);
  return 0;
}

static fk_request* volatile signalled_request;
static volatile sig_atomic_t signal_seen;

static void on_sigusr1(int signo) {
  (void)signo;
  fk_request_cancel(signalled_request); /* async-signal-safe */
  signal_seen = 1;
}

int fk_scenario_cancel_from_signal_handler(const char* socket) {
  const char* name = "c-abi/cancel-signal";
  fk_error err;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_lease* got = NULL;
  struct sigaction action, previous;
  delayed_cancel s;
  pthread_t thread;
  int64_t ended_after;

  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));
  CHECK_CODE(FK_OK, fk_acquire(client, name, NULL, &lease, &err));
  signalled_request = start(client, name, 60000, &err);
  CHECK(signalled_request != NULL);
  CHECK_SOON(holder_of(client, name).waiters == 1, 10000);

  memset(&action, 0, sizeof(action));
  action.sa_handler = on_sigusr1;
  sigemptyset(&action.sa_mask);
  CHECK(sigaction(SIGUSR1, &action, &previous) == 0);
  memset(&s, 0, sizeof(s));
  s.target = pthread_self();
  CHECK(pthread_create(&thread, NULL, cancel_after_200ms, &s) == 0);
  CHECK_CODE(FK_ERR_CANCELLED, fk_request_wait(signalled_request, -1, &got, &err));
  ended_after = now_ms();
  CHECK(pthread_join(thread, NULL) == 0); /* before reading what the thread wrote */
  ended_after -= s.at_ms;
  CHECK(sigaction(SIGUSR1, &previous, NULL) == 0);
  CHECK(signal_seen && got == NULL);
  CHECK(ended_after <= CANCEL_BOUND_MS);
  CHECK(queue_empty_by(client, name, s.at_ms + CANCEL_BOUND_MS));
  fk_request_free(signalled_request);
  fk_lease_free(lease);
  fk_client_close(client);
  return 0;
}

int fk_scenario_untaken_grant_is_released(const char* socket) {
  const char* name = "c-abi/untaken";
  fk_error err;
  fk_client* holder_client = NULL;
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_lease* got = NULL;
  fk_request* request;
  int round, code;

  CHECK_CODE(FK_OK, fk_connect(socket, &holder_client, &err));
  CHECK_CODE(FK_OK, fk_connect(socket, &client, &err));

  /* Granted, never waited for, freed: the lease is released, not orphaned. */
  CHECK_CODE(FK_OK, fk_acquire(holder_client, name, NULL, &lease, &err));
  request = start(client, name, 10000, &err);
  CHECK(request != NULL);
  CHECK_SOON(holder_of(holder_client, name).waiters == 1, 10000);
  CHECK_CODE(FK_OK, fk_lease_release(lease, &err));
  fk_lease_free(lease);
  lease = NULL;
  CHECK_SOON(fd_readable(fk_request_fd(request)), 10000);
  CHECK(holder_of(holder_client, name).held == 1);
  fk_request_free(request);
  CHECK_SOON(holder_of(holder_client, name).held == 0, 10000);

  /* A cancel that crosses the grant: whichever wins, nobody holds the lock afterwards unless
   * the caller got the lease in hand. */
  for (round = 0; round < 20; ++round) {
    CHECK_CODE(FK_OK, fk_acquire(holder_client, name, NULL, &lease, &err));
    request = start(client, name, 10000, &err);
    CHECK(request != NULL);
    CHECK_SOON(holder_of(holder_client, name).waiters == 1, 10000);
    CHECK_CODE(FK_OK, fk_lease_release(lease, &err));
    sleep_ms(round % 4); /* the grant is on its way for a few rounds, done for others */
    fk_request_cancel(request);
    code = fk_request_wait(request, 10000, &got, &err);
    CHECK(code == FK_OK || code == FK_ERR_CANCELLED);
    CHECK((code == FK_OK) == (got != NULL));
    if (got) {
      CHECK(holder_of(holder_client, name).held == 1);
      fk_lease_free(got);
      got = NULL;
    }
    fk_request_free(request);
    fk_lease_free(lease);
    lease = NULL;
    CHECK_SOON(
        holder_of(holder_client, name).held == 0 && holder_of(holder_client, name).waiters == 0,
        10000);
  }
  fk_client_close(holder_client);
  fk_client_close(client);
  return 0;
}
