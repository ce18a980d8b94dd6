#include "examples/fenced_store/server.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

#include "common/unique_fd.h"
#include "examples/fenced_store/routes.h"

namespace fencekeeper::store {
namespace {

// Threads are cheap at this size; the cap keeps a flood of idle connections from exhausting
// memory or file descriptors, and the per-request deadlines free a slot within seconds.
constexpr size_t kMaxConnections = 64;
constexpr std::chrono::milliseconds kDrainTime{2'000};
constexpr std::chrono::milliseconds kBusyReplyTime{100};

// Counts the connection threads, which are detached, so that serve() can wait for them.
class ConnectionCount {
 public:
  bool tryEnter() {
    std::lock_guard guard(mu_);
    if (active_ >= kMaxConnections) return false;
    ++active_;
    return true;
  }

  // Must be a connection thread's last touch of anything serve() owns: once the count reaches
  // zero serve() may return and this object be gone.
  void leave() {
    std::lock_guard guard(mu_);
    --active_;
    idle_.notify_all();
  }

  void waitIdle() {
    std::unique_lock guard(mu_);
    idle_.wait(guard, [this] { return active_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  size_t active_ = 0;
};

void serveConnection(UniqueFd conn, ObjectStore& store, const HttpLimits& limits) {
  Incoming in = readRequest(conn.get(), limits);
  if (in.request) {
    writeResponse(conn.get(), handleRequest(std::move(*in.request), store), limits.writeTime);
  } else if (in.refusal) {
    logRefusal(*in.refusal);
    if (writeResponse(conn.get(), *in.refusal, limits.writeTime)) {
      drainBeforeClose(conn.get(), kDrainTime);
    }
  }
}

}  // namespace

void serve(int listenFd, int stopFd, ObjectStore& store, const HttpLimits& limits) {
  ConnectionCount connections;
  while (true) {
    pollfd fds[2] = {{listenFd, POLLIN, 0}, {stopFd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("poll: {}; no longer accepting", std::strerror(errno));
      break;
    }
    if (fds[1].revents != 0) break;
    if ((fds[0].revents & POLLIN) == 0) continue;
    UniqueFd conn(::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        spdlog::warn("accept: {}", std::strerror(errno));
      }
      continue;
    }
    if (!connections.tryEnter()) {
      spdlog::warn("{} connections in progress; refusing one", kMaxConnections);
      writeResponse(conn.get(), {503, "too many connections\n"}, kBusyReplyTime);
      continue;
    }
    try {
      std::thread([conn = std::move(conn), &store, &limits, &connections]() mutable {
        serveConnection(std::move(conn), store, limits);
        connections.leave();
      }).detach();
    } catch (const std::system_error& e) {
      spdlog::error("cannot start a connection thread: {}", e.what());
      connections.leave();
    }
  }
  connections.waitIdle();
}

}  // namespace fencekeeper::store
