// fk-http-get SOCKET TARGET [SECONDS]: prints the status code, then the body, of GET TARGET on a
// Unix socket (the status socket tests run it as another uid through setpriv). With SECONDS, GETs
// again and again for that long, like a scraper, and prints "answers N failures M" instead.
// Exit 0 on any answer.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "tests/support/http_get.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: fk-http-get SOCKET TARGET [SECONDS]\n");
    return 2;
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
