#include "sidecar/zk/zk_loop_driver.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <string_view>

namespace fencekeeper::zk {

namespace {
constexpr const char* kSocketReplaced = "the ZooKeeper client's socket was replaced";
// Answers read in one turn of the loop before the others get theirs: a burst (a reconnect's
// re-registered watches firing) must not hold the sidecar's clients and timers back for long.
constexpr int kAnswersPerTurn = 64;

uint64_t inodeOf(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}
}  // namespace

ZkLoopDriver::ZkLoopDriver(kj::UnixEventPort& events, Timer& timer, std::function<void()> settled)
    : events_(events), timer_(timer), settled_(std::move(settled)), tasks_(*this) {}

ZkLoopDriver::~ZkLoopDriver() noexcept {
  *alive_ = false;
  timer_.cancel(timerId_);
  dropObserver();
}

void ZkLoopDriver::taskFailed(kj::Exception&& exception) {
  if (std::string_view(exception.getDescription().cStr()).find(kSocketReplaced) !=
      std::string_view::npos) {
    return;  // a wait on a socket the client no longer uses
  }
  spdlog::error("zookeeper client loop: {}", exception.getDescription().cStr());
}

void ZkLoopDriver::attach(zhandle_t* zh) {
  dropObserver();
  timer_.cancel(timerId_);
  timerId_ = 0;
  zh_ = zh;
  if (!zh_) return;
  rearm();
  settled_();
}

void ZkLoopDriver::requestQueued() {
  if (!zh_ || depth_ > 0 || rearmQueued_) return;  // a drive rearms when its calls return
  rearmQueued_ = true;
  tasks_.add(kj::evalLater([this] {
    if (!rearmQueued_) return;
    rearm();
    settled_();
  }));
}

void ZkLoopDriver::later(std::function<void()> fn) {
  tasks_.add(kj::evalLater(kj::mv(fn)));
}

void ZkLoopDriver::drive(int events) {
  if (!zh_) return;
  ++depth_;
  zookeeper_process(zh_, events);
  --depth_;
  rearm();
  settled_();
}

void ZkLoopDriver::drainReadable() {
  if (!zh_) return;
  int rc = ZOK;
  ++depth_;
  for (int i = 0; i < kAnswersPerTurn && rc == ZOK; ++i) rc = zookeeper_process(zh_, ZOOKEEPER_READ);
  --depth_;
  if (rc == ZOK) {
    // More may be waiting, and no new edge will say so: read on in a later turn.
    readAwaited_ = true;
    uint64_t generation = observerGeneration_;
    tasks_.add(waits_.wrap(kj::evalLater([this, generation] {
      if (generation != observerGeneration_) return;
      readAwaited_ = false;
      drainReadable();
    })));
  }
  // (ZNOTHING: the socket is drained. An error: the client closed it, and rearm() follows.)
  rearm();
  settled_();
}

void ZkLoopDriver::rearm() {
  rearmQueued_ = false;
  if (!zh_) return;
  int fd = -1, interest = 0;
  struct timeval tv {};
  ++depth_;
  zookeeper_interest(zh_, &fd, &interest, &tv);
  if ((interest & ZOOKEEPER_WRITE) && fd >= 0 && zoo_state(zh_) == ZOO_CONNECTED_STATE) {
    // Requests queued while there was no connection: an edge-triggered observer would wait for a
    // socket that is writable already. Send now; wait only if the socket fills.
    zookeeper_process(zh_, ZOOKEEPER_WRITE);
    zookeeper_interest(zh_, &fd, &interest, &tv);
  }
  --depth_;
  observe(fd);
  if (observer_) {
    if ((interest & ZOOKEEPER_READ) && !readAwaited_) awaitReadable();
    if ((interest & ZOOKEEPER_WRITE) && !writeAwaited_) awaitWritable();
  }
  armTimer(Millis(tv.tv_sec * 1000 + tv.tv_usec / 1000));
}

void ZkLoopDriver::observe(int fd) {
  if (fd < 0) return dropObserver();
  // The same number may be a new socket (the client closed one and opened the next): while not
  // connected, each connection attempt makes one.
  if (observer_ && fd == clientFd_ &&
      (zoo_state(zh_) == ZOO_CONNECTED_STATE || inodeOf(fd) == observedInode_)) {
    return;
  }
  dropObserver();
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) {
    spdlog::error("zookeeper client loop: cannot duplicate its socket: {}", strerror(errno));
    return;  // the timer calls again
  }
  clientFd_ = fd;
  observedFd_ = copy;
  observedInode_ = inodeOf(copy);
  ++observerGeneration_;
  observer_ = kj::heap<kj::UnixEventPort::FdObserver>(
      events_, copy,
      kj::UnixEventPort::FdObserver::OBSERVE_READ | kj::UnixEventPort::FdObserver::OBSERVE_WRITE);
}

void ZkLoopDriver::awaitReadable() {
  readAwaited_ = true;
  uint64_t generation = observerGeneration_;
  tasks_.add(waits_.wrap(observer_->whenBecomesReadable()).then([this, generation] {
    if (generation != observerGeneration_) return;
    readAwaited_ = false;
    drainReadable();
  }));
}

void ZkLoopDriver::awaitWritable() {
  writeAwaited_ = true;
  uint64_t generation = observerGeneration_;
  tasks_.add(waits_.wrap(observer_->whenBecomesWritable()).then([this, generation] {
    if (generation != observerGeneration_) return;
    writeAwaited_ = false;
    drive(ZOOKEEPER_WRITE);
  }));
}

void ZkLoopDriver::armTimer(Millis in) {
  TimePoint at = timer_.now() + in;
  if (timerId_ != 0 && timerAt_ <= at) return;  // the armed one comes first: it rearms then
  timer_.cancel(timerId_);
  timerAt_ = at;
  timerId_ = timer_.schedule(at, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (!alive.lock()) return;
    timerId_ = 0;
    drive(0);
  });
}

void ZkLoopDriver::dropObserver() {
  waits_.cancel(kSocketReplaced);
  readAwaited_ = false;
  writeAwaited_ = false;
  ++observerGeneration_;
  observer_ = nullptr;
  if (observedFd_ >= 0) close(observedFd_);
  observedFd_ = -1;
  clientFd_ = -1;
  observedInode_ = 0;
}

}  // namespace fencekeeper::zk
