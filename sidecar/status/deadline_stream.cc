#include "sidecar/status/deadline_stream.h"

#include <kj/debug.h>

namespace fencekeeper::status {

kj::Promise<void> DeadlineStream::bounded(kj::Promise<void> write) {
  // DISCONNECTED: the error handler closes the connection without an answer or a warning.
  return write.exclusiveJoin(timer_.afterDelay(writeTimeout_).then([]() -> kj::Promise<void> {
    return KJ_EXCEPTION(DISCONNECTED, "the peer did not read the status answer in time");
  }));
}

}  // namespace fencekeeper::status
