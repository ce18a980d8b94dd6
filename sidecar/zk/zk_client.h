// The narrow ZooKeeper interface the lock engine depends on: an in-memory fake and the real C
// client implement it. Every callback runs on the sidecar's event loop thread, never on a
// ZooKeeper client thread. Completion callbacks are called exactly once, also when the client
// is closed (kClosing); no callback runs after the client is destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fencekeeper::zk {

// The ZooKeeper outcomes the engine branches on; every C client return code maps to one of these
// in real_zk_client.cc (mapCode) and nowhere else.
enum class Code {
  kOk,
  kNoNode,
  kNodeExists,
  kNotEmpty,
  kBadVersion,
  kConnectionLoss,    // ambiguous: the request may or may not have been applied
  kOperationTimeout,  // ambiguous, as connection loss
  kSessionExpired,
  kClosing,  // the client is being closed
  kInvalidArgument,
  kNoAuth,  // the node's ACL does not grant this session the operation (or its auth was refused)
  kOther,
};

const char* codeName(Code code);
// True when the request may have been applied although no answer came back.
inline bool isAmbiguous(Code code) {
  return code == Code::kConnectionLoss || code == Code::kOperationTimeout;
}

struct Stat {
  int64_t czxid = 0;
  int64_t mzxid = 0;
  int64_t ctimeMs = 0;  // wall clock of the server
  int64_t ephemeralOwner = 0;
  int32_t version = 0;
  int32_t numChildren = 0;
};

// Permission bits of an ACL entry, as ZooKeeper numbers them.
enum Perm : int32_t {
  kPermRead = 1,
  kPermWrite = 2,
  kPermCreate = 4,
  kPermDelete = 8,
  kPermAdmin = 16,
  kPermAll = 31,
};
// One ACL entry: `scheme:id` is granted `perms` ("world:anyone", "digest:user:base64(sha1)").
struct Acl {
  std::string scheme;
  std::string id;
  int32_t perms = 0;
};

enum class CreateMode { kPersistent, kContainer, kEphemeralSequential };

enum class SessionState {
  kConnecting,  // disconnected, the client is trying to reconnect (the session may still live)
  kConnected,
  kExpired,  // the session is gone with its ephemeral nodes; a new client must be made
  kAuthFailed,
};
const char* sessionStateName(SessionState state);

// What fired a watch. A waiter that knows its predecessor was deleted (not merely changed) can
// take the lock without listing its queue again.
enum class WatchEvent { kChanged, kDeleted };

struct CreateResult {
  Code code;
  std::string path;  // the created path (with its sequence suffix)
  Stat stat;
};
struct ChildrenResult {
  Code code;
  std::vector<std::string> children;  // names, not paths
};
struct GetResult {
  Code code;
  std::string data;
  Stat stat;
};
struct AclResult {
  Code code;
  std::vector<Acl> acl;
};

class Client {
 public:
  virtual ~Client() = default;

  using CreateCallback = std::function<void(CreateResult)>;
  using ChildrenCallback = std::function<void(ChildrenResult)>;
  using GetCallback = std::function<void(GetResult)>;
  using CodeCallback = std::function<void(Code)>;
  using AclCallback = std::function<void(AclResult)>;
  // Called at most once, when the watched node is deleted or changed (its data, or its children
  // for a children watch). A watch may end without a call when the session expires or the client
  // closes: the session listener says so.
  using WatchCallback = std::function<void(WatchEvent)>;

  // The node gets the client's ACL: with credentials, all rights for their identity (parents
  // too: ZooKeeper checks create and delete on the parent) and read for the world; else open.
  virtual void create(const std::string& path, const std::string& data, CreateMode mode,
                      CreateCallback done) = 0;
  virtual void getChildren(const std::string& path, ChildrenCallback done) = 0;
  // Lists a node's children; when it exists, `onChange` is armed and fires once when a child is
  // created or deleted or the node itself is deleted. On kNoNode no watch is left behind.
  virtual void getChildrenAndWatch(const std::string& path, ChildrenCallback done,
                                   WatchCallback onChange) = 0;
  // Reads a node; when it exists, `onChange` is armed and fires once on its change or deletion.
  // When the node does not exist (kNoNode), no watch is left behind.
  virtual void getAndWatch(const std::string& path, GetCallback done, WatchCallback onChange) = 0;
  // Whether a node exists (kOk or kNoNode); on either, `onChange` is armed and fires once when
  // the node is created, changed or deleted. On any other code no watch is left behind.
  virtual void existsAndWatch(const std::string& path, CodeCallback done,
                              WatchCallback onChange) = 0;
  virtual void get(const std::string& path, GetCallback done) = 0;
  virtual void remove(const std::string& path, CodeCallback done) = 0;
  virtual void getAcl(const std::string& path, AclCallback done) = 0;
  // A sync goes through the leader: once it answers, this client sees every write the leader had
  // committed when the sync was sent.
  virtual void sync(const std::string& path, CodeCallback done) = 0;

  // Moves the session to the next server of the connect string, for a server that answers
  // nothing: the session lives on (the handle is neither closed nor re-created).
  virtual void leaveServer() = 0;

  virtual SessionState sessionState() const = 0;
  virtual int64_t sessionId() const = 0;
  virtual int32_t negotiatedTimeoutMs() const = 0;
  // One listener; called on the loop thread for every session state change.
  virtual void setSessionListener(std::function<void(SessionState)> listener) = 0;
};

}  // namespace fencekeeper::zk
