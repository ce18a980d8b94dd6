// fk-http-get SOCKET TARGET [SECONDS]: prints the status code, then the body, of GET TARGET on a
// Unix socket (the status socket tests run it as another uid through setpriv). With SECONDS, GETs
// again and again for that long, like a scraper, and prints "answers N failures M" instead.
// Exit 0 on any answer. fk-http-get SOCKET --hold N: opens N connections that each send the start
// of a request and no more, prints "open N", then "closed M" each time the server has closed
// more of them, until killed. fk-http-get SOCKET TARGET --keep-alive: GETs TARGET without
// "Connection: close", prints what it read and then "closed after N ms" once the server closes
// (or "still open after 3000 ms").
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/http_get.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: fk-http-get SOCKET TARGET [SECONDS]\n");
    return 2;
  }
  if (argc == 4 && std::string(argv[2]) == "--hold") {
    std::vector<pollfd> held;
    for (int i = 0; i < std::atoi(argv[3]); ++i) {
      int fd = fencekeeper::testing::connectUnix(argv[1]);
      if (fd >= 0 && write(fd, "GET /status HTTP/1.1\r\n", 22) == 22) held.push_back({fd, 0, 0});
    }
    std::printf("open %zu\n", held.size());
    std::fflush(stdout);
    size_t closed = 0;
    while (true) {  // POLLHUP needs no request: the answers, if any, stay unread
      if (poll(held.data(), held.size(), 1000) <= 0) continue;
      for (auto& p : held) {
        if (p.fd >= 0 && (p.revents & POLLHUP)) {
          close(p.fd);
          p.fd = -1;  // poll skips it from now on
          ++closed;
        }
      }
      std::printf("closed %zu\n", closed);
      std::fflush(stdout);
    }
  }
  if (argc == 4 && std::string(argv[3]) == "--keep-alive") {
    int fd = fencekeeper::testing::connectUnix(argv[1]);
    std::string request = std::string("GET ") + argv[2] + " HTTP/1.1\r\nHost: x\r\n\r\n";
    if (fd < 0 ||
        write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
      std::printf("no answer\n");
      return 1;
    }
    auto t0 = std::chrono::steady_clock::now();
    auto ms = [&] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - t0)
          .count();
    };
    std::string raw;
    char buf[4096];
    pollfd pfd{fd, POLLIN, 0};
    while (ms() < 3000 && poll(&pfd, 1, 100) >= 0) {
      if (!(pfd.revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) {
        std::printf("%s\nclosed after %lld ms\n", raw.c_str(), static_cast<long long>(ms()));
        return 0;
      }
      raw.append(buf, static_cast<size_t>(n));
    }
    std::printf("%s\nstill open after 3000 ms\n", raw.c_str());
    return 0;
  }
  if (argc == 4) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(std::atoi(argv[3]));
    long answers = 0, failures = 0;
    while (std::chrono::steady_clock::now() < until) {
      auto a = fencekeeper::testing::httpGet(argv[1], argv[2]);
      ++(a && a->code == 200 ? answers : failures);
    }
    std::printf("answers %ld failures %ld\n", answers, failures);
    return 0;
  }
  auto answer = fencekeeper::testing::httpGet(argv[1], argv[2]);
  if (!answer) {
    std::printf("no answer\n");
    return 1;
  }
  std::printf("%d\n%s", answer->code, answer->body.c_str());
  return 0;
}
