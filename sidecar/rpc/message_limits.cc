#include "sidecar/rpc/message_limits.h"

#include <capnp/rpc.capnp.h>
#include <kj/debug.h>

namespace fencekeeper::rpc {

namespace {

void checkCapTable(capnp::rpc::Payload::Reader payload) {
  auto entries = payload.getCapTable().size();
  KJ_REQUIRE(entries <= kMaxCapTableEntries, "capability table over the sidecar's bound", entries,
             kMaxCapTableEntries);
}

// Only calls and returns carry capability tables (rpc.capnp: Payload).
void checkMessage(capnp::MessageReader& message) {
  auto root = message.getRoot<capnp::rpc::Message>();
  switch (root.which()) {
    case capnp::rpc::Message::CALL:
      checkCapTable(root.getCall().getParams());
      // "Send the results to yourself" is for tail calls through a third party; a client of the
      // sidecar has none. Cap'n Proto 0.9 mishandles it on a two-party connection (fuzz_rpc_bytes:
      // a promise callback destroys itself, and the exception's text leaks).
      KJ_REQUIRE(root.getCall().getSendResultsTo().isCaller(),
                 "a call whose results go elsewhere than to its caller");
      break;
    case capnp::rpc::Message::RETURN:
      if (root.getReturn().isResults()) checkCapTable(root.getReturn().getResults());
      break;
    default:
      break;
  }
}

}  // namespace

capnp::ReaderOptions replyOptions() {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = kMaxReplyWords;
  return options;
}

capnp::ReaderOptions clientReaderOptions() {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = kMaxMessageWords;
  options.nestingLimit = kMaxNesting;
  return options;
}

kj::Promise<kj::Maybe<capnp::MessageReaderAndFds>> BoundedMessageStream::tryReadMessage(
    kj::ArrayPtr<kj::AutoCloseFd> fdSpace, capnp::ReaderOptions,
    kj::ArrayPtr<capnp::word> scratchSpace) {
  // The network's own options bound what it sends too (a status() answer listing every lease):
  // what it reads is bounded here instead.
  return inner_.tryReadMessage(fdSpace, clientReaderOptions(), scratchSpace)
      .then([](kj::Maybe<capnp::MessageReaderAndFds> read) {
        KJ_IF_MAYBE (m, read) {
          checkMessage(*m->reader);
        }
        return read;
      })
      .catch_([this](kj::Exception&& e) -> kj::Maybe<capnp::MessageReaderAndFds> {
        // A reset is the peer going away, not something it sent.
        if (e.getType() != kj::Exception::Type::DISCONNECTED) failure_ = e.getDescription().cStr();
        kj::throwFatalException(kj::mv(e));
      });
}

}  // namespace fencekeeper::rpc
