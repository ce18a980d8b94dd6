// The ZooKeeper digest credentials of --zk-auth-file: one line `user:password`. Every sidecar of
// an application shares them: they are one ZooKeeper identity, which owns the lock nodes.
#pragma once

#include <string>

namespace fencekeeper::zk {

struct DigestCredentials {
  std::string user;
  std::string password;
  // What zoo_add_auth("digest", ...) takes.
  std::string secret() const { return user + ":" + password; }
};

// Reads and checks the file. Throws std::runtime_error saying what is wrong and how to fix it:
// missing or unreadable, not a regular file, readable or writable by other users, or not one line
// `user:password` (user without ':', neither part empty; one trailing newline allowed).
DigestCredentials readCredentialsFile(const std::string& path);

}  // namespace fencekeeper::zk
