#include "sidecar/status/metrics.h"

#include <prometheus/text_serializer.h>

#include <array>

namespace fencekeeper::status {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// Seconds: from a try-once acquire to a long wait; from a short job to a day-long holder.
Histogram::BucketBoundaries waitBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
}
Histogram::BucketBoundaries holdBuckets() {
  return {0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400};
}
Histogram::BucketBoundaries heartbeatBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
}

std::string reasonLabel(engine::LossReason reason) {
  switch (reason) {
    case engine::LossReason::kTtlExpired:
      return "ttl_expired";
    case engine::LossReason::kSessionLost:
      return "session_lost";
    case engine::LossReason::kSessionUncertain:
      return "session_uncertain";
    case engine::LossReason::kSidecarShutdown:
      return "sidecar_shutdown";
    case engine::LossReason::kReleasedElsewhere:
      return "released_elsewhere";
  }
  return "other";
}

// Every value refusalLimit() gives.
constexpr std::array<std::string_view, 11> kRefusalLimits{"max_leases_per_peer",
                                                          "max_waiting_per_peer",
                                                          "max_calls_per_connection",
                                                          "max_connections",
                                                          "max_queued_reply_bytes",
                                                          "max_queued_replies",
                                                          "max_pending_deletes",
                                                          "max_leases",
                                                          "lease_capabilities",
                                                          "allow_list",
                                                          "other"};

double seconds(Millis d) { return static_cast<double>(d.count()) / 1000.0; }

}  // namespace

std::string refusalLimit(std::string_view detail) {
  if (detail.find("lease capabilities") != std::string_view::npos) return "lease_capabilities";
  // "--max-leases" is a prefix of "--max-leases-per-peer": it is looked for last.
  for (auto limit : kRefusalLimits) {
    std::string flag = "--" + std::string(limit);
    for (char& c : flag) c = c == '_' ? '-' : c;
    if (limit.rfind("max_", 0) == 0 && detail.find(flag) != std::string_view::npos) {
      return std::string(limit);
    }
  }
  if (detail.find("allow") != std::string_view::npos ||
      detail.find("SO_PEERCRED") != std::string_view::npos) {
    return "allow_list";
  }
  return "other";
}

Metrics::Metrics(std::string version, bool lockLabels)
    : lockLabels_(lockLabels),
      registry_(std::make_shared<prometheus::Registry>()),
      acquireWait_(BuildHistogram()
                       .Name("fencekeeper_acquire_wait_seconds")
                       .Help("From an acquire to its grant")
                       .Register(*registry_)),
      holdTime_(BuildHistogram()
                    .Name("fencekeeper_lease_hold_seconds")
                    .Help("From a grant to the release or loss of the lease")
                    .Register(*registry_)),
      grants_(BuildCounter()
                  .Name("fencekeeper_grants_total")
                  .Help("Leases granted")
                  .Register(*registry_)),
      releases_(BuildCounter()
                    .Name("fencekeeper_releases_total")
                    .Help("Leases released by their holder (release() or a dropped capability)")
                    .Register(*registry_)),
      losses_(BuildCounter()
                  .Name("fencekeeper_lease_losses_total")
                  .Help("Leases lost, by reason (ttl_expired is an expiration)")
                  .Register(*registry_)),
      renewFailures_(BuildCounter()
                         .Name("fencekeeper_renew_failures_total")
                         .Help("Leases whose holder renewed after the lease was lost")
                         .Register(*registry_)),
      sessionStates_(BuildCounter()
                         .Name("fencekeeper_zk_session_state_changes_total")
                         .Help("ZooKeeper session state changes, by the new state")
                         .Register(*registry_)),
      vouchingLapses_(BuildCounter()
                          .Name("fencekeeper_vouching_lapses_total")
                          .Help("Times the sidecar could no longer vouch for its session: every "
                                "held lease was lost")
                          .Register(*registry_)
                          .Add({})),
      heartbeat_(
          BuildHistogram()
              .Name("fencekeeper_heartbeat_round_trip_seconds")
              .Help("Round trip of the sidecar's ZooKeeper heartbeats, loop latency included")
              .Register(*registry_)
              .Add({}, heartbeatBuckets())),
      loopLag_(BuildHistogram()
                   .Name("fencekeeper_loop_lag_seconds")
                   .Help("How late the sidecar's loop ran a 50 ms tick: its longest turns "
                         "(ZooKeeper's heartbeats wait for them too)")
                   .Register(*registry_)
                   .Add({}, prometheus::Histogram::BucketBoundaries{
                                0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1})),
      loopLagMax_(BuildGauge()
                      .Name("fencekeeper_loop_lag_max_seconds")
                      .Help("The longest fencekeeper_loop_lag_seconds since start")
                      .Register(*registry_)
                      .Add({})),
      vouched_(BuildGauge()
                   .Name("fencekeeper_zk_session_vouched")
                   .Help("1 while the sidecar can vouch for its ZooKeeper session")
                   .Register(*registry_)
                   .Add({})),
      safeFor_(BuildGauge()
                   .Name("fencekeeper_safe_for_seconds")
                   .Help("How long the sidecar can still vouch for its session")
                   .Register(*registry_)
                   .Add({})),
      leases_(
          BuildGauge().Name("fencekeeper_leases").Help("Leases held").Register(*registry_).Add({})),
      waiters_(BuildGauge()
                   .Name("fencekeeper_waiters")
                   .Help("Acquires waiting")
                   .Register(*registry_)
                   .Add({})),
      connections_(BuildGauge()
                       .Name("fencekeeper_connections")
                       .Help("Open lease-socket connections")
                       .Register(*registry_)
                       .Add({})),
      pendingDeletes_(BuildGauge()
                          .Name("fencekeeper_pending_deletes")
                          .Help("Lock node deletions ZooKeeper has not confirmed yet")
                          .Register(*registry_)
                          .Add({})),
      refused_(BuildCounter()
                   .Name("fencekeeper_refused_total")
                   .Help("Requests and connections refused, by the limit (or allow-list)")
                   .Register(*registry_)),
      acceptFailures_(BuildCounter()
                          .Name("fencekeeper_accept_failures_total")
                          .Help("Failed accept() calls (EMFILE...), retried with backoff")
                          .Register(*registry_)
                          .Add({})),
      statusRequests_(BuildCounter()
                          .Name("fencekeeper_status_requests_total")
                          .Help("Status socket requests, by path and HTTP status code")
                          .Register(*registry_)),
      grantsByMode_(BuildCounter()
                        .Name("fencekeeper_grants_by_mode_total")
                        .Help("Leases granted, by mode (exclusive, shared, permits)")
                        .Register(*registry_)) {
  // Series that exist from the start, at 0: a rate() or an alert needs no first event.
  if (!lockLabels_) seriesFor({});
  for (auto reason : {engine::LossReason::kTtlExpired, engine::LossReason::kSessionLost,
                      engine::LossReason::kSessionUncertain, engine::LossReason::kSidecarShutdown,
                      engine::LossReason::kReleasedElsewhere}) {
    if (!lockLabels_) losses_.Add({{"reason", reasonLabel(reason)}});
  }
  for (auto limit : kRefusalLimits) refused_.Add({{"limit", std::string(limit)}});
  for (auto mode : {engine::LockMode::kExclusive, engine::LockMode::kShared,
                    engine::LockMode::kPermits}) {
    modeGrants_[static_cast<size_t>(mode)] =
        &grantsByMode_.Add({{"mode", engine::lockModeName(mode)}});
  }
  BuildGauge()
      .Name("fencekeeper_build_info")
      .Help("Always 1; the version is a label")
      .Register(*registry_)
      .Add({{"version", std::move(version)}})
      .Set(1);
}

