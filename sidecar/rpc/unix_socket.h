// Binding the sidecar's Unix socket in a directory only the sidecar can write: created 0750
// (0755 world-accessible) whatever the umask, or a subdirectory of its own where the configured
// directory is writable by others (docs/security.md "Who may connect"). A stale socket of this
// uid is replaced, a live one or one of another uid is refused; shutdown removes only the socket
// this process bound (and a failed start the directories it created too). Where another uid took
// the subdirectory's name and nothing serves in it (an impostor's leftover, or a directory renamed
// away and replaced), the bind moves it aside, as the parent lets anyone, and makes its own.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace fencekeeper::rpc {

struct BoundSocket {
  int fd = -1;       // listening, non-blocking, close-on-exec
  std::string path;  // where it is bound (see resolveSocketPath)
  dev_t dev = 0;     // the socket file this process created
  ino_t ino = 0;
  std::vector<std::string> createdDirs;  // made by this bind, outermost first
  // Bound in a subdirectory of its own ("DIR/NAME.d"), where DIR lets others write (a
  // SocketDirGuard keeps it in place).
  bool ownDirectory = false;
};

// Binds the socket for the configured `path` (mode 0660, or 0777 if `worldAccessible`). Throws
// std::runtime_error with a message meant for a person.
BoundSocket bindUnixSocket(const std::string& path, bool worldAccessible);

// Unlinks the socket file if it is still the one `bound` created (not a successor's).
void removeBoundSocket(const BoundSocket& bound);

// Removes the directories the bind created, innermost first, as far as they are empty (a failed
// start leaves none behind). REQUIRES: the socket removed (removeBoundSocket).
void removeCreatedDirectories(const BoundSocket& bound);

}  // namespace fencekeeper::rpc
