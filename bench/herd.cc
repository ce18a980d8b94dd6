#include "bench/herd.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <regex>
#include <thread>
#include <vector>

#include "bench/zk_sync.h"
#include "tests/support/wait.h"

namespace fencekeeper::bench {
namespace {

using std::chrono::milliseconds;

constexpr size_t kWaiters = 200;
constexpr size_t kSidecars = 4;
const char* const kLock = "bench-herd";

// "Total watches:K" from `wchs`; -1 when the server did not answer.
long long totalWatches(int port) {
  std::smatch m;
  std::string text = zkFourLetter(port, "wchs");
  static const std::regex total("Total watches:\\s*(\\d+)");
  return std::regex_search(text, m, total) ? std::stoll(m[1]) : -1;
}

// Watchers the server notified since `before`, by event type (mntr's zk_sum_node_*_watch_count:
// how many watchers each created/deleted/changed/children event fired, summed).
struct WatchFires {
  long long created = 0, deleted = 0, changed = 0, children = 0;
  long long total() const { return created + deleted + changed + children; }
};
WatchFires watchFires(const std::map<std::string, long long>& a,
                      const std::map<std::string, long long>& b) {
  auto d = [&](const char* key) {
    auto i = a.find(key), j = b.find(key);
    return (i == a.end() || j == b.end()) ? 0 : j->second - i->second;
  };
  return {d("zk_sum_node_created_watch_count"), d("zk_sum_node_deleted_watch_count"),
          d("zk_sum_node_changed_watch_count"), d("zk_sum_node_children_watch_count")};
}

// Single writes (create, delete) with the C client: the hand-over's yardstick.
void writeLatencies(ZkSync& zk, const std::string& parent, int pairs, const Cap& cap,
                    Samples& creates, Samples& deletes) {
  for (int i = 0; i < pairs && !cap.over(); ++i) {
    std::string path;
    auto t0 = Clock::now();
    bool created = zk.createSeq(parent + "/w-", &path);
    auto t1 = Clock::now();
    bool removed = created && zk.remove(path);
    auto t2 = Clock::now();
    created ? creates.add(nsBetween(t0, t1)) : void(++creates.failures);
    removed ? deletes.add(nsBetween(t1, t2)) : void(++deletes.failures);
  }
}

struct Round {
  std::vector<double> handovers;  // ns, release() called -> the next waiter's acquire() returned
  int failures = 0;
  long long watchesSet = -1;  // `wchs` with every waiter queued
  WatchFires fires;
};

Round herdRound(testing::SidecarCluster& cluster, std::vector<std::unique_ptr<Client>>& clients,
                const Cap& cap) {
  Round out;
  const int port = cluster.zk().clientPort(0);
  Status s;
  auto holder = clients[0]->acquire(kLock, leaseOptions(milliseconds(5000)), &s);
  if (!holder) {
    ++out.failures;
    return out;
  }
  std::vector<Clock::time_point> granted(kWaiters), released(kWaiters);
  std::vector<char> ok(kWaiters, 0);
  std::vector<std::thread> waiters;
  for (size_t i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      Status st;
      auto lease = clients[i % kSidecars]->acquire(kLock, leaseOptions(milliseconds(30000)), &st);
      granted[i] = Clock::now();
      if (!lease) return;
      released[i] = Clock::now();
      ok[i] = lease->release().ok();
    });
  }
  HolderInfo info;
  bool queued = testing::waitUntil(
      [&] { return clients[0]->holder(kLock, &info).ok() && info.waiters >= kWaiters; },
      milliseconds(20000));
  // Each waiter's sidecar sets its watch on the predecessor after listing the queue: wait until
  // the server's count of watches stops growing.
  long long last = -2;
  testing::waitUntil(
      [&] {
        long long now = totalWatches(port);
        bool stable = now == last && now >= static_cast<long long>(kWaiters);
        last = now;
        return stable;
      },
      milliseconds(5000));
  out.watchesSet = last;
  auto before = zkMntr(port);
  auto r0 = Clock::now();
  bool releasedFirst = holder->release().ok();
  for (auto& t : waiters) t.join();  // each waiter is bounded by its 30 s wait
  auto after = zkMntr(port);
  out.fires = watchFires(before, after);
  if (!queued || !releasedFirst || cap.over()) ++out.failures;

  // The lock went down the queue one grant at a time: pair the k-th release with the k+1-th grant.
  std::vector<Clock::time_point> grants, releases{r0};
  for (size_t i = 0; i < kWaiters; ++i) {
    if (!ok[i]) {
      ++out.failures;
      continue;
    }
    grants.push_back(granted[i]);
    releases.push_back(released[i]);
  }
  std::sort(grants.begin(), grants.end());
  std::sort(releases.begin(), releases.end());
  for (size_t k = 0; k < grants.size(); ++k) {
    bool chained =
        releases[k] <= grants[k] && (k + 1 >= grants.size() || grants[k] <= releases[k + 1]);
    chained ? out.handovers.push_back(nsBetween(releases[k], grants[k])) : void(++out.failures);
  }
  return out;
}

std::string fixed(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

void benchHerd(const Options& opt, testing::SidecarCluster& cluster, Table& table) {
  progress("[9] herd: %s\n", "200 waiters on one lock across 4 sidecars");
  std::vector<std::unique_ptr<Client>> clients;
  for (size_t i = 0; i < kSidecars; ++i) clients.push_back(cluster.connect(i));
  ZkSync zk(cluster.zk().connectString());
  const std::string parent = "/bench/herd-writes";
  zk.ensurePath(parent);
  Cap cap(std::chrono::seconds(opt.quick ? 30 : 60));
  Samples creates, deletes, handover;
  const int pairs = opt.count(100, 40) / 2;
  const int rounds = opt.quick ? 1 : 3;
  long long fires = 0, deleted = 0, changed = 0, children = 0, created = 0, watchesSet = -1;
  int failures = 0;
  for (int r = 0; r < rounds && !cap.over(); ++r) {
    writeLatencies(zk, parent, pairs, cap, creates, deletes);
    Round round = herdRound(cluster, clients, cap);
    for (double v : round.handovers) handover.add(v);
    failures += round.failures;
    fires += round.fires.total();
    deleted += round.fires.deleted;
    changed += round.fires.changed;
    children += round.fires.children;
    created += round.fires.created;
    watchesSet = std::max(watchesSet, round.watchesSet);
    writeLatencies(zk, parent, pairs, cap, creates, deletes);
  }
  handover.failures = failures;
  Samples writes;
  writes.ns = creates.ns;
  writes.ns.insert(writes.ns.end(), deletes.ns.begin(), deletes.ns.end());
  writes.failures = creates.failures + deletes.failures;
  const size_t n = handover.n();
  table.add("9a", "herd: hand-over p50, 200 waiters over 4 sidecars", handover,
            ratio(handover.median(), writes.median(), "9c (target <=2)"));
  table.addValue("9b", "  ZK watch notifications per hand-over (mntr)", n,
                 n ? fixed("%.2f", double(fires) / double(n)) : "-",
                 "target 1; deleted " + std::to_string(deleted) + ", changed " +
                     std::to_string(changed) + ", children " + std::to_string(children) +
                     ", created " + std::to_string(created) + " over " + std::to_string(n) +
                     " hand-overs; " + std::to_string(watchesSet) + " watches set (wchs)");
  table.add("9c", "ZK write round trip (C client create or delete)", writes,
            "create " + human(creates.median()) + ", delete " + human(deletes.median()));
}

}  // namespace fencekeeper::bench
