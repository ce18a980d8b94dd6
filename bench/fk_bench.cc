// fk_bench: latency figures for fencekeeper on this machine, each next to a baseline measured in
// the same run: a real standalone ZooKeeper (fsync on; forceSync=no reported separately), real
// `fencekeeper` daemons and `fencectl`, all on loopback. See bench/README.md.
//
//   fk_bench [--quick] [--full] [--only SECTIONS] [--tsv FILE] [--out DIR]
//            [--sidecar-log-level LEVEL] [--budget SECONDS] [--keep-logs]
//
// Every loop is bounded in count and time; every process started is stopped by PID.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/capnp_ping.h"
#include "bench/fleet.h"
#include "bench/harness.h"
#include "bench/kazoo_row.h"
#include "bench/stats.h"
#include "bench/suite.h"
#include "bench/zk_sync.h"
#include "bench/zk_warm_up.h"
#include "fencekeeper/client.h"
#include "tests/support/child_process.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"
#include "tests/support/zk_inspector.h"

#ifndef FK_BENCH_BUILD_TYPE
#define FK_BENCH_BUILD_TYPE "unknown"
#endif

namespace fencekeeper::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::ChildProcess;
using testing::SidecarCluster;
using testing::SidecarOptions;
using testing::waitUntil;

inline void sink(uint64_t v) { asm volatile("" : : "r"(v) : "memory"); }

// ---- raw Unix-socket ping-pong (baseline for 1) ------------------------------------------------

constexpr size_t kPingBytes = 64;  // a token() call and its answer are each about this size

bool writeAll(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
bool readAll(int fd, char* p, size_t n) {
  while (n) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

sockaddr_un unixAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// `fk_bench --echo-server PATH`: a separate process (like the sidecar) that echoes one client.
int echoServerMain(const std::string& path) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the benchmark
  int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto addr = unixAddress(path);
  ::unlink(path.c_str());
  if (l < 0 || ::bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(l, 1) != 0) {
    std::perror("echo server");
    return 1;
  }
  int c = ::accept(l, nullptr, nullptr);
  if (c < 0) return 1;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(c, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (!writeAll(c, buf, static_cast<size_t>(n))) break;
  }
  ::close(c);
  ::close(l);
  ::unlink(path.c_str());
  return 0;
}

class EchoPeer {
 public:
  EchoPeer(const std::string& selfExe, const std::string& dir) : path_(dir + "/echo.sock") {
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{selfExe, "--echo-server", path_}, dir + "/echo.log");
    auto addr = unixAddress(path_);
    bool ok = waitUntil(
        [&] {
          fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
          if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return true;
          ::close(fd_);
          fd_ = -1;
          return false;
        },
        milliseconds(5000));
    if (!ok) throw std::runtime_error("echo server did not start");
  }
  ~EchoPeer() {
    if (fd_ >= 0) ::close(fd_);  // the server sees EOF and exits
    if (process_) process_->wait(milliseconds(2000));
  }
  bool pingOnce() {
    char msg[kPingBytes], buf[kPingBytes];
    std::memset(msg, 'p', sizeof msg);
    return writeAll(fd_, msg, sizeof msg) && readAll(fd_, buf, sizeof buf);
  }

 private:
  std::string path_;
  std::unique_ptr<ChildProcess> process_;
  int fd_ = -1;
};

// The same ping-pong done by an I/O thread on the caller's behalf, as the client library does
// (the caller blocks while its I/O thread talks to the sidecar): isolates the thread hop.
class HopThread {
 public:
  explicit HopThread(EchoPeer& peer) : peer_(peer), thread_([this] { run(); }) {}
  ~HopThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_ = kQuit;
    }
    cv_.notify_all();
    thread_.join();
  }
  bool call() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_ = kRequest;
    }
    cv_.notify_all();  // after unlocking: the woken thread need not wait for the mutex
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return state_ == kDone; });
    state_ = kIdle;
    return ok_;
  }

 private:
  enum State { kIdle, kRequest, kDone, kQuit };
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return state_ == kRequest || state_ == kQuit; });
      if (state_ == kQuit) return;
      lock.unlock();
      bool ok = peer_.pingOnce();
      lock.lock();
      ok_ = ok;
      state_ = kDone;
      lock.unlock();
      cv_.notify_all();
      lock.lock();
    }
  }
  EchoPeer& peer_;
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = kIdle;
  bool ok_ = true;
  std::thread thread_;
};

// ---- fencekeeper helpers ---------------------------------------------------------------------

HolderInfo holderOf(Client& client, const std::string& name) {
  HolderInfo info;
  if (!client.holder(name, &info).ok()) info = HolderInfo{};
  return info;
}

