// A strict JSON parser (RFC 8259) for tests of what the sidecar writes: one value and nothing
// after it, no raw control characters in strings, valid UTF-8 only (in strings and \u escapes:
// no lone surrogates), no duplicate keys, numbers by the grammar. Deliberately its own code:
// the oracle must not share the sidecar's escaping.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fencekeeper::testing {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;  // a string's value, or a number as written
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;  // in order

  // The member `key` of an object, or null.
  const JsonValue* find(std::string_view key) const;
};

// The value `text` holds, or nullopt with `*error` saying where and why.
std::optional<JsonValue> parseStrictJson(std::string_view text, std::string* error);

}  // namespace fencekeeper::testing
