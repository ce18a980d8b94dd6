// The client's reader of the shared-memory lease table against tables the sidecar's writer makes
// in a temp dir: a held lease's validity, its end, a restart's new instance, and the files a
// client must refuse (truncated, garbage, writable by others, of another uid, a symlink).
#include "client_lib/src/lease_table_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sidecar/shm/lease_table_writer.h"

namespace fencekeeper::internal {
namespace {

namespace lt = lease_table;
using std::chrono::seconds;

uint64_t bootNs() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

TimePoint inSeconds(int s) { return TimePoint(std::chrono::nanoseconds(bootNs()) + seconds(s)); }

class LeaseTableReaderTest : public ::testing::Test {
 protected:
  LeaseTableReaderTest() {
    char tmpl[] = "/tmp/fk-lt-reader-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/fk.sock.leases";
  }
  ~LeaseTableReaderTest() override { std::filesystem::remove_all(dir); }

  std::unique_ptr<LeaseTableReader> open(uint64_t instance, std::string* why) {
    return LeaseTableReader::open(path, instance, geteuid(), why);
  }
  // Opens a table that must be refused, and returns why.
  std::string refusal(uint64_t instance = 7, uid_t owner = geteuid()) {
    std::string why;
    EXPECT_EQ(LeaseTableReader::open(path, instance, owner, &why), nullptr);
    return why;
  }

