// A zk::Client around any other (the fake or the real one) that fails the way networks and
// servers fail, as LevelDB's EnvWrapper wraps an Env: answers that come late (latency), requests
// a frozen server neither applies nor answers (stall), a lost connection (every request in flight
// fails with kConnectionLoss, and so does every new one, until reconnect()), and ambiguous creates
// (applied but answered with a lost connection, or not applied). The wrapped client's session goes
// on meanwhile, unless a disconnect outlasts the session timeout: then the server ends it, by the
// `expireSession` given (FakeZkServer::expireSession, or a real expiry on a real server), and the
// client learns of it when it reconnects.
//
// Runs on the loop thread, like the client it wraps; its own answers are posted to `executor`
// (never inline), late ones scheduled on `timer`. Destroy it before the wrapped client.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/executor.h"
#include "sidecar/zk/zk_client.h"

namespace fencekeeper::zk {

class FaultyZkClient final : public Client {
 public:
  // The requests a fault applies to.
  enum Op : unsigned {
    kCreate = 1,
    kGetChildren = 2,
    kGet = 4,  // get, getAndWatch and existsAndWatch
    kRemove = 8,
    kSync = 16,
    kGetAcl = 32,
    kAllOps = 63,
  };

  FaultyZkClient(Client& inner, Executor& executor, Timer& timer,
                 std::function<void()> expireSession = nullptr);
  ~FaultyZkClient() override;

  // Every answer arrives `latency` after the wrapped client gave it.
  void setLatency(Millis latency) { latency_ = latency; }
  // Requests of `ops` are held back unsent, as by a frozen server (a stalled kSync alone: a
  // follower that answers reads while its leader is frozen). unstall() sends them in order;
  // disconnect() fails them.
  void stall(unsigned ops) { stalledOps_ = ops; }
  void unstall();
  // The connection drops: what is in flight fails with kConnectionLoss now (an answer the wrapped
  // client gives later is discarded), new requests fail too, the listener sees kConnecting.
  void disconnect();
  // The connection is back: the listener sees what the wrapped client's session went through
  // meanwhile, then its state; watches that fired meanwhile are delivered.
  void reconnect();
  // The next create is applied, but its caller is told `code` (the ambiguous case)...
  void failNextCreateAfterApply(Code code) { createFaults_.push_back({true, code}); }
  // ... or it is not sent and fails with `code`.
  void failNextCreateBeforeApply(Code code) { createFaults_.push_back({false, code}); }
  size_t inFlight() const { return inFlight_.size(); }
  // Requests of `ops` passed on to the wrapped client so far (what the server was sent).
  uint64_t sent(unsigned ops = kAllOps) const;

  void create(const std::string& path, const std::string& data, CreateMode mode,
              CreateCallback done) override;
  void getChildren(const std::string& path, ChildrenCallback done) override;
  void getChildrenAndWatch(const std::string& path, ChildrenCallback done,
                           WatchCallback onChange) override;
  void getAndWatch(const std::string& path, GetCallback done, WatchCallback onChange) override;
  void existsAndWatch(const std::string& path, CodeCallback done, WatchCallback onChange) override;
  void get(const std::string& path, GetCallback done) override;
  void remove(const std::string& path, CodeCallback done) override;
  void sync(const std::string& path, CodeCallback done) override;
  void getAcl(const std::string& path, AclCallback done) override;
  // Not passed on: the wrapped client stays where it is, so that a stalled test stays stalled.
  void leaveServer() override {}
  SessionState sessionState() const override;
  int64_t sessionId() const override { return inner_.sessionId(); }
  int32_t negotiatedTimeoutMs() const override { return inner_.negotiatedTimeoutMs(); }
  void setSessionListener(std::function<void(SessionState)> listener) override {
    listener_ = std::move(listener);
  }

 private:
  struct CreateFault {
    bool apply;
    Code code;
  };
  // Sends one request through the faults. `send` hands the wrapped client a callback for its
  // answer; `lost` is the answer of a request cut off by a disconnect.
  template <typename Result>
  void run(Op op, Result lost, std::function<void(std::function<void(Result)>)> send,
           std::function<void(Result)> done);
  void post(std::function<void()> fn);
  void tell(SessionState state);
  WatchCallback watched(WatchCallback onChange);

  Client& inner_;
  Executor& executor_;
  Timer& timer_;
  std::function<void()> expireSession_;
  uint64_t expiryTimer_ = 0;
  Millis latency_{0};
  unsigned stalledOps_ = 0;
  bool disconnected_ = false;
  uint64_t nextCall_ = 1;
  std::map<Op, uint64_t> sent_;
  std::map<uint64_t, std::function<void()>> inFlight_;  // call -> fail it with connection loss
  std::deque<std::function<void()>> stalled_;           // sends held back
  std::vector<CreateFault> createFaults_;
  std::vector<SessionState> missedStates_;  // of the wrapped client, while disconnected
  std::vector<std::function<void()>> missedWatches_;  // with the event each saw
  SessionState told_;
  std::function<void(SessionState)> listener_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace fencekeeper::zk
