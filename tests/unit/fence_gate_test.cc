#include "examples/fenced_store/fence_gate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace fencekeeper {
namespace {

TEST(FenceGate, AcceptsEqualAndHigher) {
  FenceGate gate;
  EXPECT_EQ(gate.highest("jobs"), 0u);
  EXPECT_EQ(gate.admit("jobs", 5), FenceVerdict::kAccepted);
  EXPECT_EQ(gate.admit("jobs", 5), FenceVerdict::kAccepted);
  EXPECT_EQ(gate.highest("jobs"), 5u);
  EXPECT_EQ(gate.admit("jobs", 7), FenceVerdict::kAccepted);
  EXPECT_EQ(gate.highest("jobs"), 7u);
}

TEST(FenceGate, RefusesLowerAndKeepsHighest) {
  FenceGate gate;
  ASSERT_EQ(gate.admit("jobs", 7), FenceVerdict::kAccepted);
  EXPECT_EQ(gate.admit("jobs", 6), FenceVerdict::kStale);
  EXPECT_EQ(gate.admit("jobs", 0), FenceVerdict::kStale);
  EXPECT_EQ(gate.highest("jobs"), 7u);
  EXPECT_EQ(gate.admit("jobs", 7), FenceVerdict::kAccepted);
}

TEST(FenceGate, LocksAreIndependent) {
  FenceGate gate;
  ASSERT_EQ(gate.admit("a", 100), FenceVerdict::kAccepted);
  EXPECT_EQ(gate.admit("b", 5), FenceVerdict::kAccepted);
  EXPECT_EQ(gate.admit("a", 50), FenceVerdict::kStale);
  EXPECT_EQ(gate.admit("b", 6), FenceVerdict::kAccepted);
  EXPECT_EQ(gate.highest("a"), 100u);
  EXPECT_EQ(gate.highest("b"), 6u);
  // Looked up by content, not by the caller's buffer.
  std::string_view prefix = std::string_view("ab").substr(0, 1);
  EXPECT_EQ(gate.highest(prefix), 100u);
}

TEST(FenceGate, ResetForgetsOneLock) {
  FenceGate gate;
  ASSERT_EQ(gate.admit("a", 100), FenceVerdict::kAccepted);
  ASSERT_EQ(gate.admit("b", 9), FenceVerdict::kAccepted);
  gate.reset("a");
  gate.reset("never-seen");
  EXPECT_EQ(gate.highest("a"), 0u);
  EXPECT_EQ(gate.admit("a", 3), FenceVerdict::kAccepted);
  EXPECT_EQ(gate.admit("b", 8), FenceVerdict::kStale);
}

TEST(FenceGate, SnapshotAndRestore) {
  FenceGate gate;
  ASSERT_EQ(gate.admit("a", 10), FenceVerdict::kAccepted);
  ASSERT_EQ(gate.admit("b", 20), FenceVerdict::kAccepted);
  FenceGate::Fences saved = gate.snapshot();
  EXPECT_EQ(saved, (FenceGate::Fences{{"a", 10}, {"b", 20}}));

  FenceGate reloaded;
  ASSERT_EQ(reloaded.admit("c", 1), FenceVerdict::kAccepted);
  reloaded.restore(saved);
  EXPECT_EQ(reloaded.admit("a", 9), FenceVerdict::kStale);
  EXPECT_EQ(reloaded.admit("b", 20), FenceVerdict::kAccepted);
  EXPECT_EQ(reloaded.highest("c"), 0u) << "restore replaces, it does not merge";
}

// One admit() as the threads saw it. `start` and `end` come from one shared atomic counter read
// just before and just after the call, so they place every call in a single real-time order
// without reaching into the gate: if one call's `end` is below another's `start`, the first
// finished before the second began, and the gate must have ordered them that way too.
struct Call {
  uint64_t start;
  uint64_t end;
  uint64_t token;
  FenceVerdict verdict;
};

// The running maximum of the calls' tokens, in the order given.
std::vector<uint64_t> runningMax(const std::vector<Call>& calls) {
  std::vector<uint64_t> max;
  for (const Call& call : calls) max.push_back(std::max(max.empty() ? 0 : max.back(), call.token));
  return max;
}

TEST(FenceGate, ConcurrentAdmitsNeverAcceptBelowAnAcceptedToken) {
  constexpr int kThreads = 8;
  constexpr int kCallsPerThread = 20'000;
  FenceGate gate;
  std::atomic<uint64_t> clock{0};
  // Tokens roughly rise across all threads but overlap between them, so both verdicts occur.
  std::atomic<uint64_t> base{1'000};
  std::vector<std::vector<Call>> perThread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(t);
      std::uniform_int_distribution<uint64_t> jitter(0, 64);
      for (int i = 0; i < kCallsPerThread; ++i) {
        uint64_t token = base.fetch_add(1) - 32 + jitter(random);
        uint64_t start = clock.fetch_add(1);
        FenceVerdict verdict = gate.admit("contended", token);
        uint64_t end = clock.fetch_add(1);
        perThread[t].push_back({start, end, token, verdict});
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  std::vector<Call> accepted, stale;
  for (const auto& calls : perThread) {
    for (const Call& call : calls) {
      (call.verdict == FenceVerdict::kAccepted ? accepted : stale).push_back(call);
    }
  }
  ASSERT_FALSE(accepted.empty());
  ASSERT_FALSE(stale.empty()) << "the workload should produce refusals too";

  // An accepted token is never below one whose acceptance completed before its call began.
  std::vector<Call> byEnd = accepted;
  std::sort(byEnd.begin(), byEnd.end(), [](auto& a, auto& b) { return a.end < b.end; });
  std::vector<uint64_t> maxByEnd = runningMax(byEnd);
  for (const Call& call : accepted) {
    auto before = std::partition_point(byEnd.begin(), byEnd.end(),
                                       [&](const Call& c) { return c.end < call.start; });
    if (before == byEnd.begin()) continue;
    ASSERT_LE(maxByEnd[before - byEnd.begin() - 1], call.token)
        << "token " << call.token << " accepted after a higher one had been";
  }

  // Every refusal is explained by a higher token whose acceptance had begun before it returned.
  std::vector<Call> byStart = accepted;
  std::sort(byStart.begin(), byStart.end(), [](auto& a, auto& b) { return a.start < b.start; });
  std::vector<uint64_t> maxByStart = runningMax(byStart);
  for (const Call& call : stale) {
    auto begun = std::partition_point(byStart.begin(), byStart.end(),
                                      [&](const Call& c) { return c.start < call.end; });
    ASSERT_NE(begun, byStart.begin());
    ASSERT_GT(maxByStart[begun - byStart.begin() - 1], call.token)
        << "token " << call.token << " refused with no higher token accepted";
  }

  EXPECT_EQ(gate.highest("contended"), maxByEnd.back());
}

}  // namespace
}  // namespace fencekeeper
