// HostResolver's parsing and resolution of a connect string's host list (the names the sidecar
// resolves off its loop, sidecar/zk/host_resolver.h). Only "localhost" (/etc/hosts): a name that
// does not resolve would be asked of a DNS server, off this machine.
#include "sidecar/zk/host_resolver.h"

#include <gtest/gtest.h>

namespace fencekeeper::zk {
namespace {

TEST(HostResolver, AddressesAreNumericAndNamesAreNot) {
  EXPECT_TRUE(HostResolver::numeric("127.0.0.1:2181"));
  EXPECT_TRUE(HostResolver::numeric("127.0.0.1:2181,10.1.2.3:2182,::1:2183"));
  EXPECT_FALSE(HostResolver::numeric("localhost:2181"));
  EXPECT_FALSE(HostResolver::numeric("127.0.0.1:2181,zk-1.zk:2181"));
}

TEST(HostResolver, NamesBecomeAddressesAndAddressesStayInTheirPlace) {
  std::string resolved = HostResolver::resolve("127.0.0.2:1,localhost:2");
  EXPECT_EQ(resolved.rfind("127.0.0.2:1,", 0), 0u) << resolved;
  EXPECT_TRUE(resolved.find("127.0.0.1:2") != std::string::npos ||
              resolved.find("::1:2") != std::string::npos)
      << resolved;
  EXPECT_TRUE(HostResolver::numeric(resolved)) << resolved;
}

}  // namespace
}  // namespace fencekeeper::zk