// Polls (1 ms) until the lock has at least `waiters` queued behind its holder, then gives the
// waiter's sidecar a few ms to set its watch on the predecessor (getChildren, then getAndWatch).
bool waitForWaiters(Client& client, const std::string& name, uint32_t waiters) {
  bool queued =
      waitUntil([&] { return holderOf(client, name).waiters >= waiters; }, milliseconds(5000));
  std::this_thread::sleep_for(milliseconds(5));
  return queued;
}

// A waiter on its own thread: acquire(name, wait) and the time it returned.
class Waiter {
 public:
  Waiter(Client& client, std::string name, milliseconds wait)
      : thread_([this, &client, name = std::move(name), wait] {
          lease_ = client.acquire(name, leaseOptions(wait), &status_);
          grantedAt_ = Clock::now();
        }) {}
  ~Waiter() {
    if (thread_.joinable()) thread_.join();
  }
  std::unique_ptr<Lease> join(Clock::time_point* grantedAt) {
    thread_.join();
    *grantedAt = grantedAt_;
    return std::move(lease_);
  }
  const Status& status() const { return status_; }

 private:
  std::unique_ptr<Lease> lease_;
  Status status_;
  Clock::time_point grantedAt_;
  std::thread thread_;
};

std::vector<pid_t> childrenOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> out;
  pid_t c;
  while (in >> c) out.push_back(c);
  return out;
}

std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string perSecond(double meanNs, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f %s/s", 1e9 / meanNs, unit);
  return buf;
}

// ---- 1. RPC round trip -----------------------------------------------------------------------

void benchRpc(const Options& opt, SidecarCluster& cluster, const std::string& selfExe,
              Table& table) {
  progress("[1] RPC round trip: %s\n",
           "raw ping-pong, thread hop, bare Cap'n Proto call, Lease::check()");
  EchoPeer echo(selfExe, cluster.dir());
  HopThread hop(echo);
  CapnpPingPeer capnpPing(selfExe, cluster.dir());
  auto client = cluster.connect(0);
  Status s;
  auto lease =
      client->acquire("bench-rpc", leaseOptions(milliseconds(0), milliseconds(600000)), &s);
  if (!lease) throw std::runtime_error("acquire bench-rpc: " + s.message);

  Samples raw, hopped, bare, check;
  for (int i = 0; i < 500; ++i) {  // warm-up
    echo.pingOnce();
    hop.call();
    capnpPing.pingOnce();
    lease->check();
  }
  // Interleaved rounds, so drift on a shared machine hits every series alike.
  const int perSeries = opt.count(20000, 2000);
  const int rounds = 5;
  Cap cap(seconds(20));
  for (int r = 0; r < rounds && !cap.over(); ++r) {
    for (int i = 0; i < perSeries / rounds && !cap.over(); ++i) {
      auto t0 = Clock::now();
      bool ok = echo.pingOnce();
      auto t1 = Clock::now();
      ok ? raw.add(nsBetween(t0, t1)) : void(++raw.failures);
    }
    for (int i = 0; i < perSeries / rounds && !cap.over(); ++i) {
      auto t0 = Clock::now();
      bool ok = hop.call();
      auto t1 = Clock::now();
      ok ? hopped.add(nsBetween(t0, t1)) : void(++hopped.failures);
    }
    for (int i = 0; i < perSeries / rounds && !cap.over(); ++i) {
      auto t0 = Clock::now();
      bool ok = capnpPing.pingOnce();
      auto t1 = Clock::now();
      ok ? bare.add(nsBetween(t0, t1)) : void(++bare.failures);
    }
    for (int i = 0; i < perSeries / rounds && !cap.over(); ++i) {
      auto t0 = Clock::now();
      Status st = lease->check();
      auto t1 = Clock::now();
      st.ok() ? check.add(nsBetween(t0, t1)) : void(++check.failures);
    }
  }
  table.add("1a", "raw unix-socket ping-pong, 64 B (echo process)", raw);
  table.add("1b", "  same, via an I/O thread (condvar hop)", hopped,
            ratio(hopped.median(), raw.median(), "1a"));
  table.add("1c", "Lease::check() (token() call to the sidecar)", check,
            ratio(check.median(), raw.median(), "1a (median)") + ", " +
                ratio(check.p99(), raw.p99(), "(p99)"));
  // The floor any check over Cap'n Proto RPC pays, hop or none: with 1b - 1a it bounds 1c from
  // below.
  char floor[96];
  std::snprintf(floor, sizeof floor, "; 1d + (1b - 1a) = %.1f us",
                (bare.median() + hopped.median() - raw.median()) / 1e3);
  table.add("1d", "  bare Cap'n Proto RPC call, empty method, no hop", bare,
            ratio(bare.median(), raw.median(), "1a") + floor);
  lease->release();
}

