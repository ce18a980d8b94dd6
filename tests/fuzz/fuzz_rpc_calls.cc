// libFuzzer target: the input is a script of well-formed Sidecar/Lease calls with fuzzed names,
// TTLs, waits and labels, interleaved with time steps, session expiry and other ZooKeeper
// clients' nodes (call_script.h), with oracles on every answer: tokens of a lock rise strictly,
// one holder per lock, nothing succeeds on a released lease, nothing is left after hang-up.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/call_script.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fencekeeper::fuzz::runCallScript(data, size);
  return 0;
}
