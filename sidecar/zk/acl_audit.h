// At start, the sidecar's parent nodes that already exist are checked for an open ACL: a node
// whose ACL lets the world create or delete children (as every node the sidecar created before
// --zk-auth-file was set) lets any ZooKeeper client delete a holder's node or plant one in a
// queue. Checked: the root, <root>/locks and its children (the locks, first level, at most
// `maxLocks`). docs/security.md says how to migrate them.
//
// Runs on the loop thread; owned by main, destroyed before the client. A check lost to a lost
// connection is tried again every second, for a minute at most.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "sidecar/zk/zk_client.h"

namespace fencekeeper::zk {

struct AclAuditReport {
  std::vector<std::string> openNodes;  // the world may create or delete children
  std::vector<std::string> unchecked;  // not readable (ACL, or ZooKeeper out of reach)
  size_t checked = 0;
};

// True when the ACL lets every client create or delete children.
bool isOpenAcl(const std::vector<Acl>& acl);

class AclAudit {
 public:
  AclAudit(Client& zk, Timer& timer, std::string root, std::function<void(AclAuditReport)> done,
           size_t maxLocks = 1'000);
  ~AclAudit();
  AclAudit(const AclAudit&) = delete;
  AclAudit& operator=(const AclAudit&) = delete;

 private:
  void check(const std::string& path, int attempts);
  void listLocks(int attempts);
  void settled();
  template <typename Fn>
  auto whileAlive(Fn fn);
  void later(std::function<void()> fn);

  Client& zk_;
  Timer& timer_;
  const std::string root_;
  const size_t maxLocks_;
  std::function<void(AclAuditReport)> done_;
  AclAuditReport report_;
  size_t outstanding_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// One warning line per finding, for main's log.
std::vector<std::string> describe(const AclAuditReport& report);

}  // namespace fencekeeper::zk
