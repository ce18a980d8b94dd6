#include "bench/suite.h"

#include <filesystem>
#include <memory>

#include "bench/herd.h"
#include "bench/scale.h"
#include "bench/throughput.h"
#include "tests/support/child_process.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::bench {

void benchSuite(const Options& opt, Table& table) {
  progress("starting ZooKeeper (%s) and 4 sidecars for throughput, herd and scale\n", "fsync on");
  devzk::ZkServerOptions zo;
  zo.javaHeap = opt.full ? "1g" : "512m";  // 100k leases are 200k znodes
  testing::SidecarCluster cluster(zo);
  testing::SidecarOptions so;
  // 256 client threads of throughput, each with a connection; the other limits' defaults suffice.
  so.extraArgs = {"--log-level", opt.sidecarLogLevel, "--max-connections", "1024"};
  for (int i = 0; i < 4; ++i) cluster.startSidecar(so);
  progress("    cluster in %s\n", cluster.dir());
  if (opt.want("throughput") && !g_stop) benchThroughput(opt, cluster, table);
  if (opt.want("herd") && !g_stop) benchHerd(opt, cluster, table);
  if (opt.want("scale") && !g_stop) benchScale(opt, cluster, table);
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
