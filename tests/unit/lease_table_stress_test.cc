// Torn reads: the writer rewrites one slot as fast as it can (grant, renews, loss or release,
// grant again) while readers map the file read-only, in other processes and in threads of this one
// (the latter is what ThreadSanitizer checks), and hold every consistent read to the writer's
// pattern: token = generation * 1000, a Held slot's deadline within its renews of the token, an
// ended one's 0, the name the token's decimal digits. A mix of two writes fails the pattern.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/shm/lease_table_writer.h"

namespace fencekeeper::shm {
namespace {

namespace lt = lease_table;
namespace bip = boost::interprocess;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kRenewsPerLease = 8;

struct ReadCounts {
  uint64_t consistent = 0;
  uint64_t busy = 0;  // reads that found the writer in the slot every try
  uint64_t wrong = 0;
};

bool matchesAWrite(const lt::SlotView& v) {
  if (v.state == lt::SlotState::kFree) return v.generation == 0 && v.token == 0;
  if (v.token != v.generation * 1000) return false;
  if (v.nameView() != std::to_string(v.token)) return false;
  if (v.state == lt::SlotState::kHeld) {
    return v.validUntilNs >= v.token && v.validUntilNs - v.token < kRenewsPerLease;
  }
  return v.validUntilNs == 0 && (v.state == lt::SlotState::kLost ||
                                 v.state == lt::SlotState::kReleased);
}

ReadCounts readFor(const lt::Slot& slot, std::chrono::milliseconds duration) {
  ReadCounts counts;
  auto end = Clock::now() + duration;
  while (Clock::now() < end) {
    for (int i = 0; i < 1000; ++i) {
      auto v = lt::readConsistent(slot, /*withName=*/true, 64);
      if (!v) {
        ++counts.busy;
      } else if (matchesAWrite(*v)) {
        ++counts.consistent;
      } else {
        ++counts.wrong;
      }
    }
  }
  return counts;
}

// Cycles lease after lease through slot 0 until `stop`.
uint64_t writeUntil(LeaseTableWriter& table, const std::function<bool()>& stop) {
  uint64_t lease = 0;
  while (!stop()) {
    ++lease;
    uint64_t generation = lt::load(table.slot(0).generation) + 1;
    uint64_t token = generation * 1000;
    auto place = table.hold(lease, token, TimePoint(token), std::to_string(token));
    if (!place || place->slot != 0) return 0;
    for (uint64_t r = 1; r < kRenewsPerLease; ++r) table.renew(lease, TimePoint(token + r));
    table.end(lease, lease % 2 ? lt::SlotState::kLost : lt::SlotState::kReleased);
  }
  return lease;
}

class LeaseTableStress : public ::testing::Test {
 protected:
  LeaseTableStress() {
    char tmpl[] = "/tmp/fk-lease-stress-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/t.leases";
  }
  ~LeaseTableStress() override { std::filesystem::remove_all(dir); }
  std::string dir;
  std::string path;
};

TEST_F(LeaseTableStress, ReadersInOtherProcessesNeverSeeATornSlot) {
  LeaseTableWriter table(path, 1, 7);
  constexpr int kReaders = 2;
  std::vector<pid_t> readers;
  std::vector<int> results;
  for (int i = 0; i < kReaders; ++i) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // the reader: its own read-only mapping, as a client maps the table
      close(fds[0]);
      bip::file_mapping file(path.c_str(), bip::read_only);
      bip::mapped_region region(file, bip::read_only, 0, lt::fileBytesFor(1));
      auto* slot = reinterpret_cast<const lt::Slot*>(static_cast<const char*>(region.get_address()) +
                                                     lt::kHeaderBytes);
      ReadCounts counts = readFor(*slot, std::chrono::milliseconds(1500));
      bool sent = write(fds[1], &counts, sizeof counts) == sizeof counts;
      _exit(sent ? 0 : 1);
    }
    close(fds[1]);
    readers.push_back(pid);
    results.push_back(fds[0]);
  }
  std::atomic<int> running{kReaders};
  uint64_t leases = writeUntil(table, [&] {
    for (pid_t& pid : readers) {
      int status = 0;
      if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        pid = 0;
        --running;
      }
    }
    return running == 0;
  });
  EXPECT_GT(leases, 1000u);
  for (int fd : results) {
    ReadCounts counts;
    ASSERT_EQ(read(fd, &counts, sizeof counts), static_cast<ssize_t>(sizeof counts));
    close(fd);
    EXPECT_EQ(counts.wrong, 0u);
    EXPECT_GT(counts.consistent, 10'000u);
    std::printf("reader: %llu consistent reads, %llu busy, %llu wrong; writer: %llu leases\n",
                static_cast<unsigned long long>(counts.consistent),
                static_cast<unsigned long long>(counts.busy),
                static_cast<unsigned long long>(counts.wrong),
                static_cast<unsigned long long>(leases));
  }
}

TEST_F(LeaseTableStress, ReaderThreadsNeverSeeATornSlot) {
  LeaseTableWriter table(path, 1, 7);
  std::atomic<bool> done{false};
  std::thread writer([&] { writeUntil(table, [&] { return done.load(); }); });
  std::vector<ReadCounts> counts(2);
  std::vector<std::thread> readers;
  for (auto& c : counts) {
    readers.emplace_back([&table, &c] { c = readFor(table.slot(0), std::chrono::milliseconds(500)); });
  }
  for (auto& r : readers) r.join();
  done = true;
  writer.join();
  for (auto& c : counts) {
    EXPECT_EQ(c.wrong, 0u);
    EXPECT_GT(c.consistent, 0u);
  }
}

}  // namespace
}  // namespace fencekeeper::shm
