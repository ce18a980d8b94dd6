#include "sidecar/rpc/error_mapping.h"

namespace fencekeeper::rpc {

ipc::Error toIpc(engine::LeaseError error) {
  using E = engine::LeaseError;
  switch (error) {
    case E::kOk:
      return ipc::Error::OK;
    case E::kInvalidName:
      return ipc::Error::INVALID_NAME;
    case E::kInvalidArgument:
      return ipc::Error::INVALID_ARGUMENT;
    case E::kTimedOut:
      return ipc::Error::TIMED_OUT;
    case E::kNotHeld:
      return ipc::Error::NOT_HELD;
    case E::kExpired:
      return ipc::Error::EXPIRED;
    case E::kLost:
      return ipc::Error::LOST;
    case E::kZkUnavailable:
      return ipc::Error::ZK_UNAVAILABLE;
    case E::kShuttingDown:
      return ipc::Error::SHUTTING_DOWN;
    case E::kLimitReached:
      return ipc::Error::LIMIT_REACHED;
    case E::kInternal:
      return ipc::Error::INTERNAL;
    case E::kPermissionDenied:
      return ipc::Error::PERMISSION_DENIED;
    case E::kInvalidOwner:
      return ipc::Error::INVALID_OWNER;
    case E::kModeConflict:
      return ipc::Error::MODE_CONFLICT;
  }
  return ipc::Error::INTERNAL;
}

ipc::LossReason toIpc(engine::LossReason reason) {
  using R = engine::LossReason;
  switch (reason) {
    case R::kTtlExpired:
      return ipc::LossReason::TTL_EXPIRED;
    case R::kSessionLost:
      return ipc::LossReason::SESSION_LOST;
    case R::kSessionUncertain:
      return ipc::LossReason::SESSION_UNCERTAIN;
    case R::kSidecarShutdown:
      return ipc::LossReason::SIDECAR_SHUTDOWN;
    case R::kReleasedElsewhere:
      return ipc::LossReason::RELEASED_ELSEWHERE;
  }
  return ipc::LossReason::SESSION_UNCERTAIN;
}

ipc::LockMode toIpc(engine::LockMode mode) {
  switch (mode) {
    case engine::LockMode::kShared:
      return ipc::LockMode::SHARED;
    case engine::LockMode::kPermits:
      return ipc::LockMode::PERMITS;
    case engine::LockMode::kExclusive:
      break;
  }
  return ipc::LockMode::EXCLUSIVE;
}

std::optional<engine::LockMode> fromIpc(ipc::LockMode mode) {
  switch (mode) {
    case ipc::LockMode::EXCLUSIVE:
      return engine::LockMode::kExclusive;
    case ipc::LockMode::SHARED:
      return engine::LockMode::kShared;
    case ipc::LockMode::PERMITS:
      return engine::LockMode::kPermits;
  }
  return std::nullopt;  // a mode of a newer schema
}

ipc::HolderState toIpc(engine::HolderState state) {
  switch (state) {
    case engine::HolderState::kHeld:
      return ipc::HolderState::HELD;
    case engine::HolderState::kFree:
      return ipc::HolderState::FREE;
    case engine::HolderState::kUnknown:
      break;
  }
  return ipc::HolderState::UNKNOWN;
}

}  // namespace fencekeeper::rpc
