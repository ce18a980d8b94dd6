#include "examples/fenced_store/state_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace fencekeeper::store {
namespace {

constexpr std::string_view kMagic = "fenced-store state v1";
constexpr const char* kStateName = "state";
constexpr const char* kTempName = "state.tmp";
constexpr const char* kLockName = "lock";

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

// Reads the file format front to back; every accessor fails (returns false) rather than reading
// past the end, so a damaged file is reported instead of half-loaded.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}

  bool line(std::string_view& out) {
    size_t end = rest_.find('\n');
    if (end == std::string_view::npos) return false;
    out = rest_.substr(0, end);
    rest_.remove_prefix(end + 1);
    return true;
  }

  bool bytes(size_t n, std::string_view& out) {
    if (rest_.size() < n) return false;
    out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }

  // `<word> <count>`, e.g. "fences 3".
  bool counted(std::string_view word, uint64_t& count) {
    std::string_view text;
    if (!line(text) || !text.starts_with(word) || text.size() <= word.size() ||
        text[word.size()] != ' ') {
      return false;
    }
    return number(text.substr(word.size() + 1), count);
  }

  // Two decimal numbers separated by one space.
  bool pair(uint64_t& a, uint64_t& b) {
    std::string_view text;
    if (!line(text)) return false;
    size_t space = text.find(' ');
    if (space == std::string_view::npos) return false;
    return number(text.substr(0, space), a) && number(text.substr(space + 1), b);
  }

  bool atEnd() const { return rest_.empty(); }

 private:
  static bool number(std::string_view text, uint64_t& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty();
  }

  std::string_view rest_;
};

bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string encodeState(const Objects& objects, const FenceGate::Fences& fences) {
  std::string out;
  out.append(kMagic).append("\n");
  out.append("fences ").append(std::to_string(fences.size())).append("\n");
  for (const auto& [lock, token] : fences) {
    out.append(std::to_string(lock.size())).append(" ").append(std::to_string(token));
    out.append("\n").append(lock).append("\n");
  }
  out.append("objects ").append(std::to_string(objects.size())).append("\n");
  for (const auto& [key, value] : objects) {
    out.append(std::to_string(key.size())).append(" ").append(std::to_string(value.size()));
    out.append("\n").append(key).append(value).append("\n");
  }
  out.append("end\n");
  return out;
}

std::optional<StoreState> decodeState(std::string_view bytes) {
  Reader in(bytes);
  StoreState state;
  std::string_view text;
  if (!in.line(text) || text != kMagic) return std::nullopt;
  uint64_t count = 0;
  if (!in.counted("fences", count)) return std::nullopt;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t size = 0, token = 0;
    std::string_view lock, newline;
    if (!in.pair(size, token) || !in.bytes(size, lock) || !in.bytes(1, newline) ||
        newline != "\n" || !state.fences.emplace(lock, token).second) {
      return std::nullopt;
    }
  }
  if (!in.counted("objects", count)) return std::nullopt;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t keySize = 0, valueSize = 0;
    std::string_view key, value, newline;
    if (!in.pair(keySize, valueSize) || !in.bytes(keySize, key) || !in.bytes(valueSize, value) ||
        !in.bytes(1, newline) || newline != "\n" || !state.objects.emplace(key, value).second) {
      return std::nullopt;
    }
  }
  if (!in.line(text) || text != "end" || !in.atEnd()) return std::nullopt;
  return state;
}

std::optional<StateFile> StateFile::open(const std::string& dir, std::string& error) {
  UniqueFd dirFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirFd.valid()) {
    error = errnoText("cannot open data directory " + dir);
    return std::nullopt;
  }
  UniqueFd lockFd(::openat(dirFd.get(), kLockName, O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!lockFd.valid()) {
    error = errnoText("cannot create " + dir + "/" + kLockName);
    return std::nullopt;
  }
  if (::flock(lockFd.get(), LOCK_EX | LOCK_NB) != 0) {
    error = errno == EWOULDBLOCK ? "another fenced-store is already serving " + dir
                                 : errnoText("cannot lock " + dir + "/" + kLockName);
    return std::nullopt;
  }
  return StateFile(dir, std::move(dirFd), std::move(lockFd));
}

std::optional<StoreState> StateFile::load(std::string& error) const {
  std::string path = dir_ + "/" + kStateName;
  UniqueFd fd(::openat(dirFd_.get(), kStateName, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return StoreState{};
    error = errnoText("cannot open " + path);
    return std::nullopt;
  }
  std::string bytes;
  char buffer[64 * 1024];
  while (true) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errnoText("cannot read " + path);
      return std::nullopt;
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  auto state = decodeState(bytes);
  if (!state) error = path + " is corrupt; refusing to start without its fences";
  return state;
}

bool StateFile::save(const Objects& objects, const FenceGate::Fences& fences, std::string& error) {
  std::string temp = dir_ + "/" + kTempName;
  UniqueFd fd(::openat(dirFd_.get(), kTempName, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    error = errnoText("cannot create " + temp);
    return false;
  }
  if (!writeAll(fd.get(), encodeState(objects, fences))) {
    error = errnoText("cannot write " + temp);
    return false;
  }
  if (::fsync(fd.get()) != 0) {
    error = errnoText("cannot fsync " + temp);
    return false;
  }
  fd.close();
  if (::renameat(dirFd_.get(), kTempName, dirFd_.get(), kStateName) != 0) {
    error = errnoText("cannot rename " + temp);
    return false;
  }
  if (::fsync(dirFd_.get()) != 0) {
    error = errnoText("cannot fsync " + dir_);
    return false;
  }
  return true;
}

}  // namespace fencekeeper::store
