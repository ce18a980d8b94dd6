// The C ABI (fencekeeper.h) over the C++ client: handles own the C++ objects, every entry point
// catches everything, and codes pass through unchanged (the enums share their values).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "fencekeeper.h"
#include "fencekeeper/client.h"

struct fk_client {
  std::unique_ptr<fencekeeper::Client> client;
};

struct fk_lease {
  std::unique_ptr<fencekeeper::Lease> lease;
};

struct fk_request {
  std::unique_ptr<fencekeeper::AcquireRequest> request;
};

namespace {

using fencekeeper::ErrorCode;
using fencekeeper::LossReason;
using fencekeeper::Millis;
using fencekeeper::Status;

static_assert(FK_OK == static_cast<int>(ErrorCode::kOk));
static_assert(FK_ERR_INVALID_NAME == static_cast<int>(ErrorCode::kInvalidName));
static_assert(FK_ERR_INVALID_ARGUMENT == static_cast<int>(ErrorCode::kInvalidArgument));
static_assert(FK_ERR_TIMED_OUT == static_cast<int>(ErrorCode::kTimedOut));
static_assert(FK_ERR_NOT_HELD == static_cast<int>(ErrorCode::kNotHeld));
static_assert(FK_ERR_EXPIRED == static_cast<int>(ErrorCode::kExpired));
static_assert(FK_ERR_LOST == static_cast<int>(ErrorCode::kLost));
static_assert(FK_ERR_ZK_UNAVAILABLE == static_cast<int>(ErrorCode::kZkUnavailable));
static_assert(FK_ERR_SHUTTING_DOWN == static_cast<int>(ErrorCode::kShuttingDown));
static_assert(FK_ERR_LIMIT_REACHED == static_cast<int>(ErrorCode::kLimitReached));
static_assert(FK_ERR_INTERNAL == static_cast<int>(ErrorCode::kInternal));
static_assert(FK_ERR_PERMISSION_DENIED == static_cast<int>(ErrorCode::kPermissionDenied));
static_assert(FK_ERR_INVALID_OWNER == static_cast<int>(ErrorCode::kInvalidOwner));
static_assert(FK_ERR_MODE_CONFLICT == static_cast<int>(ErrorCode::kModeConflict));
static_assert(FK_MODE_PERMITS == static_cast<int>(fencekeeper::LockMode::kPermits));
static_assert(FK_ERR_SIDECAR_UNAVAILABLE == static_cast<int>(ErrorCode::kSidecarUnavailable));
static_assert(FK_ERR_WRONG_THREAD == static_cast<int>(ErrorCode::kWrongThread));
static_assert(FK_ERR_CANCELLED == static_cast<int>(ErrorCode::kCancelled));
static_assert(FK_ERR_IN_PROGRESS == static_cast<int>(ErrorCode::kInProgress));
static_assert(FK_LOSS_TTL_EXPIRED == static_cast<int>(LossReason::kTtlExpired));
static_assert(FK_LOSS_SESSION_LOST == static_cast<int>(LossReason::kSessionLost));
static_assert(FK_LOSS_SESSION_UNCERTAIN == static_cast<int>(LossReason::kSessionUncertain));
static_assert(FK_LOSS_SIDECAR_SHUTDOWN == static_cast<int>(LossReason::kSidecarShutdown));
static_assert(FK_LOSS_RELEASED_ELSEWHERE == static_cast<int>(LossReason::kReleasedElsewhere));
static_assert(FK_LOSS_CONNECTION_LOST == static_cast<int>(LossReason::kConnectionLost));
static_assert(FK_LOSS_RENEW_FAILED == static_cast<int>(LossReason::kRenewFailed));

constexpr uint32_t kDefaultTtlMs = 30'000;

// Set while a loss callback runs: the thread is a client's I/O thread, which cannot join itself.
thread_local bool inLossCallback = false;

// Copies `text` into `out[size]`, NUL-terminated, cut at a UTF-8 character boundary.
void copyText(const std::string& text, char* out, size_t size) {
  size_t n = std::min(text.size(), size - 1);
  if (n < text.size()) {
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  }
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

int report(fk_error* err, int code, const std::string& message = {}) {
  if (err) {
    err->code = code;
    copyText(code == FK_OK || !message.empty() ? message : fk_error_name(code), err->message,
             sizeof(err->message));
  }
  return code;
}

int report(fk_error* err, const Status& status) {
  return report(err, static_cast<int>(status.code), status.message);
}

// Runs `body` (returning an int code) so that no exception leaves the library.
template <typename Body>
int guarded(fk_error* err, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    return report(err, FK_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return report(err, FK_ERR_INTERNAL, "internal error: unknown exception");
  }
}

void initOptions(fk_acquire_options* o) { fk_acquire_options_init(o); }
void initOptions(fk_connect_options* o) { fk_connect_options_init(o); }

// Reads the caller's `size`-byte options over the defaults (see fk_acquire_options::size).
template <typename Options>
bool readOptions(const Options* in, Options* out) {
  initOptions(out);
  if (!in) return true;
  if (in->size < sizeof(in->size)) return false;
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  for (size_t i = sizeof(*out); i < in->size; ++i) {
    if (bytes[i] != 0) return false;
  }
  std::memcpy(out, in, std::min(in->size, sizeof(*out)));
  out->size = sizeof(*out);
  return true;
}

}  // namespace

extern "C" {

int fk_connect(const char* socket_path, fk_client** out, fk_error* err) {
  return fk_connect_with(socket_path, nullptr, out, err);
}

void fk_connect_options_init(fk_connect_options* options) {
  if (!options) return;
  *options = fk_connect_options{};
  options->size = sizeof(*options);
  options->expect_uid = -1;
}

int fk_connect_with(const char* socket_path, const fk_connect_options* options, fk_client** out,
                    fk_error* err) {
  return guarded(err, [&] {
    if (!out) return report(err, FK_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    fk_connect_options o;
    if (!readOptions(options, &o)) {
      return report(err, FK_ERR_INVALID_ARGUMENT, "fk_connect_options: unknown size or fields");
    }
    fencekeeper::ConnectOptions cpp;
    cpp.expectUid = o.expect_uid;
    Status status;
    auto client = fencekeeper::Client::connect(
        socket_path ? socket_path : fencekeeper::defaultSocketPath(), cpp, &status);
    if (!client) return report(err, status);
    *out = new fk_client{std::move(client)};
    return report(err, FK_OK);
  });
}

void fk_client_close(fk_client* client) {
  guarded(nullptr, [&] {
    std::unique_ptr<fk_client> owned(client);
    if (owned && inLossCallback) {
      // Stopping a client joins its I/O thread, which is this one: finish once it returns.
      std::thread([owned = std::move(owned)] {}).detach();
    }
    return FK_OK;
  });
}

void fk_acquire_options_init(fk_acquire_options* options) {
  if (!options) return;
  *options = fk_acquire_options{};
  options->size = sizeof(*options);
  options->ttl_ms = kDefaultTtlMs;
  options->keep_alive = 1;
}

int fk_acquire(fk_client* client, const char* name, const fk_acquire_options* options,
               fk_lease** out, fk_error* err) {
  // Checked first: a request started for a NULL `out` would be cancelled at once.
  if (!out) return report(err, FK_ERR_INVALID_ARGUMENT, "client, name and out must not be NULL");
  *out = nullptr;
  fk_request* request = nullptr;
  int code = fk_acquire_start(client, name, options, &request, err);
  if (code != FK_OK) return code;
  code = fk_request_wait(request, -1, out, err);
  fk_request_free(request);
  return code;
}

int fk_acquire_start(fk_client* client, const char* name, const fk_acquire_options* options,
                     fk_request** out, fk_error* err) {
  return guarded(err, [&] {
    if (out) *out = nullptr;
    if (!client || !name || !out) {
      return report(err, FK_ERR_INVALID_ARGUMENT, "client, name and out must not be NULL");
    }
    fk_acquire_options o;
    if (!readOptions(options, &o)) {
      return report(err, FK_ERR_INVALID_ARGUMENT, "fk_acquire_options: unknown size or fields");
    }
    fencekeeper::AcquireOptions cpp;
    cpp.ttl = Millis(o.ttl_ms == 0 ? kDefaultTtlMs : o.ttl_ms);
    cpp.wait = Millis(o.wait_ms);
    if (o.owner_label) cpp.ownerLabel = o.owner_label;
    cpp.keepAlive = o.keep_alive != 0;
    cpp.renewOnlyIfCheckedIn = o.renew_only_if_checked_in != 0;
    cpp.exitOnLoss = o.exit_on_loss != 0;
    if (o.mode < FK_MODE_EXCLUSIVE || o.mode > FK_MODE_PERMITS) {
      return report(err, FK_ERR_INVALID_ARGUMENT,
                    "fk_acquire_options.mode " + std::to_string(o.mode) + " is not an fk_lock_mode");
    }
    cpp.mode = static_cast<fencekeeper::LockMode>(o.mode);
    cpp.permits = o.permits;
    if (o.on_lost) {
      cpp.onLost = [fn = o.on_lost, userData = o.user_data](uint64_t token, LossReason reason) {
        inLossCallback = true;
        fn(userData, token, static_cast<int>(reason));
        inLossCallback = false;
      };
    }
    if (o.on_risk) {
      // (Same thread and rules as the loss callback: the client must not be called from it.)
      cpp.onRisk = [fn = o.on_risk, userData = o.user_data](uint64_t token, bool atRisk,
                                                             Millis left) {
        inLossCallback = true;
        fn(userData, token, atRisk ? 1 : 0, static_cast<uint32_t>(left.count()));
        inLossCallback = false;
      };
    }
    *out = new fk_request{client->client->acquireAsync(name, cpp)};
    return report(err, FK_OK);
  });
}

void fk_request_cancel(fk_request* request) {
  if (request) request->request->cancel();  // noexcept, async-signal-safe
}

int fk_request_fd(const fk_request* request) { return request ? request->request->fd() : -1; }

int fk_request_wait(fk_request* request, int64_t timeout_ms, fk_lease** out, fk_error* err) {
  return guarded(err, [&] {
    if (out) *out = nullptr;
    if (!request || !out) {
      return report(err, FK_ERR_INVALID_ARGUMENT, "request and out must not be NULL");
    }
    Status status;
    auto lease = request->request->wait(Millis(timeout_ms < 0 ? -1 : timeout_ms), &status);
    if (!lease) return report(err, status);
    *out = new fk_lease{std::move(lease)};
    return report(err, FK_OK);
  });
}

void fk_request_free(fk_request* request) {
  guarded(nullptr, [&] {
    delete request;
    return FK_OK;
  });
}

const char* fk_lease_name(const fk_lease* lease) {
  return lease ? lease->lease->name().c_str() : "";
}

uint64_t fk_lease_token(const fk_lease* lease) { return lease ? lease->lease->token() : 0; }

int64_t fk_lease_valid_for_ms(const fk_lease* lease) {
  return lease ? lease->lease->validFor().count() : 0;
}

int fk_lease_loss_reason(const fk_lease* lease) {
  if (!lease) return -1;
  auto reason = lease->lease->lossReason();
  return reason ? static_cast<int>(*reason) : -1;
}

int fk_client_connected(const fk_client* client) {
  return client && client->client->connected() ? 1 : 0;
}

int fk_client_uses_lease_table(fk_client* client, char* detail, size_t size) {
  if (!client) return 0;
  std::string why;
  bool uses = client->client->usesLeaseTable(&why);
  if (detail && size > 0) copyText(why, detail, size);
  return uses ? 1 : 0;
}

int fk_lease_table_shows_valid(fk_client* client, const char* name, uint64_t token, int* valid,
                               fk_error* err) {
  return guarded(err, [&] {
    if (!client || !name || !valid) {
      return report(err, FK_ERR_INVALID_ARGUMENT, "client, name and valid must not be NULL");
    }
    bool shows = false;
    Status status = client->client->tableShowsValid(name, token, &shows);
    *valid = shows ? 1 : 0;
    return report(err, status);
  });
}

int fk_lease_lost(const fk_lease* lease) { return lease && lease->lease->lost() ? 1 : 0; }

int fk_lease_loss_fd(const fk_lease* lease) { return lease ? lease->lease->lossFd() : -1; }

int fk_lease_at_risk(const fk_lease* lease) { return lease && lease->lease->atRisk() ? 1 : 0; }

int fk_client_loss_fd(fk_client* client) {
  return client ? client->client->connectionLossFd() : -1;
}

int fk_lease_check(fk_lease* lease, uint64_t* token, int64_t* valid_ms, fk_error* err) {
  return guarded(err, [&] {
    if (!lease) return report(err, FK_ERR_INVALID_ARGUMENT, "lease is NULL");
    Millis validFor{0};
    Status status = lease->lease->check(&validFor);
    if (token) *token = status.ok() ? lease->lease->token() : 0;
    if (valid_ms) *valid_ms = status.ok() ? validFor.count() : 0;
    return report(err, status);
  });
}

int fk_lease_renew(fk_lease* lease, uint32_t ttl_ms, fk_error* err) {
  return guarded(err, [&] {
    if (!lease) return report(err, FK_ERR_INVALID_ARGUMENT, "lease is NULL");
    return report(err, lease->lease->renew(Millis(ttl_ms)));
  });
}

void fk_lease_check_in(fk_lease* lease) {
  if (lease) lease->lease->checkIn();
}

int fk_lease_set_keep_alive(fk_lease* lease, int on, fk_error* err) {
  return guarded(err, [&] {
    if (!lease) return report(err, FK_ERR_INVALID_ARGUMENT, "lease is NULL");
    return report(err, lease->lease->setKeepAlive(on != 0));
  });
}

int fk_lease_release(fk_lease* lease, fk_error* err) {
  return guarded(err, [&] {
    if (!lease) return report(err, FK_ERR_INVALID_ARGUMENT, "lease is NULL");
    return report(err, lease->lease->release());
  });
}

void fk_lease_free(fk_lease* lease) {
  guarded(nullptr, [&] {
    delete lease;
    return FK_OK;
  });
}

namespace {
void fillHolderInfo(const fencekeeper::HolderInfo& info, fk_holder_info* out) {
  out->held = info.held ? 1 : 0;
  out->token = info.token;
  copyText(info.ownerLabel, out->owner_label, sizeof(out->owner_label));
  out->since_unix_ms = info.sinceUnixMs;
  out->waiters = info.waiters;
  out->this_sidecar = info.thisSidecar ? 1 : 0;
  if (out->size < sizeof(*out)) return;  // an older caller's struct ends before the list
  out->holder_count = static_cast<uint32_t>(info.holders.size());
  out->holders_listed = std::min<uint32_t>(out->holder_count, FK_HOLDERS_LISTED);
  for (uint32_t i = 0; i < out->holders_listed; ++i) {
    const auto& h = info.holders[i];
    fk_holder_entry& e = out->holders[i];
    e.token = h.token;
    e.mode = static_cast<int>(h.mode);
    e.permits = h.permits;
    e.since_unix_ms = h.sinceUnixMs;
    e.this_sidecar = h.thisSidecar ? 1 : 0;
    copyText(h.ownerLabel, e.owner_label, sizeof(e.owner_label));
  }
}
}  // namespace

struct fk_holder_watch {
  std::unique_ptr<fencekeeper::HolderWatch> watch;
};

int fk_watch_holder(fk_client* client, const char* name, fk_holder_fn on_change, void* user_data,
                    fk_holder_watch** out, fk_error* err) {
  return guarded(err, [&] {
    if (out) *out = nullptr;
    if (!client || !name || !on_change || !out) {
      return report(err, FK_ERR_INVALID_ARGUMENT,
                    "client, name, on_change and out must not be NULL");
    }
    auto onChange = [on_change, user_data](const fencekeeper::HolderChange& change) {
      fk_holder_info info{};
      info.size = sizeof info;
      fillHolderInfo(change.info, &info);
      int state = change.state == fencekeeper::HolderState::kHeld   ? FK_HOLDER_HELD
                  : change.state == fencekeeper::HolderState::kFree ? FK_HOLDER_FREE
                                                                    : FK_HOLDER_UNKNOWN;
      on_change(user_data, state, &info, change.detail.c_str());
    };
    Status status;
    auto watch = client->client->watchHolder(name, onChange, &status);
    if (!watch) return report(err, status);
    *out = new fk_holder_watch{std::move(watch)};
    return report(err, FK_OK);
  });
}

void fk_holder_watch_free(fk_holder_watch* watch) { delete watch; }

int fk_holder(fk_client* client, const char* name, fk_holder_info* out, fk_error* err) {
  return guarded(err, [&] {
    if (!client || !name || !out) {
      return report(err, FK_ERR_INVALID_ARGUMENT, "client, name and out must not be NULL");
    }
    if (out->size < offsetof(fk_holder_info, holder_count)) {
      return report(err, FK_ERR_INVALID_ARGUMENT, "fk_holder_info: size not set");
    }
    fencekeeper::HolderInfo info;
    Status status = client->client->holder(name, &info);
    if (!status.ok()) return report(err, status);
    fillHolderInfo(info, out);
    return report(err, FK_OK);
  });
}

int fk_status(fk_client* client, fk_status_info* out, fk_error* err) {
  return guarded(err, [&] {
    if (!client || !out)
      return report(err, FK_ERR_INVALID_ARGUMENT, "client and out must not be NULL");
    if (out->size < sizeof(*out)) {
      return report(err, FK_ERR_INVALID_ARGUMENT, "fk_status_info: size not set");
    }
    fencekeeper::SidecarStatus st;
    Status status = client->client->status(&st);
    if (!status.ok()) return report(err, status);
    copyText(st.zkState, out->zk_state, sizeof(out->zk_state));
    copyText(st.sessionId, out->session_id, sizeof(out->session_id));
    out->session_timeout_ms = st.sessionTimeoutMs;
    out->safe_for_ms = st.safeForMs;
    out->leases_held = st.leasesHeld;
    out->waiters = st.waiters;
    out->connections = st.connections;
    out->pending_deletes = st.pendingDeletes;
    out->uptime_ms = st.uptimeMs;
    out->grants_total = st.grantsTotal;
    out->dropped_deletes = st.droppedDeletes;
    out->refused_total = st.refusedTotal;
    out->accept_failures = st.acceptFailures;
    out->accepting = st.accepting ? 1 : 0;
    out->ready = st.ready ? 1 : 0;
    out->healthy = st.healthy ? 1 : 0;
    copyText(st.notReadyReason, out->not_ready_reason, sizeof(out->not_ready_reason));
    copyText(st.notHealthyReason, out->not_healthy_reason, sizeof(out->not_healthy_reason));
    copyText(st.version, out->version, sizeof(out->version));
    copyText(st.instanceId, out->instance_id, sizeof(out->instance_id));
    return report(err, FK_OK);
  });
}

int fk_status_json(fk_client* client, char** json_out, fk_error* err) {
  return guarded(err, [&] {
    if (json_out) *json_out = nullptr;
    if (!client || !json_out) {
      return report(err, FK_ERR_INVALID_ARGUMENT, "client and json_out must not be NULL");
    }
    std::string json;
    Status status = client->client->statusJson(&json);
    if (!status.ok()) return report(err, status);
    char* text = static_cast<char*>(std::malloc(json.size() + 1));
    if (!text) return report(err, FK_ERR_INTERNAL, "out of memory");
    std::memcpy(text, json.c_str(), json.size() + 1);
    *json_out = text;
    return report(err, FK_OK);
  });
}

void fk_free(void* memory) { std::free(memory); }

const char* fk_error_name(int code) {
  return fencekeeper::errorCodeName(static_cast<ErrorCode>(code));
}

const char* fk_loss_reason_name(int reason) {
  return fencekeeper::lossReasonName(static_cast<LossReason>(reason));
}

}  // extern "C"
