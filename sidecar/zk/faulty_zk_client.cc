#include "sidecar/zk/faulty_zk_client.h"

#include <utility>

namespace fencekeeper::zk {

FaultyZkClient::FaultyZkClient(Client& inner, Executor& executor, Timer& timer,
                               std::function<void()> expireSession)
    : inner_(inner),
      executor_(executor),
      timer_(timer),
      expireSession_(std::move(expireSession)),
      told_(inner.sessionState()) {
  // Posted like the states a reconnect tells: a state the wrapped client delivers right after a
  // reconnect must not overtake the missed ones (the listener saw "connected" before "expired").
  inner_.setSessionListener([this](SessionState state) {
    if (disconnected_) return missedStates_.push_back(state);
    tell(state);
  });
}

FaultyZkClient::~FaultyZkClient() {
  *alive_ = false;
  timer_.cancel(expiryTimer_);
  inner_.setSessionListener(nullptr);
}

void FaultyZkClient::post(std::function<void()> fn) {
  executor_.post([alive = std::weak_ptr<bool>(alive_), fn = std::move(fn)] {
    if (alive.lock()) fn();
  });
}

void FaultyZkClient::tell(SessionState state) {
  if (state == told_) return;
  told_ = state;
  post([this, state] {
    if (listener_) listener_(state);
  });
}

SessionState FaultyZkClient::sessionState() const {
  return disconnected_ ? SessionState::kConnecting : inner_.sessionState();
}

template <typename Result>
void FaultyZkClient::run(Op op, Result lost, std::function<void(std::function<void(Result)>)> send,
                         std::function<void(Result)> done) {
  if (disconnected_) return post([done = std::move(done), lost] { done(lost); });
  uint64_t call = nextCall_++;
  auto shared = std::make_shared<std::function<void(Result)>>(std::move(done));
  inFlight_[call] = [shared, lost] { (*shared)(lost); };
  auto answer = [this, alive = std::weak_ptr<bool>(alive_), call, shared](Result result) {
    if (!alive.lock()) return;
    auto deliver = [this, call, shared, result = std::move(result)] {
      if (!inFlight_.erase(call)) return;  // failed by a disconnect meanwhile
      (*shared)(result);
    };
    if (latency_.count() == 0) return deliver();
    timer_.schedule(timer_.now() + latency_, [alive, deliver] {
      if (alive.lock()) deliver();
    });
  };
  auto go = [this, op, send = std::move(send), answer = std::move(answer)] {
    ++sent_[op];
    send(answer);
  };
  if (stalledOps_ & op) return stalled_.push_back(std::move(go));
  go();
}

uint64_t FaultyZkClient::sent(unsigned ops) const {
  uint64_t n = 0;
  for (auto& [op, count] : sent_) {
    if (op & ops) n += count;
  }
  return n;
}

void FaultyZkClient::unstall() {
  stalledOps_ = 0;
  auto held = std::move(stalled_);
  stalled_.clear();
  for (auto& go : held) go();
}

void FaultyZkClient::disconnect() {
  if (disconnected_) return;
  disconnected_ = true;
  stalled_.clear();  // never sent: their failures follow
  auto cut = std::move(inFlight_);
  inFlight_.clear();
  for (auto& [call, fail] : cut) post(std::move(fail));
  tell(SessionState::kConnecting);
  if (!expireSession_) return;
  // The server hears nothing from this session any more: it ends it after the timeout.
  expiryTimer_ = timer_.schedule(timer_.now() + Millis(inner_.negotiatedTimeoutMs()), [this] {
    expiryTimer_ = 0;
    expireSession_();
  });
}

void FaultyZkClient::reconnect() {
  if (!disconnected_) return;
  disconnected_ = false;
  timer_.cancel(expiryTimer_);
  expiryTimer_ = 0;
  for (SessionState state : std::exchange(missedStates_, {})) tell(state);
  tell(inner_.sessionState());
  for (auto& fire : std::exchange(missedWatches_, {})) post(std::move(fire));
}

Client::WatchCallback FaultyZkClient::watched(WatchCallback onChange) {
  return [this, alive = std::weak_ptr<bool>(alive_), onChange = std::move(onChange)](
             WatchEvent event) {
    if (!alive.lock()) return;
    if (disconnected_) {  // told after the reconnect
      return missedWatches_.push_back([onChange, event] { onChange(event); });
    }
    onChange(event);
  };
}

void FaultyZkClient::create(const std::string& path, const std::string& data, CreateMode mode,
                            CreateCallback done) {
  std::optional<CreateFault> fault;
  if (!disconnected_ && !createFaults_.empty()) {
    fault = createFaults_.front();
    createFaults_.erase(createFaults_.begin());
    if (!fault->apply) {
      return post([done = std::move(done), code = fault->code] { done({code, {}, {}}); });
    }
  }
  run<CreateResult>(
      kCreate, {Code::kConnectionLoss, {}, {}},
      [this, path, data, mode](auto answer) { inner_.create(path, data, mode, answer); },
      [done = std::move(done), fault](CreateResult result) {
        if (fault) result = {fault->code, {}, {}};  // applied, but the answer is lost
        done(std::move(result));
      });
}

void FaultyZkClient::getChildren(const std::string& path, ChildrenCallback done) {
  run<ChildrenResult>(
      kGetChildren, {Code::kConnectionLoss, {}},
      [this, path](auto answer) { inner_.getChildren(path, answer); }, std::move(done));
}

void FaultyZkClient::getChildrenAndWatch(const std::string& path, ChildrenCallback done,
                                         WatchCallback onChange) {
  run<ChildrenResult>(
      kGetChildren, {Code::kConnectionLoss, {}},
      [this, path, onChange = watched(std::move(onChange))](auto answer) {
        inner_.getChildrenAndWatch(path, answer, onChange);
      },
      std::move(done));
}

void FaultyZkClient::getAndWatch(const std::string& path, GetCallback done,
                                 WatchCallback onChange) {
  run<GetResult>(
      kGet, {Code::kConnectionLoss, {}, {}},
      [this, path, onChange = watched(std::move(onChange))](auto answer) {
        inner_.getAndWatch(path, answer, onChange);
      },
      std::move(done));
}

void FaultyZkClient::existsAndWatch(const std::string& path, CodeCallback done,
                                    WatchCallback onChange) {
  run<Code>(
      kGet, Code::kConnectionLoss,
      [this, path, onChange = watched(std::move(onChange))](auto answer) {
        inner_.existsAndWatch(path, answer, onChange);
      },
      std::move(done));
}

void FaultyZkClient::get(const std::string& path, GetCallback done) {
  run<GetResult>(
      kGet, {Code::kConnectionLoss, {}, {}},
      [this, path](auto answer) { inner_.get(path, answer); }, std::move(done));
}

void FaultyZkClient::remove(const std::string& path, CodeCallback done) {
  run<Code>(
      kRemove, Code::kConnectionLoss, [this, path](auto answer) { inner_.remove(path, answer); },
      std::move(done));
}

void FaultyZkClient::sync(const std::string& path, CodeCallback done) {
  run<Code>(
      kSync, Code::kConnectionLoss, [this, path](auto answer) { inner_.sync(path, answer); },
      std::move(done));
}

void FaultyZkClient::getAcl(const std::string& path, AclCallback done) {
  run<AclResult>(
      kGetAcl, {Code::kConnectionLoss, {}},
      [this, path](auto answer) { inner_.getAcl(path, answer); }, std::move(done));
}

}  // namespace fencekeeper::zk
