// Hands work to the sidecar's event loop thread from any thread (ZooKeeper's client threads).
#pragma once

#include <functional>

namespace fencekeeper {

class Executor {
 public:
  virtual ~Executor() = default;
  // Thread-safe. `fn` runs later on the loop thread, in posting order; never inline.
  virtual void post(std::function<void()> fn) = 0;
};

}  // namespace fencekeeper
