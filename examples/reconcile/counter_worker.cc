// A counter worker for the fault tests: over and over, takes a lease, reads a counter from the
// fenced store with its token, pauses a little, writes the counter + 1 with its token, releases.
//
// Like reconcile-worker it is naive on purpose: it never checks whether its lease is still held
// before it writes. A worker frozen or slowed down past its lease writes anyway, and it is the
// store's fence that must refuse it, so that no increment is ever lost or applied twice.
//
//   counter-worker --socket PATH --store-port N [--lock counter] [--key counter] [--ttl 600ms]
//                  [--wait 5s] [--duration 15s] [--name W] [--seed S]
//
// One line per iteration on stdout, flushed:
//   <name> iter=<i> token=<t> read=<value> get=<status> put=<status> release=<code>
// with `read=-` / `put=-` when that step did not happen, and `token=0 ... acquire=<code>` when no
// lease was granted. Exit: 0 once the duration is over; 1 cannot reach the sidecar at the start;
// 2 bad flags.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "common/duration.h"
#include "examples/fenced_store/fence_http.h"
#include "fencekeeper/client.h"

namespace {

using namespace fencekeeper;
using Clock = std::chrono::steady_clock;

// A GET answer: 404 is the counter not written yet, 0; anything else but 200 is no value.
bool parseCounter(const FenceReply& reply, long long& value) {
  if (reply.status == 404) {
    value = 0;
    return true;
  }
  if (reply.status != 200 || reply.body.empty()) return false;
  char* end = nullptr;
  value = std::strtoll(reply.body.c_str(), &end, 10);
  return *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket = defaultSocketPath();
  std::string lock = "counter", key = "counter", name = "worker";
  int port = 0;
  Millis ttl(600), wait(5000), duration(15000);
  uint64_t seed = std::random_device{}();
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i];
    if (i + 1 == argc) {
      std::fprintf(stderr, "counter-worker: %s needs a value\n", flag.c_str());
      return 2;
    }
    std::string value = argv[i + 1];
    std::optional<Millis> parsed;
    if (flag == "--socket")
      socket = value;
    else if (flag == "--store-port")
      port = std::atoi(value.c_str());
    else if (flag == "--lock")
      lock = value;
    else if (flag == "--key")
      key = value;
    else if (flag == "--name")
      name = value;
    else if (flag == "--seed")
      seed = std::strtoull(value.c_str(), nullptr, 10);
    else if ((flag == "--ttl" || flag == "--wait" || flag == "--duration") &&
             (parsed = parseDuration(value))) {
      (flag == "--ttl" ? ttl : flag == "--wait" ? wait : duration) = *parsed;
    } else {
      std::fprintf(stderr, "counter-worker: bad flag %s %s\n", flag.c_str(), value.c_str());
      return 2;
    }
  }
  if (port <= 0) {
    std::fprintf(stderr, "counter-worker: --store-port is required\n");
    return 2;
  }
  // The store may close a connection under a write of ours; that is an outcome, not a death.
  ::signal(SIGPIPE, SIG_IGN);

  Status status;
  auto client = Client::connect(socket, &status);
  if (!client) {
    std::printf("%s cannot reach the sidecar: %s\n", name.c_str(), status.message.c_str());
    return 1;
  }
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<int> pauseMs(0, 30);
  AcquireOptions options;
  options.ttl = ttl;
  options.wait = wait;
  options.keepAlive = true;
  options.ownerLabel = name;

  Clock::time_point end = Clock::now() + duration;
  for (long iteration = 1; Clock::now() < end; ++iteration) {
    auto lease = client->acquire(lock, options, &status);
    if (!lease) {
      std::printf("%s iter=%ld token=0 acquire=%s %s\n", name.c_str(), iteration,
                  errorCodeName(status.code), status.message.c_str());
      std::fflush(stdout);
      // Without a connection every later acquire fails at once: connect again, without spinning.
      if (!client->connected()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (auto again = Client::connect(socket, &status)) client = std::move(again);
      }
      continue;
    }
    uint64_t token = lease->token();
    FenceReply read = fencedRequest(port, "GET", key, lock, token, "");
    long long value = 0;
    std::string readText = "-", putText = "-";
    if (parseCounter(read, value)) {
      readText = std::to_string(value);
      // The window where a pause hurts: between the read and the write that depends on it.
      std::this_thread::sleep_for(std::chrono::milliseconds(pauseMs(random)));
      FenceReply wrote = fencedRequest(port, "PUT", key, lock, token, std::to_string(value + 1));
      putText = std::to_string(wrote.status);
    }
    Status released = lease->release();
    std::printf("%s iter=%ld token=%llu read=%s get=%d put=%s release=%s\n", name.c_str(),
                iteration, static_cast<unsigned long long>(token), readText.c_str(), read.status,
                putText.c_str(), errorCodeName(released.code));
    std::fflush(stdout);
  }
  return 0;
}