// ---- 2. uncontended acquire+release ----------------------------------------------------------

struct PairSeries {
  Samples pair, create, remove;
  long long zkPackets = 0;
};
struct CycleSeries {
  Samples cycle, acquire, release;
  long long zkPackets = 0;
};
struct CycleResult {
  PairSeries pair, pairRd;  // Rd: zoo_set_servers_resolution_delay(-1)
  Samples recipe;
  CycleSeries fk, fkRd;  // fkRd: through a sidecar started with the resolution shim
  bool whatIf = false;
};

// Interleaved rounds of every series on one ZooKeeper, so that load from elsewhere on this
// shared machine hits them alike. `rdSidecar` >= 0: also the what-if series.
CycleResult runCycles(const Options& opt, SidecarCluster& cluster, int rdSidecar) {
  CycleResult out;
  out.whatIf = rdSidecar >= 0;
  const std::string hosts = cluster.zk().connectString();
  ZkSync zk(hosts);
  std::unique_ptr<ZkSync> zkRd;
  if (out.whatIf) zkRd = std::make_unique<ZkSync>(hosts, -1);
  const std::string parent = "/bench/baseline";
  zk.ensurePath(parent);
  const std::string prefix = parent + "/x__lock__";
  auto client = cluster.connect(0);
  std::unique_ptr<Client> clientRd;
  if (out.whatIf) clientRd = cluster.connect(static_cast<size_t>(rdSidecar));
  const int zkPort = cluster.zk().clientPort(0);

  auto pairOnce = [&](ZkSync& z, PairSeries& r) {
    std::string path;
    auto t0 = Clock::now();
    bool created = z.createSeq(prefix, &path);
    auto t1 = Clock::now();
    bool ok = created && z.remove(path);
    auto t2 = Clock::now();
    if (!ok) {
      ++r.pair.failures;
      return;
    }
    r.pair.add(nsBetween(t0, t2));
    r.create.add(nsBetween(t0, t1));
    r.remove.add(nsBetween(t1, t2));
  };
  auto recipeOnce = [&](Samples& s) {
    std::string path;
    auto t0 = Clock::now();
    bool ok = zk.createSeq(prefix, &path) && zk.children(parent) && zk.remove(path);
    auto t1 = Clock::now();
    ok ? s.add(nsBetween(t0, t1)) : void(++s.failures);
  };
  auto cycleOnce = [&](Client& c, CycleSeries& r) {
    Status s;
    auto t0 = Clock::now();
    auto lease = c.acquire("bench-cycle", leaseOptions(milliseconds(0)), &s);
    auto t1 = Clock::now();
    if (!lease) {
      ++r.cycle.failures;
      return;
    }
    Status rel = lease->release();
    auto t2 = Clock::now();
    if (!rel.ok()) {
      ++r.cycle.failures;
      return;
    }
    r.acquire.add(nsBetween(t0, t1));
    r.release.add(nsBetween(t1, t2));
    r.cycle.add(nsBetween(t0, t2));
  };
  // One series' block of a round, with ZooKeeper's request count around it.
  auto block = [&](long long* packets, int n, const Cap& cap, const std::function<void()>& once) {
    auto before = zkMntr(zkPort)["zk_packets_received"];
    for (int i = 0; i < n && !cap.over(); ++i) once();
    auto after = zkMntr(zkPort)["zk_packets_received"];
    if (packets) *packets += after - before;
  };

  {  // warm-up (also creates the lock's parents, and the JIT's fast paths)
    PairSeries p;
    Samples r;
    CycleSeries c;
    for (int i = 0; i < 30; ++i) {
      pairOnce(zk, p);
      recipeOnce(r);
      cycleOnce(*client, c);
      if (out.whatIf) cycleOnce(*clientRd, c);
    }
  }
  const int perSeries = opt.count(400, 60);
  const int rounds = 5;
  const int perBlock = perSeries / rounds;
  Cap cap(seconds(opt.quick ? 20 : 60));
  for (int r = 0; r < rounds && !cap.over(); ++r) {
    block(&out.pair.zkPackets, perBlock, cap, [&] { pairOnce(zk, out.pair); });
    block(nullptr, perBlock, cap, [&] { recipeOnce(out.recipe); });
    block(&out.fk.zkPackets, perBlock, cap, [&] { cycleOnce(*client, out.fk); });
    if (out.whatIf) {
      block(&out.pairRd.zkPackets, perBlock, cap, [&] { pairOnce(*zkRd, out.pairRd); });
      block(&out.fkRd.zkPackets, perBlock, cap, [&] { cycleOnce(*clientRd, out.fkRd); });
    }
  }
  return out;
}