prometheus::Labels Metrics::lockLabel(std::string_view lock) const {
  if (!lockLabels_) return {};
  if (series_.count(lock) == 0 && series_.size() >= kMaxLockLabels) return {{"lock", "_other"}};
  return {{"lock", std::string(lock)}};
}

Metrics::LeaseSeries& Metrics::seriesFor(std::string_view lock) {
  // Two of these a lock cycle: a known lock is found without building its labels.
  if (!lockLabels_) lock = {};
  if (auto known = series_.find(lock); known != series_.end()) return known->second;
  auto labels = lockLabel(lock);
  auto key = labels.empty() ? std::string() : labels.begin()->second;
  if (auto other = series_.find(key); other != series_.end()) return other->second;  // "_other"
  LeaseSeries series{grants_.Add(labels), releases_.Add(labels), renewFailures_.Add(labels),
                     acquireWait_.Add(labels, waitBuckets()), holdTime_.Add(labels, holdBuckets())};
  return series_.emplace(std::move(key), series).first->second;
}

void Metrics::leaseEvent(const engine::LeaseEvent& e) {
  LeaseSeries& series = seriesFor(e.lock);
  switch (e.kind) {
    case engine::LeaseEventKind::kGranted:
      series.grants.Increment();
      series.acquireWait.Observe(seconds(e.waited));
      modeGrants_[static_cast<size_t>(e.mode)]->Increment();
      break;
    case engine::LeaseEventKind::kReleased:
      series.releases.Increment();
      series.holdTime.Observe(seconds(e.held));
      break;
    case engine::LeaseEventKind::kLost: {
      auto withReason = lockLabel(e.lock);
      withReason.emplace("reason", reasonLabel(e.reason));
      losses_.Add(withReason).Increment();
      series.holdTime.Observe(seconds(e.held));
      break;
    }
    case engine::LeaseEventKind::kRenewFailed:
      series.renewFailures.Increment();
      break;
  }
}

void Metrics::sessionState(zk::SessionState state) {
  sessionStates_.Add({{"state", zk::sessionStateName(state)}}).Increment();
}

void Metrics::vouchingLapsed() { vouchingLapses_.Increment(); }

void Metrics::heartbeatAnswered(std::chrono::microseconds roundTrip) {
  heartbeat_.Observe(static_cast<double>(roundTrip.count()) / 1e6);
}

void Metrics::refused(std::string_view detail) {
  refused_.Add({{"limit", refusalLimit(detail)}}).Increment();
}

void Metrics::loopLag(std::chrono::microseconds late) {
  double seconds = std::chrono::duration<double>(late).count();
  loopLag_.Observe(seconds);
  if (seconds > loopLagMax_.Value()) loopLagMax_.Set(seconds);
}

void Metrics::statusRequest(std::string_view path, unsigned code) {
  statusRequests_.Add({{"path", std::string(path)}, {"code", std::to_string(code)}}).Increment();
}

std::string Metrics::render(const GaugeReadings& now) {
  leases_.Set(static_cast<double>(now.leases));
  waiters_.Set(static_cast<double>(now.waiters));
  connections_.Set(static_cast<double>(now.connections));
  pendingDeletes_.Set(static_cast<double>(now.pendingDeletes));
  safeFor_.Set(now.safeForSeconds);
  vouched_.Set(now.vouched ? 1 : 0);
  if (now.acceptFailures > acceptFailuresSeen_) {
    acceptFailures_.Increment(static_cast<double>(now.acceptFailures - acceptFailuresSeen_));
    acceptFailuresSeen_ = now.acceptFailures;
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace fencekeeper::status
