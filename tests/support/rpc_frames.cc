#include "tests/support/rpc_frames.h"

#include <capnp/rpc.capnp.h>
#include <capnp/serialize.h>

#include <cstring>
#include <stdexcept>

#include "ipc/fencekeeper.capnp.h"

namespace fencekeeper::rpcframes {

namespace {

constexpr uint16_t kAcquire = 0, kHolder = 1, kStatus = 2;

capnp::rpc::Call::Builder initCall(capnp::MessageBuilder& message, uint32_t questionId,
                                   uint32_t bootstrapId, uint16_t method) {
  auto call = message.initRoot<capnp::rpc::Message>().initCall();
  call.setQuestionId(questionId);
  call.initTarget().initPromisedAnswer().setQuestionId(bootstrapId);
  call.setInterfaceId(capnp::typeId<ipc::Sidecar>());
  call.setMethodId(method);
  return call;
}

Frame flat(capnp::MessageBuilder& message) { return capnp::messageToFlatArray(message); }

uint64_t wordAt(const Frame& frame, size_t i) {
  uint64_t w;
  std::memcpy(&w, frame.asBytes().begin() + i * sizeof w, sizeof w);
  return w;
}
void setWordAt(Frame& frame, size_t i, uint64_t w) {
  std::memcpy(frame.asBytes().begin() + i * sizeof w, &w, sizeof w);
}

}  // namespace

Frame bootstrap(uint32_t questionId) {
  capnp::MallocMessageBuilder message;
  message.initRoot<capnp::rpc::Message>().initBootstrap().setQuestionId(questionId);
  return flat(message);
}

Frame acquire(uint32_t questionId, uint32_t bootstrapId, const std::string& name, uint32_t ttlMs,
              uint32_t waitMs) {
  capnp::MallocMessageBuilder message;
  auto params = initCall(message, questionId, bootstrapId, kAcquire)
                    .initParams()
                    .getContent()
                    .initAs<ipc::Sidecar::AcquireParams>();
  params.setName(name);
  params.setTtlMs(ttlMs);
  params.setWaitMs(waitMs);
  params.setOwnerLabel("flood");
  return flat(message);
}

Frame holder(uint32_t questionId, uint32_t bootstrapId, const std::string& name) {
  capnp::MallocMessageBuilder message;
  initCall(message, questionId, bootstrapId, kHolder)
      .initParams()
      .getContent()
      .initAs<ipc::Sidecar::HolderParams>()
      .setName(name);
  return flat(message);
}

Frame status(uint32_t questionId, uint32_t bootstrapId) {
  capnp::MallocMessageBuilder message;
  initCall(message, questionId, bootstrapId, kStatus)
      .initParams()
      .getContent()
      .initAs<ipc::Sidecar::StatusParams>();
  return flat(message);
}

Frame finish(uint32_t questionId) {
  capnp::MallocMessageBuilder message;
  auto finish = message.initRoot<capnp::rpc::Message>().initFinish();
  finish.setQuestionId(questionId);
  finish.setReleaseResultCaps(false);
  return flat(message);
}

Frame hugeCapTable(uint32_t questionId, uint32_t bootstrapId, uint32_t entries) {
  // Built with one real descriptor, then its list pointer and tag are rewritten to say `entries`
  // elements of zero words each: the descriptor's words stay behind, unreferenced.
  capnp::MallocMessageBuilder message;
  auto params = initCall(message, questionId, bootstrapId, kAcquire).initParams();
  params.getContent().initAs<ipc::Sidecar::AcquireParams>().setName("flood-captable");
  params.initCapTable(1)[0].setNone();
  Frame frame = flat(message);
  constexpr uint64_t kDataWords = capnp::_::structSize<capnp::rpc::CapDescriptor>().data;
  constexpr uint64_t kPointers = capnp::_::structSize<capnp::rpc::CapDescriptor>().pointers;
  const uint64_t tag = (uint64_t{1} << 2) | (kDataWords << 32) | (kPointers << 48);
  for (size_t i = 1; i < frame.size(); ++i) {  // word 0 is the segment table
    if (wordAt(frame, i) != tag) continue;
    setWordAt(frame, i, uint64_t{entries} << 2);  // `entries` structs of 0 data, 0 pointers
    for (size_t p = 1; p < i; ++p) {
      uint64_t w = wordAt(frame, p);
      bool inlineCompositeList = (w & 3) == 1 && ((w >> 32) & 7) == 7;
      if (inlineCompositeList && (w >> 35) == kDataWords + kPointers) {
        setWordAt(frame, p, w & 0x7FFFFFFFFull);  // 0 words of elements
        return frame;
      }
    }
  }
  throw std::logic_error("hugeCapTable: capability table not found in the frame");
}

Frame deepNesting(uint32_t questionId, uint32_t bootstrapId, unsigned depth) {
  capnp::MallocMessageBuilder message;
  auto content = initCall(message, questionId, bootstrapId, kAcquire).initParams().getContent();
  auto level = content.initAsAnyStruct(1, 1);
  for (unsigned i = 0; i < depth; ++i) level = level.getPointerSection()[0].initAsAnyStruct(1, 1);
  return flat(message);
}

Frame bigName(uint32_t questionId, uint32_t bootstrapId, size_t bytes) {
  return acquire(questionId, bootstrapId, std::string(bytes, 'x'), 1000, 0);
}

Frame manySegments(uint32_t questionId, uint32_t bootstrapId, unsigned segments) {
  // A first segment of one word forces every later allocation into a segment of its own.
  capnp::MallocMessageBuilder message(1, capnp::AllocationStrategy::FIXED_SIZE);
  auto params = initCall(message, questionId, bootstrapId, kHolder)
                    .initParams()
                    .getContent()
                    .initAs<ipc::Sidecar::HolderParams>();
  params.setName("flood-segments");
  auto list = message.getOrphanage().newOrphan<capnp::List<capnp::Text>>(segments);
  for (unsigned i = 0; i < segments; ++i) list.get().set(i, "s");
  return flat(message);
}

Incoming classify(capnp::MessageReader& message) {
  auto root = message.getRoot<capnp::rpc::Message>();
  if (root.which() != capnp::rpc::Message::RETURN) return {};
  return {true, root.getReturn().getAnswerId()};
}

}  // namespace fencekeeper::rpcframes
