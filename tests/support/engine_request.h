// One lease request of an engine test: what the engine answered and which losses it reported.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sidecar/engine/lock_engine.h"

namespace fencekeeper::testing {

struct EngineRequest {
  std::optional<engine::AcquireOutcome> outcome;
  std::vector<engine::LossReason> losses;
  bool granted() const { return outcome && outcome->error == engine::LeaseError::kOk; }
};

// Queues a request (owner "worker"); its answer and losses land in the returned record, which
// must outlive the request. A loss notice is taken in at once.
inline std::unique_ptr<EngineRequest> startRequest(engine::LockEngine& engine,
                                                   const std::string& name, Millis wait,
                                                   Millis ttl,
                                                   engine::LockMode mode = engine::LockMode::kExclusive,
                                                   uint32_t permits = 0) {
  auto p = std::make_unique<EngineRequest>();
  engine::AcquireSpec spec;
  spec.name = name;
  spec.ownerLabel = "worker";
  spec.ttl = ttl;
  spec.wait = wait;
  spec.mode = mode;
  spec.permits = permits;
  EngineRequest* raw = p.get();
  spec.onLost = [raw](uint64_t, engine::LossReason reason, std::function<void()> told) {
    raw->losses.push_back(reason);
    told();
  };
  engine.acquire(std::move(spec), [raw](engine::AcquireOutcome o) { raw->outcome = o; });
  return p;
}

}  // namespace fencekeeper::testing
