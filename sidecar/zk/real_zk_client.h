// zk::Client over the single-threaded ZooKeeper C client: the only code of the sidecar that
// includes zookeeper.h. The sidecar's KJ loop drives it (zk_loop_driver.h): completions and
// watches run on the loop thread, inside the client's calls, with no hand-off between threads.
// An answer the client gives at once (a refused request) still runs on a later turn.
//
// When the session expires, the client closes the dead handle and opens a new session itself,
// reporting kExpired, then kConnected with the new session id.
// Owned by main; lives on the loop thread (construct, call and destroy it there).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "sidecar/zk/credentials.h"
#include "sidecar/zk/zk_client.h"

namespace kj {
class UnixEventPort;
}

namespace fencekeeper::zk {

class RealZkClient final : public Client {
 public:
  // `hosts` is the C client's connect string: "host:port[,host:port...][/chroot]".
  // Throws std::runtime_error when the handle cannot be made (malformed hosts).
  // `timer` paces new attempts when a session cannot even be set up (no host resolves).
  // `watchHandshakes`: leave a server that leaves a reconnect's handshake unanswered for an
  // eighth of the session timeout (leaveServer's way); only for a process with one handle.
  // `credentials`: digest auth added to every handle before any request on it (also the new
  // handle after an expiry), and every node created with the ACL zk_client.h describes.
  RealZkClient(kj::UnixEventPort& events, Timer& timer, std::string hosts, Millis sessionTimeout,
               bool watchHandshakes = false,
               std::optional<DigestCredentials> credentials = std::nullopt);
  ~RealZkClient() override;

  void create(const std::string& path, const std::string& data, CreateMode mode,
              CreateCallback done) override;
  void getChildren(const std::string& path, ChildrenCallback done) override;
  void getChildrenAndWatch(const std::string& path, ChildrenCallback done,
                           WatchCallback onChange) override;
  void getAndWatch(const std::string& path, GetCallback done, WatchCallback onChange) override;
  void existsAndWatch(const std::string& path, CodeCallback done, WatchCallback onChange) override;
  void get(const std::string& path, GetCallback done) override;
  void remove(const std::string& path, CodeCallback done) override;
  void sync(const std::string& path, CodeCallback done) override;
  void getAcl(const std::string& path, AclCallback done) override;
  // Shuts down the connection's socket (socket_drop.h): the C client reconnects the session to
  // the next server of its list. Assumes this is the process's only handle to those servers.
  void leaveServer() override;
  SessionState sessionState() const override;
  int64_t sessionId() const override;
  int32_t negotiatedTimeoutMs() const override;
  void setSessionListener(std::function<void(SessionState)> listener) override;
  // The session's password (empty before the first connect), for tests that expire the session
  // for real: a second handle opened with this id and password, then closed, ends it.
  std::string sessionPassword() const;

  struct Shared;  // what the C client's callbacks reach (defined in the .cc)

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace fencekeeper::zk
