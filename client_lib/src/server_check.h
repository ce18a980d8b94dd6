// Whether the process serving the sidecar's socket is to be trusted, before anything is sent to
// it (docs/security.md "Who may connect"): its kernel-reported uid must own the socket, in a
// directory no one else can write, or be the uid the caller expects.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "fencekeeper/client.h"

namespace fencekeeper::internal {

// `fd`: the connection to the server of `path`. A refusal is kSidecarUnavailable, naming the
// server's uid and the uid that was expected of it.
Status checkServer(int fd, const std::string& path, std::optional<uid_t> expectUid);

// The uid of the process at the other end of the Unix socket `fd` (SO_PEERCRED), if it can be read.
std::optional<uid_t> peerUid(int fd);

// The uid ConnectOptions::expectUid asks for, or $FENCEKEEPER_EXPECT_UID when it is -1.
// kInvalidArgument for a value that is no uid.
Status expectedUid(int64_t expectUid, std::optional<uid_t>* out);

}  // namespace fencekeeper::internal
