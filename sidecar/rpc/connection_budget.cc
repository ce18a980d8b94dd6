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
                                   UidTally& keptLeases, UidTally& holderWatches, PeerLoad& load)
    : peer_(std::move(peer)),
      limits_(limits),
      refused_(refused),
      keptLeases_(keptLeases),
      uidWatches_(holderWatches),
      load_(load) {
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
  uint32_t kept = keptLeases_.of(peer_.uid);
  if (limits_.maxLeaseCapabilities && kept >= limits_.maxLeaseCapabilities) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "uid " + std::to_string(peer_.uid) + " keeps " + std::to_string(kept) +
                       " lease capabilities, its limit (" +
                       std::to_string(limits_.maxLeaseCapabilities) +
                       ", twice --max-leases-per-peer): drop the Lease objects of released "
                       "or lost leases"};
  }
  if (limits_.maxLeaseCapabilitiesTotal &&
      keptLeases_.total() >= limits_.maxLeaseCapabilitiesTotal) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "the sidecar's peers keep " + std::to_string(keptLeases_.total()) +
                       " lease capabilities, its limit (" +
                       std::to_string(limits_.maxLeaseCapabilitiesTotal) +
                       ", twice --max-leases): drop the Lease objects of released or lost leases"};
  }
  return std::nullopt;
}

void ConnectionBudget::leaseCreated() { keptLeases_.add(peer_.uid); }

void ConnectionBudget::leaseDropped() { keptLeases_.remove(peer_.uid); }

std::optional<Refusal> ConnectionBudget::admitHolderWatch() const {
  if (limits_.maxHolderWatches && holderWatches_ >= limits_.maxHolderWatches) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "this connection has " + std::to_string(holderWatches_) +
                       " holder watches open, its limit (" +
                       std::to_string(limits_.maxHolderWatches) +
                       "): drop the HolderWatch objects no longer needed"};
  }
  uint32_t mine = uidWatches_.of(peer_.uid);
  if (limits_.maxHolderWatchesPerPeer && mine >= limits_.maxHolderWatchesPerPeer) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "uid " + std::to_string(peer_.uid) + " has " + std::to_string(mine) +
                       " holder watches open, its limit (" +
                       std::to_string(limits_.maxHolderWatchesPerPeer) +
                       "): drop watches no longer needed, or raise --max-watches-per-peer"};
  }
  if (limits_.maxHolderWatchesTotal && uidWatches_.total() >= limits_.maxHolderWatchesTotal) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "this sidecar has " + std::to_string(uidWatches_.total()) +
                       " holder watches open, its limit (" +
                       std::to_string(limits_.maxHolderWatchesTotal) + "): raise --max-watches"};
  }
  return std::nullopt;
}

void ConnectionBudget::holderWatchCreated() {
  ++holderWatches_;
  uidWatches_.add(peer_.uid);
}

void ConnectionBudget::holderWatchDropped() {
  --holderWatches_;
  uidWatches_.remove(peer_.uid);
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
