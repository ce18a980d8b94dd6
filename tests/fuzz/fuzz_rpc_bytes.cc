// libFuzzer target: arbitrary bytes as a client's side of the lease socket, into the sidecar's real
// RPC server (framing, cap tables, unknown interfaces and methods, bad names and TTLs all go
// through). The input is written one frame at a time, the sidecar settling in between, as a client
// would; time then moves past every wait and TTL, the client hangs up, and the sidecar must have
// withdrawn everything that connection had.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tests/fuzz/sidecar_under_test.h"

namespace fk = fencekeeper;

namespace {

// The length of the Cap'n Proto frame at the start of `data` (segment table and segments), or
// all of it when the table does not fit: the rest goes in one write.
size_t firstFrame(const uint8_t* data, size_t size) {
  auto word = [&](size_t i) {
    uint32_t v;
    std::memcpy(&v, data + 4 * i, 4);
    return v;
  };
  if (size < 8) return size;
  uint64_t segments = uint64_t{word(0)} + 1;
  uint64_t table = (4 + 4 * segments + 7) / 8 * 8;
  if (table > size) return size;
  uint64_t length = table;
  for (uint64_t i = 0; i < segments; ++i) length += uint64_t{word(1 + i)} * 8;
  return length < size ? length : size;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fk::fuzz::SidecarUnderTest sidecar;
  auto& client = sidecar.client();
  {
    auto replies = fk::fuzz::discardAll(client).eagerlyEvaluate([](kj::Exception&&) {});
    bool open = true;
    while (size > 0 && open) {
      size_t frame = firstFrame(data, size);
      bool written = false;
      auto sent = kj::evalNow([&] { return client.write(data, frame); })
                      .then([&written] { written = true; },
                            // The sidecar may close a connection that sent garbage.
                            [&open](kj::Exception&&) { open = false; })
                      .eagerlyEvaluate(nullptr);
      sidecar.settle();
      // A sidecar that stopped reading (closed, or holding the connection back) gets no more.
      if (!written) open = false;
      data += frame;
      size -= frame;
    }
    for (fk::Millis step : {fk::Millis(500), fk::Millis(30'000), fk::Millis(3'600'000)}) {
      sidecar.advance(step);
      sidecar.checkHeldLeases();
    }
  }
  sidecar.disconnectAndCheckNothingLeft();
  return 0;
}
