#include "bench/throughput.h"

#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench/cpu_placement.h"
#include "bench/cycles.h"
#include "bench/zk_sync.h"
#include "tests/support/wait.h"

namespace fencekeeper::bench {
namespace {

using std::chrono::milliseconds;

// The measured window of a load: cycles that end inside it count, the first moments (connects,
// first parents) are left out.
struct Window {
  Clock::time_point start, end;
  bool holds(Clock::time_point t) const { return t >= start && t <= end; }
  double seconds() const { return nsBetween(start, end) / 1e9; }
};

Window openWindow(const Options& opt) {
  auto start = Clock::now() + milliseconds(300);
  return {start, start + milliseconds(opt.quick ? 1200 : 1500)};
}

// CPU time (user + system) that the processes used, in seconds: where a cycle's work goes on
// this 2-core machine, where the client threads compete with the sidecar and ZooKeeper.
struct Cpu {
  double sidecars = 0, zk = 0, bench = 0;
};

double cpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  auto paren = line.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return 0;
  std::istringstream rest(line.substr(paren + 1));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);  // utime, stime
  }
  return ticks / double(::sysconf(_SC_CLK_TCK));
}

Cpu cpuNow(testing::SidecarCluster& cluster, size_t sidecars) {
  Cpu c;
  for (size_t i = 0; i < sidecars; ++i) c.sidecars += cpuSeconds(cluster.sidecar(i).pid());
  c.zk = cpuSeconds(cluster.zk().pid(0));
  c.bench = cpuSeconds(::getpid());
  return c;
}

// Sleeps through the window, measuring the CPU the processes use in it.
Cpu measureWindow(testing::SidecarCluster& cluster, size_t sidecars, const Window& w) {
  auto sleepUntil = [](Clock::time_point t) {
    while (Clock::now() < t && !g_stop) std::this_thread::sleep_for(milliseconds(5));
  };
  sleepUntil(w.start);
  Cpu a = cpuNow(cluster, sidecars);
  sleepUntil(w.end);
  Cpu b = cpuNow(cluster, sidecars);
  return {b.sidecars - a.sidecars, b.zk - a.zk, b.bench - a.bench};
}

struct Load {
  Samples latency;  // cycles that ended in the window(s)
  size_t cycles = 0;
  double seconds = 0;  // the windows' length
  double perSecond = 0;
  Cpu cpu;

  void add(const Load& more) {
    latency.ns.insert(latency.ns.end(), more.latency.ns.begin(), more.latency.ns.end());
    latency.failures += more.latency.failures;
    cycles += more.cycles;
    seconds += more.seconds;
    perSecond = seconds > 0 ? double(cycles) / seconds : 0;
    cpu.sidecars += more.cpu.sidecars;
    cpu.zk += more.cpu.zk;
    cpu.bench += more.cpu.bench;
  }
};

// ---- the raw capacity: the recipe's requests with the async C API ------------------------------

class AsyncRecipeLoad {
 public:
  AsyncRecipeLoad(const std::string& hosts, size_t sessions, size_t logical) {
    for (size_t s = 0; s < sessions; ++s) {
      zhandle_t* zh = zookeeper_init(hosts.c_str(), nullptr, 10000, nullptr, nullptr, 0);
      if (!zh) throw std::runtime_error("zookeeper_init failed");
      handles_.push_back(zh);
      if (!testing::waitUntil([&] { return zoo_state(zh) == ZOO_CONNECTED_STATE; },
                              milliseconds(10000))) {
        throw std::runtime_error("ZooKeeper session did not connect");
      }
    }
    ZkSync setup(hosts);
    for (size_t i = 0; i < logical; ++i) {
      auto c = std::make_unique<Logical>();
      c->owner = this;
      c->zh = handles_[i % sessions];
      c->parent = "/bench/throughput/raw-" + std::to_string(i);
      setup.ensurePath(c->parent);
      c->prefix = c->parent + "/x__lock__";
      clients_.push_back(std::move(c));
    }
  }
  ~AsyncRecipeLoad() {
    stop_ = true;  // completions stop chaining; wait (bounded) for those in flight
    testing::waitUntil([&] { return inFlight_.load() == 0; }, milliseconds(10000));
    for (auto* zh : handles_) zookeeper_close(zh);
  }

