// Built against an installed fencekeeper (pkg-config fencekeeper++, or CMake fencekeeper::client):
// takes and releases a lease through the sidecar at argv[1], blocking and through a request.
#include <fencekeeper/client.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return 64;
  fencekeeper::Status status;
  auto client = fencekeeper::Client::connect(argv[1], &status);
  if (!client) {
    std::fprintf(stderr, "connect: %s\n", status.message.c_str());
    return 1;
  }
  auto lease = client->acquire("installed/cxx", fencekeeper::AcquireOptions{}, &status);
  if (!lease) {
    std::fprintf(stderr, "acquire: %s\n", status.message.c_str());
    return 2;
  }
  std::printf("c++: token %llu, valid for %lld ms, lease table %s\n",
              static_cast<unsigned long long>(lease->token()),
              static_cast<long long>(lease->validFor().count()),
              client->usesLeaseTable() ? "read" : "not read");
  status = lease->release();
  if (!status.ok()) {
    std::fprintf(stderr, "release: %s\n", status.message.c_str());
    return 3;
  }
  // The same through an AcquireRequest (acquireAsync): exported from the installed library too.
  auto request = client->acquireAsync("installed/cxx", fencekeeper::AcquireOptions{});
  if (!request->wait(fencekeeper::Millis(10000), &status)) {
    std::fprintf(stderr, "acquire through a request: %s\n", status.message.c_str());
    return 4;
  }
  return 0;
}