// Requests ZooKeeper received per operation (session pings and the sidecars' heartbeat syncs,
// a few per second, are included: good to about +-0.1).
std::string requestsPer(long long packets, size_t n, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f ZK requests/%s", n ? double(packets) / double(n) : NAN,
                unit);
  return buf;
}

void reportCycles(const CycleResult& r, const std::string& suffix, const std::string& zkLabel,
                  Table& table) {
  table.add("2a" + suffix, "ZK C client sync create(E_SEQ)+delete " + zkLabel, r.pair.pair,
            perSecond(r.pair.pair.mean(), "pairs") + ", " +
                requestsPer(r.pair.zkPackets, r.pair.pair.n(), "pair") + "; create " +
                human(r.pair.create.median()) + " + delete " + human(r.pair.remove.median()));
  table.add("2b" + suffix, "  same + getChildren (the recipe's minimum)", r.recipe,
            ratio(r.recipe.median(), r.pair.pair.median(), "2a"));
  table.add("2c" + suffix, "fencekeeper acquire+release, uncontended", r.fk.cycle,
            ratio(r.fk.cycle.median(), r.pair.pair.median(), "2a (median)") + ", " +
                ratio(r.fk.cycle.p99(), r.pair.pair.p99(), "(p99)") + ", " +
                perSecond(r.fk.cycle.mean(), "cycles") + ", " +
                requestsPer(r.fk.zkPackets, r.fk.cycle.n(), "cycle"));
  table.add("2d" + suffix, "  of which acquire() (wait 0)", r.fk.acquire);
  table.add("2e" + suffix, "  of which release()", r.fk.release);
  if (!r.whatIf) return;
  table.add("2f" + suffix, "what-if: 2a with resolution delay -1", r.pairRd.pair,
            ratio(r.pairRd.pair.median(), r.pair.pair.median(), "2a") + "; create " +
                human(r.pairRd.create.median()) + " + delete " + human(r.pairRd.remove.median()));
  table.add("2g" + suffix, "what-if: 2c via a sidecar with resolution delay -1", r.fkRd.cycle,
            ratio(r.fkRd.cycle.median(), r.fk.cycle.median(), "2c") + ", " +
                ratio(r.fkRd.cycle.median(), r.pairRd.pair.median(), "2f") + "; acquire " +
                human(r.fkRd.acquire.median()) + " + release " + human(r.fkRd.release.median()));
}

// ---- 3. hand-over between sidecars -------------------------------------------------------------

// Hand-overs of one lock between a client of sidecar a and one of sidecar b (a == b: two clients
// of one sidecar), alternating directions; run in chunks so that series can be interleaved.
class HandoverRunner {
 public:
  HandoverRunner(SidecarCluster& cluster, size_t a, size_t b, std::string name)
      : ca_(cluster.connect(a)), cb_(cluster.connect(b)), name_(std::move(name)) {}

  Samples handover;     // release() called -> waiter's acquire() returned
  Samples releaseCall;  // the holder's release() call

  void run(int n, const Cap& cap) {
    for (int k = 0; k < n && !cap.over(); ++k) once();
  }
  size_t done() const { return handover.n() + static_cast<size_t>(handover.failures); }

 private:
  void once() {
    bool forward = (i_++ % 2) == 0;
    Client& holderClient = forward ? *ca_ : *cb_;
    Client& waiterClient = forward ? *cb_ : *ca_;
    Status s;
    auto held = holderClient.acquire(name_, leaseOptions(milliseconds(2000)), &s);
    if (!held) {
      ++handover.failures;
      return;
    }
    Waiter waiter(waiterClient, name_, milliseconds(10000));
    if (!waitForWaiters(holderClient, name_, 1)) {
      ++handover.failures;
      held->release();
      Clock::time_point ignored;
      waiter.join(&ignored);
      return;
    }
    auto t0 = Clock::now();
    Status rel = held->release();
    auto t1 = Clock::now();
    Clock::time_point grantedAt;
    auto granted = waiter.join(&grantedAt);
    if (!rel.ok() || !granted) {
      ++handover.failures;
      return;
    }
    handover.add(nsBetween(t0, grantedAt));
    releaseCall.add(nsBetween(t0, t1));
    granted->release();
  }

  std::unique_ptr<Client> ca_, cb_;
  std::string name_;
  int i_ = 0;
};

