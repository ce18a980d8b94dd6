// A lease holder for fault tests, driven through files so that it can be frozen and resumed:
//   holder-probe --socket S --lock L --ttl DUR --store-port P --dir D [--exit-on-loss 1]
//                [--wait DUR]
// Acquires L (keep-alive on, waiting up to 30 s unless --wait says otherwise), writes D/granted
// with its token and D/valid with the validity left when acquire returned (or D/failed with the
// error), then waits for D/go; on it, writes to the fenced store with its token and asks the
// sidecar to renew, and writes the outcomes to D/result as
// "write=<http status> renew=<error name> lost=<0|1>". A loss callback writes D/lost.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "common/duration.h"
#include "examples/fenced_store/fence_http.h"
#include "fencekeeper/client.h"

using namespace fencekeeper;

namespace {
void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text << "\n";
  std::rename((path + ".tmp").c_str(), path.c_str());
}
}  // namespace

int main(int argc, char** argv) {
  std::string socket, lock = "probe", dir = ".";
  int port = 0;
  Millis ttl(1000);
  Millis wait(30000);
  bool exitOnLoss = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--socket")
      socket = value;
    else if (flag == "--lock")
      lock = value;
    else if (flag == "--ttl")
      ttl = parseDuration(value).value_or(ttl);
    else if (flag == "--wait")
      wait = parseDuration(value).value_or(wait);
    else if (flag == "--store-port")
      port = std::stoi(value);
    else if (flag == "--dir")
      dir = value;
    else if (flag == "--exit-on-loss")
      exitOnLoss = value == "1";
  }
  Status status;
  auto client = Client::connect(socket, &status);
  if (!client) {
    std::fprintf(stderr, "holder-probe: %s\n", status.message.c_str());
    return 1;
  }
  AcquireOptions options;
  options.ttl = ttl;
  options.wait = wait;
  options.ownerLabel = "holder-probe";
  options.exitOnLoss = exitOnLoss;
  options.onLost = [dir](uint64_t token, LossReason reason) {
    writeFile(dir + "/lost", std::to_string(token) + " " + lossReasonName(reason));
  };
  auto lease = client->acquire(lock, options, &status);
  if (!lease) {
    writeFile(dir + "/failed", errorCodeName(status.code));
    std::fprintf(stderr, "holder-probe: %s\n", status.message.c_str());
    return 1;
  }
  writeFile(dir + "/valid", std::to_string(lease->validFor().count()));
  writeFile(dir + "/granted", std::to_string(lease->token()));
  while (access((dir + "/go").c_str(), F_OK) != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Like a worker after a pause: it goes on where it stopped, writing with the token it has.
  auto wrote = fencedRequest(port, "PUT", lock, lock, lease->token(), "from the probe");
  Status renewed = lease->renew();
  writeFile(dir + "/result", "write=" + std::to_string(wrote.status) +
                                 " renew=" + errorCodeName(renewed.code) +
                                 " lost=" + (lease->lost() ? "1" : "0"));
  return 0;
}
