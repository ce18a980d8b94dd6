// The shared-memory lease table's writer against a file in a temp dir: slot contents through a
// lease's life, generations, reuse, a restart over an old file, the file's size and mode, and
// the files it refuses to use.
#include "sidecar/shm/lease_table_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fencekeeper::shm {
namespace {

namespace lt = lease_table;
using std::chrono::seconds;

lt::SlotView read(const LeaseTableWriter& table, uint32_t slot) {
  auto v = lt::readConsistent(table.slot(slot), /*withName=*/true);
  EXPECT_TRUE(v);
  return v.value_or(lt::SlotView{});
}

off_t sizeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0);
  return st.st_size;
}

class LeaseTableWriterTest : public ::testing::Test {
 protected:
  LeaseTableWriterTest() {
    char tmpl[] = "/tmp/fk-lease-table-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/fk.sock.leases";
  }
  ~LeaseTableWriterTest() override { std::filesystem::remove_all(dir); }
  std::string dir;
  std::string path;
};

TEST_F(LeaseTableWriterTest, AHeldLeasesSlotCarriesItsTokenDeadlineAndName) {
  LeaseTableWriter table(path, 4, 0xabcdef);
  EXPECT_EQ(lt::load(table.header().magic), lt::kMagic);
  EXPECT_EQ(lt::load(table.header().format), lt::kFormat);
  EXPECT_EQ(lt::load(table.header().instance), 0xabcdefu);
  EXPECT_EQ(lt::load(table.header().capacity), 4u);
  EXPECT_EQ(lt::load(table.header().writerPid), static_cast<uint64_t>(getpid()));
  EXPECT_EQ(sizeOf(path), static_cast<off_t>(lt::fileBytesFor(4)));

  auto place = table.hold(7, 0x100000005, TimePoint(seconds(50)), "jobs/nightly");
  ASSERT_TRUE(place);
  EXPECT_EQ(place->generation, 1u);
  EXPECT_EQ(table.placeOf(7)->slot, place->slot);
  auto v = read(table, place->slot);
  EXPECT_EQ(v.state, lt::SlotState::kHeld);
  EXPECT_EQ(v.token, 0x100000005u);
  EXPECT_EQ(v.validUntilNs, 50'000'000'000u);
  EXPECT_EQ(v.nameView(), "jobs/nightly");
  EXPECT_EQ(lt::validForNs(v, 1, 0x100000005, UINT64_MAX, 49'000'000'000), 1'000'000'000u);

  table.renew(7, TimePoint(seconds(80)));
  EXPECT_EQ(read(table, place->slot).validUntilNs, 80'000'000'000u);
  table.end(7, lt::SlotState::kReleased);
  v = read(table, place->slot);
  EXPECT_EQ(v.state, lt::SlotState::kReleased);
  EXPECT_EQ(v.generation, 1u);
  EXPECT_EQ(lt::validForNs(v, 1, 0x100000005, UINT64_MAX, 0), 0u);
  EXPECT_FALSE(table.placeOf(7));
  table.renew(7, TimePoint(seconds(90)));  // an ended lease has no slot: nothing changes
  EXPECT_EQ(read(table, place->slot).state, lt::SlotState::kReleased);

  auto lost = table.hold(8, 9, TimePoint(seconds(50)), "other");
  table.end(8, lt::SlotState::kLost);
  EXPECT_EQ(read(table, lost->slot).state, lt::SlotState::kLost);
}

TEST_F(LeaseTableWriterTest, EveryReuseOfASlotBumpsItsGenerationAndAFullTableGivesNone) {
  LeaseTableWriter table(path, 2, 1);
  auto a = table.hold(1, 10, TimePoint(seconds(5)), "a");
  auto b = table.hold(2, 20, TimePoint(seconds(5)), "b");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->slot, b->slot);
  EXPECT_FALSE(table.hold(3, 30, TimePoint(seconds(5)), "c")) << "beyond the capacity: no slot";
  table.end(1, lt::SlotState::kReleased);
  auto c = table.hold(3, 30, TimePoint(seconds(5)), "c");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->slot, a->slot);
  EXPECT_EQ(c->generation, a->generation + 1);
  auto v = read(table, c->slot);
  // The old holder's (generation, token) no longer matches, even were the token the same.
  EXPECT_EQ(lt::validForNs(v, a->generation, 30, UINT64_MAX, 0), 0u);
  EXPECT_GT(lt::validForNs(v, c->generation, 30, UINT64_MAX, 0), 0u);
}

TEST_F(LeaseTableWriterTest, ARestartOverAnOldFileWritesANewInstanceAndFreesEverySlot) {
  uint64_t oldGeneration = 0;
  {
    LeaseTableWriter first(path, 3, 111);
    first.setSession(lt::SessionState::kVouched, TimePoint(seconds(100)));
    oldGeneration = first.hold(1, 10, TimePoint(seconds(100)), "a")->generation;
    first.hold(2, 20, TimePoint(seconds(100)), "b");
  }  // (a crashed sidecar leaves the same file, less the safeUntil its destructor clears)
  LeaseTableWriter second(path, 3, 222);
  EXPECT_EQ(lt::load(second.header().instance), 222u);
  EXPECT_EQ(lt::load(second.header().safeUntilNs), 0u);
  EXPECT_EQ(lt::load(second.header().magic), lt::kMagic);
  for (uint32_t i = 0; i < 3; ++i) {
    auto v = read(second, i);
    EXPECT_EQ(v.state, lt::SlotState::kFree) << i;
    EXPECT_EQ(v.token, 0u);
    EXPECT_EQ(v.nameLength, 0u);
  }
  EXPECT_EQ(read(second, 0).generation, oldGeneration + 1);
  // A slot given out again never repeats a generation of the old instance either.
  EXPECT_EQ(second.hold(5, 50, TimePoint(seconds(1)), "c")->generation, oldGeneration + 2);
}

TEST_F(LeaseTableWriterTest, TheFileNeverShrinksAndALargerOneKeepsItsSlots) {
  { LeaseTableWriter big(path, 100, 1); }
  LeaseTableWriter small(path, 10, 2);
  EXPECT_EQ(sizeOf(path), static_cast<off_t>(lt::fileBytesFor(100)));
  EXPECT_EQ(small.capacity(), 100u);
  EXPECT_EQ(lt::load(small.header().capacity), 100u);
}

TEST_F(LeaseTableWriterTest, TheFileIsMode0640WhateverItWasAndTheUmask) {
  { std::ofstream(path) << ""; }
  ASSERT_EQ(chmod(path.c_str(), 0666), 0);
  LeaseTableWriter table(path, 1, 1);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(LeaseTableWriterTest, RefusesASymlinkAHardLinkAndANonRegularFile) {
  std::string target = dir + "/elsewhere";
  { std::ofstream(target) << ""; }
  ASSERT_EQ(symlink(target.c_str(), path.c_str()), 0);
  EXPECT_THROW(LeaseTableWriter(path, 1, 1), std::runtime_error);
  EXPECT_EQ(sizeOf(target), 0) << "the symlink's target is untouched";
  ASSERT_EQ(unlink(path.c_str()), 0);

  ASSERT_EQ(link(target.c_str(), path.c_str()), 0);
  EXPECT_THROW(LeaseTableWriter(path, 1, 1), std::runtime_error);
  ASSERT_EQ(unlink(path.c_str()), 0);

  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  EXPECT_THROW(LeaseTableWriter(path, 1, 1), std::runtime_error);
}

TEST_F(LeaseTableWriterTest, RefusesADirectoryOthersMayWrite) {
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  try {
    LeaseTableWriter table(path, 1, 1);
    FAIL() << "opened a table in a 0777 directory";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("writable by others"), std::string::npos) << e.what();
  }
}

TEST_F(LeaseTableWriterTest, RefusesAFileOfAnotherUid) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a file of another uid";
  { std::ofstream(path) << ""; }
  ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
  EXPECT_THROW(LeaseTableWriter(path, 1, 1), std::runtime_error);
}

TEST_F(LeaseTableWriterTest, StoppingVouchesForNothing) {
  {
    LeaseTableWriter table(path, 1, 1);
    table.setSession(lt::SessionState::kVouched, TimePoint(seconds(100)));
    EXPECT_EQ(lt::load(table.header().safeUntilNs), 100'000'000'000u);
  }
  lt::Header left{};
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&left), sizeof left);
  EXPECT_EQ(left.magic, lt::kMagic);
  EXPECT_EQ(left.safeUntilNs, 0u);
}

}  // namespace
}  // namespace fencekeeper::shm