// Runs the runners in interleaved chunks until each has `n` samples (or the cap).
void interleave(std::vector<HandoverRunner*> runners, int n, const Cap& cap) {
  const int chunk = 10;
  bool more = true;
  while (more && !cap.over()) {
    more = false;
    for (auto* r : runners) {
      if (r->done() >= static_cast<size_t>(n)) continue;
      r->run(std::min<int>(chunk, n - static_cast<int>(r->done())), cap);
      more = true;
    }
  }
}

// ---- 4. hand-over after SIGKILL of the holder's process ----------------------------------------

Samples runKillHandovers(SidecarCluster& cluster, size_t holderSidecar, size_t standbySidecar,
                         int n, Clock::duration budget, const std::string& name) {
  Samples out;
  auto standby = cluster.connect(standbySidecar);
  Cap cap(budget);
  for (int i = 0; i < n && !cap.over(); ++i) {
    auto holder = cluster.fencectl(holderSidecar, {"lock", name, "--ttl", "30s", "--owner",
                                                   "bench-victim", "--", "sleep", "60"});
    bool held = waitUntil(
        [&] {
          auto info = holderOf(*standby, name);
          return info.held && info.ownerLabel == "bench-victim";
        },
        milliseconds(10000));
    // fencectl spawns `sleep` in a process group of its own, after the grant: find it by PID
    // now, so it can be killed once its parent is gone.
    std::vector<pid_t> kids;
    waitUntil([&] { return !(kids = childrenOf(holder->pid())).empty(); }, milliseconds(3000));
    if (!held) {
      ++out.failures;
      for (pid_t k : kids) ::kill(k, SIGKILL);
      continue;
    }
    Waiter waiter(*standby, name, milliseconds(10000));
    bool queued = waitForWaiters(*standby, name, 1);
    auto t0 = Clock::now();
    holder->signal(SIGKILL);
    Clock::time_point grantedAt;
    auto granted = waiter.join(&grantedAt);
    for (pid_t k : kids) ::kill(k, SIGKILL);
    holder->wait(milliseconds(2000));
    if (!queued || !granted) {
      ++out.failures;
      continue;
    }
    out.add(nsBetween(t0, grantedAt));
    granted->release();
  }
  return out;
}

// ---- 5. local validity check -------------------------------------------------------------------

void benchValidFor(const Options& opt, SidecarCluster& cluster, Table& table) {
  progress("[5] local checks: %s\n", "Lease::validFor(), token(), steady_clock::now()");
  auto client = cluster.connect(0);
  Status s;
  auto lease =
      client->acquire("bench-valid", leaseOptions(milliseconds(0), milliseconds(600000)), &s);
  if (!lease) throw std::runtime_error("acquire bench-valid: " + s.message);
  const int batch = opt.quick ? 50000 : 200000;
  const int batches = 11;
  auto perOp = [&](auto&& op) {
    Samples perBatch;
    Cap cap(seconds(10));
    for (int b = 0; b < batches && !cap.over(); ++b) {
      auto t0 = Clock::now();
      for (int i = 0; i < batch; ++i) sink(op());
      auto t1 = Clock::now();
      perBatch.add(nsBetween(t0, t1) / batch);
    }
    return perBatch.median();
  };
  std::string tableWhere;
  bool throughTable = client->usesLeaseTable(&tableWhere);
  double clockNs = perOp([] { return uint64_t(Clock::now().time_since_epoch().count()); });
  // The clock the lease table's deadlines are on: what a shared-memory check must read anyway.
  double bootClockNs = perOp([] {
    timespec ts{};
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return uint64_t(ts.tv_nsec);
  });
  double validNs = perOp([&] { return uint64_t(lease->validFor().count()); });
  double tokenNs = perOp([&] { return lease->token(); });
  double lostNs = perOp([&] { return uint64_t(lease->lost()); });
  // What the ZooKeeper C client does on each pass of its I/O loop by default: re-resolve its
  // host list (getaddrinfo with AI_ADDRCONFIG, as in its resolve_hosts()).
  const std::string zkPort = std::to_string(cluster.zk().clientPort(0));
  Samples resolve;
  {
    Cap cap(seconds(5));
    for (int i = 0; i < (opt.quick ? 500 : 2000) && !cap.over(); ++i) {
      addrinfo hints{};
      hints.ai_flags = AI_ADDRCONFIG;
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      hints.ai_protocol = IPPROTO_TCP;
      addrinfo* res = nullptr;
      auto t0 = Clock::now();
      int rc = ::getaddrinfo("127.0.0.1", zkPort.c_str(), &hints, &res);
      auto t1 = Clock::now();
      if (rc == 0) {
        ::freeaddrinfo(res);
        resolve.add(nsBetween(t0, t1));
      } else {
        ++resolve.failures;
      }
    }
  }
  size_t n = size_t(batch) * batches;
  std::string note = throughTable ? "lease table; " : "NO lease table (" + tableWhere + "); ";
  char overClock[64];
  std::snprintf(overClock, sizeof overClock, "%+.1f ns over 5f; ", validNs - bootClockNs);
  note += overClock + ratio(validNs, bootClockNs, "5f");
  if (const Row* check = table.find("1c"); check && !std::isnan(check->median)) {
    char cheaper[64];
    std::snprintf(cheaper, sizeof cheaper, "; 1c / 5a = %.0fx", check->median / validNs);
    note += cheaper;
  }
  table.addFigure("5a", "Lease::validFor() per call (shared memory)", n, validNs, note);
  table.addFigure("5b", "  baseline: steady_clock::now()", n, clockNs);
  table.addFigure("5f", "  baseline: clock_gettime(CLOCK_BOOTTIME)", n, bootClockNs);
  table.addFigure("5c", "Lease::token() per call", n, tokenNs);
  table.addFigure("5d", "Lease::lost() per call", n, lostNs);
  table.add("5e", "getaddrinfo(AI_ADDRCONFIG): ZK C client, per I/O pass", resolve);
  lease->release();
}

