// Raw Cap'n Proto RPC frames for the flood tool (tests/fault/flood_tool.cc) and the reader-limit
// tests: the messages a real client sends, and the malformed or oversized ones a hostile one
// could, as flat byte arrays ready for write(2). Nothing here talks to a socket.
#pragma once

#include <capnp/message.h>
#include <kj/array.h>

#include <cstdint>
#include <string>

namespace fencekeeper::rpcframes {

using Frame = kj::Array<capnp::word>;

// Message.bootstrap with this question id: its answer is the Sidecar capability.
Frame bootstrap(uint32_t questionId);
// Sidecar calls on the bootstrap's promised answer (question `bootstrapId`).
Frame acquire(uint32_t questionId, uint32_t bootstrapId, const std::string& name, uint32_t ttlMs,
              uint32_t waitMs);
Frame holder(uint32_t questionId, uint32_t bootstrapId, const std::string& name);
Frame status(uint32_t questionId, uint32_t bootstrapId);
// Message.finish keeping the answer's capabilities (a client that hoards its leases).
Frame finish(uint32_t questionId);

// An acquire whose params carry a capability table of `entries` empty descriptors, in a frame of a
// few words: zero-sized list elements take no space on the wire.
Frame hugeCapTable(uint32_t questionId, uint32_t bootstrapId, uint32_t entries);
// An acquire whose params content nests `depth` structs.
Frame deepNesting(uint32_t questionId, uint32_t bootstrapId, unsigned depth);
// An acquire whose name is `bytes` long.
Frame bigName(uint32_t questionId, uint32_t bootstrapId, size_t bytes);
// A status call split over `segments` segments (far pointers between them).
Frame manySegments(uint32_t questionId, uint32_t bootstrapId, unsigned segments);

// What came back: the kind of message and, for a Return, its answer id.
struct Incoming {
  bool isReturn = false;
  uint32_t answerId = 0;
};
Incoming classify(capnp::MessageReader& message);

}  // namespace fencekeeper::rpcframes
