#include "sidecar/status/status_service.h"

#include <capnp/compat/json.h>
#include <capnp/message.h>

#include <charconv>
#include <string>

#include "sidecar/rpc/status_report.h"

namespace fencekeeper::status {

namespace {

struct Target {
  std::string_view path;
  std::string_view query;
};

Target split(kj::StringPtr url) {
  std::string_view all(url.cStr(), url.size());
  auto q = all.find('?');
  if (q == std::string_view::npos) return {all, {}};
  return {all.substr(0, q), all.substr(q + 1)};
}

// ?limit=N, clamped to [0, kMaxListing]; nullopt when present but not a number.
std::optional<size_t> listingOf(std::string_view query) {
  size_t limit = kDefaultListing;
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.rfind("limit=", 0) != 0) continue;
    auto digits = pair.substr(6);
    size_t n = 0;
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (err != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    limit = std::min(n, kMaxListing);
  }
  return limit;
}

// The route's name in the metrics: a fixed set of label values.
std::string_view routeOf(std::string_view path) {
  for (std::string_view known : {"/healthz", "/readyz", "/status", "/metrics"}) {
    if (path == known) return known.substr(1);
  }
  return "other";
}

// Entries one loop turn handles: the listing visits requests (cheap, but cache misses add up
// over 100k), the JSON codec encodes entries (tens of microseconds each). The body is written
// as it is made, in chunks: no turn holds the loop for more than a millisecond or two.
constexpr size_t kVisitsPerTurn = 256;
constexpr size_t kEncodedPerTurn = 32;

// The codec's compact encoding of the empty lists the entries are spliced into.
constexpr std::string_view kLeasesField = "\"leases\":[]";
constexpr std::string_view kWaitersField = "\"waiterList\":[]";

}  // namespace

// One /status answer in the making: the engine's listing walked in slices, then the JSON of the
// Status without its lists, with each entry's JSON spliced into them, slice by slice.
class StatusService::StatusAnswer {
 public:
  StatusAnswer(const rpc::ServerContext& context, size_t cap)
      : context_(context), cap_(cap), listing_(context.engine.counts()) {}

  kj::Promise<void> walk() {
    next_ = context_.engine.listSlice(next_, kVisitsPerTurn, cap_, listing_);
    if (next_ == 0) return kj::READY_NOW;
    return kj::evalLater([this] { return walk(); });
  }

  void start(kj::Own<kj::AsyncOutputStream> body) {
    body_ = kj::mv(body);
    leases_ = std::move(listing_.leases);
    waiters_ = std::move(listing_.waiters);
    listing_.leases.clear();
    listing_.waiters.clear();
    capnp::MallocMessageBuilder message;
    auto status = message.initRoot<ipc::Status>();
    rpc::fillStatus(context_, status, listing_, cap_);
    std::string json = codec_.encode(status.asReader()).cStr();
    auto l = json.find(kLeasesField);
    auto w = json.find(kWaitersField);
    // Both fields are top level and unique; string values cannot hold them unescaped.
    KJ_REQUIRE(l != std::string::npos && w != std::string::npos && l < w, "unexpected JSON");
    size_t lOpen = l + kLeasesField.size() - 1, wOpen = w + kWaitersField.size() - 1;
    head_ = json.substr(0, lOpen);
    middle_ = json.substr(lOpen, wOpen - lOpen);
    tail_ = json.substr(wOpen) + "\n";
  }

  kj::Promise<void> write() {
    std::string chunk;
    if (part_ == 0) {
      chunk = std::move(head_);
      ++part_;
    } else if (part_ == 1) {
      chunk = encode(leases_, [](const engine::LeaseSummary& l, capnp::MessageBuilder& m) {
        rpc::fillLease(l, m.initRoot<ipc::LeaseSummary>());
        return m.getRoot<ipc::LeaseSummary>().asReader();
      });
      if (done_ == leases_.size()) {
        chunk += middle_;
        done_ = 0;
        ++part_;
      }
    } else if (part_ == 2) {
      chunk = encode(waiters_, [](const engine::WaiterSummary& w, capnp::MessageBuilder& m) {
        rpc::fillWaiter(w, m.initRoot<ipc::WaiterSummary>());
        return m.getRoot<ipc::WaiterSummary>().asReader();
      });
      if (done_ == waiters_.size()) {
        chunk += tail_;
        ++part_;
      }
    } else {
      return kj::READY_NOW;
    }
    auto text = kj::heapString(chunk.data(), chunk.size());
    auto& out = *body_;
    auto written = out.write(text.begin(), text.size()).attach(kj::mv(text));
    return written.then([this] { return kj::evalLater([this] { return write(); }); });
  }

