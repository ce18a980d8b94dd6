// The sidecar's bounds on what a client sends, below the RPC system: a 152-byte message with a
// capability table of a million empty entries used to cost 20 ms of loop time and 16 MB (issue 9).
#include "sidecar/rpc/message_limits.h"

#include <capnp/rpc.capnp.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>
#include <kj/async.h>

#include <chrono>

#include "tests/support/rpc_frames.h"

namespace fencekeeper::rpc {
namespace {

namespace frames = rpcframes;

// Writes `frame` into one end of a pipe and reads it back through a BoundedMessageStream.
// Returns the refusal's description, or "" when the message was read.
std::string readThrough(const frames::Frame& frame, std::chrono::microseconds* took = nullptr) {
  kj::EventLoop loop;
  kj::WaitScope waitScope(loop);
  auto pipe = kj::newTwoWayPipe();
  BoundedMessageStream messages(*pipe.ends[1]);
  auto written = pipe.ends[0]->write(frame.asBytes().begin(), frame.asBytes().size());
  auto start = std::chrono::steady_clock::now();
  std::string refusal;
  try {
    messages.tryReadMessage(nullptr, clientReaderOptions(), nullptr).wait(waitScope);
  } catch (const kj::Exception& e) {
    refusal = e.getDescription().cStr();
    if (refusal.empty()) refusal = "refused";
  }
  if (took) {
    *took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                  start);
  }
  pipe.ends[1] = nullptr;  // a refused read leaves the rest of a big frame unwritten
  written.then([] {}, [](kj::Exception&&) {}).wait(waitScope);
  return refusal;
}

TEST(MessageLimitsTest, AMillionEntryCapabilityTableIsRefusedCheaply) {
  auto frame = frames::hugeCapTable(1, 0, 1'000'000);
  EXPECT_LE(frame.size() * sizeof(capnp::word), 256u) << "the frame is a few words";
  std::chrono::microseconds took{};
  std::string refusal = readThrough(frame, &took);
  EXPECT_NE(refusal, "");  // by the traversal limit: each empty entry is charged a word
  std::printf("a million-entry capability table refused after %lld us: %s\n",
              static_cast<long long>(took.count()), refusal.c_str());
}

// Below the traversal limit, the stream's own bound.
TEST(MessageLimitsTest, EightCapabilitiesPassNineAreRefused) {
  EXPECT_EQ(readThrough(frames::hugeCapTable(1, 0, kMaxCapTableEntries)), "");
  EXPECT_NE(
      readThrough(frames::hugeCapTable(1, 0, kMaxCapTableEntries + 1)).find("capability table"),
      std::string::npos);
  EXPECT_NE(readThrough(frames::hugeCapTable(1, 0, 4000)).find("capability table"),
            std::string::npos);
}

// Found by fuzz_rpc_bytes: Cap'n Proto 0.9 mishandles "send the results to yourself" on a
// two-party connection (a promise callback destroys itself); no client of the sidecar needs it.
TEST(MessageLimitsTest, ACallWhoseResultsGoElsewhereThanItsCallerIsRefused) {
  auto plain = frames::status(1, 0);
  EXPECT_EQ(readThrough(plain), "");
  capnp::FlatArrayMessageReader reader(plain);
  capnp::MallocMessageBuilder builder;
  builder.setRoot(reader.getRoot<capnp::rpc::Message>());
  builder.getRoot<capnp::rpc::Message>().getCall().getSendResultsTo().setYourself();
  std::string refusal = readThrough(capnp::messageToFlatArray(builder));
  EXPECT_NE(refusal.find("results go elsewhere"), std::string::npos) << refusal;
}

TEST(MessageLimitsTest, RequestsOfThisApiPassAndBigMessagesAreRefused) {
  EXPECT_EQ(readThrough(frames::acquire(1, 0, std::string(200, 'n'), 1000, 0)), "");
  EXPECT_EQ(readThrough(frames::status(1, 0)), "");
  EXPECT_NE(readThrough(frames::bigName(1, 0, kMaxMessageWords * sizeof(capnp::word))), "");
}

}  // namespace
}  // namespace fencekeeper::rpc
