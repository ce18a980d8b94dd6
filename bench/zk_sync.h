// The ZooKeeper C client used directly, the baselines' side: a synchronous session, and the
// server's four-letter words (`mntr`, `wchs`) over loopback TCP.
#pragma once

#include <zookeeper/zookeeper.h>

#include <map>
#include <string>

namespace fencekeeper::bench {

// One session of the synchronous C API. Not thread-safe (one caller at a time).
class ZkSync {
 public:
  // resolutionDelayMs: 0 is the C client's default (re-resolve the hosts on every I/O pass).
  explicit ZkSync(const std::string& hosts, int resolutionDelayMs = 0);
  ~ZkSync();
  ZkSync(const ZkSync&) = delete;
  ZkSync& operator=(const ZkSync&) = delete;

  // Creates every missing node of `path` (persistent). Throws on failure.
  void ensurePath(const std::string& path);
  // create(EPHEMERAL_SEQUENTIAL) with zoo_create2 (the Stat, hence czxid, comes back), as the
  // sidecar does.
  bool createSeq(const std::string& prefix, std::string* created);
  bool children(const std::string& path);
  // createSeq with the listing of `parent` sent right behind it, before the create's answer (the
  // sidecar's pattern: ZooKeeper answers a session's requests in order, so one wait for both).
  bool createSeqAndList(const std::string& prefix, const std::string& parent,
                        std::string* created);
  bool remove(const std::string& path);

 private:
  zhandle_t* zh_ = nullptr;
};

// The answer to a four-letter word ("mntr", "wchs", ...), empty when the server did not answer
// in 2 s.
std::string zkFourLetter(int port, const char* word);
// ZooKeeper's `mntr` counters: key -> integer value (non-integer values are left out).
std::map<std::string, long long> zkMntr(int port);

}  // namespace fencekeeper::bench
