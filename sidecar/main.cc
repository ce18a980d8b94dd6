// fencekeeper: flags, wiring and signals. Everything else lives in the components.
#include <kj/async-io.h>
#include <kj/async-unix.h>
#include <kj/exception.h>
#include <signal.h>
#include <string.h>  // sigabbrev_np
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/kj_loop.h"
#include "sidecar/config.h"
#include "sidecar/devzk/zk_server.h"
#include "sidecar/engine/lock_engine.h"
#include "sidecar/logging/event_log.h"
#include "sidecar/logging/kj_log.h"
#include "sidecar/logging/log_format.h"
#include "sidecar/rpc/sidecar_server.h"
#include "sidecar/rpc/socket_dir_guard.h"
#include "sidecar/rpc/status_report.h"
#include "sidecar/rpc/unix_socket.h"
#include "sidecar/shm/lease_table_publisher.h"
#include "sidecar/shm/lease_table_writer.h"
#include "sidecar/status/loop_lag.h"
#include "sidecar/status/metrics.h"
#include "sidecar/status/status_server.h"
#include "sidecar/zk/acl_audit.h"
#include "sidecar/zk/credentials.h"
#include "sidecar/zk/real_zk_client.h"

namespace fencekeeper {
namespace {

// Measured with fk-flood (docs/security.md, "Floods"): a holder's check() waited up to 460 ms
// behind one flooding connection without a bound, 70 ms with this one.
constexpr unsigned kEventsBetweenPolls = 64;

std::string randomInstanceId() {
  std::random_device rd;
  uint64_t v = (uint64_t{rd()} << 32) ^ rd();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
  return hex;
}

// Warns about existing parent nodes any ZooKeeper client may change (see acl_audit.h).
void logAudit(const zk::AclAuditReport& report) {
  for (auto& line : zk::describe(report)) spdlog::warn("{}", line);
  if (report.openNodes.empty() && report.unchecked.empty()) {
    spdlog::info("zookeeper ACLs: {} existing parent node(s) checked, none open", report.checked);
  }
}

// With a chroot in --zk, the sidecar works inside it but cannot create it.
void checkChroot(zk::Client& zk, const std::string& hosts) {
  auto slash = hosts.find('/');
  if (slash == std::string::npos) return;
  zk.get("/", [chroot = hosts.substr(slash)](const zk::GetResult& got) {
    if (got.code == zk::Code::kNoNode) {
      spdlog::error(
          "the chroot {} of --zk does not exist: create it (zkCli create {}); no lock "
          "can be granted until then",
          chroot, chroot);
    }
  });
}

// Runs one step of the start that can fail for a reason outside the sidecar (a path taken, an
// address in use): its exception names the step, for the one line a failed start logs.
template <typename Step>
auto startStep(const std::string& what, Step&& step) {
  try {
    return step();
  } catch (const kj::Exception& e) {
    throw std::runtime_error("cannot start: " + what + ": " + e.getDescription().cStr());
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot start: " + what + ": " + e.what());
  }
}

uint32_t clamp32(uint64_t n) { return n > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(n); }

rpc::ConnectionLimits connectionLimits(const LimitFlags& flags) {
  rpc::ConnectionLimits limits;
  limits.maxConnectionsPerPeer = clamp32(flags.maxConnections);
  limits.maxCallsPerConnection = clamp32(flags.maxCallsPerConnection);
  limits.maxQueuedReplyBytes = flags.maxQueuedReplyBytes;
  limits.maxQueuedReplies = clamp32(flags.maxQueuedReplies);
  limits.maxCallsPerPeer = clamp32(flags.maxCallsPerPeer);
  limits.maxCalls = clamp32(flags.maxCalls);
  limits.maxQueuedRepliesPerPeer = clamp32(flags.maxQueuedRepliesPerPeer);
  limits.maxQueuedReplyBytesPerPeer = flags.maxQueuedReplyBytesPerPeer;
  // Capabilities of released leases cost memory until dropped: bounded, with room to spare.
  limits.maxLeaseCapabilities = clamp32(flags.maxLeasesPerPeer * 2);
  limits.maxHolderWatchesPerPeer = clamp32(flags.maxWatchesPerPeer);
  limits.maxHolderWatchesTotal = clamp32(flags.maxWatches);
  limits.maxLeaseCapabilitiesTotal = clamp32(flags.maxLeases * 2);
  return limits;
}

int run(const SidecarConfig& config) {
  // Before any thread exists (the ZooKeeper client's inherit the mask): signals become events.
  kj::UnixEventPort::captureSignal(SIGTERM);
  kj::UnixEventPort::captureSignal(SIGINT);
  // SIGHUP (a closed terminal, a supervisor's "reload") shuts down as SIGTERM does: its default
  // action killed the sidecar with no log and left its nodes until the session expired.
  kj::UnixEventPort::captureSignal(SIGHUP);
  signal(SIGPIPE, SIG_IGN);

  std::optional<zk::DigestCredentials> credentials;
  if (!config.zkAuthFile.empty()) {
    credentials = zk::readCredentialsFile(config.zkAuthFile);  // a bad file ends the start here
  } else {
    spdlog::warn(
        "no --zk-auth-file: lock nodes get the open ACL world:anyone:cdrwa; any ZooKeeper "
        "client can delete a holder's node or block a lock (see docs/security.md)");
  }

  std::unique_ptr<devzk::ZkServerProcess> devServer;
  std::string hosts = config.zk;
  if (config.dev) {
    devzk::ZkServerOptions options;
    options.dataDir = config.devDataDir;
    options.tickTimeMs = 500;
    devServer = std::make_unique<devzk::ZkServerProcess>(options);
    devServer->start();
    hosts = devServer->connectString();
    logging::announce("fencekeeper --dev: private ZooKeeper serving; join it with --zk " + hosts);
  }

  auto io = kj::setupAsyncIo();
  // KJ runs every queued event before it looks at I/O again: a client whose calls keep coming
  // would hold back the other connections, the timers and ZooKeeper's answers (heartbeats).
  io.waitScope.setBusyPollInterval(kEventsBetweenPolls);
  KjTimer timer(io.provider->getTimer());
  auto zk = std::make_unique<zk::RealZkClient>(io.unixEventPort, timer, hosts, config.sessionTimeout,
                                               /*watchHandshakes=*/true, credentials);
  checkChroot(*zk, hosts);
  std::unique_ptr<zk::AclAudit> audit;
  if (credentials) audit = std::make_unique<zk::AclAudit>(*zk, timer, config.root, logAudit);

  engine::EngineConfig engineConfig;
  engineConfig.root = config.root;
  engineConfig.persistentParents = config.persistentParents;
  engineConfig.defaultTtl = config.defaultTtl;
  engineConfig.maxTtl = config.maxTtl;
  engineConfig.minGrantVouch = config.minGrantVouch;
  engineConfig.maxPendingDeletes = config.maxPendingDeletes;
  engineConfig.maxLeases = config.limits.maxLeases;
  engineConfig.maxLeasesPerPeer = config.limits.maxLeasesPerPeer;
  engineConfig.maxWaitingPerPeer = config.limits.maxWaitingPerPeer;
  engineConfig.holderReadsPerPeerPerSecond = clamp32(config.limits.maxHolderReadsPerPeer);
  engineConfig.instanceId = randomInstanceId();
  logging::EventLog eventLog;
  status::Metrics metrics(rpc::fencekeeperVersion(), config.metricsLockLabels);
  engine::ObserverList observers;
  observers.add(eventLog);
  observers.add(metrics);
  status::LoopLag loopLag(timer, [&metrics](std::chrono::microseconds late) {
    metrics.loopLag(late);
  });
  auto engine = std::make_unique<engine::LockEngine>(*zk, timer, engineConfig, &observers);

  // What this process puts on disk is removed again if it ends by an exception (a failed start):
  // a lease socket nobody serves would answer its clients "Connection refused" (issue 23).
  rpc::BoundSocket bound = startStep("lease socket (--socket " + config.socket + ")", [&] {
    return rpc::bindUnixSocket(config.socket, config.socketWorldAccessible);
  });
  KJ_ON_SCOPE_FAILURE({
    rpc::removeBoundSocket(bound);
    rpc::removeCreatedDirectories(bound);
  });
  // Before any connection is served, so every grant gets its slot (up to the table's capacity).
  std::unique_ptr<shm::LeaseTableWriter> leaseTable;
  KJ_ON_SCOPE_FAILURE(if (leaseTable) leaseTable->removeIfCreated());
  std::unique_ptr<shm::LeaseTablePublisher> leaseTablePublisher;
  if (std::string path = leaseTablePath(config, bound.path); !path.empty()) {
    uint64_t capacity =
        config.limits.maxLeases ? config.limits.maxLeases : shm::LeaseTableWriter::kMaxCapacity;
    leaseTable = startStep("lease table", [&] {
      return std::make_unique<shm::LeaseTableWriter>(
          path, capacity, std::strtoull(engineConfig.instanceId.c_str(), nullptr, 16));
    });
    leaseTablePublisher =
        std::make_unique<shm::LeaseTablePublisher>(*leaseTable, engine->safeUntil());
    observers.add(*leaseTablePublisher);
    spdlog::info("lease table {} ({} slots)", path, leaseTable->capacity());
  }
  rpc::ServerContext context{*engine, *zk, timer, config.root, timer.now()};
  context.limits = connectionLimits(config.limits);
  context.allow = rpc::AllowList{config.allowUids, config.allowGids};
  context.zkServers = hosts;
  context.instanceId = engineConfig.instanceId;
  context.leaseTable = leaseTable.get();
  context.refused.listener = [&metrics](const std::string& detail) { metrics.refused(detail); };
  auto listener = std::make_unique<rpc::RpcListener>(
      context, io.lowLevelProvider->wrapListenSocketFd(
                   bound.fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP));
  // The status routes, on the status socket and/or TCP (main.cc owns both listening sockets).
  std::string statusPath = statusSocketPath(config, bound.path);
  std::optional<rpc::BoundSocket> statusBound;
  KJ_ON_SCOPE_FAILURE(if (statusBound) {
    rpc::removeBoundSocket(*statusBound);
    rpc::removeCreatedDirectories(*statusBound);
  });
  std::unique_ptr<status::StatusServer> statusServer;
  if (!statusPath.empty() || !config.statusListen.empty()) {
    statusServer =
        std::make_unique<status::StatusServer>(context, metrics, io.provider->getTimer());
  }
  if (!statusPath.empty()) {
    statusBound = startStep(
        config.statusSocket.empty() ? "status socket (the default beside the lease socket)"
                                    : "status socket (--status-socket " + config.statusSocket + ")",
        [&] { return rpc::bindUnixSocket(statusPath, config.socketWorldAccessible); });
    statusServer->listen(io.lowLevelProvider->wrapListenSocketFd(
        statusBound->fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP));
  }
  if (!config.statusListen.empty()) {
    startStep("--status-listen " + config.statusListen, [&] {
      auto address = io.provider->getNetwork().parseAddress(config.statusListen).wait(io.waitScope);
      statusServer->listen(address->listen());
    });
  }
  // Where a socket's directory is its own subdirectory of one others may write, it is kept there.
  std::vector<std::unique_ptr<rpc::SocketDirGuard>> dirGuards;
  for (const rpc::BoundSocket* b : {&bound, statusBound ? &*statusBound : nullptr}) {
    if (b && b->ownDirectory) dirGuards.push_back(std::make_unique<rpc::SocketDirGuard>(*b, timer));
  }
  spdlog::info("status socket={} listen={}", statusBound ? statusBound->path : "none",
               config.statusListen.empty() ? "off" : config.statusListen);
  spdlog::info(
      "fencekeeper serving socket={} zk={} root={} session-timeout={}ms parents={} "
      "default-ttl={}ms max-ttl={}ms instance={} zk-auth={}",
      bound.path, hosts, config.root, config.sessionTimeout.count(),
      config.persistentParents ? "persistent" : "container", config.defaultTtl.count(),
      config.maxTtl.count(), engineConfig.instanceId,
      credentials ? "digest user " + credentials->user : std::string("none (open ACL)"));

  auto signalled = io.unixEventPort.onSignal(SIGTERM)
                       .exclusiveJoin(io.unixEventPort.onSignal(SIGINT))
                       .exclusiveJoin(io.unixEventPort.onSignal(SIGHUP))
                       .wait(io.waitScope);
  spdlog::info("signal {} ({}): shutting down", signalled.si_signo,
               sigabbrev_np(signalled.si_signo));

  listener->stopAccepting();
  dirGuards.clear();
  rpc::removeBoundSocket(bound);
  auto paf = kj::newPromiseAndFulfiller<void>();
  engine->shutdown([&] { paf.fulfiller->fulfill(); });
  bool clean = paf.promise.then([] { return true; })
                   .exclusiveJoin(io.provider->getTimer()
                                      .afterDelay(shutdownWait(config).count() * kj::MILLISECONDS)
                                      .then([] { return false; }))
                   .wait(io.waitScope);
  if (!clean) spdlog::warn("shutdown: ZooKeeper did not confirm every deletion in time");
  listener.reset();  // closes connections: their leases are already released
  statusServer.reset();
  if (statusBound) rpc::removeBoundSocket(*statusBound);
  engine.reset();
  audit.reset();
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
  if (parsed.config->checkConfig) {
    std::fputs(fencekeeper::describeConfig(*parsed.config).c_str(), stdout);
    return 0;
  }
  spdlog::set_level(spdlog::level::from_str(parsed.config->logLevel));
  fencekeeper::logging::useLogFormat(parsed.config->logFormat);
  fencekeeper::logging::KjLogToSpdlog kjLog;
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
