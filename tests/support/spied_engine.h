// A lock engine on the in-memory ZooKeeper, its requests seen through a SpyZkClient: one sidecar
// of an engine test with several, all on one server, executor and hand-driven timer.
#pragma once

#include <string>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/zk/fake_zk.h"
#include "tests/support/manual_executor.h"
#include "tests/support/spy_zk_client.h"

namespace fencekeeper::testing {

struct SpiedEngine {
  SpiedEngine(zk::FakeZkServer& server, ManualExecutor& ex, ManualTimer& timer,
              std::string instanceId)
      : zk(server, ex), spy(zk), engine(spy, timer, config(std::move(instanceId))) {}
  static engine::EngineConfig config(std::string instanceId) {
    engine::EngineConfig c;
    c.instanceId = std::move(instanceId);
    return c;
  }
  zk::FakeZkClient zk;
  SpyZkClient spy;
  engine::LockEngine engine;
};

}  // namespace fencekeeper::testing