  Load run(testing::SidecarCluster& cluster, const Window& w) {
    window_ = w;
    for (auto& c : clients_) start(c.get());
    Cpu cpu = measureWindow(cluster, 0, w);
    stop_ = true;
    testing::waitUntil([&] { return inFlight_.load() == 0; }, milliseconds(10000));
    Load out;
    out.cpu = cpu;
    std::lock_guard<std::mutex> lock(mu_);
    out.latency = std::move(latency_);
    out.cycles = out.latency.n();
    out.seconds = w.seconds();
    out.perSecond = double(out.cycles) / out.seconds;
    return out;
  }

 private:
  struct Logical {
    AsyncRecipeLoad* owner = nullptr;
    zhandle_t* zh = nullptr;
    std::string parent, prefix, node;
    Clock::time_point t0;
  };

  // One chain per logical client: in flight from start() until a completion ends it.
  void start(Logical* c) {
    ++inFlight_;
    issue(c);
  }
  void issue(Logical* c) {
    c->t0 = Clock::now();
    if (zoo_acreate2(c->zh, c->prefix.c_str(), "bench", 5, &ZOO_OPEN_ACL_UNSAFE,
                     ZOO_EPHEMERAL_SEQUENTIAL, &created, c) != ZOK) {
      fail(c);
    }
  }
  void fail(Logical*) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++latency_.failures;
    }
    --inFlight_;
  }
  // Completions run on the session's completion thread; the next request is sent from there.
  static void created(int rc, const char* value, const ::Stat*, const void* data) {
    auto* c = static_cast<Logical*>(const_cast<void*>(data));
    if (rc != ZOK) return c->owner->fail(c);
    c->node = value;
    if (zoo_aget_children(c->zh, c->parent.c_str(), 0, &listed, c) != ZOK) c->owner->fail(c);
  }
  static void listed(int rc, const String_vector*, const void* data) {
    auto* c = static_cast<Logical*>(const_cast<void*>(data));
    if (rc != ZOK) return c->owner->fail(c);
    if (zoo_adelete(c->zh, c->node.c_str(), -1, &deleted, c) != ZOK) c->owner->fail(c);
  }
  static void deleted(int rc, const void* data) {
    auto* c = static_cast<Logical*>(const_cast<void*>(data));
    AsyncRecipeLoad* self = c->owner;
    if (rc != ZOK) return self->fail(c);
    auto t1 = Clock::now();
    if (self->window_.holds(t1)) {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->latency_.add(nsBetween(c->t0, t1));
    }
    if (self->stop_) {
      --self->inFlight_;
    } else {
      self->issue(c);
    }
  }

  std::vector<zhandle_t*> handles_;
  std::vector<std::unique_ptr<Logical>> clients_;
  Window window_;
  std::atomic<bool> stop_{false};
  std::atomic<int> inFlight_{0};
  std::mutex mu_;
  Samples latency_;
};

Load rawLoad(const Options& opt, testing::SidecarCluster& cluster, size_t sessions,
             size_t logical) {
  AsyncRecipeLoad load(cluster.zk().connectString(), std::min(sessions, logical), logical);
  return load.run(cluster, openWindow(opt));
}

// ---- fencekeeper: one thread and one client (connection) per lock --------------------------

Load fencekeeperLoad(const Options& opt, testing::SidecarCluster& cluster, size_t sidecars,
                     size_t threads, const std::string& tag) {
  std::vector<std::unique_ptr<Client>> clients;
  for (size_t i = 0; i < threads; ++i) clients.push_back(cluster.connect(i % sidecars));
  std::vector<Samples> perThread(threads);
  std::atomic<bool> stop{false};
  Window w = openWindow(opt);
  std::vector<std::thread> workers;
  for (size_t i = 0; i < threads; ++i) {
    workers.emplace_back([&, i] {
      const std::string name = "bench-tp-" + tag + "-" + std::to_string(i);
      Samples cycle;
      // A release may answer before ZooKeeper confirmed the delete; the next acquire then queues
      // behind the old node for a moment, hence a wait.
      while (!stop && !g_stop) {
        cycle.ns.clear();
        fencekeeperCycle(*clients[i], name, cycle, milliseconds(5000));
        if (!cycle.ns.empty() && w.holds(Clock::now())) perThread[i].add(cycle.ns[0]);
        perThread[i].failures += cycle.failures;
        cycle.failures = 0;
      }
    });
  }
  Cpu cpu = measureWindow(cluster, sidecars, w);
  stop = true;
  for (auto& t : workers) t.join();
  Load out;
  out.cpu = cpu;
  for (auto& s : perThread) {
    out.latency.ns.insert(out.latency.ns.end(), s.ns.begin(), s.ns.end());
    out.latency.failures += s.failures;
  }
  out.cycles = out.latency.n();
  out.seconds = w.seconds();
  out.perSecond = double(out.cycles) / out.seconds;
  return out;
}