// ---- 5g/5h. a loss the sidecar decides: the table's view against the pushed message ------------

// The lease's node is deleted behind the sidecar's back (as an operator would): the sidecar's
// watch fires, it writes the loss into the lease table, then sends the loss message. A thread
// spinning on validFor() sees the first, onLost the second; both timed from the delete's call.
void benchLossView(const Options& opt, SidecarCluster& cluster, Table& table) {
  progress("[5] loss view: %s\n", "lease table reader vs loss message");
  auto client = cluster.connect(0);
  testing::ZkInspector zk(cluster.zk().connectString());
  Samples seenInTable, pushed;
  int tableFirst = 0;
  Cap cap(seconds(30));
  for (int i = 0; i < (opt.quick ? 10 : 40) && !cap.over(); ++i) {
    std::atomic<int64_t> lostAt{0};
    auto options = leaseOptions(milliseconds(0), milliseconds(600000));
    options.onLost = [&](uint64_t, LossReason) {
      lostAt = Clock::now().time_since_epoch().count();
    };
    Status s;
    auto lease = client->acquire("bench-loss", options, &s);
    auto nodes = zk.children("/fencekeeper/locks/bench-loss");
    if (!lease || nodes.size() != 1) {
      ++seenInTable.failures;
      continue;
    }
    std::atomic<bool> stop{false};
    std::atomic<int64_t> zeroAt{0};
    std::thread reader([&] {
      while (!stop && lease->validFor().count() > 0) std::this_thread::yield();
      zeroAt = Clock::now().time_since_epoch().count();
    });
    auto t0 = Clock::now();
    bool removed = zk.remove("/fencekeeper/locks/bench-loss/" + nodes[0]);
    bool seen = removed && waitUntil([&] { return zeroAt != 0 && lostAt != 0; }, seconds(5));
    stop = true;
    reader.join();
    if (!seen) {
      ++seenInTable.failures;
      continue;
    }
    auto since = [&](int64_t ns) { return double(ns - t0.time_since_epoch().count()); };
    seenInTable.ns.push_back(since(zeroAt));
    pushed.ns.push_back(since(lostAt));
    if (zeroAt <= lostAt) ++tableFirst;
  }
  std::string note = seenInTable.n() && pushed.n()
                         ? ratio(seenInTable.median(), pushed.median(), "5h") + "; first in " +
                               std::to_string(tableFirst) + " of " +
                               std::to_string(seenInTable.n()) +
                               "; from the delete's call (its round trip included)"
                         : "";
  table.add("5g", "loss seen by a lease table reader (validFor() 0)", seenInTable, note);
  table.add("5h", "  the same loss told by the sidecar's message (onLost)", pushed);
}

// ---- main ------------------------------------------------------------------------------------

