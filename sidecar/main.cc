// fencekeeper: flags, wiring and signals. Everything else lives in the components.
#include <kj/async-io.h>
#include <kj/async-unix.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <random>

#include "sidecar/config.h"
#include "sidecar/devzk/zk_server.h"
#include "sidecar/engine/lock_engine.h"
#include "sidecar/loop/kj_loop.h"
#include "sidecar/rpc/sidecar_server.h"
#include "sidecar/rpc/unix_socket.h"
#include "sidecar/zk/real_zk_client.h"

namespace fencekeeper {
namespace {

// Shutdown waits for holders to acknowledge their loss, at most for the validity they were
// given, which the session timeout bounds.
constexpr Millis kShutdownSlack{5'000};

std::string randomInstanceId() {
  std::random_device rd;
  uint64_t v = (uint64_t{rd()} << 32) ^ rd();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
  return hex;
}

int run(const SidecarConfig& config) {
  // Before any thread exists (the ZooKeeper client's inherit the mask): signals become events.
  kj::UnixEventPort::captureSignal(SIGTERM);
  kj::UnixEventPort::captureSignal(SIGINT);
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<devzk::ZkServerProcess> devServer;
  std::string hosts = config.zk;
  if (config.dev) {
    devzk::ZkServerOptions options;
    options.dataDir = config.devDataDir;
    options.tickTimeMs = 500;
    devServer = std::make_unique<devzk::ZkServerProcess>(options);
    devServer->start();
    hosts = devServer->connectString();
    std::printf("fencekeeper --dev: private ZooKeeper serving; join it with --zk %s\n",
                hosts.c_str());
    std::fflush(stdout);
  }

  auto io = kj::setupAsyncIo();
  KjLoopExecutor executor(io.unixEventPort);
  KjTimer timer(io.provider->getTimer());
  auto zk = std::make_unique<zk::RealZkClient>(executor, timer, hosts, config.sessionTimeout,
                                               /*watchHandshakes=*/true);

  engine::EngineConfig engineConfig;
  engineConfig.root = config.root;
  engineConfig.persistentParents = config.persistentParents;
  engineConfig.defaultTtl = config.defaultTtl;
  engineConfig.maxTtl = config.maxTtl;
  engineConfig.minGrantVouch = config.minGrantVouch;
  engineConfig.maxPendingDeletes = config.maxPendingDeletes;
  engineConfig.instanceId = randomInstanceId();
  auto engine = std::make_unique<engine::LockEngine>(*zk, timer, engineConfig);

  rpc::BoundSocket bound = rpc::bindUnixSocket(config.socket, config.socketWorldAccessible);
  rpc::ServerContext context{*engine, *zk, timer, config.root, timer.now()};
  auto listener = std::make_unique<rpc::RpcListener>(
      context, io.lowLevelProvider->wrapListenSocketFd(
                   bound.fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP));
  spdlog::info(
      "fencekeeper serving socket={} zk={} root={} session-timeout={}ms parents={} "
      "default-ttl={}ms max-ttl={}ms instance={}",
      bound.path, hosts, config.root, config.sessionTimeout.count(),
      config.persistentParents ? "persistent" : "container", config.defaultTtl.count(),
      config.maxTtl.count(), engineConfig.instanceId);

  auto signalled = io.unixEventPort.onSignal(SIGTERM)
                       .exclusiveJoin(io.unixEventPort.onSignal(SIGINT))
                       .wait(io.waitScope);
  spdlog::info("signal {}: shutting down", signalled.si_signo);

  listener->stopAccepting();
  rpc::removeBoundSocket(bound);
  auto paf = kj::newPromiseAndFulfiller<void>();
  engine->shutdown([&] { paf.fulfiller->fulfill(); });
  bool clean = paf.promise.then([] { return true; })
                   .exclusiveJoin(io.provider->getTimer()
                                      .afterDelay((config.sessionTimeout + kShutdownSlack).count() *
                                                  kj::MILLISECONDS)
                                      .then([] { return false; }))
                   .wait(io.waitScope);
  if (!clean) spdlog::warn("shutdown: ZooKeeper did not confirm every deletion in time");
  listener.reset();  // closes connections: their leases are already released
  engine.reset();
  zk.reset();  // closes the session: any node left behind goes with it
  spdlog::info("fencekeeper stopped");
  return 0;
}

}  // namespace
}  // namespace fencekeeper

int main(int argc, char** argv) {
  auto parsed = fencekeeper::parseFlags(argc, argv);
  if (!parsed.config) {
    std::fprintf(parsed.exitCode == 0 ? stdout : stderr, "%s\n", parsed.message.c_str());
    return parsed.exitCode;
  }
  spdlog::set_level(spdlog::level::from_str(parsed.config->logLevel));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  try {
    return fencekeeper::run(*parsed.config);
  } catch (const std::exception& e) {
    spdlog::critical("fencekeeper: {}", e.what());
    return 1;
  } catch (const kj::Exception& e) {
    spdlog::critical("fencekeeper: {}", e.getDescription().cStr());
    return 1;
  }
}
