/* LD_PRELOAD shim for the "what-if" rows of fk_bench (never used in production): after the
 * ZooKeeper C client opens a handle, set zoo_set_servers_resolution_delay(zh, N) with N from
 * $FK_ZK_RESOLUTION_DELAY_MS (default -1: no routine re-resolution). By default the 3.8 C client
 * re-resolves its host list (getaddrinfo with AI_ADDRCONFIG: a netlink RTM_GETADDR dump, plus a
 * /dev/urandom read) on every pass of its I/O loop, i.e. before every request it sends. The shim
 * lets the benchmark measure what that costs a real, unmodified `fencekeeper` binary. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <zookeeper/zookeeper.h>

typedef zhandle_t* (*init2_fn)(const char*, watcher_fn, int, const clientid_t*, void*, int,
                               log_callback_fn);
typedef int (*delay_fn)(zhandle_t*, int);

zhandle_t* zookeeper_init2(const char* host, watcher_fn fn, int recv_timeout,
                           const clientid_t* clientid, void* context, int flags,
                           log_callback_fn log_callback) {
  init2_fn real = (init2_fn)dlsym(RTLD_NEXT, "zookeeper_init2");
  if (!real) abort();
  zhandle_t* zh = real(host, fn, recv_timeout, clientid, context, flags, log_callback);
  delay_fn set_delay = (delay_fn)dlsym(RTLD_NEXT, "zoo_set_servers_resolution_delay");
  if (zh && set_delay) {
    const char* v = getenv("FK_ZK_RESOLUTION_DELAY_MS");
    set_delay(zh, v && *v ? atoi(v) : -1);
  }
  return zh;
}
