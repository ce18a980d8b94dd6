// Fault test 8, "the checker": counter workers in several processes, on two sidecars, repeat
// acquire / read the counter from the fenced store / write it + 1 / release, while a fault loop
// freezes workers past their TTL and kills them at random. Afterwards the store's log must show
// that fencing held:
//  * for the lock, no accepted request carries a lower token than one accepted before it
//    (acceptance order is the store's `seq=`, counted under its lock; its log lines are written
//    after the lock is released, so their order alone is not the acceptance order);
//  * the counter equals the number of accepted increments: no increment lost, none doubled.
// And the faults must have mattered: stale tokens were refused (412), and work still got done.
//
// FK_CHECKER_SEED=N replays the fault schedule of a printed seed (process timing still varies).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "examples/fenced_store/fence_http.h"
#include "tests/support/child_process.h"
#include "tests/support/fenced_store_process.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

#ifndef COUNTER_WORKER_BIN
#error "COUNTER_WORKER_BIN must name the counter-worker binary"
#endif
#ifndef FENCED_STORE_BIN
#error "FENCED_STORE_BIN must name the fenced-store binary"
#endif

namespace fencekeeper::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kLock = "counter";
constexpr const char* kKey = "counter";
constexpr size_t kSidecars = 2;
constexpr size_t kWorkersPerSidecar = 2;
constexpr milliseconds kTtl{600};
constexpr milliseconds kWorkerDuration{15'000};
constexpr milliseconds kFaultLoop{12'000};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string tail(const std::string& text, size_t maxLines = 30) {
  auto all = lines(text);
  std::string out;
  for (size_t i = all.size() > maxLines ? all.size() - maxLines : 0; i < all.size(); ++i) {
    out += all[i] + "\n";
  }
  return out;
}

// One /objects/ request in the store's log (routes.cc):
//   [...] [info] PUT key=counter lock=counter token=123 -> 200 accepted seq=17
//   [...] [info] GET key=counter lock=counter token=120 -> 412 stale, highest 123
struct StoreEntry {
  size_t line = 0;  // position in the log
  std::string method, key, lock;
  uint64_t token = 0;
  int status = 0;
  std::optional<uint64_t> seq;  // set iff accepted
};

std::vector<StoreEntry> parseStoreLog(const std::string& text) {
  static const std::regex kLine(R"((GET|PUT) key=(\S+) lock=(\S+) token=(\d+) -> (\d+) (.*)$)");
  static const std::regex kAccepted(R"(^accepted seq=(\d+))");
  std::vector<StoreEntry> out;
  auto all = lines(text);
  for (size_t i = 0; i < all.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(all[i], m, kLine)) continue;
    StoreEntry e;
    e.line = i + 1;
    e.method = m[1];
    e.key = m[2];
    e.lock = m[3];
    e.token = std::stoull(m[4]);
    e.status = std::stoi(m[5]);
    std::string verdict = m[6];
    std::smatch a;
    if (std::regex_search(verdict, a, kAccepted)) e.seq = std::stoull(a[1]);
    out.push_back(e);
  }
  return out;
}

// One iteration line of a counter-worker (counter_worker.cc).
struct WorkerIteration {
  std::string worker;
  uint64_t token = 0;
  int get = 0;
  std::string put;  // "-" when not sent
};

std::vector<WorkerIteration> parseWorkerLog(const std::string& text) {
  static const std::regex kIter(R"(^(\S+) iter=\d+ token=(\d+)(?: read=\S+ get=(\d+) put=(\S+))?)");
  std::vector<WorkerIteration> out;
  for (const std::string& line : lines(text)) {
    std::smatch m;
    if (!std::regex_search(line, m, kIter)) continue;
    WorkerIteration it;
    it.worker = m[1];
    it.token = std::stoull(m[2]);
    if (m[3].matched) {
      it.get = std::stoi(m[3]);
      it.put = m[4];
    }
    out.push_back(it);
  }
  return out;
}

struct Worker {
  std::string name;
  size_t sidecar = 0;
  std::unique_ptr<ChildProcess> process;
  bool killed = false;
  std::optional<Clock::time_point> thawAt;  // frozen until then
};

class CheckerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* fixed = std::getenv("FK_CHECKER_SEED");
    seed_ = fixed ? std::strtoull(fixed, nullptr, 10) : std::random_device{}();
    std::printf("[checker] seed %llu (replay with FK_CHECKER_SEED=%llu)\n",
                static_cast<unsigned long long>(seed_), static_cast<unsigned long long>(seed_));
    std::fflush(stdout);
    random_.seed(seed_);
  }

  void TearDown() override {
    // Every worker stopped and reaped (the frozen ones are continued first), then the store.
    for (auto& w : workers_) {
      if (w.process) w.process->stop(milliseconds(2000));
    }
    if (store_) store_->stop(milliseconds(5000));
    if (HasFailure()) {
      std::fprintf(stderr, "---- fault journal (ms from the workers' start)\n");
      for (const std::string& entry : journal_) std::fprintf(stderr, "%s\n", entry.c_str());
      for (auto& w : workers_) {
        std::fprintf(stderr, "---- %s (pid %d, sidecar %zu, %s) last lines:\n%s", w.name.c_str(),
                     static_cast<int>(w.process->pid()), w.sidecar, w.killed ? "killed" : "ran out",
                     tail(w.process->log(), 5).c_str());
      }
      if (store_) {
        std::fprintf(stderr, "---- fenced-store log: %s\n", store_->logPath().c_str());
      }
    }
  }

  void startStore() {
    storeProcess_ = std::make_unique<FencedStoreProcess>(FENCED_STORE_BIN, cluster_.dir());
    store_ = &storeProcess_->process();
    port_ = storeProcess_->port();
  }

  // Starts a worker on `sidecar` that runs until the common end of the run (at least 1 s).
  void startWorker(size_t sidecar) {
    Worker w;
    w.name = "w" + std::to_string(workers_.size());
    w.sidecar = sidecar;
    auto left = std::chrono::duration_cast<milliseconds>(runEnd_ - Clock::now());
    left = std::max(left, milliseconds(1000));
    w.process = std::make_unique<ChildProcess>(
        std::vector<std::string>{COUNTER_WORKER_BIN, "--socket", cluster_.socket(sidecar),
                                 "--store-port", std::to_string(port_), "--lock", kLock, "--key",
                                 kKey, "--ttl", std::to_string(kTtl.count()) + "ms", "--wait", "5s",
                                 "--duration", std::to_string(left.count()) + "ms", "--name",
                                 w.name, "--seed", std::to_string(random_())},
        cluster_.newLogPath("counter-" + w.name), std::vector<std::string>{}, true);
    note("start " + w.name + " pid " + std::to_string(w.process->pid()) + " on sidecar " +
         std::to_string(sidecar));
    workers_.push_back(std::move(w));
  }

  void note(const std::string& what) {
    journal_.push_back(std::to_string(msSince(runStart_)) + " " + what);
  }

  int randomIn(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }

  uint64_t seed_ = 0;
  std::mt19937_64 random_;
  SidecarCluster cluster_;
  std::unique_ptr<FencedStoreProcess> storeProcess_;
  ChildProcess* store_ = nullptr;
  int port_ = 0;
  Clock::time_point runStart_, runEnd_;  // of the workers: every one ends at runEnd_
  std::vector<Worker> workers_;  // every worker ever started; the killed ones stay for their logs
  std::vector<std::string> journal_;  // what the fault loop did, printed on failure
};

