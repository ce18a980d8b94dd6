/* The checks of the C ABI scenarios: each returns the line of the failed check from the scenario.
 * A scenario declares `fk_error err;` for CHECK_CODE. */
#ifndef FENCEKEEPER_TESTS_C_ABI_C_CHECKS_H_
#define FENCEKEEPER_TESTS_C_ABI_C_CHECKS_H_

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "fencekeeper.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      return __LINE__;                                                         \
    }                                                                          \
  } while (0)

/* `call` must return `want` and report the same code in the scenario's `err`. */
#define CHECK_CODE(want, call)                                                                \
  do {                                                                                        \
    int got_ = (call);                                                                        \
    if (got_ != (want) || err.code != got_) {                                                 \
      fprintf(stderr, "%s:%d: %s returned %d (%s: %s), want %d\n", __FILE__, __LINE__, #call, \
              got_, fk_error_name(got_), err.message, (want));                                \
      return __LINE__;                                                                        \
    }                                                                                         \
  } while (0)

static inline int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(int64_t ms) {
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000);
  ts.tv_nsec = (long)(ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* Polls `cond` every 10 ms for up to `ms`, then checks it. */
#define CHECK_SOON(cond, ms)                           \
  do {                                                 \
    int64_t until_ = now_ms() + (ms);                  \
    while (!(cond) && now_ms() < until_) sleep_ms(10); \
    CHECK(cond);                                       \
  } while (0)

#endif /* FENCEKEEPER_TESTS_C_ABI_C_CHECKS_H_ */
