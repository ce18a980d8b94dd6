// The JSON log format: string escaping, the formatter's members, and the event log's lease and
// session events in both formats (the text lines are the ones scripts grep).
#include <gtest/gtest.h>
#include <kj/debug.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <zookeeper_log.h>

#include <regex>
#include <sstream>

#include "sidecar/logging/event_log.h"
#include "sidecar/logging/json_formatter.h"
#include "common/json_string.h"
#include "sidecar/logging/kj_log.h"
#include "sidecar/zk/c_client_log.h"
#include "tests/support/strict_json.h"

namespace fencekeeper::logging {
namespace {

using testing::JsonValue;
using testing::parseStrictJson;

std::string jsonString(std::string_view text) {
  spdlog::memory_buf_t out;
  appendJsonString(text, out);
  return fmt::to_string(out);
}

// The decoded value of jsonString(text), through the strict parser.
std::string roundTrip(std::string_view text) {
  std::string error;
  auto v = parseStrictJson(jsonString(text), &error);
  EXPECT_TRUE(v) << error << " in " << jsonString(text);
  return v ? v->text : "";
}

// The oracle itself: what it must refuse for "every line is JSON" to mean anything.
TEST(StrictJson, RefusesWhatJsonForbids) {
  for (std::string_view bad :
       {"{\"a\":1} x", "{\"a\":1,\"a\":2}", "\"tab\there\"", "\"\xFF\"", "\"\xC0\x80\"",
        "\"\\ud800\"", "01", "1.", "{\"a\" 1}", "[1,]", "\"\\x\"", "", "tru"}) {
    EXPECT_FALSE(parseStrictJson(bad, nullptr)) << bad;
  }
  std::string error;
  auto v = parseStrictJson(R"( {"a":[1,-2.5e3,true,null],"b":"\u00e9\ud83d\ude00"} )", &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(v->find("a")->items.size(), 4u);
  EXPECT_EQ(v->find("b")->text, "\xC3\xA9\xF0\x9F\x98\x80");
}

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(jsonString("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(jsonString("\n\r\t\b\f"), R"("\n\r\t\b\f")");
  EXPECT_EQ(jsonString(std::string_view("\x00\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\x7f\"");
  EXPECT_EQ(jsonString("/ plain 'text' {}"), "\"/ plain 'text' {}\"");
  EXPECT_EQ(roundTrip(std::string_view("x\"\\\n\x00y", 6)), std::string_view("x\"\\\n\x00y", 6));
}

TEST(JsonString, KeepsValidUtf8) {
  for (std::string_view s : {"\xC3\xA9t\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC", "\xF0\x9F\x98\x80",
                             "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"}) {
    EXPECT_EQ(jsonString(s), "\"" + std::string(s) + "\"");
  }
}

TEST(JsonString, ReplacesEachMaximalInvalidSubpartWithOneReplacementCharacter) {
  const std::string r = "\xEF\xBF\xBD";
  struct Case {
    std::string_view in;
    std::string out;
  } cases[] = {
      {"a\xFF"
       "b",
       "a" + r + "b"},      // never a UTF-8 byte
      {"\x80\xBF", r + r},  // lone continuation bytes
      {"\xC3", r},          // truncated at the end
      {"\xE6\x97"
       "x",
       r + "x"},                            // truncated before ASCII: one replacement
      {"\xC0\x80", r + r},                  // overlong NUL
      {"\xE0\x80\x80", r + r + r},          // overlong: E0 wants A0..BF next
      {"\xED\xA0\x80", r + r + r},          // a surrogate (U+D800)
      {"\xF4\x90\x80\x80", r + r + r + r},  // above U+10FFFF
      {"\xF5\x80", r + r},                  // F5 never starts a sequence
      {"\xF0\x9F\x98"
       "\xC3\xA9",
       r + "\xC3\xA9"},  // truncated 4-byte, then a valid é
  };
  for (const auto& c : cases) {
    EXPECT_EQ(jsonString(c.in), "\"" + c.out + "\"") << ::testing::PrintToString(c.in);
    EXPECT_EQ(roundTrip(c.in), c.out);
  }
}

// Captures the default logger's lines (what EventLog and every spdlog:: call write).
class CapturedLog {
 public:
  explicit CapturedLog(bool json) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    auto logger = std::make_shared<spdlog::logger>("test", sink);
    if (json) {
      logger->set_formatter(std::make_unique<JsonFormatter>());
    } else {
      logger->set_pattern("%l %v");
    }
    logger->set_level(spdlog::level::trace);
    previous_ = spdlog::default_logger();
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }

  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  // The single line written, parsed: it must be one strict JSON object.
  JsonValue onlyObject() const {
    auto all = lines();
    EXPECT_EQ(all.size(), 1u) << out_.str();
    std::string error;
    auto v = parseStrictJson(all.empty() ? "" : all[0], &error);
    EXPECT_TRUE(v) << error << " in " << out_.str();
    EXPECT_TRUE(v && v->type == JsonValue::Type::kObject) << out_.str();
    return v ? *v : JsonValue{};
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

std::vector<std::string> keysOf(const JsonValue& v) {
  std::vector<std::string> keys;
  for (auto& [k, ignored] : v.members) keys.push_back(k);
  return keys;
}

std::string member(const JsonValue& v, std::string_view key) {
  const JsonValue* m = v.find(key);
  return m ? m->text : "<missing " + std::string(key) + ">";
}

TEST(JsonFormatter, AnyLineIsOneObjectWithTimeLevelEventAndMessage) {
  CapturedLog log(true);
  spdlog::warn("peer said \"{}\"", std::string_view("bad\n\x01\xFF", 6));
  JsonValue v = log.onlyObject();
  EXPECT_EQ(keysOf(v), (std::vector<std::string>{"time", "level", "event", "msg"}));
  EXPECT_TRUE(
      std::regex_match(member(v, "time"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << member(v, "time");
  EXPECT_EQ(member(v, "level"), "warning");
  EXPECT_EQ(member(v, "event"), "log");
  EXPECT_EQ(member(v, "msg"), "peer said \"bad\n\x01\xEF\xBF\xBD\"");
}

TEST(JsonFormatter, TimeIsUtcWithMilliseconds) {
  spdlog::memory_buf_t out;
  spdlog::details::log_msg msg("", spdlog::level::info, "x");
  msg.time = spdlog::log_clock::time_point(std::chrono::milliseconds(1'780'000'000'007));
  JsonFormatter().format(msg, out);
  EXPECT_EQ(fmt::to_string(out),
            "{\"time\":\"2026-05-28T20:26:40.007Z\",\"level\":\"info\",\"event\":\"log\","
            "\"msg\":\"x\"}\n");
}

engine::LeaseEvent sampleEvent(engine::LeaseEventKind kind) {
  engine::LeaseEvent e;
  e.kind = kind;
  e.lock = "orders";
  e.token = 4294967338;
  e.clientPid = 123;
  e.clientUid = 1000;
  e.connection = 4;
  e.ownerLabel = "web-1 \"blue\"";
  e.ttl = Millis(30'000);
  e.waited = Millis(12);
  e.held = Millis(2'500);
  e.reason = engine::LossReason::kTtlExpired;
  e.error = engine::LeaseError::kExpired;
  return e;
}

struct EventCase {
  engine::LeaseEventKind kind;
  std::string_view how;
  std::string text;  // the text format's line ("%l %v")
  std::string event;
  std::vector<std::pair<std::string, std::string>> extra;  // members after owner
};

TEST(EventLog, LeaseEventsInBothFormats) {
  using K = engine::LeaseEventKind;
  const std::string who = "lock=orders token=4294967338 client=pid 123 uid 1000 conn 4";
  EventCase cases[] = {
      {K::kGranted,
       "",
       "info grant " + who + " owner='web-1 \"blue\"' ttl=30000ms waited=12ms",
       "grant",
       {{"ttl_ms", "30000"}, {"waited_ms", "12"}}},
      {K::kRenewFailed,
       "",
       "info renew failed " + who + " error=expired reason=ttl expired",
       "renew_failed",
       {{"error", "expired"}, {"reason", "ttl expired"}}},
      {K::kLost,
       "",
       "warning lost " + who + " reason=ttl expired held=2500ms",
       "lost",
       {{"reason", "ttl expired"}, {"held_ms", "2500"}}},
      {K::kReleased, "", "info release " + who + " held=2500ms", "release", {{"held_ms", "2500"}}},
      {K::kReleased,
       "dropped",
       "info release " + who + " held=2500ms how=dropped",
       "release",
       {{"held_ms", "2500"}, {"how", "dropped"}}},
  };
  for (const auto& c : cases) {
    engine::LeaseEvent e = sampleEvent(c.kind);
    e.how = c.how;
    {
      CapturedLog text(false);
      EventLog().leaseEvent(e);
      EXPECT_EQ(text.lines(), std::vector<std::string>{c.text});
    }
    CapturedLog json(true);
    EventLog().leaseEvent(e);
    JsonValue v = json.onlyObject();
    std::vector<std::string> keys{"time",  "level",      "event",      "msg",        "lock",
                                  "token", "client_pid", "client_uid", "connection", "owner"};
    for (auto& [k, value] : c.extra) keys.push_back(k);
    EXPECT_EQ(keysOf(v), keys) << c.text;
    EXPECT_EQ(member(v, "event"), c.event);
    EXPECT_EQ(member(v, "level") + " " + member(v, "msg"), c.text);
    EXPECT_EQ(member(v, "lock"), "orders");
    EXPECT_EQ(v.find("token")->type, JsonValue::Type::kNumber);
    EXPECT_EQ(member(v, "token"), "4294967338");
    EXPECT_EQ(member(v, "client_pid"), "123");
    EXPECT_EQ(member(v, "client_uid"), "1000");
    EXPECT_EQ(member(v, "connection"), "4");
    EXPECT_EQ(member(v, "owner"), "web-1 \"blue\"");
    for (auto& [k, value] : c.extra) EXPECT_EQ(member(v, k), value) << k;
  }
}

TEST(EventLog, AnOwnerLabelCannotForgeATextLine) {
  engine::LeaseEvent e = sampleEvent(engine::LeaseEventKind::kGranted);
  e.ownerLabel = "x'\n2026-12-03T00:00:00.000 info grant lock=orders token=1 \\";
  {
    CapturedLog text(false);
    EventLog().leaseEvent(e);
    auto lines = text.lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find(" owner='x\\x27\\x0a2026-12-03T00:00:00.000 info grant lock=orders "
                            "token=1 \\x5c' ttl="),
              std::string::npos)
        << lines[0];
  }
  CapturedLog json(true);
  EventLog().leaseEvent(e);
  EXPECT_EQ(member(json.onlyObject(), "owner"), e.ownerLabel);
}

TEST(EventLog, SessionEventsInBothFormats) {
  {
    CapturedLog text(false);
    EventLog().sessionState(zk::SessionState::kExpired);
    EventLog().vouchingLapsed();
    EXPECT_EQ(text.lines(),
              (std::vector<std::string>{
                  "info session state=expired",
                  "warning vouching lapsed: every lease held is lost (session uncertain)"}));
  }
  {
    CapturedLog json(true);
    EventLog().sessionState(zk::SessionState::kAuthFailed);
    JsonValue v = json.onlyObject();
    EXPECT_EQ(keysOf(v), (std::vector<std::string>{"time", "level", "event", "msg", "state"}));
    EXPECT_EQ(member(v, "event"), "session_state");
    EXPECT_EQ(member(v, "state"), "auth failed");
  }
  CapturedLog json(true);
  EventLog().vouchingLapsed();
  JsonValue v = json.onlyObject();
  EXPECT_EQ(member(v, "event"), "vouching_lapsed");
  EXPECT_EQ(member(v, "level"), "warning");
}

TEST(EventLog, FieldsBelongToTheirLineOnly) {
  CapturedLog json(true);
  EventLog().leaseEvent(sampleEvent(engine::LeaseEventKind::kGranted));
  spdlog::info("after");
  auto lines = json.lines();
  ASSERT_EQ(lines.size(), 2u);
  std::string error;
  auto after = parseStrictJson(lines[1], &error);
  ASSERT_TRUE(after) << error;
  EXPECT_EQ(member(*after, "event"), "log");
  EXPECT_EQ(after->find("lock"), nullptr);
}

// KJ_LOG wrote to stderr directly, outside any --log-format.
TEST(KjLog, KjLinesGoThroughSpdlog) {
  CapturedLog json(true);
  {
    KjLogToSpdlog bridge;
    KJ_LOG(WARNING, "a kj warning", 42);
  }
  JsonValue v = json.onlyObject();
  EXPECT_EQ(member(v, "level"), "warning");
  EXPECT_EQ(member(v, "msg").rfind("kj ", 0), 0u) << member(v, "msg");
  EXPECT_NE(member(v, "msg").find("a kj warning; 42"), std::string::npos) << member(v, "msg");
}

// What the ZooKeeper C client logs without a handle went to stderr, outside any --log-format.
TEST(ZooKeeperClientLog, LinesWithoutAHandleGoThroughSpdlog) {
  CapturedLog json(true);
  zk::routeCClientLogStream();
  log_message(nullptr, ZOO_LOG_LEVEL_ERROR, __LINE__, "test", "no handle %d", 7);
  JsonValue v = json.onlyObject();
  EXPECT_EQ(member(v, "level"), "debug");
  EXPECT_NE(member(v, "msg").find("zookeeper client: "), std::string::npos) << member(v, "msg");
  EXPECT_NE(member(v, "msg").find("no handle 7"), std::string::npos) << member(v, "msg");
}

}  // namespace
}  // namespace fencekeeper::logging
