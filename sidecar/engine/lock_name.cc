#include "sidecar/engine/lock_name.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace fencekeeper::engine {

std::string printable(std::string_view bytes, size_t max) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (bytes.size() > max) out += "...";
  return out;
}

std::optional<std::string> lockNameProblem(std::string_view name) {
  if (name.empty()) return "the lock name is empty";
  if (name.size() > kMaxLockNameBytes) {
    return "the lock name has " + std::to_string(name.size()) + " bytes, above the maximum " +
           std::to_string(kMaxLockNameBytes);
  }
  size_t start = 0;
  while (true) {
    size_t end = name.find('/', start);
    std::string_view segment =
        name.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (segment.empty() || segment == "." || segment == "..") {
      return "lock name '" + printable(name) + "' has an empty, '.' or '..' segment";
    }
    // A segment that looks like a queue node would sit in its parent lock's queue as a contender.
    if (segment.find("__lock__") != std::string_view::npos ||
        segment.find("__rlock__") != std::string_view::npos ||
        segment.find("__sem") != std::string_view::npos) {
      return "lock name '" + printable(name) +
             "' has a segment containing __lock__, __rlock__ or __sem";
    }
    for (char c : segment) {
      bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
      if (!ok) {
        return "lock name '" + printable(name) + "' has a byte outside [A-Za-z0-9._-/]: '" +
               printable(std::string_view(&c, 1)) + "'";
      }
    }
    if (end == std::string_view::npos) return std::nullopt;
    start = end + 1;
  }
}

bool isValidLockName(std::string_view name) { return !lockNameProblem(name); }
std::string queueMarker(LockMode mode, uint32_t permits) {
  switch (mode) {
    case LockMode::kShared:
      return "__rlock__";
    case LockMode::kPermits:
      return "__sem" + std::to_string(permits) + "__";
    case LockMode::kExclusive:
      break;
  }
  return "__lock__";
}

namespace {
// The name without its sequence suffix (and the suffix's sign), if it has one.
std::optional<std::string_view> headOf(std::string_view child, int64_t* sequence) {
  constexpr size_t kDigits = 10;
  if (child.size() < kDigits) return std::nullopt;
  std::string_view digits = child.substr(child.size() - kDigits);
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::string_view head = child.substr(0, child.size() - kDigits);
  bool negative = !head.empty() && head.back() == '-';
  if (negative) head.remove_suffix(1);
  if (sequence) {
    int64_t value = 0;
    std::from_chars(digits.data(), digits.data() + kDigits, value);
    *sequence = negative ? -value : value;
  }
  return head;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// `__sem<N>__` at the end of `head`: N (1..kMaxPermits, no leading zero), or 0.
uint32_t semaphoreMarkerPermits(std::string_view head) {
  if (!endsWith(head, "__")) return 0;
  std::string_view body = head.substr(0, head.size() - 2);
  size_t digits = 0;
  while (digits < body.size() && body[body.size() - 1 - digits] >= '0' &&
         body[body.size() - 1 - digits] <= '9') {
    ++digits;
  }
  if (digits == 0 || digits > 5) return 0;
  std::string_view number = body.substr(body.size() - digits);
  body.remove_suffix(digits);
  if (number.front() == '0' || !endsWith(body, "__sem")) return 0;
  uint32_t permits = 0;
  std::from_chars(number.data(), number.data() + number.size(), permits);
  return permits <= kMaxPermits ? permits : 0;
}

// The mode the marker at the end of `head` says, and where that marker starts.
struct Marker {
  LockMode mode;
  uint32_t permits;
  size_t start;
};
std::optional<Marker> markerOf(std::string_view head) {
  if (endsWith(head, "__rlock__")) return Marker{LockMode::kShared, 0, head.size() - 9};
  if (endsWith(head, "__lock__")) return Marker{LockMode::kExclusive, 0, head.size() - 8};
  if (uint32_t permits = semaphoreMarkerPermits(head)) {
    std::string marker = queueMarker(LockMode::kPermits, permits);
    return Marker{LockMode::kPermits, permits, head.size() - marker.size()};
  }
  return std::nullopt;
}
}  // namespace

// `__lock__` and `__rlock__` match kazoo's `(__lock__|__rlock__)(-?\d{10})$`.
std::optional<QueueNode> parseQueueNode(std::string_view child) {
  int64_t sequence = 0;
  auto head = headOf(child, &sequence);
  auto marker = head ? markerOf(*head) : std::nullopt;
  if (!marker) return std::nullopt;
  return QueueNode{std::string(child), sequence, marker->mode, marker->permits};
}

size_t markerStart(std::string_view child) {
  auto head = headOf(child, nullptr);
  auto marker = head ? markerOf(*head) : std::nullopt;
  return marker ? marker->start : std::string_view::npos;
}

int32_t sequenceOffset(int64_t sequence, int64_t reference) {
  return static_cast<int32_t>(static_cast<uint32_t>(sequence) - static_cast<uint32_t>(reference));
}

void sortQueue(std::vector<QueueNode>& queue) {
  if (queue.empty()) return;
  int64_t reference = queue.front().sequence;
  std::stable_sort(queue.begin(), queue.end(), [reference](const auto& a, const auto& b) {
    return sequenceOffset(a.sequence, reference) < sequenceOffset(b.sequence, reference);
  });
}

void appendSequenceSuffix(std::string& out, int32_t seq) {
  char digits[12];
  int64_t value = seq;
  auto end = std::to_chars(digits, digits + sizeof digits, value < 0 ? -value : value).ptr;
  size_t n = static_cast<size_t>(end - digits);
  size_t width = value < 0 ? 9 : 10;
  if (value < 0) out += '-';
  if (n < width) out.append(width - n, '0');
  out.append(digits, n);
}

std::optional<int32_t> sequenceAfter(std::string_view path, std::string_view prefix) {
  if (path.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view suffix = path.substr(prefix.size());
  int32_t seq = 0;
  auto [end, ec] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), seq);
  if (ec != std::errc() || end != suffix.data() + suffix.size()) return std::nullopt;
  std::string again;
  appendSequenceSuffix(again, seq);
  if (again != suffix) return std::nullopt;  // not in ZooKeeper's own form
  return seq;
}

}  // namespace fencekeeper::engine
