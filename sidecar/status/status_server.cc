#include "sidecar/status/status_server.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "sidecar/rpc/peer.h"
#include "sidecar/status/deadline_stream.h"

namespace fencekeeper::status {

namespace {

kj::HttpServerSettings settings(kj::HttpServerErrorHandler& errors,
                                kj::HttpServerCallbacks& callbacks) {
  kj::HttpServerSettings s;
  s.errorHandler = errors;
  s.callbacks = callbacks;
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

// The path of a request target, without its query.
kj::String barePath(kj::StringPtr url) {
  return kj::heapString(url.slice(0, url.findFirst('?').orDefault(url.size())));
}

bool isProbe(kj::StringPtr url) {
  auto bare = barePath(url);
  return bare == "/healthz" || bare == "/readyz";
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
    auto bare = barePath(url);
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

// A connection's service behind its slot: each request enters the probe pool or the other
// routes' pool (a 503 when that is full), and the connection waits in the waiting pool again
// once the answer is written. A refused peer's slot stays in its pool; its 403 closes it.
class StatusServer::PooledService final : public kj::HttpService {
 public:
  PooledService(StatusServer& server, ConnectionSlots& slots, ConnectionSlots::Slot& slot,
                kj::Own<kj::HttpService> inner)
      : server_(server), slots_(slots), slot_(slot), inner_(kj::mv(inner)) {}
  kj::Promise<void> request(kj::HttpMethod method, kj::StringPtr url,
                            const kj::HttpHeaders& headers, kj::AsyncInputStream& body,
                            Response& response) override {
    if (slot_.pool == Pool::kRefused) {
      server_.closeNext_ = true;
      return thenClose(inner_->request(method, url, headers, body, response));
    }
    std::string full = slots_.enter(slot_, isProbe(url) ? Pool::kProbe : Pool::kOther);
    if (!full.empty()) {
      server_.metrics_.statusRequest("other", 503);
      server_.closeNext_ = true;
      return thenClose(sendText(response, *server_.table_, 503, "Service Unavailable",
                                kj::str(full.c_str(), "\n")));
    }
    return inner_->request(method, url, headers, body, response).then([this] {
      slots_.answered(slot_);
    });
  }

 private:
  // KJ 0.9.2 sends "Connection: close" and still waits for another request: the connection is
  // closed once the answer is written, on a later turn (not from inside its own task).
  kj::Promise<void> thenClose(kj::Promise<void> answer) {
    return answer.then([this] {
      server_.connections_.add(kj::evalLater(
          [&slot = slot_] { slot.canceler.cancel("closed after its refusal was written"); }));
    });
  }

  StatusServer& server_;
  ConnectionSlots& slots_;
  ConnectionSlots::Slot& slot_;
  kj::Own<kj::HttpService> inner_;
};

StatusServer::StatusServer(rpc::ServerContext& context, Metrics& metrics, kj::Timer& kjTimer)
    : context_(context),
      metrics_(metrics),
      table_(buildTable(allow_)),
      service_(context, metrics, *table_, allow_),
      errors_(kj::heap<PlainErrors>(*table_)),
      kjTimer_(kjTimer),
      http_(
          kjTimer, *table_,
          [this](kj::AsyncIoStream& connection) { return serviceFor(connection); },
          settings(*errors_, *this)),
      connections_(*this) {}

StatusServer::~StatusServer() noexcept(false) { context_.statusAcceptLoop = nullptr; }

void StatusServer::listen(kj::Own<kj::ConnectionReceiver> receiver) {
  auto& listener = listeners_.emplace_back();
  listener.slots = std::make_unique<ConnectionSlots>(
      SlotLimits{}, listeners_.size() == 1 ? "status socket" : "--status-listen");
  listener.receiver = kj::mv(receiver);
  listener.acceptLoop = std::make_unique<rpc::AcceptLoop>(
      *listener.receiver, context_.timer,
      [this, &listener](kj::AuthenticatedStream s) { serve(listener, kj::mv(s)); });
  // /healthz reports the first (Unix) socket's accept loop: the probes' way in.
  if (!context_.statusAcceptLoop) context_.statusAcceptLoop = listener.acceptLoop.get();
}

void StatusServer::serve(Listener& listener, kj::AuthenticatedStream stream) {
  bool unixSocket = true;
  KJ_IF_MAYBE (fd, stream.stream->getFd()) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    unixSocket = getsockname(*fd, reinterpret_cast<sockaddr*>(&address), &length) == 0 &&
                 address.ss_family == AF_UNIX;
  }
  std::optional<uint32_t> uid;  // none on TCP: no credentials to check
  kj::Own<kj::HttpService> inner;
  Pool pool = Pool::kWaiting;
  if (!unixSocket) {
    inner = kj::heap<TcpService>(service_, *table_, metrics_);
  } else {
    rpc::Peer peer = rpc::readPeer(nextConnection_++, *stream.stream);
    std::string refusal = peer.known && peer.uid == getuid() ? "" : context_.allow.refusal(peer);
    logConnection(peer, refusal);
    if (peer.known) uid = peer.uid;
    if (refusal.empty()) {
      inner = kj::Own<kj::HttpService>(&service_, kj::NullDisposer::instance);
    } else {
      pool = Pool::kRefused;
      inner = kj::heap<RefusingService>(*table_, metrics_, refusal);
    }
  }
  auto connection = kj::heap<DeadlineStream>(kj::mv(stream.stream), kjTimer_,
                                             kWriteTimeout.count() * kj::MILLISECONDS);
  auto& slots = *listener.slots;
  auto& slot = slots.open(connection.get(), uid, pool, context_.timer.now());
  slot.service = kj::mv(inner);
  // KJ drops the node the canceler wrapped only after this continuation has run: the slot, and
  // its canceler, go on a later turn.
  auto done = [this, &slots, &slot] {
    slots.closed(slot);
    connections_.add(kj::evalLater([&slots, &slot] { slots.erase(slot); }));
  };
  connections_.add(slot.canceler.wrap(http_.listenHttp(kj::mv(connection)))
                       .then(kj::cp(done), [done](kj::Exception&&) { done(); }));
}

kj::Own<kj::HttpService> StatusServer::serviceFor(kj::AsyncIoStream& connection) {
  for (auto& listener : listeners_) {
    if (auto* slot = listener.slots->find(&connection)) {
      slot->stream = nullptr;  // found once: a later stream may get the same address
      return kj::heap<PooledService>(*this, *listener.slots, *slot, kj::mv(slot->service));
    }
  }
  KJ_FAIL_REQUIRE("a status connection without a slot");
}

void StatusServer::logConnection(const rpc::Peer& peer, const std::string& refusal) {
  auto& logged = refusal.empty() ? loggedUids_ : loggedRefusedUids_;
  bool first = logged.size() < kLoggedUids &&
               std::find(logged.begin(), logged.end(), peer.uid) == logged.end();
  if (first) logged.push_back(peer.uid);
  if (!refusal.empty()) {
    spdlog::log(first ? spdlog::level::warn : spdlog::level::debug,
                "status socket: refused connection {} gid {}: {}{}", peer.describe(), peer.gid,
                refusal,
                first ? fmt::format(" (later ones of uid {} are logged at debug)", peer.uid) : "");
  } else if (first) {
    spdlog::info("status socket: connection {} gid {} (later ones of uid {} are logged at debug)",
                 peer.describe(), peer.gid, peer.uid);
  } else {
    spdlog::debug("status socket: connection {} gid {}", peer.describe(), peer.gid);
  }
}

bool StatusServer::shouldClose() {
  bool close = closeNext_;
  closeNext_ = false;
  return close;
}

void StatusServer::taskFailed(kj::Exception&& e) {
  spdlog::debug("status connection failed: {}", e.getDescription().cStr());
}

}  // namespace fencekeeper::status
