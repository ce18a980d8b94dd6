// Serves the status routes (StatusService) over HTTP/1.1 on the sidecar's loop: on a Unix socket
// (--status-socket, the lease socket's directory rules) and, if asked, on TCP (--status-listen).
// Bounded per listening socket by ConnectionSlots (probes have a pool of their own); a request's
// headers must arrive within kHeaderTimeout and fit KJ's header buffer, and each write of an
// answer must complete within kWriteTimeout. A Unix peer the allow-list refuses (other than the
// sidecar's own uid) gets 403 and the connection is closed.
#pragma once

#include <kj/async-io.h>
#include <kj/compat/http.h>

#include <list>
#include <memory>
#include <string>
#include <vector>

#include "sidecar/rpc/accept_loop.h"
#include "sidecar/rpc/sidecar_server.h"
#include "sidecar/status/connection_slots.h"
#include "sidecar/status/metrics.h"
#include "sidecar/status/status_service.h"

namespace fencekeeper::status {

class StatusServer final : private kj::TaskSet::ErrorHandler, private kj::HttpServerCallbacks {
 public:
  static constexpr Millis kHeaderTimeout{5'000};
  static constexpr Millis kWriteTimeout{5'000};

  StatusServer(rpc::ServerContext& context, Metrics& metrics, kj::Timer& kjTimer);
  ~StatusServer() noexcept(false);

  // Serves a listening socket: the Unix one first (its accept loop is what /healthz reports),
  // then the TCP one if any.
  void listen(kj::Own<kj::ConnectionReceiver> receiver);

 private:
  class RefusingService;
  class TcpService;
  class PlainErrors;
  class PooledService;
  struct Listener {
    kj::Own<kj::ConnectionReceiver> receiver;
    std::unique_ptr<rpc::AcceptLoop> acceptLoop;
    std::unique_ptr<ConnectionSlots> slots;
  };
  static constexpr size_t kLoggedUids = 64;
  void serve(Listener& listener, kj::AuthenticatedStream stream);
  // The service for a new connection (found by its stream): the routes, or 403 for a peer the
  // allow-list refuses, behind its slot.
  kj::Own<kj::HttpService> serviceFor(kj::AsyncIoStream& connection);
  // Logs a uid's first connection at info (its first refused one at warn with why), later ones
  // at debug: probes come often, and a refused peer may come in a loop.
  void logConnection(const rpc::Peer& peer, const std::string& refusal);
  // The next answer goes out with "Connection: close" (a refusal: 403 or 503).
  bool shouldClose() override;
  void taskFailed(kj::Exception&& exception) override;

  rpc::ServerContext& context_;
  Metrics& metrics_;
  kj::HttpHeaderId allow_;
  kj::Own<kj::HttpHeaderTable> table_;
  StatusService service_;
  kj::Own<kj::HttpServerErrorHandler> errors_;  // before http_, which refers to it
  kj::Timer& kjTimer_;
  kj::HttpServer http_;
  uint64_t nextConnection_ = 1;
  bool closeNext_ = false;            // read and cleared by shouldClose()
  std::vector<uint32_t> loggedUids_;  // at most kLoggedUids each
  std::vector<uint32_t> loggedRefusedUids_;
  std::list<Listener> listeners_;  // stable: each accept loop refers to its own
  kj::TaskSet connections_;        // destroyed first: its tasks use the listeners' slots
};

}  // namespace fencekeeper::status
