// An Executor for single-threaded tests: posted work runs when the test says so.
#pragma once

#include <deque>
#include <functional>

#include "common/executor.h"

namespace fencekeeper::testing {

class ManualExecutor final : public Executor {
 public:
  void post(std::function<void()> fn) override { queue_.push_back(std::move(fn)); }
  // Runs the oldest posted work, if any. Returns whether there was some.
  bool runOne() {
    if (queue_.empty()) return false;
    auto fn = std::move(queue_.front());
    queue_.pop_front();
    fn();
    return true;
  }
  // Runs posted work, including work posted meanwhile, until none is left. Returns the count.
  size_t runAll() {
    size_t n = 0;
    while (runOne()) ++n;
    return n;
  }

 private:
  std::deque<std::function<void()>> queue_;
};

}  // namespace fencekeeper::testing
