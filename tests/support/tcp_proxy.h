// A loopback TCP proxy for fault tests, placed between a ZooKeeper client and one server: it can
// cut connections, hold their bytes, refuse new ones, or cut one right after the client sent a
// given request (an "ambiguous" request: the server applied it, the client saw connection loss).
//
// One thread polls every socket. The controls are thread-safe and take effect before they return:
// after setStalled(true) no further byte is forwarded, after cutAll() every connection that
// existed is closed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/devzk/loopback.h"

namespace fencekeeper::testing {

class TcpProxy {
 public:
  // Listens on a free port of 127.0.0.1 and forwards each connection to 127.0.0.1:upstreamPort.
  explicit TcpProxy(int upstreamPort);
  // Closes every connection and stops the thread.
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  int upstreamPort() const { return upstreamPort_; }
  // "127.0.0.1:PORT" for a client's connect string.
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Closes both sides of every current connection now. New connections are still accepted.
  void cutAll();
  // true: forwards nothing in either direction; connections stay open and bytes wait in the
  // kernel's buffers (a network that went silent). false: forwarding resumes.
  void setStalled(bool stalled);
  // true: new connections are accepted and closed at once (a partition the client notices).
  // Current connections are left alone.
  void setRefuse(bool refuse);
  // Arms a one-shot trigger: the first chunk read from a client that contains `pattern` is
  // forwarded to the server, then that connection is cut before any reply reaches the client.
  // The server side is half-closed after the chunk (not reset) so the server still reads and
  // applies the request. The pattern is searched within one chunk as read, not across reads.
  void cutAfterClientSends(std::string pattern);
  // Whether the armed trigger has fired (re-arming clears it).
  bool triggered() const { return triggered_.load(); }

  size_t connectionsAccepted() const { return accepted_.load(); }
  // Connections currently forwarding or held (not counting refused ones).
  size_t openConnections() const { return open_.load(); }

 private:
  struct Conn;
  // What the controls ask of the loop thread; guarded by mu_.
  struct Control {
    bool stopping = false;
    bool stalled = false;
    bool refuse = false;
    bool cutAll = false;
    std::optional<std::string> arm;  // a new trigger pattern, moved to the loop when seen
  };
  template <typename Change>
  void control(Change change);
  void wake();
  void loop();
  void acceptAll();
  // Handles poll results for one connection; false when it is finished.
  bool serviceConn(Conn& conn, short clientEvents, short serverEvents);
  bool pump(Conn& conn, bool fromClient);
  void triggerCut(Conn& conn, const char* data, size_t size);

  const int upstreamPort_;
  UniqueFd listen_;
  UniqueFd wakeFd_;
  int port_ = 0;

  std::mutex mu_;
  std::condition_variable appliedCv_;
  Control control_;
  uint64_t requested_ = 0;
  uint64_t applied_ = 0;
  bool loopDone_ = false;

  // Loop-thread state.
  bool stalled_ = false;
  bool refuse_ = false;
  std::optional<std::string> pattern_;
  std::vector<std::unique_ptr<Conn>> conns_;

  std::atomic<bool> triggered_{false};
  std::atomic<size_t> accepted_{0};
  std::atomic<size_t> open_{0};
  std::thread thread_;
};

}  // namespace fencekeeper::testing
