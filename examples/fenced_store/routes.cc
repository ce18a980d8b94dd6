#include "examples/fenced_store/routes.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace fencekeeper::store {
namespace {

constexpr size_t kMaxNameBytes = 200;

bool isNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool isValidKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxNameBytes) return false;
  for (char c : key) {
    if (!isNameChar(c)) return false;
  }
  return true;
}

// Lock names as fencekeeper's clients give them ('/'-separated segments). The store only uses
// them to pick a fence, so it checks characters and length, not fencekeeper's segment rules.
bool isValidLock(std::string_view lock) {
  if (lock.empty() || lock.size() > kMaxNameBytes) return false;
  for (char c : lock) {
    if (!isNameChar(c) && c != '/') return false;
  }
  return true;
}

// Decimal digits only: no sign, no spaces, below 2^64.
bool parseToken(std::string_view text, uint64_t& token) {
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), token);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

// One log line per request. Only validated text goes into it (names, digits), so a client
// can't forge log lines.
struct Outcome {
  std::string_view method = "-";
  std::string_view key = "-";
  std::string_view lock = "-";
  std::string_view token = "-";

  HttpResponse finish(HttpResponse response, std::string_view verdict) const {
    auto level = response.status >= 500 ? spdlog::level::err : spdlog::level::info;
    spdlog::log(level, "{} key={} lock={} token={} -> {} {}", method, key, lock, token,
                response.status, verdict);
    return response;
  }

  HttpResponse refuse(int status, std::string why) const {
    std::string verdict = why;
    return finish({status, std::move(why) + "\n"}, verdict);
  }
};

HttpResponse handleObject(HttpRequest& request, std::string_view key, ObjectStore& store) {
  Outcome out{request.method};
  bool isPut = request.method == "PUT";
  if (!isPut && request.method != "GET") return out.refuse(405, "use GET or PUT on /objects/");
  if (!isValidKey(key)) return out.refuse(400, "invalid key: 1 to 200 bytes of [A-Za-z0-9._-]");
  out.key = key;

  std::vector<std::string_view> locks = request.headerValues("Fence-Lock");
  if (locks.size() != 1) return out.refuse(400, "exactly one Fence-Lock header is required");
  if (!isValidLock(locks[0])) {
    return out.refuse(400, "invalid Fence-Lock: 1 to 200 bytes of [A-Za-z0-9._/-]");
  }
  std::string_view lock = locks[0];
  out.lock = lock;
  std::vector<std::string_view> tokens = request.headerValues("Fence-Token");
  if (tokens.size() != 1) return out.refuse(400, "exactly one Fence-Token header is required");
  uint64_t token = 0;
  if (!parseToken(tokens[0], token)) {
    return out.refuse(400, "Fence-Token must be a decimal number below 2^64");
  }
  out.token = tokens[0];

  StoreResult result =
      isPut ? store.put(key, std::move(request.body), lock, token) : store.get(key, lock, token);
  std::string highest = std::to_string(result.highest);
  // The store's acceptance order: log lines are written after its lock is released, so their
  // order alone may differ from it.
  std::string accepted = "accepted seq=" + std::to_string(result.sequence);
  switch (result.status) {
    case StoreStatus::kOk:
      if (isPut) return out.finish({200, "stored\n"}, accepted);
      return out.finish({200, std::move(result.value), "application/octet-stream"}, accepted);
    case StoreStatus::kNotFound:
      return out.finish({404, "no such key\n"}, accepted + ", no such key");
    case StoreStatus::kStale:
      return out.finish({412, "stale Fence-Token " + std::to_string(token) + " for lock " +
                                  std::string(lock) + ": the highest seen is " + highest + "\n"},
                        "stale, highest " + highest);
    case StoreStatus::kIoError:
      break;
  }
  return out.refuse(500, "could not save the state: " + result.error);
}

}  // namespace

HttpResponse handleRequest(HttpRequest request, ObjectStore& store) {
  std::string_view target = request.target;
  if (target.starts_with("/objects/")) {
    return handleObject(request, target.substr(9), store);
  }
  Outcome out{request.method};
  if (target == "/healthz") {
    if (request.method != "GET") return out.refuse(405, "use GET on /healthz");
    return out.finish({200, "ok\n"}, "healthy");
  }
  if (target.starts_with("/fences/")) {
    std::string_view lock = target.substr(8);
    if (request.method != "GET") return out.refuse(405, "use GET on /fences/");
    if (!isValidLock(lock)) {
      return out.refuse(400, "invalid lock: 1 to 200 bytes of [A-Za-z0-9._/-]");
    }
    out.lock = lock;
    std::string highest = std::to_string(store.fence(lock));
    return out.finish({200, highest + "\n"}, "highest " + highest);
  }
  return out.refuse(404, "no such endpoint");
}

void logRefusal(const HttpResponse& refusal) {
  std::string_view why = refusal.body;
  if (why.ends_with('\n')) why.remove_suffix(1);
  Outcome{}.finish(refusal, why);
}

}  // namespace fencekeeper::store
