// What each uid's connections cost together, and all of them: unanswered calls (per uid and in
// all) and replies written but not read (per uid). The per-connection bounds alone let one uid
// multiply them by --max-connections (128 x 256 calls and 256 unread replies, ~256 MiB: issue 24),
// so these sums bound what one principal can make the sidecar hold. Loop thread; owned by the
// ServerContext, outlives every connection.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "sidecar/rpc/connection_budget.h"

namespace fencekeeper::rpc {

class PeerLoad {
 public:
  explicit PeerLoad(const ConnectionLimits& limits) : limits_(limits) {}

  // A connection's lifetime: its unread replies count while it is open.
  void opened(ConnectionBudget& connection);
  void closed(ConnectionBudget& connection);

  // Why one more call of `uid` is refused now (--max-calls-per-peer, --max-calls), or nullopt.
  std::optional<Refusal> admitCall(uint32_t uid) const;
  void callStarted(uint32_t uid);
  void callEnded(uint32_t uid);

  // While the replies `uid`'s open connections have not read exceed --max-queued-replies-per-peer
  // or --max-queued-reply-bytes-per-peer, closes the one with the most: a refusal would be one
  // more reply, and the connection that reads least is the one that holds the memory.
  void shedUnreadReplies(uint32_t uid);

  uint32_t callsOf(uint32_t uid) const;
  uint32_t calls() const { return calls_; }
  struct Unread {
    uint64_t replies = 0;
    uint64_t bytes = 0;
  };
  // Over `uid`'s open connections not being closed.
  Unread unreadOf(uint32_t uid) const;

 private:
  struct Peer {
    uint32_t calls = 0;
    std::vector<ConnectionBudget*> connections;  // open (at most --max-connections)
  };
  void forgetIfIdle(std::map<uint32_t, Peer>::iterator it);

  const ConnectionLimits& limits_;
  std::map<uint32_t, Peer> peers_;
  uint32_t calls_ = 0;
};

}  // namespace fencekeeper::rpc
