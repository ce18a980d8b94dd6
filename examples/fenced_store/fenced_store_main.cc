// fenced-store: a small reference storage server that checks fencekeeper tokens. Objects by key
// over HTTP/1.1 on loopback; every read and write names its lock and token, and a token below
// the lock's highest is refused with 412. See docs/fencing.md.
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

#include "common/unique_fd.h"
#include "examples/fenced_store/http.h"
#include "examples/fenced_store/object_store.h"
#include "examples/fenced_store/server.h"
#include "examples/fenced_store/state_file.h"

namespace fencekeeper::store {
namespace {

constexpr const char* kUsage =
    "usage: fenced-store --listen 127.0.0.1:PORT --data DIR [--port-file FILE]\n"
    "       fenced-store --data DIR --reset-fences\n"
    "  --listen        loopback address to serve on; PORT 0 picks a free port\n"
    "  --data          existing directory holding the store's state\n"
    "  --port-file     where to write the port once listening\n"
    "  --reset-fences  forget every lock's fence (after a ZooKeeper ensemble was rebuilt from\n"
    "                  scratch; see docs/fencing.md), keep the objects, and exit\n";

struct Flags {
  std::string listen;
  std::string data;
  std::string portFile;
  bool resetFences = false;
};

std::optional<Flags> parseFlags(int argc, char** argv, std::string& error) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string_view name = argv[i];
    if (name == "--reset-fences") {
      flags.resetFences = true;
      continue;
    }
    std::string* target = name == "--listen"      ? &flags.listen
                          : name == "--data"      ? &flags.data
                          : name == "--port-file" ? &flags.portFile
                                                  : nullptr;
    if (target == nullptr) {
      error = "unknown flag " + std::string(name);
      return std::nullopt;
    }
    if (i + 1 == argc) {
      error = std::string(name) + " needs a value";
      return std::nullopt;
    }
    *target = argv[++i];
  }
  if (flags.data.empty()) {
    error = "--data is required";
  } else if (flags.resetFences && !flags.listen.empty()) {
    error = "--reset-fences does not serve; drop --listen";
  } else if (!flags.resetFences && flags.listen.empty()) {
    error = "--listen is required";
  }
  if (!error.empty()) return std::nullopt;
  return flags;
}

// The store has no authentication: anyone who can reach it can raise a fence and lock every
// holder out. Loopback keeps it to this machine, so nothing else is accepted.
std::optional<uint16_t> parseListen(std::string_view listen, std::string& error) {
  constexpr std::string_view kHost = "127.0.0.1:";
  uint16_t port = 0;
  std::string_view digits = listen.substr(std::min(listen.size(), kHost.size()));
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (!listen.starts_with(kHost) || digits.empty() || ec != std::errc() ||
      end != digits.data() + digits.size()) {
    error = "--listen must be 127.0.0.1:PORT (fenced-store serves loopback only), got '" +
            std::string(listen) + "'";
    return std::nullopt;
  }
  return port;
}

UniqueFd listenLoopback(uint16_t port, uint16_t& boundPort, std::string& error) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  int one = 1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  socklen_t length = sizeof addr;
  if (!fd.valid() || ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd.get(), 128) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    error = "cannot listen on 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno);
    return UniqueFd();
  }
  boundPort = ntohs(addr.sin_port);
  return fd;
}

// Written to a temporary name and renamed, so a reader polling for the file never sees it half
// written.
bool writePortFile(const std::string& path, uint16_t port, std::string& error) {
  std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << port << "\n";
    if (!out.flush()) {
      error = "cannot write " + temp;
      return false;
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + temp + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

// SIGTERM and SIGINT arrive on a descriptor the accept loop polls, so shutdown is ordinary
// control flow. Blocked before any thread starts, so that every thread inherits the mask and
// none is interrupted by them.
UniqueFd stopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return UniqueFd(::signalfd(-1, &set, SFD_CLOEXEC));
}

int run(int argc, char** argv) {
  std::string error;
  auto fail = [&error] {
    std::fprintf(stderr, "fenced-store: %s\n", error.c_str());
    return 1;
  };
  std::optional<Flags> flags = parseFlags(argc, argv, error);
  if (!flags) {
    std::fprintf(stderr, "fenced-store: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  std::optional<uint16_t> port;
  if (!flags->resetFences && !(port = parseListen(flags->listen, error))) return fail();

  std::optional<StateFile> file = StateFile::open(flags->data, error);
  if (!file) return fail();
  std::optional<StoreState> state = file->load(error);
  if (!state) return fail();
  if (flags->resetFences) {
    if (!file->save(state->objects, {}, error)) return fail();
    spdlog::info("forgot {} fences in {}; {} objects kept", state->fences.size(), flags->data,
                 state->objects.size());
    return 0;
  }

  UniqueFd stop = stopSignals();
  if (!stop.valid()) {
    error = std::string("signalfd: ") + std::strerror(errno);
    return fail();
  }
  // Sockets are written with MSG_NOSIGNAL; this covers the log going to a closed pipe.
  ::signal(SIGPIPE, SIG_IGN);
  uint16_t boundPort = 0;
  UniqueFd listener = listenLoopback(*port, boundPort, error);
  if (!listener.valid()) return fail();
  if (!flags->portFile.empty() && !writePortFile(flags->portFile, boundPort, error)) {
    return fail();
  }
  spdlog::info("fenced-store serving {} on 127.0.0.1:{} ({} objects, {} fences)", flags->data,
               boundPort, state->objects.size(), state->fences.size());

  ObjectStore store(std::move(*file), std::move(*state));
  serve(listener.get(), stop.get(), store, HttpLimits{});
  spdlog::info("fenced-store stopped");
  return 0;
}

}  // namespace
}  // namespace fencekeeper::store

int main(int argc, char** argv) { return fencekeeper::store::run(argc, argv); }
