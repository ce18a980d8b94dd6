// Row 1d: the floor of a Cap'n Proto RPC call on this machine. An empty method, served by a
// separate process (like the sidecar), called from the caller's own event loop: no thread hop,
// no fencekeeper code on either side.
#pragma once

#include <memory>
#include <string>

namespace fencekeeper::bench {

// `fk_bench --capnp-ping-server PATH`: serves one connection, then exits.
int capnpPingServerMain(const std::string& path);

// Starts the server and connects to it. Its event loop belongs to the constructing thread, which
// alone may call pingOnce().
class CapnpPingPeer {
 public:
  CapnpPingPeer(const std::string& selfExe, const std::string& dir);
  ~CapnpPingPeer();
  bool pingOnce();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace fencekeeper::bench
