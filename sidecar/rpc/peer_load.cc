#include "sidecar/rpc/peer_load.h"

#include <algorithm>
#include <string>

namespace fencekeeper::rpc {

void PeerLoad::opened(ConnectionBudget& connection) {
  peers_[connection.peer().uid].connections.push_back(&connection);
}

void PeerLoad::closed(ConnectionBudget& connection) {
  auto it = peers_.find(connection.peer().uid);
  std::erase(it->second.connections, &connection);
  forgetIfIdle(it);
}

std::optional<Refusal> PeerLoad::admitCall(uint32_t uid) const {
  uint32_t mine = callsOf(uid);
  if (limits_.maxCallsPerPeer && mine >= limits_.maxCallsPerPeer) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "uid " + std::to_string(uid) + " has " + std::to_string(mine) +
                       " calls unanswered in all its connections, its limit (" +
                       std::to_string(limits_.maxCallsPerPeer) +
                       "): wait for answers, or raise --max-calls-per-peer"};
  }
  if (limits_.maxCalls && calls_ >= limits_.maxCalls) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "the sidecar's peers have " + std::to_string(calls_) +
                       " calls unanswered, its limit (" + std::to_string(limits_.maxCalls) +
                       "): wait for answers, or raise --max-calls"};
  }
  return std::nullopt;
}

void PeerLoad::callStarted(uint32_t uid) {
  ++peers_[uid].calls;
  ++calls_;
}

void PeerLoad::callEnded(uint32_t uid) {
  auto it = peers_.find(uid);
  --it->second.calls;
  --calls_;
  forgetIfIdle(it);
}

uint32_t PeerLoad::callsOf(uint32_t uid) const {
  auto it = peers_.find(uid);
  return it == peers_.end() ? 0 : it->second.calls;
}

PeerLoad::Unread PeerLoad::unreadOf(uint32_t uid) const {
  Unread sum;
  auto it = peers_.find(uid);
  if (it == peers_.end()) return sum;
  for (const ConnectionBudget* c : it->second.connections) {
    if (!c->closeReason().empty()) continue;  // closing: its queue goes with it
    sum.replies += c->queuedReplies();
    sum.bytes += c->queuedReplyBytes();
  }
  return sum;
}

void PeerLoad::shedUnreadReplies(uint32_t uid) {
  auto over = [&](const Unread& u) {
    return (limits_.maxQueuedRepliesPerPeer && u.replies > limits_.maxQueuedRepliesPerPeer) ||
           (limits_.maxQueuedReplyBytesPerPeer && u.bytes > limits_.maxQueuedReplyBytesPerPeer);
  };
  for (Unread sum = unreadOf(uid); over(sum); sum = unreadOf(uid)) {
    bool byBytes =
        limits_.maxQueuedReplyBytesPerPeer && sum.bytes > limits_.maxQueuedReplyBytesPerPeer;
    auto load = [byBytes](const ConnectionBudget* c) {
      return byBytes ? c->queuedReplyBytes() : c->queuedReplies();
    };
    ConnectionBudget* worst = nullptr;
    for (ConnectionBudget* c : peers_.at(uid).connections) {
      if (c->closeReason().empty() && (!worst || load(c) > load(worst))) worst = c;
    }
    std::string why =
        "uid " + std::to_string(uid) + " has " + std::to_string(sum.replies) + " replies (" +
        std::to_string(sum.bytes) + " bytes) not read in all its connections, above " +
        (byBytes ? std::to_string(limits_.maxQueuedReplyBytesPerPeer) +
                       " bytes (--max-queued-reply-bytes-per-peer)"
                 : std::to_string(limits_.maxQueuedRepliesPerPeer) +
                       " replies (--max-queued-replies-per-peer)") +
        "; this connection had " + std::to_string(worst->queuedReplies());
    worst->noteRefused(why);
    worst->close(why);
  }
}

void PeerLoad::forgetIfIdle(std::map<uint32_t, Peer>::iterator it) {
  if (it->second.calls == 0 && it->second.connections.empty()) peers_.erase(it);
}

}  // namespace fencekeeper::rpc
