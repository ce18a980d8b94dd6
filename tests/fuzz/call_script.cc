#include "tests/fuzz/call_script.h"

#include <capnp/rpc-twoparty.h>
#include <capnp/schema.h>

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "ipc/fencekeeper.capnp.h"
#include "sidecar/engine/lock_name.h"
#include "tests/fuzz/sidecar_under_test.h"

namespace fencekeeper::fuzz {

namespace {

const char* const kSharedNames[] = {"a", "a/b", "jobs", "jobs/nightly", "x.y-z_1", "a/b/c"};
constexpr uint32_t kMaxAdvanceMs = 2 * 3'600'000;

class ScriptReader {
 public:
  ScriptReader(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool done() const { return n_ == 0; }
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(u8()) << (8 * i);
    return v;
  }
  std::string text() {
    size_t len = std::min<size_t>(u8(), n_);
    std::string s(reinterpret_cast<const char*>(p_), len);
    p_ += len;
    n_ -= len;
    return s;
  }
  std::string name() {
    uint8_t pick = u8();
    if (pick == kCustomName) return text();
    return kSharedNames[pick % std::size(kSharedNames)];
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

// Passes everything through to `inner` and appends every byte written to `log`.
class TeeStream final : public kj::AsyncIoStream {
 public:
  TeeStream(kj::AsyncIoStream& inner, std::string& log) : inner_(inner), log_(log) {}
  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override {
    return inner_.tryRead(buffer, minBytes, maxBytes);
  }
  kj::Promise<void> write(const void* buffer, size_t size) override {
    log_.append(static_cast<const char*>(buffer), size);
    return inner_.write(buffer, size);
  }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    for (auto piece : pieces) log_.append(piece.asChars().begin(), piece.size());
    return inner_.write(pieces);
  }
  kj::Promise<void> whenWriteDisconnected() override { return inner_.whenWriteDisconnected(); }
  void shutdownWrite() override { inner_.shutdownWrite(); }

 private:
  kj::AsyncIoStream& inner_;
  std::string& log_;
};

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return "\"" + out + "\"";
}

void checkKnown(ipc::Error error) {
  static const size_t known = capnp::Schema::from<ipc::Error>().getEnumerants().size();
  FK_FUZZ_CHECK(static_cast<size_t>(error) < known,
                "error " + std::to_string(static_cast<int>(error)));
}

// What the client has seen, against which every answer is checked.
struct Oracle {
  // Per lock name: exclusive grants rise above every token granted before them; shared and
  // permit grants above the last exclusive one (holders granted together may answer in any order).
  std::map<std::string, uint64_t> lastToken;
  std::map<std::string, uint64_t> lastExclusive;
};

// One acquire's outcome as the client saw it.
struct Grant {
  bool ok = false;
  uint64_t token = 0;
  bool releaseSent = false;  // later calls on this lease must not succeed
  // The client dropped the acquire's answer but kept its lease (pipelined): it may be granted
  // without the client learning the token.
  bool unseen = false;
  bool knows(uint64_t t) const { return unseen || (ok && t == token); }
};

struct LeaseSlot {
  ipc::Lease::Client cap;
  std::shared_ptr<Grant> grant;
};

class Watcher final : public ipc::LeaseWatcher::Server {
 public:
  explicit Watcher(std::shared_ptr<Grant> grant) : grant_(std::move(grant)) {}
  kj::Promise<void> lost(LostContext context) override {
    auto token = context.getParams().getToken();
    FK_FUZZ_CHECK(grant_->knows(token),
                  "loss told for a token not granted: " + std::to_string(token));
    return kj::READY_NOW;
  }

 private:
  std::shared_ptr<Grant> grant_;
};

// Checks what a holder watch is told: known states, and a holder's token never below one told
// before (the schema's promise to standbys).
class HolderWatcher final : public ipc::HolderWatcher::Server {
 public:
  kj::Promise<void> changed(ChangedContext context) override {
    auto change = context.getParams().getChange();
    static const size_t known = capnp::Schema::from<ipc::HolderState>().getEnumerants().size();
    FK_FUZZ_CHECK(static_cast<size_t>(change.getState()) < known,
                  "holder state " + std::to_string(static_cast<int>(change.getState())));
    if (change.getState() == ipc::HolderState::HELD) {
      uint64_t token = change.getInfo().getToken();
      FK_FUZZ_CHECK(token >= lastToken_, "holder watch told token " + std::to_string(token) +
                                             " after " + std::to_string(lastToken_));
      lastToken_ = token;
    }
    return kj::READY_NOW;
  }

