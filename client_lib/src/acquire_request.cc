#include "client_lib/src/acquire_request.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

#include "boot_clock.h"

namespace fencekeeper {

namespace {

int newEventFd() { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

void signalFd(int fd) {
  uint64_t one = 1;
  ssize_t written = write(fd, &one, sizeof one);  // fails only if the counter would overflow
  (void)written;
}

}  // namespace

AcquireRequestState::AcquireRequestState(bool pollable)
    : pollable(pollable),
      cancelFd(pollable ? newEventFd() : -1),
      doneFd(pollable ? newEventFd() : -1) {
  if (pollable && (cancelFd < 0 || doneFd < 0)) {
    finish(Status{ErrorCode::kInternal,
                  std::string("internal error: eventfd: ") + std::strerror(errno)},
           nullptr);
  }
}

AcquireRequestState::~AcquireRequestState() {
  if (cancelFd >= 0) close(cancelFd);
  if (doneFd >= 0) close(doneFd);
}

void AcquireRequestState::cancel() noexcept {
  cancelled.store(true);
  if (cancelFd >= 0) signalFd(cancelFd);
}

void AcquireRequestState::finish(Status outcome, std::unique_ptr<Lease> granted) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (finished.load()) return;  // `granted` (none in practice) is released on the way out
    status = std::move(outcome);
    lease = std::move(granted);
    finished.store(true);
  }
  if (doneFd >= 0) signalFd(doneFd);
  if (!pollable) finishedWait.notify_all();
}

AcquireRequest::AcquireRequest(std::shared_ptr<AcquireRequestState> state)
    : state_(std::move(state)) {}

AcquireRequest::~AcquireRequest() {
  state_->cancel();
  // A lease granted and not taken goes with the state: released here, or on the I/O thread if
  // the request is still under way there.
  std::unique_ptr<Lease> untaken;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    untaken = std::move(state_->lease);
  }
}

void AcquireRequest::cancel() noexcept { state_->cancel(); }

int AcquireRequest::fd() const { return state_->doneFd; }

bool AcquireRequest::done() const { return state_->finished.load(); }

std::unique_ptr<Lease> AcquireRequest::wait(Millis timeout, Status* status) {
  auto deadline = BootClock::now() + timeout;
  if (!state_->pollable) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    auto finished = [this] { return state_->finished.load(); };
    if (timeout.count() < 0) {
      state_->finishedWait.wait(lock, finished);
    } else {
      state_->finishedWait.wait_for(lock, timeout, finished);
    }
  }
  while (state_->pollable && !state_->finished.load()) {
    int ms = -1;
    if (timeout.count() >= 0) {
      auto left = std::chrono::duration_cast<Millis>(deadline - BootClock::now()).count();
      if (left < 0) break;
      ms = static_cast<int>(std::min<int64_t>(left, INT_MAX));
    }
    pollfd p{state_->doneFd, POLLIN, 0};
    if (poll(&p, 1, ms) == 0 && timeout.count() >= 0) break;  // EINTR: wait what is left
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  Status outcome = state_->status;
  std::unique_ptr<Lease> lease;
  if (!state_->finished.load()) {
    outcome = Status{ErrorCode::kInProgress, "in progress: the acquire is not done yet"};
  } else if (outcome.ok() && !state_->lease) {  // a grant always comes with its lease
    outcome = Status{ErrorCode::kNotHeld, "not held: an earlier wait() took this lease"};
  } else if (outcome.ok()) {
    lease = std::move(state_->lease);
  }
  if (status) *status = std::move(outcome);
  return lease;
}

}  // namespace fencekeeper
