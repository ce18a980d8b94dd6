#include "bench/kazoo_row.h"

#include <fstream>
#include <functional>

#include "bench/cpu_placement.h"
#include "bench/cycles.h"
#include "bench/zk_sync.h"
#include "tests/support/child_process.h"

namespace fencekeeper::bench {
namespace {

using std::chrono::milliseconds;

// Runs one round of kazoo cycles in its own Python process (a fresh session each round, outside
// the timing) and adds its samples. Bounded: the script stops itself, and is killed past that.
void kazooRound(testing::SidecarCluster& cluster, int cycles, Samples& out) {
  const std::string samples = cluster.newLogPath("kazoo-samples");
  testing::ChildProcess py({"/usr/bin/python3", FK_BENCH_SOURCE_DIR "/kazoo_lock.py", "--hosts",
                            cluster.zk().connectString(), "--cycles", std::to_string(cycles),
                            "--seconds", "20", "--samples", samples},
                           cluster.newLogPath("kazoo"));
  int rc = py.wait(milliseconds(30000));
  if (rc != 0) {
    ++out.failures;
    progress("    kazoo round failed: %s\n", py.log());
  }
  std::ifstream in(samples);
  double v;
  while (in >> v) out.add(v);
}

}  // namespace

void benchKazoo(const Options& opt, testing::SidecarCluster& cluster, Table& table) {
  progress("[6] %s\n", "kazoo Lock vs fencekeeper acquire+release vs the recipe's minimum");
  ZkSync zk(cluster.zk().connectString());
  // The C client as the sidecar sets it up: its hosts resolved once every 10 s, not on every
  // I/O pass (the default, which 6c keeps; row 5e).
  ZkSync zkResolvedOnce(cluster.zk().connectString(), 10'000);
  const std::string parent = "/bench/kazoo-baseline";
  zk.ensurePath(parent);
  auto client = cluster.connect(0);
  Samples kazoo, fk, recipe, recipeResolvedOnce, pipelined, ignored;
  for (int i = 0; i < 20; ++i) {  // warm-up (kazoo warms up in each of its processes)
    recipeCycle(zk, parent, ignored);
    recipeCycle(zkResolvedOnce, parent, ignored);
    pipelinedRecipeCycle(zkResolvedOnce, parent, ignored);
    fencekeeperCycle(*client, "bench-kazoo-fk", ignored);
  }
  const int rounds = 5;
  const int perRound = opt.count(200, 40) / rounds;
  Cap cap(std::chrono::seconds(opt.quick ? 25 : 60));
  // The C client's series take turns cycle by cycle, so that whatever disturbs a stretch of a
  // round (kazoo's process ending, ZooKeeper's collector) falls on each of them alike.
  const std::function<void()> series[] = {
      [&] { fencekeeperCycle(*client, "bench-kazoo-fk", fk); },
      [&] { recipeCycle(zk, parent, recipe); },
      [&] { recipeCycle(zkResolvedOnce, parent, recipeResolvedOnce); },
      [&] { pipelinedRecipeCycle(zkResolvedOnce, parent, pipelined); },
  };
  for (int r = 0; r < rounds && !cap.over(); ++r) {
    kazooRound(cluster, perRound, kazoo);
    for (int i = 0; i < perRound && !cap.over(); ++i) {
      for (const auto& cycle : series) cycle();
    }
  }
  // What-if: ZooKeeper on a core of its own, the sidecar and the bench on another, as where
  // the ensemble runs on other machines; 6b's and 6d's cycles again, in rounds.
  Samples fkApart, recipeApart;
  {
    SeparateZkCore apart(cluster.zk().pid(0), {cluster.sidecar(0).pid()});
    Cap whatIfCap(std::chrono::seconds(opt.quick ? 10 : 25));
    for (int r = 0; apart.active() && r < rounds && !whatIfCap.over(); ++r) {
      for (int i = 0; i < perRound && !whatIfCap.over(); ++i)
        fencekeeperCycle(*client, "bench-kazoo-fk", fkApart);
      for (int i = 0; i < perRound && !whatIfCap.over(); ++i)
        recipeCycle(zkResolvedOnce, parent, recipeApart);
    }
  }
  table.add("6a", "kazoo Lock acquire+release (python3-kazoo 2.8)", kazoo,
            ratio(kazoo.median(), recipe.median(), "6c"));
  table.add("6b", "fencekeeper acquire+release, same rounds", fk,
            ratio(fk.median(), recipe.median(), "6c (target <=1.15)") + ", " +
                ratio(fk.median(), kazoo.median(), "6a (target <1)") + ", " +
                ratio(fk.median(), recipeResolvedOnce.median(), "6d"));
  table.add("6c", "  recipe minimum: C client create+getChildren+delete", recipe);
  table.add("6d", "  6c with the hosts resolved once per 10 s, as the sidecar", recipeResolvedOnce);
  // 6b's floor: what 6g waits for ZooKeeper plus two Cap'n Proto calls (row 1d).
  table.add("6g", "  6d's client, the sidecar's requests: create+getChildren together, delete",
            pipelined, ratio(pipelined.median(), recipeResolvedOnce.median(), "6d") + ", " +
                           ratio(fk.median(), pipelined.median(), "6b/6g"));
  if (fkApart.n() == 0) return;  // one CPU: no core to give ZooKeeper
  table.add("6e", "what-if: 6b with ZooKeeper on a core of its own", fkApart,
            ratio(fkApart.median(), recipeApart.median(), "6f") + ", " +
                ratio(fkApart.median(), fk.median(), "6b"));
  table.add("6f", "  6d with ZooKeeper on a core of its own", recipeApart,
            ratio(recipeApart.median(), recipeResolvedOnce.median(), "6d"));
}

}  // namespace fencekeeper::bench
