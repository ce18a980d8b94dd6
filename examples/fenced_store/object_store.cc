#include "examples/fenced_store/object_store.h"

#include <optional>
#include <utility>

namespace fencekeeper::store {

ObjectStore::ObjectStore(StateFile file, StoreState state)
    : file_(std::move(file)), objects_(std::move(state.objects)) {
  gate_.restore(std::move(state.fences));
}

StoreResult ObjectStore::put(std::string_view key, std::string value, std::string_view lock,
                             uint64_t token) {
  std::lock_guard guard(mu_);
  // Kept to undo the request if saving fails, so that memory always matches the disk: otherwise
  // a later GET could return a value that a crash would then take back.
  FenceGate::Fences fencesBefore = gate_.snapshot();
  if (gate_.admit(lock, token) == FenceVerdict::kStale) {
    return {StoreStatus::kStale, gate_.highest(lock), {}, {}};
  }
  auto [it, inserted] = objects_.try_emplace(std::string(key));
  std::optional<std::string> valueBefore;
  if (!inserted) valueBefore = std::move(it->second);
  it->second = std::move(value);

  StoreResult result{StoreStatus::kOk, token, {}, {}};
  if (!file_.save(objects_, gate_.snapshot(), result.error)) {
    if (valueBefore) {
      it->second = std::move(*valueBefore);
    } else {
      objects_.erase(it);
    }
    gate_.restore(std::move(fencesBefore));
    result.status = StoreStatus::kIoError;
    result.highest = gate_.highest(lock);
    return result;
  }
  result.sequence = ++accepted_;
  return result;
}

StoreResult ObjectStore::get(std::string_view key, std::string_view lock, uint64_t token) {
  std::lock_guard guard(mu_);
  FenceGate::Fences fencesBefore = gate_.snapshot();
  if (gate_.admit(lock, token) == FenceVerdict::kStale) {
    return {StoreStatus::kStale, gate_.highest(lock), {}, {}};
  }
  // A raised fence is saved before the value is returned: if it were lost in a crash, the
  // stalled holder this read just fenced out could write again after the restart.
  auto previous = fencesBefore.find(lock);
  bool raised = previous == fencesBefore.end() || token > previous->second;
  StoreResult result{StoreStatus::kOk, token, {}, {}};
  if (raised && !file_.save(objects_, gate_.snapshot(), result.error)) {
    gate_.restore(std::move(fencesBefore));
    result.status = StoreStatus::kIoError;
    result.highest = gate_.highest(lock);
    return result;
  }
  result.sequence = ++accepted_;
  auto it = objects_.find(key);
  if (it == objects_.end()) {
    result.status = StoreStatus::kNotFound;
  } else {
    result.value = it->second;
  }
  return result;
}

uint64_t ObjectStore::fence(std::string_view lock) const { return gate_.highest(lock); }

}  // namespace fencekeeper::store
