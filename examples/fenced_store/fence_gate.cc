#include "examples/fenced_store/fence_gate.h"

#include <utility>

namespace fencekeeper {

FenceVerdict FenceGate::admit(std::string_view lock, uint64_t token) {
  std::lock_guard lock_guard(mu_);
  auto it = highest_.find(lock);
  if (it == highest_.end()) {
    highest_.emplace(std::string(lock), token);
    return FenceVerdict::kAccepted;
  }
  if (token < it->second) return FenceVerdict::kStale;
  it->second = token;
  return FenceVerdict::kAccepted;
}

uint64_t FenceGate::highest(std::string_view lock) const {
  std::lock_guard lock_guard(mu_);
  auto it = highest_.find(lock);
  return it == highest_.end() ? 0 : it->second;
}

void FenceGate::reset(std::string_view lock) {
  std::lock_guard lock_guard(mu_);
  auto it = highest_.find(lock);
  if (it != highest_.end()) highest_.erase(it);
}

FenceGate::Fences FenceGate::snapshot() const {
  std::lock_guard lock_guard(mu_);
  return highest_;
}

void FenceGate::restore(Fences fences) {
  std::lock_guard lock_guard(mu_);
  highest_ = std::move(fences);
}

}  // namespace fencekeeper
