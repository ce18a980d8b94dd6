// The sidecar's accept loop on its listening socket. It outlives accept() failures (EMFILE when
// the fds run out, ENFILE, ENOBUFS...): each is retried after a backoff, 10 ms doubling to 1 s, so
// the sidecar never stays alive but unreachable. Runs on the loop thread; the listener owns it.
#pragma once

#include <kj/async-io.h>
#include <kj/function.h>

#include <cstdint>

#include "common/clock.h"

namespace fencekeeper::rpc {

class AcceptLoop {
 public:
  static constexpr Millis kFirstBackoff{10};
  static constexpr Millis kMaxBackoff{1'000};
  // While accept() keeps failing, one reminder line this often (not one per retry).
  static constexpr Millis kReminderEvery{60'000};

  // Starts accepting at once; `serve` gets every accepted connection.
  AcceptLoop(kj::ConnectionReceiver& receiver, Timer& timer,
             kj::Function<void(kj::AuthenticatedStream)> serve);
  ~AcceptLoop() noexcept(false);

  // False from a failed accept() until one succeeds or waits for a client: new clients cannot
  // connect meanwhile.
  bool accepting() const { return accepting_; }
  // Failed accept() calls since start.
  uint64_t failures() const { return failures_; }
  // Stops accepting for good (shutdown); a pending accept or backoff is cancelled.
  void stop() { running_ = nullptr; }

 private:
  kj::Promise<void> acceptNext();
  kj::Promise<void> retryAfter(kj::Exception&& error);
  void recovered();
  kj::Promise<void> sleep(Millis delay);

  kj::ConnectionReceiver& receiver_;
  Timer& timer_;
  kj::Function<void(kj::AuthenticatedStream)> serve_;
  bool accepting_ = true;
  uint64_t failures_ = 0;
  uint64_t streakFailures_ = 0;  // failures since the last successful accept
  Millis backoff_ = kFirstBackoff;
  TimePoint streakStarted_{};
  TimePoint lastReminder_{};
  kj::Promise<void> running_ = nullptr;
};

}  // namespace fencekeeper::rpc
