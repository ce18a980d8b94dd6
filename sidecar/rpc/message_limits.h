// What the sidecar reads from a client, bounded to what this API needs: a request is a few
// hundred bytes (a name of at most 200, an owner label), nests five levels and carries at most
// one capability (an acquire's watcher). A message past these bounds ends its connection before
// the RPC system does any work for it (issue 9: a 152-byte message with a capability table of a
// million empty entries cost 20 ms of loop time and 16 MB, under the library's defaults).
#pragma once

#include <capnp/message.h>
#include <capnp/serialize-async.h>
#include <kj/async-io.h>

#include <cstdint>
#include <string>

namespace fencekeeper::rpc {

// Words per message (its size on the wire, and what reading it may traverse), and depth.
constexpr uint64_t kMaxMessageWords = 8 * 1024;  // 64 KiB
constexpr int kMaxNesting = 8;
// Entries in one message's capability table. Cap'n Proto 0.9.2 has no such limit: zero-sized
// entries cost nothing on the wire and are charged one word each against the traversal limit.
constexpr uint32_t kMaxCapTableEntries = 8;

capnp::ReaderOptions clientReaderOptions();
// The network's options: Cap'n Proto refuses to send a message over its own receive limit, and
// status() lists every lease (about 100 bytes each).
constexpr uint64_t kMaxReplyWords = 8 * 1024 * 1024;  // 64 MiB
capnp::ReaderOptions replyOptions();

// The client's messages over `stream`, each refused (an exception: the RPC system closes the
// connection with it) when its capability table is over kMaxCapTableEntries. Loop thread.
class BoundedMessageStream final : public capnp::MessageStream {
 public:
  explicit BoundedMessageStream(kj::AsyncIoStream& stream) : inner_(stream) {}

  kj::Promise<kj::Maybe<capnp::MessageReaderAndFds>> tryReadMessage(
      kj::ArrayPtr<kj::AutoCloseFd> fdSpace, capnp::ReaderOptions options,
      kj::ArrayPtr<capnp::word> scratchSpace) override;
  kj::Promise<void> writeMessage(
      kj::ArrayPtr<const int> fds,
      kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments) override {
    return inner_.writeMessage(fds, segments);
  }
  kj::Promise<void> writeMessages(
      kj::ArrayPtr<kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>>> messages) override {
    return inner_.writeMessages(messages);
  }
  kj::Maybe<int> getSendBufferSize() override { return inner_.getSendBufferSize(); }
  kj::Promise<void> end() override { return inner_.end(); }
  // Why reading failed (a refused or malformed message, a read error), empty while it has not.
  const std::string& failure() const { return failure_; }

 private:
  capnp::AsyncIoMessageStream inner_;
  std::string failure_;
};

}  // namespace fencekeeper::rpc
