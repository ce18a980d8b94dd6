// What every section of fk_bench shares: its options, the run's budget and stop flag, bounded
// loops.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>

#include "bench/stats.h"
#include "fencekeeper/client.h"

namespace fencekeeper::bench {

inline std::atomic<bool> g_stop{false};  // SIGINT/SIGTERM: every loop ends, then cleanup
inline Clock::time_point g_deadline;     // the whole run's budget

struct Options {
  bool quick = false;
  bool full = false;           // also the slow rows (100k leases)
  std::set<std::string> only;  // empty: everything
  std::string tsv;
  std::string outDir;  // samples, curves and plots (default: the build dir)
  std::string sidecarLogLevel = "info";
  int budgetSeconds = 200;
  bool keepLogs = false;

  bool want(const std::string& section) const { return only.empty() || only.count(section); }
  // Sample counts: full, or a fraction for --quick (never below `floor`).
  int count(int full, int floor = 10) const { return quick ? std::max(floor, full / 4) : full; }
};

// A section's time cap, never past the run's budget.
struct Cap {
  Clock::time_point end;
  explicit Cap(Clock::duration d) : end(std::min(Clock::now() + d, g_deadline)) {}
  bool over() const { return g_stop.load() || Clock::now() >= end; }
};

// Lease options for measurements: no keep-alive, so no renew traffic (TTLs are far longer than a
// run).
inline AcquireOptions leaseOptions(
    std::chrono::milliseconds wait,
    std::chrono::milliseconds ttl = std::chrono::milliseconds(30000)) {
  AcquireOptions o;
  o.wait = wait;
  o.ttl = ttl;
  o.keepAlive = false;
  o.ownerLabel = "bench";
  return o;
}

inline void progress(const char* fmt, const std::string& what) {
  std::fprintf(stderr, fmt, what.c_str());
  std::fflush(stderr);
}

}  // namespace fencekeeper::bench
