#include "sidecar/engine/lock_name.h"

namespace fencekeeper::engine {

bool isValidLockName(std::string_view name) {
  if (name.empty() || name.size() > kMaxLockNameBytes) return false;
  size_t start = 0;
  while (true) {
    size_t end = name.find('/', start);
    std::string_view segment =
        name.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    // A segment that looks like a queue node would sit in its parent lock's queue as a contender.
    if (segment.find("__lock__") != std::string_view::npos ||
        segment.find("__rlock__") != std::string_view::npos) {
      return false;
    }
    for (char c : segment) {
      bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
      if (!ok) return false;
    }
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

// Matches kazoo's `(__lock__|__rlock__)(-?\d{10})$`.
std::optional<QueueNode> parseQueueNode(std::string_view child) {
  constexpr size_t kDigits = 10;
  if (child.size() < kDigits) return std::nullopt;
  std::string_view digits = child.substr(child.size() - kDigits);
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::string_view head = child.substr(0, child.size() - kDigits);
  bool negative = !head.empty() && head.back() == '-';
  if (negative) head.remove_suffix(1);
  auto endsWith = [&](std::string_view s) {
    return head.size() >= s.size() && head.substr(head.size() - s.size()) == s;
  };
  if (!endsWith("__lock__") && !endsWith("__rlock__")) return std::nullopt;
  int64_t value = std::stoll(std::string(digits));
  return QueueNode{std::string(child), negative ? -value : value};
}

}  // namespace fencekeeper::engine
