#include "sidecar/rpc/read_buffered_stream.h"

#include <algorithm>
#include <cstring>

namespace fencekeeper::rpc {

size_t ReadBufferedStream::take(kj::byte* out, size_t max) {
  size_t n = std::min(max, end_ - begin_);
  if (n == 0) return 0;  // (`out` may be null: a read of nothing)
  std::memcpy(out, buffer_ + begin_, n);
  begin_ += n;
  return n;
}

kj::Promise<size_t> ReadBufferedStream::tryRead(void* buffer, size_t minBytes, size_t maxBytes) {
  auto* out = static_cast<kj::byte*>(buffer);
  size_t got = take(out, maxBytes);
  if (got >= minBytes) return got;
  // A read larger than the buffer (a big message's segments) goes to the stream directly.
  if (maxBytes - got >= sizeof buffer_) {
    return inner_->tryRead(out + got, minBytes - got, maxBytes - got).then([got](size_t n) {
      return got + n;
    });
  }
  begin_ = end_ = 0;
  return inner_->tryRead(buffer_, 1, sizeof buffer_).then([this, out, got, minBytes, maxBytes](
                                                              size_t n) -> kj::Promise<size_t> {
    end_ = n;
    size_t now = got + take(out + got, maxBytes - got);
    if (n == 0 || now >= minBytes) return now;  // n == 0: the end of the stream
    return tryRead(out + now, minBytes - now, maxBytes - now).then([now](size_t more) {
      return now + more;
    });
  });
}

}  // namespace fencekeeper::rpc
