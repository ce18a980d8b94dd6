// A stand-in for a test that crashes: starts ZooKeeper, a sidecar and a fenced store the way
// tests do (SidecarCluster, FencedStoreProcess), writes their pids to DIR/pids, one a line, and
// waits to be killed. DIR/cluster names the cluster's directory, for the test to remove.
//   cluster-harness DIR
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "tests/support/fenced_store_process.h"
#include "tests/support/sidecar_cluster.h"

using namespace fencekeeper::testing;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cluster-harness DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  SidecarCluster cluster;
  cluster.startSidecar();
  FencedStoreProcess store(FENCED_STORE_BIN, cluster.dir());
  std::ofstream(dir + "/cluster") << cluster.dir() << "\n";
  {
    std::ofstream out(dir + "/pids.tmp");
    out << cluster.zk().pid(0) << "\n"
        << cluster.sidecar(0).pid() << "\n"
        << store.process().pid() << "\n";
  }
  std::rename((dir + "/pids.tmp").c_str(), (dir + "/pids").c_str());
  for (;;) pause();
}
