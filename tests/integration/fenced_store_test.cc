// Runs the fenced-store binary (FENCED_STORE_BIN) on a temporary directory and talks HTTP to it
// over loopback: fenced writes and reads, restarts, and requests it must refuse.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/devzk/spawn.h"

#ifndef FENCED_STORE_BIN
#error "FENCED_STORE_BIN must name the fenced-store binary"
#endif

extern char** environ;

namespace fencekeeper {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using namespace std::literals;

constexpr milliseconds kDeadline{10'000};
constexpr milliseconds kPollEvery{10};

// Polls `done` until it holds or `timeout` passes.
template <typename Condition>
bool waitFor(Condition done, milliseconds timeout = kDeadline) {
  Clock::time_point deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollEvery);
  }
  return true;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "fenced-store-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A fenced-store process; output goes to `log`. Killed if still running on destruction.
class Process {
 public:
  Process(const std::vector<std::string>& args, const fs::path& log) {
    devzk::SpawnSpec spec;
    spec.argv = {FENCED_STORE_BIN};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    for (char** e = environ; *e; ++e) spec.env.emplace_back(*e);
    spec.outputPath = log;
    spec.dieWithParent = true;  // a crashed test leaves no store running
    pid_ = devzk::spawnProcess(spec);
  }
  ~Process() {
    if (!exitCode_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  bool running() { return !exited(); }

  // The exit code once the process has exited within `timeout` (-1 for a death by signal).
  std::optional<int> waitExit(milliseconds timeout = kDeadline) {
    waitFor([this] { return exited(); }, timeout);
    return exitCode_;
  }

  std::optional<int> terminate() {
    ::kill(pid_, SIGTERM);
    return waitExit();
  }

 private:
  bool exited() {
    if (exitCode_) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
    exitCode_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return true;
  }

  pid_t pid_ = -1;
  std::optional<int> exitCode_;
};

struct Reply {
  int status = 0;
  std::string body;
};

// A socket connected to the store, with timeouts so that no test can hang on it.
int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` as is on a new connection and reads the reply until the store closes it.
Reply roundTrip(int port, std::string_view request) {
  int fd = connectTo(port);
  if (fd < 0) return {};
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string raw;
  char buffer[4096];
  ssize_t n;
  while ((n = ::recv(fd, buffer, sizeof buffer, 0)) > 0) raw.append(buffer, n);
  ::close(fd);
  Reply reply;
  size_t headEnd = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.1 ", 0) != 0 || headEnd == std::string::npos) return reply;
  reply.status = std::stoi(raw.substr(9, 3));
  reply.body = raw.substr(headEnd + 4);
  return reply;
}

std::string fenced(std::string_view method, std::string_view key, std::string_view lock,
                   uint64_t token, std::string_view body = "") {
  std::string request = std::string(method) + " /objects/" + std::string(key) + " HTTP/1.1\r\n";
  request += "Host: 127.0.0.1\r\nFence-Lock: " + std::string(lock) + "\r\n";
  request += "Fence-Token: " + std::to_string(token) + "\r\n";
  request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  return request + std::string(body);
}

Reply put(int port, std::string_view key, std::string_view value, std::string_view lock,
          uint64_t token) {
  return roundTrip(port, fenced("PUT", key, lock, token, value));
}

Reply get(int port, std::string_view key, std::string_view lock, uint64_t token) {
  return roundTrip(port, fenced("GET", key, lock, token));
}

Reply plainGet(int port, std::string_view target) {
  return roundTrip(port, "GET " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
}

class FencedStoreTest : public testing::Test {
 protected:
  fs::path data() const { return dir_.path() / "data"; }
  fs::path log() const { return dir_.path() / "store.log"; }

  void SetUp() override { fs::create_directory(data()); }
  // Every store a test leaves running must still stop cleanly on SIGTERM.
  void TearDown() override {
    if (store_) stop();
  }

  // Starts a store on data() and waits until it has written its port.
  void start() {
    fs::path portFile = dir_.path() / "port";
    fs::remove(portFile);
    store_.emplace(std::vector<std::string>{"--listen", "127.0.0.1:0", "--data", data(),
                                            "--port-file", portFile},
                   log());
    bool ready = waitFor([&] { return fs::exists(portFile) || !store_->running(); });
    ASSERT_TRUE(ready && store_->running()) << "store did not start:\n" << readFile(log());
    port_ = std::stoi(readFile(portFile));
  }

  void stop() {
    ASSERT_TRUE(store_);
    EXPECT_EQ(store_->terminate(), 0) << readFile(log());
    store_.reset();
  }

  // Runs fenced-store with `args` to completion; its exit code.
  std::optional<int> run(const std::vector<std::string>& args) {
    return Process(args, log()).waitExit();
  }

  TempDir dir_;
  std::optional<Process> store_;
  int port_ = 0;
};

TEST_F(FencedStoreTest, RefusesLowerTokensForWritesAndReads) {
  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_EQ(put(port_, "config", "v1", "orders", 5).status, 200);
  Reply read = get(port_, "config", "orders", 5);
  EXPECT_EQ(read.status, 200);
  EXPECT_EQ(read.body, "v1");

  Reply stalePut = put(port_, "config", "stale", "orders", 4);
  EXPECT_EQ(stalePut.status, 412);
  EXPECT_NE(stalePut.body.find("highest seen is 5"), std::string::npos) << stalePut.body;
  EXPECT_EQ(get(port_, "config", "orders", 4).status, 412);
  EXPECT_EQ(get(port_, "config", "orders", 5).body, "v1") << "a refused write changes nothing";

  EXPECT_EQ(put(port_, "config", "v2", "orders", 7).status, 200);
  EXPECT_EQ(plainGet(port_, "/fences/orders").body, "7\n");
  EXPECT_EQ(plainGet(port_, "/fences/other").body, "0\n") << "fences are per lock";
  EXPECT_EQ(put(port_, "config", "v3", "other", 1).status, 200);
  ASSERT_NO_FATAL_FAILURE(stop());

  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_EQ(plainGet(port_, "/fences/orders").body, "7\n");
  EXPECT_EQ(put(port_, "config", "stale", "orders", 6).status, 412);
  read = get(port_, "config", "orders", 7);
  EXPECT_EQ(read.status, 200);
  EXPECT_EQ(read.body, "v3");
}

TEST_F(FencedStoreTest, ReadOfMissingKeyStillRaisesFence) {
  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_EQ(get(port_, "absent", "orders", 9).status, 404);
  EXPECT_EQ(put(port_, "absent", "late", "orders", 8).status, 412);
  ASSERT_NO_FATAL_FAILURE(stop());
  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_EQ(plainGet(port_, "/fences/orders").body, "9\n") << "the raised fence was saved";
}

TEST_F(FencedStoreTest, GarbageGets400AndServingGoesOn) {
  ASSERT_NO_FATAL_FAILURE(start());
  for (std::string_view garbage :
       {"GARBAGE\r\n\r\n"sv, "\x01\x02\xff\xfe\r\n\r\n"sv, "GET /objects/k HTTP/9.9\r\n\r\n"sv,
        "GET /healthz HTTP/1.1\r\nbad header\r\n\r\n"sv,
        "GET /healthz HTTP/1.1\r\nX: a\0z\r\n\r\n"sv,
        "PUT /objects/k HTTP/1.1\r\nContent-Length: -1\r\n\r\n"sv,
        "PUT /objects/k HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"sv}) {
    EXPECT_EQ(roundTrip(port_, garbage).status, 400) << garbage;
  }
  EXPECT_EQ(roundTrip(port_, "GET /" + std::string(20'000, 'a') + " HTTP/1.1\r\n\r\n").status, 431);
  EXPECT_EQ(roundTrip(port_, "PUT /objects/k HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n").status,
            413);
  EXPECT_EQ(roundTrip(port_, fenced("PUT", "k", "orders", 1, std::string(1 << 20, 'x'))).status,
            200)
      << "a body of exactly the limit is fine";
  EXPECT_EQ(plainGet(port_, "/healthz").status, 200);
}

TEST_F(FencedStoreTest, MissingOrMalformedFenceHeadersGet400) {
  ASSERT_NO_FATAL_FAILURE(start());
  std::string head = "PUT /objects/k HTTP/1.1\r\nContent-Length: 1\r\n";
  Reply noHeaders = roundTrip(port_, head + "\r\nx");
  EXPECT_EQ(noHeaders.status, 400);
  EXPECT_NE(noHeaders.body.find("Fence-Lock"), std::string::npos) << noHeaders.body;
  Reply noToken = roundTrip(port_, head + "Fence-Lock: orders\r\n\r\nx");
  EXPECT_EQ(noToken.status, 400);
  EXPECT_NE(noToken.body.find("Fence-Token"), std::string::npos) << noToken.body;
  for (std::string_view token : {"", "-1", "+5", "5x", "0x10", "18446744073709551616"}) {
    std::string request =
        head + "Fence-Lock: orders\r\nFence-Token: " + std::string(token) + "\r\n\r\nx";
    EXPECT_EQ(roundTrip(port_, request).status, 400) << "token '" << token << "'";
  }
  EXPECT_EQ(
      roundTrip(port_, head + "Fence-Lock: a\r\nFence-Lock: b\r\nFence-Token: 1\r\n\r\nx").status,
      400);
  EXPECT_EQ(roundTrip(port_, head + "Fence-Lock: a b\r\nFence-Token: 1\r\n\r\nx").status, 400);
  EXPECT_EQ(put(port_, "bad%20key", "x", "orders", 1).status, 400);
  EXPECT_EQ(plainGet(port_, "/fences/orders").body, "0\n") << "refused requests raise nothing";
  EXPECT_EQ(roundTrip(port_, head + "fence-lock: orders\r\nFENCE-TOKEN: 18446744073709551615"
                                    "\r\n\r\nx")
                .status,
            200)
      << "header names are case-insensitive; the largest uint64 is a valid token";
}

TEST_F(FencedStoreTest, SlowClientDoesNotBlockOthers) {
  ASSERT_NO_FATAL_FAILURE(start());
  int slow = connectTo(port_);
  ASSERT_GE(slow, 0);
  std::string partial = "PUT /objects/k HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc";
  ::send(slow, partial.data(), partial.size(), MSG_NOSIGNAL);
  EXPECT_EQ(plainGet(port_, "/healthz").status, 200);
  EXPECT_EQ(put(port_, "k", "v", "orders", 3).status, 200);
  ::close(slow);
}

TEST_F(FencedStoreTest, RefusesBadFlagsAndASecondStoreOnTheSameData) {
  EXPECT_EQ(run({"--listen", "0.0.0.0:0", "--data", data()}), 1);
  EXPECT_EQ(run({"--listen", "127.0.0.1:0", "--data", dir_.path() / "missing"}), 1);
  EXPECT_EQ(run({"--data", data()}), 2);
  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_EQ(run({"--listen", "127.0.0.1:0", "--data", data()}), 1);
  EXPECT_NE(readFile(log()).find("another fenced-store is already serving"), std::string::npos);
  EXPECT_EQ(plainGet(port_, "/healthz").status, 200);
}

TEST_F(FencedStoreTest, RefusesToStartOnACorruptStateFile) {
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_EQ(put(port_, "config", "v1", "orders", 5).status, 200);
  ASSERT_NO_FATAL_FAILURE(stop());
  std::string state = readFile(data() / "state");
  std::ofstream(data() / "state", std::ios::trunc) << state.substr(0, state.size() - 4);
  EXPECT_EQ(run({"--listen", "127.0.0.1:0", "--data", data()}), 1);
  EXPECT_NE(readFile(log()).find("corrupt"), std::string::npos);
}

TEST_F(FencedStoreTest, ResetFencesKeepsObjects) {
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_EQ(put(port_, "config", "kept", "orders", 4'000'000'000).status, 200);
  ASSERT_NO_FATAL_FAILURE(stop());
  EXPECT_EQ(run({"--data", data(), "--reset-fences"}), 0);
  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_EQ(plainGet(port_, "/fences/orders").body, "0\n");
  Reply read = get(port_, "config", "orders", 2);
  EXPECT_EQ(read.status, 200);
  EXPECT_EQ(read.body, "kept");
}

}  // namespace
}  // namespace fencekeeper
