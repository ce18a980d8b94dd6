#include "bench/scale.h"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/support/http_get.h"
#include "tests/support/wait.h"

namespace fencekeeper::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr size_t kConnections = 1000;
constexpr size_t kAcquirers = 32;  // threads granting leases in parallel during set-up

// VmRSS of `pid`, in KiB; -1 when unreadable.
long long residentKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      long long kb;
      return (in >> kb) ? kb : -1;
    }
    in.ignore(1 << 16, '\n');
  }
  return -1;
}

// A connection to sidecar `index`. Connecting a thousand clients in a row can fill the socket's
// listen backlog before the sidecar's loop accepts them (EAGAIN): retry, bounded.
std::unique_ptr<Client> connectPatiently(testing::SidecarCluster& cluster, size_t index) {
  Status s;
  std::unique_ptr<Client> client;
  testing::waitUntil(
      [&] { return (client = Client::connect(cluster.socket(index), &s)) != nullptr; },
      milliseconds(10000));
  if (!client) throw std::runtime_error("connect: " + s.message);
  return client;
}

std::string mb(long long kb) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", double(kb) / 1024.0);
  return buf;
}

std::string sizeLabel(size_t n) {
  return n % 1000 == 0 ? std::to_string(n / 1000) + "k" : std::to_string(n);
}

class LeaseFarm {
 public:
  explicit LeaseFarm(std::vector<std::unique_ptr<Client>>& clients) : clients_(clients) {}

  // Grants leases until `target` are held (one lock each, spread over the connections), within
  // `cap`. Returns how many are held.
  size_t growTo(size_t target, const Cap& cap) {
    leases_.resize(target);
    std::atomic<size_t> next{held_};
    std::vector<std::thread> workers;
    for (size_t w = 0; w < kAcquirers; ++w) {
      workers.emplace_back([&] {
        for (size_t j; !cap.over() && (j = next++) < target;) {
          Status s;
          leases_[j] = clients_[j % clients_.size()]->acquire(
              "bench-scale-" + std::to_string(j), leaseOptions(milliseconds(10000), minutes50()),
              &s);
          if (!leases_[j]) ++failures_;
        }
      });
    }
    for (auto& t : workers) t.join();
    held_ = 0;
    for (auto& l : leases_) held_ += l != nullptr;
    return held_;
  }
  // Renews randomly chosen leases, one at a time.
  Samples renewals(int n, const Cap& cap) {
    Samples out;
    std::mt19937 rng(42);
    for (int i = 0; i < n && !cap.over(); ++i) {
      auto& l = leases_[rng() % leases_.size()];
      if (!l) continue;
      auto t0 = Clock::now();
      bool ok = l->renew().ok();
      auto t1 = Clock::now();
      ok ? out.add(nsBetween(t0, t1)) : void(++out.failures);
    }
    return out;
  }
  int failures() const { return failures_; }
  // Leases granted and lost since (a lapse of the session's vouching loses them all).
  size_t lost() const {
    size_t n = 0;
    for (auto& l : leases_) n += l && l->lost();
    return n;
  }
  void drop() { leases_.clear(); }

 private:
  static milliseconds minutes50() { return milliseconds(50 * 60 * 1000); }
  std::vector<std::unique_ptr<Client>>& clients_;
  std::vector<std::unique_ptr<Lease>> leases_;
  size_t held_ = 0;
  std::atomic<int> failures_{0};
};

struct StatusFigures {
  Samples rpc, http, httpAll;  // httpAll: /status?limit=10000, every lease listed up to 10k
  size_t rpcBytes = 0, httpBytes = 0, httpAllBytes = 0;  // the RPC answer as JSON; the bodies
  uint32_t listed = 0, listingCap = 0;
};

void get(const std::string& socket, const std::string& target, Samples& out, size_t& bytes) {
  auto t0 = Clock::now();
  auto answer = testing::httpGet(socket, target, seconds(30));
  auto t1 = Clock::now();
  bool ok = answer && answer->code == 200;
  ok ? out.add(nsBetween(t0, t1)) : void(++out.failures);
  if (ok) bytes = answer->body.size();
}

StatusFigures statusFigures(Client& client, const std::string& statusSocket, int calls) {
  StatusFigures f;
  for (int i = 0; i < calls; ++i) {
    SidecarStatus st;
    auto t0 = Clock::now();
    bool ok = client.status(&st).ok();
    auto t1 = Clock::now();
    ok ? f.rpc.add(nsBetween(t0, t1)) : void(++f.rpc.failures);
    f.listed = static_cast<uint32_t>(st.leases.size());
    f.listingCap = st.listingCap;
    std::string json;
    if (client.statusJson(&json).ok()) f.rpcBytes = json.size();
    get(statusSocket, "/status", f.http, f.httpBytes);
    get(statusSocket, "/status?limit=10000", f.httpAll, f.httpAllBytes);
  }
  return f;
}

std::string kib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f KiB", double(bytes) / 1024.0);
  return buf;
}

}  // namespace

