// ReadBufferedStream: pieces are served from one read of what the socket holds, reads of nothing
// and reads larger than its buffer work, and the end of the stream is passed on.
#include "sidecar/rpc/read_buffered_stream.h"

#include <gtest/gtest.h>
#include <kj/async-io.h>

#include <string>
#include <vector>

namespace fencekeeper::rpc {
namespace {

TEST(ReadBufferedStream, PiecesNothingAndBigReadsComeInOrderThenTheEnd) {
  auto io = kj::setupAsyncIo();
  auto pipe = io.provider->newTwoWayPipe();
  ReadBufferedStream reader(kj::mv(pipe.ends[0]));
  std::string big(20'000, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  std::string sent = "0123456789" + big + "tail";
  pipe.ends[1]->write(sent.data(), sent.size()).wait(io.waitScope);
  pipe.ends[1]->shutdownWrite();

  std::string got;
  char piece[8];
  EXPECT_EQ(reader.tryRead(piece, 4, 4).wait(io.waitScope), 4u);
  got.append(piece, 4);
  EXPECT_EQ(reader.tryRead(nullptr, 0, 0).wait(io.waitScope), 0u);  // a read of nothing
  EXPECT_EQ(reader.tryRead(piece, 6, 6).wait(io.waitScope), 6u);
  got.append(piece, 6);
  std::vector<char> large(big.size());  // larger than the buffer: partly from it, then direct
  EXPECT_EQ(reader.tryRead(large.data(), large.size(), large.size()).wait(io.waitScope),
            large.size());
  got.append(large.data(), large.size());
  char rest[16];
  size_t n = reader.tryRead(rest, sizeof rest, sizeof rest).wait(io.waitScope);
  EXPECT_EQ(n, 4u) << "the end of the stream comes before the minimum";
  got.append(rest, n);
  EXPECT_EQ(got, sent);
  EXPECT_EQ(reader.tryRead(rest, 1, sizeof rest).wait(io.waitScope), 0u);
}

}  // namespace
}  // namespace fencekeeper::rpc
