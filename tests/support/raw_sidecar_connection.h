// A Cap'n Proto connection to a sidecar without the client library, for floods that pipeline
// calls as a hostile peer would: the stream, its RPC system and the bootstrap `Sidecar`.
#pragma once

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>

#include <string>

#include "ipc/fencekeeper.capnp.h"

namespace fencekeeper::testing {

struct RawSidecarConnection {
  kj::Own<kj::AsyncIoStream> stream;
  kj::Own<capnp::TwoPartyClient> rpc;
  ipc::Sidecar::Client sidecar = nullptr;
};

inline RawSidecarConnection connectRaw(kj::AsyncIoContext& io, const std::string& socket) {
  auto address =
      io.provider->getNetwork().parseAddress(kj::str("unix:", socket.c_str())).wait(io.waitScope);
  RawSidecarConnection c;
  c.stream = address->connect().wait(io.waitScope);
  c.rpc = kj::heap<capnp::TwoPartyClient>(*c.stream);
  c.sidecar = c.rpc->bootstrap().castAs<ipc::Sidecar>();
  return c;
}

}  // namespace fencekeeper::testing
