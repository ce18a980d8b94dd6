#include "tests/support/zk_inspector.h"

#include <zookeeper/zookeeper.h>

#include <stdexcept>

#include "tests/support/wait.h"

namespace fencekeeper::testing {

namespace {
void quiet(const char*) {}
}  // namespace

ZkInspector::ZkInspector(const std::string& hosts) {
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  zh_ = zookeeper_init2(hosts.c_str(), nullptr, 10000, nullptr, nullptr, 0, quiet);
  if (!zh_ || !waitUntil([&] { return zoo_state(zh_) == ZOO_CONNECTED_STATE; })) {
    throw std::runtime_error("ZkInspector: cannot connect to " + hosts);
  }
}

ZkInspector::~ZkInspector() {
  if (zh_) zookeeper_close(zh_);
}

std::vector<std::string> ZkInspector::children(const std::string& path) {
  String_vector names{};
  std::vector<std::string> out;
  if (zoo_get_children(zh_, path.c_str(), 0, &names) != ZOK) return out;
  for (int i = 0; i < names.count; ++i) out.emplace_back(names.data[i]);
  deallocate_String_vector(&names);
  return out;
}

bool ZkInspector::exists(const std::string& path) {
  ::Stat stat{};
  return zoo_exists(zh_, path.c_str(), 0, &stat) == ZOK;
}

std::optional<int64_t> ZkInspector::czxid(const std::string& path) {
  ::Stat stat{};
  if (zoo_exists(zh_, path.c_str(), 0, &stat) != ZOK) return std::nullopt;
  return stat.czxid;
}

bool ZkInspector::create(const std::string& path, const std::string& data) {
  return zoo_create(zh_, path.c_str(), data.data(), static_cast<int>(data.size()),
                    &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, nullptr, 0) == ZOK;
}

bool ZkInspector::createEphemeral(const std::string& path, const std::string& data) {
  return zoo_create(zh_, path.c_str(), data.data(), static_cast<int>(data.size()),
                    &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, nullptr, 0) == ZOK;
}

bool ZkInspector::remove(const std::string& path, bool recursive) {
  if (recursive) {
    for (auto& child : children(path)) remove(path + "/" + child, true);
  }
  return zoo_delete(zh_, path.c_str(), -1) == ZOK;
}

}  // namespace fencekeeper::testing