 private:
  uint64_t lastToken_ = 0;
};

auto ignoreFailure() {
  return [](kj::Exception&&) {};
}

// One client connection running a script.
class ScriptClient {
 public:
  ScriptClient(SidecarUnderTest& sidecar, kj::AsyncIoStream& stream)
      : sidecar_(sidecar), rpc_(stream), cap_(rpc_.bootstrap().castAs<ipc::Sidecar>()) {}

  void run(ScriptReader& in) {
    while (!in.done()) {
      step(in);
      sidecar_.settle();
      sidecar_.checkHeldLeases();
    }
  }

 private:
  void step(ScriptReader& in) {
    uint8_t code = in.u8();
    if (code == kExtended) return extendedStep(in);
    switch (static_cast<Op>(code % static_cast<uint8_t>(Op::kCount))) {
      case Op::kAcquire: {
        std::string name = in.name();
        uint32_t ttl = in.u32();
        uint32_t wait = in.u32();
        std::string label = in.text();
        bool watcher = in.u8() & 1;
        return acquire(name, ttl, wait, label, watcher);
      }
      case Op::kRenew: {
        LeaseSlot* slot = lease(in.u8());
        uint32_t ttl = in.u32();
        if (slot) renew(*slot, ttl);
        return;
      }
      case Op::kToken:
        if (LeaseSlot* slot = lease(in.u8())) token(*slot);
        return;
      case Op::kRelease:
        if (LeaseSlot* slot = lease(in.u8())) release(*slot);
        return;
      case Op::kDropLease: {
        uint8_t pick = in.u8();
        if (!leases_.empty()) leases_.erase(leases_.begin() + pick % leases_.size());
        return;
      }
      case Op::kHolder:
        return holder(in.name());
      case Op::kStatus:
        return status();
      case Op::kCancel: {
        uint8_t pick = in.u8();
        if (calls_.empty()) return;
        Call& call = calls_[pick % calls_.size()];
        call.answer = nullptr;
        if (call.acquired) call.acquired->unseen = true;
        return;
      }
      case Op::kAdvance:
        return sidecar_.advance(Millis(in.u32() % (kMaxAdvanceMs + 1)));
      case Op::kExpireSession:
        return sidecar_.expireSession();
      case Op::kRemoveHolderNode:
        return removeHolderNode(in.name());
      case Op::kAddContender:
        sidecar_.zkServer().createExternally(sidecar_.lockPath(in.name()) + "/kazoo__lock__", "",
                                             zk::CreateMode::kEphemeralSequential);
        return;
      case Op::kPlantNode:
        sidecar_.zkServer().createExternally(
            sidecar_.lockPath(in.name()) + "/planted__lock__0000000000", "",
            zk::CreateMode::kPersistent);
        return;
      case Op::kCount:
        break;
    }
  }

  void extendedStep(ScriptReader& in) {
    switch (static_cast<ExtendedOp>(in.u8() % static_cast<uint8_t>(ExtendedOp::kCount))) {
      case ExtendedOp::kWatchHolder:
        return watchHolder(in.name());
      case ExtendedOp::kDropHolderWatch: {
        uint8_t pick = in.u8();
        if (!holderWatches_.empty()) {
          holderWatches_.erase(holderWatches_.begin() + pick % holderWatches_.size());
        }
        return;
      }
      case ExtendedOp::kAcquireMode: {
        std::string name = in.name();
        uint32_t ttl = in.u32();
        uint32_t wait = in.u32();
        uint8_t mode = in.u8();
        uint32_t permits = in.u32();
        return acquire(name, ttl, wait, "", true, mode, permits);
      }
      case ExtendedOp::kCount:
        break;
    }
  }

  LeaseSlot* lease(uint8_t pick) {
    return leases_.empty() ? nullptr : &leases_[pick % leases_.size()];
  }

