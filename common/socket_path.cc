#include "common/socket_path.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

namespace fencekeeper {

std::string modeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string resolveSocketPath(const std::string& configured) {
  std::filesystem::path path(configured);
  std::filesystem::path dir = path.parent_path();
  struct stat st {};
  if (stat(dir.empty() ? "." : dir.c_str(), &st) != 0 || !writableByOthers(st.st_mode)) {
    return configured;
  }
  std::string name = path.filename().string();
  return (dir / (name + ".d") / name).string();
}

}  // namespace fencekeeper
