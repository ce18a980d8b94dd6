#include "tests/support/strict_json.h"

#include <cstdint>

namespace fencekeeper::testing {

const JsonValue* JsonValue::find(std::string_view key) const {
  for (auto& [name, value] : members) {
    if (name == key) return &value;
  }
  return nullptr;
}

namespace {

class Parser {
 public:
  explicit Parser(std::string_view in) : in_(in) {}

  std::optional<JsonValue> document(std::string* error) {
    JsonValue v;
    bool ok = value(v, 0) && (skipSpace(), pos_ == in_.size() || fail("input after the value"));
    if (!ok) {
      if (error) *error = "at byte " + std::to_string(pos_) + ": " + error_;
      return std::nullopt;
    }
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool fail(const char* why) {
    if (error_.empty()) error_ = why;
    return false;
  }
  bool more() const { return pos_ < in_.size(); }
  char peek() const { return more() ? in_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  bool literal(std::string_view word) {
    if (in_.substr(pos_, word.size()) != word) return fail("bad literal");
    pos_ += word.size();
    return true;
  }
  void skipSpace() {
    while (more() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  bool value(JsonValue& v, int depth) {
    if (depth > kMaxDepth) return fail("nested too deep");
    skipSpace();
    switch (peek()) {
      case '{':
        return object(v, depth);
      case '[':
        return array(v, depth);
      case '"':
        v.type = JsonValue::Type::kString;
        return string(v.text);
      case 't':
        v.type = JsonValue::Type::kBool;
        v.boolean = true;
        return literal("true");
      case 'f':
        v.type = JsonValue::Type::kBool;
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number(v);
    }
  }

  bool object(JsonValue& v, int depth) {
    v.type = JsonValue::Type::kObject;
    ++pos_;
    skipSpace();
    if (eat('}')) return true;
    do {
      skipSpace();
      std::string key;
      if (peek() != '"' || !string(key)) return fail("expected a string key");
      if (v.find(key)) return fail("duplicate key");
      skipSpace();
      if (!eat(':')) return fail("expected ':'");
      JsonValue member;
      if (!value(member, depth + 1)) return false;
      v.members.emplace_back(std::move(key), std::move(member));
      skipSpace();
    } while (eat(','));
    return eat('}') || fail("expected ',' or '}'");
  }

  bool array(JsonValue& v, int depth) {
    v.type = JsonValue::Type::kArray;
    ++pos_;
    skipSpace();
    if (eat(']')) return true;
    do {
      JsonValue item;
      if (!value(item, depth + 1)) return false;
      v.items.push_back(std::move(item));
      skipSpace();
    } while (eat(','));
    return eat(']') || fail("expected ',' or ']'");
  }

  bool digits() {
    size_t start = pos_;
    while (peek() >= '0' && peek() <= '9') ++pos_;
    return pos_ > start;
  }

  bool number(JsonValue& v) {
    size_t start = pos_;
    eat('-');
    if (eat('0')) {
      if (peek() >= '0' && peek() <= '9') return fail("leading zero");
    } else if (!digits()) {
      return fail("expected a value");
    }
    if (eat('.') && !digits()) return fail("expected digits after '.'");
    if (eat('e') || eat('E')) {
      if (!eat('+')) eat('-');
      if (!digits()) return fail("expected exponent digits");
    }
    v.type = JsonValue::Type::kNumber;
    v.text = std::string(in_.substr(start, pos_ - start));
    return true;
  }

  static void appendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool hex4(uint32_t& out) {
    out = 0;
    for (int k = 0; k < 4; ++k) {
      char c = peek();
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return fail("bad \\u escape");
      out = out * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return true;
  }

  bool escape(std::string& out) {
    char c = peek();
    ++pos_;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out += c;
        return true;
      case 'b':
        out += '\b';
        return true;
      case 'f':
        out += '\f';
        return true;
      case 'n':
        out += '\n';
        return true;
      case 'r':
        out += '\r';
        return true;
      case 't':
        out += '\t';
        return true;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("lone low surrogate");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (!eat('\\') || !eat('u') || !hex4(low) || low < 0xDC00 || low > 0xDFFF) {
            return fail("lone high surrogate");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        appendUtf8(cp, out);
        return true;
      }
      default:
        return fail("bad escape");
    }
  }

  // One UTF-8 encoded character at pos_ (a byte >= 0x80 starts it), copied to `out`.
  bool utf8(std::string& out) {
    auto b = [&](size_t k) { return static_cast<uint8_t>(in_[pos_ + k]); };
    uint8_t lead = b(0);
    size_t n = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (n == 0 || pos_ + n > in_.size()) return fail("invalid UTF-8");
    uint32_t cp = lead & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      if ((b(k) & 0xC0) != 0x80) return fail("invalid UTF-8");
      cp = (cp << 6) | (b(k) & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return fail("invalid UTF-8");
    }
    out.append(in_.substr(pos_, n));
    pos_ += n;
    return true;
  }

  bool string(std::string& out) {
    ++pos_;  // the opening quote
    while (true) {
      if (!more()) return fail("unterminated string");
      auto c = static_cast<unsigned char>(peek());
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return fail("raw control character in a string");
      if (c == '\\') {
        ++pos_;
        if (!escape(out)) return false;
      } else if (c >= 0x80) {
        if (!utf8(out)) return false;
      } else {
        out += static_cast<char>(c);
        ++pos_;
      }
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::optional<JsonValue> parseStrictJson(std::string_view text, std::string* error) {
  return Parser(text).document(error);
}

}  // namespace fencekeeper::testing
