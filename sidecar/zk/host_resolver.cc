#include "sidecar/zk/host_resolver.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <memory>
#include <string_view>
#include <vector>

namespace fencekeeper::zk {

namespace {

struct HostPort {
  std::string host;
  std::string port;
};

// "a:1,b:2" as the C client splits it: at commas, then at each entry's last colon (an IPv6
// address is written bare: "::1:2181").
std::vector<HostPort> split(const std::string& hosts) {
  std::vector<HostPort> out;
  size_t start = 0;
  while (start <= hosts.size()) {
    size_t comma = hosts.find(',', start);
    std::string entry = hosts.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!entry.empty()) {
      size_t colon = entry.rfind(':');
      if (colon == std::string::npos) {
        out.push_back({entry, ""});
      } else {
        out.push_back({entry.substr(0, colon), entry.substr(colon + 1)});
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool isAddress(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

}  // namespace

bool HostResolver::numeric(const std::string& hosts) {
  for (auto& entry : split(hosts)) {
    if (!isAddress(entry.host)) return false;
  }
  return true;
}

std::string HostResolver::resolve(const std::string& hosts) {
  std::string out;
  auto add = [&out](const std::string& host, const std::string& port) {
    out += (out.empty() ? "" : ",") + host + ":" + port;
  };
  for (auto& entry : split(hosts)) {
    if (isAddress(entry.host)) {
      add(entry.host, entry.port);
      continue;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;  // as the C client asks
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(entry.host.c_str(), entry.port.c_str(), &hints, &found); rc != 0) {
      spdlog::warn("zookeeper host {} does not resolve: {}", entry.host, gai_strerror(rc));
      continue;
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, freeaddrinfo);
    for (addrinfo* a = found; a; a = a->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* address =
          a->ai_family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
              : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
      if (inet_ntop(a->ai_family, address, text, sizeof text)) add(text, entry.port);
    }
  }
  return out;
}

HostResolver::HostResolver(std::string hosts, std::string resolved, Millis period, Executor& loop,
                           std::function<void(const std::string&)> changed)
    : hosts_(std::move(hosts)),
      period_(period),
      loop_(loop),
      changed_(std::move(changed)),
      thread_([this, last = std::move(resolved)]() mutable { run(std::move(last)); }) {}

HostResolver::~HostResolver() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  thread_.join();
}

void HostResolver::run(std::string last) {
  std::unique_lock lock(mutex_);
  while (!stop_.wait_for(lock, period_, [this] { return stopping_; })) {
    lock.unlock();
    std::string now = resolve(hosts_);
    lock.lock();
    // Nothing resolves (DNS down): the client keeps the addresses it has.
    if (now.empty() || now == last || stopping_) continue;
    last = now;
    loop_.post([changed = changed_, now] { changed(now); });
  }
}

}  // namespace fencekeeper::zk
