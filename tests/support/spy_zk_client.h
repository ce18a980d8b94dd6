// A zk::Client in front of another, for engine tests that look at what the engine asks.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>

#include "sidecar/zk/zk_client.h"

namespace fencekeeper::testing {

// Passes every request on; calls `onRemove` with the path before a delete is sent, and
// `beforeListing` before a listing is, and counts the listings (and the most out at once) and the
// children watches asked for.
class SpyZkClient final : public zk::Client {
 public:
  explicit SpyZkClient(zk::Client& inner) : inner_(inner) {}
  std::function<void(const std::string&)> onRemove;
  std::function<void(const std::string&)> beforeListing;
  std::map<std::string, int> childrenWatches;  // by path
  std::map<std::string, int> listings;         // getChildren(AndWatch), by path
  std::map<std::string, int> listingsOut;      // unanswered now
  std::map<std::string, int> mostListingsOut;

  void create(const std::string& p, const std::string& d, zk::CreateMode m,
              CreateCallback done) override {
    inner_.create(p, d, m, std::move(done));
  }
  void getChildren(const std::string& p, ChildrenCallback done) override {
    if (beforeListing) beforeListing(p);
    inner_.getChildren(p, counted(p, std::move(done)));
  }
  void getChildrenAndWatch(const std::string& p, ChildrenCallback done, WatchCallback w) override {
    if (beforeListing) beforeListing(p);
    ++childrenWatches[p];
    inner_.getChildrenAndWatch(p, counted(p, std::move(done)), std::move(w));
  }
  void getAndWatch(const std::string& p, GetCallback done, WatchCallback w) override {
    inner_.getAndWatch(p, std::move(done), std::move(w));
  }
  void existsAndWatch(const std::string& p, CodeCallback done, WatchCallback w) override {
    inner_.existsAndWatch(p, std::move(done), std::move(w));
  }
  void get(const std::string& p, GetCallback done) override { inner_.get(p, std::move(done)); }
  void remove(const std::string& p, CodeCallback done) override {
    if (onRemove) onRemove(p);
    inner_.remove(p, std::move(done));
  }
  void sync(const std::string& p, CodeCallback done) override { inner_.sync(p, std::move(done)); }
  void getAcl(const std::string& p, AclCallback done) override {
    inner_.getAcl(p, std::move(done));
  }
  void leaveServer() override { inner_.leaveServer(); }
  zk::SessionState sessionState() const override { return inner_.sessionState(); }
  int64_t sessionId() const override { return inner_.sessionId(); }
  int32_t negotiatedTimeoutMs() const override { return inner_.negotiatedTimeoutMs(); }
  void setSessionListener(std::function<void(zk::SessionState)> l) override {
    inner_.setSessionListener(std::move(l));
  }

 private:
  // Counts a listing of `p` (with a watch or not) while it is out.
  ChildrenCallback counted(const std::string& p, ChildrenCallback done) {
    ++listings[p];
    mostListingsOut[p] = std::max(mostListingsOut[p], ++listingsOut[p]);
    return [this, p, done = std::move(done)](const zk::ChildrenResult& r) {
      --listingsOut[p];
      done(r);
    };
  }

  zk::Client& inner_;
};

}  // namespace fencekeeper::testing
