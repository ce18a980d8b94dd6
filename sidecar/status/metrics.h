// The sidecar's Prometheus metrics (prometheus-cpp's registry and text serializer): counters and
// histograms fed by the engine's events, gauges read from the sidecar at scrape time. Names are
// listed in docs/operations.md; k8s/grafana-dashboard.json uses them. Loop thread only.
#pragma once

#include <array>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "sidecar/engine/engine_events.h"

namespace fencekeeper::status {

// What the gauges show, read when /metrics is asked.
struct GaugeReadings {
  uint64_t leases = 0;
  uint64_t waiters = 0;
  uint64_t connections = 0;
  uint64_t pendingDeletes = 0;
  double safeForSeconds = 0;
  bool vouched = false;
  uint64_t acceptFailures = 0;  // since start, all sockets
};

class Metrics final : public engine::EngineObserver {
 public:
  // Lock names as labels only when asked: their number is unbounded. Even then at most
  // `kMaxLockLabels` distinct locks get their own series, the rest count under "_other".
  static constexpr size_t kMaxLockLabels = 1'000;
  Metrics(std::string version, bool lockLabels);

  void leaseEvent(const engine::LeaseEvent& e) override;
  void sessionState(zk::SessionState state) override;
  void vouchingLapsed() override;
  void heartbeatAnswered(std::chrono::microseconds roundTrip) override;
  // How late the loop ran a timer (loop_lag.h).
  void loopLag(std::chrono::microseconds late);
  // A request refused by a limit or the allow-list; `detail` is the refusal's text.
  void refused(std::string_view detail);
  void statusRequest(std::string_view path, unsigned code);

  // The Prometheus text exposition of every metric.
  std::string render(const GaugeReadings& now);

 private:
  // The series of one lock label, found once: prometheus-cpp's Family::Add builds a metric (for a
  // histogram, its buckets) on every call before it looks the labels up.
  struct LeaseSeries {
    prometheus::Counter& grants;
    prometheus::Counter& releases;
    prometheus::Counter& renewFailures;
    prometheus::Histogram& acquireWait;
    prometheus::Histogram& holdTime;
  };
  prometheus::Labels lockLabel(std::string_view lock) const;
  LeaseSeries& seriesFor(std::string_view lock);

  const bool lockLabels_;
  std::map<std::string, LeaseSeries, std::less<>> series_;  // by lock label, "" when unlabelled
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>& acquireWait_;
  prometheus::Family<prometheus::Histogram>& holdTime_;
  prometheus::Family<prometheus::Counter>& grants_;
  prometheus::Family<prometheus::Counter>& releases_;
  prometheus::Family<prometheus::Counter>& losses_;
  prometheus::Family<prometheus::Counter>& renewFailures_;
  prometheus::Family<prometheus::Counter>& sessionStates_;
  prometheus::Counter& vouchingLapses_;
  prometheus::Histogram& heartbeat_;
  prometheus::Histogram& loopLag_;
  prometheus::Gauge& loopLagMax_;
  prometheus::Gauge& vouched_;
  prometheus::Gauge& safeFor_;
  prometheus::Gauge& leases_;
  prometheus::Gauge& waiters_;
  prometheus::Gauge& connections_;
  prometheus::Gauge& pendingDeletes_;
  prometheus::Family<prometheus::Counter>& refused_;
  prometheus::Counter& acceptFailures_;
  prometheus::Family<prometheus::Counter>& statusRequests_;
  prometheus::Family<prometheus::Counter>& grantsByMode_;
  std::array<prometheus::Counter*, 3> modeGrants_{};  // by engine::LockMode: no labels a grant
  uint64_t acceptFailuresSeen_ = 0;
};

// The limit a refusal's detail names, as a label value ("max_leases_per_peer", "allow_list",
// ...): a fixed set, whatever the text.
std::string refusalLimit(std::string_view detail);

}  // namespace fencekeeper::status
