/* Holder watches through the C ABI (fk_watch_holder, fk_holder_watch_free), from C99. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <string.h>

#include "fencekeeper.h"
#include "tests/c_abi/c_abi_scenarios.h"
#include "tests/c_abi/c_checks.h"

/* What one watch was told: written on the client's I/O thread, read by the scenario. */
typedef struct told {
  pthread_mutex_t mutex;
  int calls;
  int state;
  uint64_t token;
  char owner[FK_OWNER_LABEL_MAX + 1];
} told;

static void on_change(void* user_data, int state, const fk_holder_info* info, const char* detail) {
  told* t = (told*)user_data;
  (void)detail;
  pthread_mutex_lock(&t->mutex);
  t->calls++;
  t->state = state;
  t->token = info->token;
  memcpy(t->owner, info->owner_label, sizeof(t->owner)); /* both NUL-terminated, one size */
  pthread_mutex_unlock(&t->mutex);
}

/* Whether the last call said `state` (and, held, `token`); `calls` gets the number of calls. */
static int last_is(told* t, int state, uint64_t token, int* calls) {
  int yes;
  pthread_mutex_lock(&t->mutex);
  yes = t->calls > 0 && t->state == state && (token == 0 || t->token == token);
  if (calls) *calls = t->calls;
  pthread_mutex_unlock(&t->mutex);
  return yes;
}

int fk_scenario_holder_watch(const char* socket) {
  fk_error err;
  fk_client* watcher = NULL;
  fk_client* holder = NULL;
  fk_holder_watch* first = NULL;
  fk_holder_watch* second = NULL;
  fk_lease* lease = NULL;
  fk_acquire_options options;
  told a, b;
  int calls_before_free = 0, calls_after = 0;

  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  pthread_mutex_init(&a.mutex, NULL);
  pthread_mutex_init(&b.mutex, NULL);
  CHECK_CODE(FK_OK, fk_connect(socket, &watcher, &err));
  CHECK_CODE(FK_OK, fk_connect(socket, &holder, &err));
  CHECK_CODE(FK_ERR_INVALID_ARGUMENT, fk_watch_holder(watcher, "c-abi/watch", NULL, &a, &first,
                                                      &err));
  CHECK(first == NULL);
  CHECK_CODE(FK_ERR_INVALID_NAME, fk_watch_holder(watcher, "../x", on_change, &a, &first, &err));
  CHECK(strchr(err.message, ':') != NULL); /* the sidecar says why */

  CHECK_CODE(FK_OK, fk_watch_holder(watcher, "c-abi/watch", on_change, &a, &first, &err));
  CHECK_CODE(FK_OK, fk_watch_holder(watcher, "c-abi/watch", on_change, &b, &second, &err));
  CHECK_SOON(last_is(&a, FK_HOLDER_FREE, 0, NULL) && last_is(&b, FK_HOLDER_FREE, 0, NULL), 10000);

  fk_acquire_options_init(&options);
  options.owner_label = "c-watched";
  CHECK_CODE(FK_OK, fk_acquire(holder, "c-abi/watch", &options, &lease, &err));
  CHECK_SOON(last_is(&a, FK_HOLDER_HELD, fk_lease_token(lease), NULL), 10000);
  pthread_mutex_lock(&a.mutex);
  CHECK(strcmp(a.owner, "c-watched") == 0);
  pthread_mutex_unlock(&a.mutex);
  CHECK_CODE(FK_OK, fk_lease_release(lease, &err));
  CHECK_SOON(last_is(&a, FK_HOLDER_FREE, 0, &calls_before_free), 10000);
  fk_lease_free(lease);

  /* Freed: no call after; the other watch of the same client, told in the same order, shows
   * when the next change has been delivered. */
  fk_holder_watch_free(first);
  CHECK_SOON(last_is(&b, FK_HOLDER_FREE, 0, NULL), 10000);
  CHECK_CODE(FK_OK, fk_acquire(holder, "c-abi/watch", &options, &lease, &err));
  CHECK_SOON(last_is(&b, FK_HOLDER_HELD, fk_lease_token(lease), NULL), 10000);
  last_is(&a, FK_HOLDER_FREE, 0, &calls_after);
  CHECK(calls_after == calls_before_free);

  fk_holder_watch_free(second);
  fk_holder_watch_free(NULL);
  fk_lease_free(lease);
  fk_client_close(holder);
  fk_client_close(watcher);
  pthread_mutex_destroy(&a.mutex);
  pthread_mutex_destroy(&b.mutex);
  return 0;
}