void benchScale(const Options& opt, testing::SidecarCluster& cluster, Table& table) {
  progress("[8] scale: %s\n", opt.full ? "1k, 10k, 100k leases over 1k connections"
                                       : "1k and 10k leases over 1k connections (--full: 100k)");
  testing::SidecarOptions so;
  so.sessionTimeout = "10s";  // as the suite's sidecars (suite.cc)
  so.extraArgs = {"--log-level",
                  opt.sidecarLogLevel,
                  "--max-leases",
                  "200000",
                  "--max-leases-per-peer",
                  "200000",
                  "--max-waiting-per-peer",
                  "200000",
                  "--max-connections",
                  "2000",
                  "--max-calls-per-connection",
                  "1024"};
  const size_t index = cluster.startSidecar(so);
  const pid_t pid = cluster.sidecar(index).pid();
  const long long idleKb = residentKb(pid);

  std::vector<std::unique_ptr<Client>> clients;
  for (size_t i = 0; i < kConnections && !g_stop; ++i)
    clients.push_back(connectPatiently(cluster, index));
  auto probe = cluster.connect(index);
  const long long connectedKb = residentKb(pid);
  LeaseFarm farm(clients);

  FILE* curve = std::fopen((opt.outDir + "/memory.tsv").c_str(), "w");
  if (curve) {
    std::fprintf(curve, "leases\trss_kb\tconnections\n0\t%lld\t0\n0\t%lld\t%zu\n", idleKb,
                 connectedKb, clients.size());
  }
  table.addValue("8a0", "scale: sidecar RSS, idle / with 1k connections", clients.size(),
                 mb(connectedKb), "idle " + mb(idleKb));

  std::vector<size_t> sizes{1000, 10000};
  if (opt.full) sizes.push_back(100000);
  Samples renewSmall;
  size_t prevHeld = 0;
  long long prevKb = 0;
  for (size_t target : sizes) {
    if (g_stop) break;
    const std::string k = sizeLabel(target);
    progress("    %s leases\n", k);
    auto t0 = Clock::now();
    Cap setup(seconds(target >= 100000 ? 600 : opt.quick ? 60 : 120));
    size_t held = farm.growTo(target, setup);
    double setupS = nsBetween(t0, Clock::now()) / 1e9;
    const long long kb = residentKb(pid);
    if (curve) std::fprintf(curve, "%zu\t%lld\t%zu\n", held, kb, clients.size());
    // The growth from the previous size, per lease added: what "grows linearly" is about (the
    // first size also carries what the first lease of each connection costs).
    char growth[64] = "";
    if (prevHeld && held > prevHeld) {
      std::snprintf(growth, sizeof growth, "; +%.2f KiB/lease from %s",
                    double(kb - prevKb) / double(held - prevHeld), sizeLabel(prevHeld).c_str());
    }
    char note[224];
    std::snprintf(note, sizeof note,
                  "%.2f KiB/lease over 1k connections (target <=2 KiB)%s%s; set up in %.0f s%s",
                  held ? double(kb - connectedKb) / double(held) : 0.0, growth,
                  target == 10000 ? ", target <=64 MB" : "", setupS,
                  held < target ? " (CAPPED: fewer than asked)" : "");
    prevHeld = held;
    prevKb = kb;
    table.addValue("8a" + k, "  sidecar RSS, " + std::to_string(held) + " leases", held, mb(kb),
                   note);

    Cap measure(seconds(opt.quick ? 15 : 30));
    Samples renew = farm.renewals(opt.count(2000, 300), measure);
    std::string renewNote;
    if (target == sizes.front()) {
      renewSmall = renew;
    } else {
      renewNote = ratio(renew.median(), renewSmall.median(), "8b1k (p50)") + ", " +
                  ratio(renew.p99(), renewSmall.p99(), "(p99)");
    }
    if (size_t lost = farm.lost()) renewNote += "; " + std::to_string(lost) + " leases LOST";
    table.add("8b" + k, "  Lease::renew(), " + k + " leases held", renew, renewNote);
    StatusFigures st = statusFigures(*probe, cluster.statusSocket(index),
                                     target >= 100000 ? 3
                                     : opt.quick      ? 3
                                                      : 7);
    table.add("8c" + k, "  status() RPC, " + k + " leases", st.rpc,
              kib(st.rpcBytes) + " as JSON; " + std::to_string(st.listed) + " leases listed (cap " +
                  std::to_string(st.listingCap) + ")");
    table.add("8d" + k, "  GET /status (status socket), " + k + " leases", st.http,
              kib(st.httpBytes) + " (lists 1,000 by default)");
    table.add("8e" + k, "  GET /status?limit=10000, " + k + " leases", st.httpAll,
              kib(st.httpAllBytes));
  }
  if (curve) std::fclose(curve);
  if (farm.failures())
    progress("    %s acquires failed during set-up\n", std::to_string(farm.failures()));
  // Leases are dropped without a release each: the sidecar goes first, its session's nodes with it.
  cluster.sidecar(index).signal(SIGKILL);
  cluster.sidecar(index).wait(milliseconds(5000));
  testing::waitUntil(
      [&] {
        for (auto& c : clients)
          if (c->connected()) return false;
        return true;
      },
      milliseconds(10000));
  farm.drop();
  clients.clear();
}

}  // namespace fencekeeper::bench
