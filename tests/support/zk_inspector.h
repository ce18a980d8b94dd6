// A plain synchronous ZooKeeper session for tests to look at (and tamper with) the znode tree
// behind the sidecars' backs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

typedef struct _zhandle zhandle_t;

namespace fencekeeper::testing {

class ZkInspector {
 public:
  // Waits (bounded) until the session is connected; throws otherwise.
  explicit ZkInspector(const std::string& hosts);
  ~ZkInspector();
  ZkInspector(const ZkInspector&) = delete;
  ZkInspector& operator=(const ZkInspector&) = delete;

  // Children names; empty when the node does not exist.
  std::vector<std::string> children(const std::string& path);
  bool exists(const std::string& path);
  std::optional<int64_t> czxid(const std::string& path);
  // Creates a persistent node with the open ACL (as a client without credentials). False when
  // it was not created (exists, no parent, refused by the parent's ACL).
  bool create(const std::string& path, const std::string& data = "");
  // The same, ephemeral: owned by this inspector's session, as another client's lock node is.
  bool createEphemeral(const std::string& path, const std::string& data);
  // Deletes a node (and, when `recursive`, its children first). False when it was not deleted
  // (did not exist, or refused by the parent's ACL).
  bool remove(const std::string& path, bool recursive = false);

 private:
  zhandle_t* zh_ = nullptr;
};

}  // namespace fencekeeper::testing
