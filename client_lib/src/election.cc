// Election: a lease on the lock's queue under the candidate's owner label, with no deadline.
#include "fencekeeper/client.h"

namespace fencekeeper {

Election::Election(Client& client, std::string name, std::string owner, Millis ttl)
    : client_(client), name_(std::move(name)), owner_(std::move(owner)), ttl_(ttl) {}

AcquireOptions Election::options(Millis wait, LossCallback onLost) const {
  AcquireOptions options;
  options.ttl = ttl_;
  options.wait = wait;
  options.ownerLabel = owner_;
  options.onLost = std::move(onLost);
  return options;
}

std::unique_ptr<Lease> Election::campaign(Millis wait, Status* status, LossCallback onLost) {
  return client_.acquire(name_, options(wait, std::move(onLost)), status);
}

std::unique_ptr<AcquireRequest> Election::campaignAsync(Millis wait, LossCallback onLost) {
  return client_.acquireAsync(name_, options(wait, std::move(onLost)));
}

Status Election::leader(HolderInfo* out) { return client_.holder(name_, out); }

std::unique_ptr<HolderWatch> Election::observe(HolderChangeCallback onChange, Status* status) {
  return client_.watchHolder(name_, std::move(onChange), status);
}

}  // namespace fencekeeper
