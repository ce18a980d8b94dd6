#include "sidecar/zk/credentials.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/unique_fd.h"

namespace fencekeeper::zk {

namespace {
constexpr size_t kMaxFileBytes = 4096;

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw std::runtime_error("--zk-auth-file " + path + ": " + why);
}
}  // namespace

DigestCredentials readCredentialsFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) bad(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) bad(path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) bad(path, "not a regular file");
  if (st.st_mode & S_IRWXO) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    bad(path, std::string("mode ") + mode +
                  " lets every user read it; make it private (chmod o-rwx, or defaultMode 0440 "
                  "for a Kubernetes Secret)");
  }
  if (st.st_size > static_cast<off_t>(kMaxFileBytes)) bad(path, "longer than 4096 bytes");
  std::string text(kMaxFileBytes + 1, '\0');
  ssize_t n = ::read(fd.get(), text.data(), text.size());
  if (n < 0) bad(path, std::strerror(errno));
  text.resize(static_cast<size_t>(n));
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.back() == '\r') text.pop_back();
  auto colon = text.find(':');
  if (text.find_first_of(std::string("\n\r\0", 3)) != std::string::npos ||
      colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    bad(path, "expected one line user:password (neither empty)");
  }
  return DigestCredentials{text.substr(0, colon), text.substr(colon + 1)};
}

}  // namespace fencekeeper::zk