  void acquire(const std::string& name, uint32_t ttl, uint32_t wait, const std::string& label,
               bool watcher, uint8_t mode = 0, uint32_t permits = 0) {
    auto request = cap_.acquireRequest();
    request.setMode(static_cast<ipc::LockMode>(mode));
    request.setPermits(permits);
    bool exclusive = mode == static_cast<uint8_t>(ipc::LockMode::EXCLUSIVE);
    request.setName(capnp::Text::Reader(name.c_str(), name.size()));
    request.setTtlMs(ttl);
    request.setWaitMs(wait);
    request.setOwnerLabel(capnp::Text::Reader(label.c_str(), label.size()));
    auto grant = std::make_shared<Grant>();
    if (watcher) request.setWatcher(kj::heap<Watcher>(grant));
    auto sent = request.send();
    leases_.push_back({sent.getLease(), grant});
    add(sent.then(
                [oracle = oracle_, grant, name, exclusive](auto response) {
                  checkKnown(response.getError());
                  if (response.getError() != ipc::Error::OK) return;
                  FK_FUZZ_CHECK(engine::isValidLockName(name),
                                "granted a lock whose name is not valid: " + printable(name));
                  FK_FUZZ_CHECK(response.hasLease(), "granted without a lease");
                  uint64_t token = response.getToken();
                  auto& last = oracle->lastToken[name];
                  auto& writer = oracle->lastExclusive[name];
                  uint64_t above = exclusive ? last : writer;
                  FK_FUZZ_CHECK(token > above, printable(name) + ": token " +
                                                   std::to_string(token) + " after " +
                                                   std::to_string(above));
                  last = std::max(last, token);
                  if (exclusive) writer = token;
                  grant->ok = true;
                  grant->token = token;
                },
                ignoreFailure())
            .eagerlyEvaluate(nullptr),
        grant);
  }

  void renew(LeaseSlot& slot, uint32_t ttl) {
    auto request = slot.cap.renewRequest();
    request.setTtlMs(ttl);
    bool afterRelease = slot.grant->releaseSent;
    add(request.send()
            .then(
                [afterRelease](auto response) {
                  checkKnown(response.getError());
                  FK_FUZZ_CHECK(!(afterRelease && response.getError() == ipc::Error::OK),
                                "renewed after release");
                },
                ignoreFailure())
            .eagerlyEvaluate(nullptr));
  }

  void token(LeaseSlot& slot) {
    bool afterRelease = slot.grant->releaseSent;
    add(slot.cap.tokenRequest()
            .send()
            .then(
                [grant = slot.grant, afterRelease](auto response) {
                  checkKnown(response.getError());
                  if (response.getError() != ipc::Error::OK) return;
                  FK_FUZZ_CHECK(!afterRelease, "token valid after release");
                  FK_FUZZ_CHECK(
                      grant->knows(response.getToken()),
                      "token " + std::to_string(response.getToken()) + " is not the one granted");
                },
                ignoreFailure())
            .eagerlyEvaluate(nullptr));
  }

  void release(LeaseSlot& slot) {
    slot.grant->releaseSent = true;
    add(slot.cap.releaseRequest()
            .send()
            .then([](auto response) { checkKnown(response.getError()); }, ignoreFailure())
            .eagerlyEvaluate(nullptr));
  }

  void holder(const std::string& name) {
    auto request = cap_.holderRequest();
    request.setName(capnp::Text::Reader(name.c_str(), name.size()));
    add(request.send()
            .then([](auto response) { checkKnown(response.getError()); }, ignoreFailure())
            .eagerlyEvaluate(nullptr));
  }

  void watchHolder(const std::string& name) {
    auto request = cap_.watchHolderRequest();
    request.setName(capnp::Text::Reader(name.c_str(), name.size()));
    request.setWatcher(kj::heap<HolderWatcher>());
    auto sent = request.send();
    holderWatches_.push_back(sent.getWatch());
    add(sent.then([](auto response) { checkKnown(response.getError()); }, ignoreFailure())
            .eagerlyEvaluate(nullptr));
  }

  void status() {
    add(cap_.statusRequest()
            .send()
            .then(
                [](auto response) {
                  auto s = response.getStatus();
                  FK_FUZZ_CHECK(s.getLeasesHeld() == s.getLeases().size(),
                                "status counts " + std::to_string(s.getLeasesHeld()) +
                                    " held but lists " + std::to_string(s.getLeases().size()));
                },
                ignoreFailure())
            .eagerlyEvaluate(nullptr));
  }