  std::string dir;
  std::string path;
};

TEST_F(LeaseTableReaderTest, AHeldLeaseIsValidUntilItsDeadlineOrTheSessionsAndNotOnceItEnds) {
  shm::LeaseTableWriter writer(path, 4, 7);
  writer.setSession(lt::SessionState::kVouched, inSeconds(20));
  auto place = writer.hold(1, 0x100000005, inSeconds(10), "jobs/nightly");
  ASSERT_TRUE(place);
  std::string why;
  auto reader = open(7, &why);
  ASSERT_NE(reader, nullptr) << why;
  EXPECT_EQ(reader->capacity(), 4u);

  uint64_t now = bootNs();
  uint64_t valid = reader->validForNs(place->slot, place->generation, 0x100000005, now);
  EXPECT_GT(valid, 9'000'000'000u);
  EXPECT_LE(valid, 10'000'000'000u);
  EXPECT_TRUE(reader->anyValid("jobs/nightly", 0x100000005, now));
  // Another token, another generation, a slot out of range: not this lease.
  EXPECT_EQ(reader->validForNs(place->slot, place->generation, 0x100000004, now), 0u);
  EXPECT_EQ(reader->validForNs(place->slot, place->generation + 1, 0x100000005, now), 0u);
  EXPECT_EQ(reader->validForNs(99, place->generation, 0x100000005, now), 0u);
  EXPECT_FALSE(reader->anyValid("jobs/nightl", 0x100000005, now));
  // Past the deadline.
  EXPECT_EQ(reader->validForNs(place->slot, place->generation, 0x100000005, now + 11'000'000'000),
            0u);

  // The session's vouching bounds it: a lapse (safeUntil 0) ends every lease at once.
  writer.setSession(lt::SessionState::kVouched, inSeconds(3));
  EXPECT_LE(reader->validForNs(place->slot, place->generation, 0x100000005, bootNs()),
            3'000'000'000u);
  writer.setSession(lt::SessionState::kUncertain, TimePoint{});
  EXPECT_EQ(reader->validForNs(place->slot, place->generation, 0x100000005, bootNs()), 0u);
  writer.setSession(lt::SessionState::kVouched, inSeconds(20));
  EXPECT_GT(reader->validForNs(place->slot, place->generation, 0x100000005, bootNs()), 0u);

  writer.end(1, lt::SlotState::kLost);
  EXPECT_EQ(reader->validForNs(place->slot, place->generation, 0x100000005, bootNs()), 0u);
  EXPECT_FALSE(reader->anyValid("jobs/nightly", 0x100000005, bootNs()));
}

TEST_F(LeaseTableReaderTest, ASlotReusedByAnotherLeaseIsNotTheOldOnes) {
  shm::LeaseTableWriter writer(path, 1, 7);
  writer.setSession(lt::SessionState::kVouched, inSeconds(20));
  auto first = writer.hold(1, 10, inSeconds(10), "a");
  std::string why;
  auto reader = open(7, &why);
  ASSERT_NE(reader, nullptr) << why;
  writer.end(1, lt::SlotState::kReleased);
  auto second = writer.hold(2, 10, inSeconds(10), "a");  // same slot, same token even
  ASSERT_TRUE(first && second);
  ASSERT_EQ(first->slot, second->slot);
  EXPECT_EQ(reader->validForNs(first->slot, first->generation, 10, bootNs()), 0u);
  EXPECT_GT(reader->validForNs(second->slot, second->generation, 10, bootNs()), 0u);
}

TEST_F(LeaseTableReaderTest, ARestartedSidecarsTableInvalidatesTheOldInstancesLeases) {
  auto writer = std::make_unique<shm::LeaseTableWriter>(path, 4, 7);
  writer->setSession(lt::SessionState::kVouched, inSeconds(20));
  auto place = writer->hold(1, 10, inSeconds(10), "a");
  std::string why;
  auto reader = open(7, &why);
  ASSERT_NE(reader, nullptr) << why;
  ASSERT_GT(reader->validForNs(place->slot, place->generation, 10, bootNs()), 0u);
  writer.reset();  // a stopped sidecar vouches for nothing
  EXPECT_EQ(reader->validForNs(place->slot, place->generation, 10, bootNs()), 0u);

  shm::LeaseTableWriter restarted(path, 4, 8);
  restarted.setSession(lt::SessionState::kVouched, inSeconds(20));
  // Even a slot that happens to read Held with the same generation and token again.
  auto again = restarted.hold(1, 10, inSeconds(10), "a");
  ASSERT_TRUE(again);
  EXPECT_EQ(reader->validForNs(again->slot, again->generation, 10, bootNs()), 0u);
  EXPECT_NE(refusal(7).find("another sidecar instance"), std::string::npos);
}

TEST_F(LeaseTableReaderTest, RefusesATruncatedTable) {
  { shm::LeaseTableWriter writer(path, 16, 7); }
  ASSERT_EQ(truncate(path.c_str(), lt::fileBytesFor(15)), 0);
  EXPECT_NE(refusal().find("truncated"), std::string::npos) << refusal();
  ASSERT_EQ(truncate(path.c_str(), 100), 0);
  EXPECT_NE(refusal().find("shorter than its header"), std::string::npos) << refusal();
}

TEST_F(LeaseTableReaderTest, RefusesGarbageAndAnotherLayout) {
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 4096; ++i) out.put(static_cast<char>((i * 131 + 7) & 0xff));
  }
  chmod(path.c_str(), 0644);
  EXPECT_NE(refusal().find("wrong magic"), std::string::npos) << refusal();

  { shm::LeaseTableWriter writer(path, 4, 7); }
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  uint64_t otherFormat = lt::kFormat + 1;
  ASSERT_EQ(pwrite(fd, &otherFormat, sizeof otherFormat, offsetof(lt::Header, format)),
            static_cast<ssize_t>(sizeof otherFormat));
  close(fd);
  EXPECT_NE(refusal().find("layout"), std::string::npos) << refusal();
}

TEST_F(LeaseTableReaderTest, RefusesATableOthersMayWriteOrAnotherUidOwns) {
  { shm::LeaseTableWriter writer(path, 4, 7); }
  ASSERT_EQ(chmod(path.c_str(), 0666), 0);
  EXPECT_NE(refusal().find("writable by others"), std::string::npos) << refusal();
  ASSERT_EQ(chmod(path.c_str(), 0664), 0);
  EXPECT_NE(refusal().find("writable by others"), std::string::npos) << refusal();
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  // The sidecar runs as another uid than the file's owner: someone else wrote it.
  EXPECT_NE(refusal(7, geteuid() + 1).find("not the sidecar's uid"), std::string::npos);
  std::string why;
  EXPECT_NE(open(7, &why), nullptr) << why;
}

TEST_F(LeaseTableReaderTest, RefusesASymlinkAndAMissingFile) {
  EXPECT_NE(refusal().find("cannot open"), std::string::npos) << refusal();
  { shm::LeaseTableWriter writer(dir + "/real", 4, 7); }
  ASSERT_EQ(symlink((dir + "/real").c_str(), path.c_str()), 0);
  EXPECT_NE(refusal().find("cannot open"), std::string::npos) << refusal();
}

}  // namespace
}  // namespace fencekeeper::internal
