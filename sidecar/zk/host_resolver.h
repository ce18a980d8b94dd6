// Resolves the host names of a ZooKeeper connect string away from the sidecar's loop. The C client
// resolves its host list itself, blocking (getaddrinfo), at every connection attempt and every
// 10 s while connected; on the loop, a slow DNS server would hold back heartbeats, the lease
// clients and the status probes. Given numeric addresses, its resolution is a parse. So the
// client gets numeric addresses, and a thread of this class's own resolves the names again every
// `period`, handing a changed list to the loop (an ensemble's pods get new addresses when they
// roll). A connect string of numeric addresses needs none of this.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/executor.h"

namespace fencekeeper::zk {

class HostResolver {
 public:
  // Whether every host of `hosts` ("host:port,host:port", no chroot) is a numeric address.
  static bool numeric(const std::string& hosts);
  // `hosts` with each name replaced by its addresses ("10.0.0.7:2181,10.0.0.8:2181"), in the
  // order given; a name that does not resolve is left out. Empty if none resolves. Blocking.
  static std::string resolve(const std::string& hosts);

  // Resolves `hosts` every `period` on its own thread; `changed` runs on `loop` with each list
  // that differs from the last one (the first one compared is `resolved`).
  HostResolver(std::string hosts, std::string resolved, Millis period, Executor& loop,
               std::function<void(const std::string&)> changed);
  ~HostResolver();  // stops the thread and waits for it
  HostResolver(const HostResolver&) = delete;
  HostResolver& operator=(const HostResolver&) = delete;

 private:
  void run(std::string last);

  const std::string hosts_;
  const Millis period_;
  Executor& loop_;
  std::function<void(const std::string&)> changed_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the rest is set
};

}  // namespace fencekeeper::zk
