// First-segment sizes for the RPC's messages. Without a hint Cap'n Proto allocates and zeroes
// 8 KiB for every call and every answer: a third of the instructions of a token() round trip on
// each side went to that memset and its malloc and free (callgrind, docs/benchmarks.md).
#pragma once

#include <capnp/message.h>

#include <cstddef>

namespace fencekeeper::ipc {

// Room for one T holding `textBytes` of text in all and `caps` capabilities. Too small only
// costs a second segment.
template <typename T>
capnp::MessageSize sizeFor(size_t textBytes = 0, unsigned caps = 0) {
  return {capnp::sizeInWords<T>() + textBytes / 8 + 4, caps};
}

}  // namespace fencekeeper::ipc
