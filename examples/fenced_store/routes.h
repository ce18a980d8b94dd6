// The fenced store's endpoints, mapped onto the ObjectStore:
//   PUT /objects/KEY    body = value          } both need Fence-Lock and Fence-Token headers;
//   GET /objects/KEY    200 value / 404       } 412 when the token is below the lock's fence
//   GET /fences/LOCK    the lock's highest token (0 if never seen)
//   GET /healthz
// Every outcome is logged at info in one line.
#pragma once

#include "examples/fenced_store/http.h"
#include "examples/fenced_store/object_store.h"

namespace fencekeeper::store {

HttpResponse handleRequest(HttpRequest request, ObjectStore& store);

// Logs a request that was refused before it could be parsed.
void logRefusal(const HttpResponse& refusal);

}  // namespace fencekeeper::store
