// A real sidecar with --log-format json: a grant, a release, a loss to TTL expiry and a renew
// of that lost lease, a lease dropped with its connection, a loss at shutdown. Every line of its
// log (stdout and stderr, as the harness captures them) must be one strict JSON object, and each
// lease event must carry its fields.
#include <capnp/ez-rpc.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <regex>
#include <sstream>

#include "fencekeeper/client.h"
#include "ipc/fencekeeper.capnp.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/strict_json.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

std::vector<JsonValue> parseEveryLine(const std::string& log) {
  std::vector<JsonValue> out;
  std::istringstream in(log);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    std::string error;
    auto v = parseStrictJson(line, &error);
    EXPECT_TRUE(v && v->type == JsonValue::Type::kObject)
        << "line " << n << " is not a JSON object (" << error << "): " << line;
    if (v) out.push_back(*v);
  }
  EXPECT_TRUE(log.empty() || log.back() == '\n') << "the log ends inside a line";
  return out;
}

std::string text(const JsonValue& v, std::string_view key) {
  const JsonValue* m = v.find(key);
  return m && m->type == JsonValue::Type::kString ? m->text
                                                  : "<no string " + std::string(key) + ">";
}

std::string number(const JsonValue& v, std::string_view key) {
  const JsonValue* m = v.find(key);
  return m && m->type == JsonValue::Type::kNumber ? m->text
                                                  : "<no number " + std::string(key) + ">";
}

bool has(const JsonValue& v, std::string_view key, JsonValue::Type type) {
  const JsonValue* m = v.find(key);
  return m && m->type == type;
}

// The lease events of `lock`, in log order.
std::vector<JsonValue> eventsOf(const std::vector<JsonValue>& lines, const std::string& lock) {
  std::vector<JsonValue> out;
  for (auto& v : lines) {
    if (text(v, "event") != "log" && v.find("lock") && text(v, "lock") == lock) out.push_back(v);
  }
  return out;
}

bool logHas(SidecarCluster& cluster, const std::string& needle) {
  return cluster.sidecar(0).log().find(needle) != std::string::npos;
}

