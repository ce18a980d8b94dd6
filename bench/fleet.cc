#include "bench/fleet.h"

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/zk_sync.h"
#include "sidecar/devzk/proc_state.h"
#include "tests/support/http_get.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::bench {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// CPU seconds (user + system) a process has used, from /proc/PID/stat.
double cpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
    if (i == 15) break;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// One sidecar's counters that the window compares: its heartbeat histogram (cumulative bucket
// counts by upper bound) and its lapses.
struct SidecarCounters {
  std::map<double, double> heartbeatBuckets;
  double lapses = 0;
  bool ok = false;
};

SidecarCounters scrape(const std::string& statusSocket) {
  SidecarCounters c;
  auto answer = testing::httpGet(statusSocket, "/metrics", seconds(10));
  if (!answer || answer->code != 200) return c;
  std::istringstream in(answer->body);
  const std::string bucket = "fencekeeper_heartbeat_round_trip_seconds_bucket{le=\"";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(bucket, 0) == 0) {
      auto end = line.find('"', bucket.size());
      std::string le = line.substr(bucket.size(), end - bucket.size());
      double bound = le == "+Inf" ? INFINITY : std::stod(le);
      c.heartbeatBuckets[bound] = std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  c.lapses = testing::metricSample(answer->body, "fencekeeper_vouching_lapses_total");
  c.ok = true;
  return c;
}

// The 99th percentile's bucket bound of the heartbeats counted between `before` and `after`,
// summed over every sidecar; and how many there were.
std::pair<double, double> heartbeatP99(const std::vector<SidecarCounters>& before,
                                       const std::vector<SidecarCounters>& after) {
  std::map<double, double> window;
  for (size_t i = 0; i < before.size(); ++i) {
    for (auto& [bound, count] : after[i].heartbeatBuckets) {
      auto was = before[i].heartbeatBuckets.find(bound);
      window[bound] += count - (was == before[i].heartbeatBuckets.end() ? 0 : was->second);
    }
  }
  double total = window.empty() ? 0 : window.rbegin()->second;
  for (auto& [bound, count] : window) {
    if (count >= 0.99 * total) return {bound, total};
  }
  return {NAN, total};
}

long long packetsReceived(const devzk::ZkServerProcess& zk, size_t servers) {
  long long sum = 0;
  for (size_t s = 0; s < servers; ++s) sum += zkMntr(zk.clientPort(s))["zk_packets_received"];
  return sum;
}

}  // namespace

void benchFleet(const Options& opt, Table& table) {
  constexpr size_t kServers = 3;
  devzk::ZkServerOptions zo;
  zo.ensembleSize = kServers;
  testing::SidecarCluster cluster(zo);
  testing::SidecarOptions so;
  so.sessionTimeout = "10s";  // the default
  so.extraArgs = {"--log-level", opt.sidecarLogLevel};
  const std::vector<size_t> sizes =
      opt.quick ? std::vector<size_t>{10, 25} : std::vector<size_t>{50, 100, 200};
  const auto window = seconds(opt.quick ? 10 : 30);
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<Lease>> leases;
  int failedAcquires = 0;
  for (size_t row = 0; row < sizes.size(); ++row) {
    const size_t n = sizes[row];
    Cap cap(seconds(600));  // starting 200 sidecars takes minutes on a loaded machine
    progress("[10] fleet: starting sidecars up to %s on a 3-server ensemble\n", std::to_string(n));
    while (clients.size() < n && !cap.over()) {
      size_t i = cluster.startSidecar(so);
      clients.push_back(cluster.connect(i));
      AcquireOptions acquire;
      acquire.ttl = milliseconds(10'000);
      acquire.wait = milliseconds(5'000);
      Status status;
      auto lease = clients.back()->acquire("fleet/" + std::to_string(i), acquire, &status);
      lease ? leases.push_back(std::move(lease)) : void(++failedAcquires);
    }
    if (clients.size() < n) break;
    std::this_thread::sleep_for(seconds(5));  // every sidecar past its start
    std::vector<SidecarCounters> before, after;
    for (size_t i = 0; i < n; ++i) before.push_back(scrape(cluster.statusSocket(i)));
    std::vector<double> zkCpuBefore;
    for (size_t s = 0; s < kServers; ++s) zkCpuBefore.push_back(cpuSeconds(cluster.zk().pid(s)));
    long long packetsBefore = packetsReceived(cluster.zk(), kServers);
    auto t0 = Clock::now();
    while (Clock::now() - t0 < window && !g_stop) std::this_thread::sleep_for(milliseconds(100));
    double elapsed = nsBetween(t0, Clock::now()) / 1e9;
    long long packets = packetsReceived(cluster.zk(), kServers) - packetsBefore;
    double zkCpu = 0;
    for (size_t s = 0; s < kServers; ++s) zkCpu += cpuSeconds(cluster.zk().pid(s)) - zkCpuBefore[s];
    for (size_t i = 0; i < n; ++i) after.push_back(scrape(cluster.statusSocket(i)));
    double lapses = 0, rssKiB = 0;
    int unscraped = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!before[i].ok || !after[i].ok) ++unscraped;
      lapses += after[i].lapses - before[i].lapses;
      rssKiB += static_cast<double>(devzk::procStatusKiB(cluster.sidecar(i).pid(), "VmRSS"));
    }
    auto [p99, heartbeats] = heartbeatP99(before, after);
    char value[64], note[512];
    std::snprintf(value, sizeof value, "<=%s", human(p99 * 1e9).c_str());
    std::snprintf(note, sizeof note,
                  "heartbeat p99 (bucket bound) over %.0f heartbeats in %.0f s; vouching lapses "
                  "%.0f; ZooKeeper CPU %.1f%% of a core (3 servers), %.2f requests/s per sidecar; "
                  "sidecar RSS %.1f MB each%s%s",
                  heartbeats, elapsed, lapses, 100 * zkCpu / elapsed,
                  static_cast<double>(packets) / elapsed / static_cast<double>(n),
                  rssKiB / 1024 / static_cast<double>(n),
                  unscraped ? (", " + std::to_string(unscraped) + " not scraped").c_str() : "",
                  failedAcquires ? (", " + std::to_string(failedAcquires) + " acquires failed")
                                       .c_str()
                                 : "");
    table.addValue("10" + std::string(1, static_cast<char>('a' + row)),
                   "fleet: " + std::to_string(n) + " sidecars, one 3-server ensemble", n, value,
                   note);
  }
  leases.clear();
  clients.clear();
}

}  // namespace fencekeeper::bench
