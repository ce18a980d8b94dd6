/* Built against an installed fencekeeper (pkg-config fencekeeper, or CMake fencekeeper::c): takes
 * and releases a lease through the sidecar at argv[1], blocking and through a request. */
#include <fencekeeper.h>
#include <stdio.h>

int main(int argc, char** argv) {
  fk_client* client = NULL;
  fk_lease* lease = NULL;
  fk_error err;
  if (argc != 2) return 64;
  if (fk_connect(argv[1], &client, &err) != FK_OK) {
    fprintf(stderr, "connect: %s\n", err.message);
    return 1;
  }
  if (fk_acquire(client, "installed/c", NULL, &lease, &err) != FK_OK) {
    fprintf(stderr, "acquire: %s\n", err.message);
    return 2;
  }
  printf("c: token %llu, valid for %lld ms\n", (unsigned long long)fk_lease_token(lease),
         (long long)fk_lease_valid_for_ms(lease));
  if (fk_lease_release(lease, &err) != FK_OK) {
    fprintf(stderr, "release: %s\n", err.message);
    return 3;
  }
  fk_lease_free(lease);
  /* The same through a request (fk_acquire_start, fk_request_*): the async entry points. */
  fk_request* request = NULL;
  if (fk_acquire_start(client, "installed/c", NULL, &request, &err) != FK_OK ||
      fk_request_wait(request, 10000, &lease, &err) != FK_OK) {
    fprintf(stderr, "acquire through a request: %s\n", err.message);
    return 4;
  }
  fk_request_free(request);
  fk_lease_free(lease);
  fk_client_close(client);
  return 0;
}
