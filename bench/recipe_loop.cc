// fk_recipe_loop ZKHOSTS COUNT: COUNT cycles of the lock recipe's minimum done directly with the
// ZooKeeper C client's synchronous API (create(EPHEMERAL_SEQUENTIAL), getChildren, delete on
// one lock), after 200 of warm-up, as the bench's row 6c; prints the time per cycle. The
// baseline side of bench/profile_timeline.sh.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "bench/zk_sync.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s ZKHOSTS COUNT\n", argv[0]);
    return 2;
  }
  const int count = std::atoi(argv[2]);
  try {
    // Resolves its hosts once every 10 s, as the sidecar's client does: by default the C client
    // resolves them on every I/O pass (bench row 5e), a cost the sidecar does not pay.
    fencekeeper::bench::ZkSync zk(argv[1], 10'000);
    const std::string parent = "/fk-recipe-loop";
    zk.ensurePath(parent);
    auto cycle = [&] {
      std::string path;
      return zk.createSeq(parent + "/lock-", &path) && zk.children(parent) && zk.remove(path);
    };
    for (int i = 0; i < 200; ++i) {
      if (!cycle()) return 1;
    }
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) {
      if (!cycle()) return 1;
    }
    std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    std::printf("%d recipe cycles, %.1f us each\n", count, count ? took.count() / count : 0.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
