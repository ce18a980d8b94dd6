// fk-fake-sidecar (fake_sidecar_main.cc) for tests: as root, or as an impostor under another uid
// in a directory everyone may write (a Kubernetes emptyDir) where the real sidecar would serve.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "tests/support/child_process.h"

namespace fencekeeper::testing {

constexpr uid_t kImpostorUid = 65534;

// Starts the fake at `socket`, answering with `detail`, as root or (`asImpostor`) as
// kImpostorUid; returns once it listens (nullptr if it did not within 15 s). `grantThenLose`: its
// acquire grants a lease that every renew and token answer calls lost (session uncertain).
std::unique_ptr<ChildProcess> startFakeSidecar(const std::string& socket, const std::string& detail,
                                               bool asImpostor, const std::string& logPath,
                                               bool grantThenLose = false);

// Makes "<dir>/shared" (0777) holding "fk.sock.d" owned by kImpostorUid, where the sidecar would
// serve for "--socket <dir>/shared/fk.sock"; `dir` must be reachable by that uid. Returns the
// socket path the impostor binds ("<dir>/shared/fk.sock.d/fk.sock").
std::string makeImpostorDirectory(const std::string& dir);

}  // namespace fencekeeper::testing
