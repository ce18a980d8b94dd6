#include "sidecar/rpc/socket_dir_guard.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace fencekeeper::rpc {

namespace {

UniqueFd openPath(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    throw std::runtime_error("cannot open socket directory '" + path +
                             "': " + std::strerror(errno));
  }
  return fd;
}

}  // namespace

SocketDirGuard::SocketDirGuard(const BoundSocket& bound, Timer& timer)
    : dir_(std::filesystem::path(bound.path).parent_path().string()),
      name_(std::filesystem::path(dir_).filename().string()),
      parent_(openPath(std::filesystem::path(dir_).parent_path().string())),
      own_(openPath(dir_)),
      timer_(timer) {
  struct stat st {};
  if (fstat(own_.get(), &st) != 0) {
    throw std::runtime_error("socket directory '" + dir_ + "': " + std::strerror(errno));
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  schedule();
}

SocketDirGuard::~SocketDirGuard() { timer_.cancel(timerId_); }

void SocketDirGuard::schedule() {
  timerId_ = timer_.schedule(timer_.now() + kCheckEvery, [this] {
    check();
    schedule();
  });
}

std::string SocketDirGuard::currentName() const {
  // The kernel knows where the directory went: /proc names what the descriptor refers to now.
  char target[4096];
  std::string link = "/proc/self/fd/" + std::to_string(own_.get());
  ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0) return "";
  target[n] = '\0';
  std::string name = std::filesystem::path(target).filename().string();
  struct stat st {};
  bool there = fstatat(parent_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               st.st_dev == dev_ && st.st_ino == ino_;
  return there ? name : "";
}

void SocketDirGuard::check() {
  struct stat st {};
  bool taken = fstatat(parent_.get(), name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (taken && st.st_dev == dev_ && st.st_ino == ino_) {
    failing_ = false;
    return;
  }
  std::string now = currentName();
  std::string why;
  if (now.empty()) {
    why = "it is no longer in its parent directory";
  } else if (renameat2(parent_.get(), now.c_str(), parent_.get(), name_.c_str(),
                       taken ? RENAME_EXCHANGE : RENAME_NOREPLACE) != 0) {
    why = "cannot rename it back: " + std::string(std::strerror(errno));
  }
  if (why.empty()) {
    spdlog::warn(
        "socket directory {} had been renamed to {}{}: renamed it back (another uid may rename "
        "entries of a directory it may write that has no sticky bit; see docs/security.md)",
        dir_, now,
        taken ? " and uid " + std::to_string(st.st_uid) + "'s put in its place (now at " + now + ")"
              : "");
    failing_ = false;
  } else if (!failing_) {
    failing_ = true;
    spdlog::error(
        "socket directory {} is gone from its name ({}): clients cannot reach the "
        "sidecar; restart it",
        dir_, why);
  }
}

}  // namespace fencekeeper::rpc