 private:
  // The next kEncodedPerTurn entries of `list`, each through the codec, comma-separated.
  template <typename Entry, typename Fill>
  std::string encode(const std::vector<Entry>& list, Fill fill) {
    std::string out;
    for (size_t end = std::min(list.size(), done_ + kEncodedPerTurn); done_ < end; ++done_) {
      if (done_ > 0) out += ',';
      capnp::MallocMessageBuilder message(256);
      out += codec_.encode(fill(list[done_], message)).cStr();
    }
    return out;
  }

  const rpc::ServerContext& context_;
  const size_t cap_;
  engine::EngineStatus listing_;
  engine::LeaseId next_ = 1;
  std::vector<engine::LeaseSummary> leases_;
  std::vector<engine::WaiterSummary> waiters_;
  capnp::JsonCodec codec_;
  kj::Own<kj::AsyncOutputStream> body_;
  std::string head_, middle_, tail_;
  int part_ = 0;     // head, leases, waiters, done
  size_t done_ = 0;  // entries of the current list written
};

StatusService::StatusService(const rpc::ServerContext& context, Metrics& metrics,
                             kj::HttpHeaderTable& table, kj::HttpHeaderId allowHeader)
    : context_(context), metrics_(metrics), table_(table), allow_(allowHeader) {}

kj::Promise<void> StatusService::reply(Response& response, std::string_view route, unsigned code,
                                       kj::StringPtr status, kj::StringPtr contentType,
                                       kj::String body) {
  metrics_.statusRequest(route, code);
  kj::HttpHeaders headers(table_);
  headers.set(kj::HttpHeaderId::CONTENT_TYPE, contentType);
  if (code == 405) headers.set(allow_, "GET, HEAD");
  auto stream = response.send(code, status, headers, body.size());
  auto& out = *stream;
  return out.write(body.begin(), body.size()).attach(kj::mv(stream), kj::mv(body));
}

kj::String StatusService::metricsText() {
  GaugeReadings now;
  now.vouched = context_.engine.vouched();
  auto engine = context_.engine.counts();
  now.leases = engine.held;
  now.waiters = engine.waiting;
  now.connections = context_.live.size();
  now.pendingDeletes = engine.pendingDeletes;
  now.safeForSeconds = static_cast<double>(context_.engine.safeFor().count()) / 1000.0;
  if (context_.acceptLoop) now.acceptFailures += context_.acceptLoop->failures();
  if (context_.statusAcceptLoop) now.acceptFailures += context_.statusAcceptLoop->failures();
  return kj::str(metrics_.render(now).c_str());
}

kj::Promise<void> StatusService::request(kj::HttpMethod method, kj::StringPtr url,
                                         const kj::HttpHeaders&, kj::AsyncInputStream&,
                                         Response& response) {
  constexpr kj::StringPtr kText = "text/plain; charset=utf-8"_kj;
  context_.engine.vouched();  // a due lapse runs first: no answer shows its leases still held
  Target target = split(url);
  std::string_view route = routeOf(target.path);
  if (route == "other") {
    return reply(response, route, 404, "Not Found", kText,
                 kj::str("no such path; try /healthz, /readyz, /status or /metrics\n"));
  }
  if (method != kj::HttpMethod::GET && method != kj::HttpMethod::HEAD) {
    return reply(response, route, 405, "Method Not Allowed", kText,
                 kj::str("the status socket is read-only: GET only\n"));
  }
  if (route == "healthz" || route == "readyz") {
    rpc::Verdict v = route == "healthz" ? rpc::healthOf(context_) : rpc::readinessOf(context_);
    if (v.yes)
      return reply(response, route, 200, "OK", kText,
                   kj::str(route == "healthz" ? "ok\n" : "ready\n"));
    return reply(response, route, 503, "Service Unavailable", kText,
                 kj::str(v.reason.c_str(), "\n"));
  }
  if (route == "metrics") {
    return reply(response, route, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                 metricsText());
  }
  auto limit = listingOf(target.query);
  if (!limit) {
    return reply(response, route, 400, "Bad Request", kText,
                 kj::str("limit must be a number of entries (at most ", kMaxListing, ")\n"));
  }
  metrics_.statusRequest(route, 200);
  auto answer = kj::heap<StatusAnswer>(context_, *limit);
  auto& a = *answer;
  return a.walk()
      .then([&a, &response, this] {
        kj::HttpHeaders headers(table_);
        headers.set(kj::HttpHeaderId::CONTENT_TYPE, "application/json");
        a.start(response.send(200, "OK", headers));
        return a.write();
      })
      .attach(kj::mv(answer));
}

}  // namespace fencekeeper::status
