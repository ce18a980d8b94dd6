#include "tests/support/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace fencekeeper::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kChunk = 64 * 1024;
// How long a cut connection's server side is drained (its replies discarded) before it is closed
// outright; closing with unread replies would send a reset, which may drop the request too.
constexpr std::chrono::seconds kDrainTime{5};
// How long the triggering chunk may take to reach the server's socket buffer.
constexpr std::chrono::seconds kTriggerWrite{2};

void noDelay(int fd) {
  // ZooKeeper's packets are small: Nagle's delay against delayed ACKs would add 40 ms hops.
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Starts a non-blocking connect to 127.0.0.1:port; invalid when it failed at once.
UniqueFd startConnect(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  noDelay(fd.get());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 &&
      errno != EINPROGRESS) {
    fd.reset();
  }
  return fd;
}

bool wouldBlock() { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR; }

}  // namespace

// One proxied connection. Bytes read from one side wait in `to...` until the other side takes
// them; a side is read only while its outgoing buffer is empty, so memory stays bounded and a
// slow reader slows the writer, as TCP would.
struct TcpProxy::Conn {
  UniqueFd client;
  UniqueFd server;
  bool connecting = true;
  std::string toServer;
  std::string toClient;
  bool clientEof = false;  // the client sent FIN: pass it on once toServer is written
  bool serverEof = false;
  // After a triggered cut: the client side is closed, the server's replies are discarded until it
  // closes too or the deadline passes.
  bool draining = false;
  Clock::time_point drainUntil;
};

TcpProxy::TcpProxy(int upstreamPort) : upstreamPort_(upstreamPort) {
  listen_ = devzk::listenLoopback(0);
  port_ = devzk::boundPort(listen_.get());
  wakeFd_ = UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wakeFd_.valid()) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  thread_ = std::thread([this] { loop(); });
}

TcpProxy::~TcpProxy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    control_.stopping = true;
  }
  wake();
  thread_.join();
}

void TcpProxy::wake() {
  uint64_t one = 1;
  // Only fails when the counter would overflow, and then a wake-up is pending anyway.
  [[maybe_unused]] ssize_t n = ::write(wakeFd_.get(), &one, sizeof one);
}

template <typename Change>
void TcpProxy::control(Change change) {
  std::unique_lock<std::mutex> lock(mu_);
  change(control_);
  uint64_t ticket = ++requested_;
  wake();
  // The loop acknowledges between two rounds of forwarding, so the change holds from the next
  // byte on.
  appliedCv_.wait(lock, [&] { return applied_ >= ticket || loopDone_; });
}

void TcpProxy::cutAll() {
  control([](Control& c) { c.cutAll = true; });
}

void TcpProxy::setStalled(bool stalled) {
  control([stalled](Control& c) { c.stalled = stalled; });
}

void TcpProxy::setRefuse(bool refuse) {
  control([refuse](Control& c) { c.refuse = refuse; });
}

void TcpProxy::cutAfterClientSends(std::string pattern) {
  triggered_.store(false);
  control([&pattern](Control& c) { c.arm = std::move(pattern); });
}

void TcpProxy::loop() {
  std::vector<pollfd> fds;
  // Index of each connection's client and server entries in `fds` (-1: not polled).
  std::vector<std::pair<int, int>> slots;
  for (;;) {
    // Take the controls' changes, then acknowledge them once they are in force.
    uint64_t ticket = 0;
    bool cut = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (control_.stopping) break;
      stalled_ = control_.stalled;
      refuse_ = control_.refuse;
      cut = std::exchange(control_.cutAll, false);
      if (control_.arm) pattern_ = std::exchange(control_.arm, std::nullopt);
      ticket = requested_;
    }
    if (cut) conns_.clear();
    open_.store(conns_.size());
    {
      std::lock_guard<std::mutex> lock(mu_);
      applied_ = ticket;
    }
    appliedCv_.notify_all();

    fds.clear();
    slots.clear();
    fds.push_back({wakeFd_.get(), POLLIN, 0});
    fds.push_back({listen_.get(), POLLIN, 0});
    int timeoutMs = -1;
    auto add = [&fds](int fd, short events) {
      if (events == 0) return -1;  // unpolled, so a hang-up on it can't spin the loop
      fds.push_back({fd, events, 0});
      return static_cast<int>(fds.size() - 1);
    };
    for (const auto& conn : conns_) {
      short clientEvents = 0;
      short serverEvents = 0;
      if (conn->draining) {
        serverEvents = POLLIN;
        auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(conn->drainUntil - Clock::now());
        int ms = static_cast<int>(std::max<int64_t>(left.count(), 0)) + 1;
        timeoutMs = timeoutMs < 0 ? ms : std::min(timeoutMs, ms);
      } else if (conn->connecting) {
        serverEvents = POLLOUT;
      } else if (!stalled_) {
        if (conn->toServer.empty() && !conn->clientEof) clientEvents |= POLLIN;
        if (!conn->toServer.empty()) serverEvents |= POLLOUT;
        if (conn->toClient.empty() && !conn->serverEof) serverEvents |= POLLIN;
        if (!conn->toClient.empty()) clientEvents |= POLLOUT;
      }
      int c = add(conn->client.get(), clientEvents);
      int s = add(conn->server.get(), serverEvents);
      slots.emplace_back(c, s);
    }

    if (::poll(fds.data(), fds.size(), timeoutMs) < 0) {
      if (errno == EINTR) continue;
      break;
    }

    if (fds[0].revents & POLLIN) {
      uint64_t count;
      [[maybe_unused]] ssize_t r = ::read(wakeFd_.get(), &count, sizeof count);
    }
    // Connections accepted now are not in `slots`: serve only the ones polled.
    size_t polled = slots.size();
    if (fds[1].revents & POLLIN) acceptAll();
    std::vector<std::unique_ptr<Conn>> kept;
    kept.reserve(conns_.size());
    for (size_t i = 0; i < conns_.size(); ++i) {
      bool alive = true;
      if (i < polled) {
        short ce = slots[i].first >= 0 ? fds[slots[i].first].revents : 0;
        short se = slots[i].second >= 0 ? fds[slots[i].second].revents : 0;
        alive = serviceConn(*conns_[i], ce, se);
      }
      if (alive) kept.push_back(std::move(conns_[i]));
    }
    conns_ = std::move(kept);
    open_.store(conns_.size());
  }
  conns_.clear();
  open_.store(0);
  {
    std::lock_guard<std::mutex> lock(mu_);
    loopDone_ = true;
  }
  appliedCv_.notify_all();
}

