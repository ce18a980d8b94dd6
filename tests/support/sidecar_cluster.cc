#include "tests/support/sidecar_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "tests/support/wait.h"

namespace fencekeeper::testing {

const char* fencekeeperBinary() { return FENCEKEEPER_BIN; }
const char* fencectlBinary() { return FENCECTL_BIN; }
const char* fakeSidecarBinary() { return FAKE_SIDECAR_BIN; }

AcquireOptions acquireOptions(std::chrono::milliseconds wait, std::chrono::milliseconds ttl) {
  AcquireOptions o;
  o.wait = wait;
  o.ttl = ttl;
  o.ownerLabel = "test";
  return o;
}

HolderInfo holderOf(Client& client, const std::string& name) {
  HolderInfo info;
  EXPECT_TRUE(client.holder(name, &info).ok());
  return info;
}

SidecarCluster::SidecarCluster(devzk::ZkServerOptions zkOptions) {
  char tmpl[] = "/tmp/fk-it-XXXXXX";  // short: socket paths must fit in 108 bytes
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  if (zkOptions.dataDir.empty()) zkOptions.dataDir = dir_ + "/zk";
  zkOptions.dieWithParent = true;
  zk_ = std::make_unique<devzk::ZkServerProcess>(zkOptions);
  zk_->start();
}

SidecarCluster::~SidecarCluster() {
  bool failed = ::testing::Test::HasFailure();
  bool keep = failed || std::getenv("FK_KEEP_TEST_LOGS") != nullptr;
  for (auto& s : sidecars_) s->stop(std::chrono::milliseconds(8000));
  if (failed) {
    for (size_t i = 0; i < sidecars_.size(); ++i) {
      std::fprintf(stderr, "---- sidecar %zu log (%s)\n%s\n", i, sidecars_[i]->logPath().c_str(),
                   sidecars_[i]->log().c_str());
    }
    // fencectl and the other helpers: their last lines say why they ended (a flood's can be long).
    constexpr size_t kTail = 4096;
    for (auto& path : otherLogs_) {
      std::string text = readFile(path);
      if (text.size() > kTail) text = "[...]" + text.substr(text.size() - kTail);
      std::fprintf(stderr, "---- %s\n%s\n", path.c_str(), text.c_str());
    }
  }
  zk_->keepLogs(keep);
  zk_.reset();
  if (keep) std::fprintf(stderr, "---- logs kept in %s\n", dir_.c_str());
  if (!keep) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string SidecarCluster::socket(size_t i) const {
  if (i < sockets_.size()) return sockets_[i];
  return dir_ + "/s" + std::to_string(i) + ".sock";
}

std::string SidecarCluster::statusSocket(size_t i) const {
  return dir_ + "/s" + std::to_string(i) + ".status.sock";
}

std::string SidecarCluster::newLogPath(const std::string& stem) {
  otherLogs_.push_back(dir_ + "/" + stem + "-" + std::to_string(otherLogs_.size()) + ".log");
  return otherLogs_.back();
}

size_t SidecarCluster::startSidecar(SidecarOptions options) {
  size_t i = sidecars_.size();
  sockets_.push_back(options.socket.empty() ? socket(i) : options.socket);
  std::vector<std::string> argv{fencekeeperBinary(),
                                "--zk",
                                options.zk.empty() ? zk_->connectString() : options.zk,
                                "--socket",
                                socket(i),
                                "--session-timeout",
                                options.sessionTimeout,
                                "--log-level",
                                "trace"};
  // A name the tests know whatever the layout (the default is named after the lease socket).
  bool ownStatusSocket = std::find(options.extraArgs.begin(), options.extraArgs.end(),
                                   "--status-socket") != options.extraArgs.end();
  if (!ownStatusSocket && !options.defaultStatusSocket) {
    argv.push_back("--status-socket");
    argv.push_back(statusSocket(i));
  }
  argv.insert(argv.end(), options.extraArgs.begin(), options.extraArgs.end());
  sidecarArgv_.push_back(argv);
  sidecarEnv_.push_back(options.env);
  sidecars_.push_back(std::make_unique<ChildProcess>(
      argv, dir_ + "/sidecar" + std::to_string(i) + ".log", options.env));
  if (!waitReady(i)) {
    throw std::runtime_error("sidecar " + std::to_string(i) + " did not become ready:\n" +
                             sidecars_[i]->log());
  }
  return i;
}

void SidecarCluster::restartSidecar(size_t i) {
  sidecars_.at(i)->signal(SIGKILL);
  sidecars_[i]->wait(std::chrono::milliseconds(10000));
  sidecars_[i] = std::make_unique<ChildProcess>(sidecarArgv_.at(i), sidecars_[i]->logPath(),
                                               sidecarEnv_.at(i));
  if (!waitReady(i)) {
    throw std::runtime_error("sidecar " + std::to_string(i) + " did not become ready again:\n" +
                             sidecars_[i]->log());
  }
}

bool SidecarCluster::waitReady(size_t i) {
  return waitUntil([&] {
    auto client = Client::connect(socket(i));
    SidecarStatus status;
    // Connected, and vouched for: grants need two heartbeats a quarter of the session apart.
    return client && client->status(&status).ok() && status.zkState == "connected" &&
           status.safeForMs > 0;
  });
}

std::unique_ptr<Client> SidecarCluster::connect(size_t i) {
  Status status;
  auto client = Client::connect(socket(i), &status);
  if (!client) throw std::runtime_error("connect: " + status.message);
  return client;
}

std::unique_ptr<ChildProcess> SidecarCluster::fencectl(size_t i, std::vector<std::string> args) {
  std::vector<std::string> argv{fencectlBinary(), "--socket", socket(i)};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<ChildProcess>(argv, newLogPath("fencectl"), std::vector<std::string>{},
                                        true);
}

}  // namespace fencekeeper::testing
