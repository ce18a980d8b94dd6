// The reference fenced store, run as a process on a free loopback port for fault tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {

class FencedStoreProcess {
 public:
  // `binary` is the fenced-store executable; its data and log live under `dir`.
  FencedStoreProcess(const std::string& binary, const std::string& dir) {
    std::string data = dir + "/store";
    std::string portFile = dir + "/store.port";
    std::filesystem::create_directories(data);
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{binary, "--listen", "127.0.0.1:0", "--data", data, "--port-file",
                                 portFile},
        dir + "/store.log");
    if (!waitUntil([&] {
          std::ifstream in(portFile);
          return static_cast<bool>(in >> port_) && port_ > 0;
        })) {
      throw std::runtime_error("fenced-store did not start:\n" + process_->log());
    }
  }
  int port() const { return port_; }
  ChildProcess& process() { return *process_; }

 private:
  std::unique_ptr<ChildProcess> process_;
  int port_ = 0;
};

}  // namespace fencekeeper::testing
