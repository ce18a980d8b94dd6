// Blocking Unix-socket I/O of raw RPC frames (tests/support/rpc_frames.h), for the flood tool and
// for tests that read what the client library does not show.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "tests/support/rpc_frames.h"

namespace fencekeeper::rpcframes {

// A connected stream socket, or -1.
int dial(const std::string& path, bool nonBlocking = false);
// Writes all of `bytes`; false when the peer closed the connection or `deadline` passed.
bool writeAll(int fd, const void* bytes, size_t size,
              std::chrono::steady_clock::time_point deadline);
bool writeFrame(int fd, const Frame& frame, std::chrono::steady_clock::time_point deadline);

// Status.accepting and acceptFailures over a connection of its own, opened at construction (the
// client library shows neither). Throws when the sidecar does not answer.
class RawStatusReader {
 public:
  explicit RawStatusReader(const std::string& socket);
  ~RawStatusReader();
  RawStatusReader(const RawStatusReader&) = delete;
  RawStatusReader& operator=(const RawStatusReader&) = delete;

  struct Accepting {
    bool accepting = false;
    uint64_t acceptFailures = 0;
  };
  Accepting read();

 private:
  int fd_;
  uint32_t nextQuestion_ = 1;
};

}  // namespace fencekeeper::rpcframes
