// Keeps the sidecar's own socket directory where clients look for it. In a directory that others
// may write and that has no sticky bit (a Kubernetes emptyDir is 0777, 2777 with an fsGroup),
// any uid may rename "NAME.d" away and put its own in its place (issue 24): the sidecar is then
// unreachable, though clients refuse the impostor. Every kCheckEvery the guard looks whether the
// name still leads to the directory the bind made; if not, it renames that directory back
// (exchanging it with whatever took its name). Runs on the loop thread; main.cc owns it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/unique_fd.h"
#include "sidecar/rpc/unix_socket.h"

namespace fencekeeper::rpc {

class SocketDirGuard {
 public:
  static constexpr Millis kCheckEvery{1'000};

  // REQUIRES: bound.ownDirectory. Throws std::runtime_error if the directory cannot be opened.
  SocketDirGuard(const BoundSocket& bound, Timer& timer);
  ~SocketDirGuard();
  SocketDirGuard(const SocketDirGuard&) = delete;
  SocketDirGuard& operator=(const SocketDirGuard&) = delete;

  // Looks once, and puts the directory back if it was moved (the timer calls it).
  void check();

 private:
  void schedule();
  // The name the directory has now in the same parent, or empty when it is not there.
  std::string currentName() const;

  std::string dir_;   // "<parent>/NAME.d"
  std::string name_;  // "NAME.d"
  UniqueFd parent_;
  UniqueFd own_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  Timer& timer_;
  uint64_t timerId_ = 0;
  bool failing_ = false;  // the last check could not put it back (logged once per streak)
};

}  // namespace fencekeeper::rpc
