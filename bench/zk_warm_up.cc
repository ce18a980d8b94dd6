#include "bench/zk_warm_up.h"

#include <cmath>
#include <cstdio>

#include "bench/cycles.h"

namespace fencekeeper::bench {

void warmUpZooKeeper(testing::SidecarCluster& cluster, const Cap& cap) {
  ZkSync zk(cluster.zk().connectString(), 10'000);
  const std::string parent = "/bench/warm-up";
  zk.ensurePath(parent);
  auto client = cluster.connect(0);
  auto started = Clock::now();
  double first = NAN, last = NAN;
  int rounds = 0;
  while (!cap.over()) {
    Samples recipe, ignored;
    for (int i = 0; i < 250 && !cap.over(); ++i) {
      recipeCycle(zk, parent, recipe);
      fencekeeperCycle(*client, "bench-warm-up", ignored);
    }
    last = recipe.median();
    if (rounds++ == 0) first = last;
  }
  std::fprintf(stderr,
               "    ZooKeeper warm-up: %d rounds in %.1f s; the recipe's median %.0f us in the "
               "first, %.0f us in the last\n",
               rounds, nsBetween(started, Clock::now()) / 1e9, first / 1e3, last / 1e3);
}

}  // namespace fencekeeper::bench
