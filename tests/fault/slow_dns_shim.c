/* LD_PRELOAD shim for the slow-DNS fault test (slow_dns_test.cc): getaddrinfo() of a host name
 * takes $FK_SLOW_DNS_MS longer, as with a DNS server that answers late; a numeric address is
 * answered at once, as glibc parses it without asking anyone. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <stdlib.h>
#include <time.h>

typedef int (*getaddrinfo_fn)(const char*, const char*, const struct addrinfo*,
                              struct addrinfo**);

int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                struct addrinfo** res) {
  getaddrinfo_fn real = (getaddrinfo_fn)dlsym(RTLD_NEXT, "getaddrinfo");
  if (!real) abort();
  unsigned char address[sizeof(struct in6_addr)];
  if (node && inet_pton(AF_INET, node, address) != 1 && inet_pton(AF_INET6, node, address) != 1) {
    const char* ms = getenv("FK_SLOW_DNS_MS");
    long delay = ms && *ms ? atol(ms) : 0;
    struct timespec pause = {delay / 1000, (delay % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) != 0) {
    }
  }
  return real(node, service, hints, res);
}
