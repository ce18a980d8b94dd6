#include "bench/suite.h"

#include <exception>
#include <filesystem>
#include <memory>

#include "bench/herd.h"
#include "bench/scale.h"
#include "bench/throughput.h"
#include "tests/support/child_process.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::bench {

void benchSuite(const Options& opt, Table& table) {
  progress("starting ZooKeeper (%s) and sidecars for throughput, herd and scale\n", "fsync on");
  devzk::ZkServerOptions zo;
  zo.javaHeap = opt.full ? "1g" : "512m";  // 100k leases are 200k znodes
  testing::SidecarCluster cluster(zo);
  testing::SidecarOptions so;
  // The production default: at 2 s (rows 1-5) a loop stalled by a loaded machine lapses the
  // session's vouching, and every lease of that sidecar is lost mid-measurement.
  so.sessionTimeout = "10s";
  // 256 client threads of throughput, each with a connection; the other limits' defaults suffice.
  so.extraArgs = {"--log-level", opt.sidecarLogLevel, "--max-connections", "1024"};
  if (opt.want("throughput") || opt.want("herd")) {
    for (int i = 0; i < 4; ++i) cluster.startSidecar(so);
  }
  progress("    cluster in %s\n", cluster.dir());
  // A section that fails says so in the table; the others still run.
  auto section = [&](const char* name,
                     void (*run)(const Options&, testing::SidecarCluster&, Table&)) {
    if (!opt.want(name) || g_stop) return;
    try {
      run(opt, cluster, table);
    } catch (const std::exception& e) {
      progress("    %s\n", std::string(name) + " failed: " + e.what());
      table.addValue("!", std::string(name) + " FAILED", 0, "-", e.what());
    }
  };
  section("throughput", benchThroughput);
  section("herd", benchHerd);
  section("scale", benchScale);
  progress("stopping ZooKeeper and sidecars%s\n", "");
}

void writePlots(const Options& opt, const Table& table) {
  const std::string samples = opt.outDir + "/samples";
  std::error_code ec;
  std::filesystem::remove_all(samples, ec);
  std::filesystem::create_directories(samples, ec);
  if (ec || !table.writeSamples(samples)) {
    progress("plots: cannot write samples into %s\n", samples);
    return;
  }
  testing::ChildProcess py({"/usr/bin/python3", FK_BENCH_SOURCE_DIR "/plots.py", opt.outDir},
                           opt.outDir + "/plots.log");
  int rc = py.wait(std::chrono::milliseconds(60000));
  if (rc != 0) {
    progress("plots: bench/plots.py failed (exit or timeout), see %s\n", py.logPath());
    return;
  }
  progress("plots: PNGs in %s (bench/plots.py; samples in samples/)\n", opt.outDir);
}

}  // namespace fencekeeper::bench
