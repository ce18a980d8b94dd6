#include "sidecar/zk/acl_audit.h"

namespace fencekeeper::zk {

namespace {
constexpr int kMaxAttempts = 60;
constexpr Millis kRetryDelay{1'000};
constexpr size_t kNamedInWarning = 5;

// ZooKeeper was out of reach: the node may well be there.
bool worthRetrying(Code code) { return isAmbiguous(code) || code == Code::kSessionExpired; }

std::string firstFew(const std::vector<std::string>& paths) {
  std::string out;
  for (size_t i = 0; i < paths.size() && i < kNamedInWarning; ++i) {
    out += (i ? ", " : "") + paths[i];
  }
  if (paths.size() > kNamedInWarning) {
    out += " and " + std::to_string(paths.size() - kNamedInWarning) + " more";
  }
  return out;
}
}  // namespace

bool isOpenAcl(const std::vector<Acl>& acl) {
  for (auto& entry : acl) {
    if (entry.scheme == "world" && entry.id == "anyone" &&
        (entry.perms & (kPermCreate | kPermDelete))) {
      return true;
    }
  }
  return false;
}

template <typename Fn>
auto AclAudit::whileAlive(Fn fn) {
  return [alive = std::weak_ptr<bool>(alive_), fn = std::move(fn)](auto&&... args) mutable {
    if (alive.lock()) fn(std::forward<decltype(args)>(args)...);
  };
}

AclAudit::AclAudit(Client& zk, Timer& timer, std::string root,
                   std::function<void(AclAuditReport)> done, size_t maxLocks)
    : zk_(zk), timer_(timer), root_(std::move(root)), maxLocks_(maxLocks), done_(std::move(done)) {
  outstanding_ = 3;
  check(root_, 0);
  check(root_ + "/locks", 0);
  listLocks(0);
}

AclAudit::~AclAudit() { *alive_ = false; }

void AclAudit::later(std::function<void()> fn) {
  timer_.schedule(timer_.now() + kRetryDelay, whileAlive(std::move(fn)));
}

void AclAudit::check(const std::string& path, int attempts) {
  zk_.getAcl(path, whileAlive([this, path, attempts](const AclResult& res) {
               if (worthRetrying(res.code) && attempts + 1 < kMaxAttempts) {
                 return later([this, path, attempts] { check(path, attempts + 1); });
               }
               if (res.code == Code::kOk) {
                 ++report_.checked;
                 if (isOpenAcl(res.acl)) report_.openNodes.push_back(path);
               } else if (res.code != Code::kNoNode) {
                 report_.unchecked.push_back(path + " (" + codeName(res.code) + ")");
               }
               settled();
             }));
}

void AclAudit::listLocks(int attempts) {
  zk_.getChildren(
      root_ + "/locks", whileAlive([this, attempts](const ChildrenResult& res) {
        if (worthRetrying(res.code) && attempts + 1 < kMaxAttempts) {
          return later([this, attempts] { listLocks(attempts + 1); });
        }
        if (res.code != Code::kOk && res.code != Code::kNoNode) {
          report_.unchecked.push_back(root_ + "/locks children (" + codeName(res.code) + ")");
        }
        for (size_t i = 0; i < res.children.size() && i < maxLocks_; ++i) {
          ++outstanding_;
          check(root_ + "/locks/" + res.children[i], 0);
        }
        settled();
      }));
}

void AclAudit::settled() {
  if (--outstanding_ > 0 || !done_) return;
  auto done = std::move(done_);
  done_ = nullptr;
  done(std::move(report_));
}

std::vector<std::string> describe(const AclAuditReport& report) {
  std::vector<std::string> lines;
  if (!report.openNodes.empty()) {
    lines.push_back(std::to_string(report.openNodes.size()) +
                    " existing ZooKeeper node(s) have an open ACL (the world may create and "
                    "delete children: any ZooKeeper client can delete a holder's node or plant "
                    "one in a queue): " +
                    firstFew(report.openNodes) +
                    "; set their ACL as docs/security.md shows (zkCli setAcl -R)");
  }
  if (!report.unchecked.empty()) {
    lines.push_back("could not check the ACL of " + firstFew(report.unchecked));
  }
  return lines;
}

}  // namespace fencekeeper::zk
