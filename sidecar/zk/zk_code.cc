#include "sidecar/zk/zk_client.h"

namespace fencekeeper::zk {

const char* codeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kNoNode:
      return "no node";
    case Code::kNodeExists:
      return "node exists";
    case Code::kNotEmpty:
      return "not empty";
    case Code::kBadVersion:
      return "bad version";
    case Code::kConnectionLoss:
      return "connection loss";
    case Code::kOperationTimeout:
      return "operation timeout";
    case Code::kSessionExpired:
      return "session expired";
    case Code::kClosing:
      return "closing";
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kNoAuth:
      return "not authorized by the node's ACL";
    case Code::kOther:
      return "other error";
  }
  return "?";
}

const char* sessionStateName(SessionState state) {
  switch (state) {
    case SessionState::kConnecting:
      return "connecting";
    case SessionState::kConnected:
      return "connected";
    case SessionState::kExpired:
      return "expired";
    case SessionState::kAuthFailed:
      return "auth failed";
  }
  return "?";
}

}  // namespace fencekeeper::zk
