#include "examples/fenced_store/http.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>

namespace fencekeeper::store {
namespace {

using Clock = std::chrono::steady_clock;

HttpResponse refuse(int status, std::string why) { return {status, std::move(why) + "\n"}; }

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// RFC 9110 token characters (header names).
bool isTokenChar(char c) {
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Control characters other than tab are never legal in a header value; letting CR, LF or NUL
// through would let a client smuggle text into whatever logs or forwards the value.
bool isValidValue(std::string_view value) {
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits the head (without its blank line) into lines; RFC 9112 lets a server accept a bare LF
// as a line end, so a trailing CR is optional.
std::vector<std::string_view> splitLines(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    size_t end = head.find('\n');
    std::string_view line = head.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    head.remove_prefix(end + 1);
  }
  return lines;
}

// Fills method, target and headers; returns the refusal when the head is malformed.
std::optional<HttpResponse> parseHead(std::string_view head, HttpRequest& request) {
  std::vector<std::string_view> lines = splitLines(head);
  if (lines.empty()) return refuse(400, "empty request");
  std::string_view first = lines[0];
  size_t sp1 = first.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : first.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || first.find(' ', sp2 + 1) != std::string_view::npos) {
    return refuse(400, "malformed request line");
  }
  std::string_view method = first.substr(0, sp1);
  std::string_view target = first.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = first.substr(sp2 + 1);
  if (method.empty() || method.size() > 16) return refuse(400, "malformed method");
  for (char c : method) {
    if (c < 'A' || c > 'Z') return refuse(400, "malformed method");
  }
  if (target.empty() || target[0] != '/') return refuse(400, "malformed request target");
  for (char c : target) {
    if (c <= ' ' || c > '~') return refuse(400, "malformed request target");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return refuse(400, "unsupported HTTP version");
  }
  request.method = method;
  request.target = target;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
      return refuse(400, "folded header lines are not supported");
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return refuse(400, "malformed header");
    std::string_view name = line.substr(0, colon);
    for (char c : name) {
      if (!isTokenChar(c)) return refuse(400, "malformed header name");
    }
    std::string_view value = trim(line.substr(colon + 1));
    if (!isValidValue(value)) return refuse(400, "control character in header value");
    request.headers.emplace_back(name, value);
  }
  return std::nullopt;
}

// The body's length from Content-Length; a refusal when it can't be trusted. Transfer-Encoding
// is refused outright: a body framed one way here and another way by a proxy in front is how
// requests get smuggled.
std::optional<HttpResponse> bodyLength(const HttpRequest& request, const HttpLimits& limits,
                                       size_t& length) {
  if (!request.headerValues("Transfer-Encoding").empty()) {
    return refuse(400, "Transfer-Encoding is not supported; send Content-Length");
  }
  std::vector<std::string_view> values = request.headerValues("Content-Length");
  length = 0;
  if (values.empty()) return std::nullopt;
  if (values.size() > 1) return refuse(400, "more than one Content-Length");
  std::string_view text = values[0];
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
  bool tooLarge = ec == std::errc::result_out_of_range || length > limits.maxBodyBytes;
  if (!tooLarge && (ec != std::errc() || end != text.data() + text.size())) {
    return refuse(400, "malformed Content-Length");
  }
  if (tooLarge) {
    return refuse(413, "body larger than " + std::to_string(limits.maxBodyBytes) + " bytes");
  }
  return std::nullopt;
}

enum class Received { kData, kEnd, kTimeout, kError };

// Appends what one recv() gives, waiting no later than `deadline`.
Received receive(int fd, std::string& buffer, Clock::time_point deadline) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Received::kTimeout;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Received::kError;
    if (ready == 0) return Received::kTimeout;
    char chunk[16 * 1024];
    ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n < 0) return Received::kError;
    if (n == 0) return Received::kEnd;
    buffer.append(chunk, static_cast<size_t>(n));
    return Received::kData;
  }
}

// Where the blank line ending the head starts and how long it is, if it has arrived.
std::optional<std::pair<size_t, size_t>> findHeadEnd(std::string_view buffer) {
  size_t lf = buffer.find('\n');
  while (lf != std::string_view::npos) {
    if (buffer.substr(lf + 1, 1) == "\n") return std::pair{lf + 1, size_t{1}};
    if (buffer.substr(lf + 1, 2) == "\r\n") return std::pair{lf + 1, size_t{2}};
    lf = buffer.find('\n', lf + 1);
  }
  return std::nullopt;
}

const char* reasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Internal Server Error";
  }
}

}  // namespace

std::vector<std::string_view> HttpRequest::headerValues(std::string_view name) const {
  std::vector<std::string_view> values;
  for (const auto& [key, value] : headers) {
    if (equalsIgnoreCase(key, name)) values.push_back(value);
  }
  return values;
}

Incoming readRequest(int fd, const HttpLimits& limits) {
  Clock::time_point deadline = Clock::now() + limits.readTime;
  std::string buffer;
  std::optional<std::pair<size_t, size_t>> headEnd;
  while (!(headEnd = findHeadEnd(buffer))) {
    if (buffer.size() > limits.maxHeadBytes) return {{}, refuse(431, "request head too large")};
    switch (receive(fd, buffer, deadline)) {
      case Received::kData:
        break;
      case Received::kEnd:
        if (buffer.empty()) return {};
        return {{}, refuse(400, "incomplete request head")};
      case Received::kTimeout:
        return {{}, refuse(408, "request not received in time")};
      case Received::kError:
        return {};
    }
  }
  auto [blankLine, blankLength] = *headEnd;
  if (blankLine > limits.maxHeadBytes) return {{}, refuse(431, "request head too large")};

  HttpRequest request;
  if (auto refusal = parseHead(std::string_view(buffer).substr(0, blankLine), request)) {
    return {{}, std::move(refusal)};
  }
  size_t length = 0;
  if (auto refusal = bodyLength(request, limits, length)) return {{}, std::move(refusal)};
  buffer.erase(0, blankLine + blankLength);
  while (buffer.size() < length) {
    switch (receive(fd, buffer, deadline)) {
      case Received::kData:
        break;
      case Received::kEnd:
        return {{}, refuse(400, "incomplete body")};
      case Received::kTimeout:
        return {{}, refuse(408, "request not received in time")};
      case Received::kError:
        return {};
    }
  }
  // Anything after the body would be a pipelined request; the connection closes after this
  // reply, so it is dropped.
  buffer.resize(length);
  request.body = std::move(buffer);
  return {std::move(request), {}};
}

bool writeResponse(int fd, const HttpResponse& response, std::chrono::milliseconds timeout) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    reasonPhrase(response.status) + "\r\nContent-Type: " + response.contentType +
                    "\r\nContent-Length: " + std::to_string(response.body.size()) +
                    "\r\nConnection: close\r\n\r\n" + response.body;
  Clock::time_point deadline = Clock::now() + timeout;
  std::string_view rest = out;
  while (!rest.empty()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    ssize_t n = ::send(fd, rest.data(), rest.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return false;
    rest.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void drainBeforeClose(int fd, std::chrono::milliseconds timeout) {
  ::shutdown(fd, SHUT_WR);
  Clock::time_point deadline = Clock::now() + timeout;
  std::string dropped;
  while (receive(fd, dropped, deadline) == Received::kData) dropped.clear();
}

}  // namespace fencekeeper::store
