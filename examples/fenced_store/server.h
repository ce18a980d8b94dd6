// The fenced store's accept loop: one thread per connection, one request per connection.
#pragma once

#include "examples/fenced_store/http.h"
#include "examples/fenced_store/object_store.h"

namespace fencekeeper::store {

// Serves connections arriving on `listenFd` (non-blocking, listening) until `stopFd` becomes
// readable, then waits for the connections in progress to finish. Their time is bounded by
// `limits`, so this returns in bounded time too.
void serve(int listenFd, int stopFd, ObjectStore& store, const HttpLimits& limits);

}  // namespace fencekeeper::store