TEST_F(CheckerTest, FencingKeepsTheCounterExactUnderFreezesAndKills) {
  auto testStart = Clock::now();
  SidecarOptions sidecar;
  sidecar.sessionTimeout = "2s";
  for (size_t i = 0; i < kSidecars; ++i) cluster_.startSidecar(sidecar);
  ASSERT_NO_FATAL_FAILURE(startStore());

  runStart_ = Clock::now();
  runEnd_ = runStart_ + kWorkerDuration;
  for (size_t s = 0; s < kSidecars; ++s) {
    for (size_t k = 0; k < kWorkersPerSidecar; ++k) startWorker(s);
  }

  auto observer = cluster_.connect(0);
  // The fault loop. Pacing sleeps only: what is checked comes from the logs afterwards.
  int freezes = 0, kills = 0;
  std::vector<std::string> earlyExits;
  auto thawDue = [&](bool all) {
    for (auto& w : workers_) {
      if (w.thawAt && (all || Clock::now() >= *w.thawAt)) {
        w.process->signal(SIGCONT);
        w.thawAt.reset();
        note("continue " + w.name);
      }
    }
  };
  while (Clock::now() - runStart_ < kFaultLoop) {
    std::this_thread::sleep_for(milliseconds(randomIn(200, 400)));
    thawDue(false);
    std::vector<size_t> candidates;
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      if (w.killed || w.thawAt) continue;
      if (!w.process->running()) {
        earlyExits.push_back(w.name + " exited with " +
                             std::to_string(w.process->wait(milliseconds(0))) +
                             " before the end of its run");
        note(earlyExits.back());
        w.killed = true;  // not picked again, not expected to exit 0 at the end
        startWorker(w.sidecar);
        continue;
      }
      candidates.push_back(i);
    }
    if (candidates.empty()) continue;
    size_t pick = candidates[randomIn(0, static_cast<int>(candidates.size()) - 1)];
    bool freeze = randomIn(0, 1) == 0;
    // Until the store has refused a stale token, every freeze (later, half of them) aims at
    // whoever holds the lock now: most workers spend their time queued, where a pause harms
    // nobody; the holder is likely between its read and its write.
    bool staleSeen = store_->log().find("-> 412") != std::string::npos;
    // Nor, until then, a second freeze while one lasts: it can stall the frozen holder's
    // successor too, and the holder's late write then finds no newer token at the store (seen
    // under ASan: 20 freezes, no refusal).
    bool anyFrozen = std::any_of(workers_.begin(), workers_.end(),
                                 [](const Worker& w) { return w.thawAt.has_value(); });
    if (freeze && !staleSeen && anyFrozen) continue;
    if (freeze && (!staleSeen || randomIn(0, 1) == 0)) {
      HolderInfo info;
      if (observer->holder(kLock, &info).ok() && info.held) {
        for (size_t i : candidates) {
          if (workers_[i].name == info.ownerLabel) pick = i;
        }
      }
    }
    Worker& victim = workers_[pick];
    if (freeze) {
      int frozenMs = randomIn(800, 1500);  // longer than its TTL: someone else takes over
      victim.process->signal(SIGSTOP);
      victim.thawAt = Clock::now() + milliseconds(frozenMs);
      note("freeze " + victim.name + " for " + std::to_string(frozenMs) + " ms");
      ++freezes;
    } else {
      victim.process->signal(SIGKILL);
      note("kill " + victim.name);
      EXPECT_GE(victim.process->wait(milliseconds(5000)), 0) << victim.name << " not reaped";
      victim.killed = true;
      ++kills;
      startWorker(victim.sidecar);
    }
  }
  thawDue(true);

  // The survivors run out their duration (plus at most one acquire wait and two requests).
  bool allExited = waitUntil(
      [&] {
        return std::all_of(workers_.begin(), workers_.end(),
                           [](Worker& w) { return !w.process->running(); });
      },
      std::chrono::duration_cast<milliseconds>(runEnd_ - Clock::now()) + milliseconds(15'000));
  EXPECT_TRUE(allExited) << "workers still running long after their duration";
  for (auto& w : workers_) {
    if (!w.killed) {
      EXPECT_EQ(w.process->wait(milliseconds(0)), 0) << w.name << " exit status";
    }
  }
  EXPECT_TRUE(earlyExits.empty()) << earlyExits.front();

  // The final value, read with the highest token accepted so far; then the store stops (it
  // finishes the requests in progress first) and its log is complete.
  uint64_t highest = 0;
  for (const StoreEntry& e : parseStoreLog(store_->log())) {
    if (e.lock == kLock && e.seq) highest = std::max(highest, e.token);
  }
  ASSERT_GT(highest, 0u) << "no request was ever accepted";
  FenceReply finalRead = fencedRequest(port_, "GET", kKey, kLock, highest, "");
  ASSERT_EQ(finalRead.status, 200) << finalRead.body;
  ASSERT_EQ(store_->stop(milliseconds(10'000)), 0) << "fenced-store did not stop cleanly";
  std::vector<StoreEntry> entries = parseStoreLog(store_->log());

  // Acceptance order: seq numbers 1..N, each once (no accepted request missing from the log).
  std::vector<const StoreEntry*> accepted;
  int rejected = 0, rejectedReads = 0, rejectedWrites = 0, otherStatus = 0;
  for (const StoreEntry& e : entries) {
    if (e.lock != kLock) continue;
    if (e.seq) {
      accepted.push_back(&e);
    } else if (e.status == 412) {
      ++rejected;
      (e.method == "PUT" ? rejectedWrites : rejectedReads)++;
    } else {
      ++otherStatus;
    }
  }
  EXPECT_EQ(otherStatus, 0) << "requests that were neither accepted nor refused as stale";
  std::sort(accepted.begin(), accepted.end(),
            [](const StoreEntry* a, const StoreEntry* b) { return *a->seq < *b->seq; });
  for (size_t i = 0; i < accepted.size(); ++i) {
    ASSERT_EQ(*accepted[i]->seq, i + 1)
        << "accepted requests' seq must run 1..N (log line " << accepted[i]->line << ")";
  }
  size_t logOrderInversions = 0;
  for (size_t i = 1; i < accepted.size(); ++i) {
    if (accepted[i]->line < accepted[i - 1]->line) ++logOrderInversions;
  }

  // Fencing: in acceptance order, tokens never go down.
  uint64_t highestSoFar = 0;
  int tokenRegressions = 0;
  for (const StoreEntry* e : accepted) {
    if (e->token < highestSoFar) {
      if (++tokenRegressions <= 5) {
        ADD_FAILURE() << "seq " << *e->seq << " (log line " << e->line << "): " << e->method
                      << " with token " << e->token << " accepted after token " << highestSoFar;
      }
    }
    highestSoFar = std::max(highestSoFar, e->token);
  }
  EXPECT_EQ(tokenRegressions, 0);

  // The counter: the final read is the last accepted request, and it saw exactly the accepted
  // increments.
  ASSERT_FALSE(accepted.empty());
  const StoreEntry& last = *accepted.back();
  EXPECT_TRUE(last.method == "GET" && last.token == highest)
      << "the final read is not the last accepted request (log line " << last.line << ")";
  long long increments = std::count_if(accepted.begin(), accepted.end(), [&](const StoreEntry* e) {
    return e->method == "PUT" && e->key == kKey;
  });
  EXPECT_EQ(finalRead.body, std::to_string(increments))
      << "the counter differs from the number of accepted increments";

  // What the workers saw.
  std::vector<WorkerIteration> iterations;
  for (auto& w : workers_) {
    auto mine = parseWorkerLog(w.process->log());
    iterations.insert(iterations.end(), mine.begin(), mine.end());
  }
  std::map<uint64_t, std::string> grantedTo;
  int workerPutsAccepted = 0, noLease = 0;
  for (const WorkerIteration& it : iterations) {
    if (it.token == 0) {
      ++noLease;
      continue;
    }
    auto [where, fresh] = grantedTo.emplace(it.token, it.worker);
    EXPECT_TRUE(fresh) << "token " << it.token << " granted to both " << where->second << " and "
                       << it.worker;
    if (it.put == "200") ++workerPutsAccepted;
  }
  // Killed workers may not have printed what the store accepted from them; never the reverse.
  EXPECT_LE(workerPutsAccepted, increments);

  std::printf(
      "[checker] %zu workers started (%zu sidecars); %lld ms in all\n"
      "[checker] faults injected: %d (%d freezes, %d kills)\n"
      "[checker] iterations reported by workers: %zu (%d without a lease)\n"
      "[checker] store: %zu accepted requests, %lld accepted increments, counter %s, "
      "highest token %llu\n"
      "[checker] store: %d rejected as stale (412): %d reads, %d writes\n"
      "[checker] accepted log lines out of acceptance order: %zu\n",
      workers_.size(), kSidecars, msSince(testStart), freezes + kills, freezes, kills,
      iterations.size(), noLease, accepted.size(), increments, finalRead.body.c_str(),
      static_cast<unsigned long long>(highest), rejected, rejectedReads, rejectedWrites,
      logOrderInversions);
  std::fflush(stdout);

  EXPECT_GE(rejected, 1) << "the faults never made the store refuse a stale token";
  EXPECT_GE(increments, 20) << "too little progress under faults";
}

}  // namespace
}  // namespace fencekeeper::testing
