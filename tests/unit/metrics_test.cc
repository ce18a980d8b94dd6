// Metrics: with lock labels, at most kMaxLockLabels locks get series of their own and the rest
// count under "_other" (a lock already labelled keeps its series); without, no lock label at all.
#include "sidecar/status/metrics.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace fencekeeper::status {
namespace {

void grant(Metrics& m, const std::string& lock,
           engine::LockMode mode = engine::LockMode::kExclusive) {
  engine::LeaseEvent e;
  e.kind = engine::LeaseEventKind::kGranted;
  e.lock = lock;
  e.mode = mode;
  m.leaseEvent(e);
}

// The value of the grants counter's series with these labels, or -1 if there is none.
double grants(const std::string& text, const std::string& labels,
              const std::string& metric = "fencekeeper_grants_total") {
  std::string head = metric + labels + " ";
  auto at = text.find("\n" + head);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + 1 + head.size()));
}

size_t seriesOf(const std::string& text, const std::string& metric) {
  std::regex line("\n" + metric + "\\{lock=\"[^\"]*\"\\} ");
  return static_cast<size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), line), std::sregex_iterator()));
}

TEST(MetricsTest, LocksPastTheLabelLimitCountUnderOtherAndLabelledOnesKeepTheirSeries) {
  Metrics m("test", /*lockLabels=*/true);
  for (size_t i = 0; i < Metrics::kMaxLockLabels; ++i) grant(m, "lock-" + std::to_string(i));
  for (int i = 0; i < 5; ++i) grant(m, "late-" + std::to_string(i));
  grant(m, "lock-7");  // labelled before the limit was reached
  std::string text = m.render({});
  EXPECT_EQ(grants(text, "{lock=\"_other\"}"), 5);
  EXPECT_EQ(grants(text, "{lock=\"lock-7\"}"), 2);
  EXPECT_EQ(grants(text, "{lock=\"late-0\"}"), -1);
  EXPECT_EQ(seriesOf(text, "fencekeeper_grants_total"), Metrics::kMaxLockLabels + 1);
}

TEST(MetricsTest, WithoutLockLabelsEveryLockCountsInOneSeries) {
  Metrics m("test", /*lockLabels=*/false);
  grant(m, "a");
  grant(m, "b");
  std::string text = m.render({});
  EXPECT_EQ(grants(text, ""), 2);
  EXPECT_EQ(seriesOf(text, "fencekeeper_grants_total"), 0u);
}

TEST(MetricsTest, GrantsAreCountedByModeWithEveryModeFromTheStart) {
  Metrics m("test", /*lockLabels=*/false);
  grant(m, "a", engine::LockMode::kShared);
  grant(m, "a", engine::LockMode::kShared);
  grant(m, "b", engine::LockMode::kPermits);
  std::string text = m.render({});
  const std::string metric = "fencekeeper_grants_by_mode_total";
  EXPECT_EQ(grants(text, "{mode=\"shared\"}", metric), 2);
  EXPECT_EQ(grants(text, "{mode=\"permits\"}", metric), 1);
  EXPECT_EQ(grants(text, "{mode=\"exclusive\"}", metric), 0);
}

}  // namespace
}  // namespace fencekeeper::status
