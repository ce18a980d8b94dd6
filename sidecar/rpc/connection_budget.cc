#include "sidecar/rpc/connection_budget.h"

#include <spdlog/spdlog.h>

#include "sidecar/rpc/peer_load.h"

namespace fencekeeper::rpc {

namespace {
// A flood must not flood the log: the first few refusals of a connection are logged, then its
// count is logged when it closes.
constexpr uint64_t kLoggedRefusals = 3;
}  // namespace

ConnectionBudget::ConnectionBudget(Peer peer, const ConnectionLimits& limits, RefusalCount& refused,
                                   KeptLeases& kept, PeerLoad& load)
    : peer_(std::move(peer)), limits_(limits), refused_(refused), kept_(kept), load_(load) {
  auto paf = kj::newPromiseAndFulfiller<void>();
  closer_ = kj::mv(paf.fulfiller);
  closed_ = kj::mv(paf.promise);
}

ConnectionBudget::CallSlot::CallSlot(ConnectionBudget& b) : budget(b) {
  ++budget.calls_;
  budget.load_.callStarted(budget.peer_.uid);
}

ConnectionBudget::CallSlot::~CallSlot() {
  --budget.calls_;
  budget.load_.callEnded(budget.peer_.uid);
}

void ConnectionBudget::close(const std::string& reason) {
  if (!closeReason_.empty()) return;
  closeReason_ = reason;
  spdlog::warn("closing connection {}: {}", peer_.describe(), reason);
  closer_->fulfill();
}

std::optional<Refusal> ConnectionBudget::admit() {
  if (!closeReason_.empty()) return Refusal{engine::LeaseError::kLimitReached, closeReason_};
  uint64_t bytes = queuedReplyBytes();
  uint64_t replies = queuedReplies();
  bool overBytes = limits_.maxQueuedReplyBytes && bytes > limits_.maxQueuedReplyBytes;
  if (overBytes || (limits_.maxQueuedReplies && replies > limits_.maxQueuedReplies)) {
    std::string why =
        std::to_string(replies) + " replies (" + std::to_string(bytes) +
        " bytes) not read by the peer, above " +
        (overBytes
             ? std::to_string(limits_.maxQueuedReplyBytes) + " bytes (--max-queued-reply-bytes)"
             : std::to_string(limits_.maxQueuedReplies) + " replies (--max-queued-replies)");
    noteRefused(why);
    close(why);
    return Refusal{engine::LeaseError::kLimitReached, why};
  }
  // This connection read its replies; its uid's other connections may not have.
  load_.shedUnreadReplies(peer_.uid);
  if (!closeReason_.empty()) return Refusal{engine::LeaseError::kLimitReached, closeReason_};
  if (limits_.maxCallsPerConnection && calls_ >= limits_.maxCallsPerConnection) {
    std::string why = std::to_string(calls_) + " calls of this connection unanswered, its limit (" +
                      std::to_string(limits_.maxCallsPerConnection) +
                      "): wait for answers, or raise --max-calls-per-connection";
    noteRefused(why);
    return Refusal{engine::LeaseError::kLimitReached, why};
  }
  if (auto no = load_.admitCall(peer_.uid)) {
    noteRefused(no->detail);
    return no;
  }
  return std::nullopt;
}

std::optional<Refusal> ConnectionBudget::admitLease() const {
  auto mine = kept_.byUid.find(peer_.uid);
  uint32_t kept = mine == kept_.byUid.end() ? 0 : mine->second;
  if (limits_.maxLeaseCapabilities && kept >= limits_.maxLeaseCapabilities) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "uid " + std::to_string(peer_.uid) + " keeps " + std::to_string(kept) +
                       " lease capabilities, its limit (" +
                       std::to_string(limits_.maxLeaseCapabilities) +
                       ", twice --max-leases-per-peer): drop the Lease objects of released "
                       "or lost leases"};
  }
  if (limits_.maxLeaseCapabilitiesTotal && kept_.total >= limits_.maxLeaseCapabilitiesTotal) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "the sidecar's peers keep " + std::to_string(kept_.total) +
                       " lease capabilities, its limit (" +
                       std::to_string(limits_.maxLeaseCapabilitiesTotal) +
                       ", twice --max-leases): drop the Lease objects of released or lost leases"};
  }
  return std::nullopt;
}

void ConnectionBudget::leaseCreated() {
  ++kept_.byUid[peer_.uid];
  ++kept_.total;
}

void ConnectionBudget::leaseDropped() {
  auto mine = kept_.byUid.find(peer_.uid);
  if (--mine->second == 0) kept_.byUid.erase(mine);
  --kept_.total;
}

std::optional<Refusal> ConnectionBudget::admitHolderWatch() const {
  if (limits_.maxHolderWatches && holderWatches_ >= limits_.maxHolderWatches) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "this connection has " + std::to_string(holderWatches_) +
                       " holder watches open, its limit (" +
                       std::to_string(limits_.maxHolderWatches) +
                       "): drop the HolderWatch objects no longer needed"};
  }
  return std::nullopt;
}

void ConnectionBudget::noteRefused(const std::string& detail) {
  refused_.add(detail);
  if (++refusals_ <= kLoggedRefusals) {
    spdlog::warn("refused a call of {}: {}", peer_.describe(), detail);
  } else if (refusals_ == kLoggedRefusals + 1) {
    spdlog::warn("refusing more calls of {}; counted in status refusedTotal", peer_.describe());
  }
}

}  // namespace fencekeeper::rpc