void TcpProxy::acceptAll() {
  for (;;) {
    UniqueFd client(::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client.valid()) return;  // EAGAIN, or a transient error: poll tells us again
    accepted_.fetch_add(1);
    if (refuse_) continue;  // closed at once
    noDelay(client.get());
    auto conn = std::make_unique<Conn>();
    conn->client = std::move(client);
    conn->server = startConnect(upstreamPort_);
    if (!conn->server.valid()) continue;
    conns_.push_back(std::move(conn));
  }
}

bool TcpProxy::serviceConn(Conn& conn, short clientEvents, short serverEvents) {
  if (conn.draining) {
    char buf[kChunk];
    if (serverEvents != 0) {
      ssize_t r = ::read(conn.server.get(), buf, sizeof buf);
      if (r == 0 || (r < 0 && !wouldBlock())) return false;
    }
    return Clock::now() < conn.drainUntil;
  }
  if (conn.connecting) {
    if (serverEvents == 0) return true;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(conn.server.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      return false;  // upstream refused: the client sees its connection closed
    }
    conn.connecting = false;
    return true;
  }
  constexpr short kReadable = POLLIN | POLLHUP | POLLERR;
  if ((clientEvents & (kReadable | POLLOUT)) && !pump(conn, true)) return false;
  if (conn.draining) return true;
  if ((serverEvents & (kReadable | POLLOUT)) && !pump(conn, false)) return false;
  return !(conn.clientEof && conn.serverEof && conn.toServer.empty() && conn.toClient.empty());
}

// Moves bytes for one side's events: reads what it sent (when its outgoing buffer is empty) and
// writes what waits for it. Returns false when the connection broke.
bool TcpProxy::pump(Conn& conn, bool fromClient) {
  int self = fromClient ? conn.client.get() : conn.server.get();
  int peer = fromClient ? conn.server.get() : conn.client.get();
  std::string& outbound = fromClient ? conn.toServer : conn.toClient;  // what self sent
  std::string& inbound = fromClient ? conn.toClient : conn.toServer;   // what self is owed
  bool& selfEof = fromClient ? conn.clientEof : conn.serverEof;
  bool& peerEof = fromClient ? conn.serverEof : conn.clientEof;

  // Write what self is owed first: it was read earlier.
  if (!inbound.empty()) {
    ssize_t w = ::send(self, inbound.data(), inbound.size(), MSG_NOSIGNAL);
    if (w < 0 && !wouldBlock()) return false;
    if (w > 0) inbound.erase(0, static_cast<size_t>(w));
    if (inbound.empty() && peerEof) ::shutdown(self, SHUT_WR);
  }
  if (outbound.empty() && !selfEof) {
    char buf[kChunk];
    ssize_t r = ::read(self, buf, sizeof buf);
    if (r < 0) return wouldBlock();
    if (r == 0) {
      selfEof = true;
      ::shutdown(peer, SHUT_WR);
      return true;
    }
    size_t size = static_cast<size_t>(r);
    if (fromClient && pattern_ &&
        std::string_view(buf, size).find(*pattern_) != std::string_view::npos) {
      triggerCut(conn, buf, size);
      return true;
    }
    outbound.assign(buf, size);
    // Forward at once rather than a poll round later.
    ssize_t w = ::send(peer, outbound.data(), outbound.size(), MSG_NOSIGNAL);
    if (w < 0 && !wouldBlock()) return false;
    if (w > 0) outbound.erase(0, static_cast<size_t>(w));
  }
  return true;
}

void TcpProxy::triggerCut(Conn& conn, const char* data, size_t size) {
  pattern_.reset();
  // The whole chunk must reach the server, or it would see half a request and apply nothing.
  auto deadline = Clock::now() + kTriggerWrite;
  size_t sent = 0;
  while (sent < size && Clock::now() < deadline) {
    ssize_t w = ::send(conn.server.get(), data + sent, size - sent, MSG_NOSIGNAL);
    if (w > 0) {
      sent += static_cast<size_t>(w);
    } else if (w < 0 && !wouldBlock()) {
      break;
    } else {
      pollfd p{conn.server.get(), POLLOUT, 0};
      ::poll(&p, 1, 10);
    }
  }
  // Said before the client can see the cut: a test that saw it asks next whether it was ours.
  triggered_.store(true);
  // The client loses its connection before any reply can be read for it; the server sees the
  // request, then end of stream.
  conn.client.reset();
  ::shutdown(conn.server.get(), SHUT_WR);
  conn.toServer.clear();
  conn.toClient.clear();
  conn.draining = true;
  conn.drainUntil = Clock::now() + kDrainTime;
}

}  // namespace fencekeeper::testing
