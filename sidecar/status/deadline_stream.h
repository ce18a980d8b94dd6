// A status connection whose every write must complete within a deadline: an answer the peer does
// not read (its socket buffer full) fails the write as DISCONNECTED, which closes the connection,
// instead of keeping it, and its slot, for as long as the peer likes. Runs on the loop thread;
// owns the connection it wraps.
#pragma once

#include <kj/async-io.h>
#include <kj/timer.h>

namespace fencekeeper::status {

class DeadlineStream final : public kj::AsyncIoStream {
 public:
  DeadlineStream(kj::Own<kj::AsyncIoStream> inner, kj::Timer& timer, kj::Duration writeTimeout)
      : inner_(kj::mv(inner)), timer_(timer), writeTimeout_(writeTimeout) {}

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override {
    return inner_->tryRead(buffer, minBytes, maxBytes);
  }
  kj::Promise<void> write(const void* buffer, size_t size) override {
    return bounded(inner_->write(buffer, size));
  }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    return bounded(inner_->write(pieces));
  }
  kj::Promise<void> whenWriteDisconnected() override { return inner_->whenWriteDisconnected(); }
  void shutdownWrite() override { inner_->shutdownWrite(); }
  void abortRead() override { inner_->abortRead(); }
  kj::Maybe<int> getFd() const override { return inner_->getFd(); }

 private:
  kj::Promise<void> bounded(kj::Promise<void> write);

  kj::Own<kj::AsyncIoStream> inner_;
  kj::Timer& timer_;
  kj::Duration writeTimeout_;
};

}  // namespace fencekeeper::status
