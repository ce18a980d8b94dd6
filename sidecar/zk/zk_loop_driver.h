// Drives one handle of the single-threaded ZooKeeper C client from the sidecar's KJ event loop,
// as the multi-threaded client's I/O thread would: zookeeper_interest() names the socket, the
// events it waits for and when it must be called again (pings, timeouts, reconnects); a KJ fd
// observer and a timer call zookeeper_process(). Every completion and watch of the handle runs
// inside those calls, on the loop thread: no thread, no hand-off, no lock.
// Loop thread only; owned by RealZkClient.
#pragma once

#include <kj/async-unix.h>
#include <kj/async.h>

#include <functional>
#include <memory>

#include "common/clock.h"

typedef struct _zhandle zhandle_t;

namespace fencekeeper::zk {

class ZkLoopDriver final : private kj::TaskSet::ErrorHandler {
 public:
  // `settled` runs after each drive, outside the C client's calls (its own calls may close the
  // handle: session events are acted on there).
  ZkLoopDriver(kj::UnixEventPort& events, Timer& timer, std::function<void()> settled);
  ~ZkLoopDriver() noexcept;
  ZkLoopDriver(const ZkLoopDriver&) = delete;
  ZkLoopDriver& operator=(const ZkLoopDriver&) = delete;

  // Drives `zh` from now on (nullptr: nothing; call it before closing the handle it drives).
  void attach(zhandle_t* zh);
  // A request was queued on the handle: the C client sent what the socket took at once; the rest
  // (a full socket, or no connection yet) is sent when the socket can take it.
  void requestQueued();
  // Runs `fn` in a later turn of the loop, unless the driver is gone by then: an answer the client
  // gives at once must not run inside the caller's request.
  void later(std::function<void()> fn);

 private:
  void taskFailed(kj::Exception&& exception) override;
  // One zookeeper_process() call for `events` (ZOOKEEPER_READ/WRITE), then rearm() and settled.
  void drive(int events);
  // Reads until the socket has nothing more (its observer is edge-triggered).
  void drainReadable();
  // Asks the client what it waits for and arms the observer and the timer for it.
  void rearm();
  // Follows the client's socket: a new observer when it changed (each connection attempt).
  void observe(int fd);
  void awaitReadable();
  void awaitWritable();
  void armTimer(Millis in);
  void dropObserver();

  kj::UnixEventPort& events_;
  Timer& timer_;
  std::function<void()> settled_;
  zhandle_t* zh_ = nullptr;
  // The socket observed, through a duplicate: the C client closes its own descriptor when it
  // likes, and an observer must never outlive the descriptor it registered.
  int clientFd_ = -1;
  int observedFd_ = -1;
  uint64_t observedInode_ = 0;
  kj::Own<kj::UnixEventPort::FdObserver> observer_;
  uint64_t observerGeneration_ = 0;  // tells a wait on a replaced observer from a current one
  bool readAwaited_ = false;
  bool writeAwaited_ = false;
  bool rearmQueued_ = false;
  int depth_ = 0;
  uint64_t timerId_ = 0;
  TimePoint timerAt_{};
  // Declared after the observer: the waits are dropped (cancelled) before it goes.
  kj::Canceler waits_;
  kj::TaskSet tasks_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace fencekeeper::zk
