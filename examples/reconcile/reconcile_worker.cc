// A reconciliation worker for the walkthrough: takes the `reconcile` lease, reads the report
// from the fenced store with its token, "scans", writes the report with its token.
//
// It is deliberately naive about the pause it may suffer between scanning and writing: like a
// process after a long GC pause, it writes as soon as it runs again. The fenced store is what
// rejects that write; the lease alone cannot.
//
//   reconcile-worker --socket PATH --store-port N --name W1 [--ttl 3s] [--wait 30s]
//                    [--work 1s]
// Exit: 0 report written; 3 write rejected by the store (412); 1 anything else.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>

#include "common/duration.h"
#include "examples/fenced_store/fence_http.h"
#include "fencekeeper/client.h"

namespace {

using namespace fencekeeper;

std::string now() {
  auto t = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  localtime_r(&secs, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03lld", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(ms % 1000));
  return buf;
}

std::string name = "worker";
void say(const std::string& message) {
  std::printf("%s  %-3s %s\n", now().c_str(), name.c_str(), message.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket = defaultSocketPath();
  int port = 0;
  Millis ttl(3000), wait(30000), work(1000);
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--socket")
      socket = value;
    else if (flag == "--store-port")
      port = std::atoi(value.c_str());
    else if (flag == "--name")
      name = value;
    else if (flag == "--ttl")
      ttl = parseDuration(value).value_or(ttl);
    else if (flag == "--wait")
      wait = parseDuration(value).value_or(wait);
    else if (flag == "--work")
      work = parseDuration(value).value_or(work);
  }
  Status status;
  auto client = Client::connect(socket, &status);
  if (!client) {
    say("cannot reach the sidecar: " + status.message);
    return 1;
  }
  AcquireOptions options;
  options.ttl = ttl;
  options.wait = wait;
  options.ownerLabel = name;
  options.onLost = [](uint64_t token, LossReason reason) {
    say("told by the sidecar: lease with token " + std::to_string(token) + " LOST (" +
        lossReasonName(reason) + ")");
  };
  say("asks for lease 'reconcile' (ttl " + std::to_string(ttl.count()) + " ms)");
  auto lease = client->acquire("reconcile", options, &status);
  if (!lease) {
    say("did not get the lease: " + status.message);
    return 1;
  }
  uint64_t token = lease->token();
  say("granted lease 'reconcile' with fencing token " + std::to_string(token));

  auto read = fencedRequest(port, "GET", "report", "reconcile", token, "");
  say("reads the report with token " + std::to_string(token) + ": HTTP " +
      std::to_string(read.status));
  say("scanning...");
  std::printf("%s  %-3s SCAN DONE; writing the report in %lld ms\n", now().c_str(), name.c_str(),
              static_cast<long long>(work.count()));
  std::fflush(stdout);
  std::this_thread::sleep_for(work);  // the pause of a real worker may hit anywhere in here

  std::string report = "report by " + name + " with token " + std::to_string(token);
  auto wrote = fencedRequest(port, "PUT", "report", "reconcile", token, report);
  if (wrote.status == 200 || wrote.status == 201 || wrote.status == 204) {
    say("wrote the report with token " + std::to_string(token) + ": HTTP " +
        std::to_string(wrote.status) + " accepted");
  } else {
    say("write with token " + std::to_string(token) + " REJECTED by the store: HTTP " +
        std::to_string(wrote.status) + " " + wrote.body);
  }
  // After a rejected write, give the sidecar's loss notice (already queued if the lease ran out)
  // a moment to arrive.
  bool accepted = wrote.status >= 200 && wrote.status < 300;
  for (int i = 0; i < 100 && !accepted && !lease->lost(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (lease->lost()) {
    say("knows its lease is lost: stops work");
  } else {
    lease->release();
    say("released the lease");
  }
  if (wrote.status == 412) return 3;
  return accepted ? 0 : 1;
}