  void removeHolderNode(const std::string& name) {
    auto& server = sidecar_.zkServer();
    std::string path = sidecar_.lockPath(name);
    std::vector<engine::QueueNode> queue;
    for (const auto& child : server.childrenOf(path)) {
      if (auto node = engine::parseQueueNode(child)) queue.push_back(std::move(*node));
    }
    engine::sortQueue(queue);
    if (!queue.empty()) server.removeExternally(path + "/" + queue.front().name);
  }

  SidecarUnderTest& sidecar_;
  capnp::TwoPartyClient rpc_;
  ipc::Sidecar::Client cap_;
  std::shared_ptr<Oracle> oracle_ = std::make_shared<Oracle>();
  std::vector<LeaseSlot> leases_;
  std::vector<ipc::HolderWatch::Client> holderWatches_;
  // Unanswered calls the client may drop; `acquired` is set for an acquire.
  struct Call {
    kj::Promise<void> answer;
    std::shared_ptr<Grant> acquired;
  };
  void add(kj::Promise<void> answer, std::shared_ptr<Grant> acquired = nullptr) {
    calls_.push_back({kj::mv(answer), std::move(acquired)});
  }
  std::vector<Call> calls_;
};

}  // namespace

ScriptWriter& ScriptWriter::acquire(const std::string& n, uint32_t ttlMs, uint32_t waitMs,
                                    const std::string& label, bool watcher) {
  u8(static_cast<uint8_t>(Op::kAcquire));
  name(n);
  u32(ttlMs);
  u32(waitMs);
  text(label);
  u8(watcher ? 1 : 0);
  return *this;
}

ScriptWriter& ScriptWriter::leaseOp(Op op, uint8_t lease, uint32_t ttlMs) {
  u8(static_cast<uint8_t>(op));
  u8(lease);
  if (op == Op::kRenew) u32(ttlMs);
  return *this;
}

ScriptWriter& ScriptWriter::named(Op op, const std::string& n) {
  u8(static_cast<uint8_t>(op));
  name(n);
  return *this;
}

ScriptWriter& ScriptWriter::plain(Op op) {
  u8(static_cast<uint8_t>(op));
  return *this;
}

ScriptWriter& ScriptWriter::cancel(uint8_t call) {
  u8(static_cast<uint8_t>(Op::kCancel));
  u8(call);
  return *this;
}

ScriptWriter& ScriptWriter::advance(uint32_t ms) {
  u8(static_cast<uint8_t>(Op::kAdvance));
  u32(ms);
  return *this;
}

ScriptWriter& ScriptWriter::watchHolder(const std::string& n) {
  u8(kExtended);
  u8(static_cast<uint8_t>(ExtendedOp::kWatchHolder));
  name(n);
  return *this;
}

ScriptWriter& ScriptWriter::acquireMode(const std::string& n, uint32_t ttlMs, uint32_t waitMs,
                                        uint8_t mode, uint32_t permits) {
  u8(kExtended);
  u8(static_cast<uint8_t>(ExtendedOp::kAcquireMode));
  name(n);
  u32(ttlMs);
  u32(waitMs);
  u8(mode);
  u32(permits);
  return *this;
}

ScriptWriter& ScriptWriter::dropHolderWatch(uint8_t watch) {
  u8(kExtended);
  u8(static_cast<uint8_t>(ExtendedOp::kDropHolderWatch));
  u8(watch);
  return *this;
}

void ScriptWriter::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
}

void ScriptWriter::text(const std::string& s) {
  u8(static_cast<uint8_t>(std::min<size_t>(s.size(), 255)));
  out_.append(s, 0, std::min<size_t>(s.size(), 255));
}

void ScriptWriter::name(const std::string& s) {
  u8(kCustomName);
  text(s);
}

void runCallScript(const uint8_t* data, size_t size, std::string* wire) {
  SidecarUnderTest sidecar;
  {
    kj::Own<TeeStream> tee;
    kj::AsyncIoStream* stream = &sidecar.client();
    if (wire) {
      tee = kj::heap<TeeStream>(*stream, *wire);
      stream = tee.get();
    }
    ScriptClient client(sidecar, *stream);
    ScriptReader in(data, size);
    client.run(in);
  }
  sidecar.disconnectAndCheckNothingLeft();
}

}  // namespace fencekeeper::fuzz
