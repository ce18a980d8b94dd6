#include "sidecar/status/status_server.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "sidecar/rpc/peer.h"

namespace fencekeeper::status {

namespace {

kj::HttpServerSettings settings(kj::HttpServerErrorHandler& errors) {
  kj::HttpServerSettings s;
  s.errorHandler = errors;
  s.headerTimeout = StatusServer::kHeaderTimeout.count() * kj::MILLISECONDS;
  s.pipelineTimeout = StatusServer::kHeaderTimeout.count() * kj::MILLISECONDS;
  s.canceledUploadGracePeriod = 100 * kj::MILLISECONDS;
  s.canceledUploadGraceBytes = 4096;
  return s;
}

kj::Own<kj::HttpHeaderTable> buildTable(kj::HttpHeaderId& allow) {
  kj::HttpHeaderTable::Builder builder;
  allow = builder.add("Allow");
  return builder.build();
}

// A plain-text answer of the server's own (403s and error pages; the routes answer through
// StatusService::reply).
kj::Promise<void> sendText(kj::HttpService::Response& response, kj::HttpHeaderTable& table,
                           unsigned code, kj::StringPtr status, kj::String body) {
  kj::HttpHeaders headers(table);
  headers.set(kj::HttpHeaderId::CONTENT_TYPE, "text/plain; charset=utf-8");
  auto stream = response.send(code, status, headers, body.size());
  auto& out = *stream;
  return out.write(body.begin(), body.size()).attach(kj::mv(stream), kj::mv(body));
}

}  // namespace

// Answers every request of a refused peer with 403 and why.
class StatusServer::RefusingService final : public kj::HttpService {
 public:
  RefusingService(kj::HttpHeaderTable& table, Metrics& metrics, std::string why)
      : table_(table), metrics_(metrics), why_(std::move(why)) {}
  kj::Promise<void> request(kj::HttpMethod, kj::StringPtr, const kj::HttpHeaders&,
                            kj::AsyncInputStream&, Response& response) override {
    metrics_.statusRequest("other", 403);
    return sendText(response, table_, 403, "Forbidden", kj::str(why_.c_str(), "\n"));
  }

 private:
  kj::HttpHeaderTable& table_;
  Metrics& metrics_;
  std::string why_;
};

// What --status-listen serves: health, readiness and metrics, for probes and Prometheus. Anyone
// who can reach the port gets them, with no credentials to check, so /status (lock names,
// owners, tokens, pids, uids, the session and the ZooKeeper servers) stays on the status socket,
// whose peers the allow-list vets (issue 24).
class StatusServer::TcpService final : public kj::HttpService {
 public:
  TcpService(kj::HttpService& routes, kj::HttpHeaderTable& table, Metrics& metrics)
      : routes_(routes), table_(table), metrics_(metrics) {}
  kj::Promise<void> request(kj::HttpMethod method, kj::StringPtr url,
                            const kj::HttpHeaders& headers, kj::AsyncInputStream& body,
                            Response& response) override {
    auto bare = kj::heapString(url.slice(0, url.findFirst('?').orDefault(url.size())));
    if (bare == "/healthz" || bare == "/readyz" || bare == "/metrics") {
      return routes_.request(method, url, headers, body, response);
    }
    metrics_.statusRequest("other", 403);
    return sendText(response, table_, 403, "Forbidden",
                    kj::str("--status-listen serves /healthz, /readyz and /metrics; ", bare,
                            " is on the status socket only\n"));
  }

