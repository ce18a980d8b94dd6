// libFuzzer target: the lock-name validator and the queue-node parser (sidecar/engine/lock_name.h)
// against oracles written independently of them: the validator agrees with a plain restatement of
// the rule, a valid name makes a well-formed ZooKeeper path and never parses as a queue node, and
// a parsed queue node's sequence prints back to the suffix it came from.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "sidecar/engine/lock_name.h"
#include "tests/fuzz/oracle.h"

namespace {

using fencekeeper::engine::isValidLockName;
using fencekeeper::engine::kMaxLockNameBytes;
using fencekeeper::engine::LockMode;
using fencekeeper::engine::markerStart;
using fencekeeper::engine::parseQueueNode;
using fencekeeper::engine::queueMarker;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep) {
      parts.emplace_back();
    } else {
      parts.back().push_back(c);
    }
  }
  return parts;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The rule of lock_name.h, restated.
bool referenceValid(const std::string& name) {
  if (name.empty() || name.size() > kMaxLockNameBytes) return false;
  const std::string allowed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";
  for (const auto& segment : split(name, '/')) {
    if (segment.empty() || segment == "." || segment == "..") return false;
    if (contains(segment, "__lock__") || contains(segment, "__rlock__") ||
        contains(segment, "__sem")) {
      return false;
    }
    if (segment.find_first_not_of(allowed) != std::string::npos) return false;
  }
  return true;
}

// What ZooKeeper accepts as a path (PathUtils.validatePath), for the lock node of `name`.
void checkZkPath(const std::string& path) {
  FK_FUZZ_CHECK(path.back() != '/', path);
  FK_FUZZ_CHECK(!contains(path, "//"), path);
  for (const auto& segment : split(path.substr(1), '/')) {
    FK_FUZZ_CHECK(segment != "." && segment != "..", path);
    for (unsigned char c : segment) FK_FUZZ_CHECK(c > 0x1f && c < 0x7f, path);
  }
}

void checkQueueNode(const std::string& child) {
  auto node = parseQueueNode(child);
  if (!node) return;
  FK_FUZZ_CHECK(node->name == child, child);
  char digits[24];
  std::snprintf(digits, sizeof digits, "%010lld",
                static_cast<long long>(node->sequence < 0 ? -node->sequence : node->sequence));
  FK_FUZZ_CHECK(child.size() >= 10 && child.substr(child.size() - 10) == digits,
                child + " parsed as " + std::to_string(node->sequence));
  bool minus = child.size() > 10 && child[child.size() - 11] == '-';
  FK_FUZZ_CHECK(minus || node->sequence >= 0, child);
  std::string head = child.substr(0, child.size() - 10 - (minus ? 1 : 0));
  auto endsWith = [&](const std::string& s) {
    return head.size() >= s.size() && head.compare(head.size() - s.size(), s.size(), s) == 0;
  };
  // The marker says the mode: kazoo's two, or `__sem<N>__` with N in [1, kMaxPermits] written
  // without a leading zero (as queueMarker() writes it).
  std::string marker = queueMarker(node->mode, node->permits);
  FK_FUZZ_CHECK(endsWith(marker), child + " parsed with the marker " + marker);
  FK_FUZZ_CHECK(markerStart(child) == head.size() - marker.size(), child);
  FK_FUZZ_CHECK((node->mode == LockMode::kPermits) ==
                    (node->permits >= 1 && node->permits <= fencekeeper::engine::kMaxPermits),
                child);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  bool valid = isValidLockName(input);
  FK_FUZZ_CHECK(valid == referenceValid(input), "validator and rule disagree");
  if (valid) {
    FK_FUZZ_CHECK(input.find('\0') == std::string::npos, "valid name with NUL");
    checkZkPath("/fencekeeper/locks/" + input);
    // A lock's node and its ancestors never look like queue entries of a parent lock.
    for (const auto& segment : split(input, '/')) {
      FK_FUZZ_CHECK(!parseQueueNode(segment), "valid segment parses as a queue node: " + segment);
    }
    // The node names the engine writes for it parse back to their sequence.
    uint32_t seq = 0;
    for (size_t i = 0; i < size; ++i) seq = seq * 31 + data[i];
    seq &= 0x7fffffff;
    for (auto [mode, permits] : {std::pair{LockMode::kExclusive, 0u}, {LockMode::kShared, 0u},
                                 {LockMode::kPermits, seq % 10'000 + 1}}) {
      char digits[16];
      std::snprintf(digits, sizeof digits, "%010u", seq);
      std::string child = "fkfuzz-1" + queueMarker(mode, permits) + digits;
      auto node = parseQueueNode(child);
      FK_FUZZ_CHECK(node && node->sequence == seq && node->mode == mode &&
                        node->permits == permits,
                    child);
    }
  }
  checkQueueNode(input);
  return 0;
}
