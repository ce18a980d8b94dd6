// Prints how far the client library's clock is ahead of CLOCK_MONOTONIC, in ms: run in a time
// namespace whose CLOCK_BOOTTIME was moved (unshare --time --boottime), it shows which clock the
// client reads.
#include <time.h>

#include <cstdio>

#include "client_lib/src/boot_clock.h"

int main() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  auto monotonic = std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  auto ahead = fencekeeper::BootClock::now().time_since_epoch() - monotonic;
  std::printf("%lld\n", static_cast<long long>(
                            std::chrono::duration_cast<std::chrono::milliseconds>(ahead).count()));
  return 0;
}
