// Serves the status routes (StatusService) over HTTP/1.1 on the sidecar's loop: on a Unix socket
// (--status-socket, the lease socket's directory rules) and, if asked, on TCP (--status-listen).
// Bounded: at most kMaxConnections open at once (more are closed at once), a request's headers
// must arrive within kHeaderTimeout and fit KJ's header buffer. A Unix peer the allow-list
// refuses (other than the sidecar's own uid) gets 403.
#pragma once

#include <kj/async-io.h>
#include <kj/compat/http.h>

#include <memory>
#include <string>
#include <vector>

#include "sidecar/rpc/accept_loop.h"
#include "sidecar/rpc/sidecar_server.h"
#include "sidecar/status/metrics.h"
#include "sidecar/status/status_service.h"

namespace fencekeeper::status {

class StatusServer final : private kj::TaskSet::ErrorHandler {
 public:
  static constexpr size_t kMaxConnections = 64;
  static constexpr Millis kHeaderTimeout{5'000};

  StatusServer(rpc::ServerContext& context, Metrics& metrics, kj::Timer& kjTimer);
  ~StatusServer() noexcept(false);

  // Serves a listening socket: the Unix one first (its accept loop is what /healthz reports),
  // then the TCP one if any.
  void listen(kj::Own<kj::ConnectionReceiver> receiver);

 private:
  class RefusingService;
  class TcpService;
  class PlainErrors;
  static constexpr size_t kLoggedUids = 64;
  void serve(kj::AuthenticatedStream stream);
  // The service for a new connection: the routes, or 403 for a peer the allow-list refuses.
  kj::Own<kj::HttpService> serviceFor(kj::AsyncIoStream& connection);
  void taskFailed(kj::Exception&& exception) override;

  rpc::ServerContext& context_;
  Metrics& metrics_;
  kj::HttpHeaderId allow_;
  kj::Own<kj::HttpHeaderTable> table_;
  StatusService service_;
  kj::Own<kj::HttpServerErrorHandler> errors_;  // before http_, which refers to it
  kj::HttpServer http_;
  size_t open_ = 0;
  uint64_t nextConnection_ = 1;
  // A uid's first status connection is logged at info, later ones at debug (probes come often).
  std::vector<uint32_t> loggedUids_;
  kj::TaskSet connections_;
  std::vector<kj::Own<kj::ConnectionReceiver>> receivers_;
  std::vector<std::unique_ptr<rpc::AcceptLoop>> acceptLoops_;
};

}  // namespace fencekeeper::status
