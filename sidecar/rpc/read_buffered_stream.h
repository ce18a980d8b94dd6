// A connection's stream with its reads coalesced: Cap'n Proto reads a message in pieces (its
// first word, then the rest), one read() each, and then one more that finds nothing. Here one
// read() takes what the socket holds (up to 8 KiB) and the pieces are served from it: about half
// the read() calls of a lock cycle (issue 25: system calls per cycle). Writes and everything else
// go straight to the stream. Loop thread only.
#pragma once

#include <kj/async-io.h>

namespace fencekeeper::rpc {

class ReadBufferedStream final : public kj::AsyncIoStream {
 public:
  explicit ReadBufferedStream(kj::Own<kj::AsyncIoStream> inner) : inner_(kj::mv(inner)) {}

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override;
  kj::Promise<void> write(const void* buffer, size_t size) override {
    return inner_->write(buffer, size);
  }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    return inner_->write(pieces);
  }
  kj::Promise<void> whenWriteDisconnected() override { return inner_->whenWriteDisconnected(); }
  void shutdownWrite() override { inner_->shutdownWrite(); }
  void abortRead() override { inner_->abortRead(); }
  void getsockopt(int level, int option, void* value, kj::uint* length) override {
    inner_->getsockopt(level, option, value, length);
  }
  void setsockopt(int level, int option, const void* value, kj::uint length) override {
    inner_->setsockopt(level, option, value, length);
  }
  void getsockname(struct sockaddr* addr, kj::uint* length) override {
    inner_->getsockname(addr, length);
  }
  void getpeername(struct sockaddr* addr, kj::uint* length) override {
    inner_->getpeername(addr, length);
  }
  kj::Maybe<int> getFd() const override { return inner_->getFd(); }

 private:
  // Copies what the buffer holds into `out`, up to `max` bytes; returns how many.
  size_t take(kj::byte* out, size_t max);

  kj::Own<kj::AsyncIoStream> inner_;
  kj::byte buffer_[8192];
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace fencekeeper::rpc
