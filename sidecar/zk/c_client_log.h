// What the ZooKeeper C client logs goes through spdlog (at debug, as the client's own words):
// through each handle's callback, and through its library-wide stream (stderr by default) for
// what it logs without a handle, so no line of the sidecar's log escapes --log-format.
#pragma once

namespace fencekeeper::zk {

// The handle's log callback (zookeeper_init2).
void logCClientLine(const char* message);

// Points the library-wide log stream at spdlog; once per process, before the first handle.
void routeCClientLogStream();

}  // namespace fencekeeper::zk
