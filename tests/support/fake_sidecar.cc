#include "tests/support/fake_sidecar.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {

std::unique_ptr<ChildProcess> startFakeSidecar(const std::string& socket, const std::string& detail,
                                               bool asImpostor, const std::string& logPath,
                                               bool grantThenLose) {
  std::vector<std::string> argv{fakeSidecarBinary(), socket, detail};
  if (grantThenLose) argv.push_back("--grant-then-lose");
  if (asImpostor) {
    std::string uid = std::to_string(kImpostorUid);
    argv.insert(argv.begin(), {"setpriv", "--reuid=" + uid, "--regid=" + uid, "--clear-groups"});
  }
  auto fake = std::make_unique<ChildProcess>(argv, logPath);
  if (!waitUntil([&] { return fake->log().find("ready") != std::string::npos; })) return nullptr;
  return fake;
}

std::string makeImpostorDirectory(const std::string& dir) {
  std::string shared = dir + "/shared";
  std::filesystem::create_directory(shared);
  chmod(shared.c_str(), 0777);
  std::filesystem::create_directory(shared + "/fk.sock.d");
  chown((shared + "/fk.sock.d").c_str(), kImpostorUid, kImpostorUid);
  return shared + "/fk.sock.d/fk.sock";
}

}  // namespace fencekeeper::testing
