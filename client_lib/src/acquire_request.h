// What an AcquireRequest shares with the client's I/O thread: the outcome, and two eventfds (one
// the caller's cancel writes and the I/O thread watches, one written once the request is done).
// A blocking Client::acquire, which nobody can cancel or poll, has neither and waits on a
// condition variable: six system calls fewer an acquire. Internal to the client library.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "fencekeeper/client.h"

namespace fencekeeper {

struct AcquireRequestState {
  explicit AcquireRequestState(bool pollable = true);
  ~AcquireRequestState();
  AcquireRequestState(const AcquireRequestState&) = delete;
  AcquireRequestState& operator=(const AcquireRequestState&) = delete;

  // Async-signal-safe: an atomic store and a write(2).
  void cancel() noexcept;
  // Records the outcome once (later calls change nothing) and makes doneFd readable (or wakes
  // `finishedWait`). A lease nobody takes is released when the last owner of this state lets go
  // of it.
  void finish(Status status, std::unique_ptr<Lease> lease);

  std::atomic<bool> cancelled{false};
  std::atomic<bool> finished{false};
  const bool pollable;
  const int cancelFd;  // -1 if not pollable, or if eventfd() failed: then finished at once
  const int doneFd;

  std::mutex mutex;
  std::condition_variable finishedWait;  // not pollable: notified when finished
  Status status;
  std::unique_ptr<Lease> lease;  // a grant's, until a wait() takes it
};

}  // namespace fencekeeper
