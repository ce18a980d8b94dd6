#include "bench/zk_sync.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "tests/support/wait.h"

namespace fencekeeper::bench {

ZkSync::ZkSync(const std::string& hosts, int resolutionDelayMs) {
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  zh_ = zookeeper_init(hosts.c_str(), nullptr, 10000, nullptr, nullptr, 0);
  if (!zh_) throw std::runtime_error("zookeeper_init failed");
  if (resolutionDelayMs != 0) zoo_set_servers_resolution_delay(zh_, resolutionDelayMs);
  if (!testing::waitUntil([&] { return zoo_state(zh_) == ZOO_CONNECTED_STATE; },
                          std::chrono::milliseconds(10000))) {
    zookeeper_close(zh_);
    throw std::runtime_error("ZooKeeper session did not connect");
  }
}

ZkSync::~ZkSync() { zookeeper_close(zh_); }

void ZkSync::ensurePath(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string p = path.substr(0, pos);
    int rc = zoo_create(zh_, p.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
    if (rc != ZOK && rc != ZNODEEXISTS) throw std::runtime_error("create " + p + ": " + zerror(rc));
  }
}

bool ZkSync::createSeq(const std::string& prefix, std::string* created) {
  char buf[512];
  ::Stat stat;
  int rc = zoo_create2(zh_, prefix.c_str(), "bench", 5, &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_EPHEMERAL_SEQUENTIAL, buf, sizeof buf, &stat);
  if (rc != ZOK) return false;
  *created = buf;
  return true;
}

bool ZkSync::children(const std::string& path) {
  String_vector v{};
  int rc = zoo_get_children(zh_, path.c_str(), 0, &v);
  if (rc == ZOK) deallocate_String_vector(&v);
  return rc == ZOK;
}

namespace {

// The two answers of createSeqAndList, set by the C client's completion thread.
struct PipelinedAnswers {
  std::mutex mu;
  std::condition_variable cv;
  int pending = 2;
  int createRc = ZSYSTEMERROR;
  int listRc = ZSYSTEMERROR;
  std::string created;

  void answered() {
    std::lock_guard<std::mutex> lock(mu);
    if (--pending == 0) cv.notify_one();
  }
};

}  // namespace

bool ZkSync::createSeqAndList(const std::string& prefix, const std::string& parent,
                              std::string* created) {
  PipelinedAnswers a;
  auto onCreate = [](int rc, const char* path, const ::Stat*, const void* data) {
    auto* answers = static_cast<PipelinedAnswers*>(const_cast<void*>(data));
    answers->createRc = rc;
    if (rc == ZOK) answers->created = path;
    answers->answered();
  };
  auto onList = [](int rc, const String_vector*, const void* data) {
    auto* answers = static_cast<PipelinedAnswers*>(const_cast<void*>(data));
    answers->listRc = rc;
    answers->answered();
  };
  if (zoo_acreate2(zh_, prefix.c_str(), "bench", 5, &ZOO_OPEN_ACL_UNSAFE,
                   ZOO_EPHEMERAL_SEQUENTIAL, onCreate, &a) != ZOK) {
    return false;
  }
  if (zoo_aget_children(zh_, parent.c_str(), 0, onList, &a) != ZOK) a.answered();
  std::unique_lock<std::mutex> lock(a.mu);
  a.cv.wait(lock, [&] { return a.pending == 0; });
  *created = a.created;
  return a.createRc == ZOK && a.listRc == ZOK;
}

bool ZkSync::remove(const std::string& path) { return zoo_delete(zh_, path.c_str(), -1) == ZOK; }

std::string zkFourLetter(int port, const char* word) {
  std::string text;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return text;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const size_t len = std::char_traits<char>::length(word);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, word, len, MSG_NOSIGNAL) == static_cast<ssize_t>(len)) {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

std::map<std::string, long long> zkMntr(int port) {
  std::map<std::string, long long> out;
  std::istringstream in(zkFourLetter(port, "mntr"));
  std::string line;
  while (std::getline(in, line)) {  // "key<TAB>value"; some values hold spaces
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    try {
      size_t used = 0;
      std::string value = line.substr(tab + 1);
      long long v = std::stoll(value, &used);
      if (used == value.size()) out[line.substr(0, tab)] = v;
    } catch (...) {
    }
  }
  return out;
}

}  // namespace fencekeeper::bench