std::string rate(const Load& l, const Load* base, const std::string& baseId) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.0f cycles/s", l.perSecond);
  std::string out = buf;
  if (base && base->perSecond > 0)
    out += ", " + ratio(l.perSecond, base->perSecond, baseId.c_str());
  if (l.cycles) {
    const double us = 1e6 / double(l.cycles);
    std::snprintf(buf, sizeof buf, "; CPU/cycle %.0f us ZK, %.0f us bench", l.cpu.zk * us,
                  l.cpu.bench * us);
    out += buf;
    if (l.cpu.sidecars > 0) {
      std::snprintf(buf, sizeof buf, ", %.0f us sidecar", l.cpu.sidecars * us);
      out += buf;
    }
  }
  return out;
}

}  // namespace

void benchThroughput(const Options& opt, testing::SidecarCluster& cluster, Table& table) {
  progress("[7] throughput: %s\n", "1-256 threads, a lock each, vs the async C client");
  FILE* curve = std::fopen((opt.outDir + "/throughput.tsv").c_str(), "w");
  if (curve) std::fprintf(curve, "series\tclients\tcycles_per_s\tp50_ns\tp99_ns\n");
  auto record = [&](const char* series, size_t n, const Load& l) {
    if (curve) {
      std::fprintf(curve, "%s\t%zu\t%.1f\t%.0f\t%.0f\n", series, n, l.perSecond, l.latency.median(),
                   l.latency.p99());
    }
  };
  for (size_t n : {1, 4, 16, 64, 256}) {
    if (g_stop || Clock::now() + std::chrono::seconds(20) > g_deadline) break;
    const std::string k = std::to_string(n);
    progress("    %s clients\n", k);
    // Interleaved rounds per size, so load from elsewhere on the machine hits every series alike.
    Load raw1, fk1, raw4, fk4;
    const int rounds = opt.quick ? 1 : 2;
    for (int r = 0; r < rounds && !g_stop; ++r) {
      raw1.add(rawLoad(opt, cluster, 1, n));
      fk1.add(fencekeeperLoad(opt, cluster, 1, n, "a" + k));
      raw4.add(rawLoad(opt, cluster, 4, n));
      fk4.add(fencekeeperLoad(opt, cluster, 4, n, "b" + k));
    }
    table.add("7a" + k, "raw async C client, 1 session, " + k + " logical clients", raw1.latency,
              rate(raw1, nullptr, {}));
    table.add("7b" + k, "  fencekeeper, 1 sidecar, " + k + " threads", fk1.latency,
              rate(fk1, &raw1, "7a" + k));
    table.add("7c" + k, "raw async C client, 4 sessions, " + k + " logical", raw4.latency,
              rate(raw4, nullptr, {}));
    table.add("7d" + k, "  fencekeeper, 4 sidecars, " + k + " threads", fk4.latency,
              rate(fk4, &raw4, "7c" + k));
    record("raw-1-session", n, raw1);
    record("fencekeeper-1-sidecar", n, fk1);
    record("raw-4-sessions", n, raw4);
    record("fencekeeper-4-sidecars", n, fk4);
  }
  if (curve) std::fclose(curve);
  // What-if: 64 clients with ZooKeeper on a core of its own, the sidecar and the bench on the
  // other, as where the ensemble runs on other machines.
  if (g_stop || Clock::now() + std::chrono::seconds(20) > g_deadline) return;
  SeparateZkCore apart(cluster.zk().pid(0), {cluster.sidecar(0).pid()});
  if (!apart.active()) return;
  progress("    %s\n", "64 clients, ZooKeeper on a core of its own");
  Load raw, fk;
  for (int r = 0; r < (opt.quick ? 1 : 2) && !g_stop; ++r) {
    raw.add(rawLoad(opt, cluster, 1, 64));
    fk.add(fencekeeperLoad(opt, cluster, 1, 64, "apart64"));
  }
  table.add("7e64", "what-if: 7a64 with ZooKeeper on a core of its own", raw.latency,
            rate(raw, nullptr, {}));
  table.add("7f64", "  7b64 with ZooKeeper on a core of its own", fk.latency,
            rate(fk, &raw, "7e64"));
}

}  // namespace fencekeeper::bench
