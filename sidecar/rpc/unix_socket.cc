#include "sidecar/rpc/unix_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/socket_path.h"

namespace fencekeeper::rpc {

namespace {

sockaddr_un addressOf(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    throw std::runtime_error("socket path '" + path + "' is empty or longer than " +
                             std::to_string(sizeof addr.sun_path - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// Creates `dir` (and missing ancestors, 0755) with exactly `mode`, the umask notwithstanding;
// appends to `created` each directory it made.
void makeDirectory(const std::filesystem::path& dir, mode_t mode,
                   std::vector<std::string>& created) {
  auto parent = dir.parent_path();
  struct stat st {};
  if (!parent.empty() && stat(parent.c_str(), &st) != 0) makeDirectory(parent, 0755, created);
  if (mkdir(dir.c_str(), 0700) == 0) {
    created.push_back(dir.string());
  } else if (errno != EEXIST) {
    throw std::runtime_error("cannot create socket directory '" + dir.string() +
                             "': " + std::strerror(errno));
  }
  // EEXIST: someone made it meanwhile; the checks of useDirectory decide about it.
  if (lstat(dir.c_str(), &st) == 0 && st.st_uid == geteuid()) chmod(dir.c_str(), mode);
}

// Makes sure only this uid (and root) can create or remove entries in `dir`: throws otherwise.
// `own`: the directory is the sidecar's own subdirectory, which takes `mode` and must not be a
// symbolic link (a planted one would lead elsewhere).
// `created`: the directories made for it, as makeDirectory.
void useDirectory(const std::filesystem::path& dir, mode_t mode, bool own,
                  std::vector<std::string>& created) {
  struct stat st {};
  if ((own ? lstat : stat)(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      throw std::runtime_error("socket directory '" + dir.string() + "': " + std::strerror(errno));
    }
    makeDirectory(dir, mode, created);
    if ((own ? lstat : stat)(dir.c_str(), &st) != 0) {
      throw std::runtime_error("socket directory '" + dir.string() + "': " + std::strerror(errno));
    }
  } else if (own && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
    chmod(dir.c_str(), mode);  // ours: it takes this run's mode (--socket-world or not)
    st.st_mode = (st.st_mode & ~07777) | mode;
  }
  uid_t me = geteuid();
  if (!S_ISDIR(st.st_mode)) {
    throw std::runtime_error("socket directory '" + dir.string() +
                             "' is not a directory: refusing it (remove it, or choose another "
                             "--socket)");
  }
  if (st.st_uid != me && st.st_uid != 0) {
    throw std::runtime_error("socket directory '" + dir.string() + "' is owned by uid " +
                             std::to_string(st.st_uid) + ", not by this sidecar's uid " +
                             std::to_string(me) +
                             ": that user could replace the socket; refusing it (remove it, or "
                             "choose another --socket)");
  }
  if (writableByOthers(st.st_mode)) {
    throw std::runtime_error("socket directory '" + dir.string() + "' has mode " +
                             modeText(st.st_mode) +
                             ": others could replace the socket; refusing it (remove it)");
  }
}

// True when a server accepts connections on `path` now, or when that cannot be told: only a
// refused connection proves the socket stale.
bool maybeLive(const sockaddr_un& addr) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return true;
  int rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  int err = errno;
  close(fd);
  return rc == 0 || err != ECONNREFUSED;
}

// True when nothing can serve at `addr`: no socket there, or connecting is refused.
bool provablyDead(const sockaddr_un& addr) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  int rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  int err = errno;
  close(fd);
  return rc != 0 && (err == ENOENT || err == ECONNREFUSED);
}

// Where the configured directory lets others write, "NAME.d" is anyone's to create or rename.
// One that is not this uid's (or root's) directory, and in which provably nothing serves, is
// renamed to "NAME.d.uid<U>-<inode>" so the bind can make its own; any other is left for the
// checks of useDirectory to refuse (another sidecar, or an impostor someone must stop).
void reclaimOwnDirectory(const std::filesystem::path& dir, const sockaddr_un& addr) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode) && (st.st_uid == geteuid() || st.st_uid == 0)) return;
  if (!provablyDead(addr)) return;
  std::string aside =
      dir.string() + ".uid" + std::to_string(st.st_uid) + "-" + std::to_string(st.st_ino);
  if (renameat2(AT_FDCWD, dir.c_str(), AT_FDCWD, aside.c_str(), RENAME_NOREPLACE) == 0) {
    spdlog::warn("socket directory '{}' was uid {}'s and nothing served in it: moved it to '{}'",
                 dir.string(), st.st_uid, aside);
  }
}

}  // namespace

BoundSocket bindUnixSocket(const std::string& configured, bool worldAccessible) {
  std::string path = resolveSocketPath(configured);
  sockaddr_un addr = addressOf(path);
  mode_t dirMode = worldAccessible ? 0755 : 0750;
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  BoundSocket bound{-1, path, 0, 0, {}, path != configured};
  try {
    if (bound.ownDirectory) reclaimOwnDirectory(dir, addr);
    useDirectory(dir, dirMode, bound.ownDirectory, bound.createdDirs);

    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        throw std::runtime_error("'" + path +
                                 "' exists and is not a socket: refusing to replace it");
      }
      if (st.st_uid != geteuid()) {
        throw std::runtime_error("'" + path + "' is a socket of uid " + std::to_string(st.st_uid) +
                                 ": refusing to replace it");
      }
      if (maybeLive(addr)) {
        throw std::runtime_error("another sidecar is serving on '" + path + "'");
      }
      unlink(path.c_str());  // stale: its sidecar died without cleaning up
    }

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket(): ") + std::strerror(errno));
    mode_t old = umask(worldAccessible ? 0 : 0117);  // 0660 or 0777
    int rc = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    int bindErrno = errno;
    umask(old);
    // SOMAXCONN (4096): a burst of local connections the loop has not accepted yet is queued;
    // a full backlog refuses a local connect at once (EAGAIN), a probe's too.
    if (rc != 0 || listen(fd, SOMAXCONN) != 0 || lstat(path.c_str(), &st) != 0) {
      int err = rc != 0 ? bindErrno : errno;
      if (rc == 0) unlink(path.c_str());  // bound but not listening: nobody would serve it
      close(fd);
      throw std::runtime_error("cannot listen on '" + path + "': " + std::strerror(err));
    }
    bound.fd = fd;
    bound.dev = st.st_dev;
    bound.ino = st.st_ino;
  } catch (...) {
    removeCreatedDirectories(bound);  // a refused start leaves no directory of its own behind
    throw;
  }
  return bound;
}

void removeBoundSocket(const BoundSocket& bound) {
  struct stat st {};
  if (lstat(bound.path.c_str(), &st) == 0 && st.st_dev == bound.dev && st.st_ino == bound.ino) {
    unlink(bound.path.c_str());
  }
}

void removeCreatedDirectories(const BoundSocket& bound) {
  for (auto dir = bound.createdDirs.rbegin(); dir != bound.createdDirs.rend(); ++dir) {
    rmdir(dir->c_str());  // fails, and keeps it, when something else is in it now
  }
}

}  // namespace fencekeeper::rpc