 private:
  kj::HttpService& routes_;
  kj::HttpHeaderTable& table_;
  Metrics& metrics_;
};

// Error answers that say what was wrong with the request and nothing of the sidecar: KJ's own
// put the exception in the page, with source paths and code addresses (issue 24). The
// exception goes to the log instead.
class StatusServer::PlainErrors final : public kj::HttpServerErrorHandler {
 public:
  explicit PlainErrors(kj::HttpHeaderTable& table) : table_(table) {}
  kj::Promise<void> handleClientProtocolError(kj::HttpHeaders::ProtocolError error,
                                              kj::HttpService::Response& response) override {
    // KJ's fixed text for a request it cannot parse ("Request headers have no terminal
    // newline." and the like): about the request only.
    return sendText(response, table_, error.statusCode, error.statusMessage,
                    kj::str("bad request: ", error.description, "\n"));
  }
  kj::Promise<void> handleApplicationError(kj::Exception exception,
                                           kj::Maybe<kj::HttpService::Response&> response) override {
    if (exception.getType() == kj::Exception::Type::DISCONNECTED) return kj::READY_NOW;
    spdlog::warn("status socket: a request failed: {}", exception.getDescription().cStr());
    KJ_IF_MAYBE(r, response) {
      return sendText(*r, table_, 400, "Bad Request",
                      kj::str("bad request: the sidecar could not serve it (its log says why)\n"));
    }
    return kj::READY_NOW;
  }

 private:
  kj::HttpHeaderTable& table_;
};

StatusServer::StatusServer(rpc::ServerContext& context, Metrics& metrics, kj::Timer& kjTimer)
    : context_(context),
      metrics_(metrics),
      table_(buildTable(allow_)),
      service_(context, metrics, *table_, allow_),
      errors_(kj::heap<PlainErrors>(*table_)),
      http_(
          kjTimer, *table_,
          [this](kj::AsyncIoStream& connection) { return serviceFor(connection); },
          settings(*errors_)),
      connections_(*this) {}

StatusServer::~StatusServer() noexcept(false) { context_.statusAcceptLoop = nullptr; }

void StatusServer::listen(kj::Own<kj::ConnectionReceiver> receiver) {
  auto& r = *receiver;
  receivers_.push_back(kj::mv(receiver));
  acceptLoops_.push_back(std::make_unique<rpc::AcceptLoop>(
      r, context_.timer, [this](kj::AuthenticatedStream s) { serve(kj::mv(s)); }));
  // /healthz reports the first (Unix) socket's accept loop: the probes' way in.
  if (!context_.statusAcceptLoop) context_.statusAcceptLoop = acceptLoops_.back().get();
}

void StatusServer::serve(kj::AuthenticatedStream stream) {
  if (open_ >= kMaxConnections) {
    spdlog::debug("status socket: {} connections open, closing a new one", open_);
    return;  // dropping the stream closes it
  }
  ++open_;
  connections_.add(http_.listenHttp(kj::mv(stream.stream))
                       .then([this] { --open_; }, [this](kj::Exception&&) { --open_; }));
}

kj::Own<kj::HttpService> StatusServer::serviceFor(kj::AsyncIoStream& connection) {
  kj::Own<kj::HttpService> allowed(&service_, kj::NullDisposer::instance);
  KJ_IF_MAYBE (fd, connection.getFd()) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (getsockname(*fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
        address.ss_family != AF_UNIX) {
      return kj::heap<TcpService>(service_, *table_, metrics_);  // no credentials to check
    }
  }
  rpc::Peer peer = rpc::readPeer(nextConnection_++, connection);
  std::string refusal = peer.known && peer.uid == getuid() ? "" : context_.allow.refusal(peer);
  if (!refusal.empty()) {
    spdlog::warn("status socket: refused connection {} gid {}: {}", peer.describe(), peer.gid,
                 refusal);
    return kj::heap<RefusingService>(*table_, metrics_, refusal);
  }
  bool first = std::find(loggedUids_.begin(), loggedUids_.end(), peer.uid) == loggedUids_.end();
  if (first && loggedUids_.size() < kLoggedUids) {
    loggedUids_.push_back(peer.uid);
    spdlog::info("status socket: connection {} gid {} (later ones of uid {} are logged at debug)",
                 peer.describe(), peer.gid, peer.uid);
  } else {
    spdlog::debug("status socket: connection {} gid {}", peer.describe(), peer.gid);
  }
  return allowed;
}

void StatusServer::taskFailed(kj::Exception&& e) {
  spdlog::debug("status connection failed: {}", e.getDescription().cStr());
}

}  // namespace fencekeeper::status
