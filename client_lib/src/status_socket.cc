// GET over the status socket with KJ's HTTP client, on an event loop of its own (the caller's
// thread may run a KJ loop already: a thread has at most one).
#include "fencekeeper/status_socket.h"

#include <kj/async-io.h>
#include <kj/compat/http.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/socket_path.h"
#include "common/unix_connect.h"

namespace fencekeeper {
namespace {

Status unavailable(std::string why) { return Status{ErrorCode::kSidecarUnavailable, why}; }

// The exchange, start to end, on the calling thread's new event loop.
Status exchange(const std::string& path, const std::string& target, Millis timeout, size_t maxBody,
                HttpAnswer* out) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int fd = connectUnixSocket(path, deadline);
  if (fd < 0) {
    return unavailable("cannot connect to the status socket " + path + ": " +
                       std::strerror(errno));
  }
  auto io = kj::setupAsyncIo();
  kj::HttpHeaderTable table;
  // Declared before the promise that uses them, so destroyed after it.
  kj::Own<kj::AsyncIoStream> stream =
      io.lowLevelProvider->wrapUnixSocketFd(fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP);
  kj::HttpHeaders headers(table);
  headers.set(kj::HttpHeaderId::HOST, "localhost");
  kj::Own<kj::HttpClient> client = kj::newHttpClient(table, *stream);
  auto answer =
      client->request(kj::HttpMethod::GET, target.c_str(), headers, uint64_t(0))
          .response
          .then([maxBody](kj::HttpClient::Response&& response) {
            int code = static_cast<int>(response.statusCode);
            auto& body = *response.body;
            return body.readAllText(maxBody + 1)
                .then([code](kj::String text) {
                  return HttpAnswer{code, std::string(text.cStr(), text.size())};
                })
                .attach(kj::mv(response.body));
          });
  auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
  auto late = io.provider->getTimer().afterDelay(std::max<int64_t>(left.count(), 0) *
                                                 kj::MILLISECONDS);
  auto inTime = answer.then([](HttpAnswer a) -> kj::Maybe<HttpAnswer> { return kj::mv(a); })
                    .exclusiveJoin(late.then([]() -> kj::Maybe<HttpAnswer> { return nullptr; }));
  try {
    KJ_IF_MAYBE (a, inTime.wait(io.waitScope)) {
      *out = kj::mv(*a);
    } else {
      return unavailable("no answer from the status socket " + path + " within " +
                         std::to_string(timeout.count()) + " ms");
    }
  } catch (const kj::Exception& e) {
    return unavailable("cannot GET " + target + " from the status socket " + path + ": " +
                       e.getDescription().cStr());
  }
  if (out->body.size() > maxBody) {
    return unavailable("the status socket's answer to " + target + " exceeds " +
                       std::to_string(maxBody) + " bytes");
  }
  return Status{};
}

}  // namespace

Status getFromStatusSocket(const std::string& socketPath, const std::string& target, Millis timeout,
                           HttpAnswer* out) {
  return getFromStatusSocket(socketPath, target, timeout, kMaxProbeBody, out);
}

Status getFromStatusSocket(const std::string& socketPath, const std::string& target, Millis timeout,
                           size_t maxBody, HttpAnswer* out) {
  Status result;
  std::string path = resolveSocketPath(socketPath);
  std::thread([&] {
    try {
      result = exchange(path, target, timeout, maxBody, out);
    } catch (const std::exception& e) {
      result = unavailable(std::string("status socket: ") + e.what());
    }
  }).join();
  return result;
}

std::string defaultStatusSocketPath(const std::string& leaseSocket) {
  const char* env = std::getenv("FENCEKEEPER_STATUS_SOCKET");
  if (env && *env) return env;
  // Where the sidecar binds the lease socket (NAME.d/NAME in a directory others may write), as the
  // client looks for it: the status socket is named after that path.
  return statusSocketBeside(resolveSocketPath(leaseSocket));
}

}  // namespace fencekeeper
