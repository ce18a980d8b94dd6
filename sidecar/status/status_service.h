// The status socket's HTTP routes, read-only: nothing here can take or release a lease, and
// nothing calls ZooKeeper (everything comes from the engine's and the server's own state).
//   GET /healthz   200 "ok" while the loop serves and every socket accepts; 503 + reason
//   GET /readyz    200 "ready" while the session is vouched for; 503 + reason
//   GET /status    the schema's Status as JSON (capnp JsonCodec, compact); ?limit=N lists up to
//                  N leases and N waiters (default 1000, at most 10000): the counts cover all.
//                  Made and written in slices of a loop turn each (entries are as of their turn)
//   GET /metrics   Prometheus text format
// Other paths 404, other methods 405.
#pragma once

#include <kj/compat/http.h>

#include "sidecar/rpc/sidecar_server.h"
#include "sidecar/status/metrics.h"

namespace fencekeeper::status {

// Leases (and waiters) one /status answer lists by default, and at most with ?limit=.
constexpr size_t kDefaultListing = 1'000;
constexpr size_t kMaxListing = 10'000;

class StatusService final : public kj::HttpService {
 public:
  StatusService(const rpc::ServerContext& context, Metrics& metrics, kj::HttpHeaderTable& table,
                kj::HttpHeaderId allowHeader);

  kj::Promise<void> request(kj::HttpMethod method, kj::StringPtr url,
                            const kj::HttpHeaders& headers, kj::AsyncInputStream& requestBody,
                            Response& response) override;

 private:
  class StatusAnswer;
  kj::Promise<void> reply(Response& response, std::string_view route, unsigned code,
                          kj::StringPtr status, kj::StringPtr contentType, kj::String body);
  kj::String metricsText();

  const rpc::ServerContext& context_;
  Metrics& metrics_;
  kj::HttpHeaderTable& table_;
  kj::HttpHeaderId allow_;
};

}  // namespace fencekeeper::status