// Starts ZooKeeper and `plain` sidecars, then `shimmed` more with LD_PRELOAD=fk_zk_resolve_shim
// (zoo_set_servers_resolution_delay(-1) on their ZooKeeper handle): the what-if series. Only the
// sidecars get the preload, not ZooKeeper's JVM.
SidecarCluster& startCluster(std::unique_ptr<SidecarCluster>& holder, bool forceSync,
                             const Options& opt, size_t plain, size_t shimmed) {
  devzk::ZkServerOptions zo;
  zo.forceSync = forceSync;
  zo.javaHeap = "256m";
  holder = std::make_unique<SidecarCluster>(zo);
  auto start = [&] {
    SidecarOptions so;
    so.extraArgs = {"--log-level", opt.sidecarLogLevel};
    holder->startSidecar(so);
  };
  for (size_t i = 0; i < plain; ++i) start();
  // ChildProcess copies this process's environment when it spawns: set, spawn, unset.
  ::setenv("LD_PRELOAD", FK_BENCH_SHIM, 1);
  ::setenv("FK_ZK_RESOLUTION_DELAY_MS", "-1", 1);
  try {
    for (size_t i = 0; i < shimmed; ++i) start();
  } catch (...) {
    ::unsetenv("LD_PRELOAD");
    throw;
  }
  ::unsetenv("LD_PRELOAD");
  ::unsetenv("FK_ZK_RESOLUTION_DELAY_MS");
  progress("    cluster in %s\n", holder->dir());
  return *holder;
}

// Sections 2 and 3 on one cluster (sidecars 0 and 1 plain; 2 and 3 shimmed when what-if is on).
void benchCyclesAndHandovers(const Options& opt, SidecarCluster& cluster, bool whatIf, bool cycles,
                             bool handovers, bool localHandovers, const std::string& suffix,
                             const std::string& zkLabel, Table& table) {
  if (cycles) {
    progress("[2] acquire+release vs ZK C client create+delete %s\n", zkLabel);
    reportCycles(runCycles(opt, cluster, whatIf ? 2 : -1), suffix, zkLabel, table);
  }
  if (!handovers || g_stop) return;
  progress("[3] hand-over %s\n", "A->B and B->A, release call to grant " + zkLabel);
  int n = opt.count(120, 30);
  HandoverRunner cross(cluster, 0, 1, "bench-handover");
  std::unique_ptr<HandoverRunner> crossRd;
  if (whatIf) crossRd = std::make_unique<HandoverRunner>(cluster, 2, 3, "bench-handover-rd");
  Cap cap(seconds(opt.quick ? 20 : 60));
  std::vector<HandoverRunner*> runners{&cross};
  if (crossRd) runners.push_back(crossRd.get());
  interleave(runners, n, cap);
  table.add("3a" + suffix, "hand-over A<->B: release() -> grant " + zkLabel, cross.handover);
  table.add("3b" + suffix, "  the holder's release() call alone", cross.releaseCall);
  if (crossRd) {
    table.add("3d" + suffix, "what-if: 3a with resolution delay -1", crossRd->handover,
              ratio(crossRd->handover.median(), cross.handover.median(), "3a"));
  }
  if (localHandovers && !g_stop) {
    HandoverRunner local(cluster, 0, 0, "bench-handover-local");
    Cap localCap(seconds(opt.quick ? 10 : 25));
    local.run(opt.count(100, 20), localCap);
    table.add("3c" + suffix, "hand-over, both clients on one sidecar", local.handover);
  }
}