TEST(JsonLogTest, EveryLineOfARunIsJsonAndLeaseEventsCarryTheirFields) {
  SidecarCluster cluster;
  SidecarOptions options;
  options.extraArgs = {"--log-format", "json"};
  cluster.startSidecar(options);
  auto client = cluster.connect(0);

  // A grant and a release; the owner label is the client's to choose, within the label rule
  // (UTF-8, no control characters): quotes, a backslash and a non-ASCII letter need escaping.
  const std::string owner = "app \"blue\" \\ \xC3\xA9";
  AcquireOptions withOwner = acquireOptions(milliseconds(0), milliseconds(20000));
  withOwner.ownerLabel = owner;
  auto alpha = client->acquire("alpha", withOwner);
  ASSERT_TRUE(alpha);
  uint64_t alphaToken = alpha->token();
  ASSERT_TRUE(alpha->release().ok());

  // A loss to TTL expiry, then a renew of the lost lease: over a raw connection, as the client
  // library answers a renew of a lease it was told is lost itself.
  capnp::EzRpcClient raw("unix:" + cluster.socket(0));
  auto& waitScope = raw.getWaitScope();
  auto acquireBeta = raw.getMain<ipc::Sidecar>().acquireRequest();
  acquireBeta.setName("beta");
  acquireBeta.setTtlMs(300);
  acquireBeta.setOwnerLabel("raw");
  auto beta = acquireBeta.send().wait(waitScope);
  ASSERT_EQ(beta.getError(), ipc::Error::OK) << beta.getDetail().cStr();
  uint64_t betaToken = beta.getToken();
  ASSERT_TRUE(waitUntil([&] { return logHas(cluster, "\"msg\":\"lost lock=beta "); }));
  auto renewed = beta.getLease().renewRequest().send().wait(waitScope);
  EXPECT_EQ(renewed.getError(), ipc::Error::EXPIRED) << renewed.getDetail().cStr();

  // A lease dropped with its connection.
  auto other = cluster.connect(0);
  auto gamma = other->acquire("gamma", acquireOptions(milliseconds(0), milliseconds(20000)));
  ASSERT_TRUE(gamma);
  uint64_t gammaToken = gamma->token();
  ASSERT_EQ(::shutdown(internal::connectionFd(*other), SHUT_RDWR), 0);
  ASSERT_TRUE(waitUntil([&] { return logHas(cluster, "\"how\":\"dropped\""); }));

  // A lease the sidecar's shutdown takes away.
  auto delta = client->acquire("delta", acquireOptions(milliseconds(0), milliseconds(20000)));
  ASSERT_TRUE(delta);
  uint64_t deltaToken = delta->token();
  EXPECT_EQ(cluster.sidecar(0).stop(milliseconds(8000)), 0);

  std::string log = cluster.sidecar(0).log();
  auto lines = parseEveryLine(log);
  ASSERT_FALSE(lines.empty());
  static const std::regex kTime(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  std::map<std::string, int> events;
  for (auto& v : lines) {
    EXPECT_TRUE(std::regex_match(text(v, "time"), kTime)) << text(v, "time");
    EXPECT_TRUE(has(v, "level", JsonValue::Type::kString));
    EXPECT_TRUE(has(v, "msg", JsonValue::Type::kString));
    ++events[text(v, "event")];
  }
  EXPECT_GT(events["log"], 0);
  EXPECT_GE(events["session_state"], 1);

  const std::string pid = std::to_string(getpid()), uid = std::to_string(getuid());
  auto checkClient = [&](const JsonValue& v, uint64_t token) {
    EXPECT_EQ(number(v, "token"), std::to_string(token));
    EXPECT_EQ(number(v, "client_pid"), pid);
    EXPECT_EQ(number(v, "client_uid"), uid);
    EXPECT_TRUE(has(v, "connection", JsonValue::Type::kNumber));
  };

  auto a = eventsOf(lines, "alpha");
  ASSERT_EQ(a.size(), 2u) << log;
  EXPECT_EQ(text(a[0], "event"), "grant");
  EXPECT_EQ(text(a[0], "level"), "info");
  EXPECT_EQ(text(a[0], "owner"), owner);
  EXPECT_EQ(number(a[0], "ttl_ms"), "20000");
  EXPECT_TRUE(has(a[0], "waited_ms", JsonValue::Type::kNumber));
  EXPECT_EQ(text(a[1], "event"), "release");
  EXPECT_TRUE(has(a[1], "held_ms", JsonValue::Type::kNumber));
  EXPECT_EQ(a[1].find("how"), nullptr);
  for (auto& v : a) checkClient(v, alphaToken);

  auto b = eventsOf(lines, "beta");
  ASSERT_EQ(b.size(), 3u) << log;
  EXPECT_EQ(text(b[0], "event"), "grant");
  EXPECT_EQ(number(b[0], "ttl_ms"), "300");
  EXPECT_EQ(text(b[1], "event"), "lost");
  EXPECT_EQ(text(b[1], "level"), "warning");
  EXPECT_EQ(text(b[1], "reason"), "ttl expired");
  EXPECT_GE(std::stoll(number(b[1], "held_ms")), 300);
  EXPECT_EQ(text(b[2], "event"), "renew_failed");
  EXPECT_EQ(text(b[2], "error"), "expired");
  EXPECT_EQ(text(b[2], "reason"), "ttl expired");
  for (auto& v : b) checkClient(v, betaToken);
  EXPECT_EQ(text(b[0], "owner"), "raw");

  auto g = eventsOf(lines, "gamma");
  ASSERT_EQ(g.size(), 2u) << log;
  EXPECT_EQ(text(g[0], "event"), "grant");
  EXPECT_EQ(text(g[1], "event"), "release");
  EXPECT_EQ(text(g[1], "how"), "dropped");
  for (auto& v : g) checkClient(v, gammaToken);
  EXPECT_NE(number(g[0], "connection"), number(a[0], "connection"));

  auto d = eventsOf(lines, "delta");
  ASSERT_EQ(d.size(), 2u) << log;
  EXPECT_EQ(text(d[0], "event"), "grant");
  EXPECT_EQ(text(d[1], "event"), "lost");
  EXPECT_EQ(text(d[1], "reason"), "sidecar shutting down");
  for (auto& v : d) checkClient(v, deltaToken);
}

}  // namespace
}  // namespace fencekeeper::testing
