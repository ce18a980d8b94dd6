#include "client_lib/src/server_check.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/socket_path.h"

namespace fencekeeper::internal {

namespace {

Status refuse(const std::string& path, const std::string& why) {
  return Status{ErrorCode::kSidecarUnavailable,
                "refusing the server on " + path + ": " + why + " (docs/security.md)"};
}

std::string uidText(uid_t uid) { return "uid " + std::to_string(uid); }

}  // namespace

Status checkServer(int fd, const std::string& path, std::optional<uid_t> expectUid) {
  std::optional<uid_t> uid = peerUid(fd);
  if (!uid)
    return refuse(path, std::string("cannot read its credentials: ") + std::strerror(errno));
  if (expectUid) {
    if (*uid == *expectUid) return Status{};
    return refuse(path, "it runs as " + uidText(*uid) + ", expected " + uidText(*expectUid));
  }
  struct stat sock {
  }, dir{}, parent{};
  std::filesystem::path dirPath = std::filesystem::path(path).parent_path();
  if (dirPath.empty()) dirPath = ".";
  if (stat(path.c_str(), &sock) != 0 || stat(dirPath.c_str(), &dir) != 0) {
    return refuse(path, std::string("cannot stat it: ") + std::strerror(errno));
  }
  if (*uid != sock.st_uid) {
    return refuse(path, "it runs as " + uidText(*uid) + ", but the socket belongs to " +
                            uidText(sock.st_uid));
  }
  if ((dir.st_uid != sock.st_uid && dir.st_uid != 0) || writableByOthers(dir.st_mode)) {
    return refuse(path, "its directory " + dirPath.string() + " (" + uidText(dir.st_uid) +
                            ", mode " + modeText(dir.st_mode) + ") lets others than the server's " +
                            uidText(*uid) + " replace the socket");
  }
  // In a directory anyone can write (an emptyDir, /tmp), anyone can make the socket's directory:
  // its owner proves nothing, so only root and this process's own uid are trusted without asking.
  auto grand = dirPath.parent_path();
  bool shared =
      stat(grand.empty() ? "." : grand.c_str(), &parent) == 0 && writableByOthers(parent.st_mode);
  if (shared && *uid != 0 && *uid != geteuid()) {
    std::string expected = geteuid() == 0 ? "uid 0" : "uid 0 or " + uidText(geteuid());
    return refuse(path, "it runs as " + uidText(*uid) + " in " + grand.string() +
                            ", which others can write, expected " + expected + "; if " +
                            uidText(*uid) +
                            " is the sidecar's, expect it (--expect-uid, expect_uid, "
                            "FENCEKEEPER_EXPECT_UID)");
  }
  return Status{};
}

std::optional<uid_t> peerUid(int fd) {
  ucred peer{};
  socklen_t len = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) return std::nullopt;
  return peer.uid;
}

Status expectedUid(int64_t expectUid, std::optional<uid_t>* out) {
  *out = std::nullopt;
  std::string text;
  if (expectUid >= 0) {
    text = std::to_string(expectUid);
  } else if (const char* env = std::getenv("FENCEKEEPER_EXPECT_UID"); env && *env) {
    text = env;
  } else {
    return Status{};
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value >= uint64_t{UINT32_MAX}) {
    return Status{ErrorCode::kInvalidArgument, "expected uid '" + text + "' is not a uid"};
  }
  *out = static_cast<uid_t>(value);
  return Status{};
}

}  // namespace fencekeeper::internal