int run(const Options& opt, const std::string& selfExe) {
  auto started = Clock::now();
  g_deadline = started + seconds(opt.budgetSeconds);
  utsname u{};
  ::uname(&u);
  std::printf("fk_bench: build %s, kernel %s, %u cpus, loadavg at start %s\n", FK_BENCH_BUILD_TYPE,
              u.release, std::thread::hardware_concurrency(), loadAverage().c_str());
  std::printf(
      "ZooKeeper 3.8.0 standalone on 127.0.0.1 (tickTime 200 ms), sidecars with "
      "--session-timeout 2s (rows 7-9: 10s) --log-level %s; %s\n",
      opt.sidecarLogLevel.c_str(), opt.quick ? "--quick sample counts" : "full sample counts");
  std::fflush(stdout);
  Table table;
  const bool whatIf = opt.want("whatif");

  bool fsyncWork = opt.want("rpc") || opt.want("cycle") || opt.want("handover") ||
                   opt.want("kill") || opt.want("valid") || opt.want("kazoo");
  if (fsyncWork) {
    progress("starting ZooKeeper (%s) and sidecars\n", "fsync on");
    std::unique_ptr<SidecarCluster> owned;
    SidecarCluster& cluster = startCluster(owned, true, opt, 2, whatIf ? 2 : 0);
    if (opt.want("cycle") || opt.want("kazoo") || opt.want("handover")) {
      warmUpZooKeeper(cluster, Cap(seconds(opt.quick ? 10 : 30)));
    }

    if (opt.want("rpc") && !g_stop) benchRpc(opt, cluster, selfExe, table);
    if ((opt.want("cycle") || opt.want("handover")) && !g_stop) {
      benchCyclesAndHandovers(opt, cluster, whatIf, opt.want("cycle"), opt.want("handover"), true,
                              "", "(fsync)", table);
    }
    if (opt.want("kazoo") && !g_stop) benchKazoo(opt, cluster, table);
    if (opt.want("kill") && !g_stop) {
      progress("[4] %s\n", "SIGKILL of a `fencectl lock --ttl 30s -- sleep 60` holder");
      int n = opt.count(24, 20);
      auto cross = runKillHandovers(cluster, 0, 1, n, seconds(opt.quick ? 20 : 40), "bench-kill");
      table.add("4a", "SIGKILL holder (sidecar A) -> standby on B granted", cross,
                "mean " + human(cross.mean()) + "; goal: well under 1 s");
      auto same =
          runKillHandovers(cluster, 0, 0, n, seconds(opt.quick ? 20 : 40), "bench-kill-local");
      table.add("4b", "SIGKILL holder -> standby on the same sidecar", same,
                "mean " + human(same.mean()));
    }
    if (opt.want("valid") && !g_stop) benchValidFor(opt, cluster, table);
    if (opt.want("valid") && !g_stop) benchLossView(opt, cluster, table);
    progress("stopping ZooKeeper and sidecars%s\n", "");
  }

  if (opt.want("nosync") && !g_stop) {
    progress("starting ZooKeeper (%s) and sidecars\n", "-Dzookeeper.forceSync=no");
    std::unique_ptr<SidecarCluster> owned;
    SidecarCluster& cluster = startCluster(owned, false, opt, 2, whatIf ? 2 : 0);
    benchCyclesAndHandovers(opt, cluster, whatIf, true, true, false, "-ns", "(no fsync)", table);
  }
  if ((opt.want("throughput") || opt.want("herd") || opt.want("scale")) && !g_stop) {
    benchSuite(opt, table);
  }
  // Minutes of its own (up to 200 sidecars): with --full, or asked for by name.
  if ((opt.only.count("fleet") || (opt.full && opt.only.empty())) && !g_stop) {
    benchFleet(opt, table);
  }

  std::printf("\n");
  table.print(stdout);
  std::printf("\nwall time %.1f s; loadavg at end %s%s\n", nsBetween(started, Clock::now()) / 1e9,
              loadAverage().c_str(), g_stop ? " (INTERRUPTED)" : "");
  if (!opt.tsv.empty()) {
    if (FILE* f = std::fopen(opt.tsv.c_str(), "w")) {
      table.printTsv(f);
      std::fclose(f);
    }
  }
  writePlots(opt, table);
  return g_stop ? 130 : 0;
}

void onSignal(int) { g_stop = true; }

int usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: fk_bench [--quick] [--full] [--only SECTION,...] [--tsv FILE] "
               "[--out DIR] [--sidecar-log-level LEVEL] [--budget SECONDS] [--keep-logs]\n"
               "sections: rpc, cycle, handover, kill, valid, nosync, whatif, kazoo, throughput, "
               "herd, scale, fleet (not run unless named, or with --full)\n",
               msg);
  return 2;
}

}  // namespace
}  // namespace fencekeeper::bench

int main(int argc, char** argv) {
  using namespace fencekeeper::bench;
  if (argc == 3 && std::string(argv[1]) == "--echo-server") return echoServerMain(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "--capnp-ping-server") {
    return capnpPingServerMain(argv[2]);
  }
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--quick") {
        opt.quick = true;
      } else if (a == "--full") {
        opt.full = true;
      } else if (a == "--out") {
        opt.outDir = value();
      } else if (a == "--only") {
        std::stringstream list(value());
        std::string item;
        while (std::getline(list, item, ',')) opt.only.insert(item);
      } else if (a == "--tsv") {
        opt.tsv = value();
      } else if (a == "--sidecar-log-level") {
        opt.sidecarLogLevel = value();
      } else if (a == "--budget") {
        opt.budgetSeconds = std::stoi(value());
      } else if (a == "--keep-logs") {
        opt.keepLogs = true;
      } else {
        return usage(("unknown argument " + a).c_str());
      }
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }
  if (opt.keepLogs) ::setenv("FK_KEEP_TEST_LOGS", "1", 1);
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  char self[4096];
  ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return usage("cannot read /proc/self/exe");
  self[len] = '\0';
  // Samples, curves and plots go to the build dir by default (fk_bench is BUILD/bench/fk_bench).
  if (opt.outDir.empty()) opt.outDir = std::filesystem::path(self).parent_path().parent_path();
  try {
    return run(opt, self);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fk_bench: %s\n", e.what());
    return 1;
  }
}
