/* Scenarios of the C ABI, written in plain C against a running sidecar. Each returns 0, or the
 * line of the first failed check (also printed to stderr). */
#ifndef FENCEKEEPER_TESTS_C_ABI_SCENARIOS_H_
#define FENCEKEEPER_TESTS_C_ABI_SCENARIOS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int fk_scenario_lifecycle(const char* socket);
int fk_scenario_try_acquire_busy(const char* socket);
int fk_scenario_invalid_arguments(const char* socket);
int fk_scenario_lost_without_check_in(const char* socket);
int fk_scenario_check_in_keeps_lease(const char* socket);
int fk_scenario_keep_alive_toggle(const char* socket);
int fk_scenario_holder(const char* socket);
int fk_scenario_lock_modes(const char* socket);
int fk_scenario_at_risk(const char* socket, void (*freeze)(void* ctx), void (*thaw)(void* ctx),
                        void* ctx);
int fk_scenario_loss_fds(const char* socket, void (*delete_node)(void* ctx, const char* name),
                         void (*kill_sidecar)(void* ctx), void (*restart_sidecar)(void* ctx),
                         void* ctx);
int fk_scenario_calls_from_threads(const char* socket);
int fk_scenario_lease_outlives_client(const char* socket);
/* Holds two leases whose loss callbacks free them (and close the client), then calls
 * kill_sidecar(ctx) so that the connection drops under them. */
int fk_scenario_free_in_callback(const char* socket, void (*kill_sidecar)(void* ctx), void* ctx);
/* The sidecar dies with a lease held and an acquire waiting: the client reports itself
 * disconnected, the lease's loss reason is the connection, the waiting acquire fails with a
 * message that says the sidecar closed the connection (not KJ's "Peer disconnected."). */
int fk_scenario_connection_drop(const char* socket, void (*kill_sidecar)(void* ctx), void* ctx);
/* fk_connect_with(): expect_uid of this process's uid (the sidecar's) accepted, another refused;
 * options of an unknown size refused. */
int fk_scenario_connect_options(const char* socket);
/* fk_acquire_start() on a held lock, cancelled from another thread: the wait ends with
 * FK_ERR_CANCELLED within 100 ms and the queue node is gone from ZooKeeper by then; the fd turns
 * readable; FK_ERR_IN_PROGRESS before; a later grant is taken by the first wait only. */
int fk_scenario_cancel_waiting_acquire(const char* socket);
/* The same cancel from a signal handler, while the thread waits without a limit. */
int fk_scenario_cancel_from_signal_handler(const char* socket);
/* A grant no wait took is released when the request is freed, and one that crosses a cancel is
 * either handed over or released: never left held by nobody. */
int fk_scenario_untaken_grant_is_released(const char* socket);
/* fk_watch_holder(): the holder now, then each change; refused arguments and names (with why);
 * no call after fk_holder_watch_free(). */
int fk_scenario_holder_watch(const char* socket);
/* fk_status() and fk_status_json() (freed with fk_free()) with no lease and with one; sizes and
 * NULLs refused. */
int fk_scenario_status(const char* socket);
/* `socket`: the configured path where an impostor under `impostor_uid` serves (fk-fake-sidecar,
 * answering limitReached with `detail`): refused by default, trusted with expect_uid, and then
 * its detail is in fk_error.message. */
int fk_scenario_impostor(const char* socket, int64_t impostor_uid, const char* detail);

#ifdef __cplusplus
}
#endif

#endif /* FENCEKEEPER_TESTS_C_ABI_SCENARIOS_H_ */
