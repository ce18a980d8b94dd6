// fk-flood: one local process attacking the sidecar's lease socket with raw Cap'n Proto frames,
// for the flood tests (flood_test.cc; issue 9, docs/security.md "Floods"):
//   fk-flood --socket S --mode MODE --seconds N [--inflight K] [--name LOCK]
// MODE: hoard (acquires on fresh names, every granted lease kept), unread (calls whose replies
// are never read), status (status() calls, replies read: a busy client), oversized (huge capability
// tables, deep nesting, big and many-segment messages), captable (huge capability tables only),
// connections (connections held open until the socket or the sidecar's fds give out), holder
// (holder() calls on LOCK and 100 other names), garbage (random bytes, and random words behind a
// valid segment table). A connection the sidecar closes is opened again. Prints one summary line at
// the end.
#include <capnp/serialize.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/raw_rpc_socket.h"

using namespace fencekeeper::rpcframes;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string socket, mode, name = "flood-held";
  int seconds = 60;
  uint32_t inflight = 64;
};

struct Counters {
  std::atomic<uint64_t> sent{0}, replies{0}, connects{0}, closedBySidecar{0};
};

// One connection that pipelines calls from `next` with at most `inflight` unanswered, reads
// every reply and finishes it (keeping any capability in it), until the sidecar closes it.
void pipelined(const Options& o, Counters& c, Clock::time_point deadline,
               const std::function<Frame(uint32_t question)>& next) {
  while (Clock::now() < deadline) {
    int fd = dial(o.socket);
    if (fd < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    ++c.connects;
    std::mutex mutex;
    std::condition_variable answered;
    uint32_t unanswered = 0;
    std::atomic<bool> closed{false};
    std::thread reader([&] {
      capnp::ReaderOptions big;
      big.traversalLimitInWords = uint64_t{1} << 30;
      try {
        while (true) {
          capnp::StreamFdMessageReader message(fd, big);
          auto in = classify(message);
          if (!in.isReturn || in.answerId == 0) continue;  // 0: the bootstrap
          ++c.replies;
          std::lock_guard<std::mutex> lock(mutex);
          writeFrame(fd, finish(in.answerId), deadline);
          --unanswered;
          answered.notify_all();
        }
      } catch (...) {
      }
      closed = true;
      std::lock_guard<std::mutex> lock(mutex);
      answered.notify_all();
    });
    {
      std::unique_lock<std::mutex> lock(mutex);
      bool ok = writeFrame(fd, bootstrap(0), deadline);
      for (uint32_t q = 1; ok && !closed && Clock::now() < deadline; ++q) {
        answered.wait_until(lock, deadline, [&] { return closed || unanswered < o.inflight; });
        if (closed || Clock::now() >= deadline) break;
        ok = writeFrame(fd, next(q), deadline);
        ++unanswered;
        ++c.sent;
      }
    }
    shutdown(fd, SHUT_RDWR);
    reader.join();
    close(fd);
    if (Clock::now() < deadline) ++c.closedBySidecar;
  }
}

// Writes frames from `next` and never reads, over one connection at a time.
void neverRead(const Options& o, Counters& c, Clock::time_point deadline,
               const std::function<Frame(uint32_t question)>& next) {
  while (Clock::now() < deadline) {
    int fd = dial(o.socket);
    if (fd < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    ++c.connects;
    bool ok = writeFrame(fd, bootstrap(0), deadline);
    for (uint32_t q = 1; ok && Clock::now() < deadline; ++q) {
      ok = writeFrame(fd, next(q), deadline);
      if (ok) ++c.sent;
    }
    close(fd);
    if (Clock::now() < deadline) ++c.closedBySidecar;
  }
}

void holdConnections(const Options& o, Counters& c, Clock::time_point deadline) {
  std::vector<int> fds;
  while (Clock::now() < deadline) {
    int fd = dial(o.socket, /*nonBlocking=*/true);
    if (fd >= 0) {
      fds.push_back(fd);
      ++c.connects;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // backlog full
    }
  }
  for (int fd : fds) close(fd);
}

void garbage(const Options& o, Counters& c, Clock::time_point deadline) {
  std::mt19937_64 random(42);
  std::vector<uint64_t> words(512);
  for (uint64_t round = 0; Clock::now() < deadline; ++round) {
    int fd = dial(o.socket);
    if (fd < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    ++c.connects;
    for (auto& w : words) w = random();
    size_t n = 1 + random() % words.size();
    if (round % 2 == 1) words[0] = uint64_t{n - 1} << 32;  // one segment of the words that follow
    if (writeAll(fd, words.data(), n * sizeof(uint64_t), deadline)) ++c.sent;
    // The sidecar drops a connection that sent garbage: wait for that before the next one.
    pollfd pfd{fd, POLLIN, 0};
    char sink[4096];
    while (Clock::now() < deadline && poll(&pfd, 1, 100) >= 0) {
      if (pfd.revents != 0 && read(fd, sink, sizeof sink) <= 0) {
        ++c.closedBySidecar;
        break;
      }
    }
    close(fd);
  }
}

// One shape per connection in turn: the sidecar closes a connection at its first oversized one.
Frame oversized(uint32_t q, uint64_t round) {
  switch (round % 8) {
    case 0:
      return deepNesting(q, 0, 200);
    case 1:
      return bigName(q, 0, 4 << 20);
    case 2:
      return manySegments(q, 0, 500);
    default:
      return hugeCapTable(q, 0, 1'000'000);
  }
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--socket")
      o.socket = value;
    else if (flag == "--mode")
      o.mode = value;
    else if (flag == "--seconds")
      o.seconds = std::stoi(value);
    else if (flag == "--inflight")
      o.inflight = static_cast<uint32_t>(std::stoul(value));
    else if (flag == "--name")
      o.name = value;
  }
  Counters c;
  auto deadline = Clock::now() + std::chrono::seconds(o.seconds);
  uint64_t fresh = 0;
  if (o.mode == "hoard") {
    pipelined(o, c, deadline, [&](uint32_t q) {
      return acquire(q, 0, "flood-hoard-" + std::to_string(fresh++), 60'000, 0);
    });
  } else if (o.mode == "status") {
    pipelined(o, c, deadline, [](uint32_t q) { return status(q, 0); });
  } else if (o.mode == "unread") {
    neverRead(o, c, deadline, [](uint32_t q) { return status(q, 0); });
  } else if (o.mode == "oversized") {
    neverRead(o, c, deadline, [&](uint32_t q) { return oversized(q, fresh++); });
  } else if (o.mode == "captable") {
    neverRead(o, c, deadline, [](uint32_t q) { return hugeCapTable(q, 0, 1'000'000); });
  } else if (o.mode == "connections") {
    holdConnections(o, c, deadline);
  } else if (o.mode == "holder") {
    pipelined(o, c, deadline, [&](uint32_t q) {
      return holder(q, 0, q % 2 ? o.name : "flood-h-" + std::to_string(q % 100));
    });
  } else if (o.mode == "garbage") {
    garbage(o, c, deadline);
  } else {
    std::fprintf(stderr, "fk-flood: unknown --mode '%s'\n", o.mode.c_str());
    return 2;
  }
  std::printf("fk-flood mode=%s sent=%llu replies=%llu connects=%llu closed-by-sidecar=%llu\n",
              o.mode.c_str(), static_cast<unsigned long long>(c.sent.load()),
              static_cast<unsigned long long>(c.replies.load()),
              static_cast<unsigned long long>(c.connects.load()),
              static_cast<unsigned long long>(c.closedBySidecar.load()));
  return 0;
}
