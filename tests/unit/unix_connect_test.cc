// connectUnixSocket: a full backlog (EAGAIN at once, for a Unix socket) is tried again until the
// deadline, so a probe connects once the server accepts (the status socket under a burst).
#include "common/unix_connect.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace fencekeeper {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class UnixConnectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fk-it-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/s.sock";
    listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path_.c_str());
    ASSERT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(listener_, 1), 0);
    // Fill the backlog: connects the listener does not accept.
    for (;;) {
      int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ASSERT_EQ(errno, EAGAIN);
        close(fd);
        break;
      }
      queued_.push_back(fd);
    }
  }
  void TearDown() override {
    for (int fd : queued_) close(fd);
    close(listener_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }

  std::string dir_, path_;
  int listener_ = -1;
  std::vector<int> queued_;
};

TEST_F(UnixConnectTest, AFullBacklogIsTriedAgainUntilTheServerAccepts) {
  std::thread server([&] {
    std::this_thread::sleep_for(milliseconds(100));
    int accepted = accept(listener_, nullptr, nullptr);
    ASSERT_GE(accepted, 0);
    std::this_thread::sleep_for(milliseconds(500));  // (keeps it while the client connects)
    close(accepted);
  });
  int fd = connectUnixSocket(path_, Clock::now() + milliseconds(5'000));
  EXPECT_GE(fd, 0) << std::strerror(errno);
  if (fd >= 0) close(fd);
  server.join();
}

TEST_F(UnixConnectTest, AFullBacklogFailsWithEagainAtTheDeadline) {
  auto t0 = Clock::now();
  int fd = connectUnixSocket(path_, t0 + milliseconds(200));
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_GE(Clock::now() - t0, milliseconds(200));
}

TEST_F(UnixConnectTest, NoServerFailsAtOnce) {
  auto t0 = Clock::now();
  EXPECT_EQ(connectUnixSocket(dir_ + "/none.sock", t0 + milliseconds(5'000)), -1);
  EXPECT_EQ(errno, ENOENT);
  EXPECT_LT(Clock::now() - t0, milliseconds(1'000));
}

}  // namespace
}  // namespace fencekeeper
