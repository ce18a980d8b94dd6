// What one lease-socket connection may cost the sidecar: unanswered calls, replies written but
// not read by the peer, lease capabilities kept. A call over a bound is refused (limitReached
// with a detail naming the limit); a connection whose peer stops reading its replies is closed,
// since every further answer, a refusal included, would queue more.
#pragma once

#include <capnp/rpc-twoparty.h>
#include <kj/async.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sidecar/engine/lease_types.h"
#include "sidecar/rpc/peer.h"
#include "sidecar/rpc/uid_tally.h"

namespace fencekeeper::rpc {

struct ConnectionLimits {
  uint32_t maxConnectionsPerPeer = 128;    // --max-connections (per uid)
  uint32_t maxCallsPerConnection = 256;    // --max-calls-per-connection (unanswered)
  uint32_t maxCallsPerPeer = 1'024;        // --max-calls-per-peer (unanswered, one uid in all)
  uint32_t maxCalls = 4'096;               // --max-calls (unanswered, the whole sidecar)
  uint64_t maxQueuedReplyBytes = 1 << 20;  // --max-queued-reply-bytes
  // Each queued reply holds a whole message buffer (8 KiB at least) however small it is on the
  // wire: the count bounds the memory, the bytes bound a few large answers.
  uint32_t maxQueuedReplies = 256;        // --max-queued-replies
  // The same summed over one uid's connections: without them, x --max-connections (issue 24).
  uint32_t maxQueuedRepliesPerPeer = 1'024;          // --max-queued-replies-per-peer
  uint64_t maxQueuedReplyBytesPerPeer = 4 << 20;     // --max-queued-reply-bytes-per-peer
  // Lease capabilities kept, released ones included: each costs memory until its peer drops it
  // (issue 24: bounded per connection only, 128 connections of one uid kept 640,000).
  uint32_t maxLeaseCapabilities = 5'000;        // per uid: twice --max-leases-per-peer
  uint32_t maxLeaseCapabilitiesTotal = 20'000;  // in all: twice --max-leases
  uint32_t maxHolderWatches = 1'000;      // open on one connection
  uint32_t maxHolderWatchesPerPeer = 1'000;  // --max-watches-per-peer (per uid)
  uint32_t maxHolderWatchesTotal = 10'000;   // --max-watches (the whole sidecar)
};


struct Refusal {
  engine::LeaseError error;
  std::string detail;
};

// Refusals by a limit or the allow-list, counted for status (refusedTotal) and the metrics.
struct RefusalCount {
  uint64_t total = 0;
  std::function<void(const std::string& detail)> listener;  // may be empty
  void add(const std::string& detail) {
    ++total;
    if (listener) listener(detail);
  }
};

class PeerLoad;

class ConnectionBudget {
 public:
  // `keptLeases`, `holderWatches` and `load` (the uid's and the sidecar's sums) outlive the budget.
  ConnectionBudget(Peer peer, const ConnectionLimits& limits, RefusalCount& refused,
                   UidTally& keptLeases, UidTally& holderWatches, PeerLoad& load);

  // Set once the connection's network exists (it reports the queued reply bytes).
  void attach(capnp::TwoPartyVatNetwork& network) { network_ = &network; }
  // Resolves when the connection is to be closed by the sidecar; the reason was logged.
  kj::Promise<void> whenClosed() { return kj::mv(closed_); }
  void close(const std::string& reason);
  const std::string& closeReason() const { return closeReason_; }

  // Counts one call for its lifetime (attach it to the call's promise), here and in its uid's sum.
  struct CallSlot {
    explicit CallSlot(ConnectionBudget& b);
    ~CallSlot();
    ConnectionBudget& budget;
  };
  // Says why a call is refused now, or nullopt: admitted (then hold a CallSlot while it runs).
  std::optional<Refusal> admit();
  // Admits one more lease capability to hand out, or says why not.
  std::optional<Refusal> admitLease() const;
  void leaseCreated();
  void leaseDropped();
  // Admits one more holder watch (this connection's, its uid's, the sidecar's), or says why not.
  std::optional<Refusal> admitHolderWatch() const;
  void holderWatchCreated();
  void holderWatchDropped();
  // Logs a refusal at most once per connection and reason kind; counts them all.
  void noteRefused(const std::string& detail);

  const Peer& peer() const { return peer_; }
  uint32_t callsInFlight() const { return calls_; }
  uint64_t queuedReplyBytes() const { return network_ ? network_->getCurrentQueueSize() : 0; }
  uint64_t queuedReplies() const { return network_ ? network_->getCurrentQueueCount() : 0; }

 private:
  const Peer peer_;
  const ConnectionLimits& limits_;
  RefusalCount& refused_;
  UidTally& keptLeases_;
  UidTally& uidWatches_;
  PeerLoad& load_;
  capnp::TwoPartyVatNetwork* network_ = nullptr;
  kj::Own<kj::PromiseFulfiller<void>> closer_;
  kj::Promise<void> closed_ = nullptr;
  std::string closeReason_;
  uint32_t calls_ = 0;
  uint32_t holderWatches_ = 0;
  uint64_t refusals_ = 0;
};

}  // namespace fencekeeper::rpc
